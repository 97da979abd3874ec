# HTA parity: faultline's device analyses (grader/analysis/device_metrics.c, run through
# tests/tools/fl_metrics) give HTA's numbers on the same traces — times to the
# µs, percentages to 0.01 points: temporal breakdown, idle time per stream,
# comm/compute overlap, kernel breakdown by type and name, launch statistics,
# queue length, stragglers and trace diff. The traces: multi-rank emulated-
# device runs of the real binary, and synthetic traces with every kind of
# event (tests/tools/synth_trace.py). Skipped (77) with a reason only when
# Python or pip cannot provide HTA.
. "$(dirname "$0")/lib.sh"
VENV=${FL_HTA_VENV:-$SRC/.venv-hta}
if ! command -v python3 >/dev/null; then echo "skipped: python3 is not installed"; exit 77; fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import hta" 2>/dev/null; then
	python3 -m venv "$VENV" >/dev/null 2>&1 || { echo "skipped: python3 -m venv failed (install python3-venv)"; exit 77; }
	if ! "$VENV/bin/pip" install -q HolisticTraceAnalysis >"$TMP/pip.log" 2>&1; then
		echo "skipped: pip could not install HolisticTraceAnalysis:"; tail -3 "$TMP/pip.log"; exit 77
	fi
fi
PY="$VENV/bin/python"
METRICS=$(dirname "$FL")/fl_metrics
PARITY="$SRC/tests/tools/hta_parity.py"
if [ ! -x "$METRICS" ]; then
	fail "fl_metrics is not built beside $FL"
	finish
	exit
fi

# one job per directory: HTA reads every .json and .json.gz in it
gen() {
	local scenario=$1 name
	name=$(basename "$scenario")
	shift
	if "$FL" run "$SRC/scenarios/$scenario.json" --steps 4 -o "$TMP/run/$name" "$@" >/dev/null 2>"$TMP/.stderr"; then
		mkdir -p "$TMP/jobs/$name"
		cp "$TMP/run/$name"/*.json.gz "$TMP/jobs/$name/"
	else
		fail "faultline run $scenario $*"
		sed 's/^/      | /' "$TMP/.stderr" | tail -5
	fi
}
gen ddp-healthy --ranks 2
gen straggler --ranks 2
gen ddp-unoverlapped --ranks 2
gen sync-stall --ranks 2
gen comm-bound --ranks 2
gen pipeline-a
gen moe-a
gen emu/r7-starved-emu
gen emu/r8-opstorm-emu
for seed in 1 2; do
	python3 "$SRC/tests/tools/synth_trace.py" "$TMP/jobs/synthetic-$seed" --ranks 3 --steps 5 --seed "$seed" ||
		fail "synth_trace.py seed $seed"
done

parity() {
	local what=$1
	shift
	if "$PY" "$PARITY" "$METRICS" "$@" --label "$what" >"$TMP/parity.log" 2>&1; then
		pass "HTA parity: $(tail -1 "$TMP/parity.log")"
		grep '^note ' "$TMP/parity.log" | sed 's/^/      /'
	else
		fail "HTA parity on $what"
		grep -E '^(FAIL|note) ' "$TMP/parity.log" | head -20 | sed 's/^/      /'
		grep -q '^FAIL ' "$TMP/parity.log" || tail -8 "$TMP/parity.log" | sed 's/^/      | /'
	fi
}
# HTA stops on its own `assert non_compute_time >= 0` when a memory copy under
# a µs that crosses no whole µs sits alone between kernels (its ns rounding
# gives it a negative duration): the emulated device's 4-byte copies can run
# that short. An edited copy of the R8 capture whose copies all do (each moved
# to .3 of its µs, lasting 0.1 µs; labelled: not a capture) holds faultline to
# HTA's arithmetic there, without the assert
if [ -d "$TMP/jobs/r8-opstorm-emu" ]; then
	mkdir -p "$TMP/edited/r8-subus-copies"
	python3 - "$TMP"/jobs/r8-opstorm-emu/*.json.gz "$TMP/edited/r8-subus-copies/edited.json.gz" <<'PY'
import gzip, json, math, sys
d = json.loads(gzip.decompress(open(sys.argv[1], "rb").read()))
for e in d["traceEvents"]:
    if e.get("ph") == "X" and e.get("cat") == "gpu_memcpy":
        e["ts"], e["dur"] = math.floor(e["ts"]) + 0.3, 0.1
d["traceName"] = "edited: every copy 0.1 us at .3 of its us (not a capture)"
open(sys.argv[2], "wb").write(gzip.compress(json.dumps(d).encode()))
PY
	if "$PY" "$PARITY" "$METRICS" "$TMP/edited/r8-subus-copies" --label "r8, sub-µs copies" >"$TMP/parity.log" 2>&1 &&
		grep -q "HTA fails its own assert" "$TMP/parity.log"; then
		pass "HTA parity where HTA's own assert fails: $(tail -1 "$TMP/parity.log")"
	else
		fail "HTA parity on sub-µs copies (HTA's assert)"
		tail -8 "$TMP/parity.log" | sed 's/^/      | /'
	fi
fi
for d in "$TMP"/jobs/*/; do
	name=$(basename "$d")
	n=$(ls "$d" | wc -l)
	if [ "$n" -ge 2 ]; then parity "$name" "$d" --straggler; else parity "$name" "$d"; fi
done
parity "diff ddp-healthy -> ddp-unoverlapped" --diff "$TMP/jobs/ddp-healthy" "$TMP/jobs/ddp-unoverlapped"
parity "diff synthetic-1 -> synthetic-2" --diff "$TMP/jobs/synthetic-1" "$TMP/jobs/synthetic-2"

# the reader: plain and gzip give the same analyses; truncation is an input error
mkdir -p "$TMP/plain"
zcat "$TMP/jobs/ddp-healthy/ddp-run-a.rank-0.json.gz" >"$TMP/plain/rank0.json"
zcat "$TMP/jobs/ddp-healthy/ddp-run-a.rank-1.json.gz" >"$TMP/plain/rank1.data" # no .json: found by content
"$METRICS" "$TMP"/jobs/ddp-healthy/*.json.gz | grep -v '"files"\|json' >"$TMP/gz.out"
"$METRICS" "$TMP/plain/rank0.json" "$TMP/plain/rank1.data" | grep -v '"files"\|json\|data' >"$TMP/plain.out"
if cmp -s "$TMP/gz.out" "$TMP/plain.out"; then pass "plain JSON and gzip read alike"; else
	fail "plain JSON and gzip differ"
	diff "$TMP/gz.out" "$TMP/plain.out" | head -5
fi
gz="$TMP/jobs/ddp-healthy/ddp-run-a.rank-0.json.gz"
head -c $(($(wc -c <"$gz") / 2)) "$gz" >"$TMP/cut.json.gz"
expect_exit 2 "a truncated gzip trace is bad input" -- "$METRICS" "$TMP/cut.json.gz"
expect_err_has "compressed byte" "the message says where the gzip data ends"
head -c 20000 "$TMP/plain/rank0.json" >"$TMP/cut.json"
expect_exit 2 "a truncated JSON trace is bad input" -- "$METRICS" "$TMP/cut.json"
expect_err_has "at byte 20000" "the message gives the byte offset"
finish
