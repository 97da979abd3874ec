#!/usr/bin/env python3
"""perfetto_rows.py TRACE... — what Perfetto's JSON importer needs of each row.

Perfetto builds one slice stack per (pid, tid) row: an X event that starts
inside another on the same row but ends after it (a partial overlap) cannot
be nested and is dropped by the importer, as is an event with a negative
duration. This reader is independent of faultline's (Python's json, times in
whole nanoseconds from the three-decimal µs): for every row of every trace it
checks that the X events nest or follow each other, and that every dur >= 0.
Prints one line per problem (the first 10 per trace) and exits 1 if any.
"""
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def check(path):
    rows = {}
    problems = []
    for e in load(path):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)):
            problems.append("%s: X event '%s' without numeric ts/dur" % (path, e.get("name")))
            continue
        t0, d = round(ts * 1000), round(dur * 1000)
        if d < 0:
            problems.append("%s: '%s' at ts %.3f has a negative dur" % (path, e.get("name"), ts))
            continue
        rows.setdefault((str(e.get("pid")), str(e.get("tid"))), []).append((t0, -d, e.get("name")))
    events = 0
    for row, evs in rows.items():
        evs.sort(key=lambda x: (x[0], x[1]))
        stack = []  # (end, name)
        for t0, negd, name in evs:
            events += 1
            end = t0 - negd
            while stack and stack[-1][0] <= t0:
                stack.pop()
            if stack and end > stack[-1][0]:
                problems.append("%s: row %s/%s: '%s' at %.3f us overlaps '%s' (ends %.3f us) without nesting"
                                % (path, row[0], row[1], name, t0 / 1000, stack[-1][1], stack[-1][0] / 1000))
                continue
            stack.append((end, name))
    return events, len(rows), problems


def main():
    bad = 0
    for path in sys.argv[1:]:
        events, nrows, problems = check(path)
        for p in problems[:10]:
            print("FAIL " + p)
        if len(problems) > 10:
            print("FAIL %s: %d more" % (path, len(problems) - 10))
        if problems:
            bad += 1
        else:
            print("ok   %s: %d X events on %d rows nest" % (path, events, nrows))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
