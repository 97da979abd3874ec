#!/usr/bin/env bash
# Install what faultline needs to build and test on Debian 12 (run as root).
# Installs only what is missing, so it is cheap to call every time. apt's output
# goes to build/deps.log and is shown when an install fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in build-essential cmake pkg-config libcjson-dev zlib1g-dev check libopenmpi-dev openmpi-bin python3 python3-venv; do
	have "$p" || need+=("$p")
done
if [ ${#need[@]} -eq 0 ]; then
	stage "packages: all present"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "faultline: missing packages: ${need[*]} (run as root, or install them)" >&2
	exit 3
fi
log=build/deps.log
mkdir -p build
: >"$log"
stage "installing packages: ${need[*]} (apt-get; log: $log)"
export DEBIAN_FRONTEND=noninteractive
logged "$log" "apt-get update" apt-get update -q
logged "$log" "apt-get install" apt-get install -y -q --no-install-recommends "${need[@]}"
stage "packages installed"
