#!/usr/bin/env python3
"""An independent reader of faultline's traces (Python stdlib only).

It shares no code with faultline: it reads the written Kineto JSON the way a
learner's tools do and checks the signatures each R7-R9 trace must show.

usage: tracecheck.py signatures OUT_DIR     # R7-R9 signatures of a regen
       tracecheck.py anatomy OUT_DIR        # R7-R9 op anatomy and counts equal the originals'
       tracecheck.py noleak OUT_DIR         # no fault/truth strings inside traces, file names or traceName
       tracecheck.py names FAULTS_TXT SCENARIO...  # no scenario's output or rubric names tell its faults
                                            # (FAULTS_TXT: the output of `faultline faults`)
       tracecheck.py emu OUT_DIR            # emulated-device signatures (see emu())
       tracecheck.py multirank OUT_DIR      # multi-rank families' signatures (see multirank())
       tracecheck.py pipeline OUT_DIR       # pipeline bubble (see pipeline())
       tracecheck.py moe OUT_DIR            # MoE expert imbalance (see moe())
       tracecheck.py catalog_b OUT_DIR      # recompile, checkpoint, DVFS, optimizer (see catalog_b())
       tracecheck.py catalog OUT_DIR        # launch_bound, alloc_stall, blocking_h2d, dtype_casts
                                            # (see catalog(); FL_TIMING_CHECKS=0 keeps the exact counts only)
       tracecheck.py crowded OUT_DIR        # exit 0 saying why when a run's ranks shared cores (more
                                            # ranks than cores, or a busy process took one), or their
                                            # cores ran at unequal speeds
                                            # (see crowded()), else exit 1

multirank, pipeline and moe print their timing checks as "skip" when crowded()
says the run's ranks could not run side by side (shared cores), or under
FL_TIMING_CHECKS=0 (a sanitizer build distorts timing); their counts are still
checked. The cores' speed is judged check by check: a comparison of what the
ranks' kernels cost (each kernel at its fastest tenth) when every rank's core
ran at one best speed for a quarter of the run's steps (best_speed()); a
wait, an idle share or a time per step over the steps in which every rank's
core ran at one speed, when at least 3 did (one_speed()). emu's straggler reads its run the same way;
catalog_b's DVFS ramp is skipped when crowded() says its run changed speed.
FL_TIMING_CHECKS=always asserts them even then (bench/bench_speed.sh counts
how often a crowded or unequal run would have failed).
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
# why this run's timing between ranks cannot be judged (crowded(), or
# FL_TIMING_CHECKS=0), or None
timing_skip = None
# the output directory whose truths a tcheck(stem=...) consults, one scenario's
timing_dir = None


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def tcheck(cond, what, stem=None, speed=True, why=None):
    """a timing check: asserted unless timing_skip says why not, or (with stem)
    crowded() says so of that scenario's run (speed=False: only its sharing of
    cores, not the cores' speed, for a share whose margin a speed change does
    not reach), or the caller gives a reason of its own (why)"""
    why = timing_skip or why
    if not why and stem and timing_dir:
        why = crowded(timing_dir, stem, speed)
    if why:
        print("skip  %s (%s)" % (what, why))
    else:
        check(cond, what)


def crowded(out, stem=None, speed=True):
    """Why the ranks of the runs in OUT_DIR (those named STEM, if given) could
    not run side by side, or at one speed, or None.
    More ranks than cores take turns on them. A run leaves out a core that
    another process keeps over half busy when it starts (the truth's environment.pinning), so its ranks share fewer cores
    than the machine has: on 2 cores with one taken, 2 ranks take turns on the
    other. A pipeline's stages then cannot overlap, compute doubles against a
    paced link: the timing between ranks measures the crowding, not the
    scenario. One process on the emulated device gives the device a quiet
    core and its host the others: with fewer than two quiet cores (the truth's
    pinning.quiet_cores) the device shared its core with the host or another
    process, and a share of host time against device time measures that. Or
    (unless speed is False) the cores did not keep one speed (the truth's
    environment.core_speed: each rank's core timed on the device's GEMM as the
    window opened and closed, and each step's fastest GEMM): on a virtual
    machine a core whose physical sibling another guest keeps busy runs the
    GEMM up to twice as long, and its rank poses as a straggler. The run says
    so on stderr and in the truth;
    the test reads it."""
    for f in sorted(os.listdir(out)):
        if not f.endswith(".truth.json") or (stem and f != stem + ".truth.json"):
            continue
        with open(os.path.join(out, f), encoding="utf-8") as fh:
            env = json.load(fh)["environment"]
        world, cpus = env.get("world_size", 1), env.get("cpus", 1)
        pin = env.get("pinning") or {}
        left = pin.get("busy_cores_left_out", 0)
        if world > cpus:
            return ("%s: %d ranks on %d cores: ranks take turns on a core, and the timing between ranks measures "
                    "the turns" % (f[:-len(".truth.json")], world, cpus))
        if world > 1 and 0 < left < cpus and -(-world // (cpus - left)) > -(-world // cpus):
            return ("%s: %d ranks on %d of %d cores, %d left out busy with another process"
                    % (f[:-len(".truth.json")], world, cpus - left, cpus, left))
        if world == 1 and "device_core" in pin and pin.get("quiet_cores", 2) < 2:
            return ("%s: %d of %d cores quiet when the run started: the emulated device had no quiet core to "
                    "itself (the host's threads or another process ran beside it)"
                    % (f[:-len(".truth.json")], pin["quiet_cores"], cpus))
        cs = env.get("core_speed") or {}
        if speed and cs.get("unequal"):
            return "%s: the cores did not keep one speed: %s" % (f[:-len(".truth.json")], cs.get("why"))
    return None


def incomparable(out, a, b):
    """Why two runs' step times cannot be compared, or None: a ratio of two
    windows is judged only when the machine ran them at one speed. Each truth
    records every recorded step's fastest GEMM in ns per multiply-add
    (environment.core_speed); over 1.15x apart (core_speed's own rule), the
    machine changed speed between the windows. R8 against its healthy baseline
    read 3.2-3.7x with the windows 1.31-1.52x apart, and 4.2-6.6x within
    1.16x of each other (26 regens). Nor are two windows of different widths
    compared (a re-checked calibration chose again between them)."""
    med, dim = {}, {}
    for stem in (a, b):
        with open(os.path.join(out, stem + ".truth.json"), encoding="utf-8") as fh:
            env = json.load(fh)["environment"]
        dim[stem] = (env.get("calibration") or {}).get("dim")
        ranks = (env.get("core_speed") or {}).get("by_rank") or []
        per = ranks[0].get("step_gemm_ns_per_mac") if ranks else None
        med[stem] = upper_median(per) if per else None
    # regen records the set again when a re-check changes the width; a machine that
    # changed it three rounds running leaves two widths (regen warns)
    if dim[a] != dim[b]:
        return ("the two runs are different models: %s ran %s wide, %s %s wide (the calibration was chosen "
                "again between them)" % (a, dim[a], b, dim[b]))
    if not med[a] or not med[b]:
        return None
    r = max(med.values()) / min(med.values())
    if r > 1.15:
        return ("the machine changed speed between the windows: %s ran its GEMMs at %.3f ns per multiply-add, "
                "%s at %.3f (%.2fx apart, > 1.15x)" % (a, med[a], b, med[b], r))
    return None


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
    h = Trace(os.path.join(out, "lab-r7-a.json.gz"))
    s = Trace(os.path.join(out, "lab-r7-b.json.gz"))
    o = Trace(os.path.join(out, "lab-r8.json.gz"))
    r = Trace(os.path.join(out, "lab-r9.json.gz"))
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
    tcheck(op >= 4 * hp, "R8: step p50 %.3f ms vs healthy %.3f = %.1fx >= 4x" % (op, hp, op / hp),
           why=incomparable(out, "lab-r7-a", "lab-r8"))
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


# ---- op anatomy: the original R7-R9 traces, op for op ----
# One recorded step of the originals (torch.profiler, CPU): (depth, op) in
# start order, depth 0 = directly inside the step's phase span. The names are
# the originals' without their namespace; faultline's carry its own (fl::).
ORIGINAL_PHASES = {
    "data_loading": [(0, "randn"), (1, "empty"), (1, "normal_")],
    "forward_layer1": [(0, "matmul"), (1, "mm"), (2, "resolve_conj"), (2, "resolve_conj"), (2, "resolve_conj")],
    "forward_relu": [(0, "relu"), (1, "clamp_min")],
    "forward_layer2": [(0, "matmul"), (1, "mm"), (2, "resolve_conj"), (2, "resolve_conj"), (2, "resolve_conj")],
    "forward_loss": [(0, "square"), (1, "pow"), (2, "result_type"), (2, "to"),
                     (0, "mean"), (1, "mean"),
                     (2, "sum"), (3, "as_strided"), (3, "fill_"), (3, "unsqueeze"), (4, "as_strided"),
                     (3, "empty"), (3, "copy_"), (3, "select"), (4, "as_strided"),
                     (2, "div_"), (3, "div_"), (4, "to"), (5, "_to_copy"), (6, "empty_strided"), (6, "copy_")],
    "metrics": [(0, "item"), (1, "_local_scalar_dense")],
}
OP_NAMESPACE = "fl::"


def chain(op):
    """A scalar op of the storm: op -> to -> _to_copy -> empty_strided + copy_."""
    return [(0, op), (1, "to"), (2, "_to_copy"), (3, "empty_strided"), (3, "copy_")]


def original_step(pre=0, post=0):
    """{phase: [(depth, op)]} of one step; pre (add, mul) pairs after the first
    matmul, post subs after the second (the R8 storm: 60 and 60)."""
    p = ORIGINAL_PHASES
    fwd = p["forward_layer1"] + (chain("add") + chain("mul")) * pre + p["forward_relu"] + p["forward_layer2"] \
        + chain("sub") * post + p["forward_loss"]
    return {"data_loading": p["data_loading"], "forward": fwd, "metrics": p["metrics"]}


def count_names(step, steps=8):
    out = {}
    for ops in step.values():
        for _, n in ops:
            out[n] = out.get(n, 0) + steps
    return out


# the published keys: per-name op counts of the originals' 8 recorded steps
ORIGINAL_COUNTS_HEALTHY = {
    "resolve_conj": 48, "as_strided": 24, "empty": 16, "matmul": 16, "mm": 16, "to": 16, "mean": 16, "copy_": 16,
    "div_": 16, "randn": 8, "normal_": 8, "relu": 8, "clamp_min": 8, "square": 8, "pow": 8, "result_type": 8,
    "sum": 8, "fill_": 8, "unsqueeze": 8, "select": 8, "_to_copy": 8, "empty_strided": 8, "item": 8,
    "_local_scalar_dense": 8}
ORIGINAL_COUNTS_OPSTORM = dict(ORIGINAL_COUNTS_HEALTHY, **{
    "to": 1456, "copy_": 1456, "_to_copy": 1448, "empty_strided": 1448, "add": 480, "mul": 480, "sub": 480})


def nested_ops(t, span_ev):
    """[(depth, name)] of the cpu_ops inside one span, depth from the span (0 = a
    direct child), by interval containment on the span's thread."""
    ops = [e for e in t.x if e["cat"] == "cpu_op" and e["pid"] == span_ev["pid"] and e["tid"] == span_ev["tid"]
           and span_ev["ts"] <= e["ts"] < span_ev["ts"] + span_ev["dur"]]
    ops.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack, out = [], []
    for e in ops:
        while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - 1e-6:
            stack.pop()
        out.append((len(stack), e["name"]))
        stack.append(e)
    return out


def anatomy_of(t, label, want_step, want_counts):
    """Every recorded step of trace t has exactly the original's ops and nesting."""
    total = {}
    bad = []
    for n, s in t.steps:
        for phase, want in want_step.items():
            spans = [e for e in t.x if e["cat"] == "user_annotation" and e["name"] == phase and t.in_step(s, e)]
            got = []
            for sp in spans:
                got += nested_ops(t, sp)
            for _, name in got:
                short = name[len(OP_NAMESPACE):] if name.startswith(OP_NAMESPACE) else name
                total[short] = total.get(short, 0) + 1
            ok_ns = all(name.startswith(OP_NAMESPACE) for _, name in got)
            if not ok_ns or [(d, name[len(OP_NAMESPACE):]) for d, name in got] != want:
                bad.append("#%d %s" % (n, phase))
    per_step = sum(len(v) for v in want_step.values())
    check(not bad, "%s: every step records the original's %d ops in the original's nesting, namespace %s "
          "(differs: %s)" % (label, per_step, OP_NAMESPACE, bad[:4]))
    check(total == want_counts, "%s: per-name op counts equal the original's (%d ops; differ: %s)"
          % (label, sum(total.values()),
             sorted((k, total.get(k, 0), want_counts.get(k, 0)) for k in set(total) | set(want_counts)
                    if total.get(k, 0) != want_counts.get(k, 0))[:6]))
    return sum(total.values())


def anatomy(out):
    healthy, storm = original_step(), original_step(60, 60)
    # the tables above agree with each other (a typo in one is caught here)
    check(count_names(healthy) == ORIGINAL_COUNTS_HEALTHY and count_names(storm) == ORIGINAL_COUNTS_OPSTORM,
          "the original's step anatomy gives the published per-name counts")
    n = {}
    for stem, want, counts in (("lab-r7-a", healthy, ORIGINAL_COUNTS_HEALTHY),
                               ("lab-r7-b", healthy, ORIGINAL_COUNTS_HEALTHY),
                               ("lab-r8", storm, ORIGINAL_COUNTS_OPSTORM),
                               ("lab-r9", healthy, ORIGINAL_COUNTS_HEALTHY)):
        t = Trace(os.path.join(out, stem + ".json.gz"))
        n[stem] = anatomy_of(t, stem, want, counts)
        cpu_ops = sum(1 for e in t.x if e["cat"] == "cpu_op")
        check(cpu_ops == n[stem], "%s: no cpu_op outside the phase spans (%d vs %d)" % (stem, cpu_ops, n[stem]))
    check(n["lab-r7-a"] == 304 and n["lab-r8"] == 7504,
          "op totals equal the keys: healthy %d (304), op storm %d (7,504)" % (n["lab-r7-a"], n["lab-r8"]))


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


KINETO_KEYS = {"rank", "world_size", "backend"}
TRACE_NAME = re.compile(r"^trace-[0-9a-f]{12}(\.rank-\d+)?$")


def leak_words(words):
    """The normalized forms a name must not contain for these fault, family and fix
    names: each whole, each part of 4+ letters, and the 5-letter stem of each part of
    6+ letters ("starv" of input_starvation catches "starved"); and "healthy", the
    answer of a run with no fault (a baseline is named by its handout, not its file)."""
    out = {"healthy"}
    for w in words:
        out.add(norm(w))
        for part in re.split(r"[\s_\-]+", w.lower()):
            if len(part) >= 4:
                out.add(part)
            if len(part) >= 6:
                out.add(part[:5])
    return out


def name_leaks(name, words):
    stem = norm(re.sub(r"(\.rank-\d+)?(\.truth)?\.json(\.gz)?$", "", os.path.basename(name)))
    return sorted(w for w in words if w and w in stem)


def names(faults_txt, *scenarios):
    """Every scenario's output trace and truth names against its own faults'
    names, families and fixes (from `faultline faults`)."""
    catalog, cur = {}, None
    with open(faults_txt) as f:
        for line in f:
            if line and not line[0].isspace() and line.strip():
                cur = line.strip()
            m = re.match(r"\s+family: (\S+)\s+fix: (\S+)", line)
            if m and cur:
                catalog[cur] = (m.group(1), m.group(2))
    check(len(catalog) > 5, "fault catalog read (%d faults)" % len(catalog))
    seen = 0
    for sp in scenarios:
        with open(sp) as f:
            sc = json.load(f)
        if sc.get("schema") != "faultline.scenario/1":
            continue
        seen += 1
        words = set()
        for fl in sc.get("faults", []):
            fam, fix = catalog.get(fl["fault"], ("", ""))
            words |= {fl["fault"], fam, fix}
        words = leak_words(w for w in words if w)
        out = sc.get("output", {})
        for key in ("trace", "truth"):
            nm = out.get(key)
            if nm:
                bad = name_leaks(nm, words)
                check(not bad, "%s: output %s '%s' tells nothing (%s)" % (os.path.basename(sp), key, nm, bad))
        # the rubric's name is in every learner-visible report (the suite of
        # Gradescope, PrairieLearn and JUnit outputs, the text report's title)
        if sc.get("rubric"):
            rp = os.path.join(os.path.dirname(sp), sc["rubric"])
            if os.path.exists(rp):
                with open(rp) as f:
                    rn = json.load(f).get("name", "")
                bad = name_leaks(rn, words)
                check(not bad, "%s: rubric name '%s' tells nothing (%s)" % (os.path.basename(sp), rn, bad))
    check(seen > 0, "%d scenarios checked" % seen)


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
    words = leak_words(forbidden_words)
    for fn in sorted(os.listdir(out)):
        if fn.endswith(".json") or fn.endswith(".json.gz"):
            bad = name_leaks(fn, words)
            check(not bad, "%s: the file name tells nothing (%s)" % (fn, bad))
    traces = [f for f in os.listdir(out) if f.endswith(".json.gz") or (f.endswith(".json") and ".truth." not in f)]
    for tr in traces:
        _, doc = load(os.path.join(out, tr))
        keys, values = set(), []
        strings(doc, keys, values)
        # Kineto's own keys (distributedInfo's rank, world_size, backend) are not a leak
        # even where a fault has a parameter of that name (the straggler's "rank")
        leaked_keys = sorted((keys - KINETO_KEYS) & (param_names | forbidden_words | truth_strings))
        check(not leaked_keys, "%s: no parameter, fault or truth name as a key (%s)" % (tr, leaked_keys))
        bad = []
        for k, v in values:
            if k == "traceName":
                check(TRACE_NAME.match(v) is not None, "%s: traceName '%s' is a neutral id (trace-HASH)" % (tr, v))
                continue
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
        self.every = list(self.steps)

    def per_step(self, u):
        return [length(clip(u, s["ts"], s["ts"] + s["dur"])) for _, s in self.steps]

    def keep_steps(self, nums):
        """read only the steps numbered in nums from now on (one_speed()),
        except cost_per_step(), which reads every step (self.every)"""
        self.steps = [(n, s) for n, s in self.steps if n in nums]

    def cost_per_step(self, pred):
        """What the kernels whose name satisfies pred cost per step with the
        machine's load taken out: for each kernel name, its count per step
        (median over steps) times the fastest tenth of its durations. A kernel
        of the emulated device runs on a worker thread, which the OS may
        deschedule mid-kernel, so a loaded machine only ever lengthens one.
        Every recorded step, whatever keep_steps() kept: a core that changes
        speed visits its faster one in most runs (best_speed() says when every
        rank's did for long enough)."""
        by = {}
        for e in self.kernels:
            if pred(e["name"]):
                by.setdefault(e["name"], []).append(e)
        total = 0.0
        for evs in by.values():
            counts = [sum(1 for e in evs if s["ts"] <= e["ts"] < s["ts"] + s["dur"]) for _, s in self.every]
            total += median(counts) * quantile([e["dur"] for e in evs], 0.1)
        return total

    def overlap_pct(self):
        c = length(self.comm)
        return 100.0 * intersect(self.comm, self.compute) / c if c else 0.0


def ranks(out, stem):
    files = sorted(f for f in os.listdir(out) if f.startswith(stem + ".rank-") and f.endswith(".json.gz"))
    return [DeviceTrace(os.path.join(out, f)) for f in files]


# a step is judged when its ranks' fastest metered GEMMs are within this of
# each other (core_speed's own rule); the two speeds this machine's cores
# switch between are 1.8x apart, alike cores agree within a few per cent
ONE_SPEED = 1.15
# and a run when at least this many of its steps are
ONE_SPEED_STEPS = 3


def step_speeds(out, stem):
    """{rank: {step number: its fastest metered GEMM, ns per multiply-add}} from
    STEM's truth, or a string saying why there are none"""
    by = ((truth_of(out, stem)["environment"].get("core_speed") or {}).get("by_rank")) or []
    speed = {}
    for r in by:
        v, first = r.get("step_gemm_ns_per_mac"), r.get("step_gemm_from")
        if not v or first is None:
            return "%s: its truth records no per-step speed of rank %s's core" % (stem, r.get("rank"))
        speed[r["rank"]] = {int(first) + i: x for i, x in enumerate(v) if x > 0}
    if len(speed) < 2 or any(not d for d in speed.values()):
        return "%s: its truth records the per-step speed of %d cores" % (stem, len(speed))
    return speed


def best_speed(out, stem):
    """Why the kernels' cost (DeviceTrace.cost_per_step(), each kernel at its
    fastest tenth over the run) cannot be compared between STEM's ranks, or
    None: it can when every rank's core ran at the same best speed for a
    quarter of the run's steps or more (the ranks' per-step fastest metered
    GEMMs at their lower quartile within ONE_SPEED of each other). A core
    that stayed at its slower speed through the run (seen for 1-2 s at a
    time) makes its rank's kernels cost 1.8x at their fastest too; one that
    reached its faster speed for a step or two leaves most of its kernels
    without a fast instance (rank 0 of comm-bound, run 5 of the series on
    12c2030: fastest GEMM 0.192 in one step, 0.25-0.31 in the 11 others; its
    backward GEMMs never ran fast, and their cost read 32% above rank 1's)."""
    if os.environ.get("FL_TIMING_CHECKS") == "always":
        return None
    speed = step_speeds(out, stem)
    if isinstance(speed, str):
        return speed
    best = {r: quantile(list(d.values()), 0.25) for r, d in speed.items()}
    q = max(best.values()) / min(best.values())
    if q > ONE_SPEED:
        return ("%s: the ranks' cores did not keep one best speed: their steps' fastest GEMMs at the lower "
                "quartile %s ns per multiply-add, %.2fx apart (> %.2fx)"
                % (stem, " ".join("%.3f" % best[r] for r in sorted(best)), q, ONE_SPEED))
    return None


def one_speed(out, stem, rs):
    """Keep in each rank trace of rs (STEM's run) only the steps in which every
    rank's core ran at one speed, and say why the run's timing between ranks
    cannot be judged when fewer than ONE_SPEED_STEPS did (None: it can).
    The truth records, for each rank and recorded step, the fastest of the
    step's metered GEMMs in ns of real work per multiply-add
    (environment.core_speed.by_rank[].step_gemm_ns_per_mac, the same shape in
    every step; on every rank but a skewed mixture of experts'). On this machine each core switches on its
    own between two speeds 1.8x apart, within a second, from outside the
    machine: a run of seconds almost always spans a switch, so the run as a
    whole rarely kept one speed, while most of its steps did. Comparing ranks
    in a step where one core ran at the other speed measures the machine, not
    the scenario; comparing them in the steps where the cores agreed measures
    the scenario. A step whose switch came after its fastest GEMM still passes
    as one speed: the statistics over the kept steps are medians and
    quartiles. Under FL_TIMING_CHECKS=always every step is kept."""
    if os.environ.get("FL_TIMING_CHECKS") == "always":
        return None
    speed = step_speeds(out, stem)
    if isinstance(speed, str):
        return speed
    if len(speed) != len(rs):
        return "%s: its truth records the speed of %d cores for %d ranks" % (stem, len(speed), len(rs))
    common = set.intersection(*(set(d) for d in speed.values()))
    ratio = {n: max(d[n] for d in speed.values()) / min(d[n] for d in speed.values()) for n in common}
    keep = {n for n, q in ratio.items() if q <= ONE_SPEED}
    if len(keep) < ONE_SPEED_STEPS:  # its checks are skipped; their figures read every step
        return ("%s: %d of %d steps ran at one speed on every rank's core (fastest GEMMs within %.2fx; the "
                "steps' ratios %s)" % (stem, len(keep), len(ratio), ONE_SPEED,
                                       " ".join("%.2f" % ratio[n] for n in sorted(ratio))))
    for r in rs:
        r.keep_steps(keep)
    print("      %s: %d of %d steps judged, those that ran at one speed on every rank's core (ratios %s)"
          % (stem, len(keep), len(ratio), " ".join("%.2f" % ratio[n] for n in sorted(ratio))))
    return None


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
    if any(n.startswith("ddp-run-a.rank-") for n in names):
        rs = ranks(out, "ddp-run-a")
        ov = [t.overlap_pct() for t in rs]
        check(len(rs) >= 2 and all(flows_ok(t) for t in rs), "ddp-healthy: %d ranks, every kernel has its launch flow" % len(rs))
        check(median(ov) >= 50, "ddp-healthy: comm/compute overlap median over ranks %.1f%% >= 50%% (per rank %s)"
              % (median(ov), ["%.0f" % x for x in ov]))
    if any(n.startswith("ddp-run-e.rank-") for n in names):
        rs = ranks(out, "ddp-run-e")
        ov = [t.overlap_pct() for t in rs]
        check(max(ov) < 10, "ddp-unoverlapped: overlap %s%% < 10%% on every rank" % ["%.1f" % x for x in ov])
    if any(n.startswith("ddp-run-d.rank-") for n in names):
        rs = ranks(out, "ddp-run-d")
        # ranks that shared a core: the run; the cores' speed: the kernels' cost
        # when their best speeds agree (best_speed()), the waits in the steps
        # that ran at one speed (one_speed())
        shared = crowded(timing_dir, "ddp-run-d", speed=False) if timing_dir else None
        cwhy = (shared or best_speed(out, "ddp-run-d")) if timing_dir else None
        why = (shared or one_speed(out, "ddp-run-d", rs)) if timing_dir else None
        slow = int(os.environ.get("FL_STRAGGLER_RANK", "1"))
        comp = {t.rank: median(t.per_step(t.compute)) for t in rs}
        cost = {t.rank: t.cost_per_step(lambda n: not n.startswith("nccl")) for t in rs}
        comm = {t.rank: median(t.per_step(t.comm)) for t in rs}
        others = [cost[r] for r in cost if r != slow]
        tcheck(cost[slow] >= 1.5 * median(others),
               "straggler: rank %d's compute kernels cost %.2f ms/step >= 1.5x the others' median %.2f ms (each kernel "
               "at its fastest tenth; as measured %.2f vs %.2f)"
               % (slow, cost[slow] / 1000, median(others) / 1000, comp[slow] / 1000,
                  median([comp[r] for r in comp if r != slow]) / 1000), why=cwhy)
        for r in comm:
            if r != slow:
                tcheck(comm[r] >= 2 * comm[slow], "straggler: rank %d waits %.2f ms/step in the all-reduce >= 2x rank %d's %.2f ms"
                       % (r, comm[r] / 1000, slow, comm[slow] / 1000), why=why)
    if "lab-run-k.json.gz" in names:
        t = DeviceTrace(os.path.join(out, "lab-run-k.json.gz"))
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
    if "lab-r7-b-emu.json.gz" in names:
        t = DeviceTrace(os.path.join(out, "lab-r7-b-emu.json.gz"))
        dev = union([(e["ts"], e["ts"] + e["dur"]) for e in t.x if e["cat"] in ("kernel", "gpu_memcpy")])
        worst = 0.0
        for e in t.x:
            if e["cat"] == "user_annotation" and e["name"] == "data_loading":
                busy = length(clip(dev, e["ts"], e["ts"] + e["dur"]))
                worst = max(worst, busy / e["dur"])
        check(worst <= 0.10, "emu R7: device idle >= 90%% while data_loading runs (busiest: %.1f%% busy)" % (100 * worst))


# ---- multi-rank families ----

def quantile(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, int(q * len(s)))]


def spread(d):
    """(max - min) / max of per-rank values: 0 when every rank is alike"""
    v = list(d.values())
    return (max(v) - min(v)) / max(v) if max(v) > 0 else 0.0


def truth_of(out, stem):
    with open(os.path.join(out, stem + ".truth.json"), encoding="utf-8") as f:
        return json.load(f)


def multirank(out):
    """Signatures of the multi-rank families found in OUT_DIR: comm-bound (stem
    FL_COMM_STEM, default ddp-run-b) is symmetric and moves its bytes at the
    link's speed; next to a straggler (stem straggler) the per-rank symmetry of
    the comm time is the number that tells the two apart."""
    names = os.listdir(out)
    cb = os.environ.get("FL_COMM_STEM", "ddp-run-b")
    cb_spread = None
    if any(n.startswith(cb + ".rank-") for n in names):
        rs = ranks(out, cb)
        t = truth_of(out, cb)
        cb_cwhy = best_speed(out, cb)
        cb_why = one_speed(out, cb, rs)
        gbps = t["faults"][0]["params"]["gbps"]
        dim = t["environment"]["calibration"]["dim"]
        p = len(rs)
        comm = {r.rank: median(r.per_step(r.comm)) for r in rs}
        comp = {r.rank: median(r.per_step(r.compute)) for r in rs}
        cb_spread = spread(comm)
        tcheck(p >= 2 and cb_spread <= 0.15, "comm-bound: per-rank comm time symmetric, spread %.1f%% <= 15%% (ms/step %s)"
              % (100 * cb_spread, ["%.1f" % (comm[k] / 1000) for k in sorted(comm)]), why=cb_why)
        # the link slows no kernel: what each rank's compute kernels cost is alike
        # (the per-step time above is what a learner reads; a descheduled worker
        # lengthens it on one rank, the kernels' own cost does not change)
        cost = {r.rank: r.cost_per_step(lambda n: not n.startswith("nccl")) for r in rs}
        tcheck(spread(cost) <= 0.15, "comm-bound: per-rank compute kernels cost alike, spread %.1f%% <= 15%% (ms/step, "
              "each kernel at its fastest tenth: %s; as measured: %s)"
              % (100 * spread(cost), ["%.1f" % (cost[k] / 1000) for k in sorted(cost)],
                 ["%.1f" % (comp[k] / 1000) for k in sorted(comp)]), why=cb_cwhy)
        tcheck(min(comm.values()) >= 0.8 * max(comp.values()),
              "comm-bound: comm (%.1f ms/step) as long as compute (%.1f ms/step) or longer on every rank"
              % (min(comm.values()) / 1000, max(comp.values()) / 1000), why=cb_why)
        # one bucket per layer: dim x dim floats; a ring all-reduce sends 2(p-1)/p of it per rank
        bus = 2.0 * (p - 1) / p * dim * dim * 4
        for r in rs:  # every kernel: the link's speed, whatever the cores' (keep_steps() keeps them all)
            durs = [e["dur"] for e in r.kernels if e["name"].startswith("nccl")]
            # a loaded machine only ever lengthens a transfer (a late wake-up, a peer
            # that joins late): the fastest tenth of the transfers is the link itself
            bw = bus * 8 / (quantile(durs, 0.1) * 1000)  # bits / ns = Gbit/s
            tcheck(abs(bw - gbps) <= 0.2 * gbps, "comm-bound: rank %d moves %.2f Gbit/s (bytes / comm kernel time, "
                  "fastest tenth of %d), within 20%% of the link's %.2f" % (r.rank, bw, len(durs), gbps))
        props = rs[0].doc["deviceProperties"][0]
        link = props.get("interconnect", {})
        check(link.get("emulated") is True and link.get("bandwidth (Gbit/s)") == gbps,
              "comm-bound: deviceProperties names the emulated link (%s)" % link)
        meas = quantile([i["measured"] for i in t["faults"][0]["instances"] if i["recorded"]], 0.25)
        # the pacing is a floor: never faster than the link; slower by what the load adds
        check(0.25 * gbps <= meas <= 1.05 * gbps, "comm-bound: truth's measured link speed %.2f Gbit/s (median) "
              "in [0.25, 1.05] x %.2f" % (meas, gbps))
    bs = os.environ.get("FL_BWD_STEM", "ddp-run-c")
    if any(n.startswith(bs + ".rank-") for n in names):
        # a backward-only straggler: the culprit's backward kernels are long, its forward normal
        rs = ranks(out, bs)
        bs_cwhy = best_speed(out, bs)
        bs_why = one_speed(out, bs, rs)
        slow = [f for f in truth_of(out, bs)["faults"] if f["fault"] == "throttled_rank"][0]["params"]["rank"]
        bwd_names = ("mse_backward_kernel", "threshold_backward_kernel", "gemm_tn_kernel", "gemm_nt_kernel")
        bwd, fwd, comm = {}, {}, {}
        for r in rs:
            comp = [e for e in r.kernels if not e["name"].startswith("nccl") and e["name"] != "sgd_kernel"]
            bwd[r.rank] = median(r.per_step(union([(e["ts"], e["ts"] + e["dur"]) for e in comp if e["name"] in bwd_names])))
            fwd[r.rank] = median(r.per_step(union([(e["ts"], e["ts"] + e["dur"]) for e in comp if e["name"] not in bwd_names])))
            comm[r.rank] = median(r.per_step(r.comm))
        others = [r for r in bwd if r != slow]
        bcost = {r.rank: r.cost_per_step(lambda n: n in bwd_names) for r in rs}
        tcheck(max(bcost, key=bcost.get) == slow and bcost[slow] >= 1.5 * median([bcost[r] for r in others]),
              "backward straggler: rank %d's backward kernels cost the most, %.1f ms/step >= 1.5x the others' %.1f "
              "(each kernel at its fastest tenth; as measured %.1f vs %.1f)"
              % (slow, bcost[slow] / 1000, median([bcost[r] for r in others]) / 1000, bwd[slow] / 1000,
                 median([bwd[r] for r in others]) / 1000), why=bs_cwhy)
        # the throttle slows no forward kernel: their cost is the others' (about
        # 2 ms a step, which one descheduling of a worker visibly lengthens)
        fcost = {r.rank: r.cost_per_step(lambda n: not n.startswith("nccl") and n != "sgd_kernel" and n not in bwd_names)
                 for r in rs}
        tcheck(fcost[slow] <= 1.3 * median([fcost[r] for r in others]),
              "backward straggler: rank %d's forward is normal, %.2f ms/step <= 1.3x the others' %.2f (each kernel "
              "at its fastest tenth; as measured %.2f vs %.2f)"
              % (slow, fcost[slow] / 1000, median([fcost[r] for r in others]) / 1000,
                 fwd[slow] / 1000, median([fwd[r] for r in others]) / 1000), why=bs_cwhy)
        tcheck(all(comm[r] > comm[slow] for r in others),
              "backward straggler: the others wait longer in the all-reduce (ms/step %s, culprit %d)"
              % (["%.1f" % (comm[k] / 1000) for k in sorted(comm)], slow), why=bs_why)
    if cb_spread is not None and any(n.startswith("ddp-run-d.rank-") for n in names):
        rs = ranks(out, "ddp-run-d")
        st_cwhy = best_speed(out, "ddp-run-d")
        st_why = one_speed(out, "ddp-run-d", rs)
        st_spread = spread({r.rank: median(r.per_step(r.comm)) for r in rs})
        st_comp = spread({r.rank: r.cost_per_step(lambda n: not n.startswith("nccl")) for r in rs})
        tcheck(st_spread >= max(0.2, 3 * cb_spread),
              "lookalike: straggler's per-rank comm spread %.0f%% >= 20%% and >= 3x comm-bound's %.0f%%"
              % (100 * st_spread, 100 * cb_spread), why=st_why or cb_why)
        tcheck(st_comp >= 0.4, "lookalike: straggler's per-rank compute spread %.0f%% >= 40%% (comm-bound's <= 15%%; "
              "each kernel at its fastest tenth)" % (100 * st_comp), why=st_cwhy)


# ---- pipeline parallelism: the bubble ----

def gaps(u, a, b):
    """idle intervals' lengths of union u inside [a, b], the edges included"""
    u = clip(u, a, b)
    out, t = [], a
    for x, y in u:
        out.append(x - t)
        t = y
    out.append(b - t)
    return [g for g in out if g > 0]


def bubble(r):
    """[(idle share of the compute stream, share of the idle in the step's two
    largest gaps)] of each step of rank trace r"""
    out = []
    for _, s in r.steps:
        a, b = s["ts"], s["ts"] + s["dur"]
        g = sorted(gaps(r.compute, a, b), reverse=True)
        idle = sum(g)
        out.append((idle / s["dur"], sum(g[:2]) / idle if idle else 0.0))
    return out


def schedule_idle(rs, m):
    """{rank: [idle share of each step]} that the pipeline's schedule predicts
    from the stages' own compute in that step. The formula (p-1)/(m+p-1)
    assumes equal stages; with a stage's compute per micro-batch w_s (its
    step's compute-kernel time over m), the slowest stage b runs all m of its
    micro-batches back to back and each other stage adds one micro-batch to
    the fill and drain, so the step is T = m*w_b + sum(w_s, s != b) and stage
    s idles 1 - m*w_s/T: the formula when every w_s is equal. (The schedule
    is GPipe's; this holds as long as one stage is the slowest in forward and
    in backward alike, as here, where the last stage's backward has the extra
    GEMM and the forwards are equal.) The transfers between the stages are
    left out: measured on this machine, each stage idles 1.3-1.8 points above
    the prediction at m = 2, 2.0-2.3 at m = 3, 2.8-3.3 at m = 4, about 6 at
    m = 8 (~0.2 ms per micro-batch)."""
    busy = {r.rank: r.per_step(r.compute) for r in rs}
    n = min(len(v) for v in busy.values())
    pred = {k: [] for k in busy}
    for i in range(n):
        w = {k: busy[k][i] / m for k in busy}
        b = max(w, key=w.get)
        t = m * w[b] + sum(w[k] for k in w if k != b)
        for k in w:
            pred[k].append(1 - m * w[k] / t if t > 0 else 0.0)
    return pred


def pipeline(out):
    """Signatures of the pipeline-parallel scenarios found in OUT_DIR: too few
    micro-batches (stem FL_PIPE_STEM, default pp-run-a) leaves every stage idle
    for (p-1)/(m+p-1) of the step, in wedges (the pipeline's fill and drain, not
    spread thin), with 2m point-to-point transfers per step per neighbour;
    beside it the healthy pipeline (stem pp-run-h, many micro-batches) idles far less."""
    names = os.listdir(out)
    res = {}
    for stem in (os.environ.get("FL_PIPE_STEM", "pp-run-a"), "pp-run-h"):
        if not any(n.startswith(stem + ".rank-") for n in names):
            continue
        rs = ranks(out, stem)
        t = truth_of(out, stem)
        p = len(rs)
        m = t["faults"][0]["params"]["microbatches"] if t["faults"] else t["environment"]["calibration"]["microbatches"]
        formula = 100.0 * (p - 1) / (m + p - 1)
        label = "pipeline m=%d p=%d" % (m, p)
        check(p >= 2, "%s: one trace per stage (%d)" % (label, p))
        for r in rs:
            sr = [e for e in r.kernels if e["name"] == "ncclDevKernel_SendRecv"]
            per = {n: sum(1 for e in sr if s["ts"] <= e["ts"] < s["ts"] + s["dur"]) for n, s in r.steps}
            want = 2 * m * (1 if r.rank in (0, p - 1) else 2)
            check(all(v == want for v in per.values()), "%s: rank %d runs %d point-to-point transfers per step "
                  "(SendRecv kernels, %s)" % (label, r.rank, want, sorted(set(per.values()))))
            check(not any(e["name"].startswith("nccl") and "AllReduce" in e["name"] for e in r.kernels),
                  "%s: rank %d runs no all-reduce (the stages hold different layers)" % (label, r.rank))
        why = one_speed(out, stem, rs)
        # a loaded machine only ever adds idle time (a stage descheduled makes its
        # neighbours wait): the least idle quarter of the steps shows the schedule
        share = {r.rank: 100 * quantile([b[0] for b in bubble(r)], 0.25) for r in rs}
        wedge = {r.rank: median([b[1] for b in bubble(r)]) for r in rs}
        mean = sum(share.values()) / p
        res[stem] = (mean, formula, why)
        if stem == "pp-run-h":
            print("      healthy pipeline m=%d p=%d: bubble %.1f%% (%s), formula %.1f%%"
                  % (m, p, mean, ["%.1f" % share[k] for k in sorted(share)], formula))
            continue
        tcheck(abs(mean - formula) <= 5, "%s: measured bubble %.1f%% of the step (mean over stages, %s) within 5 "
              "points of (p-1)/(m+p-1) = %.1f%%" % (label, mean, ["%.1f" % share[k] for k in sorted(share)], formula),
               why=why)
        # the stages are unequal: stage 0 computes no input gradient, so its
        # backward is one GEMM shorter than the last stage's and at m = 2 it
        # idles ~41% against the last stage's ~29% (the formula's 33.3% is
        # their mean). Each stage against the schedule's prediction from the
        # stages' own compute, step by step (median of the differences)
        pred = schedule_idle(rs, m)
        diff = {r.rank: median([100 * (b[0] - q) for b, q in zip(bubble(r), pred[r.rank])]) for r in rs}
        tcheck(all(abs(v) <= 5 for v in diff.values()),
              "%s: every stage idles within 5 points of what the schedule predicts from the stages' own compute "
              "(measured %s, predicted %s, median difference %s)"
              % (label, ["%.1f" % share[k] for k in sorted(share)],
                 ["%.1f" % (100 * median(pred[k])) for k in sorted(pred)], ["%+.1f" % diff[k] for k in sorted(diff)]),
               why=why)
        tcheck(all(v >= 0.7 for v in wedge.values()), "%s: the idle sits in wedges: the step's two largest gaps hold "
              ">= 70%% of each stage's idle time (%s)" % (label, ["%.2f" % wedge[k] for k in sorted(wedge)]), why=why)
        kept = {n for n, _ in rs[0].steps}
        meas = quantile([i["measured"] for i in t["faults"][0]["instances"] if i["recorded"] and i["step"] in kept], 0.25)
        req = t["faults"][0]["instances"][0]["requested"]
        tcheck(abs(req - formula) < 1e-6 and abs(meas - formula) <= 8,
              "%s: truth's bubble: requested %.1f%% (the formula), measured %.1f%% (lower quartile)" % (label, req, meas),
               why=why)
    if "pp-run-h" in res and len(res) == 2:
        (fa, ff, fwhy), (ha, hf, hwhy) = [res[k] for k in res if k != "pp-run-h"][0], res["pp-run-h"]
        # more micro-batches: a smaller bubble, never below the schedule's own
        # (p-1)/(m+p-1). The formula assumes equal stages; here stage 0 computes
        # no input gradient, so its backward is one GEMM shorter than its
        # neighbour's and it waits that difference for each of the m-1 later
        # gradients (measured: ~0.5 ms of 3.4 ms, ~8 points on stage 0 at m = 8,
        # plus ~0.1 ms of transfer per micro-batch), so the check is the floor
        # and the distance to the faulty run
        tcheck(fa - ha >= 10 and ha >= hf - 3, "healthy pipeline: bubble %.1f%% (not below the formula's %.1f%%) "
              "at least 10 points below the faulty one's %.1f%%" % (ha, hf, fa), why=fwhy or hwhy)


# ---- mixture of experts: expert imbalance ----

def moe(out):
    """Signatures of the mixture-of-experts scenarios found in OUT_DIR: with the
    routing skewed (stem FL_MOE_STEM, default moe-run-a) the hot expert's rank
    has the longest expert compute and the shortest all-to-all time (the others
    wait for it there); the token rows each rank's expert received, read from
    its fl::expert_mlp ops' Input Dims, equal the truth's in every step; the
    healthy run (stem moe-run-h) routes evenly and its experts compute alike.
    FL_TIMING_CHECKS=0 keeps the counts only (a sanitizer build distorts timing)."""
    names = os.listdir(out)
    for stem in (os.environ.get("FL_MOE_STEM", "moe-run-a"), "moe-run-h"):
        if not any(n.startswith(stem + ".rank-") for n in names):
            continue
        rs = ranks(out, stem)
        t = truth_of(out, stem)
        mt = t["environment"]["moe"]
        p = len(rs)
        label = "moe %s p=%d" % (stem, p)
        check(p >= 2 and mt["experts"] == p, "%s: one trace per expert (%d, truth %d)" % (label, p, mt["experts"]))
        expert, least, comm, a2a = {}, {}, {}, {}
        for r in rs:
            sr = [e for e in r.kernels if e["name"] == "ncclDevKernel_SendRecv"]
            a2a[r.rank] = sorted(set(sum(1 for e in sr if in_window(e, s["ts"], s["ts"] + s["dur"])) for _, s in r.steps))
            # the rows the expert received, per step, from its op's Input Dims
            rows = []
            for _, s in r.steps:
                ops = [e for e in r.x if e["cat"] == "cpu_op" and e["name"] == "fl::expert_mlp" and r.in_step(s, e)]
                rows.append(ops[0]["args"]["Input Dims"][0][0] if len(ops) == 1 else None)
            want = [row[r.rank] for row in mt["tokens_per_expert_per_step"]]
            check(rows == want, "%s: rank %d's expert received %s rows per step (Input Dims), the truth says %s"
                  % (label, r.rank, sorted(set(map(str, rows))), sorted(set(map(str, want)))))
        check(all(v == [4] for v in a2a.values()), "%s: 4 all-to-alls per step on every rank (SendRecv kernels: "
              "counts, dispatch, combine, gradient; %s)" % (label, [a2a[k] for k in sorted(a2a)]))
        # the experts' cost when the ranks' cores kept one best speed
        # (best_speed()), the waits in the steps that ran at one speed (one_speed())
        cwhy = best_speed(out, stem)
        why = one_speed(out, stem, rs)
        cost = {}
        for r in rs:
            ex = union([(e["ts"], e["ts"] + e["dur"]) for e in r.kernels if e["name"].startswith("expert_")])
            # a loaded machine only ever adds time (a rank descheduled mid-GEMM): the
            # least disturbed quarter of the steps shows the work
            expert[r.rank] = quantile(r.per_step(ex), 0.25)
            least[r.rank] = min(r.per_step(ex))
            cost[r.rank] = r.cost_per_step(lambda n: n.startswith("expert_"))
            comm[r.rank] = median(r.per_step(r.comm))
        check(not any("AllReduce" in e["name"] for r in rs for e in r.kernels),
              "%s: no all-reduce (each rank trains its own expert)" % label)
        tok = mt["tokens_per_expert"]
        exs = ["%.1f" % (expert[k] / 1000) for k in sorted(expert)]
        cms = ["%.1f" % (comm[k] / 1000) for k in sorted(comm)]
        if not t["faults"]:
            check(len(set(tok)) == 1 and sum(tok) == mt["tokens_per_step"],
                  "%s: balanced routing: every expert gets %s rows a step (%s)" % (label, tok[0], tok))
            # a load on one core (a build, another process) can slow the rank on it
            # through a whole run (measured on 2 shared cores: 38% once in 10 runs):
            # each rank's expert kernels at their fastest tenth, within 40% (the
            # hot expert of moe-a computes 4x to 16x the others)
            tol = 0.40
            tcheck(spread(cost) <= tol, "%s: the experts compute alike: per-rank expert kernels' cost %s ms/step "
                  "within %.0f%% (spread %.0f%%; each kernel at its fastest tenth; the least disturbed step as "
                  "measured %s)" % (label, ["%.1f" % (cost[k] / 1000) for k in sorted(cost)], 100 * tol,
                                    100 * spread(cost), ["%.1f" % (least[k] / 1000) for k in sorted(least)]),
                   why=cwhy)
            print("      healthy moe p=%d: expert ms/step %s, all-to-all ms/step %s" % (p, exs, cms))
            continue
        f = [x for x in t["faults"] if x["fault"] == "expert_imbalance"][0]
        hot, share = f["params"]["hot_rank"], f["params"]["hot_share"]
        others = [k for k in expert if k != hot]
        batch = mt["tokens_per_step"] // p
        check(tok[hot] == p * int(share * batch + 0.5) and max(tok) == tok[hot],
              "%s: the truth's hot expert %d gets %d of %d rows a step (share %.2f, %s)"
              % (label, hot, tok[hot], mt["tokens_per_step"], share, tok))
        om = median([expert[k] for k in others])
        oc = median([cost[k] for k in others])
        # the expert's time follows its rows: at least 60% of the token ratio
        want = 0.6 * tok[hot] / max(median([tok[k] for k in others]), 1)
        tcheck(max(cost, key=cost.get) == hot and cost[hot] >= want * oc,
              "%s: rank %d (the hot expert) computes longest, its expert kernels cost %.1f ms/step >= %.1fx the "
              "others' %.1f (%s; each kernel at its fastest tenth; as measured %s)"
              % (label, hot, cost[hot] / 1000, want, oc / 1000, ["%.1f" % (cost[k] / 1000) for k in sorted(cost)],
                 exs), why=cwhy)
        oc = min(comm[k] for k in others)
        tcheck(comm[hot] < oc, "%s: rank %d spends the least time in the all-to-alls, %.1f ms/step < the others' "
              "least %.1f (%s): they wait for it" % (label, hot, comm[hot] / 1000, oc / 1000, cms), why=why)
        print("      moe p=%d hot=%d share=%.2f: expert time hot/median-others %.2fx, all-to-all median-others/hot "
              "%.2fx, tokens %s" % (p, hot, share, expert[hot] / om, median([comm[k] for k in others]) / max(comm[hot], 1e-9), tok))
        rec = [i for i in f["instances"] if i["recorded"]]
        check(rec and all(abs(i["measured"] - 100.0 * tok[hot] / mt["tokens_per_step"]) < 1e-6 for i in rec),
              "%s: truth's instances: the hot expert's measured share %.1f%% of the tokens every step"
              % (label, 100.0 * tok[hot] / mt["tokens_per_step"]))


# ---- catalog part 1 (b): recompile, checkpoint, DVFS, per-parameter optimizer ----

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
        # host launches against device compute: a timing share, judged when
        # the host and the device each had a core (its margin, ~0.8 against
        # 0.3, is beyond the cores' changes of speed)
        tcheck(share >= 0.3, "lab-finetune: the optimizer phase is >= 30%% of the step (median %.2f)" % share,
               "lab-finetune", speed=False)
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
        tcheck(drift >= 1 + 0.2 * (F - 1), "lab-inference: the fastest gemm kernel of the later steps is %.2fx the earlier "
               "steps' (>= %.2f; ramp to %gx)" % (drift, 1 + 0.2 * (F - 1), F), "lab-inference")
        ops = set(t.ops_in_step().values())
        check(len(ops) == 1, "lab-inference: the same op count in every step (%s)" % sorted(ops))


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
    healthy = DeviceTrace(f("lab-serving-0.json.gz"))
    hops = healthy.ops_in_step()

    # the share of kernels shorter than their launch call by 1 us or more
    # (the trace format's unit). Half the healthy step's kernels are 10-50 ns
    # elementwise ops on 8x32 floats, and a launch call that finds the device
    # busy takes 10-130 ns: counted without the margin, "shorter" was a coin
    # flip per kernel and healthy read 20-55% from one minute to the next on
    # the same code. Weighing kernels by time instead failed the other side
    # once: launch_bound read 20% by time, its kernels that outlasted their
    # 40 us launches (1-2 us when they run undisturbed) outweighing the rest.
    # With the margin healthy reads 5-9%, launch_bound 100%.
    def short_share(t):
        launch = {e["args"]["correlation"]: e for e in t.x if e["cat"] == "cuda_runtime" and e["name"] == "cudaLaunchKernel"}
        ks = [k for k in t.kernels if k["args"]["correlation"] in launch]
        return sum(1 for k in ks if k["dur"] + 1.0 <= launch[k["args"]["correlation"]]["dur"]) / max(1, len(ks))

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
        # a share of device time against host time: not judged when the device
        # shared its core (crowded(); its margins, 100% against 80% and 5-9%
        # against 50%, are out of a speed change's reach, so not for speed)
        tcheck(sa >= 0.8, "launch_bound: %.0f%% of kernels are shorter than their launch call by 1 us or more (>= 80%%)"
               % (100 * sa), stem="lab-serving-a", speed=False)
        # the line sits between healthy's 5-9% and launch_bound's 100%
        tcheck(sh <= 0.5, "healthy: %.0f%% of kernels are shorter than their launch call by 1 us or more (<= 50%%)"
               % (100 * sh), stem="lab-serving-0", speed=False)
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
    # a cast is an fl::to whose own launch runs a cast_ kernel; the other fl::to ops
    # (the batch's .to(device), the scalar promotions of the eager runtime) are the
    # same in every step
    cast_corr = {k["args"]["correlation"] for k in d.kernels if k["name"].startswith("cast_")}
    launches = [l for l in d.x if l["cat"] == "cuda_runtime" and l["args"].get("correlation") in cast_corr]

    def is_cast(e):
        return any(e["ts"] <= l["ts"] <= e["ts"] + e["dur"] and l["tid"] == e["tid"] for l in launches)
    tos = per_step(d, lambda e: e["cat"] == "cpu_op" and e["name"] == "fl::to")
    cast_tos = {n: sum(1 for e in v if is_cast(e)) for n, v in tos.items()}
    other_tos = {n: len(v) - cast_tos[n] for n, v in tos.items()}
    check(all(cast_tos[n] == dc[n] for n in cast_tos),
          "dtype_casts: one fl::to op per cast (%s)" % sorted(set(cast_tos.values())))
    check(len(set(other_tos.values())) == 1,
          "dtype_casts: the other fl::to ops are the same in every step (%s)" % sorted(set(other_tos.values())))
    check(not any(k["name"].startswith("cast_") for k in healthy.kernels), "healthy: no cast kernels")


def main():
    cmds = {"signatures": signatures, "anatomy": anatomy, "noleak": noleak, "names": names, "emu": emu,
            "multirank": multirank, "pipeline": pipeline, "moe": moe,
            "catalog": catalog, "catalog_b": catalog_b, "crowded": None}
    if len(sys.argv) < 3 or sys.argv[1] not in cmds or (sys.argv[1] != "names" and len(sys.argv) != 3):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "crowded":
        why = crowded(sys.argv[2])
        print(why or "not crowded")
        return 0 if why else 1
    global timing_skip, timing_dir
    if sys.argv[1] in ("emu", "catalog", "catalog_b") and os.environ.get("FL_TIMING_CHECKS") != "always":
        timing_dir = sys.argv[2]  # their timing checks name the scenario they read
    if sys.argv[1] in ("multirank", "pipeline", "moe"):
        if os.environ.get("FL_TIMING_CHECKS", "1") == "0":
            timing_skip = "FL_TIMING_CHECKS=0, a sanitizer build distorts timing"
        elif os.environ.get("FL_TIMING_CHECKS") != "always":  # always: a benchmark asserts them anyway
            # ranks that shared a core: the whole directory; the cores' speed: each
            # run's steps (one_speed())
            timing_skip = crowded(sys.argv[2], speed=False)
    cmds[sys.argv[1]](*sys.argv[2:])
    print("%d checks failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
