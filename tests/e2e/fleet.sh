# The fleet level (lab R2): fleet analyze on hand-made Kalos and Seren logs
# (tests/e2e/fleet/*-handmade.csv: hand-written test data, not AcmeTrace's),
# fleet generate (seeded, says SIMULATED everywhere but in the CSVs pandas
# reads), the MTBF fidelity on 5 seeds, the default scenario's R2 shape, and
# grading R2 through fleet: references, for a generated fleet and for a
# real-lab truth stub beside a jobs CSV.
. "$(dirname "$0")/lib.sh"
D="$SRC/tests/e2e/fleet"
K="$D/kalos-handmade.csv"

expect_exit 0 "analyze the hand-made Kalos log" -- "$FL" fleet analyze "$K"
cp "$TMP/.stdout" "$TMP/k.txt"
grep -q "kalos header, 13 rows" "$TMP/k.txt" && grep -q "^bad rows 5: " "$TMP/k.txt" &&
	grep -q "line 9: end_before_start" "$TMP/k.txt" && grep -q "line 11: unknown_state 'PREEMPTED'" "$TMP/k.txt" &&
	grep -q "line 12: unparsable_time" "$TMP/k.txt" && grep -q "line 13: field_count" "$TMP/k.txt" &&
	pass "bad rows counted by reason, with their line numbers" || fail "bad rows: $(grep -A6 '^bad rows' "$TMP/k.txt")"
grep -q "Garwood" "$TMP/k.txt" && grep -q "GPU-hours at risk / failures" "$TMP/k.txt" &&
	pass "the MTBF definition and the interval's method are printed" || fail "no MTBF definition"
expect_exit 2 "--strict stops at the first bad row" -- "$FL" fleet analyze "$K" --strict
expect_err_has "line 9: end_before_start" "the strict error names the line"
expect_exit 0 "analyze the hand-made Seren log as JSON" -- "$FL" fleet analyze "$D/seren-handmade.csv" --json
python3 - "$TMP/.stdout" <<'PY' && pass "Seren header detected; +08:00 offsets honoured" || fail "Seren JSON"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "faultline.fleet/1" and j["input"]["format"] == "seren", j["input"]
assert j["bad_rows"]["first"][0]["line"] == 5, j["bad_rows"]
assert abs(j["jobs"]["gpu_hours"] - (1 + 512 * 24 + 512 * 48)) < 1e-6, j["jobs"]
PY
expect_exit 0 "the +08:00 job of the Kalos log" -- "$FL" fleet analyze "$K" --json --min-gpus 1024
python3 - "$TMP/.stdout" <<'PY' && pass "offset times: 48 h x 1024 GPUs" || fail "offsets"
import json, sys
j = json.load(open(sys.argv[1]))
assert abs(j["large"]["gpu_hours"] - 48 * 1024) < 1e-9, j["large"]
PY
expect_exit 0 "fleet faults lists the fleet fault modules" -- "$FL" fleet faults
for f in node_failure bad_node correlated_rack checkpoint_cost; do grep -q "^$f$" "$TMP/.stdout" || fail "fleet faults lacks $f"; done
expect_exit 2 "an unknown subcommand" -- "$FL" fleet frobnicate
expect_exit 2 "a missing file" -- "$FL" fleet analyze "$TMP/none.csv"
expect_err_has "cannot open" "the message names the file"

# ---- generate ----
sc="$SRC/scenarios/fleet/r2-fleet.json"
expect_exit 0 "generate the default fleet" -- "$FL" fleet generate "$sc" -o "$TMP/g1"
grep -q "^SIMULATED" "$TMP/.stdout" && pass "stdout says SIMULATED" || fail "stdout: $(head -1 "$TMP/.stdout")"
grep -q "^SIMULATED" "$TMP/g1/README.txt" && pass "README.txt says SIMULATED" || fail "README.txt"
head -1 "$TMP/g1/trace_kalos.csv" | grep -q "^job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time$" &&
	head -1 "$TMP/g1/XID_ERRORS.csv" | grep -q "^Time,10.140.0.1-0," && pass "AcmeTrace's headers, first line" || fail "CSV headers"
expect_exit 0 "generate again, same seed" -- "$FL" fleet generate "$sc" -o "$TMP/g2"
cmp -s "$TMP/g1/trace_kalos.csv" "$TMP/g2/trace_kalos.csv" && cmp -s "$TMP/g1/XID_ERRORS.csv" "$TMP/g2/XID_ERRORS.csv" &&
	pass "same seed, same logs" || fail "the logs differ between two runs of one seed"
expect_exit 0 "generate a varied fleet" -- "$FL" fleet generate "$sc" -o "$TMP/v7" --seed 7 --vary
expect_exit 2 "--vary without --seed" -- "$FL" fleet generate "$sc" -o "$TMP/x" --vary
expect_exit 0 "analyze the generated log with its XID telemetry" -- "$FL" fleet analyze "$TMP/g1/trace_kalos.csv" \
	--xid "$TMP/g1/XID_ERRORS.csv" --json --job-gpus 512
python3 - "$TMP/.stdout" "$TMP/g1/r2-fleet.truth.json" "$TMP/v7/r2-fleet.truth.json" <<'PY' && pass "truth: SIMULATED, injected MTBF, realised failures read back; R2's shape; XID-correlated" || fail "generated truth"
import json, sys
a, t, v = (json.load(open(p)) for p in sys.argv[1:4])
assert "SIMULATED" in t["simulated"] and t["scenario"]["simulated"] is True
assert t["injected"]["mtbf_years_per_gpu"] == 20
assert a["bad_rows"]["count"] == 0
ar = t["realised"]["at_risk"]
assert a["mtbf"]["failures"] == ar["failures"] and abs(a["mtbf"]["gpu_hours_at_risk"] - ar["gpu_hours_at_risk"]) < 1e-6
# R2's shape: jobs >= 256 GPUs a sliver of the count, most of the GPU-hours; CANCELLED the largest share
assert a["large"]["job_share"] < 0.02 and a["large"]["gpu_hour_share"] > 0.5, a["large"]
assert a["dominant_gpu_hour_state"] == "CANCELLED"
x = a["xid"]
assert x["node_fail_with_xid"] == x["node_fail_jobs"] > 0 and x["by_code"]["79"] >= x["node_fail_jobs"] / 4, x
vd = v["injected"]["faults"][0]["varied"]["mtbf_years"]
assert 10 <= vd["drawn"] <= 30 and v["injected"]["mtbf_years_per_gpu"] == vd["drawn"] != 20, vd
PY

# ---- fidelity, 5 seeds (bench/bench_fleet.sh fidelity runs 100) ----
inside=0
for s in 1 2 3 4 5; do
	"$FL" fleet generate "$sc" -o "$TMP/f$s" --seed "$s" > /dev/null || fail "generate seed $s"
	"$FL" fleet analyze "$TMP/f$s/trace_kalos.csv" --json > "$TMP/f$s.json" || fail "analyze seed $s"
	python3 - "$TMP/f$s.json" "$TMP/f$s/r2-fleet.truth.json" <<'PY' && inside=$((inside + 1))
import json, sys
a, t = (json.load(open(p)) for p in sys.argv[1:3])
ci, inj = a["mtbf"]["ci95"], t["injected"]["mtbf_years_per_gpu"]
print(f"      seed {t['scenario']['seed']}: {a['mtbf']['failures']} failures, MTBF {a['mtbf']['per_gpu_years']:.2f} years, "
      f"95% [{ci['years_lo']:.2f}, {ci['years_hi']:.2f}], injected {inj}")
sys.exit(0 if ci["years_lo"] <= inj <= ci["years_hi"] else 1)
PY
done
# a 95% interval misses 1 of 5 seeds now and then (0.95^5 = 0.77 for all five); 2 misses of 5 happen 2% of the time
[ "$inside" -ge 4 ] && pass "injected MTBF inside the 95% interval in $inside of 5 seeds" ||
	fail "injected MTBF inside the 95% interval in only $inside of 5 seeds"

# ---- grading R2 ----
python3 - "$TMP/g1/r2-fleet.truth.json" > "$TMP/right.txt" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
print(f"large_share: {100 * m['large']['gpu_hour_share']:.1f}%")
print(f"large_jobs: {m['large']['job_share']:.4f}")
print(f"dominant_state: {m['dominant_gpu_hour_state'].lower()}")
print(f"cancelled: {m['states']['CANCELLED']['gpu_hour_share']:.3f}")
print(f"mtbf: {m['mtbf']['per_gpu_years']:.2f}")
print(f"young: {m['young']['interval_min']:.0f}")
print("ledger_share: measured\nmtbf_is: proxied\nledger_ckpt: assumed")
PY
expect_exit 0 "grade a right R2 answer (the rubric is found beside the truth)" -- "$FL" grade --truth "$TMP/g1/r2-fleet.truth.json" --answer "$TMP/right.txt"
grep -q "13 / 13 points" "$TMP/.stdout" && pass "full marks" || fail "right answer: $(head -1 "$TMP/.stdout")"
sed -e 's/^mtbf: .*/mtbf: 40/; s/^dominant_state: .*/dominant_state: completed/; s/^mtbf_is: .*/mtbf_is: measured/' "$TMP/right.txt" > "$TMP/wrong.txt"
expect_exit 0 "grade a wrong R2 answer" -- "$FL" grade --truth "$TMP/g1/r2-fleet.truth.json" --answer "$TMP/wrong.txt"
grep -q "8 / 13 points" "$TMP/.stdout" && pass "the MTBF, the state and the ledger item cost their points" || fail "wrong answer: $(head -1 "$TMP/.stdout")"
# the real lab: a truth stub beside the jobs CSV, every expected value from the CSV itself
mkdir -p "$TMP/real"
cp "$K" "$TMP/real/trace_kalos.csv"
cp "$SRC/scenarios/fleet/acmetrace-kalos.truth.json" "$SRC/scenarios/fleet/r2.rubric.json" "$TMP/real/"
"$FL" fleet analyze "$TMP/real/trace_kalos.csv" --json --job-gpus 512 > "$TMP/real.json"
python3 - "$TMP/real.json" > "$TMP/real-answer.txt" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"large_share: {m['large']['gpu_hour_share']:.4f}\nlarge_jobs: {m['large']['job_share']:.4f}")
print(f"dominant_state: {m['dominant_gpu_hour_state']}\ncancelled: {m['states']['CANCELLED']['gpu_hour_share']:.4f}")
print(f"mtbf: {m['mtbf']['per_gpu_years']:.3f}\nyoung: {m['young']['interval_min']:.1f}")
print("ledger_share: measured\nmtbf_is: proxy\nledger_ckpt: assumption")
PY
expect_exit 0 "grade against a real-lab truth stub (fleet: references on the CSV)" -- "$FL" grade --truth "$TMP/real/acmetrace-kalos.truth.json" --answer "$TMP/real-answer.txt"
grep -q "13 / 13 points" "$TMP/.stdout" && pass "full marks from the CSV's own analysis" || fail "stub: $(head -1 "$TMP/.stdout")"
echo '{"schema": "faultline.truth/1", "scenario": {"name": "x", "rubric": "r2.rubric.json"}}' > "$TMP/real/nofleet.truth.json"
expect_exit 4 "a truth without a fleet object" -- "$FL" grade --truth "$TMP/real/nofleet.truth.json" --answer "$TMP/real-answer.txt"
expect_err_has "fleet: missing" "the config error names fleet"
finish
