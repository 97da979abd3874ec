#!/usr/bin/env bash
# Start a new fault module: copy faults/TEMPLATE.c to faults/NAME.c with its
# symbols renamed, and add the module's one line to faults/registry.c.
#   scripts/new-fault.sh NAME            # NAME: lowercase letters and '_'
#   scripts/new-fault.sh --print NAME    # write the file, only print the registry line
# Then edit faults/NAME.c (docs/authoring-faults.md) and rebuild: the build finds
# the new file by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

add=1
if [ "${1:-}" = "--print" ]; then
	add=0
	shift
fi
name=${1:-}
if [ $# -ne 1 ] || [ -z "$name" ]; then
	echo "usage: scripts/new-fault.sh [--print] NAME" >&2
	exit 2
fi
if ! [[ $name =~ ^[a-z][a-z_]*[a-z]$ ]]; then
	echo "new-fault: '$name' is not a fault name: expected lowercase letters and '_' (e.g. slow_logger)" >&2
	exit 2
fi
if [ "$name" = template_fault ]; then
	echo "new-fault: 'template_fault' is the template's own name; choose another" >&2
	exit 2
fi
file=faults/$name.c
if [ -e "$file" ]; then
	echo "new-fault: $file already exists" >&2
	exit 2
fi
if grep -q "^[[:space:]]*X($name)" faults/registry.c; then
	echo "new-fault: '$name' is already in faults/registry.c" >&2
	exit 2
fi

# the template's note on how to start from it does not belong in a module
sed -e "s/template_fault/$name/g" -e '/Start a module from this file/,/This file itself is not built/d' \
	faults/TEMPLATE.c >"$file"
echo "new-fault: wrote $file"

pad=$((29 - ${#name} - 3))
[ "$pad" -ge 1 ] || pad=1
line=$(printf '\tX(%s)%*s\\' "$name" "$pad" "")
marker="a new module's line goes above this one"
if [ "$add" = 1 ]; then
	if ! grep -qF "$marker" faults/registry.c; then
		echo "new-fault: faults/registry.c lacks the line '/* $marker */'; add this line to its list:" >&2
		printf '%s\n' "$line" >&2
		exit 3
	fi
	awk -v line="$line" -v marker="$marker" 'index($0, marker) { print line } { print }' faults/registry.c \
		>faults/registry.c.new
	mv faults/registry.c.new faults/registry.c
	echo "new-fault: added to faults/registry.c:"
else
	echo "new-fault: add this line to the list in faults/registry.c (above the closing comment):"
fi
printf '%s\n' "$line"
echo "next: fill in faults/$name.c (summary, family and fix IDs, params, hooks), then rebuild and run"
echo "      ctest -R 'unit_faults|unit_registry|unit_every_fault'"
