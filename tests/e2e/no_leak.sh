# No fault name, family, fix, parameter name or truth-file string appears in
# any trace, in any scenario's output file names, or in traceName; `run --blind`
# names every output trace-HASH. The checker is shown to catch planted leaks first.
. "$(dirname "$0")/lib.sh"
TC="$SRC/tests/tools/tracecheck.py"
expect_exit 0 "regen" -- "$FL" regen -o "$TMP/out"
python3 "$TC" noleak "$TMP/out" >"$TMP/leak" 2>&1 && pass "no leak in any trace, file name or traceName" ||
	{ fail "leak found"; grep FAIL "$TMP/leak"; }

# every scenario's default output names, against its own faults' names, families and fixes
"$FL" faults >"$TMP/faults.txt" || fail "faultline faults"
python3 "$TC" names "$TMP/faults.txt" "$SRC"/scenarios/*.json "$SRC"/scenarios/emu/*.json >"$TMP/names" 2>&1 &&
	pass "no scenario's output names tell its faults" || { fail "a scenario's output names leak"; grep FAIL "$TMP/names"; }

# --blind: neutral names for any scenario, one rank or several; traceName is the file's stem
expect_exit 0 "run --blind (one rank)" -- "$FL" run "$SRC/scenarios/r7-starved.json" --steps 2 --blind -o "$TMP/blind1"
expect_exit 0 "run --blind (2 ranks)" -- "$FL" run "$SRC/scenarios/straggler.json" --steps 2 --ranks 2 --blind -o "$TMP/blind2"
python3 - "$TMP/blind1" "$TMP/blind2" >"$TMP/blind" 2>&1 <<'PY' && pass "--blind names are trace-HASH, traceName matches" || { fail "--blind names"; cat "$TMP/blind"; }
import gzip, json, os, re, sys
for d, ranks in ((sys.argv[1], 1), (sys.argv[2], 2)):
    names = sorted(os.listdir(d))
    truths = [n for n in names if n.endswith(".truth.json")]
    assert len(truths) == 1 and re.fullmatch(r"trace-[0-9a-f]{12}\.truth\.json", truths[0]), names
    stem = truths[0][:-len(".truth.json")]
    want = [stem + ".json.gz"] if ranks == 1 else ["%s.rank-%d.json.gz" % (stem, r) for r in range(ranks)]
    assert sorted(n for n in names if n.endswith(".json.gz")) == want, (names, want)
    for n in want:
        doc = json.loads(gzip.decompress(open(os.path.join(d, n), "rb").read()))
        assert doc["traceName"] == n[:-len(".json.gz")], (n, doc["traceName"])
    truth = json.load(open(os.path.join(d, truths[0])))
    assert sorted(t["file"] for t in truth["traces"]) == want, truth["traces"]
print("ok")
PY
python3 "$TC" noleak "$TMP/blind2" >"$TMP/leak2" 2>&1 && pass "no leak in the blind multi-rank run" ||
	{ fail "leak in the blind run"; grep FAIL "$TMP/leak2"; }
"$FL" run "$SRC/scenarios/r7-starved.json" --steps 2 --blind -o "$TMP/blind1" >/dev/null 2>&1
[ "$(ls "$TMP/blind1"/*.truth.json | wc -l)" = 2 ] && pass "a second blind run draws a new name" || fail "the blind name repeated"

# negative controls: plant a parameter name and a fault name; then a leaky file name
mkdir -p "$TMP/planted"
cp "$TMP/out"/lab-r7-b.* "$TMP/planted/"
python3 - "$TMP/planted/lab-r7-b.json.gz" <<'PY'
import gzip, json, sys
p = sys.argv[1]
d = json.loads(gzip.decompress(open(p, "rb").read()))
d["traceEvents"][5].setdefault("args", {})["ms"] = 30
d["traceEvents"][6]["name"] = "loader_sleep"
open(p, "wb").write(gzip.compress(json.dumps(d).encode()))
PY
if python3 "$TC" noleak "$TMP/planted" >/dev/null 2>&1; then
	fail "the checker missed a planted leak"
else
	pass "the checker catches a planted leak"
fi
mkdir -p "$TMP/planted2"
cp "$TMP/out"/lab-r7-b.truth.json "$TMP/planted2/"
cp "$TMP/out"/lab-r7-b.json.gz "$TMP/planted2/lab-starved.json.gz"
python3 "$TC" noleak "$TMP/planted2" >"$TMP/p2" 2>&1 && fail "the checker missed a leaky file name" ||
	{ grep -q "FAIL  lab-starved.json.gz: the file name" "$TMP/p2" && pass "the checker catches a leaky file name" ||
		{ fail "the checker failed for another reason"; cat "$TMP/p2"; }; }
python3 - "$TMP/planted2/lab-starved.json.gz" <<'PY'
import gzip, json, sys
p = sys.argv[1]
d = json.loads(gzip.decompress(open(p, "rb").read()))
d["traceName"] = "lab-starved.json.gz"
open(p, "wb").write(gzip.compress(json.dumps(d).encode()))
PY
mv "$TMP/planted2/lab-starved.json.gz" "$TMP/planted2/lab-r7-b.json.gz"
python3 "$TC" noleak "$TMP/planted2" >"$TMP/p3" 2>&1 && fail "the checker missed a leaky traceName" ||
	{ grep -q "traceName 'lab-starved.json.gz'" "$TMP/p3" && pass "the checker catches a leaky traceName" ||
		{ fail "the checker failed for another reason"; cat "$TMP/p3"; }; }
mkdir -p "$TMP/oldsc"
sed 's/"lab-r7-b\./"lab-starved./g' "$SRC/scenarios/r7-starved.json" >"$TMP/oldsc/r7-starved.json"
python3 "$TC" names "$TMP/faults.txt" "$TMP/oldsc/r7-starved.json" >/dev/null 2>&1 &&
	fail "the names check missed 'lab-starved'" || pass "the names check catches 'lab-starved'"
finish
