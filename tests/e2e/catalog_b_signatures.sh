# The catalog scenarios recompile, the lookalike pair (recompile vs loader
# starvation), checkpoint-stall, dvfs-throttle and optimizer-dominance show
# their signatures, read back by the independent parser, in each of 5
# consecutive regens: compile spans and long steps exactly in the truth's
# steps, the checkpoint period exact, update ops per step exact, the kernel
# drift of the clock ramp (and each step's factor over its metered real work,
# whatever the machine's speed), and the lookalike and healthy traces without them.
. "$(dirname "$0")/lib.sh"
RUNS=${FL_CATALOG_RUNS:-5}
sc="$TMP/scenarios"
mkdir -p "$sc"
for s in recompile lookalike-a lookalike-b checkpoint-stall dvfs-throttle optimizer-dominance; do
	cp "$SRC/scenarios/$s.json" "$sc/"
done
for i in $(seq 1 "$RUNS"); do
	out="$TMP/run$i"
	expect_exit 0 "regen run $i" -- "$FL" regen "$sc" -o "$out"
	if [ "${FL_TIMING_CHECKS:-1}" = 0 ]; then
		echo "skip  run $i: timing signatures (FL_TIMING_CHECKS=0: a sanitizer build distorts timing)"
	elif python3 "$SRC/tests/tools/tracecheck.py" catalog_b "$out" >"$TMP/sig" 2>&1; then
		sig_pass "run $i: all catalog signatures hold" "$TMP/sig"
	else
		fail "run $i: signatures"
		grep FAIL "$TMP/sig"
		keep_round "$out"
	fi
	expect_exit 0 "run $i: no fault or truth name in the traces" -- python3 "$SRC/tests/tools/tracecheck.py" noleak "$out"
	expect_exit 0 "run $i: faultline validate" -- "$FL" validate "$out"/*.json.gz
	rm -rf "$out"
done
[ -f "$TMP/sig" ] && tail -8 "$TMP/sig"
finish
