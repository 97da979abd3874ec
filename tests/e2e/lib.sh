# Shared helpers for the end-to-end tests. Each test is run by ctest as
#   bash tests/e2e/NAME.sh FAULTLINE_BINARY SOURCE_DIR
set -u
FL=${1:?faultline binary}
SRC=${2:?source dir}
# a build variant may leave a test to another one (CMakeLists.txt says which and why)
if [ -n "${FL_SKIP:-}" ]; then echo "skipped: $FL_SKIP"; exit 77; fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fl-e2e.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=0
passes=0
pass() { echo "ok    $*"; passes=$((passes + 1)); }
fail() { echo "FAIL  $*"; fails=$((fails + 1)); }
# expect_exit CODE DESCRIPTION -- COMMAND...
expect_exit() {
	local want=$1 what=$2
	shift 3
	"$@" >"$TMP/.stdout" 2>"$TMP/.stderr"
	local got=$?
	if [ "$got" = "$want" ]; then pass "$what (exit $got)"; else
		fail "$what: exit $got, expected $want"
		sed 's/^/      | /' "$TMP/.stderr" | head -5
	fi
}
# expect_err_has TEXT DESCRIPTION: the last command's stderr contains TEXT
expect_err_has() {
	if grep -qF -- "$1" "$TMP/.stderr"; then pass "$2"; else
		fail "$2: stderr lacks '$1'"
		sed 's/^/      | /' "$TMP/.stderr" | head -5
	fi
}
# sig_pass DESCRIPTION SIGFILE: a tracecheck run that passed; when it skipped
# timing checks (the run's ranks shared a core another process kept busy, or
# its cores ran at unequal speeds: tracecheck.py crowded) the skip is said,
# with the first one and why, and the pass is the counts' and structure's
sig_pass() {
	if grep -q '^skip' "$2"; then
		echo "skip  $1: $(grep -c '^skip' "$2") timing checks not judged, the first: $(grep -m1 '^skip' "$2" | cut -c7-)"
		pass "$1 (the rest)"
	else
		pass "$1"
	fi
}
# keep_round DIR: a round whose signatures failed keeps its traces and truths
# (the test's temporary folder goes at exit) in FL_KEEP_FAILED, by default
# failed-rounds/ in the folder ctest runs the test from (the build folder)
keep_round() {
	local to="${FL_KEEP_FAILED:-$PWD/failed-rounds}/$(basename "$0" .sh)-$(basename "$1")-$(date +%Y%m%d-%H%M%S)"
	if mkdir -p "$to" && cp -r "$1"/. "$to"/; then
		echo "      kept this round's traces and truths in $to"
	else
		echo "      could not keep this round's traces in $to"
	fi
}
finish() {
	echo "$passes passed, $fails failed"
	[ "$fails" = 0 ]
}
