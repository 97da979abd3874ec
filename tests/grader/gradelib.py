"""Helpers for the grader's end-to-end tests: run the binary, resolve rubric
references independently of the C code, generate answers from a truth, and
check the platform report formats against their documented fields."""
import json
import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

FAILURES = []


def check(cond, msg):
    if not cond:
        FAILURES.append(msg)
        print("FAIL:", msg, file=sys.stderr)
    return cond


def finish(name):
    if FAILURES:
        print(f"{name}: {len(FAILURES)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print(f"{name}: ok")
    sys.exit(0)


def run(binary, args, timeout=30, cwd=None):
    """Run faultline; returns (rc, stdout bytes, stderr text). A timeout or a
    signal is a failure of its own."""
    try:
        p = subprocess.run([binary] + list(args), capture_output=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        check(False, f"timeout ({timeout}s): faultline {' '.join(args)}")
        return 124, b"", "timeout"
    check(p.returncode >= 0 and p.returncode < 128, f"crashed (rc {p.returncode}): faultline {' '.join(args)}")
    err = p.stderr.decode("utf-8", "replace")
    check("runtime error:" not in err and "AddressSanitizer" not in err and "LeakSanitizer" not in err,
          f"sanitizer report: faultline {' '.join(args)}: {err[:500]}")
    return p.returncode, p.stdout, err


def regen(binary, src, out):
    rc, _, err = run(binary, ["regen", "-o", out], timeout=300, cwd=src)
    if not check(rc == 0, f"regen failed: {err[:500]}"):
        finish("regen")
    return out


# ---- references (an independent reading of docs/grading.md) ----

def path_get(root, path):
    cur = root
    for m in re.finditer(r'\[\s*"([^"]*)"\s*\]|\[([^\]]*)\]|\.?([^.\[\]]+)', path):
        quoted, bracket, name = m.groups()
        if quoted is not None:
            cur = cur[quoted]
        elif bracket is not None:
            if "=" in bracket:
                k, v = bracket.split("=", 1)
                cur = next(e for e in cur if isinstance(e, dict) and str(e.get(k)) == v)
            elif re.fullmatch(r"-?\d+", bracket):
                cur = cur[int(bracket)]
            else:
                cur = cur[bracket]
        else:
            cur = cur[name]
    return cur


def split_args(s):
    depth, cur, out = 0, "", []
    for ch in s:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch in "(["
        depth -= ch in ")]"
        cur += ch
    out.append(cur)
    return [a.strip() for a in out if a.strip()]


def resolve(truth, expr):
    expr = expr.strip()
    if expr.startswith("truth:"):
        return path_get(truth, expr[6:])
    m = re.fullmatch(r"([a-z_]+)\((.*)\)", expr, re.S)
    if m:
        f, args = m.group(1), [resolve(truth, a) for a in split_args(m.group(2))]
        if any(isinstance(a, str) and a.startswith(("trace:", "fleet:")) for a in args):
            return expr  # computed at grade time from the traces: not known here
        flat = args[0] if len(args) == 1 and isinstance(args[0], list) else args
        return {"ratio": lambda: args[0] / args[1], "diff": lambda: args[0] - args[1],
                "mul": lambda: args[0] * args[1], "abs": lambda: abs(args[0]),
                "count": lambda: len(args[0]), "sum": lambda: sum(flat),
                "mean": lambda: sum(flat) / len(flat), "min": lambda: min(flat), "max": lambda: max(flat)}[f]()
    try:
        return float(expr)
    except ValueError:
        return expr


def expected_values(truth, q):
    spec = q.get("expected")
    if spec is None:
        return []
    specs = spec if isinstance(spec, list) else [spec]
    out = []
    for s in specs:
        v = resolve(truth, s) if isinstance(s, str) else s
        out.extend(v if isinstance(v, list) else [v])
    return out


DEFAULT_TIERS = {"number": [{"rtol": 0.10, "credit": 1}, {"rtol": 0.25, "credit": 0.5}],
                 "ratio": [{"tol": 0.10, "credit": 1}, {"tol": 0.25, "credit": 0.5}],
                 "integer": [{"atol": 0, "credit": 1}], "period": [{"atol": 0, "credit": 1}]}


def tiers_of(q):
    return q.get("tiers", DEFAULT_TIERS.get(q["kind"], []))


def credit_for(q, s, targets):
    best = 0.0
    for t in targets:
        for tr in tiers_of(q):
            if q["kind"] == "ratio":
                tol = tr["tol"]
                ok = s > 0 and t / (1 + tol) * (1 - 1e-12) <= s <= t * (1 + tol) * (1 + 1e-12)
            else:
                ok = abs(s - t) <= tr.get("atol", 0) + tr.get("rtol", 0) * abs(t) + 1e-12 * abs(t)
            if ok:
                best = max(best, tr["credit"])
    return best


# ---- answers generated from a truth ----

def fmt(v):
    return f"{v:.6g}"


def number_answer(q, value, i):
    unit = q.get("unit", "")
    if unit == "ms":
        if i % 2:
            return f"{fmt(value * 1000)} us", float(fmt(value * 1000)) / 1000
        return f"{fmt(value)} ms", float(fmt(value))
    if unit == "fraction":
        return f"{fmt(value * 100)}%", float(fmt(value * 100)) / 100
    if unit == "count":
        return f"{value:,.0f} ops", float(round(value))
    return fmt(value), float(fmt(value))


def make_answer(truth, rubric, variant):
    """An answer dict for `right` (full credit by construction) or `partial`
    (second tiers, one of two set items, ...), and the score it must get."""
    answer, score = {}, 0.0
    for i, q in enumerate(rubric["questions"]):
        kind, pts = q["kind"], q["points"]
        exp = expected_values(truth, q)
        key = q["id"] if i % 2 == 0 or not q.get("keys") else q["keys"][0]
        if kind in ("number", "ratio"):
            t = exp[0]
            tiers = sorted(tiers_of(q), key=lambda tr: -tr["credit"])
            def width(tr):
                return tr["tol"] if kind == "ratio" else tr.get("atol", 0) + tr.get("rtol", 0) * abs(t)
            full = width(tiers[0])
            sign = -1 if q.get("unit") == "fraction" and t > 0.5 else 1  # a share stays below 100%
            if variant == "right" or len(tiers) < 2:
                target = t * (1 + full / 2) if kind == "ratio" else t + sign * full / 2
            else:
                second = width(tiers[1])
                target = t * (1 + (full + second) / 2) if kind == "ratio" else t + sign * (full + second) / 2
            if kind == "ratio":
                text, val = f"{fmt(target)}x", float(fmt(target))
            else:
                text, val = number_answer(q, target, i)
            answer[key] = text
            score += pts * credit_for(q, val, exp)
        elif kind in ("integer", "period"):
            t = int(exp[0])
            answer[key] = f"every {t} steps" if variant == "right" else str(t + 1)
            score += pts if variant == "right" else 0
        elif kind in ("choice", "span"):
            t = exp[0]
            if variant == "right":
                answer[key] = t.replace("_", " ").capitalize()
                score += pts
            else:
                other = {"families": "straggler", "fixes": "rebalance", "yesno": "yes" if t == "no" else "no"}
                answer[key] = other.get(q.get("vocabulary"), "ProfilerStep")
        elif kind == "set":
            items = [e.replace("_", " ") for e in exp]
            if variant == "right":
                answer[key] = " and ".join(items)
                score += pts
            else:
                answer[key] = [exp[0]]
                score += pts * (1 / len(exp))
        elif kind == "text":
            names = [c["name"] for c in q["concepts"]]
            need = q.get("need", len(names))
            if variant == "right":
                answer[key] = "it is " + " with ".join(names[:need])
                score += pts
            else:
                answer[key] = "it is " + names[0] if need > 1 else "no idea"
                score += pts * (1 / need if need > 1 else 0)
    return answer, round(score, 6)


# ---- report formats ----

GS_TOP = {"score", "execution_time", "output", "output_format", "visibility", "stdout_visibility", "tests",
          "extra_data", "leaderboard"}
GS_TEST = {"name", "number", "score", "max_score", "status", "output", "tags", "visibility", "name_format",
           "output_format", "extra_data"}
VISIBILITY = {"visible", "hidden", "after_due_date", "after_published"}


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


MD_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def md_text(s):
    """The text a CommonMark renderer shows for faultline's Markdown: a
    backslash before ASCII punctuation or a line end is dropped."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and (s[i + 1] in MD_PUNCT or s[i + 1] == "\n"):
            i += 1
        out.append(s[i])
        i += 1
    return "".join(out)


def check_markdown(s, where):
    """Every ASCII punctuation character of faultline's Markdown is
    backslash-escaped (so learner text opens no emphasis, link, image, code or
    raw HTML); a backslash only escapes punctuation or ends a line."""
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if not check(i + 1 < len(s) and (s[i + 1] in MD_PUNCT or s[i + 1] == "\n"),
                         f"{where}: a lone backslash in Markdown at {i}: {s[max(0, i - 20):i + 20]!r}"):
                return
            i += 2
            continue
        if not check(c not in MD_PUNCT, f"{where}: unescaped Markdown character {c!r} at {i}: {s[max(0, i - 20):i + 20]!r}"):
            return
        i += 1


def check_gradescope(doc, where, graded=True):
    check(set(doc) <= GS_TOP, f"{where}: unknown top-level keys {set(doc) - GS_TOP}")
    check(is_num(doc.get("score")), f"{where}: score must be a number")
    check(is_num(doc.get("execution_time")), f"{where}: execution_time must be a number")
    check(isinstance(doc.get("output"), str) and doc["output"], f"{where}: output must be a non-empty string")
    check(doc.get("output_format") == "md", f"{where}: output_format md")
    check_markdown(doc.get("output") or "", f"{where}: output")
    check(doc.get("visibility") in VISIBILITY, f"{where}: visibility")
    check(doc.get("stdout_visibility") in VISIBILITY, f"{where}: stdout_visibility")
    tests = doc.get("tests", [])
    check(isinstance(tests, list), f"{where}: tests must be a list")
    total = 0
    for t in tests:
        check(set(t) <= GS_TEST, f"{where}: unknown test keys {set(t) - GS_TEST}")
        check(isinstance(t.get("name"), str) and t["name"], f"{where}: test name")
        check(isinstance(t.get("number"), str), f"{where}: test number must be a string")
        check(is_num(t.get("score")) and is_num(t.get("max_score")), f"{where}: test score/max_score")
        check(0 <= t["score"] <= t["max_score"] + 1e-9, f"{where}: test score within [0, max_score]")
        check(t.get("status") in {"passed", "failed"}, f"{where}: test status")
        check(isinstance(t.get("output"), str), f"{where}: test output")
        check(isinstance(t.get("tags"), list) and all(isinstance(x, str) for x in t["tags"]), f"{where}: tags")
        check(t.get("visibility") in VISIBILITY, f"{where}: test visibility")
        if t.get("visibility") != "hidden":
            check(t.get("output_format") == "md", f"{where}: a learner's test output is Markdown")
        if t.get("output_format") == "md":
            check_markdown(t["output"], f"{where}: test {t.get('number')}")
        total += t["score"]
    if graded:
        check(abs(total - doc["score"]) < 1e-6, f"{where}: tests sum {total} != score {doc['score']}")
    else:
        check(doc["score"] == 0, f"{where}: an ungraded submission scores 0")


PL_TOP = {"succeeded", "gradable", "score", "message", "output", "format_errors", "tests", "images", "partial_scores"}
PL_TEST = {"name", "description", "points", "max_points", "message", "output", "images"}


def check_prairielearn(doc, where, gradable=True):
    check(set(doc) <= PL_TOP, f"{where}: unknown keys {set(doc) - PL_TOP}")
    check(doc.get("gradable") is gradable, f"{where}: gradable must be {gradable}")
    s = doc.get("score")
    check(is_num(s) and 0 <= s <= 1, f"{where}: score {s} must be in [0, 1]")
    check(is_num(s) and round(s, 4) == s, f"{where}: score {s} must be rounded")
    check(isinstance(doc.get("message"), str), f"{where}: message")
    check(isinstance(doc.get("output"), str), f"{where}: output")
    fe = doc.get("format_errors", [])
    check(isinstance(fe, list) and all(isinstance(x, str) for x in fe), f"{where}: format_errors strings")
    if not gradable:
        check(len(fe) > 0, f"{where}: an ungradable result says why in format_errors")
        check(s == 0, f"{where}: an ungradable result scores 0")
    for t in doc.get("tests", []):
        check(set(t) <= PL_TEST, f"{where}: unknown test keys {set(t) - PL_TEST}")
        check(isinstance(t.get("name"), str) and t["name"], f"{where}: test name")
        check(is_num(t.get("points")) and is_num(t.get("max_points")) and 0 <= t["points"] <= t["max_points"],
              f"{where}: test points")
        for k in ("description", "message", "output"):
            check(isinstance(t.get(k), str), f"{where}: test {k}")


def check_junit(text, where):
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        check(False, f"{where}: JUnit XML does not parse: {e}")
        return None
    check(root.tag == "testsuites", f"{where}: root is <testsuites>")
    all_cases = 0
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        failures = sum(1 for c in cases if c.find("failure") is not None)
        errors = sum(1 for c in cases if c.find("error") is not None)
        check(int(suite.get("tests")) == len(cases), f"{where}: suite tests= matches")
        check(int(suite.get("failures")) == failures, f"{where}: suite failures= matches")
        check(int(suite.get("errors")) == errors, f"{where}: suite errors= matches")
        for c in cases:
            for a in ("name", "classname", "time"):
                check(c.get(a) is not None, f"{where}: testcase has {a}")
            bad = [x for x in c if x.tag in ("failure", "error")]
            if bad:
                check(list(c)[0] is bad[0], f"{where}: <failure>/<error> is the first child")
        all_cases += len(cases)
    check(int(root.get("tests")) == all_cases, f"{where}: testsuites tests= matches")
    return root


def learner_strings(fmt_name, out, echoed_read_as=None):
    """The learner-visible strings of a report, per question where the format
    has questions: (global strings, [per-question strings]). `echoed_read_as`
    ({question id: read_as}) leaves out the JSON `read_as` fields that only
    read back what the learner wrote."""
    if fmt_name == "text":
        text = out.decode()
        parts = re.split(r"\n(?=\d+\. )", text)
        return [parts[0]], parts[1:]
    if fmt_name == "json":
        d = json.loads(out)
        g = [d.get("state", ""), " ".join(d["format_errors"]), " ".join(d["ignored_keys"])]
        echoed = echoed_read_as or {}
        return g, [" ".join([q["prompt"], q["feedback"],
                             "" if echoed.get(q["id"]) == q.get("read_as") else q.get("read_as") or ""])
                   for q in d["questions"]]
    if fmt_name == "gradescope":
        d = json.loads(out)
        tests = [t for t in d["tests"] if t["visibility"] != "hidden"]
        # Markdown outputs are read back as the text they render (escapes
        # undone), so the checks below see what the learner sees
        top = md_text(d["output"]) if d.get("output_format") == "md" else d["output"]
        return [top], [t["name"] + " " + (md_text(t["output"]) if t.get("output_format") == "md" else t["output"])
                       for t in tests]
    if fmt_name == "prairielearn":
        d = json.loads(out)
        return [d["message"], d["output"], " ".join(d["format_errors"])], \
               [" ".join([t["name"], t["description"], t["message"], t["output"]]) for t in d.get("tests", [])]
    if fmt_name == "junit":
        root = ET.fromstring(out)
        cases = root.findall(".//testcase")
        def text_of(c):
            return " ".join([c.get("name", "")] + [(x.text or "") + " " + " ".join(x.attrib.values()) for x in c.iter()])
        return [], [text_of(c) for c in cases]
    raise ValueError(fmt_name)


def number_forms(v):
    forms = {f"{v:.1f}", f"{v:.2f}", f"{v:.3f}", f"{v:.4f}", f"{v:.3g}", f"{v:.4g}", f"{v:.6g}", f"{v:.10g}",
             repr(float(v))}
    # short forms ("0.5", "2.0", "12") would match too much unrelated text
    return {f for f in forms if len(f.replace(".", "").replace("-", "").lstrip("0")) >= 3}


def answer_values(path):
    """{answer key as written: value text} of an answer file, read the way
    answer.c reads it (JSON object, or `key: value` lines with # comments)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().lstrip("\ufeff")
    if text.lstrip().startswith("{"):
        d = json.loads(text)
        out = {}
        for k, v in d.items():
            if isinstance(v, bool):
                out[k] = "yes" if v else "no"
            elif isinstance(v, list):
                out[k] = ", ".join(str(x) for x in v)
            elif v is not None:
                out[k] = str(v)
        return out
    out = {}
    for line in text.split("\n"):
        line = re.split(r"[ \t]#", line.strip(), 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([^:=]*)[:=](.*)", line)
        if m:
            v = m.group(2).strip()
            if len(v) >= 2 and v[0] in "\"'" and v[-1] == v[0]:
                v = v[1:-1]
            out[m.group(1).strip()] = v
    return out


def learner_echoes(json_report, values):
    """The exact pieces of a report that only repeat what the learner wrote:
    per answered question, "'<their text>' as <what it was read as>" and
    "'<their text>'" (quoted as the grader quotes it: at most 60 bytes)."""
    d = json.loads(json_report)
    echoes, read_as = [], {}
    for q in d["questions"]:
        key = q.get("answer_key")
        if key is None or key not in values:
            continue
        v = values[key]
        shown = v if len(v.encode()) <= 60 else v.encode()[:60].decode("utf-8", "ignore") + "..."
        if q.get("read_as"):
            echoes.append(f"'{shown}' as {q['read_as']}")
            read_as[q["id"]] = q["read_as"]
        echoes.append(f"'{shown}'")
    return {"cut": sorted(set(echoes), key=len, reverse=True), "read_as": read_as}


def check_no_leak(fmt_name, out, truth, rubric, answer_text, where, echoes=None):
    """No expected value, tolerance or alias list in the learner-visible text of
    a report. `echoes` (learner_echoes) are cut out first: a learner's own
    number quoted or read back is no leak, even when it rounds to the key."""
    echoes = echoes or {"cut": [], "read_as": {}}
    glob, per_q = learner_strings(fmt_name, out, echoes["read_as"])

    def cut(s):
        for e in echoes["cut"]:
            s = s.replace(e, "''")
        return s
    glob, per_q = [cut(s) for s in glob], [cut(s) for s in per_q]
    everything = "\n".join(glob + per_q)
    for marker in ("[key]", "rtol", "atol", "credit within", "instructor notes"):
        check(marker not in everything, f"{where}: learner-visible text holds '{marker}'")
    for i, q in enumerate(rubric["questions"]):
        exp = expected_values(truth, q)
        for v in exp:
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                for f in number_forms(v):
                    check(f not in everything, f"{where}: {q['id']}: expected value {f} is visible")
        qtext = per_q[i] if i < len(per_q) else ""
        said = answer_text.lower()
        for v in exp:
            if not isinstance(v, str):
                continue
            forms = {v, v.replace("_", " ")}
            # what the learner wrote, and what the prompt says, are no leak
            if any(f.lower() in said for f in forms) or any(f.lower() in q["prompt"].lower() for f in forms):
                continue
            for f in forms:
                if re.search(r"(?<![A-Za-z_])" + re.escape(f) + r"(?![A-Za-z_])", qtext):
                    check(False, f"{where}: {q['id']}: expected '{f}' is visible")
        for c in q.get("concepts", []):
            for a in c.get("aliases", []):
                if len(a) >= 4 and a.lower() not in answer_text.lower():
                    check(not re.search(r"\b" + re.escape(a) + r"\b", qtext, re.I),
                          f"{where}: {q['id']}: concept alias '{a}' is visible")


FORMATS = ["text", "json", "gradescope", "prairielearn", "junit"]


def check_format(fmt_name, out, where, state="graded"):
    """Validate a report of any format; returns the parsed document."""
    if fmt_name == "gradescope":
        d = json.loads(out)
        check_gradescope(d, where, graded=state == "graded")
        return d
    if fmt_name == "prairielearn":
        d = json.loads(out)
        check_prairielearn(d, where, gradable=state == "graded")
        return d
    if fmt_name == "junit":
        return check_junit(out, where)
    if fmt_name == "json":
        d = json.loads(out)
        check(d.get("schema") == "faultline.grade/1", f"{where}: schema")
        check(d.get("state") == state, f"{where}: state {d.get('state')} != {state}")
        return d
    out.decode("utf-8")
    return out


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_answer(path, answer):
    """JSON for dict answers with lists, key: value lines otherwise."""
    if any(isinstance(v, list) for v in answer.values()) or path.endswith(".json"):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(answer, f)
    else:
        with open(path, "w", encoding="utf-8") as f:
            for k, v in answer.items():
                f.write(f"{k}: {v}\n")
    with open(path, encoding="utf-8") as f:
        return f.read()


_TMPDIRS = []


def _cleanup():
    import shutil
    if os.environ.get("FL_KEEP_TMP"):
        print("kept:", " ".join(_TMPDIRS), file=sys.stderr)
        return
    for d in _TMPDIRS:
        shutil.rmtree(d, ignore_errors=True)


def tmpdir():
    """A temporary directory, removed at exit (kept when FL_KEEP_TMP is set)."""
    import atexit
    import tempfile
    if not _TMPDIRS:
        atexit.register(_cleanup)
    d = tempfile.mkdtemp(prefix="fl-grader-test-")
    _TMPDIRS.append(d)
    return d


def rubric_for(src, truth):
    """The rubric the truth names, in scenarios/ or a folder of it (scenarios/emu/), as the grader looks."""
    name, base = truth["scenario"]["rubric"], os.path.join(src, "scenarios")
    for d in [base] + sorted(os.path.join(base, s) for s in os.listdir(base) if os.path.isdir(os.path.join(base, s))):
        if os.path.exists(os.path.join(d, name)):
            return load(os.path.join(d, name))
    return load(os.path.join(base, name))
