#!/usr/bin/env bash
# gpu-check.sh — the cuda backend on a machine with an NVIDIA GPU.
#
#   bash tests/gpu-check.sh [BUILD_DIR]          # default BUILD_DIR: build-gpu
#   bash tests/gpu-check.sh --pack-deps [DIR]    # on a development machine: copy
#                                                # cJSON, zlib and Check into DIR (default
#                                                # build-deps) for a machine without them
#
# Made for a bare CUDA image (nvcc, CMake, maybe ninja and PyTorch, no package
# registry): it finds what the build needs and builds what it can without the
# rest — the Check unit tests only where Check is installed, MPI only where it
# is found, NCCL from the toolkit or from a Python wheel (nvidia/nccl), ninja
# when present, warnings reported but not fatal (a newer compiler has new
# ones; FL_GPU_WERROR=1 makes them errors). cJSON and zlib are required: when
# the system lacks one, it is taken from FL_GPU_DEPS (default build-deps, made
# by --pack-deps), else cJSON is built from a cJSON.c found on the machine;
# failing that the deps stage says exactly what is missing and the build is
# skipped. docs/gpu.md has the details.
#
# Stages, each logged to its own file; a failing stage skips only the stages
# that need it; no stage starts after FL_GPU_BUDGET_S (default 480) seconds:
#   env, deps, configure, build, unit (check_cupti, CK_DEFAULT_TIMEOUT=120),
#   run-* (every scenario the cuda backend can run: "backend" auto or cuda, and
#   the emu ones with --backend cuda; multi-rank ones with one GPU per rank,
#   MPI and NCCL; a copy of r7-healthy-emu with "backend": "auto" must pick
#   cuda), validate (`faultline validate`, each trace), traces (a launch flow
#   for every kernel and no flow end without its start, every kernel/copy/
#   memset linked to an op, no dropped records, a real device), signatures
#   (tests/tools/tracecheck.py emu), throttle (FL_CUDA_CLOCK_FACTOR=3 on one
#   GPU, each scenario also run unthrottled at the same width: kernels of 10 us
#   or more take 3x their unthrottled time; shorter ones' floor reported),
#   overhead (r8-opstorm-emu step time at one fixed width with
#   CUPTI on and off, FL_CUPTI=0, in alternating pairs: ratio and %, target
#   <= FL_GPU_OVERHEAD_MAX, default 10 %), kineto (the anchor: the same storm
#   in PyTorch with torch.profiler on and off, bench/kineto_storm.py; skipped
#   without torch).
#
# Results go to $OUT when it is set (the folder a remote runner brings back;
# never deleted), else to a new temporary folder that is kept and printed:
#   summary.md, summary.json, logs/<stage>.log, traces/ (the runs' traces and truths)
# Exit: 0 every check passed, 1 one failed, 77 no usable GPU (FL_GPU_ASSUME=1
# runs every stage anyway, to test this script on a machine without one;
# FL_GPU_SIMULATE_BARE=1 acts as if cJSON, zlib, pkg-config, Check and MPI
# were not installed, to test the bare-image path; FL_GPU_BACKEND=emu runs
# the scenarios on the emulated device, to test the later stages).
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)

# ---- --pack-deps: cJSON and zlib of this machine, for one without them ----
if [ "${1:-}" = --pack-deps ]; then
	D=${2:-$SRC/build-deps}
	mkdir -p "$D/include/cjson" "$D/lib" || exit 1
	ok=1
	h=$(echo '#include <cjson/cJSON.h>' | cc -E -M -x c - 2>/dev/null | tr ' \\' '\n\n' | grep -m1 'cjson/cJSON.h$')
	so=$(cc -print-file-name=libcjson.so 2>/dev/null)
	if [ -n "$h" ] && [ -e "$so" ]; then
		cp "$h" "$D/include/cjson/" && cp -L "$so" "$D/lib/libcjson.so.1" && ln -sf libcjson.so.1 "$D/lib/libcjson.so"
		[ -n "$(ls "$(dirname "$h")"/../../share/doc/libcjson*/copyright 2>/dev/null)" ] &&
			cp "$(ls "$(dirname "$h")"/../../share/doc/libcjson*/copyright | head -1)" "$D/lib/libcjson.copyright"
		echo "cJSON: $h, $so"
	else
		echo "cJSON: not found here (cjson/cJSON.h and libcjson.so)"
		ok=0
	fi
	zh=$(echo '#include <zlib.h>' | cc -E -M -x c - 2>/dev/null | tr ' \\' '\n\n' | grep -m1 '/zlib.h$')
	za=$(cc -print-file-name=libz.a 2>/dev/null)
	if [ -n "$zh" ] && [ -e "$za" ]; then
		cp "$zh" "$(dirname "$zh")/zconf.h" "$D/include/" && cp -L "$za" "$D/lib/libz.a"
		echo "zlib: $zh, $za"
	else
		echo "zlib: not found here (zlib.h and libz.a)"
		ok=0
	fi
	# Check (optional: the unit tests, check_cupti): its headers and the static
	# libraries pkg-config names for a static link (check, subunit)
	ch=$(echo '#include <check.h>' | cc -E -M -x c - 2>/dev/null | tr ' \\' '\n\n' | grep -m1 '/check.h$')
	ca=$(cc -print-file-name=libcheck_pic.a 2>/dev/null)
	[ -e "$ca" ] || ca=$(cc -print-file-name=libcheck.a 2>/dev/null)
	sa=$(cc -print-file-name=libsubunit.a 2>/dev/null)
	if [ -n "$ch" ] && [ -e "$ca" ] && [ -e "$sa" ]; then
		mkdir -p "$D/check/include" "$D/check/lib" &&
			cp "$ch" "$(dirname "$ch")/check_stdint.h" "$D/check/include/" &&
			cp -L "$ca" "$D/check/lib/libcheck.a" && cp -L "$sa" "$D/check/lib/libsubunit.a"
		echo "Check: $ch, $ca, $sa"
	else
		echo "Check: not found here (check.h, libcheck.a, libsubunit.a); the unit tests will not be built there"
	fi
	echo "packed into $D (carry it to the GPU machine; FL_GPU_DEPS=$D, the default there too)"
	[ $ok = 1 ]
	exit
fi

BUILD=${1:-${FL_GPU_BUILD:-$SRC/build-gpu}}
DEPS=${FL_GPU_DEPS:-$SRC/build-deps}
BUDGET=${FL_GPU_BUDGET_S:-480}
RUN_TIMEOUT=${FL_GPU_RUN_TIMEOUT_S:-120}
STEPS=${FL_GPU_STEPS:-8}
OVERHEAD_MAX=${FL_GPU_OVERHEAD_MAX:-10}
OVERHEAD_DIM=${FL_GPU_OVERHEAD_DIM:-96} # the op storm's width in both modes (a ladder step: 64, 80, 96, 112, 128, ...)
BACKEND=${FL_GPU_BACKEND:-cuda} # emu: exercise the stages on a machine without a GPU
BARE=${FL_GPU_SIMULATE_BARE:-0} # 1: act as if cJSON, zlib, pkg-config, Check, MPI were not installed
if [ -n "${OUT:-}" ]; then
	RES=$OUT
else
	RES=$(mktemp -d "${TMPDIR:-/tmp}/fl-gpu-check.XXXXXX")
fi
LOGS=$RES/logs
TR=$RES/traces
mkdir -p "$LOGS" "$TR" || {
	echo "gpu-check: cannot create $LOGS"
	exit 1
}
STAGES=$LOGS/stages.tsv # name, status, seconds, note
: >"$STAGES"
T0=$(date +%s)
fails=0
passes=0
NOTE=""
TIMEOUT=""
command -v timeout >/dev/null && TIMEOUT="timeout -k 10"

elapsed() { echo $(($(date +%s) - T0)); }
record() { # record NAME STATUS SECONDS NOTE
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(echo "$4" | tr '\t\n' '  ')" >>"$STAGES"
	case $2 in
	ok) passes=$((passes + 1)) ;;
	FAIL) fails=$((fails + 1)) ;;
	esac
	printf '%-5s %-26s %4s s  %s\n' "$2" "$1" "$3" "$4"
}
# stage NAME FUNCTION [ARGS...]: FUNCTION's output goes to logs/NAME.log; it
# returns 0 (ok), 77 (skipped) or anything else (failed) and may set NOTE.
stage() {
	local name=$1
	shift
	if [ "$(elapsed)" -ge "$BUDGET" ]; then
		record "$name" skip 0 "not started: the time budget (${BUDGET} s) is spent"
		return 77
	fi
	local t0 rc
	t0=$(date +%s)
	NOTE=""
	"$@" >"$LOGS/$name.log" 2>&1
	rc=$?
	local dt=$(($(date +%s) - t0))
	if [ $rc = 0 ]; then
		record "$name" ok "$dt" "$NOTE"
	elif [ $rc = 77 ]; then
		record "$name" skip "$dt" "$NOTE"
	else
		record "$name" FAIL "$dt" "${NOTE:-exit $rc} (logs/$name.log)"
		tail -n 6 "$LOGS/$name.log" | sed 's/^/      | /'
	fi
	return $rc
}
# needs STAGE...: skip (77) unless every named stage passed
needs() {
	local s
	for s in "$@"; do
		if ! awk -F'\t' -v s="$s" '$1 == s && $2 == "ok" {f = 1} END {exit !f}' "$STAGES"; then
			NOTE="needs stage $s, which did not pass"
			return 77
		fi
	done
}

# ---- env: the machine ----
NGPU=0
GPU="none"
s_env() {
	local t
	echo "date: $(date -u)"
	echo "uname: $(uname -a)"
	[ -r /etc/os-release ] && grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release
	for t in nvidia-smi nvcc cmake ninja cc gcc g++ python3 pkg-config mpicc mpirun timeout; do
		printf '%-12s %s\n' "$t" "$(command -v $t || echo MISSING)"
	done
	command -v nvcc >/dev/null && nvcc --version | tail -2
	command -v cc >/dev/null && cc --version | head -1
	command -v cmake >/dev/null && cmake --version | head -1
	command -v python3 >/dev/null && python3 --version
	echo "cpus: $(nproc)"
	if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L; then
		NOTE="no usable GPU (nvidia-smi -L failed)"
		return 1
	fi
	nvidia-smi
	NGPU=$(nvidia-smi -L | grep -c '^GPU ')
	GPU=$(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | head -1)
	NOTE="$NGPU GPU(s): $GPU"
}

# ---- deps: what the build has, and the CMake arguments that follow ----
CMAKE_ARGS=()
TARGETS=(faultline)
DEPNOTES=()
HAVE_NCCL=0
HAVE_MPI=0
try_cc() { # try_cc SOURCE ARGS...: does a program compile and link?
	local src=$1
	shift
	printf '%s\n' "$src" | cc -x c - -x none -o "$BUILD/.probe" "$@" >/dev/null 2>&1
	local rc=$?
	rm -f "$BUILD/.probe"
	return $rc
}
s_deps() {
	mkdir -p "$BUILD" || return 1
	local missing=()
	if ! command -v cc >/dev/null; then
		NOTE="no C compiler (cc)"
		return 1
	fi
	if ! command -v cmake >/dev/null; then
		NOTE="no cmake"
		return 1
	fi
	# generator
	if command -v ninja >/dev/null; then
		CMAKE_ARGS+=(-G Ninja)
		DEPNOTES+=("ninja")
	fi
	# nvcc
	local nvcc
	nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
	if [ -z "$nvcc" ]; then
		missing+=("nvcc (the CUDA toolkit; not on PATH nor in /usr/local/cuda/bin)")
	else
		CMAKE_ARGS+=(-DCMAKE_CUDA_COMPILER="$nvcc")
	fi
	local cap
	cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
	if [[ "$cap" =~ ^[0-9]+$ ]]; then
		CMAKE_ARGS+=(-DCMAKE_CUDA_ARCHITECTURES="$cap")
		DEPNOTES+=("sm_$cap")
	fi
	# cJSON (required)
	local cj='#include <cjson/cJSON.h>
int main(void) { return cJSON_Version()[0] == 0; }'
	if [ "$BARE" = 0 ] && try_cc "$cj" -lcjson; then
		echo "cJSON: the system's"
		DEPNOTES+=("cJSON: system")
	elif [ -e "$DEPS/include/cjson/cJSON.h" ] && ls "$DEPS"/lib/libcjson.* >/dev/null 2>&1 &&
		try_cc "$cj" -I"$DEPS/include" -L"$DEPS/lib" -Wl,-rpath,"$DEPS/lib" -lcjson; then
		local lib
		lib=$(ls "$DEPS"/lib/libcjson.so "$DEPS"/lib/libcjson.a 2>/dev/null | head -1)
		CMAKE_ARGS+=(-DCJSON_INCLUDE="$DEPS/include" -DCJSON_LIB="$lib")
		export LD_LIBRARY_PATH="$DEPS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		echo "cJSON: $lib (FL_GPU_DEPS)"
		DEPNOTES+=("cJSON: $DEPS")
	else
		echo "cJSON: not on the system and not in $DEPS; looking for a cJSON.c source on this machine (30 s at most)"
		local c
		c=$($TIMEOUT 30 find / -xdev \( -path /proc -o -path /sys -o -path /dev \) -prune -o -name cJSON.c -print 2>/dev/null |
			while read -r f; do [ -e "$(dirname "$f")/cJSON.h" ] && echo "$f" && break; done)
		if [ -n "$c" ]; then
			local d=$BUILD/deps
			mkdir -p "$d/include/cjson" "$d/lib"
			cp "$(dirname "$c")/cJSON.h" "$d/include/cjson/" &&
				cc -O2 -fPIC -c "$c" -o "$d/cJSON.o" && ar rcs "$d/lib/libcjson.a" "$d/cJSON.o" ||
				missing+=("cJSON (building $c failed)")
			CMAKE_ARGS+=(-DCJSON_INCLUDE="$d/include" -DCJSON_LIB="$d/lib/libcjson.a")
			echo "cJSON: built from $c"
			DEPNOTES+=("cJSON: built from $c")
		else
			missing+=("cJSON (no cjson/cJSON.h + libcjson on the system, none in FL_GPU_DEPS=$DEPS, no cJSON.c source on this machine: run 'bash tests/gpu-check.sh --pack-deps' on a machine with libcjson-dev and bring build-deps/ along)")
		fi
	fi
	# zlib (required)
	local zl='#include <zlib.h>
int main(void) { return zlibVersion()[0] == 0; }'
	if [ "$BARE" = 0 ] && try_cc "$zl" -lz; then
		echo "zlib: the system's"
	elif [ -e "$DEPS/include/zlib.h" ] && try_cc "$zl" -I"$DEPS/include" "$DEPS/lib/libz.a"; then
		CMAKE_ARGS+=(-DZLIB_INCLUDE_DIR="$DEPS/include" -DZLIB_LIBRARY="$DEPS/lib/libz.a")
		echo "zlib: $DEPS/lib/libz.a (FL_GPU_DEPS)"
		DEPNOTES+=("zlib: $DEPS")
	else
		missing+=("zlib (no zlib.h + libz on the system and none in FL_GPU_DEPS=$DEPS: 'bash tests/gpu-check.sh --pack-deps' packs it too)")
	fi
	# pkg-config: CMake asks for it; without one a stand-in that knows no package
	if [ "$BARE" = 1 ] || ! command -v pkg-config >/dev/null; then
		local shim=$BUILD/pkg-config-none
		printf '#!/bin/sh\n# stand-in for a missing pkg-config: knows no package\n[ "$1" = --version ] && echo 0.29.2 && exit 0\nexit 1\n' >"$shim"
		chmod +x "$shim"
		CMAKE_ARGS+=(-DPKG_CONFIG_EXECUTABLE="$shim")
		echo "pkg-config: missing; a stand-in that knows no package ($shim)"
		DEPNOTES+=("no pkg-config")
	fi
	# Check: the unit tests
	if [ "$BARE" = 0 ] && command -v pkg-config >/dev/null && pkg-config --exists check; then
		CMAKE_ARGS+=(-DFAULTLINE_TESTS=ON)
		TARGETS+=(check_cupti)
		DEPNOTES+=("Check")
	elif [ -e "$DEPS/check/include/check.h" ] && [ -e "$DEPS/check/lib/libcheck.a" ]; then
		CMAKE_ARGS+=(-DFAULTLINE_TESTS=ON -DFL_CHECK_ROOT="$DEPS/check")
		TARGETS+=(check_cupti)
		echo "Check: $DEPS/check (FL_GPU_DEPS)"
		DEPNOTES+=("Check: $DEPS")
	else
		CMAKE_ARGS+=(-DFAULTLINE_TESTS=OFF)
		echo "Check: missing; unit tests not built"
		DEPNOTES+=("no Check: unit tests off")
	fi
	# MPI: multi-rank runs
	if [ "$BARE" = 0 ] && command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
		HAVE_MPI=1
		DEPNOTES+=("MPI")
	else
		CMAKE_ARGS+=(-DFAULTLINE_MPI=OFF)
		echo "MPI: missing (mpicc, mpirun); single-rank only"
		DEPNOTES+=("no MPI")
	fi
	# NCCL: the toolkit's, or a Python wheel's (nvidia/nccl)
	local tk
	tk=$(dirname "$(dirname "${nvcc:-/usr/local/cuda/bin/nvcc}")")
	if [ -e "$tk/include/nccl.h" ] && ls "$tk"/lib*/libnccl.so* >/dev/null 2>&1; then
		HAVE_NCCL=1
		echo "NCCL: the toolkit's"
		DEPNOTES+=("NCCL: toolkit")
	elif [ -e /usr/include/nccl.h ] && try_cc '#include <nccl.h>
int main(void) { return 0; }' -lnccl; then
		HAVE_NCCL=1
		echo "NCCL: the system's"
		DEPNOTES+=("NCCL: system")
	else
		local w
		w=$(python3 - 2>/dev/null <<'PY'
import glob, os, site, sys
cands = []
try:
    import nvidia.nccl as m
    cands += list(getattr(m, "__path__", []))
except Exception:
    pass
try:
    cands += [os.path.join(p, "nvidia", "nccl") for p in site.getsitepackages() + [site.getusersitepackages()]]
except Exception:
    pass
cands += glob.glob("/usr/local/lib/python3*/*-packages/nvidia/nccl") + glob.glob("/usr/lib/python3*/*-packages/nvidia/nccl")
for c in cands:
    libs = sorted(glob.glob(os.path.join(c, "lib", "libnccl.so*")))
    if libs and os.path.exists(os.path.join(c, "include", "nccl.h")):
        print(os.path.join(c, "include"), libs[0])
        sys.exit(0)
for c in cands:
    if glob.glob(os.path.join(c, "lib", "libnccl.so*")):
        print("NOHEADER", c)
        sys.exit(0)
PY
)
		if [ -n "$w" ] && [ "${w%% *}" != NOHEADER ]; then
			HAVE_NCCL=1
			CMAKE_ARGS+=(-DFL_NCCL_INCLUDE="${w%% *}" -DFL_NCCL_LIBRARY="${w#* }")
			echo "NCCL: Python wheel, $w"
			DEPNOTES+=("NCCL: wheel")
		elif [ -n "$w" ]; then
			echo "NCCL: a wheel at ${w#* } has the library but no nccl.h; multi-rank cuda runs are not built"
			DEPNOTES+=("NCCL: wheel without nccl.h")
		else
			echo "NCCL: not found (toolkit, system, Python wheel); multi-rank cuda runs are not built"
			DEPNOTES+=("no NCCL")
		fi
	fi
	if [ "${FL_GPU_WERROR:-0}" = 1 ]; then
		CMAKE_ARGS+=(-DFAULTLINE_WERROR=ON)
	else
		CMAKE_ARGS+=(-DFAULTLINE_WERROR=OFF)
	fi
	echo "cmake arguments: ${CMAKE_ARGS[*]}"
	NOTE=$(
		IFS=,
		echo "${DEPNOTES[*]}"
	)
	if [ ${#missing[@]} -gt 0 ]; then
		printf 'MISSING: %s\n' "${missing[@]}"
		NOTE="missing: ${missing[*]}"
		return 1
	fi
}

# ---- configure and build ----
s_configure() {
	needs deps || return 77
	local extra=() try
	for try in 1 2 3; do
		echo "== cmake (try $try) ${extra[*]:-}"
		if cmake -S "$SRC" -B "$BUILD" -DFAULTLINE_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "${CMAKE_ARGS[@]}" \
			"${extra[@]}" >"$LOGS/cmake-$try.log" 2>&1; then
			cat "$LOGS/cmake-$try.log"
			NOTE=$(grep -E "faultline: (CUDA|MPI|cuda backend)" "$LOGS/cmake-$try.log" | sed 's/^-- faultline: //' | paste -sd ';' -)
			return 0
		fi
		cat "$LOGS/cmake-$try.log"
		if grep -q "unsupported GNU version\|unsupported clang version" "$LOGS/cmake-$try.log" &&
			[ ${#extra[@]} = 0 ]; then
			extra=(-DCMAKE_CUDA_FLAGS=-allow-unsupported-compiler)
			rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
		elif [ -e "$BUILD/CMakeCache.txt" ]; then
			rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles" # an old cache (another generator, other paths)
		else
			break
		fi
	done
	NOTE="cmake failed: $(grep -m1 -E "Error|error" "$LOGS/cmake-$try.log" | cut -c1-200)"
	return 1
}
WARNINGS=0
s_build() {
	needs configure || return 77
	cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}" 2>&1
	local rc=$?
	WARNINGS=$(grep -c "warning:" "$LOGS/build.log")
	[ "$WARNINGS" -gt 0 ] && grep "warning:" "$LOGS/build.log" | sort -u | head -20 >"$LOGS/warnings.txt"
	NOTE="${TARGETS[*]}; $WARNINGS compiler warning(s)${WARNINGS:+ (logs/warnings.txt)}"
	[ "$WARNINGS" = 0 ] && NOTE="${TARGETS[*]}; no compiler warnings"
	if [ "$rc" != 0 ]; then
		NOTE="build failed: $(grep -m1 -E "error" "$LOGS/build.log" | cut -c1-200)"
		return 1
	fi
	[ -x "$BUILD/faultline" ]
}
s_unit() {
	needs build || return 77
	if [ ! -x "$BUILD/check_cupti" ]; then
		NOTE="check_cupti not built (no Check library)"
		return 77
	fi
	# the GPU case opens CUPTI, a context and loads cuBLAS: more than Check's 4 s
	CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-120} "$BUILD/check_cupti"
	local rc=$?
	NOTE=$(grep -m1 "Checks:" "$LOGS/unit.log")
	return $rc
}

# ---- the scenarios on the GPU ----
FL=$BUILD/faultline
RUNS=() # "name|scenario|args..." lines
plan_runs() {
	local s b r name
	for s in "$SRC"/scenarios/*.json "$SRC"/scenarios/emu/*.json; do
		case $s in *.rubric.json) continue ;; esac
		read -r b r < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("backend","cpu"), d.get("ranks",1))' "$s" 2>/dev/null)
		name=$(basename "$s" .json)
		case ${b:-} in
		auto | cuda) RUNS+=("$name|$s|$r|") ;;
		emu) RUNS+=("$name|$s|$r|--backend $BACKEND") ;;
		esac
	done
}
s_run() { # s_run NAME SCENARIO RANKS ARGS
	local name=$1 s=$2 ranks=$3
	shift 3
	needs build || return 77
	local rargs=()
	if [ "$ranks" -gt 1 ]; then
		local want=$((NGPU < ranks ? NGPU : ranks))
		if [ "$HAVE_MPI" = 0 ] || [ "$HAVE_NCCL" = 0 ] || [ "$want" -lt 2 ]; then
			NOTE="$ranks ranks need one GPU each (2 or more), MPI and NCCL: $NGPU GPU(s), MPI $HAVE_MPI, NCCL $HAVE_NCCL"
			return 77
		fi
		rargs=(--ranks "$want")
	fi
	# shellcheck disable=SC2068
	$TIMEOUT "$RUN_TIMEOUT" "$FL" run "$s" $@ "${rargs[@]}" --steps "$STEPS" -o "$TR"
	local rc=$?
	NOTE=$(grep -m1 "step p50" "$LOGS/run-$name.log" | sed 's/^ *//')
	[ $rc = 124 ] && NOTE="timed out after $RUN_TIMEOUT s"
	# a fault that does not list cuda (slow_link paces an emulated link; the
	# bubble's per-step idle share reads the emulated device's counters) is
	# refused at init, exit 2, saying so: not a failure of the GPU run
	if [ $rc = 2 ] && grep -q "does not run on backend 'cuda'\|not 'cuda'" "$LOGS/run-$name.log"; then
		NOTE="not on cuda: $(grep -m1 "backend 'cuda'\|not 'cuda'" "$LOGS/run-$name.log" | sed 's/^faultline: //' | cut -c1-160)"
		return 77
	fi
	return $rc
}
s_auto() {
	needs build || return 77
	sed 's/"backend": "emu"/"backend": "auto"/; s/"name": "r7-healthy-emu"/"name": "auto-r7"/' \
		"$SRC/scenarios/emu/r7-healthy-emu.json" >"$BUILD/auto-r7.json"
	local d=$RES/auto
	$TIMEOUT "$RUN_TIMEOUT" "$FL" run "$BUILD/auto-r7.json" --steps 2 -o "$d" || return 1
	local b
	b=$(python3 -c 'import glob,json,sys; print(json.load(open(glob.glob(sys.argv[1] + "/*.truth.json")[0]))["environment"]["backend"])' "$d")
	NOTE="backend auto picked $b"
	[ "$b" = "$BACKEND" ] || { [ "$BACKEND" = emu ] && [ "$b" = emu ]; }
}

# ---- each trace ----
s_validate() {
	needs build || return 77
	local n=0 bad=0 t
	for t in "$TR"/*.json.gz; do
		[ -e "$t" ] || continue
		n=$((n + 1))
		if "$FL" validate "$t"; then :; else
			bad=$((bad + 1))
			echo "INVALID $t"
		fi
	done
	NOTE="$((n - bad)) of $n traces valid"
	[ "$n" -gt 0 ] && [ "$bad" = 0 ]
}
s_traces() {
	ls "$TR"/*.json.gz >/dev/null 2>&1 || {
		NOTE="no traces"
		return 77
	}
	python3 - "$TR" "$LOGS/traces.json" <<'PY'
import gzip, json, os, sys
d, out = sys.argv[1], sys.argv[2]
bad, rows = 0, []
print("%-30s %7s %6s %7s %6s %8s %6s %8s %7s" % ("trace", "kernels", "copies", "memsets", "calls", "unlinked", "noflow", "dangling", "dropped"))
for f in sorted(os.listdir(d)):
    if not f.endswith(".json.gz"):
        continue
    doc = json.load(gzip.open(os.path.join(d, f), "rt"))
    ev = doc["traceEvents"]
    x = [e for e in ev if e.get("ph") == "X"]
    ops = {e["args"]["External id"] for e in x if e.get("cat") in ("cpu_op", "user_annotation") and "args" in e}
    dev = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    kernels = [e for e in dev if e["cat"] == "kernel"]
    calls = [e for e in x if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    starts = {e["id"] for e in ev if e.get("ph") == "s"}
    ends = {e["id"] for e in ev if e.get("ph") == "f"}
    unlinked = [e for e in dev if e["args"].get("External id", 0) not in ops]
    noflow = [e for e in kernels if e["args"]["correlation"] not in starts or e["args"]["correlation"] not in ends]
    dangling = ends - starts
    dropped = doc.get("faultline_dropped_events", -1)
    props = doc.get("deviceProperties") or [{}]
    real = bool(props) and "emulated" not in json.dumps(props) and props[0].get("numSms", 0) > 0
    row = dict(trace=f, kernels=len(kernels), copies=sum(e["cat"] == "gpu_memcpy" for e in dev),
               memsets=sum(e["cat"] == "gpu_memset" for e in dev), calls=len(calls), unlinked=len(unlinked),
               noflow=len(noflow), dangling=len(dangling), dropped=dropped, device=props[0].get("name", "?"))
    print("%-30s %7d %6d %7d %6d %8d %6d %8d %7d" % (f[:30], row["kernels"], row["copies"], row["memsets"], row["calls"],
          row["unlinked"], row["noflow"], row["dangling"], dropped))
    problems = []
    if not kernels:
        problems.append("no kernels")
    if unlinked:
        problems.append("%d device events not linked to a host op (e.g. %s)" % (len(unlinked), unlinked[0]["name"]))
    if noflow:
        problems.append("%d kernels without a launch flow (e.g. %s)" % (len(noflow), noflow[0]["name"]))
    if dangling:
        problems.append("%d flow ends without a start" % len(dangling))
    if dropped != 0:
        problems.append("%d dropped records" % dropped)
    if not real:
        problems.append("deviceProperties does not describe a real GPU: %s" % json.dumps(props)[:120])
    for p in problems:
        print("PROBLEM %s: %s" % (f, p))
    row["problems"] = problems
    rows.append(row)
    bad += bool(problems)
json.dump(rows, open(out, "w"), indent=1)
sys.exit(1 if bad else 0)
PY
	local rc=$?
	NOTE="$(grep -c '^PROBLEM' "$LOGS/traces.log") problem(s) in $(ls "$TR"/*.json.gz | wc -l) traces"
	return $rc
}
s_signatures() {
	ls "$TR"/*.json.gz >/dev/null 2>&1 || {
		NOTE="no traces"
		return 77
	}
	python3 "$SRC/tests/tools/tracecheck.py" emu "$TR"
	local rc=$?
	NOTE="$(grep -c '^ok' "$LOGS/signatures.log") held, $(grep -c '^FAIL' "$LOGS/signatures.log") failed"
	return $rc
}

# fixed_width SCENARIO COPY DIM: a copy of SCENARIO that runs at width DIM (a
# step of the calibration's ladder): a target no width reaches makes the ladder
# end at the scenario's "dim"
fixed_width() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["workload"]["dim"] = int(sys.argv[3])
d["workload"]["target_step_ms"] = 10000
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
}

# ---- the throttle (a straggler's device) on one GPU ----
THR=""
s_throttle() {
	needs build || return 77
	local f=${FL_GPU_THROTTLE:-3} d=$RES/throttle sc dim bad=0 mode read_on=0
	mkdir -p "$d"
	# each scenario twice at one fixed width (as in the overhead stage), without
	# and with the clock factor: the same kernels in the same order, so each
	# throttled kernel is read against its own unthrottled duration
	for sc in r8-opstorm-emu:96 r7-healthy-emu:1024; do
		dim=${sc#*:}
		sc=${sc%:*}
		fixed_width "$SRC/scenarios/emu/$sc.json" "$d/$sc.json" "$dim" || return 1
		for mode in 1 "$f"; do
			echo "== $sc at dim $dim, FL_CUDA_CLOCK_FACTOR=$mode"
			mkdir -p "$d/$sc-f$mode"
			if ! FL_CUDA_CLOCK_FACTOR=$mode $TIMEOUT "$RUN_TIMEOUT" "$FL" run "$d/$sc.json" --backend cuda \
				--steps "$STEPS" -o "$d/$sc-f$mode" >"$d/$sc-f$mode.out" 2>&1; then
				cat "$d/$sc-f$mode.out"
				NOTE="the $sc run with FL_CUDA_CLOCK_FACTOR=$mode failed"
				return 1
			fi
			cat "$d/$sc-f$mode.out"
		done
		# the backend's own account (the kernels' device time as the kernels
		# see it, the time added) and, per kernel, the throttled trace's
		# duration (the kernel folded with its stretch) over the unthrottled
		# one: f for a kernel long enough to be stretched, more for one shorter
		# than the stamp and stretch kernels' own cost (that floor is reported)
		python3 - "$d/$sc-f$f.out" "$(ls "$d/$sc-f1"/*.json.gz | head -1)" "$(ls "$d/$sc-f$f"/*.json.gz | head -1)" "$f" <<'PY'
import gzip, json, re, statistics, sys
out, base, thr, f = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
m = re.search(r"recorded window: kernels ([0-9.]+) ms, stretched by ([0-9.]+) ms \(stamp to kernel ([0-9.]+) us, kernel to stretch ([0-9.]+) us\)", open(out).read())
if not m:
    print("PROBLEM: no FL_CUDA_CLOCK_FACTOR line in the run's output")
    sys.exit(1)
real, added, c1, g2 = (float(v) for v in m.groups())
def kernels(p):
    ev = json.load(gzip.open(p, "rt"))["traceEvents"]
    k = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel" and not e["name"].startswith("nccl")]
    return sorted(k, key=lambda e: e["ts"])
a, b = kernels(base), kernels(thr)
name = thr.split("/")[-1]
if len(a) != len(b) or any(x["name"] != y["name"] for x, y in zip(a, b)):
    print("PROBLEM %s: the throttled run's kernels are not the unthrottled run's (%d vs %d)" % (name, len(b), len(a)))
    sys.exit(1)
long_ = [(y["dur"] / x["dur"]) for x, y in zip(a, b) if x["dur"] >= 10]
short = [(y["dur"] - x["dur"]) for x, y in zip(a, b) if x["dur"] < 10]
tot = sum(y["dur"] for y in b) / max(sum(x["dur"] for x in a), 1e-9)
med = statistics.median(long_) if long_ else float("nan")
print("THROTTLE %s: factor %.2f; %d kernels of >= 10 us: median %.3f x their unthrottled time (want %.2f); "
      "%d shorter: median +%.2f us each; all kernels %.3f x; the backend's account: kernels %.3f ms, added %.3f ms "
      "(stamp to kernel %.2f us, kernel to stretch %.2f us)"
      % (name, f, len(long_), med, f, len(short), statistics.median(short) if short else 0.0, tot, real, added, c1, g2))
if not long_:
    print("(%s: no kernel of 10 us or more: the factor is read on the other scenario; here only the floor)" % name)
    sys.exit(3)
ok = abs(med - f) <= 0.1 * f
if not ok:
    print("PROBLEM %s: kernels of 10 us or more take %.3f x, not %.2f x, their unthrottled time" % (name, med, f))
sys.exit(0 if ok else 1)
PY
		case $? in
		0) read_on=$((read_on + 1)) ;;
		3) ;;
		*) bad=1 ;;
		esac
	done
	THR=$(grep '^THROTTLE' "$LOGS/throttle.log" | sed 's/^THROTTLE //' | paste -sd ';' -)
	NOTE=$THR
	if [ $read_on = 0 ]; then
		NOTE="no scenario had a kernel of 10 us or more to read the factor on; $THR"
		bad=1
	fi
	[ $bad = 0 ]
}

# ---- capture overhead ----
OVH_ON="" OVH_OFF="" OVH_RATIO="" OVH_PCT=""
s_overhead() {
	needs build || return 77
	local s on=() off=() i mode v d=$RES/overhead
	mkdir -p "$d"
	# one model width for both modes: each run calibrates its width to a 0.3 ms
	# healthy step, and with CUPTI on the same step measures slower, so the two
	# would pick different widths (80 and 96 on the first H200 run) and compare
	# different work.
	s=$d/r8-opstorm-fixed.json
	fixed_width "$SRC/scenarios/emu/r8-opstorm-emu.json" "$s" "$OVERHEAD_DIM" || return 1
	for i in 1 2 3; do
		for mode in 1 0; do
			echo "== pair $i, FL_CUPTI=$mode"
			if FL_CUPTI=$mode $TIMEOUT "$RUN_TIMEOUT" "$FL" run "$s" --backend "$BACKEND" --steps 20 -o "$d/cupti$mode" >"$d/run.out" 2>&1; then
				cat "$d/run.out"
				v=$(sed -n 's/.*step p50 \([0-9.]*\) ms.*/\1/p' "$d/run.out" | head -1)
				if [ "$mode" = 1 ]; then on+=("$v"); else off+=("$v"); fi
			else
				cat "$d/run.out"
				NOTE="a run with FL_CUPTI=$mode failed"
				return 1
			fi
			[ "$i" -gt 1 ] && rm -f "$d/cupti$mode"/*.json.gz # the first pair's traces are kept
		done
	done
	read -r OVH_ON OVH_OFF OVH_RATIO OVH_PCT DIMS < <(python3 - "${on[*]}" "${off[*]}" "$d" <<'PY'
import json, os, statistics, sys
on = [float(v) for v in sys.argv[1].split()]
off = [float(v) for v in sys.argv[2].split()]
def dim(m):
    try:
        t = json.load(open(os.path.join(sys.argv[3], "cupti%d" % m, "lab-r8-emu.truth.json")))
        return str(t["environment"]["calibration"]["dim"])
    except (OSError, KeyError, ValueError, TypeError):
        return "?"
a, b = statistics.median(on), statistics.median(off)
print("%.4f %.4f %.4f %.1f %s/%s" % (a, b, a / b, 100.0 * (a - b) / b, dim(1), dim(0)))
PY
)
	echo "step p50 on: ${on[*]}; off: ${off[*]}"
	NOTE="step p50 with CUPTI $OVH_ON ms, without $OVH_OFF ms: ratio $OVH_RATIO (+$OVH_PCT %, target <= $OVERHEAD_MAX %; calibrated dim on/off $DIMS)"
	python3 -c "import sys; sys.exit(0 if float('$OVH_PCT') <= float('$OVERHEAD_MAX') else 1)"
}

# ---- the anchor: Kineto's own overhead on the same storm (PyTorch, when there) ----
KIN=""
s_kineto() {
	local b
	b=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["workload"]["batch"])' "$SRC/scenarios/emu/r8-opstorm-emu.json")
	$TIMEOUT "$RUN_TIMEOUT" python3 "$SRC/bench/kineto_storm.py" --dim "$OVERHEAD_DIM" --batch "$b" --steps 20 --pairs 3
	local rc=$?
	KIN=$(grep -m1 '^KINETO' "$LOGS/kineto.log" | sed 's/^KINETO //')
	NOTE=${KIN:-$(grep -m1 '^skipped' "$LOGS/kineto.log")}
	return $rc
}

# ---- summary ----
summary() {
	local md=$RES/summary.md
	{
		echo "# gpu-check $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo
		echo "- machine: $NGPU GPU(s): $GPU"
		echo "- build: $(
			IFS=,
			echo "${DEPNOTES[*]:-?}"
		); compiler warnings: $WARNINGS"
		echo "- throttle: ${THR:-?}"
		echo "- capture overhead (r8-opstorm-emu at dim $OVERHEAD_DIM, step p50): on ${OVH_ON:-?} ms, off ${OVH_OFF:-?} ms, ratio ${OVH_RATIO:-?} (+${OVH_PCT:-?} %)"
		echo "- anchor, PyTorch's profiler on the same storm: ${KIN:-not run}"
		echo "- $passes passed, $fails failed, in $(elapsed) s (budget $BUDGET s)"
		echo
		echo "| stage | status | s | note |"
		echo "|---|---|---|---|"
		awk -F'\t' '{gsub(/\|/, "/", $4); printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4}' "$STAGES"
		if [ -s "$LOGS/traces.json" ]; then
			echo
			echo '```'
			grep -v '^PROBLEM' "$LOGS/traces.log"
			grep '^PROBLEM' "$LOGS/traces.log" | head -20
			echo '```'
		fi
		if [ -e "$LOGS/warnings.txt" ]; then
			echo
			echo "compiler warnings (first 20, unique):"
			echo '```'
			cat "$LOGS/warnings.txt"
			echo '```'
		fi
	} >"$md"
	python3 - "$STAGES" "$RES/summary.json" "$LOGS/traces.json" <<PY 2>/dev/null
import json, os, sys
stages = []
for line in open(sys.argv[1]):
    n, s, t, note = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
    stages.append({"stage": n, "status": s, "seconds": int(t or 0), "note": note})
def num(v):
    try:
        return float(v)
    except ValueError:
        return None
doc = {"gpus": $NGPU, "gpu": "$GPU", "passed": $passes, "failed": $fails, "seconds": $(elapsed),
       "budget_s": $BUDGET, "compiler_warnings": $WARNINGS,
       "overhead": {"on_ms": num("$OVH_ON"), "off_ms": num("$OVH_OFF"), "ratio": num("$OVH_RATIO"),
                    "pct": num("$OVH_PCT"), "max_pct": num("$OVERHEAD_MAX")},
       "stages": stages}
if os.path.exists(sys.argv[3]):
    doc["traces"] = json.load(open(sys.argv[3]))
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
	echo
	echo "== summary ($RES/summary.md)"
	sed -n '3,8p' "$md"
	echo "results in $RES"
}

echo "gpu-check: results in $RES"
if ! stage env s_env; then
	if [ "${FL_GPU_ASSUME:-0}" != 1 ]; then
		summary
		echo "skipped: no usable GPU (nvidia-smi -L failed)"
		exit 77
	fi
fi
stage deps s_deps
stage configure s_configure
stage build s_build
stage unit s_unit
plan_runs
for r in "${RUNS[@]}"; do
	IFS='|' read -r name s ranks args <<<"$r"
	stage "run-$name" s_run "$name" "$s" "$ranks" $args
done
stage auto s_auto
stage validate s_validate
stage traces s_traces
stage signatures s_signatures
stage throttle s_throttle
stage overhead s_overhead
stage kineto s_kineto
summary
[ "$fails" = 0 ]
