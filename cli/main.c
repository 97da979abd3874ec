/* main.c — the faultline entry point: dispatch a command, map its status to
 * the exit code, and make sure stdout reached its destination. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

static int finish(enum fl_status st)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (!st) {
			fprintf(stderr, "faultline: cannot write to standard output: %s\n", strerror(errno));
			st = FL_ERUNTIME;
		}
	}
	if (st && st != FL_ECHECK && fl_error_msg()[0])
		fprintf(stderr, "faultline: %s\n", fl_error_msg());
	else if (st == FL_ECHECK && fl_error_msg()[0])
		fprintf(stderr, "faultline: %s\n", fl_error_msg());
	return (int)st;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fl_print_usage();
		return finish(fl_error(FL_EINPUT, "expected a command"));
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fl_print_usage();
		return finish(FL_OK);
	}
	if (!strcmp(cmd, "--version")) {
		printf("faultline %s\n", FL_VERSION);
		return finish(FL_OK);
	}
	if (!strcmp(cmd, "help")) {
		if (argc > 2) {
			const struct fl_command *c = fl_command_find(argv[2]);
			if (!c)
				return finish(fl_error(FL_EINPUT, "unknown command '%s' (see 'faultline --help')", argv[2]));
			fputs(c->usage, stdout);
		} else {
			fl_print_usage();
		}
		return finish(FL_OK);
	}
	const struct fl_command *c = fl_command_find(cmd);
	if (!c)
		return finish(fl_error(FL_EINPUT, "unknown command '%s' (see 'faultline --help')", cmd));
	return finish(c->run(argc - 1, argv + 1));
}
