# Without a usable GPU, `--backend cuda` fails cleanly: exit 3, a message that
# says why (no driver / no device / the CUDA error), no trace or truth left
# behind, and a scenario with "backend": "auto" still runs (on emu). Skipped
# (77) where cuda is not built in, or where a GPU is usable (tests/gpu-check.sh
# covers that machine).
. "$(dirname "$0")/lib.sh"
"$FL" run "$SRC/scenarios/emu/r7-healthy-emu.json" --backend cuda --steps 2 -o "$TMP/out" >"$TMP/.stdout" 2>"$TMP/.stderr"
rc=$?
if [ "$rc" = 2 ] && grep -q "not available in this build" "$TMP/.stderr"; then
	echo "skipped: this faultline was built without CUDA"
	exit 77
fi
if [ "$rc" = 0 ]; then
	echo "skipped: a GPU is usable here (run tests/gpu-check.sh)"
	exit 77
fi
if [ "$rc" = 3 ]; then pass "--backend cuda without a GPU exits 3"; else
	fail "--backend cuda without a GPU: exit $rc, expected 3"
	sed 's/^/      | /' "$TMP/.stderr" | head -5
fi
expect_err_has "cuda: no usable GPU" "the message says there is no usable GPU"
if grep -qE "driver|device|cuda[A-Z][A-Za-z]+|insufficient" "$TMP/.stderr"; then
	pass "the message says why (driver, device or the CUDA error)"
else
	fail "the message does not say why"
	sed 's/^/      | /' "$TMP/.stderr" | head -5
fi
if [ "$(grep -c . "$TMP/.stderr")" -le 3 ]; then pass "one short message, no crash"; else
	fail "stderr has $(grep -c . "$TMP/.stderr") lines"
	head -5 "$TMP/.stderr"
fi
left=$(find "$TMP/out" -type f 2>/dev/null)
if [ -n "$left" ]; then fail "files left in the output directory: $left"; else
	pass "no trace or truth written"
fi

# "auto" falls back to the emulated device, and says why on stderr
sed 's/"backend": "emu"/"backend": "auto"/' "$SRC/scenarios/emu/r7-healthy-emu.json" >"$TMP/auto.json"
expect_exit 0 "a scenario with backend auto runs" -- "$FL" run "$TMP/auto.json" --steps 2 -o "$TMP/auto"
expect_err_has "backend auto: using emu" "auto says it fell back to emu"
if python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["environment"]["backend"] != "emu")' \
	"$TMP/auto/lab-r7-a-emu.truth.json"; then
	pass "the truth records backend emu"
else
	fail "the truth does not record backend emu"
fi
finish
