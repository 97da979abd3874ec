"""What every check of tracecheck.py reads: a trace's steps, spans and ops
(Trace), a device trace's kernels, comm and compute (DeviceTrace, ranks()),
a run's truth (truth_of()), whether its ranks shared cores or its cores
changed speed (crowded(), speed_matched(), best_speed(), one_speed()), the
pass/fail state and its check() and tcheck(), interval and statistics
helpers. It checks nothing itself."""
import gzip
import json
import os


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


# the pass/fail state, here alone: check() and tcheck() read it here; a
# script that sets it imports this module
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
    so on stderr and in the truth (each meter on its own: the forward GEMM's
    and each backward GEMM's); the test reads the truth's verdict. And
    whatever the cores at the start: another process that kept over half a
    core busy on average while the window was recorded
    (the truth's environment.machine_load.others, the host's busy time less
    the ranks' own, beyond its resolution) took turns with the run's threads:
    a process that began beside a healthy 2-rank run after it had started
    left its all-reduces 32.7-40.9% hidden by compute (median over ranks; 7
    runs) instead of 56.5-69.6%, with no core busy at the start and the GEMM
    meters no different from a quiet run's (others 0.83-0.85 of a core;
    quiet runs 0-0.04)."""
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
        ml = env.get("machine_load") or {}
        oth, wall = ml.get("others") or {}, ml.get("wall_ms", 0)
        if wall > 0 and oth.get("cpu_ms", 0) - oth.get("resolution_ms", 0) > OTHERS_BUSY * wall:
            return ("%s: other processes kept %.2f of a core busy on average while the window was recorded "
                    "(%.0f ms of CPU in %.0f ms; > %.1f): the run's threads took turns with them"
                    % (f[:-len(".truth.json")], oth["cpu_ms"] / wall, oth["cpu_ms"], wall, OTHERS_BUSY))
        cs = env.get("core_speed") or {}
        if speed and cs.get("unequal"):
            return "%s: the cores did not keep one speed: %s" % (f[:-len(".truth.json")], cs.get("why"))
    return None


MATCH_LEAST = 3
# crowded(): other processes' CPU time during the window, in cores on average,
# above which the run shared its cores (the run's own pinning rule: a core over
# half busy with another process)
OTHERS_BUSY = 0.5


def speed_matched(out, a, b, steps_a, steps_b):
    """(a_ms, b_ms, None): the step times of runs A and B ({step: ms}, e.g.
    Trace.step_ms()) over the steps the machine ran at one speed, or
    (None, None, why) when they cannot be compared.
    Each truth records every recorded step's fastest GEMM in ns per
    multiply-add (environment.core_speed). A window is not always at one
    speed, nor two windows a second apart at the same one: R8 against its
    healthy baseline read 3.2-3.7x with the windows 1.31-1.52x apart, and once
    4.0x with the healthy window's steps at two speeds 1.65x apart. So the
    steps compared are those of both runs whose GEMMs ran within 1.15x of one
    another (core_speed's own rule): of the speed bands [s, 1.15 s] that
    start at a recorded step's speed, the one that holds the most steps of
    the run that has fewer in it, when that is at least MATCH_LEAST of each.
    Nor are two runs of different widths compared (a re-checked calibration
    chose again between them)."""
    per, dim = {}, {}
    for stem, st in ((a, steps_a), (b, steps_b)):
        with open(os.path.join(out, stem + ".truth.json"), encoding="utf-8") as fh:
            env = json.load(fh)["environment"]
        dim[stem] = (env.get("calibration") or {}).get("dim")
        ranks = (env.get("core_speed") or {}).get("by_rank") or []
        r0 = ranks[0] if ranks else {}
        first = r0.get("step_gemm_from", 0)
        speed = {first + i: v for i, v in enumerate(r0.get("step_gemm_ns_per_mac") or [])}
        per[stem] = [(speed[n], ms) for n, ms in st.items() if speed.get(n)]
    # regen records the set again when a re-check changes the width; a machine that
    # changed it three rounds running leaves two widths (regen warns)
    if dim[a] != dim[b]:
        return None, None, ("the two runs are different models: %s ran %s wide, %s %s wide (the calibration was "
                            "chosen again between them)" % (a, dim[a], b, dim[b]))
    if not per[a] or not per[b]:
        return None, None, "%s or %s recorded no per-step GEMM speed" % (a, b)
    best = None
    for s in sorted({v for stem in (a, b) for v, _ in per[stem]}):
        band = [[ms for v, ms in per[stem] if s <= v <= 1.15 * s] for stem in (a, b)]
        key = (min(len(band[0]), len(band[1])), len(band[0]) + len(band[1]))
        if best is None or key > best[0]:
            best = (key, band, s)
    (least, _), band, s = best
    if least < MATCH_LEAST:
        q = lambda stem: "%.3f-%.3f" % (min(v for v, _ in per[stem]), max(v for v, _ in per[stem]))
        return None, None, ("the machine ran the two windows at different speeds: no band of 1.15x holds %d steps "
                            "of each (%s's GEMMs at %s ns per multiply-add, %s's at %s)"
                            % (MATCH_LEAST, a, q(a), b, q(b)))
    return band[0], band[1], None


# ---- intervals: union, length, intersection, clip, gaps ----

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


def gaps(u, a, b):
    """idle intervals' lengths of union u inside [a, b], the edges included"""
    u = clip(u, a, b)
    out, t = [], a
    for x, y in u:
        out.append(x - t)
        t = y
    out.append(b - t)
    return [g for g in out if g > 0]


def in_window(e, a, b):
    return a <= e["ts"] < b


# ---- statistics ----

def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def quantile(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, int(q * len(s)))]


def spread(d):
    """(max - min) / max of per-rank values: 0 when every rank is alike"""
    v = list(d.values())
    return (max(v) - min(v)) / max(v) if max(v) > 0 else 0.0


# ---- a run's truth and its device traces ----

def truth_of(out, stem):
    with open(os.path.join(out, stem + ".truth.json"), encoding="utf-8") as f:
        return json.load(f)


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
        (median over steps) times the lower quartile of its durations
        (BEST_QUANTILE). A kernel of the emulated device runs on a worker
        thread, which the OS may deschedule mid-kernel, so a loaded machine
        only ever lengthens one. Every recorded step, whatever keep_steps()
        kept: best_speed() says when every rank's core ran at one best speed
        for that quarter of the run; the same quantile here, because a core
        that visits its faster speed for a step or two would otherwise give
        its kernels a fast tenth its peer's never had (comm-bound, 20.5%
        apart at the fastest tenth, 2.9% at the lower quartile)."""
        by = {}
        for e in self.kernels:
            if pred(e["name"]):
                by.setdefault(e["name"], []).append(e)
        total = 0.0
        for evs in by.values():
            counts = [sum(1 for e in evs if s["ts"] <= e["ts"] < s["ts"] + s["dur"]) for _, s in self.every]
            total += median(counts) * quantile([e["dur"] for e in evs], BEST_QUANTILE)
        return total

    def comm_during_backward(self):
        """[per step: how many all-reduce kernels start before the step's last
        backward GEMM (gemm_tn_kernel, gemm_nt_kernel) ends]; a step without a
        backward GEMM counts 0"""
        out = []
        for _, s in self.steps:
            ks = [e for e in self.kernels if s["ts"] <= e["ts"] < s["ts"] + s["dur"]]
            bw = [e["ts"] + e["dur"] for e in ks if e["name"] in ("gemm_tn_kernel", "gemm_nt_kernel")]
            out.append(sum(1 for e in ks if e["name"].startswith("ncclDevKernel_AllReduce") and bw and e["ts"] < max(bw)))
        return out

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
# the kernels' cost and the cores' best speed are both read at this quantile
# (a speed a core kept for a quarter of the run)
BEST_QUANTILE = 0.25


# the GEMM kernels that run one shape throughout a step on a rank (a mixture
# of experts' expert GEMMs change shape with each expert's tokens: not these)
SAME_SHAPE_GEMMS = ("gemm_kernel", "gemm_relu_kernel", "gemm_tn_kernel", "gemm_nt_kernel")


def _same_shape(t):
    """{kernel name: [(start, duration)]} of t's SAME_SHAPE_GEMMS"""
    by = {}
    for e in t.kernels:
        if e["name"] in SAME_SHAPE_GEMMS:
            by.setdefault(e["name"], []).append((e["ts"], e["dur"]))
    return by


def in_step_ratio(rs, steps):
    """{step number: how far its kernels strayed from their fastest}: over the
    ranks of rs and their SAME_SHAPE_GEMMS, the largest median duration of a
    kernel in the step over the fastest of that kernel in the step. The
    truth's meters keep each step's fastest GEMM, so a core that ran one GEMM
    of the step fast and the rest slow looks fast there; the trace's own
    kernels of one shape show it. A clock factor a fault applies (a straggler,
    a throttled backward) stretches every kernel of a name in the step alike
    and leaves the ratio at 1."""
    out = {n: 1.0 for n in steps}
    for t in rs:
        win = {n: (s["ts"], s["ts"] + s["dur"]) for n, s in t.every if n in steps}
        for evs in _same_shape(t).values():
            for n, (a, b) in win.items():
                ds = [d for ts, d in evs if a <= ts < b]
                if len(ds) >= 2 and min(ds) > 0:
                    out[n] = max(out[n], median(ds) / min(ds))
    return out


def step_speeds(out, stem, kernel=None):
    """{rank: {step number: its fastest metered GEMM, ns per multiply-add}} from
    STEM's truth, or a string saying why there are none. kernel: that backward
    GEMM's own meter (core_speed.by_rank[].step_backward_gemm_ns_per_mac)
    instead of the workload's metered GEMM."""
    return _speeds(_by_rank(out, stem), stem, kernel)


def meters(out, stem):
    """[(None, the forward GEMM's step_speeds()), (kernel, its step_speeds())
    for each backward GEMM every rank of STEM's run metered on its own], from
    one read of the truth, or a string saying why there are none"""
    by = _by_rank(out, stem)
    names = [set(r.get("step_backward_gemm_ns_per_mac") or {}) for r in by]
    got = []
    for kernel in [None] + (sorted(set.intersection(*names)) if names else []):
        speed = _speeds(by, stem, kernel)
        if isinstance(speed, str):
            return speed
        got.append((kernel, speed))
    return got


def _by_rank(out, stem):
    return ((truth_of(out, stem)["environment"].get("core_speed") or {}).get("by_rank")) or []


def _speeds(by, stem, kernel):
    speed = {}
    for r in by:
        v, first = r.get("step_gemm_ns_per_mac"), r.get("step_gemm_from")
        if kernel:
            v = (r.get("step_backward_gemm_ns_per_mac") or {}).get(kernel)
        if not v or first is None:
            return "%s: its truth records no per-step speed of rank %s's core" % (stem, r.get("rank"))
        speed[r["rank"]] = {int(first) + i: x for i, x in enumerate(v) if x > 0}
    if len(speed) < 2 or any(not d for d in speed.values()):
        return "%s: its truth records the per-step speed of %d cores" % (stem, len(speed))
    return speed


def best_speed(out, stem, rs):
    """Why the kernels' cost (DeviceTrace.cost_per_step(), each kernel at its
    lower quartile over the run) cannot be compared between STEM's ranks, or
    None: it can when every rank's core ran at the same best speed for a
    quarter of the run's steps or more (the ranks' per-step fastest metered
    GEMMs at their lower quartile within ONE_SPEED of each other), in the
    forward GEMM and in each backward GEMM the runs metered on its own. A
    core that stayed at its slower speed through the run (seen for 1-2 s at a
    time) makes its rank's kernels cost 1.8x at their fastest too; one that
    reached its faster speed for a step or two leaves most of its kernels
    without a fast instance (rank 0 of comm-bound, run 5 of the series on
    12c2030: fastest GEMM 0.192 in one step, 0.25-0.31 in the 11 others; its
    backward GEMMs never ran fast, and their cost read 32% above rank 1's).
    And a core can change speed inside a step: in run 1 of the series on
    f70c20a rank 0's forward GEMM ran fast in 4 steps of 12, its backward
    GEMMs in 2 of them, and they cost 1.2-1.4x rank 1's (spread 19.9%).
    rs: STEM's rank traces, whose same-shape GEMMs are read too."""
    if os.environ.get("FL_TIMING_CHECKS") == "always":
        return None
    ms = meters(out, stem)
    if isinstance(ms, str):
        return ms
    for kernel, speed in ms:
        best = {r: quantile(list(d.values()), BEST_QUANTILE) for r, d in speed.items()}
        q = max(best.values()) / min(best.values())
        if q > ONE_SPEED:
            return ("%s: the ranks' cores did not keep one best speed: their steps' fastest %s at the lower "
                    "quartile %s ns per multiply-add, %.2fx apart (> %.2fx)"
                    % (stem, kernel or "GEMMs", " ".join("%.3f" % best[r] for r in sorted(best)), q, ONE_SPEED))
    # the meters keep each step's fastest GEMM; the cost reads every kernel at
    # its lower quartile, so a quarter of each same-shape kernel must have run
    # at that kernel's fastest: comm-bound, run 1 of the series on df9878f,
    # rank 0's gemm_tn_kernel ran fast in 5 steps of 12 by the meter, but in
    # each of them once only (lower quartile 2,839 us, fastest 1,534), and
    # its compute cost read 29.2% above rank 1's
    for t in rs:
        for name, evs in sorted(_same_shape(t).items()):
            ds = [d for _, d in evs]
            low, fast = quantile(ds, BEST_QUANTILE), min(ds)
            if len(ds) >= 4 and fast > 0 and low > ONE_SPEED * fast:
                return ("%s: rank %d's core kept its best speed for under a quarter of its %s: lower quartile "
                        "%.0f us, %.2fx its fastest %.0f (> %.2fx; the core changed speed inside steps)"
                        % (stem, t.rank, name, low, low / fast, fast, ONE_SPEED))
    return None


def one_speed(out, stem, rs, skip_first=False, inside=False):
    """Keep in each rank trace of rs (STEM's run) only the steps in which every
    rank's core ran at one speed, and say why the run's timing between ranks
    cannot be judged when fewer than ONE_SPEED_STEPS did (None: it can).
    skip_first: the window's first recorded step is never kept (a pipeline's:
    each stage's first step begins where its own warm-up handed off, not
    where the schedule puts it).
    The truth records, for each rank and recorded step, the fastest of the
    step's metered GEMMs in ns of real work per multiply-add
    (environment.core_speed.by_rank[].step_gemm_ns_per_mac, the same shape in
    every step; on every rank but a skewed mixture of experts'). On this machine each core switches on its
    own between two speeds 1.8x apart, within a second, from outside the
    machine: a run of seconds almost always spans a switch, so the run as a
    whole rarely kept one speed, while most of its steps did. Comparing ranks
    in a step where one core ran at the other speed measures the machine, not
    the scenario; comparing them in the steps where the cores agreed measures
    the scenario. A core can switch inside a step, between its forward and
    its backward: a step is kept when the ranks agree in each meter the truth
    records (the forward GEMM's, and each backward GEMM's where training ran
    them; a healthy pipeline's first stage ran its gemm_nt_kernel 1.5-1.7x
    its peer's in 4 steps whose forward GEMMs agreed within 1.05x, and its
    bubble read 20.6% against the formula's 11.1%). A step whose switch came
    after its last metered GEMM still passes as one speed: the statistics
    over the kept steps are medians and quartiles. inside: a step is kept
    only if its kernels also ran at one speed inside it (in_step_ratio()
    within ONE_SPEED), for checks that read each step on its own against a
    model of the step (a pipeline's schedule: in run 1 of the series on
    df9878f, pipeline m=2 was judged on 3 steps whose fastest GEMMs agreed,
    two of them with kernels 1.62x and 1.91x their fastest at the median,
    and its stages idled 6 points above the schedule's prediction; in 4
    quiet rounds read back, the steps kept ran 1.03-1.18x, their stages 2-3
    points above it). Under FL_TIMING_CHECKS=always every step is kept (but a
    skipped first)."""
    first = min(n for r in rs for n, _ in r.steps) if rs else None
    if os.environ.get("FL_TIMING_CHECKS") == "always":
        if skip_first:
            for r in rs:
                r.keep_steps({n for n, _ in r.steps if n != first})
        return None
    ms = meters(out, stem)
    if isinstance(ms, str):
        return ms
    ms = [speed for _, speed in ms]
    if len(ms[0]) != len(rs):
        return "%s: its truth records the speed of %d cores for %d ranks" % (stem, len(ms[0]), len(rs))
    common = set.intersection(*(set(d) for speed in ms for d in speed.values()))
    if skip_first:
        common.discard(first)
    # a step's ratio: the largest of its meters' (the forward GEMM's, each backward GEMM's)
    ratio = {n: max(max(d[n] for d in speed.values()) / min(d[n] for d in speed.values()) for speed in ms)
             for n in common}
    if inside:
        # and inside the step, by the trace's own kernels of one shape (the
        # meters keep the step's fastest only)
        within = in_step_ratio(rs, common)
        ratio = {n: max(q, within[n]) for n, q in ratio.items()}
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
