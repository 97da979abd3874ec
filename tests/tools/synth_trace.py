"""Write a synthetic multi-rank Kineto trace that exercises every kind of event
the readers meet (test input for tests/e2e/hta_parity.sh; not a capture).

usage: synth_trace.py OUT_DIR [--ranks N] [--steps N] [--seed S]

Per rank: metadata (M) rows, named twice; ProfilerStep#N spans with phases
and cpu_ops; cuda_runtime launches (cudaLaunchKernel, cudaLaunchKernelExC,
cudaMemcpyAsync, cudaMemsetAsync) and syncs; kernels on two compute streams,
NCCL collectives on a comm stream (ncclKernel_..., which HTA 0.5's straggler
rule needs); gpu_memcpy and gpu_memset; gpu_user_annotation rows; an
"Event Sync" cuda_sync; ac2g flows; instants, counters and a Trace span;
python_function rows; an unknown category; a string stream; string pids;
float ts with ns digits; events without dur or cat; a negative duration.
Events are shuffled; metadata keys come before and after traceEvents. Even
ranks are written as .json.gz, odd ranks as plain .json.
"""
import argparse
import gzip
import json
import os
import random


def rank_trace(rank, world, steps, rnd):
    ev = []
    pid, tid = 1000 + rank, 1000 + rank
    corr = [100000 + 37 * rank]  # large, as CUPTI's (HTA downcasts small ones to int8)
    ext = [1]

    def x(cat, name, ts, dur, p=pid, t=tid, args=None, ph="X"):
        e = {"ph": ph, "cat": cat, "name": name, "pid": p, "tid": t, "ts": round(ts, 3)}
        if dur is not None:
            e["dur"] = round(dur, 3)
        if args is not None:
            e["args"] = args
        ev.append(e)
        return e

    for m in ("process_name", "process_name", "thread_name"):
        ev.append({"ph": "M", "name": m, "pid": pid, "tid": tid, "args": {"name": "rank %d" % rank}})
    ev.append({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})
    t = 1000.0 + rnd.random()
    dev = {7: t, 20: t, 13: t}  # when each stream is free
    slow = 1.0 + 0.6 * (rank == world - 1)  # the last rank is the straggler

    def launch(kind, name, stream, dur_k, at, cat="kernel"):
        c = corr[0]
        corr[0] += 1
        ld = rnd.choice([0.4, 2.7, 7.3, 55.0 if rnd.random() < 0.05 else 3.1])
        x("cuda_runtime", kind, at, ld, args={"External id": ext[0], "correlation": c, "cbid": 211})
        ev.append({"ph": "s", "id": c, "pid": pid, "tid": tid, "ts": round(at, 3), "cat": "ac2g", "name": "ac2g"})
        start = max(dev[stream], at + ld + rnd.choice([0.2, 1.5, 12.0, 150.0]))
        sargs = str(stream) if rnd.random() < 0.1 else stream
        x(cat, name, start, dur_k, p=0, t=stream,
          args={"External id": ext[0], "device": 0, "stream": sargs, "correlation": c,
                "bytes": 4096} if cat != "kernel" else
          {"External id": ext[0], "device": 0, "stream": sargs, "correlation": c, "grid": [1, 1, 1]})
        ev.append({"ph": "f", "id": c, "pid": 0, "tid": stream, "ts": round(start, 3), "cat": "ac2g",
                   "name": "ac2g", "bp": "e"})
        dev[stream] = start + dur_k
        return at + ld

    for s in range(steps):
        st0 = t
        x("user_annotation", "ProfilerStep#%d" % (s + 1), st0, None)
        step = ev[-1]
        x("user_annotation", "forward", t + 0.5, None)
        fwd = ev[-1]
        t += 0.5
        for k in range(rnd.randint(4, 9)):
            op = x("cpu_op", rnd.choice(["aten::linear", "aten::relu", "aten::add_"]), t, None,
                   args={"External id": ext[0], "Ev Idx": k})
            name = rnd.choice(["gemm_kernel<float>", "void relu_kernel(float*)", "elementwise_add"])
            kind = "cudaLaunchKernelExC" if rnd.random() < 0.1 else "cudaLaunchKernel"
            end = launch(kind, name, rnd.choice([7, 7, 20]), rnd.uniform(0.3, 90.0) * slow, t + 0.7)
            if rnd.random() < 0.2:
                end = launch("cudaMemsetAsync", "Memset (Device)", 7, rnd.uniform(0.5, 3.0), end + 0.3,
                             cat="gpu_memset")
            op["dur"] = round(end - t + 0.4, 3)
            ext[0] += 1
            t = end + rnd.uniform(0.5, 20.0) + (300.0 if rnd.random() < 0.1 else 0.0)
        fwd["dur"] = round(t - fwd["ts"], 3)
        x("user_annotation", "backward", t, None)
        bwd = ev[-1]
        for k in range(rnd.randint(2, 5)):
            end = launch("cudaLaunchKernel", "gemm_kernel<float>", 7, rnd.uniform(20, 200) * slow, t + 0.3)
            end = launch("cudaLaunchKernel", "ncclKernel_AllReduce_RING_LL_Sum_float", 13,
                         rnd.uniform(50, 400), end + 0.5)
            t = end + rnd.uniform(1, 30)
        bwd["dur"] = round(t - bwd["ts"], 3)
        t = launch("cudaMemcpyAsync", "Memcpy DtoH (Device -> Pageable)", 7, rnd.uniform(0.1, 9.0), t + 0.2,
                   cat="gpu_memcpy")
        # the host waits for the device
        wait_end = max(dev.values()) + 2.0
        c = corr[0]
        corr[0] += 1
        x("cuda_runtime", "cudaStreamSynchronize", t, wait_end - t, args={"correlation": c})
        x("cuda_sync", "Event Sync", wait_end - 1.5, 1.0, p=0, t=7,
          args={"cuda_sync_kind": "Event Sync", "stream": -1, "correlation": c, "device": 0})
        t = wait_end + rnd.uniform(5, 50)
        step["dur"] = round(t - st0, 3)
        t += rnd.uniform(1, 5)
        x("gpu_user_annotation", "ProfilerStep#%d" % (s + 1), st0 + 100.0, step["dur"] * 0.5, p=0, t=7,
          args={"External id": 1, "device": 0, "stream": 7})
        x("python_function", "train.py(12): step", st0, step["dur"], args={"Python id": s})
    # the rest of the zoo
    x("Trace", "PyTorch Profiler (0)", 999.0, t - 900.0, p="Spans", t="PyTorch Profiler")
    ev.append({"ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler", "pid": "Traces",
               "tid": "Trace PyTorch Profiler", "ts": 1000.0})
    ev.append({"ph": "C", "name": "Memory", "pid": pid, "ts": 1500.5, "args": {"bytes": 1024}})
    ev.append({"ph": "X", "name": "no category", "pid": pid, "tid": tid, "ts": 1200.125, "dur": 3.0})
    ev.append({"ph": "X", "cat": "cpu_op", "name": "no duration", "pid": pid, "tid": tid, "ts": 1201.0})
    ev.append({"ph": "X", "cat": "new_category", "name": "mystery", "pid": pid, "tid": tid, "ts": 1300.5,
               "dur": 2.0})
    ev.append({"ph": "X", "cat": "cpu_op", "name": "clock went back", "pid": pid, "tid": tid, "ts": 1400.0,
               "dur": -2.5})
    first = ev[:4]
    rest = ev[4:]
    rnd.shuffle(rest)
    return first + rest


def main():
    ap = argparse.ArgumentParser(description="Write synthetic.rank-R.json[.gz] into OUT.")
    ap.add_argument("out", metavar="OUT")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    out, ranks, steps, seed = a.out, a.ranks, a.steps, a.seed
    os.makedirs(out, exist_ok=True)
    for r in range(ranks):
        rnd = random.Random(seed * 1000 + r)
        doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "synthetic"}],
               "distributedInfo": {"backend": "nccl", "rank": r, "world_size": ranks},
               "traceEvents": rank_trace(r, ranks, steps, rnd),
               "traceName": "synthetic", "baseTimeNanoseconds": 1700000000000000000,
               "displayTimeUnit": "ms"}
        text = json.dumps(doc, indent=None, separators=(", ", ": "))
        text = text.replace("}, {\"ph\"", "},\n  {\"ph\"")
        name = os.path.join(out, "synthetic.rank-%d.json" % r)
        if r % 2 == 0:
            with gzip.open(name + ".gz", "wt") as f:
                f.write(text)
        else:
            with open(name, "w") as f:
                f.write(text)


main()
