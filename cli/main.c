/* main.c — the faultline entry point: dispatch a command (cli/commands.c), map
 * its status to the exit code, and make sure stdout reached its destination. */
#include <errno.h>
#include <signal.h>
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
	if (st && fl_error_msg()[0])
		fprintf(stderr, "faultline: %s\n", fl_error_msg());
	return (int)st;
}

int main(int argc, char **argv)
{
	/* a file-size limit (ulimit -f) makes write() fail with EFBIG instead of
	 * killing the process, so the output is aborted and the file named */
	signal(SIGXFSZ, SIG_IGN);
	return finish(fl_command_main(argc, argv));
}
