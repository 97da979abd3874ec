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

# the one option parser: what every command accepts and how it says no
for c in $cmds; do
	expect_exit 2 "$c: unknown option" -- "$FL" "$c" --no-such-option
	expect_err_has "$c: unknown option '--no-such-option' (see 'faultline $c --help')" "$c: names the option and the help"
	expect_exit 0 "$c -h" -- "$FL" "$c" -h
	grep -q "^usage: faultline $c" "$TMP/.stdout" && pass "$c -h prints its usage" || fail "$c -h prints its usage"
done
expect_exit 2 "a missing value" -- "$FL" run x.json --steps
expect_err_has "run: option '--steps' expects an integer in [1, 1000000]" "a missing value names the option and the range"
expect_exit 2 "a bad value" -- "$FL" analyze --top 0 x.json
expect_err_has "analyze: option '--top' expects an integer in [1, 1000], got '0'" "a bad value is quoted"
expect_exit 2 "--name=VALUE is read" -- "$FL" run "$TMP/nope.json" --steps=zero
expect_err_has "option '--steps' expects an integer in [1, 1000000], got 'zero'" "--name=VALUE: the value is checked"
expect_exit 2 "a flag with a value" -- "$FL" analyze --json=yes x.json
expect_err_has "option '--json' takes no value" "a flag with a value is refused"
expect_exit 2 "two scenarios" -- "$FL" run a.json b.json
expect_err_has "run: expected one scenario file, got 'a.json' and 'b.json'" "too many arguments are named"
expect_exit 2 "faults takes no argument" -- "$FL" faults extra
expect_err_has "faults: unexpected argument 'extra'" "an unexpected argument is named"
expect_exit 2 "after --, an argument that looks like an option" -- "$FL" validate -- -nope.json.gz
expect_err_has "cannot open '-nope.json.gz'" "after --, it is a file"
expect_exit 2 "a value that looks like --help is a value" -- "$FL" regen -o --help "$TMP/nodir"
expect_err_has "cannot open scenario directory '$TMP/nodir'" "the option took --help as its value"
expect_exit 2 "grade: --out is still read after a usage error" -- "$FL" grade --colour --format json --out "$TMP/g.json"
grep -q '"state":.*"usage_error"' "$TMP/g.json" 2>/dev/null && pass "grade leaves a report after a usage error" ||
	fail "grade leaves a report after a usage error"

expect_exit 0 "faultline faults" -- "$FL" faults
for f in loader_sleep op_storm periodic_stall gc_pause; do
	grep -q "^$f\$" "$TMP/.stdout" && pass "faults lists $f" || fail "faults lists $f"
done
for p in "ms " "steps " "pre " "post " "period " "offset " "phase " "pause_ms " "growth_pct " "churn " "span "; do
	grep -q "^    $p" "$TMP/.stdout" && pass "faults lists parameter '$p'" || fail "faults lists parameter '$p'"
done
grep -q "family: input_starvation" "$TMP/.stdout" && pass "faults shows families" || fail "faults shows families"
finish
