#!/usr/bin/env bash
# bench_hostile.sh — faultline analyze on hostile and large input.
#
#   bench/bench_hostile.sh BUILD_DIR [RUNS]     (default 7 runs per command)
#
# Makes, in a scratch directory: a gzip "bomb" of 512 MiB of spaces inside
# traceEvents (510 KB compressed), and a ~36 MB (JSON) single-rank trace of
# tests/tools/synth_trace.py (3000 steps, 4.2 MB gzipped; every kind of event
# the readers meet, one of them with a negative duration). Then, each command
# in its own process, wall time (min and median of RUNS) and GNU time's peak
# RSS (GNU time, /usr/bin/time) of: zcat (the floor for .gz input), `faultline analyze` (host metrics)
# and `faultline analyze --device` on the trace; `analyze` and
# `analyze --device` on the bomb. The speed target is analyze at >= 0.8x the
# speed of zcat alone (zcat's time / analyze's time); the memory target a
# peak RSS <= 64 MB on the bomb.
set -euo pipefail
build=${1:?usage: bench/bench_hostile.sh BUILD_DIR [RUNS]}
runs=${2:-7}
src=$(cd "$(dirname "$0")/.." && pwd)
fl=$(cd "$build" && pwd)/faultline
work=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-hostile.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 - "$work/bomb.json.gz" <<'PY'
import gzip, sys
with gzip.open(sys.argv[1], "wb", 9) as f:
    f.write(b'{"traceEvents":[')
    for _ in range(512):
        f.write(b" " * (1 << 20))
    f.write(b"]}")
PY
python3 "$src/tests/tools/synth_trace.py" "$work/synth" --ranks 1 --steps 3000 --seed 3 >/dev/null
trace=$work/synth/synthetic.rank-0.json.gz
echo "trace: $(zcat "$trace" | wc -c) bytes of JSON, $(stat -c %s "$trace") gzipped; bomb: $(stat -c %s "$work/bomb.json.gz") gzipped"
python3 - "$runs" "$fl" "$trace" "$work/bomb.json.gz" <<'PY'
import os, statistics, subprocess, sys, time
runs, fl, trace, bomb = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
cmds = [("zcat trace", ["zcat", trace]), ("analyze trace", [fl, "analyze", trace]),
        ("analyze --device trace", [fl, "analyze", "--device", trace]),
        ("analyze bomb", [fl, "analyze", bomb]), ("analyze --device bomb", [fl, "analyze", "--device", bomb])]
res = {}
rssf = os.path.join(os.path.dirname(bomb), "rss")
for name, c in cmds:
    ts, rss = [], 0
    for _ in range(runs if "bomb" not in name else max(1, runs // 3)):
        t = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rssf] + c, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t)
        rss = max(rss, int(open(rssf).read().split()[-1]))
    res[name] = statistics.median(ts)
    print(f"{name:24s} min {min(ts):6.3f} s  median {statistics.median(ts):6.3f} s  peak RSS {rss / 1024:7.1f} MB")
print(f"analyze at {res['zcat trace'] / res['analyze trace']:.2f}x the speed of zcat (target >= 0.8x)")
PY
