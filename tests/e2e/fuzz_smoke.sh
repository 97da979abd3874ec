#!/bin/bash
# A short fuzzing pass over every parser (tests/fuzz/, scripts/fuzz.sh): each
# harness runs FL_FUZZ_SMOKE_SECONDS (default 10) on its seed corpus, every
# regression input included, with AddressSanitizer + UBSan. Skipped when clang
# (libFuzzer) is absent. The long runs are documented in BENCHMARKS.md.
# usage: fuzz_smoke.sh FAULTLINE_BINARY SOURCE_DIR
set -u
SRC=${2:?source dir}
if [ -n "${FL_SKIP:-}" ]; then echo "skipped: $FL_SKIP"; exit 77; fi
if ! command -v clang >/dev/null && ! command -v clang-14 >/dev/null; then
	echo "clang (libFuzzer) not found: skipped" >&2
	exit 77
fi
# the fuzz build lives beside the test's own build directory
export FL_FUZZ_BUILD=${FL_FUZZ_BUILD:-$PWD/fuzz-smoke-build}
exec bash "$SRC/scripts/fuzz.sh" "${FL_FUZZ_SMOKE_SECONDS:-10}"
