#!/usr/bin/env bash
# multirank_scenarios.sh SRC_DIR DEST_DIR — the multi-rank signature test's
# three scenarios, as it runs them, into DEST_DIR: straggler and
# straggler-backward as they are, comm-bound on a slower link than its range.
# comm-bound is written for 4 ranks; a ring all-reduce sends 2(p-1)/p of the
# buffer, 1 on 2 ranks against 1.5 on 4. Its workload is calibrated to a 30 ms
# step, and its compute kernels took 25-35 ms a step on this VM's fast cores,
# 40-50 ms when a core ran at its slow speed (1.8x); at the range's low end of
# 1.5 Gbit/s the 6 gradient buckets (dim 320-384) cross the link in 13-19 ms a
# step on 2 ranks: less than the compute, at either speed. At 0.6 Gbit/s they
# take 33-47 ms, as long as the compute or longer at either speed, and a
# step's compute differing by 10-15% between the ranks moves the per-rank comm
# time by a small share of it. Used by tests/e2e/multirank_signatures.sh and
# bench/bench_speed.sh.
set -euo pipefail
src=${1:?usage: multirank_scenarios.sh SRC_DIR DEST_DIR}
dest=${2:?usage: multirank_scenarios.sh SRC_DIR DEST_DIR}
mkdir -p "$dest"
python3 - "$src/scenarios/comm-bound.json" "$dest/comm-bound.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["faults"][0]["params"]["gbps"] = 0.6
json.dump(d, open(sys.argv[2], "w"))
PY
cp "$src/scenarios/straggler.json" "$src/scenarios/straggler-backward.json" "$dest/"
