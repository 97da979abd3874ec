# The pipeline bubble's signature holds, read back by an independent parser, in
# each of 5 consecutive runs on 2 ranks (one stage each): with too few
# micro-batches the stages idle (p-1)/(m+p-1) of the step (mean, within 5 points;
# each stage within 5 of the schedule's prediction for unequal stages), in
# wedges, with real point-to-point transfers between the stages; the healthy
# pipeline (more micro-batches) idles far less. The rubric grades from the truth
# and from trace: metrics.
. "$(dirname "$0")/lib.sh"
RUNS=${FL_PP_RUNS:-5}
for i in $(seq 1 "$RUNS"); do
	out="$TMP/run$i"
	for s in pipeline-a pipeline-healthy; do
		expect_exit 0 "run $i: $s on 2 ranks" -- "$FL" run "$SRC/scenarios/$s.json" --steps 12 -o "$out"
	done
	if [ "${FL_TIMING_CHECKS:-1}" = 0 ]; then
		echo "skip  run $i: timing signatures (FL_TIMING_CHECKS=0: a sanitizer build distorts timing)"
	elif python3 "$SRC/tests/tools/tracecheck.py" pipeline "$out" >"$TMP/sig" 2>&1; then
		sig_pass "run $i: pipeline signatures hold" "$TMP/sig"
	else
		fail "run $i: signatures"
		grep FAIL "$TMP/sig"
		keep_round "$out"
	fi
	expect_exit 0 "run $i: faultline validate" -- "$FL" validate "$out"/*.json.gz
	python3 - "$out" <<'PY' && pass "run $i: truth: every stage affected, instances in %" || fail "run $i: truth"
import json, os, sys
t = json.load(open(os.path.join(sys.argv[1], "pp-run-a.truth.json")))
f = t["faults"][0]
assert f["fault"] == "too_few_microbatches" and f["family"] == "pipeline_bubble" and f["fix"] == "more_microbatches", f
assert f["affected_ranks"] == [0, 1], f["affected_ranks"]
rec = [x for x in f["instances"] if x["recorded"]]
assert rec and all(x["unit"] == "%" and x["stages"] == 2 for x in rec), rec[:2]
PY
done
[ -f "$TMP/sig" ] && tail -14 "$TMP/sig"

# the fault needs a pipeline: on a data-parallel workload it is refused, saying why
python3 - "$SRC/scenarios/comm-bound.json" "$TMP/dp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["faults"] = [{"fault": "too_few_microbatches"}]
d.pop("rubric", None), d.pop("baseline", None)
json.dump(d, open(sys.argv[2], "w"))
PY
expect_exit 2 "the fault on a data-parallel workload is refused" -- "$FL" run "$TMP/dp.json" --ranks 2 --steps 2 -o "$TMP/refused"
expect_err_has 'workload.kind "pipeline"' "the refusal names the pipeline workload it needs"

# the rubric: the right answer earns full marks, the lookalike's little
out="$TMP/run1"
expect_exit 0 "analyze --device pipeline-a" -- "$FL" analyze --device --json "$out"/pp-run-a.rank-*.json.gz
cp "$TMP/.stdout" "$TMP/dm.json"
python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
dm = json.load(open(tmp + "/dm.json"))
t = json.load(open(tmp + "/run1/pp-run-a.truth.json"))
m = t["faults"][0]["params"]["microbatches"]
idle = 100 - dm["temporal"]["compute_pct"]
open(tmp + "/right.txt", "w").write(
    "not_computing_pct: %.2f %%\nmicrobatches: %d\nbubble_formula_pct: %.1f%%\nfamily: pipeline bubble\n"
    "fix: more micro batches\n" % (idle, m, 100.0 / (m + 1)))
# the lookalike's share is 40 points from the trace's, whatever the timing
open(tmp + "/wrong.txt", "w").write(
    "not_computing_pct: %.1f%%\nmicrobatches: 64\nbubble_formula_pct: 80%%\nfamily: a straggler\nfix: fusion\n"
    % (idle + 40 if idle < 50 else idle - 40))
PY
rubric="$SRC/scenarios/pipeline-a.rubric.json"
for a in right wrong; do
	expect_exit 0 "grade the $a answer" -- "$FL" grade --truth "$out/pp-run-a.truth.json" --answer "$TMP/$a.txt" \
		--rubric "$rubric" --format json --out "$TMP/$a.json"
done
python3 - "$TMP" <<'PY' && pass "pipeline rubric: right earns full marks, the lookalike's answer at most 10%" || fail "rubric scores"
import json, sys
tmp = sys.argv[1]
r = json.load(open(tmp + "/right.json"))
w = json.load(open(tmp + "/wrong.json"))
print("      right %s/%s, wrong %s/%s" % (r["score"], r["max_score"], w["score"], w["max_score"]))
bad = [q["id"] for q in r["questions"] if q["outcome"] != "correct"]
assert len(r["questions"]) == 5 and r["max_score"] == 9, (len(r["questions"]), r["max_score"])
assert r["score"] == r["max_score"], bad
assert w["score"] <= 0.1 * w["max_score"]
PY
finish
