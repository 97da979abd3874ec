# Every command answers --help; bad usage exits 2; faults lists every module.
. "$(dirname "$0")/lib.sh"

expect_exit 0 "faultline --help" -- "$FL" --help
grep -q "^usage: faultline COMMAND" "$TMP/.stdout" && pass "--help prints usage" || fail "--help prints usage"
cmds=$(sed -n 's/^  \([a-z]*\)  .*/\1/p' "$TMP/.stdout")
[ -n "$cmds" ] && pass "--help lists commands: $(echo $cmds)" || fail "--help lists commands"
for c in $cmds; do
	expect_exit 0 "faultline $c --help" -- "$FL" "$c" --help
	grep -q "^usage: faultline $c" "$TMP/.stdout" && pass "$c --help prints its usage" || fail "$c --help prints its usage"
	expect_exit 0 "faultline help $c" -- "$FL" help "$c"
done
expect_exit 0 "faultline --version" -- "$FL" --version
expect_exit 2 "no command" -- "$FL"
expect_exit 2 "unknown command" -- "$FL" frobnicate
expect_err_has "unknown command 'frobnicate'" "unknown command is named"
expect_exit 2 "unknown option" -- "$FL" run --bogus
expect_err_has "'--bogus'" "unknown option is named"
expect_exit 2 "run without a scenario" -- "$FL" run
expect_exit 2 "run with a bad --steps" -- "$FL" run x.json --steps zero
expect_exit 2 "missing scenario file" -- "$FL" run "$TMP/nope.json"
expect_err_has "nope.json" "missing file is named"
expect_exit 2 "validate without traces" -- "$FL" validate
expect_exit 2 "validate a missing trace" -- "$FL" validate "$TMP/nope.json.gz"

expect_exit 0 "faultline faults" -- "$FL" faults
for f in loader_sleep op_storm periodic_stall gc_pause; do
	grep -q "^$f\$" "$TMP/.stdout" && pass "faults lists $f" || fail "faults lists $f"
done
for p in "ms " "steps " "pre " "post " "period " "offset " "phase " "pause_ms " "growth_pct " "churn " "span "; do
	grep -q "^    $p" "$TMP/.stdout" && pass "faults lists parameter '$p'" || fail "faults lists parameter '$p'"
done
grep -q "family: input_starvation" "$TMP/.stdout" && pass "faults shows families" || fail "faults shows families"
finish
