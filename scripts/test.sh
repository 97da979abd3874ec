#!/usr/bin/env bash
# The whole test suite: a warnings-as-errors build and an AddressSanitizer +
# UBSan build, each running every unit and end-to-end test (ctest).
#
# Each stage is announced on stderr with the time. The build output of a
# variant is kept in build-test-VARIANT/{configure,build}.log and shown when a
# step fails; ctest's output is also kept in build-test-VARIANT/ctest.log. A
# test that is skipped (exit 77) says why: the summary lists the reason it
# printed before exiting.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

# skip_reasons DIR: "NAME: REASON" for each test ctest reported as skipped in
# DIR/ctest.log; the reason is the test's last output line that mentions a skip
# (with up to 3 lines after it when it ends in ':'), else its last line.
skip_reasons() {
	local dir=$1 t
	[ -f "$dir/ctest.log" ] && [ -f "$dir/Testing/Temporary/LastTest.log" ] || return 0
	for t in $(sed -n 's/^[[:space:]]*[0-9][0-9]* - \([^ ]*\) (Skipped)$/\1/p' "$dir/ctest.log"); do
		awk -v t="$t" '
			$0 == "" && !out { next }
			index($0, "Testing: " t) && $0 ~ ("^[0-9]+/[0-9]+ Testing: " t "$") { intest = 1; next }
			intest && !out && $0 == "Output:" { out = 1; getline; next }
			intest && out && $0 == "<end of output>" { exit }
			intest && out { line[++n] = $0 }
			END {
				k = 0
				for (i = 1; i <= n; i++) if (tolower(line[i]) ~ /skip/) k = i
				if (k == 0) { for (i = n; i >= 1 && line[i] == ""; i--) ; k = i }
				if (k < 1) { printf "  %s: (no output)\n", t; exit }
				printf "  %s: %s\n", t, line[k]
				if (line[k] ~ /:$/) for (i = k + 1; i <= n && i <= k + 3; i++) printf "      %s\n", line[i]
			}' "$dir/Testing/Temporary/LastTest.log" || true
	done
}

bash scripts/deps.sh
jobs=$(nproc)
status=0
summary=()
for variant in release asan; do
	dir=build-test-$variant
	opts=(-DFAULTLINE_WERROR=ON -DFAULTLINE_TESTS=ON)
	[ $variant = asan ] && opts+=(-DFAULTLINE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
	[ $variant = release ] && opts+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	mkdir -p "$dir"
	: >"$dir/configure.log"
	: >"$dir/build.log"
	stage "$variant: configuring ($dir/, log: $dir/configure.log)"
	logged "$dir/configure.log" "$variant configure" cmake -S . -B "$dir" "${opts[@]}"
	stage "$variant: building (log: $dir/build.log)"
	logged "$dir/build.log" "$variant build" cmake --build "$dir" -j"$jobs"
	# the HTA interop test needs a virtualenv; share one between the builds
	export FL_HTA_VENV=${FL_HTA_VENV:-$PWD/.venv-hta}
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	stage "$variant: running the tests (ctest; log: $dir/ctest.log)"
	rc=0
	(cd "$dir" && ctest --output-on-failure -j"$jobs") 2>&1 | tee "$dir/ctest.log" || rc=$?
	skipped=$(skip_reasons "$dir") || true
	if [ -n "$skipped" ]; then
		echo "Skipped in the $variant build, and why:"
		printf '%s\n' "$skipped"
	fi
	if [ "$rc" = 0 ]; then
		summary+=("$variant: all tests passed${skipped:+ (some skipped, above)}")
	else
		status=1
		summary+=("$variant: FAILED (ctest exit $rc; output in $dir/ctest.log)")
	fi
	stage "$variant: tests finished"
done
for s in "${summary[@]}"; do stage "$s"; done
exit $status
