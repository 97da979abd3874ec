#!/usr/bin/env bash
# gpu-check.sh — the cuda backend on a machine with an NVIDIA GPU.
#
#   bash tests/gpu-check.sh [BUILD_DIR]
#
# 1. builds faultline with FAULTLINE_CUDA=ON (warnings are errors) and runs the
#    CUPTI conversion unit test;
# 2. runs every scenario that supports cuda with --backend cuda: the emulated-
#    device scenarios (scenarios/emu/*, sync-stall) and, with 2 or more GPUs,
#    the multi-rank ones (ddp-healthy, ddp-unoverlapped, straggler; one GPU per
#    rank); and a "backend": "auto" scenario, which must pick cuda;
# 3. checks each trace: `faultline validate`, a launch flow for every kernel,
#    every kernel/copy/memset linked to a host op (its External id names a
#    cpu_op), no dropped records, a real device in deviceProperties;
# 4. checks the signatures the emu backend shows (tests/tools/tracecheck.py emu);
# 5. measures what capture costs: op-storm step time with CUPTI on vs off
#    (FL_CUPTI=0), median of 3 alternating pairs; target <= 10 %.
# Prints a summary with the numbers; exit 0 when every check passed, 1 when one
# failed, 77 when there is no usable GPU. Budget: well under 8 minutes on one H200.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${FL_GPU_BUILD:-$SRC/build-gpu}}
OVERHEAD_MAX=${FL_GPU_OVERHEAD_MAX:-10}
STEPS=${FL_GPU_STEPS:-8}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fl-gpu.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
T0=$(date +%s)
fails=0
passes=0
pass() { echo "ok    $*"; passes=$((passes + 1)); }
fail() { echo "FAIL  $*"; fails=$((fails + 1)); }
say() { echo "== $* ($(($(date +%s) - T0)) s)"; }

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "skipped: no NVIDIA GPU (nvidia-smi -L failed)"
	exit 77
fi
if ! command -v python3 >/dev/null; then
	echo "FAIL  python3 is needed to read the traces"
	exit 1
fi
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
say "$NGPU GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# ---- 1. build ----
say "build in $BUILD"
TESTS=OFF
TARGETS="faultline"
if pkg-config --exists check 2>/dev/null; then
	TESTS=ON
	TARGETS="faultline check_cupti"
fi
if ! cmake -S "$SRC" -B "$BUILD" -DFAULTLINE_CUDA=ON -DFAULTLINE_WERROR=ON -DFAULTLINE_TESTS=$TESTS >"$OUT/cmake.log" 2>&1; then
	tail -20 "$OUT/cmake.log"
	echo "FAIL  configure"
	exit 1
fi
# shellcheck disable=SC2086
if ! cmake --build "$BUILD" -j"$(nproc)" --target $TARGETS >"$OUT/build.log" 2>&1; then
	grep -E "error|warning" "$OUT/build.log" | head -20
	echo "FAIL  build"
	exit 1
fi
pass "build (FAULTLINE_CUDA=ON, -Werror)"
FL=$BUILD/faultline
if [ "$TESTS" = OFF ]; then
	echo "note  check_cupti not built (the Check library is not installed)"
elif "$BUILD/check_cupti" >"$OUT/unit.log" 2>&1; then pass "check_cupti"; else
	fail "check_cupti"
	tail -5 "$OUT/unit.log"
fi

# ---- 2. scenarios on the GPU ----
mkdir -p "$OUT/cuda"
run() { # run NAME ARGS...: a faultline run whose stdout/stderr are kept
	local name=$1
	shift
	if "$FL" run "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"; then
		pass "run $name"
		return 0
	fi
	fail "run $name (exit $?)"
	sed 's/^/      | /' "$OUT/$name.err" | tail -5
	return 1
}
say "scenarios with --backend cuda"
for s in "$SRC"/scenarios/emu/*.json "$SRC/scenarios/sync-stall.json"; do
	run "$(basename "$s" .json)" "$s" --backend cuda --steps "$STEPS" -o "$OUT/cuda"
done
if [ "$NGPU" -ge 2 ]; then
	R=$((NGPU < 4 ? NGPU : 4))
	for s in ddp-healthy ddp-unoverlapped straggler; do
		run "$s" "$SRC/scenarios/$s.json" --backend cuda --ranks "$R" --steps "$STEPS" -o "$OUT/cuda"
	done
else
	echo "note  multi-rank scenarios skipped: NCCL needs one GPU per rank and this machine has $NGPU"
fi
sed 's/"backend": "emu"/"backend": "auto"/' "$SRC/scenarios/emu/r7-healthy-emu.json" >"$OUT/auto.json"
if run auto "$OUT/auto.json" --steps 2 -o "$OUT/auto"; then
	if python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["environment"]["backend"] != "cuda")' \
		"$OUT/auto/r7-healthy-emu.truth.json"; then
		pass "backend auto picked cuda"
	else
		fail "backend auto did not pick cuda"
	fi
fi

# ---- 3. each trace ----
say "trace checks"
traces=$(ls "$OUT"/cuda/*.json.gz 2>/dev/null)
if [ -z "$traces" ]; then
	fail "no traces written"
else
	# shellcheck disable=SC2086
	if "$FL" validate $traces >"$OUT/validate.log" 2>&1; then pass "faultline validate (every trace)"; else
		fail "faultline validate"
		tail -5 "$OUT/validate.log"
	fi
	python3 - "$OUT/cuda" >"$OUT/traces.log" 2>&1 <<'PY'
import gzip, json, os, sys
d = sys.argv[1]
bad = 0
print("%-28s %8s %8s %8s %8s %9s %9s %8s" % ("trace", "kernels", "copies", "memsets", "calls", "unlinked", "noflow", "dropped"))
for f in sorted(os.listdir(d)):
    if not f.endswith(".json.gz"):
        continue
    doc = json.load(gzip.open(os.path.join(d, f), "rt"))
    ev = doc["traceEvents"]
    x = [e for e in ev if e.get("ph") == "X"]
    ops = {e["args"]["External id"] for e in x if e.get("cat") in ("cpu_op", "user_annotation") and "args" in e}
    dev = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    kernels = [e for e in dev if e["cat"] == "kernel"]
    calls = [e for e in x if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    starts = {e["id"] for e in ev if e.get("ph") == "s"}
    ends = {e["id"] for e in ev if e.get("ph") == "f"}
    unlinked = [e for e in dev if e["args"].get("External id", 0) not in ops]
    noflow = [e for e in kernels if e["args"]["correlation"] not in starts or e["args"]["correlation"] not in ends]
    dropped = doc.get("faultline_dropped_events", -1)
    props = doc.get("deviceProperties") or [{}]
    real = props and "emulated" not in json.dumps(props) and props[0].get("numSms", 0) > 0
    print("%-28s %8d %8d %8d %8d %9d %9d %8d" % (f[:28], len(kernels), sum(e["cat"] == "gpu_memcpy" for e in dev),
          sum(e["cat"] == "gpu_memset" for e in dev), len(calls), len(unlinked), len(noflow), dropped))
    problems = []
    if not kernels:
        problems.append("no kernels")
    if unlinked:
        problems.append("%d device events not linked to a host op (e.g. %s)" % (len(unlinked), unlinked[0]["name"]))
    if noflow:
        problems.append("%d kernels without a launch flow (e.g. %s)" % (len(noflow), noflow[0]["name"]))
    if dropped != 0:
        problems.append("%d dropped records" % dropped)
    if not real:
        problems.append("deviceProperties does not describe a real GPU: %s" % json.dumps(props)[:120])
    for p in problems:
        print("PROBLEM %s: %s" % (f, p))
    bad += bool(problems)
sys.exit(1 if bad else 0)
PY
	rc=$?
	cat "$OUT/traces.log"
	if [ $rc = 0 ]; then pass "every kernel has its launch flow and op, no dropped records, a real device"; else
		fail "trace content (see PROBLEM lines)"
	fi
fi

# ---- 4. the signatures emu shows ----
say "signatures (tracecheck emu)"
if python3 "$SRC/tests/tools/tracecheck.py" emu "$OUT/cuda" >"$OUT/sig.log" 2>&1; then
	pass "emu signatures hold on cuda ($(grep -c '^ok' "$OUT/sig.log") checks)"
else
	fail "signatures"
fi
grep -E "^(ok|FAIL)" "$OUT/sig.log" | sed 's/^/      /'

# ---- 5. capture overhead ----
say "capture overhead: r8-opstorm-emu, CUPTI on vs off"
p50() { sed -n 's/.*step p50 \([0-9.]*\) ms.*/\1/p' "$1" | head -1; }
on=()
off=()
for _ in 1 2 3; do
	for mode in 1 0; do
		if FL_CUPTI=$mode "$FL" run "$SRC/scenarios/emu/r8-opstorm-emu.json" --backend cuda --steps 20 \
			-o "$OUT/ovh$mode" >"$OUT/ovh.out" 2>"$OUT/ovh.err"; then
			v=$(p50 "$OUT/ovh.out")
			if [ "$mode" = 1 ]; then on+=("$v"); else off+=("$v"); fi
		else
			fail "overhead run (FL_CUPTI=$mode)"
			tail -3 "$OUT/ovh.err"
		fi
	done
done
read -r ON OFF PCT DIMS < <(python3 - "${on[*]:-}" "${off[*]:-}" "$OUT/ovh1" "$OUT/ovh0" <<'PY'
import json, os, statistics, sys
on = [float(v) for v in sys.argv[1].split()]
off = [float(v) for v in sys.argv[2].split()]
def dim(d):
    try:
        t = json.load(open(os.path.join(d, "r8-opstorm-emu.truth.json")))
        return str(t["environment"]["calibration"]["dim"])
    except (OSError, KeyError, ValueError):
        return "?"
if not on or not off:
    print("nan nan nan ?")
else:
    a, b = statistics.median(on), statistics.median(off)
    print("%.4f %.4f %.1f %s/%s" % (a, b, 100.0 * (a - b) / b, dim(sys.argv[3]), dim(sys.argv[4])))
PY
)
echo "      step p50 with CUPTI ${ON} ms, without ${OFF} ms: overhead ${PCT} % (calibrated dim on/off: ${DIMS})"
if python3 -c "import sys; sys.exit(0 if float('$PCT') <= float('$OVERHEAD_MAX') else 1)" 2>/dev/null; then
	pass "capture overhead ${PCT} % <= ${OVERHEAD_MAX} %"
else
	fail "capture overhead ${PCT} % > ${OVERHEAD_MAX} %"
fi

# ---- summary ----
say "summary"
printf "%-22s %s\n" "GPUs" "$NGPU"
for f in "$OUT"/*.out; do
	n=$(basename "$f" .out)
	[ "$n" = ovh ] && continue
	l=$(grep -m1 "step p50" "$f" | sed 's/^ *//')
	[ -n "$l" ] && printf "%-22s %s\n" "$n" "$l"
done
printf "%-22s on %s ms, off %s ms, %s %%\n" "capture overhead" "$ON" "$OFF" "$PCT"
echo "$passes passed, $fails failed in $(($(date +%s) - T0)) s"
[ "$fails" = 0 ]
