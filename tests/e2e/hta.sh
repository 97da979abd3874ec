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

# The emulated device: HTA's temporal breakdown, idle-time breakdown and
# comm/compute overlap show the same signatures faultline's own checks do.
run_emu() { "$FL" run "$SRC/scenarios/$1" --steps 4 -o "$TMP/emu" "${@:2}" >/dev/null 2>"$TMP/.stderr" || fail "run $1"; }
run_emu ddp-healthy.json --ranks 2
run_emu ddp-unoverlapped.json --ranks 2
run_emu straggler.json --ranks 2
run_emu emu/r7-starved-emu.json
for p in ddp-healthy:ddp-run-a ddp-unoverlapped:ddp-run-e straggler:ddp-run-d r7-starved-emu:lab-r7-b-emu; do
	s=${p%%:*}
	mkdir -p "$TMP/hta-emu/$s"
	cp "$TMP"/emu/${p#*:}.*json.gz "$TMP/hta-emu/$s/"
done
if "$VENV/bin/python" - "$TMP/hta-emu" >"$TMP/hta.log" 2>&1 <<'PY'; then
import logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
root = sys.argv[1]
def analysis(name):
    return TraceAnalysis(trace_dir=root + "/" + name)
ok = True
def check(cond, what):
    global ok
    print(("ok " if cond else "FAIL ") + what)
    ok &= bool(cond)
h = analysis("ddp-healthy")
check(sorted(h.t.get_ranks()) == [0, 1], "HTA finds ranks 0 and 1")
hov = h.get_comm_comp_overlap(visualize=False)["comp_comm_overlap_pctg"].tolist()
u = analysis("ddp-unoverlapped")
uov = u.get_comm_comp_overlap(visualize=False)["comp_comm_overlap_pctg"].tolist()
check(max(uov) < 10, "HTA: unoverlapped comm/compute overlap %s%% is near 0" % uov)
check(sum(hov) / len(hov) >= sum(uov) / len(uov) + 20,
      "HTA: healthy DDP overlaps comm with compute far more (%s%%) than the unoverlapped run (%s%%)" % (hov, uov))
s = analysis("straggler")
tb = s.get_temporal_breakdown(visualize=False).set_index("rank")
check(tb["compute_time(us)"].idxmax() == 1, "HTA: the throttled rank 1 has the most compute time (%s)"
      % tb["compute_time(us)"].tolist())
r = analysis("r7-starved-emu")
idle = r.get_idle_time_breakdown(visualize=False, show_idle_interval_stats=False)
idle = idle[0] if isinstance(idle, tuple) else idle
s7 = idle[idle["stream"] == 7].set_index("idle_category")["idle_time_ratio"]
check(s7.idxmax() == "host_wait" and s7["host_wait"] >= 0.9, "HTA: emu R7 idle time is host wait (%s)" % s7.to_dict())
rtb = r.get_temporal_breakdown(visualize=False)
check(rtb["idle_time_pctg"].iloc[0] >= 90, "HTA: emu R7 device idle %.1f%% of the time" % rtb["idle_time_pctg"].iloc[0])
sys.exit(0 if ok else 1)
PY
	pass "HTA agrees on the emulated-device signatures"
	grep -E "^(ok|FAIL) " "$TMP/hta.log" | sed 's/^/      /'
else
	fail "HTA on the emulated-device traces"
	tail -20 "$TMP/hta.log"
fi
finish
