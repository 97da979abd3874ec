# No fault name, family, fix, parameter name or truth-file string appears in
# any trace. The checker is shown to catch a planted leak first.
. "$(dirname "$0")/lib.sh"
expect_exit 0 "regen" -- "$FL" regen -o "$TMP/out"
python3 "$SRC/tests/tools/tracecheck.py" noleak "$TMP/out" >"$TMP/leak" 2>&1 && pass "no leak in any trace" || { fail "leak found"; grep FAIL "$TMP/leak"; }

# negative control: plant a parameter name and a fault name; the checker must fail
mkdir -p "$TMP/planted"
cp "$TMP/out"/lab-starved.* "$TMP/planted/"
python3 - "$TMP/planted/lab-starved.json.gz" <<'PY'
import gzip, json, sys
p = sys.argv[1]
d = json.loads(gzip.decompress(open(p, "rb").read()))
d["traceEvents"][5].setdefault("args", {})["ms"] = 30
d["traceEvents"][6]["name"] = "loader_sleep"
open(p, "wb").write(gzip.compress(json.dumps(d).encode()))
PY
if python3 "$SRC/tests/tools/tracecheck.py" noleak "$TMP/planted" >/dev/null 2>&1; then
	fail "the checker missed a planted leak"
else
	pass "the checker catches a planted leak"
fi
finish
