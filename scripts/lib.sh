# Shared by scripts/deps.sh, regen.sh and test.sh (sourced, not run): a
# timestamped line on stderr for each stage, and build steps whose output goes
# to a log file that is shown (its error lines, or its tail) when the step fails.

# seconds since the first script of this run started (inherited by the scripts it calls)
FL_SCRIPT_T0=${FL_SCRIPT_T0:-$(date +%s)}
export FL_SCRIPT_T0

# stage TEXT: "faultline [14:02:31 +12s] TEXT" on stderr
stage() {
	local now
	now=$(date +%s)
	printf 'faultline [%s +%ds] %s\n' "$(date +%H:%M:%S)" $((now - FL_SCRIPT_T0)) "$*" >&2
}

# show_log_errors LOG: the compiler's and CMake's error lines of LOG, or its tail
show_log_errors() {
	local log=$1 errs
	errs=$(grep -E -A3 'error:|Error|undefined reference|FAILED:|No such file|E: |fatal' "$log" | head -60) || true
	if [ -n "$errs" ]; then
		printf '%s\n' "$errs" | sed 's/^/  | /' >&2
	else
		tail -n 30 "$log" | sed 's/^/  | /' >&2
	fi
}

# logged LOG WHAT COMMAND...: run COMMAND with stdout and stderr appended to LOG;
# when it fails, print its errors and exit with its status, naming the log.
logged() {
	local log=$1 what=$2 rc=0
	shift 2
	mkdir -p "$(dirname "$log")"
	"$@" >>"$log" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		echo "faultline: $what failed (exit $rc); its errors:" >&2
		show_log_errors "$log"
		echo "faultline: $what failed; the whole output is in $log" >&2
		exit "$rc"
	fi
}
