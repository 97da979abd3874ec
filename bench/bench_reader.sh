#!/usr/bin/env bash
# bench_reader.sh — reading and analysing a multi-rank trace: faultline vs HTA.
#
#   bench/bench_reader.sh BUILD_DIR [STEPS]     (default 100 steps: 2 ranks x ~45 MB of JSON)
#
# Generates a ≥ 30 MB (raw JSON per rank) two-rank op-storm trace on the emu
# backend with the real binary, then measures, each in its own process, wall
# time and peak RSS (GNU time's "Maximum resident set size"):
#   - zcat alone (the floor for .gz input);
#   - faultline's whole device analysis (bench_reader metrics: read, prepare,
#     every analysis, JSON) on .json.gz and on plain .json;
#   - the streaming reader alone (bench_reader stream);
#   - the cJSON DOM baseline (read the file, cJSON_Parse) on rank 0's plain JSON;
#   - HTA 0.5 (TraceAnalysis load + temporal, overlap, idle, kernel, launch and
#     queue analyses) on the .json.gz files.
# "cold" is one run per process (what a user sees once), "best" the fastest
# of several runs inside one process (steady state). HTA needs FL_HTA_VENV
# (default SRC/.venv-hta) with HolisticTraceAnalysis installed; without it the
# HTA rows are skipped. (HTA 0.5 under pandas 3 cannot load a trace with more
# than 32767 events whose correlation ids all fit in 16 bits: it downcasts the
# column, then stores event indices in it. 100 steps keep the ids above that.)
set -u
BUILD=${1:?usage: bench_reader.sh BUILD_DIR [STEPS]}
STEPS=${2:-100}
SRC=$(cd "$(dirname "$0")/.." && pwd)
VENV=${FL_HTA_VENV:-$SRC/.venv-hta}
TIME=/usr/bin/time
if [ ! -x "$TIME" ]; then echo "bench_reader.sh: needs GNU time (apt-get install time)" >&2; exit 2; fi
W=$(mktemp -d "${TMPDIR:-/tmp}/fl-bench-reader.XXXXXX")
trap 'rm -rf "$W"' EXIT

"$BUILD/faultline" run "$SRC/scenarios/emu/r8-opstorm-emu.json" --steps "$STEPS" --ranks 2 -o "$W/run" \
	>/dev/null 2>"$W/run.log" || { cat "$W/run.log" >&2; exit 1; }
mkdir -p "$W/gz" "$W/plain"
cp "$W"/run/*.json.gz "$W/gz/"
for f in "$W"/gz/*.json.gz; do zcat "$f" >"$W/plain/$(basename "${f%.gz}")"; done
RAW=$(cat "$W"/plain/*.json | wc -c)
GZ=$(cat "$W"/gz/*.json.gz | wc -c)
RANK0=$(ls "$W"/plain/*.json | head -1)
RAW0=$(wc -c <"$RANK0")
echo "$(ls "$W"/gz | wc -l) $RAW $GZ" | awk -v s="r8-opstorm-emu --steps $STEPS --ranks 2" \
	'{ printf "trace: %d ranks, %.1f MB of JSON (%.1f MB gzipped), %s\n", $1, $2 / 1e6, $3 / 1e6, s }'

# measure NAME BYTES REPS COMMAND... : best wall of REPS processes, largest peak RSS
measure() {
	local name=$1 bytes=$2 reps=$3
	shift 3
	: >"$W/runs"
	for _ in $(seq "$reps"); do
		"$TIME" -f "%e %M" -o "$W/t" "$@" >/dev/null 2>"$W/err" || { echo "$name failed:" >&2; tail -3 "$W/err" >&2; return; }
		cat "$W/t" >>"$W/runs"
	done
	awk -v n="$name" -v b="$bytes" 'NR == 1 || $1 < t { t = $1 } $2 > m { m = $2 }
		END { if (t == 0) t = 0.005; printf "| %-44s | %8.2f | %9.0f | %9.1f |\n", n, t, b / 1e6 / t, m / 1024 }' "$W/runs"
}

echo
echo "| what (cold: one run per process, best of 5) | wall s | MB/s JSON | peak RSS MB |"
echo "|---|---|---|---|"
measure "zcat (both ranks)" "$RAW" 5 sh -c "zcat $W/gz/*.json.gz"
measure "faultline analysis, .json.gz" "$RAW" 5 "$BUILD/bench_reader" metrics --reps 1 "$W"/gz/*.json.gz
measure "faultline analysis, .json" "$RAW" 5 "$BUILD/bench_reader" metrics --reps 1 "$W"/plain/*.json
measure "faultline reader only, .json.gz" "$RAW" 5 "$BUILD/bench_reader" stream --reps 1 "$W"/gz/*.json.gz
measure "faultline reader only, .json" "$RAW" 5 "$BUILD/bench_reader" stream --reps 1 "$W"/plain/*.json
measure "cJSON DOM, rank 0 .json" "$RAW0" 3 "$BUILD/bench_reader" cjson --reps 1 "$RANK0"
measure "faultline analysis, rank 0 .json" "$RAW0" 3 "$BUILD/bench_reader" metrics --reps 1 "$RANK0"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import hta" 2>/dev/null; then
	cat >"$W/hta_bench.py" <<'PY'
import logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
ranks = a.t.get_ranks()
a.get_temporal_breakdown(visualize=False)
a.get_comm_comp_overlap(visualize=False)
a.get_idle_time_breakdown(ranks=ranks, visualize=False)
a.get_gpu_kernel_breakdown(visualize=False)
a.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
a.get_queue_length_summary(ranks=ranks)
PY
	measure "HTA 0.5 load + analyses, .json.gz" "$RAW" 2 "$VENV/bin/python" "$W/hta_bench.py" "$W/gz"
else
	echo "(HTA rows skipped: no HolisticTraceAnalysis in $VENV)"
fi

echo
echo "| what (steady state: best of 10 runs in one process) | wall s | MB/s JSON |"
echo "|---|---|---|"
for args in "metrics $W/gz/*.json.gz" "metrics $W/plain/*.json" "stream $W/gz/*.json.gz" "stream $W/plain/*.json"; do
	# shellcheck disable=SC2086
	"$BUILD/bench_reader" ${args%% *} --reps 10 ${args#* } |
		awk -v w="${args%% *} $(case "$args" in *gz*) echo .json.gz;; *) echo .json;; esac)" \
			'{ printf "| faultline %-40s | %8.3f | %9.0f |\n", w, $2, $7 }'
done
