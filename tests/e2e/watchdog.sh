# A rank that stops making progress ends the run with a message naming the rank,
# within the watchdog's time, instead of hanging every rank.
. "$(dirname "$0")/lib.sh"
start=$(date +%s)
FL_WATCHDOG_S=3 FL_TEST_HANG=1:3 timeout 120 "$FL" run "$SRC/scenarios/ddp-healthy.json" --ranks 2 --steps 4 \
	-o "$TMP/out" >"$TMP/.stdout" 2>"$TMP/.stderr"
rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" != 0 ] && [ "$rc" != 124 ] && pass "the run failed (exit $rc) instead of hanging" || fail "exit $rc (124 = hung until timeout)"
[ "$took" -lt 60 ] && pass "it ended after ${took}s" || fail "it took ${took}s"
grep -qE "rank 1: no progress for 3 s in step 3|waiting for rank 1, which stopped in step 3" "$TMP/.stderr" &&
	pass "the message names the hung rank and step" || { fail "the message names the hung rank"; cat "$TMP/.stderr"; }
[ ! -e "$TMP/out/ddp-run-a.truth.json" ] && pass "no truth file for the failed run" || fail "a truth file was written"
finish
