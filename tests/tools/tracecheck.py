#!/usr/bin/env python3
"""An independent reader of faultline's traces (Python stdlib only).

It shares no code with faultline: it reads the written Kineto JSON the way a
learner's tools do and checks the signatures each R7-R9 trace must show.

usage: tracecheck.py signatures OUT_DIR     # R7-R9 signatures of a regen
       tracecheck.py noleak OUT_DIR         # no fault/truth strings inside traces
       tracecheck.py emu OUT_DIR            # emulated-device signatures (see emu())
       tracecheck.py catalog_b OUT_DIR      # recompile, checkpoint, DVFS, optimizer (see catalog_b())
"""
import gzip
import json
import os
import re
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read()
    return text, json.loads(text)


def upper_median(v):
    s = sorted(v)
    return s[len(s) // 2]


class Trace:
    def __init__(self, path):
        self.path = path
        self.text, self.doc = load(path)
        self.x = [e for e in self.doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace"]
        steps = [e for e in self.x if e["cat"] == "user_annotation" and e["name"].startswith("ProfilerStep#")]
        steps.sort(key=lambda e: e["ts"])
        self.steps = [(int(e["name"].split("#")[1]), e) for e in steps]

    def in_step(self, step_ev, e):
        return step_ev["pid"] == e["pid"] and step_ev["ts"] <= e["ts"] < step_ev["ts"] + step_ev["dur"]

    def step_ms(self):
        return {n: e["dur"] / 1000.0 for n, e in self.steps}

    def spans_in_step(self, name):
        """{step number: total ms of span `name` in that step}"""
        out = {}
        for n, s in self.steps:
            tot = sum(e["dur"] for e in self.x
                      if e["cat"] == "user_annotation" and e["name"] == name and self.in_step(s, e))
            if tot > 0:
                out[n] = tot / 1000.0
        return out

    def ops_in_step(self):
        return {n: sum(1 for e in self.x if e["cat"] == "cpu_op" and self.in_step(s, e)) for n, s in self.steps}

    def max_gap_in_span(self, name):
        """Largest uncovered gap between consecutive cpu_ops inside the `name` span of each
        step, as a fraction of the step's duration: returns (median over steps, worst step).
        The median is the signature (every step of an op storm is dense); the worst step
        shows what one preemption of the process by the OS did."""
        per_step = []
        for n, s in self.steps:
            worst = 0.0
            for sp in (e for e in self.x if e["cat"] == "user_annotation" and e["name"] == name
                       and self.in_step(s, e)):
                ops = sorted((e for e in self.x if e["cat"] == "cpu_op" and e["pid"] == sp["pid"]
                              and e["tid"] == sp["tid"] and sp["ts"] <= e["ts"] < sp["ts"] + sp["dur"]),
                             key=lambda e: e["ts"])
                end = None
                for e in ops:
                    if end is not None and e["ts"] > end:
                        worst = max(worst, (e["ts"] - end) / s["dur"])
                    end = max(end or 0, e["ts"] + e["dur"])
            per_step.append(worst)
        return upper_median(per_step), max(per_step)


failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def structure(t):
    head = t.text[: t.text.index('"traceEvents"')]
    for key in ("schemaVersion", "deviceProperties", "distributedInfo", "displayTimeUnit", "baseTimeNanoseconds"):
        check('"%s"' % key in head, "%s: %s before traceEvents" % (os.path.basename(t.path), key))
    check(re.search(r'"rank": \d+', head) is not None, "%s: \"rank\": N with the space" % os.path.basename(t.path))
    check([n for n, _ in t.steps] == list(range(2, 10)), "%s: records ProfilerStep#2..#9" % os.path.basename(t.path))
    bad = [m for m in re.findall(r'"(?:ts|dur)": (-?[0-9.]+)', t.text) if not re.fullmatch(r"-?\d+\.\d{3}", m)]
    check(not bad, "%s: every ts/dur has three decimals (%d bad)" % (os.path.basename(t.path), len(bad)))
    last = t.doc["traceEvents"][-1]
    check(last.get("ph") == "i" and last.get("name") == "Record Window End",
          "%s: Record Window End is the last event" % os.path.basename(t.path))


def signatures(out):
    h = Trace(os.path.join(out, "lab-healthy.json.gz"))
    s = Trace(os.path.join(out, "lab-starved.json.gz"))
    o = Trace(os.path.join(out, "lab-opstorm.json.gz"))
    r = Trace(os.path.join(out, "lab-hoststall.json.gz"))
    for t in (h, s, o, r):
        structure(t)

    hp = upper_median(h.step_ms().values())
    check(0.1 <= hp <= 1.0, "healthy step p50 %.3f ms within [0.1, 1] ms" % hp)

    sp = upper_median(s.step_ms().values())
    check(sp / hp >= 50, "R7: starved/healthy step p50 = %.1fx >= 50x" % (sp / hp))
    dl = sum(s.spans_in_step("data_loading").values())
    tot = sum(s.step_ms().values())
    check(dl / tot >= 0.90, "R7: data_loading is %.1f%% of starved step time (>= 90%%)" % (100 * dl / tot))
    fw = upper_median(s.spans_in_step("forward").values())
    check(fw < 0.05 * sp, "R7: forward p50 %.3f ms < 5%% of starved step p50 %.3f ms" % (fw, sp))

    hops = upper_median(h.ops_in_step().values())
    oops = upper_median(o.ops_in_step().values())
    check(oops >= 20 * hops, "R8: ops per step %d vs healthy %d = %.1fx >= 20x" % (oops, hops, oops / hops))
    op = upper_median(o.step_ms().values())
    check(op >= 4 * hp, "R8: step p50 %.3f ms vs healthy %.3f = %.1fx >= 4x" % (op, hp, op / hp))
    gap, worst = o.max_gap_in_span("forward")
    check(gap <= 0.10, "R8: largest gap between ops inside forward, median over steps = %.1f%% of the step "
          "(<= 10%%; worst step %.1f%%)" % (100 * gap, 100 * worst))

    steps = r.step_ms()
    metrics = r.spans_in_step("metrics")
    mystery = r.spans_in_step("mystery")
    long_metrics = sorted(n for n, ms in metrics.items() if ms >= 55)
    check(long_metrics == [n for n in steps if n % 3 == 2],
          "R9: metrics >= 55 ms exactly in steps with N %% 3 == 2 (got %s)" % long_metrics)
    check(sorted(mystery) == [n for n in steps if n % 2 == 1],
          "R9: a mystery span exactly in steps with N %% 2 == 1 (got %s)" % sorted(mystery))
    longest = max(steps, key=lambda n: steps[n])
    check(longest % 3 == 2 and longest % 2 == 1, "R9: the longest step (#%d) has both stalls" % longest)
    clean = [steps[n] for n in steps if n % 3 != 2 and n % 2 != 1]
    check(max(clean) < 0.10 * steps[longest],
          "R9: steps with neither stall (max %.2f ms) < 10%% of the longest (%.2f ms)" % (max(clean), steps[longest]))


def strings(obj, keys, values, key=None):
    if isinstance(obj, dict):
        for k, v in obj.items():
            keys.add(k)
            strings(v, keys, values, k)
    elif isinstance(obj, list):
        for v in obj:
            strings(v, keys, values, key)
    elif isinstance(obj, str):
        values.append((key, obj))


def norm(s):
    return re.sub(r"[\s_\-]", "", s.lower())


def noleak(out):
    truths = [f for f in os.listdir(out) if f.endswith(".truth.json")]
    check(len(truths) > 0, "truth files present")
    forbidden_words, param_names, truth_strings = set(), set(), set()
    for tf in truths:
        with open(os.path.join(out, tf)) as f:
            truth = json.load(f)
        truth_strings.add(truth["schema"])
        desc = truth["scenario"].get("description")
        if desc:
            truth_strings.add(desc)
        for fault in truth["faults"]:
            forbidden_words |= {fault["fault"], fault["family"], fault["fix"]}
            param_names |= set(fault["params"])
            for v in fault["params"].values():
                if isinstance(v, str) and v not in ("all",):
                    pass  # span/phase names are meant to be visible (e.g. "metrics", "mystery")
        for key in ("instances", "requested", "measured", "answer_key", "affected_steps"):
            truth_strings.add(key)
    traces = [f for f in os.listdir(out) if f.endswith(".json.gz") or (f.endswith(".json") and ".truth." not in f)]
    for tr in traces:
        _, doc = load(os.path.join(out, tr))
        keys, values = set(), []
        strings(doc, keys, values)
        leaked_keys = sorted(keys & (param_names | forbidden_words | truth_strings))
        check(not leaked_keys, "%s: no parameter, fault or truth name as a key (%s)" % (tr, leaked_keys))
        bad = []
        for k, v in values:
            if k == "traceName":
                continue  # the file's own name, chosen by the course author
            nv = norm(v)
            for w in forbidden_words:
                if norm(w) in nv:
                    bad.append((k, v))
            for s in truth_strings:
                if s in v:
                    bad.append((k, v))
        check(not bad, "%s: no fault, family, fix or truth string in any value (%s)" % (tr, bad[:3]))


# ---- device-side signatures (emu traces) ----

def union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def length(u):
    return sum(b - a for a, b in u)


def intersect(u, v):
    i = j = 0
    t = 0.0
    while i < len(u) and j < len(v):
        a, b = max(u[i][0], v[j][0]), min(u[i][1], v[j][1])
        if b > a:
            t += b - a
        if u[i][1] < v[j][1]:
            i += 1
        else:
            j += 1
    return t


def clip(u, a, b):
    return [[max(x, a), min(y, b)] for x, y in u if y > a and x < b]


class DeviceTrace(Trace):
    def __init__(self, path):
        Trace.__init__(self, path)
        self.kernels = [e for e in self.x if e["cat"] == "kernel"]
        self.comm = union([(e["ts"], e["ts"] + e["dur"]) for e in self.kernels if e["name"].startswith("nccl")])
        self.compute = union([(e["ts"], e["ts"] + e["dur"]) for e in self.kernels if not e["name"].startswith("nccl")])
        self.rank = self.doc["distributedInfo"]["rank"]

    def per_step(self, u):
        return [length(clip(u, s["ts"], s["ts"] + s["dur"])) for _, s in self.steps]

    def overlap_pct(self):
        c = length(self.comm)
        return 100.0 * intersect(self.comm, self.compute) / c if c else 0.0


def ranks(out, stem):
    files = sorted(f for f in os.listdir(out) if f.startswith(stem + ".rank-") and f.endswith(".json.gz"))
    return [DeviceTrace(os.path.join(out, f)) for f in files]


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def emu(out):
    """Signatures of the emulated-device scenarios found in OUT_DIR."""
    def flows_ok(t):
        starts = {e["id"] for e in t.doc["traceEvents"] if e.get("ph") == "s"}
        ends = {e["id"] for e in t.doc["traceEvents"] if e.get("ph") == "f"}
        kc = {e["args"]["correlation"] for e in t.kernels}
        return kc <= starts and kc <= ends
    names = os.listdir(out)
    if any(n.startswith("ddp-healthy.rank-") for n in names):
        rs = ranks(out, "ddp-healthy")
        ov = [t.overlap_pct() for t in rs]
        check(len(rs) >= 2 and all(flows_ok(t) for t in rs), "ddp-healthy: %d ranks, every kernel has its launch flow" % len(rs))
        check(median(ov) >= 50, "ddp-healthy: comm/compute overlap median over ranks %.1f%% >= 50%% (per rank %s)"
              % (median(ov), ["%.0f" % x for x in ov]))
    if any(n.startswith("ddp-unoverlapped.rank-") for n in names):
        rs = ranks(out, "ddp-unoverlapped")
        ov = [t.overlap_pct() for t in rs]
        check(max(ov) < 10, "ddp-unoverlapped: overlap %s%% < 10%% on every rank" % ["%.1f" % x for x in ov])
    if any(n.startswith("straggler.rank-") for n in names):
        rs = ranks(out, "straggler")
        slow = int(os.environ.get("FL_STRAGGLER_RANK", "1"))
        comp = {t.rank: median(t.per_step(t.compute)) for t in rs}
        comm = {t.rank: median(t.per_step(t.comm)) for t in rs}
        others = [comp[r] for r in comp if r != slow]
        check(comp[slow] >= 1.5 * median(others),
              "straggler: rank %d computes %.2f ms/step >= 1.5x the others' median %.2f ms" % (slow, comp[slow] / 1000, median(others) / 1000))
        for r in comm:
            if r != slow:
                check(comm[r] >= 2 * comm[slow], "straggler: rank %d waits %.2f ms/step in the all-reduce >= 2x rank %d's %.2f ms"
                      % (r, comm[r] / 1000, slow, comm[slow] / 1000))
    if "sync-stall.json.gz" in names:
        t = DeviceTrace(os.path.join(out, "sync-stall.json.gz"))
        k = int(os.environ.get("FL_SYNC_K", "4"))
        syncs = [e for e in t.x if e["cat"] == "cuda_runtime" and e["name"] == "cudaStreamSynchronize"]
        metrics = [e for e in t.x if e["cat"] == "user_annotation" and e["name"] == "metrics"]
        def in_metrics(e):
            return any(m["ts"] <= e["ts"] < m["ts"] + m["dur"] for m in metrics)
        per = []
        idle_ok = True
        comp = sorted((e["ts"], e["ts"] + e["dur"]) for e in t.kernels)
        for n, s in t.steps:
            inj = [e for e in syncs if s["ts"] <= e["ts"] < s["ts"] + s["dur"] and not in_metrics(e)]
            per.append(len(inj))
            for e in inj:
                end = e["ts"] + e["dur"]
                # the device drained: nothing ran from the last kernel before the sync's end
                # until the next kernel, which starts only after the host returned
                nxt = [a for a, b in comp if a >= end - 0.001]
                busy_at_end = any(a < end - 0.001 < b for a, b in comp)
                idle_ok &= (not busy_at_end) and (not nxt or nxt[0] > end)
        check(all(p == k for p in per), "sync-stall: exactly %d injected syncs per step (got %s)" % (k, per))
        check(idle_ok, "sync-stall: the device is idle after each injected sync")
    if "r7-starved-emu.json.gz" in names:
        t = DeviceTrace(os.path.join(out, "r7-starved-emu.json.gz"))
        dev = union([(e["ts"], e["ts"] + e["dur"]) for e in t.x if e["cat"] in ("kernel", "gpu_memcpy")])
        worst = 0.0
        for e in t.x:
            if e["cat"] == "user_annotation" and e["name"] == "data_loading":
                busy = length(clip(dev, e["ts"], e["ts"] + e["dur"]))
                worst = max(worst, busy / e["dur"])
        check(worst <= 0.10, "emu R7: device idle >= 90%% while data_loading runs (busiest: %.1f%% busy)" % (100 * worst))


# ---- catalog part 1 (b): recompile, checkpoint, DVFS, per-parameter optimizer ----

def truth_of(out, stem):
    with open(os.path.join(out, stem + ".truth.json")) as f:
        return json.load(f)


def long_steps(t, factor):
    ms = t.step_ms()
    med = median(list(ms.values()))
    return sorted(n for n, v in ms.items() if v > factor * med)


def in_window(e, a, b):
    return a <= e["ts"] < b


def catalog_b(out):
    """Signatures of the catalog scenarios recompile, lookalike-a/-b, checkpoint-stall,
    dvfs-throttle and optimizer-dominance found in OUT_DIR (counts exact, timings by
    ratios with margin)."""
    names = os.listdir(out)
    for stem, compile_span in (("lab-serving", "compile_graph"), ("run-a", "compile_graph")):
        if stem + ".json.gz" not in names:
            continue
        t = DeviceTrace(os.path.join(out, stem + ".json.gz")) if stem == "lab-serving" else Trace(os.path.join(out, stem + ".json.gz"))
        truth = truth_of(out, stem)
        want = truth["faults"][0]["affected_recorded_steps"]
        spans = sorted(t.spans_in_step(compile_span))
        check(spans == want, "%s: the compile span is in exactly the truth's steps %s (trace: %s)" % (stem, want, spans))
        ms = t.step_ms()
        med = median(list(ms.values()))
        short = [n for n in want if ms[n] < 5 * med]
        check(not short, "%s: each of the truth's steps %s is >= 5x the step median %.2f ms (short: %s)" % (stem, want, med, short))
        comp = [e for e in t.x if e["cat"] == "user_annotation" and e["name"] == compile_span]
        nested = [e for e in t.x if e["cat"] == "user_annotation" and e["name"] == "benchmark_kernel"]
        cands = truth["faults"][0]["params"]["candidates"]
        check(len(nested) == cands * len(comp), "%s: %d candidate spans = %d candidates x %d compiles"
              % (stem, len(nested), cands, len(comp)))
        busy = min(sum(n["dur"] for n in nested if in_window(n, c["ts"], c["ts"] + c["dur"])) / c["dur"] for c in comp)
        check(busy >= 0.9, "%s: the host is busy (candidate timings) for >= 90%% of each compile span (min %.2f)" % (stem, busy))
        if isinstance(t, DeviceTrace):
            under = max(length(clip(t.compute, c["ts"], c["ts"] + c["dur"])) / c["dur"] for c in comp)
            check(under <= 0.10, "%s: the device computes <= 10%% of each compile span (max %.3f)" % (stem, under))
    if "run-b.json.gz" in names:
        t = Trace(os.path.join(out, "run-b.json.gz"))
        dl = t.spans_in_step("data_loading")
        ms = t.step_ms()
        share = min(dl.get(n, 0) / ms[n] for n in ms)
        check(share >= 0.5, "run-b: data_loading is >= 50%% of every step (min %.2f): every step starved" % share)
        check(not t.spans_in_step("compile_graph"), "run-b: no compile span")
        check(long_steps(t, 10) == [], "run-b: no step longer than 10x the median (not intermittent)")
    if "lab-training.json.gz" in names:
        t = DeviceTrace(os.path.join(out, "lab-training.json.gz"))
        truth = truth_of(out, "lab-training")
        f = truth["faults"][0]
        got = sorted(t.spans_in_step(f["params"]["span"]))
        check(got == f["affected_recorded_steps"], "lab-training: checkpoint spans in the truth's steps %s (trace %s)"
              % (f["affected_recorded_steps"], got))
        gaps = {b - a for a, b in zip(got, got[1:])}
        check(gaps == {f["params"]["every"]}, "lab-training: the period is exactly %d (trace: %s)" % (f["params"]["every"], sorted(gaps)))
        ck = [e for e in t.x if e["cat"] == "user_annotation" and e["name"] == f["params"]["span"]]
        d2h = [e for e in t.x if e["cat"] == "gpu_memcpy" and "DtoH" in e["name"]]
        check(all(any(in_window(m, c["ts"], c["ts"] + c["dur"]) for m in d2h) for c in ck),
              "lab-training: every checkpoint span has a device-to-host copy under it")
        check(not any(e["name"] == "fl::add_" for e in t.x if e["cat"] == "cpu_op"), "lab-training: no per-parameter update ops")
    if "lab-finetune.json.gz" in names:
        t = Trace(os.path.join(out, "lab-finetune.json.gz"))
        truth = truth_of(out, "lab-finetune")
        n = truth["faults"][0]["params"]["tensors"]
        per = {}
        for num, s in t.steps:
            per[num] = sum(1 for e in t.x if e["cat"] == "cpu_op" and e["name"] == "fl::add_" and t.in_step(s, e))
        check(set(per.values()) == {n}, "lab-finetune: exactly %d fl::add_ update ops in every step (trace: %s)" % (n, sorted(set(per.values()))))
        opt = t.spans_in_step("optimizer")
        ms = t.step_ms()
        share = median([opt.get(k, 0) / ms[k] for k in ms])
        check(share >= 0.3, "lab-finetune: the optimizer phase is >= 30%% of the step (median %.2f)" % share)
    if "lab-inference.json.gz" in names:
        t = DeviceTrace(os.path.join(out, "lab-inference.json.gz"))
        truth = truth_of(out, "lab-inference")
        F = truth["faults"][0]["params"]["factor"]
        per = []
        for _, s in t.steps:
            ks = [e["dur"] for e in t.kernels if e["name"] == "gemm_kernel" and in_window(e, s["ts"], s["ts"] + s["dur"] + 50000)]
            per.append(min(ks) if ks else 0)  # the fastest: load only ever makes a kernel longer
        half = len(per) // 2
        first, last = min(per[:half]), min(per[half:])
        drift = last / first if first else 0
        # the fastest gemm of each half: load only lengthens a kernel, and the later
        # half's fastest still runs at >= 1 + (F - 1) * half / (n - 1); 0.2 leaves room
        # for a machine whose load changes during the run
        check(drift >= 1 + 0.2 * (F - 1), "lab-inference: the fastest gemm kernel of the later steps is %.2fx the earlier steps' "
              "(>= %.2f; ramp to %gx)" % (drift, 1 + 0.2 * (F - 1), F))
        ops = set(t.ops_in_step().values())
        check(len(ops) == 1, "lab-inference: the same op count in every step (%s)" % sorted(ops))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("signatures", "noleak", "emu", "catalog_b"):
        print(__doc__, file=sys.stderr)
        return 2
    {"signatures": signatures, "noleak": noleak, "emu": emu, "catalog_b": catalog_b}[sys.argv[1]](sys.argv[2])
    print("%d checks failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
