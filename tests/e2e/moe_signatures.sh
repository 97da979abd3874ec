# The MoE expert imbalance's signature holds, read back by an independent
# parser, in each of 5 consecutive runs (FL_MOE_RUNS) on 2 ranks and on 4
# (the hot expert on the last rank; on a machine of fewer than 4 cores the
# 4 ranks take turns on them and their timing is never judged, so they run
# once there, for their counts and truth): the
# hot expert's rank computes longest and spends the least time in the
# all-to-alls, the token rows each expert received (its ops' Input Dims) equal
# the truth's, and the healthy run's experts compute alike. The rubric grades
# from the truth and from trace: metrics.
. "$(dirname "$0")/lib.sh"
RUNS=${FL_MOE_RUNS:-5}
python3 - "$SRC/scenarios/moe-a.json" "$TMP/moe-a4.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["faults"][0]["params"]["hot_rank"] = 3  # the last of 4 ranks
d["ranks"] = 4
d.pop("rubric", None), d.pop("baseline", None)
json.dump(d, open(sys.argv[2], "w"))
PY
cores=$(nproc)
[ "$cores" -lt 4 ] && [ "$RUNS" -gt 1 ] &&
	echo "skip  runs 2-$RUNS on 4 ranks: 4 ranks on $cores cores take turns, their timing is not judged (run 1 checks their counts and truth)"
for i in $(seq 1 "$RUNS"); do
	for p in 2 4; do
		[ "$p" = 4 ] && [ "$i" -gt 1 ] && [ "$cores" -lt 4 ] && continue
		out="$TMP/run$i/p$p"
		a="$SRC/scenarios/moe-a.json"
		[ "$p" = 4 ] && a="$TMP/moe-a4.json"
		expect_exit 0 "run $i: moe-a on $p ranks" -- "$FL" run "$a" --ranks "$p" --steps 12 -o "$out"
		expect_exit 0 "run $i: moe-healthy on $p ranks" -- "$FL" run "$SRC/scenarios/moe-healthy.json" --ranks "$p" --steps 12 -o "$out"
		if python3 "$SRC/tests/tools/tracecheck.py" moe "$out" >"$TMP/sig" 2>&1; then
			sig_pass "run $i, $p ranks: moe signatures hold" "$TMP/sig"
		else
			fail "run $i, $p ranks: signatures"
			grep FAIL "$TMP/sig"
		fi
		grep '^      ' "$TMP/sig"
		expect_exit 0 "run $i, $p ranks: faultline validate" -- "$FL" validate "$out"/*.json.gz
	done
done
python3 - "$TMP/run1/p2" <<'PY' && pass "truth: the hot rank affected, instances in %, tokens per expert per step" || fail "truth"
import json, os, sys
t = json.load(open(os.path.join(sys.argv[1], "moe-run-a.truth.json")))
f = t["faults"][0]
assert f["fault"] == "expert_imbalance" and f["family"] == "expert_imbalance" and f["fix"] == "load_balance", f
assert f["affected_ranks"] == [0], f["affected_ranks"]
rec = [x for x in f["instances"] if x["recorded"]]
assert rec and all(x["unit"] == "%" and x["tokens"] == 204 for x in rec), rec[:2]
m = t["environment"]["moe"]
assert m["experts"] == 2 and m["tokens_per_expert"] == [204, 52] and len(m["tokens_per_expert_per_step"]) == 12, m  # --steps 12
assert t["environment"]["calibration"]["kind"] == "moe"
PY

# the fault needs a mixture of experts: on a data-parallel workload it is refused, saying why
python3 - "$SRC/scenarios/comm-bound.json" "$TMP/dp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["faults"] = [{"fault": "expert_imbalance"}]
d.pop("rubric", None), d.pop("baseline", None)
json.dump(d, open(sys.argv[2], "w"))
PY
expect_exit 2 "the fault on a data-parallel workload is refused" -- "$FL" run "$TMP/dp.json" --ranks 2 --steps 2 -o "$TMP/refused"
expect_err_has 'workload.kind "moe"' "the refusal names the workload it needs"
# a hot share no larger than the balanced one is no imbalance
python3 - "$SRC/scenarios/moe-a.json" "$TMP/even.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["faults"][0]["params"]["hot_share"] = 0.4
d.pop("rubric", None), d.pop("baseline", None)
json.dump(d, open(sys.argv[2], "w"))
PY
expect_exit 2 "a hot share under 1/experts is refused" -- "$FL" run "$TMP/even.json" --steps 2 -o "$TMP/refused"
expect_err_has 'balanced share' "the refusal says why"

# the rubric: the right answer earns full marks, the lookalike's little
out="$TMP/run1/p2"
expect_exit 0 "analyze --device moe-a" -- "$FL" analyze --device --json "$out"/moe-run-a.rank-*.json.gz
cp "$TMP/.stdout" "$TMP/dm.json"
python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
dm = json.load(open(tmp + "/dm.json"))
r = dm["ranks"]
ratio = r["0"]["temporal"]["compute_us"] / r["1"]["temporal"]["compute_us"]
comm1 = r["1"]["kernels"]["types"]["COMMUNICATION"]["pct"]
open(tmp + "/right.txt", "w").write(
    "busiest_expert_rank: 0\nbusiest_expert_tokens: 204\ncompute_ratio: %.3f\nrank1_comm_pct: %.2f%%\n"
    "family: expert imbalance\nfix: load balancing loss\n" % (ratio, comm1))
# the lookalike's figures are a third of the trace's ratio and 40 points from
# its share, whatever the timing
open(tmp + "/wrong.txt", "w").write(
    "busiest_expert_rank: 1\nbusiest_expert_tokens: 52\ncompute_ratio: %.3f\nrank1_comm_pct: %.1f%%\n"
    "family: a straggler\nfix: fusion\n" % (ratio / 3, comm1 + 40 if comm1 < 50 else comm1 - 40))
PY
rubric="$SRC/scenarios/moe-a.rubric.json"
for a in right wrong; do
	expect_exit 0 "grade the $a answer" -- "$FL" grade --truth "$out/moe-run-a.truth.json" --answer "$TMP/$a.txt" \
		--rubric "$rubric" --format json --out "$TMP/$a.json"
done
python3 - "$TMP" <<'PY' && pass "moe rubric: right earns full marks, the straggler lookalike's answer at most 10%" || fail "rubric scores"
import json, sys
tmp = sys.argv[1]
r = json.load(open(tmp + "/right.json"))
w = json.load(open(tmp + "/wrong.json"))
print("      right %s/%s, wrong %s/%s" % (r["score"], r["max_score"], w["score"], w["max_score"]))
bad = [q["id"] for q in r["questions"] if q["outcome"] != "correct"]
assert len(r["questions"]) == 6 and r["max_score"] == 9, (len(r["questions"]), r["max_score"])
assert r["score"] == r["max_score"], bad
assert w["score"] <= 0.1 * w["max_score"]
PY
finish
