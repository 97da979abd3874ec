/* grader_commands.h — the grader's CLI commands (entries of cli/commands.c's
 * table). Each returns an fl_status that main() turns into the exit code. */
#ifndef FL_GRADER_COMMANDS_H
#define FL_GRADER_COMMANDS_H

#include "common/status.h"

extern const char fl_analyze_usage[];
extern const char fl_grade_usage[];

/* faultline analyze TRACE... [--json] [--top N] */
enum fl_status fl_cmd_analyze(int argc, char **argv);
/* faultline grade --truth T --answer A [--rubric R] [--format F] [--out FILE] ... */
enum fl_status fl_cmd_grade(int argc, char **argv);

#endif
