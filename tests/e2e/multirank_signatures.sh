# The multi-rank families' signatures hold, read back by an independent parser,
# in each of 5 consecutive runs on 2 ranks: comm-bound (a slow link) is
# symmetric across ranks and moves its bytes at the link's speed, and next to a
# straggler the per-rank symmetry tells the two lookalikes apart; a backward-only
# straggler is the rank with the longest backward compute, its forward normal.
. "$(dirname "$0")/lib.sh"
RUNS=${FL_MR_RUNS:-5}
# comm-bound at its range's low end (tests/tools/multirank_scenarios.sh says why)
bash "$SRC/tests/tools/multirank_scenarios.sh" "$SRC" "$TMP/sc"
for i in $(seq 1 "$RUNS"); do
	out="$TMP/run$i"
	for s in comm-bound straggler straggler-backward; do
		expect_exit 0 "run $i: $s on 2 ranks" -- "$FL" run "$TMP/sc/$s.json" --ranks 2 --steps 12 -o "$out"
	done
	if [ "${FL_TIMING_CHECKS:-1}" = 0 ]; then
		echo "skip  run $i: timing signatures (FL_TIMING_CHECKS=0: a sanitizer build distorts timing)"
	elif python3 "$SRC/tests/tools/tracecheck.py" multirank "$out" >"$TMP/sig" 2>&1; then
		sig_pass "run $i: all multi-rank signatures hold" "$TMP/sig"
	else
		fail "run $i: signatures"
		grep FAIL "$TMP/sig"
		keep_round "$out"
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
	# the lookalikes' traces have the same shape of deviceProperties: the
	# slow link differs in its bandwidth only, never in having an entry
	python3 - "$out" <<'PY' && pass "run $i: deviceProperties alike in comm-bound and straggler traces (interconnect on both)" || fail "run $i: deviceProperties differ in shape"
import glob, gzip, json, os, sys
def keys(o, p=""):
    if isinstance(o, dict):
        return set().union(*[keys(v, p + "/" + k) for k, v in o.items()]) | {p}
    if isinstance(o, list):
        return set().union(*[keys(v, p + "[]") for v in o]) | {p}
    return {p}
shapes = {}
for f in glob.glob(os.path.join(sys.argv[1], "*.rank-*.json.gz")):
    d = json.load(gzip.open(f))
    shapes[os.path.basename(f)] = keys(d["deviceProperties"])
    assert d["deviceProperties"][0]["interconnect"]["bandwidth (Gbit/s)"] > 0, f
assert len(shapes) >= 4 and len({frozenset(v) for v in shapes.values()}) == 1, shapes
PY
done
[ -f "$TMP/sig" ] && tail -12 "$TMP/sig"

# the comm-bound rubric grades from the truth and from trace: metrics; the
# straggler's answer (the lookalike) earns little
out="$TMP/run1"
expect_exit 0 "analyze --device comm-bound" -- "$FL" analyze --device --json "$out"/ddp-run-b.rank-*.json.gz
cp "$TMP/.stdout" "$TMP/dm.json"
python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
dm = json.load(open(tmp + "/dm.json"))
t = json.load(open(tmp + "/run1/ddp-run-b.truth.json"))
gbps = t["faults"][0]["params"]["gbps"]
comm, overlap = dm["kernels"]["types"]["COMMUNICATION"]["pct"], dm["overlap"]["comm_comp_pct"]
far = lambda x: x + 40 if x < 50 else x - 40
open(tmp + "/right.txt", "w").write(
    "comm_share_pct: %.2f %%\noverlap_pct: %.1f%%\nsymmetric: yes\nlink_gbps: %.2f\n"
    "family: communication bound\nfix: bigger batch\n" % (comm, overlap, gbps * 0.9))
# the lookalike's shares are 40 points from the trace's, whatever the timing
open(tmp + "/wrong.txt", "w").write(
    "comm_share_pct: %.1f%%\noverlap_pct: %.1f%%\nsymmetric: no\nlink_gbps: %.2f\nfamily: a straggler\nfix: fusion\n"
    % (far(comm), far(overlap), gbps * 10))
PY
rubric="$SRC/scenarios/comm-bound.rubric.json"
for a in right wrong; do
	expect_exit 0 "grade the $a answer" -- "$FL" grade --truth "$out/ddp-run-b.truth.json" --answer "$TMP/$a.txt" \
		--rubric "$rubric" --format json --out "$TMP/$a.json"
done
python3 - "$TMP" <<'PY' && pass "comm-bound rubric: right earns full marks, the lookalike's answer at most 10%" || fail "rubric scores"
import json, sys
tmp = sys.argv[1]
r = json.load(open(tmp + "/right.json"))
w = json.load(open(tmp + "/wrong.json"))
print("      right %s/%s, wrong %s/%s (credit: %s)" % (r["score"], r["max_score"], w["score"], w["max_score"],
      ", ".join("%s %g" % (q["id"], q["score"]) for q in w["questions"] if q.get("score")) or "none"))
bad = [q["id"] for q in r["questions"] if q["outcome"] != "correct"]
assert len(r["questions"]) == 6 and r["max_score"] == 8, (len(r["questions"]), r["max_score"])
assert r["score"] == r["max_score"], bad
assert w["score"] <= 0.1 * w["max_score"]
PY
finish
