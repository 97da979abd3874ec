# Every scenario's trace opens in Perfetto as written: on every row the X events
# nest or follow each other (its importer drops a partially overlapping slice)
# and no duration is negative. Read back by an independent parser
# (tests/tools/perfetto_rows.py), 3 recorded steps per scenario.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skipped: python3 is not installed"; exit 77; }
for sc in "$SRC"/scenarios/*.json "$SRC"/scenarios/emu/*.json; do
	case $sc in *.rubric.json) continue ;; esac
	name=$(basename "$sc" .json)
	# multi-rank scenarios run on 2 ranks (the runs re-exec under mpirun)
	ranks=()
	grep -q '"ranks"' "$sc" && ranks=(--ranks 2)
	if "$FL" run "$sc" --steps 3 "${ranks[@]}" -o "$TMP/$name" >/dev/null 2>"$TMP/.stderr"; then
		if python3 "$SRC/tests/tools/perfetto_rows.py" "$TMP/$name"/*.json.gz >"$TMP/rows.log"; then
			pass "$name: $(grep -c '^ok' "$TMP/rows.log") trace(s), every row nests"
		else
			fail "$name: rows that Perfetto would drop"
			grep '^FAIL' "$TMP/rows.log" | head -5 | sed 's/^/      /'
		fi
	else
		fail "$name: faultline run failed"
		tail -3 "$TMP/.stderr" | sed 's/^/      | /'
	fi
done
finish
