#!/usr/bin/env bash
# bench_noise.sh — the multi-rank signature test under a stop-and-go load, with
# the ranks pinned (the default) and with FL_NO_PIN=1.
#
#   bench/bench_noise.sh BUILD_DIR [RUNS] [ON_MS] [OFF_MS]   (default: 10 runs, 20 ms on, 80 ms off)
#
# A load generator beside the test spins for ON_MS and sleeps for OFF_MS, each
# drawn uniformly in [0.5, 1.5] x its value (one unpinned process at nice 0:
# another tenant of a small VM, a browser, an editor's indexer). The test
# (tests/e2e/multirank_signatures.sh) runs its RUNS rounds of comm-bound,
# straggler and backward straggler on 2 ranks; printed: how many rounds failed
# and each failed check, for each placement. The load is not the suite's
# condition: the signature tests assert on a quiet machine; this measures how
# far from quiet they hold.
set -euo pipefail
build=${1:?usage: bench/bench_noise.sh BUILD_DIR [RUNS] [ON_MS] [OFF_MS]}
runs=${2:-10}
on=${3:-20}
off=${4:-80}
src=$(cd "$(dirname "$0")/.." && pwd)
fl=$(cd "$build" && pwd)/faultline
work=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-noise.XXXXXX")
load_pid=
trap '[ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null; rm -rf "$work"' EXIT
python3 - "$on" "$off" <<'PY' &
import random, sys, time
on, off = float(sys.argv[1]) / 1000, float(sys.argv[2]) / 1000
while True:
    t = time.monotonic()
    d = on * random.uniform(0.5, 1.5)
    while time.monotonic() - t < d:
        pass
    time.sleep(off * random.uniform(0.5, 1.5))
PY
load_pid=$!
echo "load: ${on} ms on, ${off} ms off (each x U[0.5, 1.5]); $runs rounds per placement"
for placement in pinned unpinned; do
	log=$work/$placement.log
	if [ $placement = pinned ]; then
		FL_MR_RUNS=$runs bash "$src/tests/e2e/multirank_signatures.sh" "$fl" "$src" >"$log" 2>&1 || true
	else
		FL_NO_PIN=1 FL_MR_RUNS=$runs bash "$src/tests/e2e/multirank_signatures.sh" "$fl" "$src" >"$log" 2>&1 || true
	fi
	failed=$(grep -c '^FAIL  run [0-9]*: signatures' "$log" || true)
	echo "$placement: $failed of $runs rounds failed a signature"
	grep '^FAIL' "$log" | grep -v '^FAIL  run [0-9]*: signatures' | sed 's/^/  /' || true
done
