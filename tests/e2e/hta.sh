# HTA (HolisticTraceAnalysis), the tool learners use, loads every trace with the
# right rank and the recorded ProfilerSteps. Skipped (77) with a reason only
# when Python or pip cannot provide HTA.
. "$(dirname "$0")/lib.sh"
VENV=${FL_HTA_VENV:-$SRC/.venv-hta}
if ! command -v python3 >/dev/null; then echo "skipped: python3 is not installed"; exit 77; fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import hta" 2>/dev/null; then
	python3 -m venv "$VENV" >/dev/null 2>&1 || { echo "skipped: python3 -m venv failed (install python3-venv)"; exit 77; }
	if ! "$VENV/bin/pip" install -q HolisticTraceAnalysis >"$TMP/pip.log" 2>&1; then
		echo "skipped: pip could not install HolisticTraceAnalysis:"; tail -3 "$TMP/pip.log"; exit 77
	fi
fi
expect_exit 0 "regen" -- "$FL" regen -o "$TMP/out"
for f in "$TMP"/out/*.json.gz; do
	name=$(basename "$f")
	mkdir -p "$TMP/hta/$name"
	cp "$f" "$TMP/hta/$name/"
	if "$VENV/bin/python" - "$TMP/hta/$name" >"$TMP/hta.log" 2>&1 <<'PY'; then
import sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
ranks = a.t.get_ranks() if hasattr(a.t, "get_ranks") else list(a.t.traces)
assert list(ranks) == [0], ranks
df = a.t.get_trace(0)
sym = a.t.symbol_table.get_sym_table()
names = df["name"].map(lambda i: sym[i])
steps = sorted(int(n.split("#")[1]) for n in set(names) if n.startswith("ProfilerStep#"))
# HTA drops the last recorded step when there are two or more
assert steps == list(range(2, 9)), steps
cats = set(df["cat"].map(lambda i: sym[i]))
assert {"cpu_op", "user_annotation"} <= cats, cats
print("rank 0, steps", steps, "events", len(df))
PY
		pass "HTA loads $name: $(tail -1 "$TMP/hta.log")"
	else
		fail "HTA on $name"
		tail -5 "$TMP/hta.log"
	fi
done
finish
