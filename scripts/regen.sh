#!/usr/bin/env bash
# The main job: build faultline and regenerate the R7-R9 traces with their
# truth files into out/ (or the directory given as $1). Each stage is announced
# on stderr with the time; the build's output is kept in build/configure.log
# and build/build.log and shown when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
out=${1:-out}
bash scripts/deps.sh
mkdir -p build
: >build/configure.log
: >build/build.log
stage "configuring (build/, log: build/configure.log)"
logged build/configure.log "configure" cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAULTLINE_WERROR=ON
stage "building faultline (log: build/build.log)"
logged build/build.log "build" cmake --build build -j"$(nproc)" --target faultline
stage "running: faultline regen -o $out"
./build/faultline regen -o "$out"
stage "done: traces and truth files are in $out/"
