# Hostile input: the reproducers of the first fuzzing pass and a read of the
# parsers (tests/fuzz/regress/), each handled with a clear error or a bounded
# cost, and the bad values of docs/trace-format.md ("Bad input") reported by
# validate and warned about by analyze.
. "$(dirname "$0")/lib.sh"
R="$SRC/tests/fuzz/regress"
C="$SRC/tests/fuzz/corpus/fuzz_trace_stream"
# sanitizer builds use more memory and time: bounds are asserted on plain builds only
asan=0
grep -q __asan_init "$FL" 2>/dev/null && asan=1
TIME=$(command -v /usr/bin/time || true)

# rss_under MB WHAT -- COMMAND...: peak RSS of COMMAND at most MB (exit status ignored)
rss_under() {
	local mb=$1 what=$2
	shift 3
	if [ -z "$TIME" ] || [ "$asan" = 1 ]; then
		"$@" >/dev/null 2>&1
		pass "$what (memory not measured here)"
		return
	fi
	"$TIME" -f '%M' -o "$TMP/.rss" "$@" >/dev/null 2>&1
	local kb
	kb=$(tail -1 "$TMP/.rss")
	if [ "$kb" -le $((mb * 1024)) ]; then pass "$what: peak RSS $((kb / 1024)) MB <= $mb MB"; else
		fail "$what: peak RSS $((kb / 1024)) MB > $mb MB"
	fi
}

# 128 MiB of whitespace inside traceEvents (130 KB gzipped): streams by
rss_under 64 "gzip whitespace bomb, analyze" -- "$FL" analyze "$R/trace_stream-quadratic-gzip-whitespace-128MB.json.gz"
rss_under 64 "gzip whitespace bomb, analyze --device" -- "$FL" analyze --device "$R/trace_stream-quadratic-gzip-whitespace-128MB.json.gz"
expect_exit 0 "gzip whitespace bomb is read to its end" -- timeout 60 "$FL" analyze "$R/trace_stream-quadratic-gzip-whitespace-128MB.json.gz"
# plain whitespace too (not kept in the repository: made here)
python3 -c "import sys; sys.stdout.write('{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},' + ' ' * (96 << 20) + ']}')" >"$TMP/ws.json"
rss_under 64 "96 MiB of plain whitespace" -- "$FL" analyze "$TMP/ws.json"
rm -f "$TMP/ws.json"
# one event larger than the unit cap: an error naming the offset, bounded memory
python3 -c "import sys; sys.stdout.write('{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"' + 'a' * (9 << 20) + '\",\"ts\":1}]}')" >"$TMP/big.json"
expect_exit 2 "an event over 8 MiB is refused" -- "$FL" analyze "$TMP/big.json"
expect_err_has "a single value longer than 8 MiB" "the message says why"
rm -f "$TMP/big.json"

# steps #0, #1, #2147483647: period detection no longer loops 2^31 times
expect_exit 0 "huge step numbers: analyze" -- timeout 10 "$FL" analyze "$R/trace_dom-hang-detect_period.manual.json"
# pid 3.1e19 and rank 1e10: no float-to-integer overflow (the sanitizer build checks it)
expect_exit 0 "pid 3.1e19" -- "$FL" analyze "$R/trace_dom-ub-id_of-float-cast.json"
expect_err_has "1 event(s) whose pid or tid is a number no integer holds: read as absent" "pid 3.1e19: warned about"
expect_exit 1 "pid 3.1e19: validate" -- "$FL" validate "$R/trace_dom-ub-id_of-float-cast.json"
grep -qF "traceEvents[0] at byte 16: pid or tid is a number no integer holds" "$TMP/.stdout" && pass "validate names the pid" ||
	fail "validate does not name the pid"
printf '{"distributedInfo": {"rank": 0}, "distributedInfo": {"rank": 1}, "traceEvents": []}' >"$TMP/dupmeta.json"
expect_exit 1 "a metadata key given twice: validate" -- "$FL" validate "$TMP/dupmeta.json"
grep -qF "top level: 'distributedInfo' given twice" "$TMP/.stdout" && pass "validate names the repeated key" ||
	fail "validate does not name the repeated key"
expect_exit 2 "rank 1e10 is refused" -- "$FL" analyze "$R/trace_dom-ub-rank-float-cast.manual.json"
expect_err_has "distributedInfo.rank: 10000000000 is out of range" "the message names the field and range"
expect_exit 1 "rank 1e10: validate lists it" -- "$FL" validate "$R/trace_dom-ub-rank-float-cast.manual.json"
grep -q "distributedInfo.rank: 10000000000 is out of range" "$TMP/.stdout" && pass "validate names the rank" ||
	fail "validate does not name the rank"

# bad values: validate names each with its byte offset; analyze warns once per kind
expect_exit 1 "bad values: validate fails" -- "$FL" validate "$C/regress-bad-values.json"
for want in "traceEvents[0].dur at byte 16: negative (-5)" "traceEvents[1].ts at byte 85: not a finite number (inf)" \
	"traceEvents[2] at byte 157: name or cat is not valid UTF-8" "traceEvents[2].dur at byte 157: not a finite number (nan)" \
	"traceEvents[3].ph at byte 229: given twice" "traceEvents[3] at byte 229: name or cat holds control characters"; do
	grep -qF -- "$want" "$TMP/.stdout" && pass "validate: $want" || fail "validate lacks '$want'"
done
expect_exit 0 "bad values: analyze" -- "$FL" analyze "$C/regress-bad-values.json"
[ "$(grep -c '^warning: ' "$TMP/.stderr")" = 5 ] && pass "one warning per kind (5 kinds)" ||
	fail "expected 5 warnings: $(cat "$TMP/.stderr")"
expect_err_has "2 X event(s) with a dur that is not finite, negative or beyond 2^53 ns: skipped" "the count of each kind"
if LC_ALL=C grep -q "$(printf '[\001-\010\016-\037\177]')" "$TMP/.stdout"; then fail "raw control bytes printed"; else
	pass "no raw control bytes on stdout"; fi
grep -qF 'd\x07\x1b[31m' "$TMP/.stdout" && pass "control characters printed escaped" || fail "escaped name missing"
if grep -qE -- '-[0-9.]+ ms|nan|NaN' "$TMP/.stdout"; then fail "a negative or NaN duration printed"; else
	pass "no negative or NaN duration printed"; fi
# 20 problems, then a count
python3 -c "
import json
ev=[{'ph':'X','cat':'cpu_op','name':'a','pid':1,'tid':1,'ts':i,'dur':-1} for i in range(30)]
print(json.dumps({'traceEvents':ev}))" >"$TMP/many.json"
expect_exit 1 "30 negative durations: validate" -- "$FL" validate "$TMP/many.json"
[ "$(grep -c 'dur at byte' "$TMP/.stdout")" -le 20 ] && grep -q "and [0-9]* more problems" "$TMP/.stdout" &&
	pass "the first 20 problems, then a count" || fail "no cap on the problems listed"

# a rubric regex whose compilation blows up: refused, naming the rubric and the key path, exit 4
echo "ops_total: 5" >"$TMP/a.txt"
expect_exit 4 "nested-repetition regex in a rubric" -- timeout 10 "$FL" grade --truth "$SRC/scenarios/examples/truth/lab-opstorm.truth.json" \
	--answer "$TMP/a.txt" --rubric "$R/rubric-regex-blowup.manual.rubric.json"
expect_err_has "rubric-regex-blowup.manual.rubric.json': questions[4].aliases.input_starvation: bad regular expression" \
	"the message names the rubric and the key path"
expect_err_has "nested repetition" "the message says why"

# a small .gz that inflates past the cap of scenarios, rubrics and truths
python3 -c "
import gzip,sys
with gzip.open(sys.argv[1],'wb',9) as f:
    f.write(b'{\"a\":\"' + b' ' * (40 << 20) + b'\"}')" "$TMP/bomb.rubric.json.gz"
rss_under 96 "gzip rubric bomb is refused with bounded memory" -- "$FL" grade --truth "$SRC/scenarios/examples/truth/lab-opstorm.truth.json" \
	--answer "$TMP/a.txt" --rubric "$TMP/bomb.rubric.json.gz"
expect_exit 4 "gzip rubric bomb: exit 4" -- "$FL" grade --truth "$SRC/scenarios/examples/truth/lab-opstorm.truth.json" \
	--answer "$TMP/a.txt" --rubric "$TMP/bomb.rubric.json.gz"
expect_err_has "larger than 32 MiB once decompressed" "the message names the limit"
cp "$TMP/bomb.rubric.json.gz" "$TMP/bomb.scenario.json"
expect_exit 2 "gzip scenario bomb: exit 2" -- "$FL" run "$TMP/bomb.scenario.json" -o "$TMP/out"
expect_err_has "larger than 32 MiB once decompressed" "the scenario message names the limit"

# A .gz with bad JSON early and a corrupt checksum at its end: the error met
# first in the stream is the one reported, every time (the inflate thread runs
# ahead of the parser; which of the two it reported once depended on timing)
python3 -c "
import gzip,sys
ev = b'{\"ph\":\"X\",\"name\":\"k\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},'
big = b'{\"ph\":\"X\",\"name\":\"' + b'a' * (660 << 10) + b'\",\"ts\":1},'  # a unit longer than a read chunk
body = b'{\"traceEvents\":[' + big + b'{\"ph\":\"X\",}' + b',' + ev * 5000 + ev[:-1] + b']}'
z = bytearray(gzip.compress(body, 6))
z[-8] ^= 0xff  # the CRC-32 of the trailer
open(sys.argv[1], 'wb').write(bytes(z))" "$TMP/twoerr.json.gz"
firsts=$(for i in $(seq 1 20); do "$FL" validate "$TMP/twoerr.json.gz" 2>&1 | head -1; done | sort -u)
if [ "$(printf '%s\n' "$firsts" | wc -l)" = 1 ] && printf '%s' "$firsts" | grep -q "invalid JSON at byte"; then
	pass "bad JSON before a corrupt gzip checksum: the JSON error, in 20 of 20 runs"
else
	fail "bad JSON before a corrupt gzip checksum: first lines over 20 runs: $firsts"
fi

finish
