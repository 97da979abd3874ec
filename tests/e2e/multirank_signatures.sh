# The multi-rank families' signatures hold, read back by an independent parser,
# in each of 5 consecutive runs on 2 ranks: comm-bound (a slow link) is
# symmetric across ranks and moves its bytes at the link's speed, and next to a
# straggler the per-rank symmetry tells the two lookalikes apart.
. "$(dirname "$0")/lib.sh"
RUNS=${FL_MR_RUNS:-5}
for i in $(seq 1 "$RUNS"); do
	out="$TMP/run$i"
	for s in comm-bound straggler; do
		expect_exit 0 "run $i: $s on 2 ranks" -- "$FL" run "$SRC/scenarios/$s.json" --ranks 2 --steps 6 -o "$out"
	done
	if [ "${FL_TIMING_CHECKS:-1}" = 0 ]; then
		echo "skip  run $i: timing signatures (FL_TIMING_CHECKS=0: a sanitizer build distorts timing)"
	elif python3 "$SRC/tests/tools/tracecheck.py" multirank "$out" >"$TMP/sig" 2>&1; then
		pass "run $i: all multi-rank signatures hold"
	else
		fail "run $i: signatures"
		grep FAIL "$TMP/sig"
	fi
	expect_exit 0 "run $i: faultline validate" -- "$FL" validate "$out"/*.json.gz
	python3 - "$out" <<'PY' && pass "run $i: comm-bound truth: every rank affected, instances in Gbit/s" || fail "run $i: comm-bound truth"
import json, os, sys
t = json.load(open(os.path.join(sys.argv[1], "ddp-run-b.truth.json")))
f = t["faults"][0]
assert f["fault"] == "slow_link" and f["family"] == "comm_bound" and f["fix"] == "change_ratio", f
assert f["affected_ranks"] == [0, 1], f["affected_ranks"]
rec = [x for x in f["instances"] if x["recorded"]]
assert rec and all(x["unit"] == "Gbit/s" for x in rec), rec[:2]
PY
done
[ -f "$TMP/sig" ] && tail -12 "$TMP/sig"
finish
