#!/usr/bin/env bash
# Coverage-guided fuzzing of faultline's parsers: builds the libFuzzer
# harnesses of tests/fuzz/ (clang, AddressSanitizer + UBSan, CMake option
# FAULTLINE_FUZZ=ON) in their own build directory and runs each one for
# SECONDS (default 60) on its seed corpus, tests/fuzz/corpus/HARNESS/.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]
#
# Environment: FL_FUZZ_BUILD (default build-fuzz), FL_FUZZ_JOBS (build jobs,
# default 2), FL_FUZZ_ARGS (more libFuzzer flags). New inputs the fuzzer finds
# go to BUILD/corpus/HARNESS (the seeds in the repository are only read); a
# crash, leak, timeout or out-of-memory input is written to BUILD/artifacts/
# and the script exits 1 naming it: fix the bug and keep the input in the
# harness's seed corpus as a regression input. Each harness prints one
# summary line: executions, coverage (cov: edges, ft: features), corpus size.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

secs=${1:-60}
shift || true
case "$secs" in '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [HARNESS...]" >&2; exit 2 ;; esac
build=${FL_FUZZ_BUILD:-build-fuzz}
jobs=${FL_FUZZ_JOBS:-2}
cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cc" ]; then
	echo "faultline: scripts/fuzz.sh needs clang (libFuzzer); none found" >&2
	exit 77
fi
harnesses=("$@")
if [ ${#harnesses[@]} = 0 ]; then
	for f in tests/fuzz/fuzz_*.c; do harnesses+=("$(basename "$f" .c)"); done
fi

stage "fuzz: building ${harnesses[*]} in $build ($cc)"
mkdir -p "$build"
# configured every time: the harnesses are found by a glob, which only a
# configure run sees (a build folder from before a new harness lacks its target)
logged "$build/configure.log" "configuring the fuzz build" \
	cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAULTLINE_FUZZ=ON \
	-DFAULTLINE_TESTS=OFF -DFAULTLINE_CUDA=OFF -DFAULTLINE_MPI=OFF
logged "$build/build.log" "building the fuzz harnesses" cmake --build "$build" -j"$jobs" --target "${harnesses[@]}"

mkdir -p "$build/artifacts"
rc=0
for h in "${harnesses[@]}"; do
	seeds=tests/fuzz/corpus/$h
	work=$build/corpus/$h
	mkdir -p "$work" "$seeds"
	stage "fuzz: $h for ${secs}s"
	log=$build/$h.log
	# -rss_limit_mb: the reader's bound (64 MB) plus the sanitizers' own memory
	if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$build/$h" "$work" "$seeds" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=65536 \
		-artifact_prefix="$build/artifacts/$h-" -print_final_stats=1 ${FL_FUZZ_ARGS:-} >"$log" 2>&1; then
		echo "faultline: $h found a problem; its input is in $build/artifacts/ (log: $log):" >&2
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -10 | sed 's/^/  | /' >&2
		rc=1
		continue
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	echo "$h: $runs executions in ${secs}s; last status: $last"
done
exit $rc
