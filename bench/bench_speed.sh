#!/usr/bin/env bash
# bench_speed.sh — do the runs the truth calls "unequal" (environment.core_speed)
# hold the failures of the multi-rank timing checks?
#
#   bench/bench_speed.sh BUILD_DIR [ROUNDS]     (default: 10 rounds)
#
# Each round runs the multi-rank test's three scenarios as it runs them
# (comm-bound at 1.5 Gbit/s, straggler, backward straggler; 2 ranks, 6 steps), then asserts every timing check
# between ranks even where the truth says the cores ran at unequal speeds
# (tracecheck.py multirank under FL_TIMING_CHECKS=always). Printed per round:
# each run's verdict (! unequal), its largest probe ratio, the probes in us
# (calibration | each rank's window open/close), and the checks that failed.
# Last, the counts: runs called unequal, rounds failed, rounds failed whose
# runs were all called alike (what the verdict misses).
set -euo pipefail
build=${1:?usage: bench/bench_speed.sh BUILD_DIR [ROUNDS]}
rounds=${2:-10}
src=$(cd "$(dirname "$0")/.." && pwd)
fl=$(cd "$build" && pwd)/faultline
work=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-speed.XXXXXX")
trap 'rm -rf "$work"' EXIT
unequal=0 runs=0 failed=0 missed=0
# the scenarios as the test runs them (comm-bound at its range's low end)
bash "$src/tests/tools/multirank_scenarios.sh" "$src" "$work/sc"
for i in $(seq 1 "$rounds"); do
	out="$work/r$i"
	for s in comm-bound straggler straggler-backward; do
		"$fl" run "$work/sc/$s.json" --ranks 2 --steps 6 -o "$out" >/dev/null 2>&1
	done
	fails=$(FL_TIMING_CHECKS=always python3 "$src/tests/tools/tracecheck.py" multirank "$out" 2>&1 |
		grep '^FAIL' | cut -c7-70 | paste -sd '|' - || true)
	verdict=$(python3 - "$out" <<'PY'
import glob, json, os, sys
out, n, bad = [], 0, 0
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.truth.json"))):
    rs = json.load(open(f))["environment"]["core_speed"]
    n += 1
    bad += bool(rs["unequal"])
    probes = ",".join("%.0f/%.0f" % (b["start_ms"] * 1e3, b["end_ms"] * 1e3) for b in rs["by_rank"])
    out.append("%s %.2fx %.0f|%s%s" % (os.path.basename(f)[:-11], rs["spread"], rs.get("calibration_probe_ms", 0) * 1e3,
                                      probes, " !" if rs["unequal"] else ""))
print(n, bad, "  ".join(out))
PY
)
	read -r n bad rest <<<"$verdict"
	runs=$((runs + n)) unequal=$((unequal + bad))
	if [ -n "$fails" ]; then
		failed=$((failed + 1))
		[ "$bad" = 0 ] && missed=$((missed + 1))
	fi
	echo "round $i: $rest  ${fails:-all checks hold}"
done
echo "runs called unequal: $unequal of $runs; rounds with a failed timing check: $failed of $rounds;" \
	"failed rounds whose runs were all called alike: $missed"
