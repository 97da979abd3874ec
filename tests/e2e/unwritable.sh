# An output directory that cannot be written exits 3 and leaves no partial file.
. "$(dirname "$0")/lib.sh"

sc="$SRC/scenarios/r7-healthy.json"
touch "$TMP/a-file"
expect_exit 3 "output under a regular file" -- "$FL" run "$sc" -o "$TMP/a-file/out"
expect_err_has "a-file" "the message names the directory"

# The destination name is taken by a directory: the rename fails at the very end.
mkdir -p "$TMP/out/lab-r7-a.json.gz"
expect_exit 3 "trace name taken by a directory" -- "$FL" run "$sc" -o "$TMP/out" --steps 2
expect_err_has "lab-r7-a.json.gz" "the message names the file"
left=$(find "$TMP/out" -name '*.tmp-*' -o -name '*.truth.json' | wc -l)
[ "$left" = 0 ] && pass "no temporary or truth file left behind" || fail "$left partial files left: $(find "$TMP/out")"

finish
