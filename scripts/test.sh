#!/usr/bin/env bash
# The whole test suite: a warnings-as-errors build and an AddressSanitizer +
# UBSan build, each running every unit and end-to-end test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc)
status=0
for variant in release asan; do
	dir=build-test-$variant
	opts=(-DFAULTLINE_WERROR=ON -DFAULTLINE_TESTS=ON)
	[ $variant = asan ] && opts+=(-DFAULTLINE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
	[ $variant = release ] && opts+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	echo "== $variant build" >&2
	cmake -S . -B "$dir" "${opts[@]}" >/dev/null
	cmake --build "$dir" -j"$jobs" >/dev/null
	# the HTA interop test needs a virtualenv; share one between the builds
	export FL_HTA_VENV=${FL_HTA_VENV:-$PWD/.venv-hta}
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	(cd "$dir" && ctest --output-on-failure -j"$jobs") || status=1
done
exit $status
