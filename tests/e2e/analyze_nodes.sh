# analyze --device across processes and threads: the 8 rank files of a job
# split between 1, 2 and 4 processes under mpirun (file i to process i % P),
# and read 1, 2 or 8 at a time in one process, give the very bytes one
# process gives (text and JSON), errors included; and so do the 2 ranks of a
# real multi-rank run. Compared with cmp: no tolerance.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skipped: python3 is not installed"; exit 77; }

python3 "$SRC/tests/tools/synth_trace.py" "$TMP/syn" --ranks 8 --steps 5 --seed 11 >/dev/null ||
	fail "synth_trace.py"
files=$(ls "$TMP"/syn/synthetic.rank-*)
[ "$(echo "$files" | wc -l)" = 8 ] && pass "8 rank files" || fail "8 rank files: $(echo "$files" | wc -l)"

# one process, as today: the reference
"$FL" analyze --device $files >"$TMP/ref.txt" 2>"$TMP/ref.err" || fail "analyze --device: exit $?"
"$FL" analyze --device --json $files >"$TMP/ref.json" || fail "analyze --device --json: exit $?"
python3 - "$TMP/ref.json" <<'PY' && pass "the reference pools 8 ranks and names a straggler" || fail "reference"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["rank_ids"] == list(range(8)), d["rank_ids"]
assert len(d["ranks"]) == 8 and d["straggler"]["rank"] is not None, d["straggler"]
PY

same() { # DESCRIPTION A B
	if cmp -s "$2" "$3"; then pass "$1"; else
		fail "$1: differs"
		diff "$2" "$3" | head -6 | sed 's/^/      | /'
	fi
}

for j in 1 2 8; do
	"$FL" analyze --device --jobs "$j" $files >"$TMP/j$j.txt"
	"$FL" analyze --device --json --jobs "$j" $files >"$TMP/j$j.json"
	same "--jobs $j: text identical" "$TMP/ref.txt" "$TMP/j$j.txt"
	same "--jobs $j: JSON identical" "$TMP/ref.json" "$TMP/j$j.json"
done
expect_exit 2 "--jobs 0 is refused" -- "$FL" analyze --device --jobs 0 $files

if ! command -v mpirun >/dev/null; then
	echo "skip  mpirun: not installed (openmpi-bin)"
	finish
	exit
fi
if ! ldd "$FL" 2>/dev/null | grep -q libmpi; then
	echo "skip  mpirun: this faultline was built without MPI"
	finish
	exit
fi
# the flags the project's own multi-rank runs use (generator/harness.c fl_mpirun)
MPIRUN="mpirun --oversubscribe --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
[ "$(id -u)" = 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
for np in 1 2 4; do
	$MPIRUN -np "$np" "$FL" analyze --device $files >"$TMP/m$np.txt" 2>"$TMP/m$np.err" ||
		{ fail "mpirun -np $np: exit $?"; sed 's/^/      | /' "$TMP/m$np.err" | head -5; }
	$MPIRUN -np "$np" "$FL" analyze --device --json --jobs 2 $files >"$TMP/m$np.json" 2>>"$TMP/m$np.err"
	same "mpirun -np $np: text identical" "$TMP/ref.txt" "$TMP/m$np.txt"
	same "mpirun -np $np: JSON identical" "$TMP/ref.json" "$TMP/m$np.json"
done
# more processes than files: some read none
$MPIRUN -np 3 "$FL" analyze --device --json "$TMP"/syn/synthetic.rank-0.json.gz "$TMP"/syn/synthetic.rank-1.json \
	>"$TMP/m3.json" 2>/dev/null
"$FL" analyze --device --json "$TMP"/syn/synthetic.rank-0.json.gz "$TMP"/syn/synthetic.rank-1.json >"$TMP/r2.json"
same "mpirun -np 3 on 2 files: JSON identical" "$TMP/r2.json" "$TMP/m3.json"

# errors: the same message and exit code as one process, said once
head -c 3000 "$TMP/syn/synthetic.rank-3.json" >"$TMP/cut.json"
for case in "missing:$TMP/none.json" "duplicate rank:$TMP/syn/synthetic.rank-5.json" "truncated:$TMP/cut.json"; do
	what=${case%%:*} extra=${case#*:}
	"$FL" analyze --device $files "$extra" >/dev/null 2>"$TMP/e1"
	r1=$?
	$MPIRUN -np 4 "$FL" analyze --device $files "$extra" >"$TMP/e4.out" 2>"$TMP/e4"
	r4=$?
	if [ "$r1" = 2 ] && [ "$r4" = 2 ] && [ "$(grep -c '^faultline:' "$TMP/e4")" = 1 ] &&
		[ "$(grep '^faultline:' "$TMP/e4")" = "$(cat "$TMP/e1")" ] && [ ! -s "$TMP/e4.out" ]; then
		pass "mpirun -np 4, $what file: exit 2, one message, the same as one process's"
	else
		fail "mpirun -np 4, $what file: exit $r1/$r4"
		sed 's/^/      | /' "$TMP/e1" "$TMP/e4" | head -6
	fi
done

# a real 2-rank run
if "$FL" run "$SRC/scenarios/straggler.json" --ranks 2 --steps 4 -o "$TMP/run" >/dev/null 2>"$TMP/run.err"; then
	real=$(ls "$TMP"/run/*.rank-*.json.gz)
	"$FL" analyze --device --json $real >"$TMP/real1.json"
	$MPIRUN -np 2 "$FL" analyze --device --json $real >"$TMP/real2.json" 2>/dev/null
	same "a real 2-rank run, mpirun -np 2: JSON identical" "$TMP/real1.json" "$TMP/real2.json"
else
	fail "run straggler on 2 ranks"
	sed 's/^/      | /' "$TMP/run.err" | head -5
fi
finish
