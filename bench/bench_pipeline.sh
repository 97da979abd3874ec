#!/bin/bash
# bench_pipeline.sh — the pipeline bubble, faulty against healthy, over N runs.
#
#   bench/bench_pipeline.sh [N] [FAULTLINE]      (default: 5 runs, build/faultline)
#
# Runs scenarios/pipeline-a.json (m = 2) and pipeline-healthy.json (m = 8) on
# 2 ranks N times and prints, per run, each one's bubble as the test reads it
# (tests/tools/tracecheck.py: the idle share of each stage's steps, lower
# quartile over the steps, mean over the stages), the margin between them (the
# test asserts at least 10 points), and the healthy run's GEMM kernels, median
# duration per stage: equal stages run them alike; a stage whose waits take
# its own core (as the polling comm worker did) runs them slower.
set -eu
N=${1:-5}
FL=${2:-build/faultline}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-pipeline.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
for i in $(seq 1 "$N"); do
	for s in pipeline-a pipeline-healthy; do
		"$FL" run "$SRC/scenarios/$s.json" -o "$TMP/run$i" >/dev/null 2>&1 || { echo "run $i: $s failed" >&2; exit 1; }
	done
done
python3 - "$SRC/tests/tools" "$TMP" "$N" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import tracecheck as tc
tmp, n = sys.argv[2], int(sys.argv[3])

def bubble(out, stem):
    rs = tc.ranks(out, stem)
    share = [100 * tc.quantile([b[0] for b in tc.bubble(r)], 0.25) for r in rs]
    return sum(share) / len(share), share, rs

print("| run | faulty m=2 (formula 33.3%) | healthy m=8 (formula 11.1%) | margin | healthy GEMM medians, us (relu / nt / tn), stage 0 : stage 1 |")
print("|---|---|---|---|---|")
margins = []
for i in range(1, n + 1):
    out = "%s/run%d" % (tmp, i)
    fa, fs, _ = bubble(out, "pp-run-a")
    ha, hs, rs = bubble(out, "pp-run-h")
    margins.append(fa - ha)
    gem = []
    for r in rs:
        med = {}
        for e in r.kernels:
            if e["name"].startswith("gemm_"):
                med.setdefault(e["name"], []).append(e["dur"])
        gem.append(" / ".join("%.0f" % tc.median(med.get(k, [0])) for k in ("gemm_relu_kernel", "gemm_nt_kernel", "gemm_tn_kernel")))
    print("| %d | %.1f%% (%s) | %.1f%% (%s) | %.1f | %s |" % (i, fa, ", ".join("%.1f" % v for v in fs), ha,
          ", ".join("%.1f" % v for v in hs), fa - ha, " : ".join(gem)))
print("\nmargin min %.1f, median %.1f, max %.1f points (the test asserts >= 10)"
      % (min(margins), sorted(margins)[len(margins) // 2], max(margins)))
PY
