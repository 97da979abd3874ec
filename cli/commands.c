/* commands.c — the command table, the dispatch from main() and the top-level
 * help. A command's --help text, options and code are in cli/cmd_NAME.c. */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

const struct fl_command fl_commands[] = {
	{"run", "run one scenario: capture its trace and write its truth", fl_run_usage,
	 {.opts = fl_run_opts, .arg = "scenario file", .min_args = 1, .max_args = 1}, fl_cmd_run},
	{"regen", "regenerate every scenario of a directory (default: the R7-R9 set)", fl_regen_usage,
	 {.opts = fl_regen_opts, .arg = "scenario directory", .max_args = 1}, fl_cmd_regen},
	{"faults", "list the fault modules, their families and parameters", fl_faults_usage,
	 {.opts = fl_faults_opts, .max_args = 0}, fl_cmd_faults},
	{"analyze", "metrics of traces: steps, spans, ops, gaps, periods; compare runs", fl_analyze_usage,
	 {.opts = fl_analyze_opts, .arg = "trace file", .min_args = 1, .max_args = -1}, fl_cmd_analyze},
	/* keep_going: a usage error still leaves a report where --out says */
	{"grade", "grade a learner's answer against the truth with a rubric", fl_grade_usage,
	 {.opts = fl_grade_opts, .max_args = 0, .keep_going = 1}, fl_cmd_grade},
	{"diagnose", "name the fault family from the traces alone, with evidence", fl_diagnose_usage,
	 {.opts = fl_diagnose_opts, .arg = "trace file", .min_args = 1, .max_args = -1}, fl_cmd_diagnose},
	{"assign", "one variant of a scenario per learner of a roster, and the roster to grade them", fl_assign_usage,
	 {.opts = fl_assign_opts, .arg = "scenario file", .min_args = 1, .max_args = 1}, fl_cmd_assign},
	{"validate", "structural check of traces", fl_validate_usage, {.opts = fl_validate_opts, .arg = "trace file", .min_args = 1, .max_args = -1},
	 fl_cmd_validate},
	{"fleet", "fleet job logs: analyze AcmeTrace CSVs, generate simulated fleets", fl_fleet_usage,
	 {.opts = fl_fleet_opts, .arg = "subcommand", .min_args = 0, .max_args = -1}, fl_cmd_fleet},
	{NULL, NULL, NULL, {NULL, NULL, 0, 0, 0}, NULL},
};

const struct fl_command *fl_command_find(const char *name)
{
	for (const struct fl_command *c = fl_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

enum fl_status fl_command_args(const char *name, int argc, char **argv, struct fl_args *a)
{
	const struct fl_command *c = fl_command_find(name);
	*a = (struct fl_args){0};
	if (!c)
		return fl_error(FL_EINTERNAL, "command '%s' is not in the command table", name);
	return fl_opts_parse(c, argc, argv, a);
}

void fl_print_usage(void)
{
	printf("usage: faultline COMMAND [ARGS]\n\n"
	       "faultline runs a real workload with performance faults injected on purpose,\n"
	       "captures what ran as a Kineto/Chrome trace, and writes the exact truth.\n\n"
	       "commands:\n");
	for (const struct fl_command *c = fl_commands; c->name; c++)
		printf("  %-10s %s\n", c->name, c->summary);
	printf("\n'faultline COMMAND --help' describes a command. 'faultline --version' prints the version.\n"
	       "Exit codes: 0 ok; 1 a check failed; 2 usage or bad input; 3 runtime error; 4 internal error.\n");
}

enum fl_status fl_command_main(int argc, char **argv)
{
	if (argc < 2) {
		fl_print_usage();
		return fl_error(FL_EINPUT, "expected a command");
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fl_print_usage();
		return FL_OK;
	}
	if (!strcmp(cmd, "--version")) {
		printf("faultline %s\n", FL_VERSION);
		return FL_OK;
	}
	if (!strcmp(cmd, "help")) {
		if (argc > 2) {
			const struct fl_command *c = fl_command_find(argv[2]);
			if (!c)
				return fl_error(FL_EINPUT, "unknown command '%s' (see 'faultline --help')", argv[2]);
			fputs(c->usage, stdout);
		} else {
			fl_print_usage();
		}
		return FL_OK;
	}
	const struct fl_command *c = fl_command_find(cmd);
	if (!c)
		return fl_error(FL_EINPUT, "unknown command '%s' (see 'faultline --help')", cmd);
	return c->run(argc - 1, argv + 1);
}
