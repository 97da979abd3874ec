#!/usr/bin/env bash
# bench_fleet.sh — fleet analyze against pandas, and the fidelity of the
# simulated fleets' MTBF.
#
#   bench/bench_fleet.sh BUILD_DIR [speed|fidelity|all] [SEEDS]   (default all, 100 seeds)
#
# speed: simulates bench/fleet-880k.json (about 880,000 jobs, AcmeTrace's
#   count; a SIMULATED log in AcmeTrace's Kalos schema, ~135 MB, plus its XID
#   file), then measures, each in its own process, wall time and peak RSS (GNU
#   time) of `faultline fleet analyze` (jobs + XID, JSON out; 5 runs) and of
#   pandas read_csv + the same group-bys (bench/fleet_pandas.py; 3 runs), and
#   checks that both computed the same numbers. pandas comes from FL_PANDAS_PY
#   (a python with pandas; default: python3), its rows are skipped without it.
# fidelity: generates scenarios/fleet/r2-fleet.json for seeds 1..SEEDS and
#   counts the seeds in which the injected per-GPU MTBF lies inside the 95%
#   interval `fleet analyze` printed for the generated log (the truth's
#   metrics are that same analysis; the count is recomputed here from the
#   analyze JSON of each log).
set -u
BUILD=${1:?usage: bench_fleet.sh BUILD_DIR [speed|fidelity|all] [SEEDS]}
WHAT=${2:-all}
SEEDS=${3:-100}
SRC=$(cd "$(dirname "$0")/.." && pwd)
FL=$BUILD/faultline
PY=${FL_PANDAS_PY:-python3}
TIME=/usr/bin/time
if [ ! -x "$TIME" ]; then echo "bench_fleet.sh: needs GNU time (apt-get install time)" >&2; exit 2; fi
W=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-fleet.XXXXXX")
trap 'rm -rf "$W"' EXIT

measure() { # LABEL RUNS CMD...: best and median wall, max RSS
	local label=$1 runs=$2
	shift 2
	: > "$W/times"
	for _ in $(seq "$runs"); do
		"$TIME" -f "%e %M" -o "$W/t1" "$@" > "$W/out" 2> "$W/err" || { cat "$W/err" >&2; return 1; }
		cat "$W/t1" >> "$W/times"
	done
	sort -n "$W/times" | awk -v l="$label" '{w[NR]=$1; if ($2>m) m=$2} END {printf "%-44s best %.2f s  median %.2f s  peak RSS %.1f MB  (%d runs)\n", l, w[1], w[int((NR+1)/2)], m/1024, NR}'
}

if [ "$WHAT" = speed ] || [ "$WHAT" = all ]; then
	"$FL" fleet generate "$SRC/bench/fleet-880k.json" -o "$W/big" > "$W/gen.txt" || exit 1
	head -1 "$W/gen.txt"
	rows=$(($(wc -l < "$W/big/trace_kalos.csv") - 1))
	echo "input: $rows job rows, $(du -m "$W/big/trace_kalos.csv" | cut -f1) MB jobs CSV + $(du -m "$W/big/XID_ERRORS.csv" | cut -f1) MB XID CSV"
	measure "faultline fleet analyze (jobs + XID, JSON)" 5 "$FL" fleet analyze "$W/big/trace_kalos.csv" \
		--xid "$W/big/XID_ERRORS.csv" --json
	cp "$W/out" "$W/fl.json"
	measure "faultline fleet analyze (jobs, text)" 5 "$FL" fleet analyze "$W/big/trace_kalos.csv"
	if "$PY" -c 'import pandas' 2>/dev/null; then
		measure "pandas $("$PY" -c 'import pandas; print(pandas.__version__)') read_csv + group-bys" 3 \
			"$PY" "$SRC/bench/fleet_pandas.py" "$W/big/trace_kalos.csv" 256
		cp "$W/out" "$W/pd.json"
		"$PY" - "$W/fl.json" "$W/pd.json" <<'PYEOF' || exit 1
import json, sys
fl, pd = (json.load(open(p)) for p in sys.argv[1:3])
bad = []
def close(a, b, rel=1e-9, what=""):
    if abs(a - b) > rel * max(1.0, abs(a), abs(b)):
        bad.append(f"{what}: faultline {a} pandas {b}")
close(fl["jobs"]["count"], pd["jobs"], what="jobs")
close(fl["jobs"]["gpu_hours"], pd["gpu_hours"], what="gpu_hours")
for m in fl["mix"]:
    close(m["jobs"], pd["mix"][m["bucket"]][0], what="mix jobs " + m["bucket"])
    close(m["gpu_hours"], pd["mix"][m["bucket"]][1], what="mix gpu_hours " + m["bucket"])
for s in fl["states_by_scale"]:
    for st, v in s.items():
        if st == "bucket" or v["jobs"] == 0:
            continue
        ref = pd["states"].get(f"{s['bucket']}/{st}", [0, 0.0])
        close(v["jobs"], ref[0], what=f"states {s['bucket']}/{st}")
        close(v["gpu_hours"], ref[1], what=f"state gpu_hours {s['bucket']}/{st}")
for q in fl["queue"]:
    if q["jobs"]:
        # exact below one day, bins 0.1% wide above
        close(q["p50_s"], pd["queue_p50"][q["bucket"]], 2e-3, "queue p50 " + q["bucket"])
        close(q["p99_s"], pd["queue_p99"][q["bucket"]], 2e-3, "queue p99 " + q["bucket"])
close(fl["mtbf"]["gpu_hours_at_risk"], pd["at_risk_gpu_hours"], what="at risk")
close(fl["mtbf"]["failures"], pd["failures"], what="failures")
print("faultline and pandas agree on jobs, GPU-hours, the mix, states by scale, queue p50/p99 and the MTBF population"
      if not bad else "DISAGREE:\n  " + "\n  ".join(bad))
sys.exit(1 if bad else 0)
PYEOF
	else
		echo "pandas: skipped ($PY has no pandas; set FL_PANDAS_PY)"
	fi
fi

if [ "$WHAT" = fidelity ] || [ "$WHAT" = all ]; then
	inside=0
	fails=0
	for s in $(seq 1 "$SEEDS"); do
		"$FL" fleet generate "$SRC/scenarios/fleet/r2-fleet.json" -o "$W/f" --seed "$s" --json > "$W/truth.json" || exit 1
		inj=$(sed -n 's/.*"mtbf_years_per_gpu":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$W/truth.json" | head -1)
		"$FL" fleet analyze "$W/f/trace_kalos.csv" --min-gpus 256 --json > "$W/a.json" || exit 1
		lo=$(sed -n '/"mtbf":/,/"definition"/s/.*"years_lo":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$W/a.json" | head -1)
		hi=$(sed -n '/"mtbf":/,/"definition"/s/.*"years_hi":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$W/a.json" | head -1)
		k=$(sed -n '/"mtbf":/,/"definition"/s/.*"failures":[[:space:]]*\([0-9]*\).*/\1/p' "$W/a.json" | head -1)
		fails=$((fails + k))
		if awk -v i="$inj" -v l="$lo" -v h="$hi" 'BEGIN {exit !(l <= i && i <= h)}'; then
			inside=$((inside + 1))
		else
			echo "seed $s: injected $inj years outside [$lo, $hi] ($k failures)"
		fi
	done
	echo "fidelity: injected MTBF inside the 95% interval of fleet analyze in $inside of $SEEDS seeds (mean $((fails / SEEDS)) NODE_FAIL failures in the population per seed)"
fi
