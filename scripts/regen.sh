#!/usr/bin/env bash
# The main job: build faultline and regenerate the R7-R9 traces with their
# truth files into out/ (or the directory given as $1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAULTLINE_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)" --target faultline >/dev/null
./build/faultline regen -o "${1:-out}"
