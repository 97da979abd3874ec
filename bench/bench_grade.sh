#!/bin/bash
# bench_grade.sh — wall time of one whole `faultline grade` process (start,
# read truth + rubric + answer, judge, write the report, exit) with a
# precomputed truth: the pinned truths and full-marks answers of
# scenarios/examples, in every report format. Target: <= 5 ms.
#
# usage: bench/bench_grade.sh [FAULTLINE_BINARY] [RUNS_PER_CASE]
#        (default build/faultline, 100 runs per case)
# Two modes: the report on stdout (to /dev/null), and --out FILE (written to a
# temporary name, fsync'd and renamed: the fsync's cost depends on the disk and
# on what else writes to it). Prints one line per case (median, p95, max in ms)
# and each mode's overall median. Exit 1 when the stdout median exceeds 5 ms.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/faultline}
runs=${2:-100}
[ -x "$bin" ] || { echo "bench_grade: no faultline binary at '$bin'" >&2; exit 2; }
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench_grade: needs bash >= 5 (EPOCHREALTIME)" >&2; exit 2; }
ex=$here/scenarios/examples
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

usec() { local t=${1/[.,]/}; echo $((10#$t)); }
stats() { # FILE LABEL...: median p95 max of sorted microseconds
	awk -v l="$2" '{ v[NR] = $1 } END { printf "%-40s %8.3f %8.3f %8.3f\n", l, v[int((NR + 1) / 2)] / 1000,
	       v[int(NR * 0.95 + 0.5)] / 1000, v[NR] / 1000 }' "$1"
}

declare -A overall
printf '%-40s %8s %8s %8s\n' "case (rubric, format, mode)" median_ms p95_ms max_ms
for mode in stdout out; do
	all=$out/all-$mode.txt
	: >"$all"
	for lab in r7-starved:lab-starved:txt r8-opstorm:lab-opstorm:json r9-hoststall:lab-hoststall:txt; do
		IFS=: read -r name truth ext <<<"$lab"
		for fmt in text json gradescope prairielearn junit; do
			args=(grade --truth "$ex/truth/$truth.truth.json" --answer "$ex/$name-right.$ext" --format "$fmt")
			[ "$mode" = out ] && args+=(--out "$out/result")
			"$bin" "${args[@]}" >/dev/null # warm the page cache; a grading error ends the script
			times=$out/times.txt
			: >"$times"
			for ((i = 0; i < runs; i++)); do
				s=$EPOCHREALTIME
				"$bin" "${args[@]}" >/dev/null
				e=$EPOCHREALTIME
				echo $(($(usec "$e") - $(usec "$s"))) >>"$times"
			done
			sort -n "$times" -o "$times"
			cat "$times" >>"$all"
			stats "$times" "$name $fmt $mode"
		done
	done
	sort -n "$all" -o "$all"
	overall[$mode]=$(awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] / 1000 }' "$all")
done
echo "overall median, report on stdout: ${overall[stdout]} ms per grading process (target <= 5 ms)"
echo "overall median, report with --out: ${overall[out]} ms per grading process (includes fsync)"
awk -v m="${overall[stdout]}" 'BEGIN { exit !(m <= 5) }'
