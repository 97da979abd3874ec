"""Compare faultline's device analyses (tests/tools/fl_metrics) with HTA's own.

usage: hta_parity.py FL_METRICS TRACE_DIR [--straggler] [--label NAME]
       hta_parity.py FL_METRICS --diff CONTROL_DIR TEST_DIR [--label NAME]

TRACE_DIR holds the traces of one job (one per rank, nothing else: HTA reads
every .json and .json.gz there). Times must agree to the µs, percentages to
0.01 points (HTA rounds its percentages to 0.01 points; where it rounds
coarser, e.g. idle ratios, the comparison recomputes the share from HTA's µs).
Prints each failed check (FAIL), each analysis HTA cannot do (note) and a
summary line; exit 1 when any check fails.
"""
import glob
import gzip
import json
import logging
import math
import os
import subprocess
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import pandas as pd  # noqa: E402

# HTA sorts kernels by ts with pandas' default sort (numpy's quicksort, not
# stable). After its ns rounding (ts = ceil, end = floor) a sub-µs kernel can
# end before it starts, and then the order among kernels of equal ts changes
# its merged intervals by a µs or two: HTA's own result depends on the sort's
# internal order. faultline keeps file order among ties (a stable sort); the
# parity is checked against HTA run with a stable sort, the one well-defined
# answer (docs/analyze.md, "Ties").
_sort_values = pd.DataFrame.sort_values


def _stable_sort_values(self, *args, **kwargs):
    kwargs.setdefault("kind", "stable")
    return _sort_values(self, *args, **kwargs)


pd.DataFrame.sort_values = _stable_sort_values

# HTA groups kernels by symbol id, and its symbol ids follow the iteration order
# of a Python set of names (the hash seed's order): kernels whose totals tie
# come out in an order nobody chose, and which of them falls into "others"
# changes from run to run. faultline breaks such ties by name; HTA's symbols
# are added in name order here, so that its ties break the same way
# (docs/analyze.md, "Ties" (c)).
from hta.common.trace_symbol_table import TraceSymbolTable  # noqa: E402

_add_symbols = TraceSymbolTable.add_symbols


def _sorted_add_symbols(self, symbols):
    return _add_symbols(self, sorted(symbols))


TraceSymbolTable.add_symbols = _sorted_add_symbols
from hta.trace_analysis import TraceAnalysis  # noqa: E402
from hta.trace_diff import TraceDiff  # noqa: E402

US = 1.0 + 1e-9  # "to the µs": less than one µs apart
PTS = 0.01 + 1e-9  # percentage points
failures = 0
checks = 0
label = ""


def check(ok, what):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
        print("FAIL %s%s" % (label, what))


def close(a, b, tol):
    if a is None or b is None or (isinstance(b, float) and math.isnan(b)):
        return (a is None or (isinstance(a, float) and math.isnan(a))) and (
            b is None or (isinstance(b, float) and math.isnan(b)))
    return abs(float(a) - float(b)) < tol


def fl_json(fl, args):
    out = subprocess.run([fl] + args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def traces(d):
    return sorted(glob.glob(os.path.join(d, "*.json.gz")) + glob.glob(os.path.join(d, "*.json")))


def temporal(a, m):
    tb = a.get_temporal_breakdown(visualize=False)
    for _, row in tb.iterrows():
        r = m["ranks"][str(int(row["rank"]))]["temporal"]
        for k, h in (("idle_us", "idle_time(us)"), ("compute_us", "compute_time(us)"),
                     ("non_compute_us", "non_compute_time(us)"), ("span_us", "kernel_time(us)")):
            check(close(r[k], row[h], US), "temporal rank %d %s: faultline %s, HTA %s" % (row["rank"], k, r[k], row[h]))
        for k, h in (("idle_pct", "idle_time_pctg"), ("compute_pct", "compute_time_pctg"),
                     ("non_compute_pct", "non_compute_time_pctg")):
            check(close(r[k], row[h], PTS), "temporal rank %d %s: faultline %s, HTA %s" % (row["rank"], k, r[k], row[h]))


def temporal_unasserted(a, m):
    """HTA's temporal breakdown where HTA itself stops on `assert
    non_compute_time >= 0`: its ns rounding (ts = ceil, end = floor) gives a
    sub-µs event that crosses no whole µs a negative duration, and one such
    memory copy alone in a gap between kernels makes the merged time of all
    kernels a µs shorter than that of the compute kernels. HTA's own pieces
    (its interval merge, its idle time, its kernel types) compute the numbers
    its final asserts would have returned; faultline's must equal them. Returns
    how many non-compute device events round to a negative duration."""
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.utils.utils import KernelType, get_kernel_type, merge_kernel_intervals
    sym = a.t.symbol_table.get_sym_table()
    negative = 0
    for rank, df in a.t.traces.items():
        k = df[df["stream"].ne(-1)].copy()
        k["kernel_type"] = k[["name"]].apply(lambda x: get_kernel_type(sym[x["name"]]), axis=1)
        comp_rows = k["kernel_type"].eq(KernelType.COMPUTATION.name)
        negative += int(((k["dur"] < 0) & ~comp_rows).sum())
        idle, span = BreakdownAnalysis._get_idle_time_for_kernels(k.copy())
        comp = merge_kernel_intervals(k[comp_rows].copy())
        compute = comp.end.sum() - comp.ts.sum()
        non = span - compute - idle
        r = m["ranks"][str(int(rank))]["temporal"]
        for key, h in (("idle_us", idle), ("compute_us", compute), ("non_compute_us", non), ("span_us", span)):
            check(close(r[key], h, US), "temporal rank %d %s (HTA unasserted): faultline %s, HTA %s" % (rank, key, r[key], h))
        for key, h in (("idle_pct", idle), ("compute_pct", compute), ("non_compute_pct", non)):
            check(close(r[key], round(100 * h / span, 2), PTS),
                  "temporal rank %d %s (HTA unasserted): faultline %s, HTA %s" % (rank, key, r[key], round(100 * h / span, 2)))
    return negative


def overlap(a, m):
    ov = a.get_comm_comp_overlap(visualize=False)
    for _, row in ov.iterrows():
        r = m["ranks"][str(int(row["rank"]))]["overlap"]["comm_comp_pct"]
        h = row["comp_comm_overlap_pctg"]
        check(close(r, h, PTS), "overlap rank %d: faultline %s%%, HTA %s%%" % (row["rank"], r, h))


def idle(a, m):
    for rank in a.t.get_ranks():
        res = a.get_idle_time_breakdown(ranks=[rank], visualize=False, show_idle_interval_stats=False)
        df = res[0] if isinstance(res, tuple) else res
        ours = m["ranks"][str(rank)]["idle"]
        for stream in df["stream"].unique():
            s = df[df["stream"] == stream].set_index("idle_category")["idle_time"]
            total = float(s.sum())
            o = ours.get(str(int(stream)))
            check(o is not None, "idle rank %d stream %s: missing in faultline" % (rank, stream))
            if o is None:
                continue
            for cat in ("host_wait", "kernel_wait", "other"):
                h = float(s.get(cat, 0.0))
                check(close(o[cat + "_us"], h, US),
                      "idle rank %d stream %s %s: faultline %s µs, HTA %s µs" % (rank, stream, cat, o[cat + "_us"], h))
                hp = 100.0 * h / total if total else float("nan")
                check(close(o[cat + "_pct"], hp, PTS),
                      "idle rank %d stream %s %s: faultline %s%%, HTA %s%%" % (rank, stream, cat, o[cat + "_pct"], hp))
        check(len(ours) == len(df["stream"].unique()),
              "idle rank %d: streams faultline %s, HTA %s" % (rank, sorted(ours), sorted(df["stream"].unique())))


def kernels(a, m):
    types, per = a.get_gpu_kernel_breakdown(visualize=False)
    # a combination that lasted 0 µs (two kernels meeting at one instant) is
    # listed by HTA or not depending on how its sort orders equal times
    types = types[types["sum"] != 0]
    total = float(types["sum"].sum())
    ours = m["kernels"]["types"]
    for _, row in types.iterrows():
        o = ours.get(row["kernel_type"])
        check(o is not None and close(o["us"], row["sum"], US),
              "kernel type %s: faultline %s µs, HTA %s µs" % (row["kernel_type"], o and o["us"], row["sum"]))
        if o is not None:
            check(close(o["pct"], 100.0 * row["sum"] / total, PTS),
                  "kernel type %s: faultline %s%%, HTA %s%%" % (row["kernel_type"], o["pct"], 100.0 * row["sum"] / total))
    check(len(ours) == len(types), "kernel types: faultline %s, HTA %s" % (sorted(ours), list(types["kernel_type"])))
    for _, row in per.iterrows():
        rows = m["ranks"][str(int(row["rank"]))]["kernels"]["by_name"].get(row["kernel_type"], [])
        o = next((x for x in rows if x["name"] == row["name"]), None)
        what = "kernel %s rank %d %s" % (row["kernel_type"], row["rank"], row["name"])
        check(o is not None, what + ": missing in faultline")
        if o is None:
            continue
        for k, h in (("sum_us", "sum (us)"), ("max_us", "max (us)"), ("min_us", "min (us)"),
                     ("mean_us", "mean (us)"), ("std_us", "stddev")):
            check(close(o[k], row[h], US), "%s %s: faultline %s, HTA %s" % (what, k, o[k], row[h]))
    for rank in a.t.get_ranks():
        for kt, rows in m["ranks"][str(rank)]["kernels"]["by_name"].items():
            n = len(per[(per["rank"] == rank) & (per["kernel_type"] == kt)])
            check(n == len(rows), "kernels %s rank %d: faultline %d names, HTA %d" % (kt, rank, len(rows), n))


def launch(a, m):
    ls = a.get_cuda_kernel_launch_stats(ranks=a.t.get_ranks(), visualize=False)
    for rank, df in ls.items():
        o = m["ranks"][str(rank)]["launch"]
        check(o["pairs"] == len(df), "launch rank %d pairs: faultline %s, HTA %d" % (rank, o["pairs"], len(df)))
        if not len(df):
            continue
        for k, col in (("cpu_us", "cpu_duration"), ("gpu_us", "gpu_duration"), ("delay_us", "launch_delay")):
            for stat, h in (("sum", df[col].sum()), ("mean", df[col].mean()), ("max", df[col].max())):
                check(close(o[k][stat], h, US), "launch rank %d %s.%s: faultline %s, HTA %s" % (rank, k, stat, o[k][stat], h))
        for stat, q in (("p50", 0.5), ("p95", 0.95)):
            h = df["launch_delay"].quantile(q)
            check(close(o["delay_us"][stat], h, US), "launch rank %d delay %s: faultline %s, HTA %s" % (rank, stat, o["delay_us"][stat], h))
        short = ((df["cpu_duration"] <= 50) & (df["gpu_duration"] < df["cpu_duration"])).sum()
        check(o["short_kernels"] == short, "launch rank %d short kernels: faultline %s, HTA %s" % (rank, o["short_kernels"], short))
        rto = (df["cpu_duration"] > 50).sum()
        check(o["runtime_outliers"] == rto, "launch rank %d runtime outliers: faultline %s, HTA %s" % (rank, o["runtime_outliers"], rto))
        ldo = (df["launch_delay"] > 100).sum()
        check(o["launch_delay_outliers"] == ldo, "launch rank %d delay outliers: faultline %s, HTA %s" % (rank, o["launch_delay_outliers"], ldo))


def queue(a, m):
    """HTA sorts launches (+1) and kernel starts (-1) by ts with an unstable
    sort: at equal (whole-µs) ts a kernel may come before its own launch and
    the queue reads -1. faultline puts launches first. The check takes HTA's
    own series, orders equal-ts changes launch-first, and compares the summary;
    the count is compared on HTA's series as is."""
    series = a.get_queue_length_time_series(ranks=a.t.get_ranks())
    for rank in a.t.get_ranks():
        ours = m["ranks"][str(rank)]["queue"]
        df = series.get(rank)
        if df is None:
            check(not ours, "queue rank %d: HTA has none, faultline has %s" % (rank, sorted(ours)))
            continue
        for stream, g in df.groupby("stream"):
            o = ours.get(str(int(stream)))
            what = "queue rank %d stream %d" % (rank, stream)
            check(o is not None, what + ": missing in faultline")
            if o is None:
                continue
            q = g["queue_length"].tolist()
            deltas = [q[0]] + [q[i] - q[i - 1] for i in range(1, len(q))]
            order = sorted(range(len(q)), key=lambda i: (g["ts"].iloc[i], -deltas[i], i))
            run, vals = 0, []
            for i in order:
                run += deltas[i]
                vals.append(run)
            d = pd.Series(vals, dtype="float64").describe()
            check(o["count"] == len(q), "%s count: faultline %s, HTA %s" % (what, o["count"], len(q)))
            for k, h in (("mean", "mean"), ("std", "std"), ("min", "min"), ("p25", "25%"), ("p50", "50%"),
                         ("p75", "75%"), ("max", "max")):
                check(close(o[k], d[h], 1e-6 + 1e-9 * abs(d[h])),
                      "%s %s: faultline %s, HTA %s (launch-first at equal ts)" % (what, k, o[k], d[h]))
        check(len(ours) == df["stream"].nunique(), "queue rank %d: streams faultline %s, HTA %s"
              % (rank, sorted(ours), sorted(df["stream"].unique())))


def renamed_copy(d, out):
    """HTA 0.5's straggler rule knows collectives only as ncclKernel*: a copy of
    the traces with ncclDevKernel* renamed lets it see NCCL 2.19+ names."""
    os.makedirs(out, exist_ok=True)
    for f in traces(d):
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt") as fh:
            text = fh.read().replace("ncclDevKernel", "ncclKernel")
        with opener(os.path.join(out, os.path.basename(f)), "wt") as fh:
            fh.write(text)
    return out


def straggler(d, m, tmp):
    s = m["straggler"]
    a = TraceAnalysis(trace_dir=renamed_copy(d, tmp))
    for k, ours in ((1, [s["rank"]]), (2, s.get("candidates"))):
        try:
            hta = [int(x) for x in a.get_potential_stragglers(num_candidates=k)]
        except (IndexError, ValueError) as e:
            # HTA fails when an iteration has fewer long collectives than
            # candidates (IndexError; faultline then counts every rank of that
            # iteration), and when no (stream, kernel) is long on two ranks of
            # any step: every across-rank std is NaN and its idxmax raises
            # (ValueError; seen on a sanitizer build's slower ddp-healthy)
            print("note %sstraggler top %d: HTA fails (%s), faultline %s" % (label, k, type(e).__name__, ours))
            continue
        check(ours == hta, "straggler top %d: faultline %s, HTA %s" % (k, ours, hta))


def diff(fl, c, t):
    ours = fl_json(fl, ["--diff"] + traces(c) + ["--"] + traces(t))
    df = TraceDiff.compare_traces(c, t)
    ops = TraceDiff.ops_diff(c, t)
    for name, row in df.iterrows():
        o = ours["ops"].get(name)
        check(o is not None, "diff %s: missing in faultline" % name)
        if o is None:
            continue
        for k, h in (("control_count", "Control_counts"), ("test_count", "Test_counts"),
                     ("control_us", "Control_total_duration"), ("test_us", "Test_total_duration"),
                     ("diff_count", "diff_counts"), ("diff_us", "diff_duration")):
            check(close(o[k], row[h], US), "diff %s %s: faultline %s, HTA %s" % (name, k, o[k], row[h]))
    check(len(ours["ops"]) == len(df), "diff: faultline %d names, HTA %d" % (len(ours["ops"]), len(df)))
    for k in ("added", "deleted", "increased", "decreased", "unchanged"):
        check(sorted(ours[k]) == sorted(ops[k]), "diff %s: faultline %s, HTA %s" % (k, ours[k], ops[k]))


def main():
    global label
    args = sys.argv[1:]
    if "--label" in args:
        i = args.index("--label")
        label = args[i + 1] + ": "
        del args[i:i + 2]
    fl = args[0]
    if args[1] == "--diff":
        diff(fl, args[2], args[3])
    else:
        d = args[1]
        m = fl_json(fl, traces(d))
        a = TraceAnalysis(trace_dir=d)
        for fn in (temporal, overlap, idle, kernels, launch, queue):
            try:
                fn(a, m)
            except AssertionError:
                if fn is not temporal:
                    raise
                negative = temporal_unasserted(a, m)
                print("note %stemporal: HTA fails its own assert (non_compute_time >= 0): %d memory or "
                      "communication events round to a negative duration; checked against HTA's "
                      "arithmetic without the assert" % (label, negative))
                check(negative > 0, "temporal: HTA's assert fails with no non-compute event of negative duration")
            except (IndexError, KeyError, ValueError) as e:
                # HTA fails on traces without kernels (e.g. CPU-only ones):
                # faultline reports null there instead
                print("note %s%s: HTA fails (%s: %s)" % (label, fn.__name__, type(e).__name__, e))
                if fn is temporal:
                    for rank in m["ranks"]:
                        check(m["ranks"][rank]["temporal"] is None,
                              "temporal rank %s: HTA fails, faultline %s" % (rank, m["ranks"][rank]["temporal"]))
        if "--straggler" in args:
            straggler(d, m, d.rstrip("/") + "-renamed")
    print("%s%d checks, %d failed" % (label, checks, failures))
    sys.exit(1 if failures else 0)


main()
