# A rank that stops making progress ends the run with a message naming the rank,
# within the watchdog's time, instead of hanging every rank — in each
# multi-rank workload: data-parallel (all-reduce) and pipeline (send/recv).
. "$(dirname "$0")/lib.sh"
hang_case() { # hang_case SCENARIO TRUTH
	local sc=$1 truth=$2 name
	name=$(basename "$sc" .json)
	local start
	start=$(date +%s)
	FL_WATCHDOG_S=3 FL_TEST_HANG=1:3 timeout 120 "$FL" run "$sc" --ranks 2 --steps 4 \
		-o "$TMP/$name" >"$TMP/$name.stdout" 2>"$TMP/$name.stderr"
	local rc=$?
	local took=$(( $(date +%s) - start ))
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && pass "$name: the run failed (exit $rc) instead of hanging" ||
		fail "$name: exit $rc (124 = hung until timeout)"
	[ "$took" -lt 60 ] && pass "$name: it ended after ${took}s" || fail "$name: it took ${took}s"
	grep -qE "rank 1: no progress for 3 s in step 3|waiting for rank 1, which stopped in step 3" "$TMP/$name.stderr" &&
		pass "$name: the message names the hung rank and step" ||
		{ fail "$name: the message names the hung rank"; cat "$TMP/$name.stderr"; }
	[ ! -e "$TMP/$name/$truth" ] && pass "$name: no truth file for the failed run" || fail "$name: a truth file was written"
}
hang_case "$SRC/scenarios/ddp-healthy.json" ddp-run-a.truth.json
hang_case "$SRC/scenarios/pipeline-healthy.json" pp-run-h.truth.json
finish
