# scripts/new-fault.sh: a new module from faults/TEMPLATE.c that compiles against
# faults/fault.h alone, and its one line in the registry; bad names are refused.
. "$(dirname "$0")/lib.sh"
command -v cc >/dev/null || { echo "skip: no C compiler (cc) on PATH" >&2; exit 77; }
# a copy of what the script and a fault module touch
mkdir -p "$TMP/src/scripts"
(cd "$SRC" && tar cf - faults common/status.h capture/clock.h runtime/tensor.h runtime/device.h) | (cd "$TMP/src" && tar xf -)
cp "$SRC/scripts/new-fault.sh" "$TMP/src/scripts/"
cd "$TMP/src" || exit 2
expect_exit 0 "new-fault.sh slow_logger" -- bash scripts/new-fault.sh slow_logger
grep -q 'X(slow_logger)' faults/registry.c && pass "the registry lists the new module" || fail "registry line missing"
[ "$(grep -c 'X(slow_logger)' faults/registry.c)" = 1 ] && pass "one registry line" || fail "registry line count"
grep -q 'template_fault' faults/slow_logger.c && fail "template_fault left in the module" || pass "symbols renamed"
grep -q 'fl_fault_slow_logger = {' faults/slow_logger.c && pass "the module defines fl_fault_slow_logger" || fail "ops symbol"
others=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' faults/slow_logger.c | grep -vx 'faults/fault.h')
[ -z "$others" ] && pass "the module includes only faults/fault.h" || fail "the module includes $others"
flags="-std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror -fsyntax-only -I."
expect_exit 0 "the new module compiles" -- cc $flags faults/slow_logger.c
expect_exit 0 "the registry compiles" -- cc $flags faults/registry.c
expect_exit 0 "the template itself compiles" -- cc $flags faults/TEMPLATE.c
expect_exit 2 "the same name again" -- bash scripts/new-fault.sh slow_logger
expect_err_has "already exists" "says the module exists"
expect_exit 2 "an uppercase name" -- bash scripts/new-fault.sh SlowLogger
expect_err_has "lowercase" "says what a name may hold"
expect_exit 2 "no name" -- bash scripts/new-fault.sh
expect_exit 0 "--print leaves the registry alone" -- bash scripts/new-fault.sh --print quiet_logger
grep -q 'X(quiet_logger)' faults/registry.c && fail "--print changed the registry" || pass "--print only prints"
grep -qF 'X(quiet_logger)' "$TMP/.stdout" && pass "--print prints the line" || fail "--print printed no line"
finish
