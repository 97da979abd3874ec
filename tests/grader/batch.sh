#!/bin/bash
# Batch grading: a hostile roster (BOM, CRLF, quoted fields with commas, quotes
# and line breaks, bad rows), one report per learner in every format (checked
# as each platform reads it), the gradebook, the summary, --answers/--truths,
# a bad answer or truth that does not stop the batch, and a regrade.
# usage: batch.sh FAULTLINE_BINARY SOURCE_DIR
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
exec python3 - "$1" "$2" <<'PY'
import csv, io, json, os, shutil, subprocess, sys
binary, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(src, "tests", "grader"))
import gradelib as gl
check = gl.check
ex = os.path.join(src, "scenarios", "examples")
manifest = {k: v for k, v in gl.load(os.path.join(ex, "expected.json")).items() if not k.startswith("$")}
work = gl.tmpdir()
def run(args):
    p = subprocess.run([binary] + args, capture_output=True)
    return p.returncode, p.stdout.decode(), p.stderr.decode()
# the roster: every pinned example, its learner id from its file name
rows, want = [], {}
for i, (name, w) in enumerate(sorted(manifest.items())):
    lid = "l%02d" % i
    want[lid] = w
    shutil.copy(os.path.join(ex, name), os.path.join(work, name))
    rows.append((lid, name, os.path.join(ex, w["truth"])))
text = "\ufefflearner,\"answer\",truth\r\n"
for lid, a, t in rows:
    text += '%s,"%s",%s\r\n' % (lid, a, t)
bad_lines = []
def bad(line):
    global text
    text += line
    bad_lines.append(text.count("\r\n") + text.count("\n") - text.count("\r\n") - line.count("\n") + 1)
bad("../escape,x.txt,y.truth.json\r\n")
bad("l00,x.txt,y.truth.json\r\n")
bad('"a ""quoted"" id" junk,x,y\r\n')
text += '"with, comma",missing-answer.txt,%s\r\n' % rows[0][2]   # usable id? no: ',' and ' '
text += "ghost,nonexistent.txt,%s\r\n" % rows[0][2]               # answer missing: not gradable, in its row
text += "notruth,%s,nope.truth.json\n" % rows[0][1]               # truth missing: its row says so
text += '"multi\nline",x,y\r\n'
open(os.path.join(work, "roster.csv"), "w", encoding="utf-8", newline="").write(text)
for fmt in gl.FORMATS:
    out = os.path.join(work, "out-" + fmt)
    rc, so, err = run(["grade", "--batch", os.path.join(work, "roster.csv"), "--out", out, "--format", fmt])
    check(rc == 1, f"{fmt}: exit 1 when some learners or rows are not graded: {rc} {err}")
    ext = {"text": "txt", "json": "json", "junit": "xml", "gradescope": "gradescope.json", "prairielearn": "prairielearn.json"}[fmt]
    reports = sorted(os.listdir(os.path.join(out, "reports")))
    check(reports == sorted(["%s.%s" % (l, ext) for l in list(want) + ["ghost", "notruth"]]), f"{fmt}: one report per learner: {reports}")
    for lid, w in want.items():
        data = open(os.path.join(out, "reports", "%s.%s" % (lid, ext)), "rb").read()
        gl.check_format(fmt, data, f"batch {fmt} {lid}", "graded" if w["exit"] == 0 else "unparseable")
        if fmt == "prairielearn":
            check(len(data) < 1 << 20, f"{lid}: PrairieLearn results under 1 MB")
    gb = list(csv.reader(io.StringIO(open(os.path.join(out, "gradebook.csv"), encoding="utf-8", newline="").read())))
    head = gb[0]
    check(head[:3] == ["learner", "score", "max_score"] and head[-2:] == ["state", "message"], f"gradebook header {head}")
    byid = {r[0]: dict(zip(head, r)) for r in gb[1:]}
    check(set(byid) == set(want) | {"ghost", "notruth"}, f"gradebook rows: {sorted(byid)}")
    for lid, w in want.items():
        r = byid[lid]
        if w["exit"] == 0:
            check(r["state"] == "graded" and abs(float(r["score"]) - w["score"]) < 1e-9, f"{lid}: {r}")
            qsum = sum(float(r[c]) for c in head[3:-2] if r[c])
            check(abs(qsum - w["score"]) < 1e-6, f"{lid}: the question columns add up to the score")
        else:
            check(r["state"] == "not_gradable" and r["score"] == "" and r["message"], f"{lid}: not gradable row {r}")
    check(byid["ghost"]["state"] == "not_gradable" and "nonexistent" in byid["ghost"]["message"], f"ghost: {byid['ghost']}")
    check(byid["notruth"]["state"] == "truth_or_rubric_error" and "nope.truth.json" in byid["notruth"]["message"],
          f"notruth: {byid['notruth']}")
    s = gl.load(os.path.join(out, "summary.json"))
    graded = [w["score"] for w in want.values() if w["exit"] == 0]
    check(s["graded"] == len(graded) and s["learners"] == len(want) + 2, f"summary counts {s}")
    check(abs(s["mean"] - sum(graded) / len(graded)) < 1e-6, f"summary mean {s['mean']}")
    g = sorted(graded)
    med = g[len(g) // 2] if len(g) % 2 else (g[len(g) // 2 - 1] + g[len(g) // 2]) / 2
    check(abs(s["median"] - med) < 1e-6, f"summary median {s['median']} != {med}")
    check(sum(h["count"] for h in s["histogram"]) == len(graded), "histogram counts every graded learner")
    for q in s["questions"]:
        tot = sum(q[k] for k in ("right", "partly", "wrong", "unreadable", "missing"))
        check(abs(tot - 1) < 1e-3, f"question {q['question']}: shares add up to 1 ({tot})")
    unread = [q for q in s["questions"] if q["unreadable"] > 0]
    check(unread, "the unreadable-partial example shows up as unreadable in the summary")
    nb = s["roster_rows_not_used"]
    check(len(nb) == 5 and all("line " in m for m in nb), f"bad rows counted with line numbers: {nb}")
    check("learners" in so and "histogram" in so, "the summary is printed")
# no header, LF, --answers/--truths
ad, td = os.path.join(work, "answers"), os.path.join(work, "truths")
os.mkdir(ad); os.mkdir(td)
for lid, a, t in rows[:6]:
    shutil.copy(os.path.join(ex, a), os.path.join(ad, lid + "." + a.rsplit(".", 1)[1]))
    shutil.copy(t, os.path.join(td, lid + ".truth.json"))
    for tr in gl.load(t)["traces"]:  # trace: references read the traces beside the truth
        if os.path.exists(os.path.join(os.path.dirname(t), tr["file"])):
            shutil.copy(os.path.join(os.path.dirname(t), tr["file"]), os.path.join(td, tr["file"]))
rc, so, err = run(["grade", "--answers", ad, "--truths", td, "--out", os.path.join(work, "dirs"), "--scenarios",
                   os.path.join(src, "scenarios")])
gb = list(csv.DictReader(open(os.path.join(work, "dirs", "gradebook.csv"), newline="")))
check(len(gb) == 6, f"--answers: one row per answer file: {len(gb)} {err}")
for r in gb:
    w = want[r["learner"]]
    check(w["exit"] != 0 or (r["score"] and abs(float(r["score"]) - w["score"]) < 1e-9), f"--answers {r['learner']}: {r}")
# regrade: change two scores in an old gradebook
old = os.path.join(work, "old.csv")
lines = open(os.path.join(work, "out-json", "gradebook.csv"), newline="").read().split("\r\n")
rdr = list(csv.reader(lines[1:-1]))
changed = {}
for r in rdr:
    if r[1] != "" and len(changed) < 2:
        changed[r[0]] = float(r[1])
        r[1] = str(float(r[1]) + 1)
out = io.StringIO(); csv.writer(out, lineterminator="\r\n").writerows([lines[0].split(",")] + rdr + [["gone", "3"]])
open(old, "w", newline="").write(out.getvalue())
rc, so, err = run(["grade", "--batch", os.path.join(work, "roster.csv"), "--out", os.path.join(work, "re"), "--previous", old])
rg = list(csv.DictReader(open(os.path.join(work, "re", "regrade.csv"), newline="")))
moved = {r["learner"]: r for r in rg if r["note"] == "down"}
check(set(moved) == set(changed), f"regrade: the changed learners {sorted(moved)} != {sorted(changed)}")
for lid, r in moved.items():
    check(abs(float(r["change"]) + 1) < 1e-9, f"regrade {lid}: change {r['change']}")
check(any(r["learner"] == "gone" and "not in this batch" in r["note"] for r in rg), f"regrade lists a learner gone: {rg}")
check("regrade against" in so, "the regrade is summarised")
# usage errors
rc, _, err = run(["grade", "--batch", os.path.join(work, "roster.csv"), "--answer", "x"])
check(rc == 2, f"--batch with --answer: usage error {rc}")
rc, _, err = run(["grade", "--batch", os.path.join(work, "nope.csv")])
check(rc == 2 and "nope.csv" in err, f"missing roster: exit {rc} {err}")
open(os.path.join(work, "nohead.csv"), "w").write("name,file\nx,y\n")
rc, _, err = run(["grade", "--batch", os.path.join(work, "nohead.csv"), "--out", os.path.join(work, "nh")])
check(rc == 1, f"a roster whose rows are all unusable still writes a gradebook: {rc} {err}")
gl.finish("batch")
PY
