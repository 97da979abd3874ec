# The HTA-style rubric of the straggler scenario grades from trace: metrics (HTA's
# analyses over every rank's trace): an answer built from `faultline analyze
# --device` and the injected rank earns full marks; a wrong one earns little.
. "$(dirname "$0")/lib.sh"
expect_exit 0 "straggler on 2 ranks" -- "$FL" run "$SRC/scenarios/straggler.json" --ranks 2 --steps 4 -o "$TMP/out"
expect_exit 0 "analyze --device" -- "$FL" analyze --device --json "$TMP"/out/ddp-run-d.rank-*.json.gz
cp "$TMP/.stdout" "$TMP/dm.json"
python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
dm = json.load(open(tmp + "/dm.json"))
t = json.load(open(tmp + "/out/ddp-run-d.truth.json"))
rank = [f for f in t["faults"] if f["fault"] == "throttled_rank"][0]["params"]["rank"]
open(tmp + "/right.txt", "w").write(
    "# read with faultline analyze --device\n"
    "idle_pct: %.2f %%\ncomm_share_pct: %.2f%%\noverlap_pct: %.1f %%\n"
    "straggler_rank: %d\nfamily: a straggler rank\nfix: rebalance the work\n"
    % (dm["temporal"]["idle_pct"], dm["kernels"]["types"]["COMMUNICATION"]["pct"],
       dm["overlap"]["comm_comp_pct"], rank))
open(tmp + "/wrong.txt", "w").write(
    "idle_pct: 60%%\ncomm_share_pct: 90%%\noverlap_pct: 100%%\nstraggler_rank: %d\n"
    "family: input starvation\nfix: fusion\n" % (1 - rank))
PY
rubric="$SRC/scenarios/straggler.rubric.json"
expect_exit 0 "grade the right answer" -- "$FL" grade --truth "$TMP/out/ddp-run-d.truth.json" --answer "$TMP/right.txt" \
	--rubric "$rubric" --format json --out "$TMP/right.json"
expect_exit 0 "grade the wrong answer" -- "$FL" grade --truth "$TMP/out/ddp-run-d.truth.json" --answer "$TMP/wrong.txt" \
	--rubric "$rubric" --format json --out "$TMP/wrong.json"
python3 - "$TMP" <<'PY' && pass "right earns full marks, wrong earns at most 10%" || fail "scores"
import json, sys
tmp = sys.argv[1]
r = json.load(open(tmp + "/right.json"))
w = json.load(open(tmp + "/wrong.json"))
print("      right %s/%s, wrong %s/%s" % (r["score"], r["max_score"], w["score"], w["max_score"]))
bad = [q["id"] for q in r["questions"] if q["outcome"] != "correct"]
assert len(r["questions"]) == 6 and r["max_score"] == 7, (len(r["questions"]), r["max_score"])
assert r["score"] == r["max_score"], bad
assert w["score"] <= 0.1 * w["max_score"]
PY
finish
