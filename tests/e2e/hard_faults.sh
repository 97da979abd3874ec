# Outputs whole under hard faults: `faultline run` killed with SIGKILL at
# random moments (during the run, the trace write and the truth write) never
# leaves a partial trace or truth under its final name, and the next run
# removes the temporary files the killed ones left; a file size limit (a full
# disk, as `ulimit -f` makes it) gives exit 3 naming the file, and no partial
# output.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 not found: skipped" >&2; exit 77; }
sc="$SRC/scenarios/r7-healthy.json"
out="$TMP/out"
mkdir -p "$out"

# whole: a trace that gunzips and parses as JSON, a truth that parses
whole() {
	python3 - "$@" <<'PY'
import gzip, json, sys
for p in sys.argv[1:]:
    with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
        json.load(f)
PY
}

# how long a whole run takes, to spread the kills over it
t0=$(date +%s%N)
"$FL" run "$sc" -o "$TMP/probe" --steps 6 >/dev/null 2>&1
t1=$(date +%s%N)
span_us=$(((t1 - t0) / 1000))
[ "$span_us" -gt 0 ] || span_us=200000

bad=0
for i in $(seq 1 20); do
	rm -f "$out"/lab-healthy.json.gz "$out"/lab-healthy.truth.json
	"$FL" run "$sc" -o "$out" --steps 6 >/dev/null 2>&1 &
	pid=$!
	# a random moment within (and a little past) the run
	delay=$(python3 -c "import random; print(random.uniform(0, $span_us * 1.2) / 1e6)")
	sleep "$delay"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	for f in "$out"/lab-healthy.json.gz "$out"/lab-healthy.truth.json; do
		[ -e "$f" ] || continue
		whole "$f" 2>/dev/null || { bad=$((bad + 1)); echo "      | try $i: partial $(basename "$f")"; }
	done
done
[ "$bad" = 0 ] && pass "20 kills at random moments: no partial trace or truth under its final name" ||
	fail "$bad partial outputs under final names"
stale=$(find "$out" -name '.*.tmp-*' | wc -l)
echo "      | temporary files left by the kills: $stale"
expect_exit 0 "the next run succeeds" -- "$FL" run "$sc" -o "$out" --steps 2
left=$(find "$out" -name '.*.tmp-*' | wc -l)
[ "$left" = 0 ] && pass "the next run removed the stale temporary files" || fail "$left stale temporary files: $(ls -a "$out")"
whole "$out"/lab-healthy.json.gz "$out"/lab-healthy.truth.json && pass "its outputs are whole" || fail "outputs not whole"

# a full disk: the trace cannot grow past 4 KB (ulimit -f counts 1 KB blocks here)
full="$TMP/full"
mkdir -p "$full"
expect_exit 3 "file size limit: exit 3" -- bash -c "ulimit -f 4; exec \"\$0\" run \"\$1\" -o \"\$2\" --steps 40" "$FL" "$sc" "$full"
expect_err_has "lab-healthy" "the message names the file"
expect_err_has "File too large" "the message says why"
n=$(find "$full" -type f | wc -l)
[ "$n" = 0 ] && pass "no partial output (no trace, no truth, no temporary file)" || fail "left: $(ls -a "$full")"

finish
