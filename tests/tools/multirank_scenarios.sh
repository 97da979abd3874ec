#!/usr/bin/env bash
# multirank_scenarios.sh SRC_DIR DEST_DIR — the multi-rank signature test's
# three scenarios, as it runs them, into DEST_DIR: straggler and
# straggler-backward as they are, comm-bound at the low end of its range.
# comm-bound is written for 4 ranks; a ring all-reduce sends 2(p-1)/p of the
# buffer, 1 on 2 ranks against 1.5 on 4, and at its 2 Gbit/s the transfer is
# only ~1.25x the compute of a fast core. 1.5 Gbit/s keeps the run comm-bound
# on a core up to ~1.7x slower (this VM's cores drift that much). Used by
# tests/e2e/multirank_signatures.sh and bench/bench_speed.sh.
set -euo pipefail
src=${1:?usage: multirank_scenarios.sh SRC_DIR DEST_DIR}
dest=${2:?usage: multirank_scenarios.sh SRC_DIR DEST_DIR}
mkdir -p "$dest"
python3 - "$src/scenarios/comm-bound.json" "$dest/comm-bound.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["faults"][0]["params"]["gbps"] = d["faults"][0]["vary"]["gbps"][0]
json.dump(d, open(sys.argv[2], "w"))
PY
cp "$src/scenarios/straggler.json" "$src/scenarios/straggler-backward.json" "$dest/"
