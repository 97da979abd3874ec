# The layers depend one way: every project #include goes to its own layer or one
# below it (docs/design.md, "Layers"), and a fault module sees only faults/fault.h.
. "$(dirname "$0")/lib.sh"

# layer -> the layers it may include (besides itself)
allowed() {
	case $1 in
	common) echo "common" ;;
	capture) echo "common" ;;
	runtime) echo "common capture" ;;
	faults) echo "common capture runtime" ;;
	generator) echo "common capture runtime faults grader/trace grader/analysis" ;;
	grader/trace) echo "common" ;;
	grader/analysis) echo "common grader/trace" ;;
	grader/grading) echo "common grader/trace grader/analysis" ;;
	cli) echo "common capture runtime faults generator grader/trace grader/analysis grader/grading" ;;
	*) echo "?" ;;
	esac
}
layer_of() {
	case $1 in
	grader/trace/*) echo grader/trace ;;
	grader/analysis/*) echo grader/analysis ;;
	grader/grading/*) echo grader/grading ;;
	grader/*) echo grader ;;
	*) echo "${1%%/*}" ;;
	esac
}

cd "$SRC" || exit 2
bad=0
checked=0
for f in common/*.[ch] capture/*.[ch] runtime/*.[ch] runtime/*.cu faults/*.[ch] generator/*.[ch] \
	grader/*/*.[ch] grader/*.[ch] cli/*.[ch]; do
	[ -f "$f" ] || continue
	from=$(layer_of "$f")
	ok=" $from $(allowed "$from") "
	while IFS= read -r inc; do
		to=$(layer_of "$inc")
		checked=$((checked + 1))
		case "$ok" in
		*" $to "*) ;;
		*) fail "$f includes $inc: $from may not depend on $to"; bad=$((bad + 1)) ;;
		esac
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\/[^"]*\)".*/\1/p' "$f")
done
[ "$bad" = 0 ] && pass "$checked project includes follow the layers"

# grader/ holds only its three jobs
loose=$(ls grader/*.[ch] 2>/dev/null | wc -l)
[ "$loose" = 0 ] && pass "grader/ is split by job (trace, analysis, grading)" || fail "$loose files directly under grader/"

# a fault module sees one header (a fleet fault: faults/fleet_fault.h)
for f in faults/*.c; do
	case $f in faults/registry.c | faults/params.c | faults/fleet_registry.c) continue ;; esac
	one=faults/fault.h
	case $f in faults/fleet_*.c) one=faults/fleet_fault.h ;; esac
	others=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | grep -vx "$one")
	[ -z "$others" ] || fail "$f includes $(echo $others) (a fault sees only $one)"
done
pass "fault modules checked for one header"
finish
