# The emulated device's signatures hold, read back by an independent parser, in
# each of 5 consecutive runs (2 ranks, 12 recorded steps; 4 on one device): straggler, sync stall,
# unoverlapped vs overlapped all-reduce, and the device idle under R7's stall.
. "$(dirname "$0")/lib.sh"
RUNS=${FL_EMU_RUNS:-5}
for i in $(seq 1 "$RUNS"); do
	out="$TMP/run$i"
	expect_exit 0 "run $i: sync-stall" -- "$FL" run "$SRC/scenarios/sync-stall.json" --steps 4 -o "$out"
	expect_exit 0 "run $i: r7-starved-emu" -- "$FL" run "$SRC/scenarios/emu/r7-starved-emu.json" --steps 4 -o "$out"
	for s in ddp-healthy ddp-unoverlapped straggler; do
		expect_exit 0 "run $i: $s on 2 ranks" -- "$FL" run "$SRC/scenarios/$s.json" --ranks 2 --steps 12 -o "$out"
	done
	if [ "${FL_TIMING_CHECKS:-1}" = 0 ]; then
		echo "skip  run $i: timing signatures (FL_TIMING_CHECKS=0: a sanitizer build distorts timing)"
	elif python3 "$SRC/tests/tools/tracecheck.py" emu "$out" >"$TMP/sig" 2>&1; then
		sig_pass "run $i: all emulated-device signatures hold" "$TMP/sig"
	else
		fail "run $i: signatures"
		grep FAIL "$TMP/sig"
		keep_round "$out"
	fi
	expect_exit 0 "run $i: faultline validate" -- "$FL" validate "$out"/*.json.gz
	python3 - "$out" <<'PY' && pass "run $i: truth files list every rank's trace and instances" || fail "run $i: multi-rank truth"
import json, os, sys
out = sys.argv[1]
t = json.load(open(os.path.join(out, "ddp-run-d.truth.json")))
assert [tr["rank"] for tr in t["traces"]] == [0, 1], t["traces"]
assert all(os.path.exists(os.path.join(out, tr["file"])) for tr in t["traces"])
f = t["faults"][0]
assert f["fault"] == "throttled_rank" and f["affected_ranks"] == [1], f["affected_ranks"]
assert all(i["rank"] == 1 and i["measured"] > 1.5 for i in f["instances"]), f["instances"][:2]
assert len(t["metrics_by_rank"]) == 2
s = json.load(open(os.path.join(out, "lab-run-k.truth.json")))
assert len([i for i in s["faults"][0]["instances"] if i["recorded"]]) == 4 * 4
PY
done
[ -f "$TMP/sig" ] && cat "$TMP/sig"
finish
