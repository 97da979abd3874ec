#!/bin/bash
# bench_nodes.sh — `faultline analyze --device` on one job's rank files split
# between 1, 2 and 4 processes (mpirun), and in one process with --jobs 1:
# per-process peak RSS (/usr/bin/time -v) and throughput (MB of trace JSON
# text per second of wall time). Checks that every run prints the bytes of
# the one-process run.
#
# The trace set: tests/tools/synth_trace.py, RANKS files of STEPS steps
# (default 8 x 2000: ~24 MB of JSON each; even ranks gzip'd, odd ones plain).
#
# usage: bench/bench_nodes.sh [FAULTLINE_BINARY] [STEPS] [RANKS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/faultline}
steps=${2:-2000}
ranks=${3:-8}
[ -x "$bin" ] || { echo "bench_nodes: no faultline binary at '$bin'" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "bench_nodes: mpirun not found (openmpi-bin)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$here/tests/tools/synth_trace.py" "$work/t" --ranks "$ranks" --steps "$steps" --seed 1 >/dev/null
files=$(ls "$work"/t/synthetic.rank-*)
# MB of JSON text the readers parse (the .gz files inflated)
mb=$(for f in $files; do case $f in *.gz) zcat "$f" ;; *) cat "$f" ;; esac; done | wc -c |
	awk '{printf "%.1f", $1 / 1e6}')
disk=$(du -cb $files | tail -1 | awk '{printf "%.1f", $1 / 1e6}')
echo "trace set: $ranks files, $mb MB of JSON ($disk MB on disk), $(nproc) cores"
# the flags of the project's own multi-rank runs (generator/harness.c)
MPIRUN="mpirun --oversubscribe --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
[ "$(id -u)" = 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"

"$bin" analyze --device --json $files >"$work/ref.json"
row() { # LABEL WALL_S RSS_FILES...
	local label=$1 wall=$2
	shift 2
	local rss
	rss=$(for f in "$@"; do awk -F: '/Maximum resident/ {printf "%.0f ", $2 / 1024}' "$f"; done)
	printf "%-34s %7.2f s %8.1f MB/s   peak RSS per process (MB): %s\n" "$label" "$wall" \
		"$(awk -v m="$mb" -v w="$wall" 'BEGIN {print m / w}')" "$rss"
}
now() { date +%s.%N; }

t0=$(now)
/usr/bin/time -v -o "$work/rss.j1" "$bin" analyze --device --json --jobs 1 $files >"$work/out.json"
t1=$(now)
cmp -s "$work/ref.json" "$work/out.json" || { echo "bench_nodes: --jobs 1 differs" >&2; exit 1; }
row "1 process, --jobs 1" "$(echo "$t1 - $t0" | bc)" "$work/rss.j1"

t0=$(now)
/usr/bin/time -v -o "$work/rss.jall" "$bin" analyze --device --json $files >"$work/out.json"
t1=$(now)
cmp -s "$work/ref.json" "$work/out.json" || { echo "bench_nodes: default --jobs differs" >&2; exit 1; }
row "1 process, --jobs $(nproc) (default)" "$(echo "$t1 - $t0" | bc)" "$work/rss.jall"

for np in 1 2 4; do
	rm -f "$work"/rss.m.*
	t0=$(now)
	$MPIRUN -np "$np" sh -c 'exec /usr/bin/time -v -o "$0/rss.m.$OMPI_COMM_WORLD_RANK" "$@"' "$work" \
		"$bin" analyze --device --json --jobs 1 $files >"$work/out.json"
	t1=$(now)
	cmp -s "$work/ref.json" "$work/out.json" || { echo "bench_nodes: mpirun -np $np differs" >&2; exit 1; }
	row "mpirun -np $np, --jobs 1" "$(echo "$t1 - $t0" | bc)" $(ls "$work"/rss.m.* | sort -t. -k3 -n)
done
echo "every run printed the one-process bytes"
