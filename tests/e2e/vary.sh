# Per-learner variants: --seed N --vary draws each declared parameter within its
# range; the truth records the draws; the trace shows the drawn behaviour; the
# same seed gives the same variant and different seeds differ.
. "$(dirname "$0")/lib.sh"
sc="$SRC/scenarios/r9-hoststall.json"
for seed in 1 2 3 1; do
	expect_exit 0 "r9 variant seed $seed" -- "$FL" run "$sc" --seed "$seed" --vary -o "$TMP/s$seed-$RANDOM"
done
expect_exit 2 "--vary without --seed" -- "$FL" run "$sc" --vary -o "$TMP/x"
expect_err_has "--seed" "the message asks for --seed"
python3 - "$TMP" <<'PY' && pass "draws in range, recorded, visible in the trace; same seed same draws" || fail "variants"
import glob, gzip, json, os, sys
tmp = sys.argv[1]
draws = {}
for d in sorted(glob.glob(os.path.join(tmp, "s*-*"))):
    seed = os.path.basename(d).split("-")[0][1:]
    t = json.load(open(os.path.join(d, "lab-r9.truth.json")))
    stall = [f for f in t["faults"] if f["fault"] == "periodic_stall"][0]
    v = stall["varied"]
    assert 50 <= v["ms"]["drawn"] <= 70 and v["ms"]["range"] == [50, 70], v
    assert v["period"]["drawn"] in (3, 4, 5), v
    assert stall["params"]["period"] == v["period"]["drawn"] and stall["params"]["ms"] == v["ms"]["drawn"]
    period, offset = stall["params"]["period"], stall["params"]["offset"]
    # the trace shows the drawn period: metrics is long exactly in those steps
    doc = json.loads(gzip.decompress(open(os.path.join(d, "lab-r9.json.gz"), "rb").read()))
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = {int(e["name"][13:]): e for e in ev if e["name"].startswith("ProfilerStep#")}
    long_steps = sorted(n for n, s in steps.items() for e in ev
                        if e["name"] == "metrics" and s["ts"] <= e["ts"] < s["ts"] + s["dur"] and e["dur"] >= 40000)
    want = [n for n in sorted(steps) if n % period == offset]
    assert long_steps == want, (seed, long_steps, want)
    key = (v["ms"]["drawn"], v["period"]["drawn"])
    draws.setdefault(seed, set()).add(key)
assert len(draws["1"]) == 1, draws          # same seed, same draws
assert len({k for s in draws.values() for k in s}) >= 2, draws  # seeds differ
print(draws)
PY
finish
