#!/bin/bash
# Every scenario in scenarios/ (and its folders) has a rubric it can be graded
# with: the scenario names one ("rubric"), the file exists beside it or in
# scenarios/, lists the scenario in its "scenarios", and a pinned example of
# scenarios/examples/expected.json is graded with it against a truth of that
# scenario. No scenario is exempt.
# usage: rubric_coverage.sh FAULTLINE_BINARY SOURCE_DIR
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
exec python3 - "$1" "$2" <<'PY'
import json, os, subprocess, sys
binary, src = sys.argv[1], sys.argv[2]
base = os.path.join(src, "scenarios")
ex = os.path.join(base, "examples")
manifest = json.load(open(os.path.join(ex, "expected.json")))
fails, seen = [], 0
def find(name, d):
    for c in [os.path.join(d, name), os.path.join(base, name)] + \
             [os.path.join(base, s, name) for s in sorted(os.listdir(base)) if os.path.isdir(os.path.join(base, s))]:
        if os.path.exists(c):
            return c
for d, _, files in os.walk(base):
    if os.path.abspath(d).startswith(os.path.abspath(ex)):
        continue
    for f in sorted(files):
        if not f.endswith(".json") or ".rubric." in f or ".truth." in f:
            continue
        sc = json.load(open(os.path.join(d, f)))
        if sc.get("schema") != "faultline.scenario/1":
            continue
        seen += 1
        name, rubric = sc["name"], sc.get("rubric")
        where = os.path.relpath(os.path.join(d, f), src)
        if not rubric:
            fails.append(f"{where}: scenario '{name}' names no rubric"); continue
        path = find(rubric, d)
        if not path:
            fails.append(f"{where}: rubric '{rubric}' not found"); continue
        r = json.load(open(path))
        if name not in r.get("scenarios", [name]):
            fails.append(f"{where}: rubric '{rubric}' does not list scenario '{name}'")
        graded = 0
        for ans, want in manifest.items():
            if ans.startswith("$") or want.get("exit") != 0:
                continue
            t = json.load(open(os.path.join(ex, want["truth"])))
            if t["scenario"]["name"] != name or t["scenario"].get("rubric") != rubric:
                continue
            p = subprocess.run([binary, "grade", "--truth", os.path.join(ex, want["truth"]), "--answer",
                                os.path.join(ex, ans), "--format", "json"], capture_output=True)
            d2 = json.loads(p.stdout or b"{}")
            if p.returncode != 0 or abs(d2.get("score", -1) - want["score"]) > 1e-9:
                fails.append(f"{where}: example {ans}: exit {p.returncode}, score {d2.get('score')}, expected {want['score']}")
            graded += 1
        if not graded:
            fails.append(f"{where}: no pinned example answer in scenarios/examples/expected.json for scenario '{name}'")
for m in fails:
    print("FAIL:", m)
print(f"rubric_coverage: {seen} scenarios, {len(fails)} problems")
sys.exit(1 if fails or not seen else 0)
PY
