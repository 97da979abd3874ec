"""No leak: no fault, family, fix or truth string inside a trace, its file
name or its traceName (noleak()), nor in a scenario's output or rubric names
(names())."""
import json
import os
import re

from tc_common import check, load


def strings(obj, keys, values, key=None):
    if isinstance(obj, dict):
        for k, v in obj.items():
            keys.add(k)
            strings(v, keys, values, k)
    elif isinstance(obj, list):
        for v in obj:
            strings(v, keys, values, key)
    elif isinstance(obj, str):
        values.append((key, obj))


def norm(s):
    return re.sub(r"[\s_\-]", "", s.lower())


KINETO_KEYS = {"rank", "world_size", "backend"}
TRACE_NAME = re.compile(r"^trace-[0-9a-f]{12}(\.rank-\d+)?$")


def leak_words(words):
    """The normalized forms a name must not contain for these fault, family and fix
    names: each whole, each part of 4+ letters, and the 5-letter stem of each part of
    6+ letters ("starv" of input_starvation catches "starved"); and "healthy", the
    answer of a run with no fault (a baseline is named by its handout, not its file)."""
    out = {"healthy"}
    for w in words:
        out.add(norm(w))
        for part in re.split(r"[\s_\-]+", w.lower()):
            if len(part) >= 4:
                out.add(part)
            if len(part) >= 6:
                out.add(part[:5])
    return out


def name_leaks(name, words):
    stem = norm(re.sub(r"(\.rank-\d+)?(\.truth)?\.json(\.gz)?$", "", os.path.basename(name)))
    return sorted(w for w in words if w and w in stem)


def names(faults_txt, *scenarios):
    """Every scenario's output trace and truth names against its own faults'
    names, families and fixes (from `faultline faults`)."""
    catalog, cur = {}, None
    with open(faults_txt) as f:
        for line in f:
            if line and not line[0].isspace() and line.strip():
                cur = line.strip()
            m = re.match(r"\s+family: (\S+)\s+fix: (\S+)", line)
            if m and cur:
                catalog[cur] = (m.group(1), m.group(2))
    check(len(catalog) > 5, "fault catalog read (%d faults)" % len(catalog))
    seen = 0
    for sp in scenarios:
        with open(sp) as f:
            sc = json.load(f)
        if sc.get("schema") != "faultline.scenario/1":
            continue
        seen += 1
        words = set()
        for fl in sc.get("faults", []):
            fam, fix = catalog.get(fl["fault"], ("", ""))
            words |= {fl["fault"], fam, fix}
        words = leak_words(w for w in words if w)
        out = sc.get("output", {})
        for key in ("trace", "truth"):
            nm = out.get(key)
            if nm:
                bad = name_leaks(nm, words)
                check(not bad, "%s: output %s '%s' tells nothing (%s)" % (os.path.basename(sp), key, nm, bad))
        # the rubric's name is in every learner-visible report (the suite of
        # Gradescope, PrairieLearn and JUnit outputs, the text report's title)
        if sc.get("rubric"):
            rp = os.path.join(os.path.dirname(sp), sc["rubric"])
            if os.path.exists(rp):
                with open(rp) as f:
                    rn = json.load(f).get("name", "")
                bad = name_leaks(rn, words)
                check(not bad, "%s: rubric name '%s' tells nothing (%s)" % (os.path.basename(sp), rn, bad))
    check(seen > 0, "%d scenarios checked" % seen)


def noleak(out):
    truths = [f for f in os.listdir(out) if f.endswith(".truth.json")]
    check(len(truths) > 0, "truth files present")
    forbidden_words, param_names, truth_strings = set(), set(), set()
    for tf in truths:
        with open(os.path.join(out, tf)) as f:
            truth = json.load(f)
        truth_strings.add(truth["schema"])
        desc = truth["scenario"].get("description")
        if desc:
            truth_strings.add(desc)
        for fault in truth["faults"]:
            forbidden_words |= {fault["fault"], fault["family"], fault["fix"]}
            param_names |= set(fault["params"])
            for v in fault["params"].values():
                if isinstance(v, str) and v not in ("all",):
                    pass  # span/phase names are meant to be visible (e.g. "metrics", "mystery")
        for key in ("instances", "requested", "measured", "answer_key", "affected_steps"):
            truth_strings.add(key)
    words = leak_words(forbidden_words)
    for fn in sorted(os.listdir(out)):
        if fn.endswith(".json") or fn.endswith(".json.gz"):
            bad = name_leaks(fn, words)
            check(not bad, "%s: the file name tells nothing (%s)" % (fn, bad))
    traces = [f for f in os.listdir(out) if f.endswith(".json.gz") or (f.endswith(".json") and ".truth." not in f)]
    for tr in traces:
        _, doc = load(os.path.join(out, tr))
        keys, values = set(), []
        strings(doc, keys, values)
        # Kineto's own keys (distributedInfo's rank, world_size, backend) are not a leak
        # even where a fault has a parameter of that name (the straggler's "rank")
        leaked_keys = sorted((keys - KINETO_KEYS) & (param_names | forbidden_words | truth_strings))
        check(not leaked_keys, "%s: no parameter, fault or truth name as a key (%s)" % (tr, leaked_keys))
        bad = []
        for k, v in values:
            if k == "traceName":
                check(TRACE_NAME.match(v) is not None, "%s: traceName '%s' is a neutral id (trace-HASH)" % (tr, v))
                continue
            nv = norm(v)
            for w in forbidden_words:
                if norm(w) in nv:
                    bad.append((k, v))
            for s in truth_strings:
                if s in v:
                    bad.append((k, v))
        check(not bad, "%s: no fault, family, fix or truth string in any value (%s)" % (tr, bad[:3]))
