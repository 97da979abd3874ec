#!/usr/bin/env bash
# Install what faultline needs to build and test on Debian 12 (run as root).
# Installs only what is missing, so it is cheap to call every time.
set -euo pipefail
need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in build-essential cmake pkg-config libcjson-dev zlib1g-dev check libopenmpi-dev openmpi-bin python3 python3-venv; do
	have "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "faultline: missing packages: ${need[*]} (run as root, or install them)" >&2
		exit 3
	fi
	echo "faultline: installing ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
