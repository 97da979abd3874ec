#!/usr/bin/env bash
# bench_ramp.sh — does the truth's core-speed verdict (environment.core_speed)
# hold the failures of the single-process DVFS ramp check?
#
#   bench/bench_ramp.sh BUILD_DIR [RUNS]     (default: 20 runs)
#
# Each run is scenarios/dvfs-throttle.json as the catalog test runs it (emu,
# one process, 8 recorded steps, the clock factor ramping 1x to 3x), then the
# ramp check asserted even where the truth calls the run unequal
# (tracecheck.py catalog_b under FL_TIMING_CHECKS=always: the fastest
# gemm_kernel of the later half of the steps >= 1.4x the earlier half's).
# Printed per run: the verdict (! unequal), its largest ratio, the device's
# core, the probes in us (calibration | window open/close), the steps' fastest
# GEMM in ps per multiply-add (when the build measures it), and the check.
# Last, the counts: runs called unequal, runs whose check failed, failed runs
# called alike (what the verdict misses). A build from before the step GEMM
# speed runs too: it shows what the probes alone miss.
set -euo pipefail
build=${1:?usage: bench/bench_ramp.sh BUILD_DIR [RUNS]}
runs=${2:-20}
src=$(cd "$(dirname "$0")/.." && pwd)
fl=$(cd "$build" && pwd)/faultline
work=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-ramp.XXXXXX")
trap 'rm -rf "$work"' EXIT
unequal=0 failed=0 missed=0
for i in $(seq 1 "$runs"); do
	out="$work/r$i"
	"$fl" run "$src/scenarios/dvfs-throttle.json" -o "$out" >/dev/null 2>&1
	check=$(FL_TIMING_CHECKS=always python3 "$src/tests/tools/tracecheck.py" catalog_b "$out" 2>&1 |
		grep -E '^(FAIL|ok) +lab-inference: the fastest' | cut -c1-80 || true)
	verdict=$(python3 - "$out/lab-inference.truth.json" <<'PY'
import json, sys
env = json.load(open(sys.argv[1]))["environment"]
rs = env["core_speed"]
b = rs["by_rank"][0]
steps = ",".join("%.0f" % (v * 1e3) for v in b.get("step_gemm_ns_per_mac", []))
print(int(bool(rs["unequal"])), "%.2fx core %s %.0f|%.0f/%.0f %s%s" % (
    rs["spread"], (env.get("pinning") or {}).get("device_core", "-"), rs.get("calibration_probe_ms", 0) * 1e3,
    b["start_ms"] * 1e3, b["end_ms"] * 1e3, steps or "-", " !" if rs["unequal"] else ""))
PY
)
	read -r bad rest <<<"$verdict"
	unequal=$((unequal + bad))
	case $check in
	FAIL*)
		failed=$((failed + 1))
		[ "$bad" = 0 ] && missed=$((missed + 1))
		;;
	esac
	echo "run $i: $rest  ${check:-no ramp check printed}"
done
echo "runs called unequal: $unequal of $runs; runs whose ramp check failed: $failed;" \
	"failed runs called alike: $missed"
