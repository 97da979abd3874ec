#!/bin/bash
# ctest entry for the grader's end-to-end suite 'grade_formats' (tests/grader/grader_tests.py).
# usage: grade_formats.sh FAULTLINE_BINARY SOURCE_DIR
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
exec python3 "$2/tests/grader/grader_tests.py" grade_formats "$1" "$2"
