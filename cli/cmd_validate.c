/* cmd_validate.c — faultline validate: the structural check of traces
 * (grader/trace/validate.c), one line per trace. */
#include <stdio.h>

#include "cli/commands.h"
#include "common/strbuf.h"
#include "grader/trace/validate.h"

const char fl_validate_usage[] =
	"usage: faultline validate TRACE...\n"
	"\n"
	"Checks that each trace has the Kineto layout Perfetto and HTA rely on: metadata\n"
	"before traceEvents, \"rank\": N with the space, complete X events with dur >= 0,\n"
	"properly nested rows, ProfilerStep spans, named rows, a final Record Window End.\n"
	"\n"
	"Exit: 0 all valid; 1 a trace is invalid; 2 a trace cannot be read.\n";

const struct fl_opt fl_validate_opts[] = {
	{.name = NULL},
};

enum fl_status fl_cmd_validate(int argc, char **argv)
{
	struct fl_args a;
	enum fl_status st = fl_command_args("validate", argc, argv, &a);
	if (st || a.help) {
		fl_args_release(&a);
		return st;
	}
	size_t n = a.nargs, bad = 0, unreadable = 0;
	for (size_t i = 0; i < n; i++) {
		struct strbuf rep = STRBUF_INIT;
		st = fl_trace_validate(a.args[i], &rep);
		if (st == FL_OK) {
			printf("%s: ok\n", a.args[i]);
		} else if (st == FL_ECHECK) {
			printf("%s: invalid\n%s", a.args[i], rep.buf);
			bad++;
		} else {
			fprintf(stderr, "faultline: %s\n", fl_error_msg());
			unreadable++;
		}
		strbuf_release(&rep);
	}
	fl_args_release(&a);
	if (unreadable)
		return fl_error(FL_EINPUT, "validate: %zu of %zu traces could not be read", unreadable, n);
	if (bad)
		return fl_error(FL_ECHECK, "validate: %zu of %zu traces are invalid", bad, n);
	return FL_OK;
}
