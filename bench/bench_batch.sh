#!/bin/bash
# bench_batch.sh — answers per minute of one `faultline grade --batch` process.
#
# Generates N answer files from the example answers of scenarios/examples (the
# right, partial, wrong, unreadable and malformed ones of R7-R9), each varied:
# its numbers scaled by a factor drawn per learner (so the scores spread over
# the tiers) and its lines in a different order. The roster sends each answer
# to its pinned truth. Then grades the batch in every report format, and once
# with a report format whose files are the largest (gradescope) and
# --previous (the regrade of the first run's gradebook), and once with a truth
# of its own for every learner (copies of the pinned truths, as `assign` gives:
# each truth is prepared once, for one answer). Target: >= 50,000 answers per
# minute (833 per second).
#
# usage: bench/bench_batch.sh [FAULTLINE_BINARY] [N]   (default build/faultline, 20000)
# Exit 1 when a run is below the target.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/faultline}
n=${2:-20000}
[ -x "$bin" ] || { echo "bench_batch: no faultline binary at '$bin'" >&2; exit 2; }
ex=$here/scenarios/examples
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/answers"

# N varied answers and their roster (python3 only writes the inputs)
python3 - "$ex" "$work" "$n" <<'EOF'
import os, random, re, sys
ex, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
truth = {"r7": "lab-starved", "r8": "lab-opstorm", "r9": "lab-hoststall"}
src = sorted(f for f in os.listdir(ex) if re.match(r"r[789]-.*\.(txt|json)$", f))
texts = {f: open(os.path.join(ex, f)).read() for f in src}
rnd = random.Random(14)
num = re.compile(r"(?<![\w.])(\d+\.?\d*)(?![\w.])")
with open(os.path.join(work, "roster.csv"), "w") as r:
    r.write("learner,answer,truth\n")
    for i in range(n):
        f = src[i % len(src)]
        t = texts[f]
        if not f.endswith(".json"):
            scale = rnd.choice([1, 1, 1, 0.95, 1.05, 1.2, 0.8, 1.5])
            t = num.sub(lambda m: ("%g" % (float(m.group(1)) * scale)), t)
            lines = t.splitlines()
            rnd.shuffle(lines)
            t = "\n".join(lines) + "\n"
        ext = f.rsplit(".", 1)[1]
        name = "l%06d.%s" % (i, ext)
        open(os.path.join(work, "answers", name), "w").write(t)
        r.write("l%06d,answers/%s,%s/truth/%s.truth.json\n" % (i, name, ex, truth[f[:2]]))
# every learner a truth of their own (at most 5000 of them)
os.makedirs(os.path.join(work, "truths"))
m = min(n, 5000)
with open(os.path.join(work, "roster-own.csv"), "w") as r:
    r.write("learner,answer,truth\n")
    for i in range(m):
        f = src[i % len(src)]
        data = open(os.path.join(ex, "truth", truth[f[:2]] + ".truth.json")).read()
        open(os.path.join(work, "truths", "l%06d.truth.json" % i), "w").write(data)
        r.write("l%06d,answers/l%06d.%s,truths/l%06d.truth.json\n" % (i, i, f.rsplit(".", 1)[1], i))
EOF
# the copied truths find the rubric they name in --scenarios
own=$(( n < 5000 ? n : 5000 ))

fail=0
run() { # LABEL ROSTER COUNT ARGS...
	local label=$1 roster=$2 n=$3
	shift 3
	local t0=$EPOCHREALTIME
	"$bin" grade --batch "$work/$roster" "$@" >"$work/stdout" 2>"$work/stderr" || [ $? -eq 1 ]
	local t1=$EPOCHREALTIME
	local us=$(( ${t1/[.,]/} - ${t0/[.,]/} ))
	local per_min=$(( n * 60000000 / us ))
	printf '%-44s %7d answers %8.2f s %10d answers/min\n' "$label" "$n" "$(echo "$us" | awk '{print $1 / 1e6}')" "$per_min"
	[ "$per_min" -ge 50000 ] || fail=1
}
printf '%-44s %15s %10s %16s\n' "run (report format)" answers wall rate
for fmt in json text gradescope prairielearn junit; do
	run "--format $fmt" roster.csv "$n" --out "$work/out-$fmt" --format "$fmt"
done
run "--format gradescope --previous (regrade)" roster.csv "$n" --out "$work/out-regrade" --format gradescope \
	--previous "$work/out-json/gradebook.csv"
run "--format json, a truth per learner" roster-own.csv "$own" --out "$work/out-own" --format json \
	--scenarios "$here/scenarios"
grep -E "^(learners|score)" "$work/out-json/summary.txt"
grep -E "truths prepared" "$work/out-own/summary.txt"
tail -1 "$work/out-regrade/summary.txt" >/dev/null
grep -E "^regrade" "$work/out-regrade/summary.txt" || true
exit $fail
