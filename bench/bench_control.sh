#!/usr/bin/env bash
# bench_control.sh — faultline's readers on HTA's own public test trace.
#
#   bench/bench_control.sh BUILD_DIR TRACE [RUNS]     (default 11 rounds)
#
# TRACE is HolisticTraceAnalysis's tests/data/trace_diff/control/control.json.gz
# (1.77 MB gzipped, 34.8 MB of JSON: a real torch.profiler CUDA trace; take it
# from a clone of HTA's repository). Each round runs, each in its own process
# and in turn (so a load spike hits every command alike): zcat (the floor for
# .gz input), `faultline analyze` (host metrics), `analyze --device` (HTA's
# device analyses), `diagnose` and `validate`. Prints min and median wall time
# and GNU time's peak RSS of each, and the two ratios the issues name:
# analyze's speed against zcat's (target >= 0.8x) and diagnose's cost against
# analyze --device (target <= 1.5x), both from medians of the same rounds.
set -euo pipefail
build=${1:?usage: bench/bench_control.sh BUILD_DIR TRACE [RUNS]}
trace=${2:?usage: bench/bench_control.sh BUILD_DIR TRACE [RUNS]}
runs=${3:-11}
fl=$(cd "$build" && pwd)/faultline
echo "trace: $(zcat "$trace" | wc -c) bytes of JSON, $(stat -c %s "$trace") gzipped"
python3 - "$runs" "$fl" "$trace" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
runs, fl, trace = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cmds = [("zcat", ["zcat", trace]), ("analyze", [fl, "analyze", trace]),
        ("analyze --device", [fl, "analyze", "--device", trace]), ("diagnose", [fl, "diagnose", trace]),
        ("validate", [fl, "validate", trace])]
ts = {n: [] for n, _ in cmds}
rss = {n: 0 for n, _ in cmds}
rssf = tempfile.mktemp()
for _ in range(runs):
    for name, c in cmds:
        t = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rssf] + c, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        ts[name].append(time.perf_counter() - t)
        rss[name] = max(rss[name], int(open(rssf).read().split()[-1]))
os.unlink(rssf)
med = {n: statistics.median(v) for n, v in ts.items()}
for name, _ in cmds:
    print(f"{name:18s} min {min(ts[name]):6.3f} s  median {med[name]:6.3f} s  peak RSS {rss[name] / 1024:6.1f} MB")
print(f"analyze at {med['zcat'] / med['analyze']:.2f}x the speed of zcat (target >= 0.8x)")
print(f"diagnose costs {med['diagnose'] / med['analyze --device']:.2f}x analyze --device (target <= 1.5x)")
PY
