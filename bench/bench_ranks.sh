#!/usr/bin/env bash
# bench_ranks.sh — how a multi-rank scenario's run time and per-rank trace size
# grow with the number of ranks.
#
#   bench/bench_ranks.sh BUILD_DIR [SCENARIO...]   (default: ddp-healthy, comm-bound, pipeline-a)
#
# Runs each scenario with --ranks 2, 4 and 8 (oversubscribed past the cores:
# mpirun --oversubscribe, which faultline passes itself) and prints the wall
# time of the whole run, the recorded window's step p50 (the truth's metrics),
# and per rank: gzipped trace bytes and events (the truth's trace list).
set -euo pipefail
build=${1:?usage: bench/bench_ranks.sh BUILD_DIR [SCENARIO...]}
shift
src=$(cd "$(dirname "$0")/.." && pwd)
fl=$(cd "$build" && pwd)/faultline
scenarios=("$@")
[ ${#scenarios[@]} = 0 ] && scenarios=(ddp-healthy comm-bound pipeline-a)
work=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-ranks.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "| scenario | ranks | wall (s) | step p50 (ms) | trace per rank (KB gz, min-max) | events per rank (min-max) |"
echo "|---|---|---|---|---|---|"
for sc in "${scenarios[@]}"; do
	for n in 2 4 8; do
		out=$work/$sc-$n
		t0=$(date +%s.%N)
		"$fl" run "$src/scenarios/$sc.json" --ranks "$n" -o "$out" >/dev/null 2>&1 || { echo "| $sc | $n | failed | | | |"; continue; }
		t1=$(date +%s.%N)
		python3 - "$out" "$sc" "$n" "$t0" "$t1" <<'PY'
import json, os, sys
out, sc, n, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
truth = next(f for f in os.listdir(out) if f.endswith(".truth.json"))
t = json.load(open(os.path.join(out, truth)))
kb = [os.path.getsize(os.path.join(out, x["file"])) / 1024 for x in t["traces"]]
ev = [x["events"] for x in t["traces"]]
print("| %s | %d | %.1f | %.1f | %.0f-%.0f | %d-%d |" % (sc, n, t1 - t0, t["metrics"]["steps"]["p50_ms"],
      min(kb), max(kb), min(ev), max(ev)))
PY
	done
done
