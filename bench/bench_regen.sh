#!/bin/bash
# bench_regen.sh — the R7-R9 answer-key figures over N consecutive regens.
#
#   bench/bench_regen.sh [N] [FAULTLINE]      (default: 20 runs, build/faultline)
#
# Runs `faultline regen` N times and prints, for each figure of the published
# answer keys, the original's value and min - median - max over the runs (step
# p50 is the track's upper median, sorted(steps)[n // 2]). Op counts must be
# exact; the other figures are timings of this machine at this moment. R9's
# p50 and mystery total are given again over the runs whose truth says the
# cores kept one speed (environment.core_speed: the probes and each step's
# GEMM speed), to tell the machine's changes of speed from faultline's own.
set -eu
N=${1:-20}
FL=${2:-build/faultline}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-regen.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
for i in $(seq 1 "$N"); do
	"$FL" regen -o "$TMP/run$i" >/dev/null 2>&1 || { echo "regen run $i failed" >&2; exit 1; }
done
python3 - "$TMP" "$N" <<'PY'
import gzip, json, os, sys
tmp, n = sys.argv[1], int(sys.argv[2])

def trace(path):
    with gzip.open(path, "rt") as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in ev if e["cat"] == "user_annotation" and e["name"].startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    return ev, [e["dur"] / 1000.0 for e in steps]

def p50(v):
    return sorted(v)[len(v) // 2]

def span_total(ev, name):
    return sum(e["dur"] for e in ev if e["cat"] == "user_annotation" and e["name"] == name) / 1000.0

rows = {}
def add(key, v):
    rows.setdefault(key, []).append(v)

for i in range(1, n + 1):
    out = os.path.join(tmp, "run%d" % i)
    hev, hs = trace(os.path.join(out, "lab-r7-a.json.gz"))
    sev, ss = trace(os.path.join(out, "lab-r7-b.json.gz"))
    oev, os_ = trace(os.path.join(out, "lab-r8.json.gz"))
    rev, rs = trace(os.path.join(out, "lab-r9.json.gz"))
    hops = sum(1 for e in hev if e["cat"] == "cpu_op")
    oops = sum(1 for e in oev if e["cat"] == "cpu_op")
    add("healthy ops (8 steps)", hops)
    add("op-storm ops (8 steps)", oops)
    add("op-storm / healthy ops", oops / hops)
    add("healthy step p50 (ms)", p50(hs))
    add("op-storm step p50 (ms)", p50(os_))
    add("R8 step p50, op storm / healthy", p50(os_) / p50(hs))
    add("R7 starved step p50 (ms)", p50(ss))
    add("R7 data_loading total (ms)", span_total(sev, "data_loading"))
    add("R9 step p50 (ms)", p50(rs))
    add("R9 step max (ms)", max(rs))
    add("R9 mystery total (ms)", span_total(rev, "mystery"))
    steps = dict(zip(range(2, 2 + len(rs)), rs))
    clean = [ms for k, ms in steps.items() if k % 3 != 2 and k % 2 != 1]
    add("R9 clean steps (ms, p50)", p50(clean))
    with open(os.path.join(out, "lab-r9.truth.json")) as f:
        truth = json.load(f)
    speed = truth["environment"].get("core_speed") or {}
    if not speed.get("unequal", True):  # the run's cores kept one speed (probes and steps)
        add("R9 step p50 (ms), runs at one speed", p50(rs))
        add("R9 mystery total (ms), runs at one speed", span_total(rev, "mystery"))
    gc = next(x for x in truth["faults"] if x["fault"] == "gc_pause")
    rec = [i for i in gc["instances"] if i["recorded"]]
    add("gc_pause first recorded collection / pause_ms", rec[0]["measured"] / gc["params"]["pause_ms"])
    add("gc_pause last / first recorded collection", rec[-1]["measured"] / rec[0]["measured"])

original = {
    "healthy ops (8 steps)": "304", "op-storm ops (8 steps)": "7,504", "op-storm / healthy ops": "24.7x",
    "R9 step p50 (ms), runs at one speed": "45.1", "R9 mystery total (ms), runs at one speed": "151",
    "healthy step p50 (ms)": "0.29", "op-storm step p50 (ms)": "2.15", "R8 step p50, op storm / healthy": "7.4x",
    "R7 starved step p50 (ms)": "36.9", "R7 data_loading total (ms)": "283", "R9 step p50 (ms)": "45.1",
    "R9 step max (ms)": "104.5", "R9 mystery total (ms)": "151", "R9 clean steps (ms, p50)": "1.16",
    "gc_pause first recorded collection / pause_ms": "1.00 (35.0 of 35)",
    "gc_pause last / first recorded collection": "1.29 (45.1 / 35.0)",
}
print("%d consecutive regens; R9's cores kept one speed in %d (environment.core_speed)"
      % (n, len(rows.get("R9 step p50 (ms), runs at one speed", []))))
print("| figure | original | min - median - max | spread (max/min) |")
print("|---|---|---|---|")
for k, v in rows.items():
    s = sorted(v)
    fmt = "%d" if all(isinstance(x, int) for x in v) else "%.3g"
    print("| %s | %s | %s - %s - %s | %.2fx |" % (k, original[k], fmt % s[0], fmt % s[(len(s) - 1) // 2 + (len(s) % 2 == 0)],
                                                  fmt % s[-1], s[-1] / s[0] if s[0] else float("nan")))
PY
