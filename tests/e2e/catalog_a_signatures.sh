# The signatures of launch_bound, alloc_stall, blocking_h2d and dtype_casts
# hold, read back by the independent parser (tests/tools/tracecheck.py
# catalog), in each of 5 consecutive runs: each fault's trace shows its
# signature, the healthy baselines do not, launch_bound keeps the healthy op
# count while its lookalike op_storm explodes it, and the truth's counts
# (launches, allocations, blocking copies, casts per step) match the trace
# exactly. FL_TIMING_CHECKS=0 (sanitizer builds) keeps only the exact counts.
. "$(dirname "$0")/lib.sh"
RUNS=${FL_CATALOG_RUNS:-5}
for i in $(seq 1 "$RUNS"); do
	out="$TMP/run$i"
	for s in serving-healthy serving-a serving-b workspace-a feed-healthy feed-a layers-a; do
		expect_exit 0 "run $i: $s" -- "$FL" run "$SRC/scenarios/$s.json" -o "$out"
	done
	if python3 "$SRC/tests/tools/tracecheck.py" catalog "$out" >"$TMP/sig" 2>&1; then
		sig_pass "run $i: all catalog signatures hold" "$TMP/sig"
	else
		fail "run $i: signatures"
		grep FAIL "$TMP/sig"
		keep_round "$out"
	fi
	expect_exit 0 "run $i: faultline validate" -- "$FL" validate "$out"/*.json.gz
	python3 "$SRC/tests/tools/tracecheck.py" noleak "$out" >"$TMP/leak" 2>&1 && pass "run $i: no fault names in the traces" ||
		{ fail "run $i: noleak"; grep FAIL "$TMP/leak"; }
done
[ -f "$TMP/sig" ] && tail -18 "$TMP/sig"
finish
