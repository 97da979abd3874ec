# Outputs stay whole under hard faults: kill -9 of `faultline run` at any moment
# leaves no partial trace or truth under its final name (and never a truth beside
# another run's trace), and the next run removes the killed run's temporaries and
# scratch folders (in its own $TMPDIR here, so that they can be counted); a
# full disk (ulimit -f) exits 3 naming the file with nothing left behind; a rank
# killed mid-run (data-parallel or mixture-of-experts) ends the whole run within
# the watchdog period, exit 3 naming the rank, and no truth; `grade --out` onto a full disk exits 2 as documented.
. "$(dirname "$0")/lib.sh"
sc="$SRC/scenarios/r7-healthy.json"
out="$TMP/out"
trace="$out/lab-r7-a.json.gz" truth="$out/lab-r7-a.truth.json"

# whole or absent: a trace that inflates, a truth that parses and names this trace's hash
consistent() {
	python3 - "$trace" "$truth" <<'PY'
import gzip, hashlib, json, os, sys
tr, tu = sys.argv[1], sys.argv[2]
if os.path.exists(tr):
    json.loads(gzip.decompress(open(tr, "rb").read()))
if os.path.exists(tu):
    t = json.load(open(tu))
    assert os.path.exists(tr), "a truth without its trace"
    h = hashlib.sha256(open(tr, "rb").read()).hexdigest()
    assert h in json.dumps(t["traces"]), "the truth describes another trace"
PY
}
scratch="$TMP/scratch"
mkdir -p "$scratch"
scratch_left() { find "$scratch" -mindepth 1 -maxdepth 1 -name 'faultline-scratch.*' | wc -l; }
expect_exit 0 "a first whole run" -- env TMPDIR="$scratch" "$FL" run "$sc" --steps 40 -o "$out"
[ "$(scratch_left)" = 0 ] && pass "a whole run removes its scratch folder" || fail "a whole run left: $(ls -a "$scratch")"
bad=0 killed_in_write=0 with_scratch=0 piled=0
for i in $(seq 1 20); do
	TMPDIR="$scratch" FL_TEST_COMMIT_PAUSE_MS=100 "$FL" run "$sc" --steps 40 -o "$out" >/dev/null 2>&1 &
	pid=$!
	if [ $((i % 2)) = 0 ]; then # during a write: once a temporary exists
		for _ in $(seq 1 400); do
			ls -a "$out" | grep -q '\.tmp-' && break
			sleep 0.005
		done
		ls -a "$out" | grep -q '\.tmp-' && killed_in_write=$((killed_in_write + 1))
	else
		sleep "0.$(printf '%03d' $((RANDOM % 400)))"
	fi
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	# each run removed the folder of the killed run before it: one at most is left
	n=$(scratch_left)
	[ "$n" = 1 ] && with_scratch=$((with_scratch + 1))
	[ "$n" -gt 1 ] && piled=$((piled + 1))
	consistent >"$TMP/c.$i" 2>&1 || { bad=$((bad + 1)); sed 's/^/      | /' "$TMP/c.$i" | tail -2; }
done
[ "$bad" = 0 ] && pass "20 kills -9: every final trace and truth whole and consistent" || fail "$bad kills left a partial output"
[ "$killed_in_write" -ge 5 ] && pass "$killed_in_write kills landed during a trace or truth write" ||
	fail "only $killed_in_write kills landed during a write"
[ "$with_scratch" -ge 5 ] && [ "$piled" = 0 ] &&
	pass "$with_scratch killed runs left a scratch folder, each removed by the next run" ||
	fail "$with_scratch killed runs left a scratch folder; $piled times more than one was left"
# what only looks like a killed run's folder is left alone: a live run's, which
# holds its lock (tests/unit/check_scenario.c), and here a symbolic link of the
# pattern, never followed
mkdir -p "$TMP/keep" && touch "$TMP/keep/file"
ln -s "$TMP/keep" "$scratch/faultline-scratch.symlnk"
expect_exit 0 "the next run" -- env TMPDIR="$scratch" "$FL" run "$sc" --steps 4 -o "$out"
left=$(ls -a "$out" | grep -c '\.tmp-')
[ "$left" = 0 ] && pass "the next run removed the killed runs' temporaries" || fail "$left temporaries left: $(ls -a "$out")"
[ "$(scratch_left)" = 1 ] && [ -e "$TMP/keep/file" ] &&
	pass "and their scratch folders, leaving the link and where it points alone" || fail "scratch left: $(ls -a "$scratch")"
[ -s "$trace" ] && [ -s "$truth" ] && consistent && pass "and wrote a whole trace and truth" || fail "the next run's outputs"

# a full disk: a file-size limit far below the trace's size
full="$TMP/full"
( ulimit -f 8; exec "$FL" run "$sc" --steps 40 -o "$full" ) >"$TMP/.stdout" 2>"$TMP/.stderr"
rc=$?
[ "$rc" = 3 ] && pass "file-size limit: exit 3" || { fail "file-size limit: exit $rc, expected 3"; head -3 "$TMP/.stderr"; }
expect_err_has "lab-r7-a.json.gz" "the message names the file"
[ -z "$(ls -A "$full" 2>/dev/null)" ] && pass "nothing left in the output directory" || fail "left: $(ls -a "$full")"

# grade --out onto a full disk: exit 2 (--out cannot be written), the report not half there
ex="$SRC/scenarios/examples"
# (1 KB: the report is larger, the message on stderr, a file too, still fits)
( ulimit -f 1; exec "$FL" grade --truth "$ex/truth/lab-starved.truth.json" --answer "$ex/r7-starved-right.txt" \
	--format json --out "$TMP/report.txt" ) >"$TMP/.stdout" 2>"$TMP/.stderr"
rc=$?
[ "$rc" = 2 ] && pass "grade --out onto a full disk: exit 2" || { fail "grade --out: exit $rc, expected 2"; head -3 "$TMP/.stderr"; }
expect_err_has "report.txt" "the message names the report"
[ ! -e "$TMP/report.txt" ] && [ -z "$(ls -a "$TMP" | grep '\.report\.txt\.tmp-')" ] && pass "no partial report" || fail "a partial report"

# a rank killed mid-run: the run ends within the watchdog period, naming the
# rank, in the data-parallel workload and in the mixture of experts (whose
# ranks wait for each other inside all-to-alls)
kill_rank() {
	local sc=$1 truth=$2 tag=$3
	local start top victim rc took
	start=$(date +%s)
	FL_HARD_FAULTS_TMP=$TMP FL_WATCHDOG_S=3 timeout 60 "$FL" run "$sc" --ranks 2 --steps 2000 -o "$TMP/$tag" >"$TMP/$tag.out" 2>"$TMP/$tag.err" &
	top=$!
	victim=""
	for _ in $(seq 1 200); do # rank 1: the process whose environment says so, once it has started stepping
		for p in $(ps -u "$(id -u)" -o pid=); do
			env=$(tr '\0' '\n' 2>/dev/null <"/proc/$p/environ") || continue
			grep -qx "OMPI_COMM_WORLD_RANK=1" <<<"$env" && grep -qx "FL_HARD_FAULTS_TMP=$TMP" <<<"$env" &&
				grep -q "faultline" "/proc/$p/cmdline" 2>/dev/null && victim=$p
		done
		[ -n "$victim" ] && break
		sleep 0.05
	done
	sleep 1.5
	[ -n "$victim" ] && kill -9 "$victim"
	wait "$top"
	rc=$?
	took=$(( $(date +%s) - start ))
	[ -n "$victim" ] && pass "$tag: rank 1 (pid $victim) killed" || fail "$tag: rank 1 not found"
	[ "$rc" = 3 ] && pass "$tag: the run exits 3" || fail "$tag: the run exits $rc, expected 3"
	[ "$took" -lt 20 ] && pass "$tag: it ended after ${took}s" || fail "$tag: it took ${took}s"
	grep -q "rank 1" "$TMP/$tag.err" && pass "$tag: the message names rank 1" || { fail "$tag: the message names the rank"; tail -5 "$TMP/$tag.err"; }
	[ ! -e "$TMP/$tag/$truth" ] && pass "$tag: no truth file" || fail "$tag: a truth file was written"
}
kill_rank "$SRC/scenarios/ddp-healthy.json" ddp-run-a.truth.json ddp
kill_rank "$SRC/scenarios/moe-healthy.json" moe-run-h.truth.json moe
finish
