# Malformed scenarios exit 2 with a message naming the file, the place and the
# expectation, and write nothing.
. "$(dirname "$0")/lib.sh"

good='"schema": "faultline.scenario/1", "name": "t", "schedule": {"wait": 0, "warmup": 1, "active": 2}, "workload": {"target_step_ms": 0.05}'
bad() { # NAME TEXT EXPECTED-FRAGMENT...
	local name=$1 text=$2
	shift 2
	printf '%s\n' "$text" >"$TMP/$name.json"
	expect_exit 2 "$name" -- "$FL" run "$TMP/$name.json" -o "$TMP/out-$name"
	expect_err_has "$name.json" "$name: names the file"
	for frag in "$@"; do expect_err_has "$frag" "$name: says '$frag'"; done
	if [ -e "$TMP/out-$name" ] && [ -n "$(ls -A "$TMP/out-$name")" ]; then fail "$name: wrote files"; else pass "$name: wrote nothing"; fi
}

bad syntax "{
  \"schema\": \"faultline.scenario/1\",
  \"name\": \"t\",,
}" "line 3" "syntax"
bad unknown_key "{ $good, \"colour\": \"red\" }" "colour" "unknown key" "expected one of"
bad typo_nested "{ $good, \"faults\": [{\"fault\": \"loader_sleep\", \"parms\": {}}] }" "faults[0].parms" "unknown key"
bad wrong_type "{ $good, \"ranks\": \"two\" }" "ranks" "expected an integer" "got a string"
bad wrong_type_param "{ $good, \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"ms\": \"30\"}}] }" "faults[0].params.ms" "expected a number"
bad unknown_fault "{ $good, \"faults\": [{\"fault\": \"cosmic_ray\"}] }" "faults[0].fault" "cosmic_ray" "faultline faults"
bad out_of_range "{ $good, \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"ms\": -5}}] }" "faults[0].params.ms" "out of range" "[0.01, 60000]"
bad unknown_param "{ $good, \"faults\": [{\"fault\": \"op_storm\", \"params\": {\"chains\": 3}}] }" "faults[0].params.chains" "unknown parameter" "pre, post"
bad bad_steps "{ $good, \"faults\": [{\"fault\": \"loader_sleep\", \"params\": {\"steps\": \"some\"}}] }" "faults[0].params.steps" "\"all\""
bad bad_schema "{ \"schema\": \"faultline.scenario/2\", \"name\": \"t\", \"workload\": {} }" "schema" "unsupported version"
bad no_workload "{ \"schema\": \"faultline.scenario/1\", \"name\": \"t\" }" "workload" "missing"
bad min_dim_over_dim "{ \"schema\": \"faultline.scenario/1\", \"name\": \"t\", \"workload\": {\"dim\": 256, \"min_dim\": 512} }" "workload.min_dim" "above workload.dim"
bad bad_phase "{ $good, \"faults\": [{\"fault\": \"periodic_stall\", \"params\": {\"phase\": \"backward\"}}] }" "faults[0]" "backward" "not a phase"
bad offset_period "{ $good, \"faults\": [{\"fault\": \"periodic_stall\", \"params\": {\"period\": 2, \"offset\": 2}}] }" "offset" "below period"
bad not_object "[1, 2, 3]" "top level" "expected an object"
bad empty "" "line 1" "syntax"
printf '\x00\x01\xff' >"$TMP/binary.json"
expect_exit 2 "binary file" -- "$FL" run "$TMP/binary.json" -o "$TMP/out-binary"
expect_err_has "binary.json" "binary file: names the file"
finish
