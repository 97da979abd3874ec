/* commands.h — the CLI command table. Each command returns an fl_status, which
 * main() turns into the exit code after checking that stdout closed cleanly. */
#ifndef FL_COMMANDS_H
#define FL_COMMANDS_H

#include "common/status.h"

struct fl_command {
	const char *name;
	const char *summary;
	const char *usage; /* full --help text */
	enum fl_status (*run)(int argc, char **argv);
};

/* NULL-terminated. */
extern const struct fl_command fl_commands[];
const struct fl_command *fl_command_find(const char *name);
void fl_print_usage(void);

#endif
