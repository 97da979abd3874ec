#!/bin/bash
# faultline assign: one variant per learner of a roster, seeded by
# HMAC-SHA256(course secret, learner id) (checked here with Python's hmac),
# distinct per learner, the same for the same secret, different for another;
# traces under learners/ID/ with neutral names and no truth there; the truths
# and the rubric under truths/; then grade --batch on the roster it writes
# grades every learner, trace: references reading the learner's traces (the
# roster's traces column, grade --traces DIR), still checked by sha256.
# usage: assign.sh FAULTLINE_BINARY SOURCE_DIR
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
exec python3 - "$1" "$2" <<'PY'
import csv, hashlib, hmac, json, os, re, shutil, subprocess, sys
binary, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(src, "tests", "grader"))
import gradelib as gl
check = gl.check
work = gl.tmpdir()
scenario = os.path.join(src, "scenarios", "r9-hoststall.json")
ids = ["alice", "bob.smith", "carol+x@uni.edu"]
roster = os.path.join(work, "class.csv")
# hostile-ish but usable: BOM, CRLF, a quoted field, an extra column
open(roster, "w", encoding="utf-8", newline="").write(
    "\ufeffname,Email\r\n" + "".join('"%s, X",%s\r\n' % (i.upper(), i) for i in ids))

def assign(out, *extra):
    return gl.run(binary, ["assign", scenario, "--roster", roster, "-o", out, "--steps", "2"] + list(extra), timeout=240)

def variant(out, lid):
    t = gl.load(os.path.join(out, "truths", lid + ".truth.json"))
    return t["scenario"]["seed"], json.dumps([f["params"] for f in t["faults"]], sort_keys=True), t

S1, S2 = "correct horse battery staple 1", "another course's secret 22"
o1, o2, o3, o4 = (os.path.join(work, d) for d in ("a1", "a2", "a3", "a4"))
rc, so, err = assign(o1, "--secret", S1)
if not check(rc == 0, f"assign: exit {rc}: {err[-800:]}"):
    gl.finish("assign")
check(all(f"learner {k} of 3" in err for k in (1, 2, 3)) and "ETA" in err, f"progress on stderr: {err[-600:]}")
v1 = {}
for lid in ids:
    seed, params, t = variant(o1, lid)
    v1[lid] = (seed, params)
    want = int.from_bytes(hmac.new(S1.encode(), b"seed\n" + lid.encode(), hashlib.sha256).digest()[:4], "big") & 0x7fffffff
    check(seed == want, f"{lid}: the seed is HMAC-SHA256(secret, id): {seed} != {want}")
    files = sorted(os.listdir(os.path.join(o1, "learners", lid)))
    traces = [f for f in files if f.startswith("trace-")]
    check(len(traces) == 1 and re.fullmatch(r"trace-[0-9a-f]{12}\.json\.gz", traces[0]), f"{lid}: neutral trace name {files}")
    check(set(files) - set(traces) <= {"baseline.json.gz"}, f"{lid}: only traces for the learner: {files}")
    check([tr["file"] for tr in t["traces"]] == traces, f"{lid}: the truth lists the renamed trace {t['traces']}")
    for f in files:
        check(not any(s in f for s in (lid, "hoststall", "r9", str(seed), "truth")), f"{lid}: '{f}' says nothing")
    check("baseline" in t and t["baseline"]["scenario"] == "r7-healthy" and t["baseline"]["metrics"]["steps"],
          f"{lid}: the truth carries the baseline's metrics")
leaked = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(o1, "learners")) for f in fs if "truth" in f or "rubric" in f]
check(not leaked, f"no truth or rubric under learners/: {leaked}")
check(os.path.exists(os.path.join(o1, "truths", "r9-hoststall.rubric.json")), "the rubric is beside the truths")
check(not [d for d in os.listdir(o1) if d.startswith(".staging")], f"no staging folder left: {os.listdir(o1)}")
check(len({v for v in v1.values()}) == 3 and len({p for _, p in v1.values()}) == 3, f"distinct variants: {v1}")
names1 = {lid: sorted(os.listdir(os.path.join(o1, "learners", lid))) for lid in ids}
check(len({tuple(n) for n in names1.values()}) == 3, f"distinct trace names: {names1}")
# the same secret (from a file, with its line break): the same variants; another secret: others
sf = os.path.join(work, "secret")
open(sf, "w").write(S1 + "\n")
rc, _, err = assign(o2, "--secret-file", sf)
check(rc == 0, f"assign --secret-file: {rc} {err[-400:]}")
rc, _, err = assign(o3, "--secret", S2)
check(rc == 0, f"assign, another secret: {rc} {err[-400:]}")
for lid in ids:
    check(variant(o2, lid)[:2] == v1[lid], f"{lid}: the same secret gives the same variant")
    check(sorted(os.listdir(os.path.join(o2, "learners", lid))) == names1[lid], f"{lid}: and the same names")
    check(variant(o3, lid)[0] != v1[lid][0], f"{lid}: another secret gives another seed")
    check(sorted(os.listdir(os.path.join(o3, "learners", lid))) != names1[lid], f"{lid}: and other names")
check(len({variant(o3, l)[1] for l in ids} | {v1[l][1] for l in ids}) > 3, "another secret draws other parameters")
# the roster it writes: grade --batch grades every learner
rows = list(csv.DictReader(open(os.path.join(o1, "roster.csv"), newline="")))
check([r["learner"] for r in rows] == ids and set(rows[0]) == {"learner", "answer", "truth", "traces"}, f"roster {rows}")
os.makedirs(os.path.join(o1, "answers"))
want = {}
for lid in ids:
    _, _, t = variant(o1, lid)
    ans, score = gl.make_answer(t, gl.load(os.path.join(o1, "truths", "r9-hoststall.rubric.json")), "right")
    want[lid] = score
    gl.write_answer(os.path.join(o1, "answers", lid + ".txt"), ans)
rc, so, err = gl.run(binary, ["grade", "--batch", os.path.join(o1, "roster.csv"), "--out", os.path.join(work, "g1")])
check(rc == 0, f"grade --batch on assign's roster: exit {rc} {err[-500:]}")
gb = {r["learner"]: r for r in csv.DictReader(open(os.path.join(work, "g1", "gradebook.csv"), newline=""))}
for lid in ids:
    check(gb[lid]["state"] == "graded" and abs(float(gb[lid]["score"]) - want[lid]) < 1e-6, f"{lid}: {gb[lid]}")
# trace: references read the learner's traces (beside no truth): the traces column
rub = os.path.join(work, "trace.rubric.json")
json.dump({"schema": "faultline.rubric/1", "name": "trace-refs", "questions": [
    {"id": "trace_p50_ms", "prompt": "step p50", "points": 1, "kind": "number", "unit": "ms",
     "expected": "trace:steps.p50_ms"},
    {"id": "trace_steps", "prompt": "steps", "points": 1, "kind": "integer", "expected": "trace:steps.count"}]},
    open(rub, "w"))
for lid in ids:
    m = variant(o1, lid)[2]["metrics"]["steps"]
    open(os.path.join(o1, "answers", lid + ".txt"), "w").write(
        "trace_p50_ms: %.6f ms\ntrace_steps: %d\n" % (m["p50_ms"], m["count"]))
rc, so, err = gl.run(binary, ["grade", "--batch", os.path.join(o1, "roster.csv"), "--rubric", rub, "--out", os.path.join(work, "g2")])
check(rc == 0, f"trace: references through the traces column: exit {rc} {err[-500:]}")
gb = {r["learner"]: r for r in csv.DictReader(open(os.path.join(work, "g2", "gradebook.csv"), newline=""))}
check(all(gb[l]["score"] == "2" for l in ids), f"trace: references graded against each learner's trace: {gb}")
t_alice = os.path.join(o1, "truths", "alice.truth.json")
a_alice = os.path.join(o1, "answers", "alice.txt")
rc, out, err = gl.run(binary, ["grade", "--truth", t_alice, "--answer", a_alice, "--rubric", rub, "--format", "json",
                               "--traces", os.path.join(o1, "learners", "alice")])
check(rc == 0 and json.loads(out)["score"] == 2, f"grade --traces DIR: {rc} {err[-300:]}")
rc, out, err = gl.run(binary, ["grade", "--truth", t_alice, "--answer", a_alice, "--rubric", rub])
check(rc == 4, f"without --traces the truth's traces are not beside it: exit 4, got {rc}")
# the sha256 check still applies: another learner's trace in alice's place
at = os.path.join(o1, "learners", "alice", names1["alice"][-1])
shutil.copy(os.path.join(o1, "learners", "bob.smith", names1["bob.smith"][-1]), at)
rc, out, err = gl.run(binary, ["grade", "--truth", t_alice, "--answer", a_alice, "--rubric", rub,
                               "--traces", os.path.join(o1, "learners", "alice")])
check(rc == 4 and "does not match" in err, f"a swapped trace is refused: {rc} {err[-300:]}")
rc, so, err = gl.run(binary, ["grade", "--batch", os.path.join(o1, "roster.csv"), "--rubric", rub, "--out", os.path.join(work, "g3")])
gb = {r["learner"]: r for r in csv.DictReader(open(os.path.join(work, "g3", "gradebook.csv"), newline=""))}
check(rc == 1 and gb["alice"]["state"] == "truth_or_rubric_error" and gb["bob.smith"]["score"] == "2",
      f"batch: the swapped trace fails alice's row only: {rc} {gb}")
# unusable learner ids: every one named with its line, nothing run
bad = os.path.join(work, "bad.csv")
open(bad, "w", newline="").write("learner\nok1\n../etc\n\"a b\"\nok1\n.hidden\n")
rc, _, err = gl.run(binary, ["assign", scenario, "--roster", bad, "-o", o4, "--secret", S1])
check(rc == 2 and all(f"line {n}" in err for n in (3, 4, 5, 6)) and "line 2" not in err, f"bad ids by line: {rc} {err}")
check(not os.path.exists(o4), "nothing is run or written for a bad roster")
# usage
for args in ([], ["--secret", S1, "--secret-file", sf]):
    rc, _, err = gl.run(binary, ["assign", scenario, "--roster", roster, "-o", o4] + args)
    check(rc == 2 and "secret" in err, f"assign {args}: one secret expected: {rc} {err}")
rc, _, err = gl.run(binary, ["grade", "--batch", os.path.join(o1, "roster.csv"), "--traces", o1])
check(rc == 2, f"--traces with --batch: usage error {rc}")
gl.finish("assign")
PY
