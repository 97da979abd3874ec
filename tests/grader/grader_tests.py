"""End-to-end tests of `faultline analyze` and `faultline grade`.

usage: grader_tests.py SUITE FAULTLINE_BINARY SOURCE_DIR
suites: analyze, grade_examples, grade_formats, grade_corpus, grade_errors
"""
import json
import os
import random
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradelib as gl  # noqa: E402
from gradelib import check  # noqa: E402

LABS = {"r7-starved": "lab-r7-b", "r8-opstorm": "lab-r8", "r9-hoststall": "lab-r9"}


def grade(binary, truth, answer, fmt="json", extra=(), timeout=30):
    return gl.run(binary, ["grade", "--truth", truth, "--answer", answer, "--format", fmt] + list(extra),
                  timeout=timeout)


# ---- analyze ----

def suite_analyze(binary, src):
    out = gl.regen(binary, src, os.path.join(gl.tmpdir(), "regen"))
    tr = {k: os.path.join(out, v + ".json.gz") for k, v in
          {"healthy": "lab-r7-a", "starved": "lab-r7-b", "opstorm": "lab-r8",
           "hoststall": "lab-r9"}.items()}
    rc, so, err = gl.run(binary, ["analyze", "--json", tr["healthy"], tr["starved"], tr["opstorm"], tr["hoststall"]])
    check(rc == 0, f"analyze --json: rc {rc}: {err}")
    d = json.loads(so)
    check(d["schema"] == "faultline.analysis/1", "analysis schema")
    m = {os.path.basename(t["file"]): t["metrics"] for t in d["traces"]}
    hs = m["lab-r9.json.gz"]
    per = hs["periods"]
    check(per.get("metrics", {}).get("period") == 3 and per["metrics"]["phase"] == 2,
          f"hoststall: metrics period 3 phase 2, got {per.get('metrics')}")
    check(per.get("mystery", {}).get("period") == 2 and per["mystery"]["phase"] == 1,
          f"hoststall: mystery period 2 phase 1, got {per.get('mystery')}")
    check(per["metrics"]["long_steps"] == [2, 5, 8], "hoststall: metrics long in steps 2, 5, 8")
    big = hs["gaps"]["largest"][0]
    check(big["span"] in ("metrics", "mystery") and big["ms"] > 20, f"hoststall: largest gap in a stalled span: {big}")
    check(hs["steps"]["p50_ms"] >= hs["steps"]["median_ms"] - 1e-9, "p50 (upper median) >= true median")
    st = m["lab-r7-b.json.gz"]
    check(st["gaps"]["largest"][0]["span"] == "data_loading", "starved: largest gap in data_loading")
    check(st["gaps"]["share_of_step_time"] > 0.8, "starved: most step time has no op running")
    # every step is long: data_loading is never "long in some steps only", and no
    # span repeats with a period (a single step that a preemption stretched may
    # be reported long, with no period: that is what the trace holds)
    check("data_loading" not in st["periods"], f"starved: data_loading long in every step: {st['periods']}")
    check(not any(p.get("period") for p in st["periods"].values()),
          f"starved: no periodic span: {st['periods']}")
    ops = m["lab-r8.json.gz"]
    per_step_gap = sorted(ops["gaps"]["per_step_ms"])[len(ops["gaps"]["per_step_ms"]) // 2]
    check(per_step_gap < 0.6 * ops["steps"]["p50_ms"], "opstorm: ops fill most of a typical step (busy, not idle)")
    # comparisons against the first trace
    cmp = {os.path.basename(c["trace"]): c for c in d["comparisons"]}
    c = cmp["lab-r7-b.json.gz"]
    check(c["grew_most"]["span"] == "data_loading", f"starved grew most in data_loading: {c['grew_most']}")
    check(c["grew_most"]["factor"] > 20, "data_loading grew by a large factor")
    check(abs(c["step_p50_ratio"] - st["steps"]["p50_ms"] / m["lab-r7-a.json.gz"]["steps"]["p50_ms"]) < 1e-9,
          "step p50 ratio")
    c = cmp["lab-r8.json.gz"]
    check(abs(c["ops_total_ratio"] - ops["ops"]["total"] / m["lab-r7-a.json.gz"]["ops"]["total"]) < 1e-12,
          "op-count ratio")
    check(c["ops_total_ratio"] > 20, f"op storm has many more ops: {c['ops_total_ratio']}")
    c = cmp["lab-r9.json.gz"]
    check(c["grew_most"]["span"] in ("metrics", "mystery"), "hoststall grew in metrics or mystery")
    check(c["spans"]["mystery"]["factor"] is None, "a span absent from the baseline has no factor")
    # the truth holds what the analyzer computes (the same code)
    for name in ("lab-r7-b", "lab-r8", "lab-r9"):
        truth = gl.load(os.path.join(out, name + ".truth.json"))
        check(truth["metrics"] == m[name + ".json.gz"], f"{name}: truth metrics == analyze metrics")
        check("gaps" in truth["baseline"]["metrics"] and "periods" in truth["metrics"], f"{name}: truth has gaps/periods")
    # text
    rc, so, err = gl.run(binary, ["analyze", tr["healthy"], tr["hoststall"], "--top", "3"])
    text = so.decode()
    check(rc == 0 and "period 3, phase 2" in text and "period 2, phase 1" in text, "analyze text names the periods")
    check("compared with" in text and "grew most" in text, "analyze text compares two traces")
    # errors
    rc, _, err = gl.run(binary, ["analyze"])
    check(rc == 2 and "expected one or more trace files" in err, f"analyze without traces: {rc} {err}")
    rc, _, err = gl.run(binary, ["analyze", os.path.join(out, "nope.json.gz")])
    check(rc == 2 and "nope.json.gz" in err, f"analyze of a missing file: {rc} {err}")
    rc, _, err = gl.run(binary, ["analyze", "--top", "0", tr["healthy"]])
    check(rc == 2 and "--top" in err, "analyze --top 0 is a usage error")
    rc, so, _ = gl.run(binary, ["analyze", "--help"])
    check(rc == 0 and b"usage: faultline analyze" in so, "analyze --help")
    bad = os.path.join(out, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": 5}')
    rc, _, err = gl.run(binary, ["analyze", bad])
    check(rc == 2 and "traceEvents" in err, f"analyze of a bad trace: {err}")


# ---- examples: the static ones and answers generated from a fresh regen ----

def suite_grade_examples(binary, src):
    ex = os.path.join(src, "scenarios", "examples")
    manifest = gl.load(os.path.join(ex, "expected.json"))
    for name, want in manifest.items():
        if name.startswith("$"):
            continue
        rc, so, err = grade(binary, os.path.join(ex, want["truth"]), os.path.join(ex, name))
        check(rc == want["exit"], f"{name}: exit {rc}, expected {want['exit']}: {err}")
        d = json.loads(so)
        if want["exit"] == 0:
            check(d["state"] == "graded", f"{name}: graded")
            check(abs(d["score"] - want["score"]) < 1e-9 and d["max_score"] == want["max_score"],
                  f"{name}: score {d['score']}/{d['max_score']}, expected {want['score']}/{want['max_score']}")
        else:
            check(d["state"] == "unparseable" and d["format_errors"], f"{name}: unparseable with format errors")
    kinds = {n.rsplit("-", 1)[1].split(".")[0] for n in manifest if not n.startswith("$")}
    check(kinds == {"right", "partial", "wrong", "malformed"}, f"every example kind present: {kinds}")

    out = gl.regen(binary, src, os.path.join(gl.tmpdir(), "regen"))
    work = gl.tmpdir()
    for scen, lab in LABS.items():
        truth_path = os.path.join(out, lab + ".truth.json")
        truth = gl.load(truth_path)
        rubric = gl.rubric_for(src, truth)
        for variant in ("right", "partial"):
            answer, score = gl.make_answer(truth, rubric, variant)
            path = os.path.join(work, f"{scen}-{variant}" + (".json" if variant == "partial" else ".txt"))
            text = gl.write_answer(path, answer)
            rc, so, err = grade(binary, truth_path, path)
            d = json.loads(so) if rc in (0, 3) else {}
            check(rc == 0, f"{scen} generated {variant}: exit {rc}: {err} {d.get('format_errors')}")
            if rc:
                continue
            full = sum(q["points"] for q in rubric["questions"])
            want = full if variant == "right" else score
            check(abs(d["score"] - want) < 1e-6, f"{scen} generated {variant}: score {d['score']}, expected {want}: "
                  + "; ".join(f"{q['id']}={q['score']} {q['feedback']}" for q in d["questions"]))
            if variant == "partial":
                check(0 < d["score"] < full, f"{scen} generated partial is partial")
                rc, js, _ = grade(binary, truth_path, path, "json")
                echoes = gl.learner_echoes(js, gl.answer_values(path))
                for fmt_name in gl.FORMATS:
                    rc, so, err = grade(binary, truth_path, path, fmt_name)
                    check(rc == 0, f"{scen} partial {fmt_name}: exit {rc}")
                    gl.check_format(fmt_name, so, f"{scen} partial {fmt_name}")
                    gl.check_no_leak(fmt_name, so, truth, rubric, text, f"{scen} generated partial {fmt_name}", echoes)
            rc, so, _ = grade(binary, truth_path, path, "prairielearn")
            pl = json.loads(so)
            check(abs(pl["score"] - round(want / full, 4)) < 1e-9, f"{scen} {variant}: PrairieLearn score {pl['score']}")
    # --fail-under, on the pinned examples
    p = os.path.join(ex, "r7-starved-partial.json")
    t = os.path.join(ex, "truth", "lab-starved.truth.json")
    rc, _, err = grade(binary, t, p, "text", ["--fail-under", "0.5"])
    check(rc == 1 and "below --fail-under" in err, f"--fail-under 0.5 on 45%: exit {rc} {err}")
    rc, _, _ = grade(binary, t, p, "text", ["--fail-under", "0.45"])
    check(rc == 0, f"--fail-under 0.45 on 45%: exit {rc}")


# ---- report formats ----

def suite_grade_formats(binary, src):
    ex = os.path.join(src, "scenarios", "examples")
    manifest = gl.load(os.path.join(ex, "expected.json"))
    work = gl.tmpdir()
    for name, want in manifest.items():
        if name.startswith("$"):
            continue
        truth_path = os.path.join(ex, want["truth"])
        truth = gl.load(truth_path)
        rubric = gl.rubric_for(src, truth)
        with open(os.path.join(ex, name), encoding="utf-8") as f:
            answer_text = f.read()
        state = "graded" if want["exit"] == 0 else "unparseable"
        for fmt_name in gl.FORMATS:
            outdir = os.path.join(work, f"{name}-{fmt_name}")
            os.mkdir(outdir)
            result = os.path.join(outdir, "results.json")
            rc, so, err = grade(binary, truth_path, os.path.join(ex, name), fmt_name, ["--out", result])
            check(rc == want["exit"], f"{name} {fmt_name}: exit {rc}")
            check(so == b"", f"{name} {fmt_name}: --out leaves stdout empty")
            check(os.listdir(outdir) == ["results.json"], f"{name} {fmt_name}: only the result file: {os.listdir(outdir)}")
            with open(result, "rb") as f:
                doc = f.read()
            where = f"{name} {fmt_name}"
            parsed = gl.check_format(fmt_name, doc, where, state)
            if name.endswith(("-wrong.txt", "-partial.json", "-partial.txt")):
                _, js, _ = grade(binary, truth_path, os.path.join(ex, name), "json")
                echoes = gl.learner_echoes(js, gl.answer_values(os.path.join(ex, name)))
                gl.check_no_leak(fmt_name, doc, truth, rubric, answer_text, where, echoes)
            if fmt_name == "gradescope":
                if state == "graded":
                    hidden = [t for t in parsed["tests"] if t["visibility"] == "hidden"]
                    check(len(hidden) == 1 and hidden[0]["max_score"] == 0, f"{where}: instructor notes as a hidden test")
                    check(len(parsed["tests"]) == len(rubric["questions"]) + 1, f"{where}: a test per question")
                else:
                    check(parsed["score"] == 0 and "could not be read" in parsed["output"] and
                          parsed["visibility"] == "visible", f"{where}: score 0 with a visible message")
            if fmt_name == "prairielearn" and state != "graded":
                check(parsed["gradable"] is False and parsed["format_errors"], f"{where}: not gradable")
            if fmt_name == "junit" and state == "graded":
                fails = int(parsed.get("failures"))
                check((fails == 0) == name.endswith("-right.txt") or (fails == 0) == name.endswith("-right.json"),
                      f"{where}: failures {fails}")
                if name.endswith("-wrong.txt"):
                    check(fails == len(rubric["questions"]), f"{where}: every question fails")
    # --reveal shows the key, to instructors only when asked
    t = os.path.join(ex, "truth", "lab-hoststall.truth.json")
    a = os.path.join(ex, "r9-hoststall-wrong.txt")
    rc, so, _ = grade(binary, t, a, "json", ["--reveal"])
    d = json.loads(so)
    check(rc == 0 and all("key" in q and q["key"] for q in d["questions"]), "--reveal: every question has its key")
    check(d["revealed"] is True, "--reveal is recorded")
    rc, so, _ = grade(binary, t, a, "text", ["--reveal"])
    check(b"[key] expected" in so and b"instructor notes:" in so, "--reveal text shows keys and notes")
    rc, so, _ = grade(binary, t, a, "json")
    check(all("key" not in q for q in json.loads(so)["questions"]), "no key without --reveal")
    # PrairieLearn rounds: one third of the points
    rub = {"schema": "faultline.rubric/1", "name": "third", "questions": [
        {"id": "a", "prompt": "a?", "points": 1, "kind": "period", "expected": 3},
        {"id": "b", "prompt": "b?", "points": 1, "kind": "period", "expected": 3},
        {"id": "c", "prompt": "c?", "points": 1, "kind": "period", "expected": 3}]}
    rp = os.path.join(work, "third.rubric.json")
    with open(rp, "w") as f:
        json.dump(rub, f)
    ap = os.path.join(work, "third.txt")
    with open(ap, "w") as f:
        f.write("a: 3\nb: 4\nc: 5\n")
    rc, so, _ = grade(binary, t, ap, "prairielearn", ["--rubric", rp])
    pl = json.loads(so)
    gl.check_prairielearn(pl, "third", True)
    check(pl["score"] == 0.3333, f"PrairieLearn score rounded to 0.3333: {pl['score']}")
    rc, so, _ = grade(binary, t, ap, "gradescope", ["--rubric", rp])
    check(abs(json.loads(so)["score"] - 1) < 1e-9, "gradescope score 1 of 3")
    # Gradescope Markdown: what a learner writes renders as the text it is
    ap = os.path.join(work, "md.txt")
    hostile = "<img src=x onerror=alert(1)> **bold** [link](http://x.test) `code` # h &amp; | t |"
    with open(ap, "w") as f:
        f.write("stall_span: %s\nstep_p50_ms: \"_45_ ms\"\n" % hostile)
    rc, so, _ = grade(binary, t, ap, "gradescope")
    d = json.loads(so)
    gl.check_gradescope(d, "markdown", True)
    outs = [x["output"] for x in d["tests"] if x["visibility"] != "hidden"]
    bare = "".join(re.sub(r"\\[\s\S]", "", o) for o in outs)  # what is left outside the escapes
    check(not set("<>*[]()`#&|_") & set(bare), f"Markdown: no raw HTML, emphasis, link or code outside an escape: {bare[:200]!r}")
    check(any(hostile[:45] in gl.md_text(o) for o in outs) and any("'_45_ ms'" in gl.md_text(o) for o in outs),
          "Markdown: the learner's text reads back as written")
    # JUnit escapes what a learner writes
    ap = os.path.join(work, "xml.txt")
    with open(ap, "w") as f:
        f.write("metrics_analogue: </failure><x a=\"1\"> & ]]> logging\x1b[0m\nstep_p50_ms: \"<45>\"\n")
    for fmt_name in gl.FORMATS:   # graded: the unreadable "<45>" scores 0 and is quoted back, escaped
        rc, so, _ = grade(binary, t, ap, fmt_name)
        gl.check_format(fmt_name, so, f"escaping {fmt_name}", "graded")
    # text is the default format, on stdout
    rc, so, _ = gl.run(binary, ["grade", "--truth", t, "--answer", os.path.join(ex, "r9-hoststall-right.txt")])
    check(rc == 0 and so.startswith(b"R9 - periodic host stall") and b"10 / 10 points" in so, "default text report")


# ---- untrusted input ----

def suite_grade_corpus(binary, src):
    corpus = os.path.join(src, "tests", "grader", "corpus")
    truth = os.path.join(src, "scenarios", "examples", "truth", "lab-hoststall.truth.json")
    work = gl.tmpdir()
    cases = []
    with open(os.path.join(corpus, "EXPECT")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                cases.append((os.path.join(corpus, line[0]), int(line[1]), int(line[2])))
    # generated: too big to keep in the repository
    rnd = random.Random(5)

    def gen(name, data, rc, strict_rc=None):
        p = os.path.join(work, name)
        with open(p, "wb") as f:
            f.write(data)
        cases.append((p, rc, rc if strict_rc is None else strict_rc))
    gen("binary.bin", bytes(rnd.getrandbits(8) for _ in range(4096)), 3)
    gen("big-10mb.txt", b"step_p50_ms: 45 ms\n" + b"x: " + b"y" * (10 << 20) + b"\n", 3)
    gen("long-line.txt", b"metrics_analogue: " + b"logging " * 2000 + b"\n", 0, 3)   # a value too long to read
    gen("deep-nesting.json", b"{\"step_p50_ms\": " + b"[" * 200000 + b"]" * 200000 + b"}", 3)
    gen("deep-nesting-open.json", b"[" * 500000, 3)
    gen("many-keys.txt", b"".join(b"k%d: %d\n" % (i, i) for i in range(5000)), 3)
    gen("huge-list.json", b"{\"mechanisms\": [" + b",".join([b"\"gc_pause\""] * 50000) + b"]}", 0, 3)
    gen("many-items.txt", b"mechanisms: " + b", ".join([b"gc pause"] * 300) + b"\nstep_p50_ms: 45\n", 0)
    gen("regex-food.txt", b"mechanisms: " + b"a" * 4000 + b"!\nmetrics_analogue: " + b"lo" * 2000 + b"\n", 0)
    gen("number-food.txt", b"step_p50_ms: " + b"1" * 150 + b"e99999 ms\nstep_max_ms: " + b"9," * 60 +
        b"999 ms\nmetrics_period: every " + b"hundred " * 20 + b"steps\nmystery_period: " + b"10^" * 50 + b"\n", 0, 3)
    fifo = os.path.join(work, "answer.fifo")
    os.mkfifo(fifo)
    cases.append((fifo, 3, 3))                                # nobody writes: must not hang
    cases.append(("/dev/zero", 3, 3))
    cases.append((work, 3, 3))                                # a directory
    cases.append((os.path.join(work, "missing.txt"), 3, 3))   # absent
    _, help_out, _ = gl.run(binary, ["grade", "--help"])
    has_strict = b"--strict" in help_out
    if not has_strict:
        print("grade_corpus: this binary has no --strict option: the strict exits are not checked", file=sys.stderr)
    # the scores of the corpus answers that are graded although some value cannot be read
    scores = {"learner-forms.txt": (8, {"metrics_period": 1, "mystery_period": 1, "step_p50_ms": 1, "step_max_ms": 1}),
              "one-unreadable.txt": (3, {"step_p50_ms": 0, "mystery_period": 1}),
              "hostile-numbers.txt": (0, {}),
              "nan.txt": (1, {"step_p50_ms": 0})}
    for path, want, want_strict in cases:
        name = os.path.basename(path) or path
        if has_strict:
            rc, so, err = grade(binary, truth, path, "json", ["--strict"], timeout=20)
            check(rc == want_strict, f"corpus {name} --strict: exit {rc}, expected {want_strict}: {err[:300]}")
        if name in scores:
            rc, so, err = grade(binary, truth, path, "json", timeout=20)
            d = json.loads(so)
            total, per_q = scores[name]
            qs = {q["id"]: q for q in d["questions"]}
            check(d["state"] == "graded" and abs(d["score"] - total) < 1e-9,
                  f"corpus {name}: score {d['score']}, expected {total}: " +
                  "; ".join(f"{q['id']}={q['score']} {q['feedback']}" for q in d["questions"]))
            for qid, sc in per_q.items():
                check(abs(qs[qid]["score"] - sc) < 1e-9, f"corpus {name}: {qid} scores {qs[qid]['score']}, expected {sc}")
            for q in d["questions"]:
                if q["outcome"] == "wrong" and "could not read" in q["feedback"]:
                    check("expected " in q["feedback"] and "the others are graded" in q["feedback"],
                          f"corpus {name}: {q['id']}: an unreadable value says what form was expected: {q['feedback']}")
    for path, want, _ in cases:
        name = os.path.basename(path) or path
        res = os.path.join(work, "pl-" + name.replace("/", "_") + ".json")
        rc, so, err = grade(binary, truth, path, "prairielearn", ["--out", res], timeout=20)
        check(rc == want, f"corpus {name}: exit {rc}, expected {want}: {err[:300]}")
        check(os.path.exists(res), f"corpus {name}: a result file is always written")
        if os.path.exists(res):
            with open(res, "rb") as f:
                doc = json.loads(f.read().decode("utf-8"))
            gl.check_prairielearn(doc, f"corpus {name}", gradable=(want == 0))
        if want == 3:
            check(err.startswith("faultline: ") and len(err) < 2000, f"corpus {name}: one clear message: {err[:300]}")
        for fmt_name in ("junit", "gradescope", "json"):
            rc2, so, _ = grade(binary, truth, path, fmt_name, timeout=20)
            gl.check_format(fmt_name, so, f"corpus {name} {fmt_name}", "graded" if want == 0 else "unparseable")


# ---- truth, rubric and usage errors ----

def suite_grade_errors(binary, src):
    ex = os.path.join(src, "scenarios", "examples")
    work = gl.tmpdir()
    truth0 = gl.load(os.path.join(ex, "truth", "lab-hoststall.truth.json"))
    rubric0 = gl.load(os.path.join(src, "scenarios", "r9-hoststall.rubric.json"))
    answer = os.path.join(ex, "r9-hoststall-right.txt")

    def put(name, obj):
        p = os.path.join(work, name)
        with open(p, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return p

    def variant(mutate, base=rubric0):
        r = json.loads(json.dumps(base))
        mutate(r)
        return r

    good_truth = put("lab.truth.json", truth0)
    shutil.copy(os.path.join(src, "scenarios", "r9-hoststall.rubric.json"), work)

    def expect(args, rc_want, needles, label):
        rc, so, err = gl.run(binary, ["grade"] + args)
        check(rc == rc_want, f"{label}: exit {rc}, expected {rc_want}: {err[:300]}")
        for n in needles:
            check(n in err, f"{label}: message lacks '{n}': {err[:300]}")
        return rc, so, err

    def config(truth_path, rubric, needles, label):
        args = ["--truth", truth_path, "--answer", answer]
        if rubric is not None:
            args += ["--rubric", put("r.rubric.json", rubric)]
        expect(args, 4, needles, label)
        res = os.path.join(work, "res.json")
        rc, _, _ = gl.run(binary, ["grade"] + args + ["--format", "prairielearn", "--out", res])
        doc = gl.load(res)
        gl.check_prairielearn(doc, label + " (prairielearn)", gradable=False)
        check(work not in json.dumps(doc), f"{label}: no paths in the learner's result")
        rc, _, _ = gl.run(binary, ["grade"] + args + ["--format", "gradescope", "--out", res])
        gl.check_gradescope(gl.load(res), label + " (gradescope)", graded=False)
        os.unlink(res)

    config(os.path.join(work, "missing.truth.json"), None, ["missing.truth.json"], "missing truth")
    config(put("bad.truth.json", "{oops"), None, ["bad.truth.json", "line 1"], "truth not JSON")
    config(put("s.truth.json", dict(truth0, schema="faultline.truth/2")), None, ["schema", "faultline.truth/1"],
           "truth schema")
    t = json.loads(json.dumps(truth0))
    del t["scenario"]["rubric"]
    config(put("nr.truth.json", t), None, ["nr.truth.json", "scenario.rubric"], "truth names no rubric")
    t["scenario"]["rubric"] = "nope.rubric.json"
    config(put("nf.truth.json", t), None, ["nope.rubric.json", "scenario.rubric"], "named rubric absent")
    t["scenario"]["rubric"] = "../r9-hoststall.rubric.json"
    config(put("up.truth.json", t), None, ["scenario.rubric", "not a file name"], "rubric name with a path")
    config(good_truth, "{\"schema\": ", ["r.rubric.json", "line 1"], "rubric not JSON")
    config(good_truth, variant(lambda r: r.update(colour="blue")), ["r.rubric.json", "colour", "unknown key"],
           "rubric unknown key")
    config(good_truth, variant(lambda r: r["questions"][0].update(colour=1)), ["questions[0].colour", "unknown key"],
           "question unknown key")
    config(good_truth, variant(lambda r: r["questions"][5].update(expected="truth:metrics.steps.p60_ms")),
           ["r.rubric.json", "questions[5].expected", "metrics.steps.p60_ms", "lab.truth.json"], "bad reference")
    config(good_truth, variant(lambda r: r["questions"][0].update(kind="essay")), ["questions[0].kind", "essay"],
           "unknown kind")
    config(good_truth, variant(lambda r: r["questions"][5].update(tiers=[{"rtol": 0.1, "credit": 1.5}])),
           ["questions[5].tiers[0].credit"], "tier credit")
    config(good_truth, variant(lambda r: r["questions"][5].update(expected="truth:faults[0].fault")),
           ["questions[5].expected", "a number"], "expected of the wrong type")
    config(good_truth, variant(lambda r: r.update(schema="faultline.rubric/2")), ["schema", "faultline.rubric/1"],
           "rubric schema")
    config(good_truth, variant(lambda r: r.update(scenarios=["r7-starved"])), ["scenarios", "r9-hoststall"],
           "rubric for another scenario")
    config(good_truth, variant(lambda r: r["questions"][1].update(keys=["period_metrics"])), ["answer key"],
           "answer key used twice")
    config(good_truth, variant(lambda r: r["questions"][2].update(aliases={"gc_pause": ["re:(unclosed"]})),
           ["regular expression"], "bad regular expression")
    config(good_truth, variant(lambda r: r["questions"][5].update(
        expected="ratio(truth:metrics.steps.p50_ms, truth:metrics.spans.data_loading.in_steps[99])")),
        ["questions[5].expected", "out of range"], "index out of range")
    config(good_truth, variant(lambda r: r["questions"][5].update(points=-1)), ["questions[5].points"], "points")
    config(good_truth, variant(lambda r: r["questions"][7].update(need=9)), ["questions[7].need"], "need > concepts")

    # usage errors: exit 2
    expect([], 2, ["--truth"], "no arguments")
    expect(["--truth", good_truth], 2, ["--answer"], "no answer")
    expect(["--truth", good_truth, "--answer", answer, "--format", "xml"], 2, ["xml", "gradescope"], "unknown format")
    expect(["--truth", good_truth, "--answer", answer, "--fail-under", "2"], 2, ["--fail-under"], "fail-under range")
    expect(["--truth", good_truth, "--answer", answer, "--colour"], 2, ["--colour"], "unknown option")
    expect(["--truth", good_truth, "--answer", answer, "--out", os.path.join(work, "no", "dir", "r.json")], 2,
           ["cannot write"], "unwritable --out")
    res = os.path.join(work, "usage.json")
    expect(["--truth", good_truth, "--format", "prairielearn", "--out", res], 2, ["--answer"], "usage with --out")
    check(os.path.exists(res), "a usage error still writes the result file")
    if os.path.exists(res):
        gl.check_prairielearn(gl.load(res), "usage error", gradable=False)
    rc, so, _ = gl.run(binary, ["grade", "--help"])
    check(rc == 0 and b"usage: faultline grade" in so, "grade --help")
    # --exit-zero: PrairieLearn reads the file only after exit 0
    res = os.path.join(work, "ez.json")
    rc, _, err = gl.run(binary, ["grade", "--truth", good_truth, "--answer",
                                 os.path.join(ex, "r9-hoststall-malformed.txt"), "--format", "prairielearn",
                                 "--out", res, "--exit-zero"])
    check(rc == 0 and "could not be read" in err, f"--exit-zero: exit {rc}")
    gl.check_prairielearn(gl.load(res), "--exit-zero", gradable=False)

    # trace: references read the truth's trace (fresh regen), checked against its hash
    out = gl.regen(binary, src, os.path.join(gl.tmpdir(), "regen"))
    tp = os.path.join(out, "lab-r9.truth.json")
    tr_rubric = put("trace.rubric.json", {
        "schema": "faultline.rubric/1", "name": "trace-refs", "questions": [
            {"id": "p50", "prompt": "p50?", "points": 1, "kind": "number", "unit": "ms",
             "expected": "trace:steps.p50_ms"},
            {"id": "period", "prompt": "period?", "points": 1, "kind": "period",
             "expected": "trace:periods.metrics.period"},
            {"id": "gap_span", "prompt": "largest gap?", "points": 1, "kind": "span",
             "expected": "trace:gaps.largest[0].span"}]})
    truth = gl.load(tp)
    ans = put("trace-answer.txt", "p50: %.3f ms\nperiod: 3\ngap_span: %s\n" % (
        truth["metrics"]["steps"]["p50_ms"], truth["metrics"]["gaps"]["largest"][0]["span"]))
    rc, so, err = gl.run(binary, ["grade", "--truth", tp, "--answer", ans, "--rubric", tr_rubric, "--format", "json"])
    check(rc == 0 and json.loads(so)["score"] == 3, f"trace: references: exit {rc} {err} {so[:500]}")
    shutil.copy(os.path.join(out, "lab-r7-b.json.gz"), os.path.join(out, "lab-r9.json.gz"))
    expect(["--truth", tp, "--answer", ans, "--rubric", tr_rubric], 4, ["lab-r9.json.gz", "sha256"],
           "trace does not match the truth")
    os.unlink(os.path.join(out, "lab-r9.json.gz"))
    expect(["--truth", tp, "--answer", ans, "--rubric", tr_rubric], 4, ["lab-r9.json.gz"], "trace missing")


SUITES = {"analyze": suite_analyze, "grade_examples": suite_grade_examples, "grade_formats": suite_grade_formats,
          "grade_corpus": suite_grade_corpus, "grade_errors": suite_grade_errors}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in SUITES:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    SUITES[sys.argv[1]](os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]))
    gl.finish(sys.argv[1])
