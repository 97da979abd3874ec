#!/usr/bin/env python3
"""An independent reader of faultline's traces (Python stdlib only).

It shares no code with faultline: it reads the written Kineto JSON the way a
learner's tools do and checks the signatures each R7-R9 trace must show.

usage: tracecheck.py signatures OUT_DIR     # R7-R9 signatures of a regen
       tracecheck.py noleak OUT_DIR         # no fault/truth strings inside traces
       tracecheck.py emu OUT_DIR            # emulated-device signatures (see emu())
       tracecheck.py catalog OUT_DIR        # launch_bound, alloc_stall, blocking_h2d, dtype_casts
                                            # (see catalog(); FL_TIMING_CHECKS=0 keeps the exact counts only)
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


# ---- catalog signatures: launch_bound, alloc_stall, blocking_h2d, dtype_casts ----

def recorded_instances(truth_path):
    t = json.load(open(truth_path))
    return t, {i["step"]: i for i in t["faults"][0]["instances"] if i["recorded"]}


def per_step(t, pred):
    """{step: [events of the step (host row) that pred accepts]}"""
    return {n: [e for e in t.x if pred(e) and t.in_step(s, e)] for n, s in t.steps}


def catalog(out):
    """Signatures of the scenarios serving-a/-b/-healthy, workspace-a, feed-a/-healthy, layers-a."""
    timing = os.environ.get("FL_TIMING_CHECKS", "1") != "0"
    def rt(name):
        return lambda e: e["cat"] == "cuda_runtime" and e["name"] == name
    def f(name):
        return os.path.join(out, name)
    healthy = DeviceTrace(f("lab-serving-healthy.json.gz"))
    hops = healthy.ops_in_step()

    def short_share(t):
        launch = {e["args"]["correlation"]: e for e in t.x if e["cat"] == "cuda_runtime" and e["name"] == "cudaLaunchKernel"}
        ks = [k for k in t.kernels if k["args"]["correlation"] in launch]
        return sum(1 for k in ks if k["dur"] < launch[k["args"]["correlation"]]["dur"]) / max(1, len(ks))

    # launch_bound (serving-a) vs healthy and vs its lookalike op_storm (serving-b)
    a = DeviceTrace(f("lab-serving-a.json.gz"))
    b = DeviceTrace(f("lab-serving-b.json.gz"))
    truth, inst = recorded_instances(f("lab-serving-a.truth.json"))
    us = truth["faults"][0]["params"]["us"]
    aops, bops = a.ops_in_step(), b.ops_in_step()
    check(set(aops.values()) == set(hops.values()) and len(set(aops.values())) == 1,
          "launch_bound: ops per step %s == healthy %s (the op count is unchanged)"
          % (sorted(set(aops.values())), sorted(set(hops.values()))))
    check(min(bops.values()) >= 5 * max(hops.values()),
          "op_storm lookalike: ops per step %d >= 5x healthy %d" % (min(bops.values()), max(hops.values())))
    launches = {n: len(v) for n, v in per_step(a, rt("cudaLaunchKernel")).items()}
    check(all(inst[n]["launches"] == launches[n] for n in launches) and sorted(inst) == sorted(launches),
          "launch_bound: the truth's launches per step match the trace's cudaLaunchKernel calls (%s)"
          % sorted(set(launches.values())))
    if timing:
        sa, sh = short_share(a), short_share(healthy)
        check(sa >= 0.8, "launch_bound: %.0f%% of kernels are shorter than their launch call (>= 80%%)" % (100 * sa))
        check(sh <= 0.2, "healthy: %.0f%% of kernels are shorter than their launch call (<= 20%%)" % (100 * sh))
        dev = union([(e["ts"], e["ts"] + e["dur"]) for e in a.x if e["cat"] in ("kernel", "gpu_memcpy")])
        idle = median([1 - length(clip(dev, s["ts"], s["ts"] + s["dur"])) / s["dur"] for _, s in a.steps])
        check(idle >= 0.6, "launch_bound: the device idles %.0f%% of the step (median; >= 60%%)" % (100 * idle))
        ld = median([e["dur"] for e in a.x if rt("cudaLaunchKernel")(e)])
        check(ld >= 0.8 * us, "launch_bound: cudaLaunchKernel median %.1f us >= 0.8 x the truth's %g us" % (ld, us))

    # alloc_stall (workspace-a)
    w = DeviceTrace(f("lab-inference-w.json.gz"))
    truth, inst = recorded_instances(f("lab-inference-w.truth.json"))
    mallocs = {n: len(v) for n, v in per_step(w, rt("cudaMalloc")).items()}
    frees = per_step(w, rt("cudaFree"))
    check(sorted(inst) == sorted(mallocs) and all(mallocs[n] == len(frees[n]) == inst[n]["measured"] for n in mallocs),
          "alloc_stall: cudaMalloc and cudaFree per step == the truth's allocations (%s)" % sorted(set(mallocs.values())))
    check(not any(rt("cudaMalloc")(e) or rt("cudaFree")(e) for e in healthy.x),
          "healthy: no cudaMalloc/cudaFree inside the window")
    comp = sorted((k["ts"], k["ts"] + k["dur"]) for k in w.kernels)
    idle_ok = all(not any(x < e["ts"] + e["dur"] - 0.001 < y for x, y in comp) for v in frees.values() for e in v)
    check(idle_ok, "alloc_stall: the device is idle when each cudaFree returns (it waited for the device)")

    # blocking_h2d (feed-a vs feed-healthy)
    c = DeviceTrace(f("lab-inference-f.json.gz"))
    c0 = DeviceTrace(f("lab-inference-f0.json.gz"))
    truth, inst = recorded_instances(f("lab-inference-f.truth.json"))
    sync = per_step(c, rt("cudaMemcpy"))
    check(all(len(v) == 1 == inst[n]["measured"] for n, v in sync.items()) and sorted(inst) == sorted(sync),
          "blocking_h2d: one blocking cudaMemcpy per step, as the truth says")
    check(not any(rt("cudaMemcpy")(e) for e in c0.x), "healthy feed: no blocking cudaMemcpy (the batch copy is async)")
    copies = {e["args"]["correlation"]: e for e in c.x if e["cat"] == "gpu_memcpy"}
    ok = True
    for n, s in c.steps:
        for e in sync[n]:
            d = copies.get(e["args"]["correlation"])
            ok &= d is not None and d["name"] == "Memcpy HtoD (Pageable -> Device)"
            ok &= d is not None and d["ts"] + d["dur"] <= e["ts"] + e["dur"] + 0.001
            first = [l["ts"] for l in c.x if rt("cudaLaunchKernel")(l) and c.in_step(s, l)]
            ok &= d is not None and (not first or min(first) >= d["ts"] + d["dur"] - 0.001)
    check(ok, "blocking_h2d: each cudaMemcpy's Memcpy HtoD (Pageable -> Device) ends before the call returns, "
          "and the step's first launch waits behind it")

    # dtype_casts (layers-a)
    d = DeviceTrace(f("lab-training-l.json.gz"))
    truth, inst = recorded_instances(f("lab-training-l.truth.json"))
    def casts(t):
        return {n: sum(1 for k in t.kernels if k["name"].startswith("cast_") and s["ts"] <= k["ts"] < s["ts"] + s["dur"] + 1e6
                       and any(l["args"].get("correlation") == k["args"]["correlation"] for l in t.x
                               if l["cat"] == "cuda_runtime" and t.in_step(s, l)))
                for n, s in t.steps}
    dc = casts(d)
    check(sorted(inst) == sorted(dc) and all(dc[n] == inst[n]["measured"] == inst[n]["requested"] for n in dc),
          "dtype_casts: cast kernels per step == the truth's casts (%s)" % sorted(set(dc.values())))
    tos = {n: len(v) for n, v in per_step(d, lambda e: e["cat"] == "cpu_op" and e["name"] == "fl::to").items()}
    check(all(tos[n] == dc[n] + 1 for n in tos),
          "dtype_casts: one fl::to op per cast, plus the batch's own .to(device) (%s)" % sorted(set(tos.values())))
    check(not any(k["name"].startswith("cast_") for k in healthy.kernels), "healthy: no cast kernels")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("signatures", "noleak", "emu", "catalog"):
        print(__doc__, file=sys.stderr)
        return 2
    {"signatures": signatures, "noleak": noleak, "emu": emu, "catalog": catalog}[sys.argv[1]](sys.argv[2])
    print("%d checks failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
