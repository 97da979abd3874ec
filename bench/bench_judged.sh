#!/usr/bin/env bash
# bench_judged.sh — how often is each multi-rank timing check judged, and how
# often does a judged one fail, under the test's own rules?
#
#   bench/bench_judged.sh BUILD_DIR [ROUNDS]     (default: 20 rounds)
#
# Each round runs the multi-rank test's three scenarios exactly as
# tests/e2e/multirank_signatures.sh does (comm-bound at 0.6 Gbit/s, straggler,
# backward straggler; 2 ranks, 12 steps) and reads them with
# `tracecheck.py multirank`, which prints each timing check as ok, FAIL or
# skip (with the reason: ranks that shared a core, cores at unequal speeds).
# Printed: per check, ok / FAIL / skip over the rounds, each FAIL's line, and
# per round the ratio of the two ranks' backward gemm_nt_kernel (lower
# quartile of its durations, rank 1 / rank 0) in comm-bound, the kernel that
# a rank polling MPI beside its compute slowed (BENCHMARKS.md). Run it on a
# quiet machine: it measures the checks, not the machine's load.
set -euo pipefail
build=${1:?usage: bench/bench_judged.sh BUILD_DIR [ROUNDS]}
rounds=${2:-20}
src=$(cd "$(dirname "$0")/.." && pwd)
fl=$(cd "$build" && pwd)/faultline
work=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-judged.XXXXXX")
trap 'rm -rf "$work"' EXIT
bash "$src/tests/tools/multirank_scenarios.sh" "$src" "$work/sc"
for i in $(seq 1 "$rounds"); do
	out="$work/r$i"
	for s in comm-bound straggler straggler-backward; do
		"$fl" run "$work/sc/$s.json" --ranks 2 --steps 12 -o "$out" >/dev/null 2>&1 ||
			{ echo "round $i: $s failed to run" >&2; exit 1; }
	done
	python3 "$src/tests/tools/tracecheck.py" multirank "$out" >"$out/checks.txt" 2>&1 || true
done
python3 - "$work" "$rounds" "$src/tests/tools" <<'PY'
import os, re, sys
work, rounds = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
import tc_common as tc
counts, fails, order, nt = {}, [], [], []
for i in range(1, rounds + 1):
    out = os.path.join(work, "r%d" % i)
    for line in open(os.path.join(out, "checks.txt")):
        m = re.match(r"^(ok|FAIL|skip) +(.*)$", line.rstrip("\n"))
        if not m:
            continue
        # the check's name: its text without what it measured (parentheses,
        # figures), ranks folded together
        name = re.sub(r"\([^()]*(\([^()]*\)[^()]*)*\)", "", m.group(2))
        name = re.sub(r"rank \d+", "rank N", name)
        name = re.sub(r"\d+(\.\d+)?", "#", name)
        name = re.sub(r" +", " ", name).strip()
        if name not in counts:
            counts[name] = {"ok": 0, "FAIL": 0, "skip": 0}
            order.append(name)
        counts[name][m.group(1)] += 1
        if m.group(1) == "FAIL":
            fails.append("round %d: %s" % (i, m.group(2)[:200]))
    rs = tc.ranks(out, "ddp-run-b")
    q = [tc.quantile([e["dur"] for e in r.kernels if e["name"] == "gemm_nt_kernel"], 0.25) for r in rs]
    nt.append(q[1] / q[0])
print("| check | ok | FAIL | skip |")
print("|---|---|---|---|")
for name in order:
    c = counts[name]
    print("| %s | %d | %d | %d |" % (name, c["ok"], c["FAIL"], c["skip"]))
print()
for f in fails:
    print("FAIL " + f)
nt.sort()
print("comm-bound gemm_nt_kernel, rank 1 / rank 0 (lower quartile), over %d rounds: min %.2f, median %.2f, max %.2f;"
      " outside 0.87-1.15: %d" % (len(nt), nt[0], nt[len(nt) // 2], nt[-1], sum(1 for x in nt if not 0.87 <= x <= 1.15)))
PY
