#!/usr/bin/env python3
"""kineto_storm.py: the anchor for faultline's capture overhead on a GPU.

R8's step, eager in PyTorch on the GPU: x (batch x dim) @ W1, 60 x (add 0.0,
mul 1.0), relu, @ W2, 60 x (sub 0.0), .item(). Its step p50 with
torch.profiler recording (CPU ops and CUDA activity: Kineto over CUPTI) and
without, in alternating pairs, as tests/gpu-check.sh measures faultline's own
capture (FL_CUPTI=1 vs 0) on the same storm. Prints one line:

  KINETO dim D batch B: step p50 on X ms, off Y ms, ratio R (+P %)

Needs torch with CUDA; exits 77 (skipped, saying why) without it.
  python3 bench/kineto_storm.py [--dim 96] [--batch 16] [--steps 20] [--pairs 3]
"""
import argparse
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=96)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--pre", type=int, default=60)
    ap.add_argument("--post", type=int, default=60)
    a = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print("skipped: no torch (%s)" % e)
        return 77
    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device")
        return 77
    dev = torch.device("cuda")
    g = torch.Generator(device="cpu").manual_seed(0)
    w1 = (torch.randn(a.dim, a.dim, generator=g) / a.dim ** 0.5).to(dev)
    w2 = (torch.randn(a.dim, a.dim, generator=g) / a.dim ** 0.5).to(dev)
    x = torch.randn(a.batch, a.dim, generator=g).to(dev)

    def step():
        h = x @ w1
        for _ in range(a.pre):
            h = h.add(0.0)
            h = h.mul(1.0)
        h = torch.relu(h)
        y = h @ w2
        for _ in range(a.post):
            y = y.sub(0.0)
        return y.sum().item()

    def run(profiled):
        ms = []
        prof = None
        if profiled:
            from torch.profiler import ProfilerActivity, profile
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            prof.__enter__()
        try:
            for _ in range(2 + a.steps):
                t0 = time.perf_counter()
                step()
                ms.append((time.perf_counter() - t0) * 1e3)
        finally:
            if prof is not None:
                prof.__exit__(None, None, None)
        return statistics.median(ms[2:])

    with torch.no_grad():
        for _ in range(5):  # warm: cuBLAS handles, kernels loaded
            step()
        torch.cuda.synchronize()
        on, off = [], []
        for _ in range(a.pairs):
            on.append(run(True))
            off.append(run(False))
    a_on, a_off = statistics.median(on), statistics.median(off)
    print("step p50 on: %s; off: %s" % (" ".join("%.3f" % v for v in on), " ".join("%.3f" % v for v in off)))
    print("KINETO dim %d batch %d: step p50 on %.3f ms, off %.3f ms, ratio %.3f (+%.1f %%); torch %s"
          % (a.dim, a.batch, a_on, a_off, a_on / a_off, 100.0 * (a_on - a_off) / a_off, torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
