/* commands.h — the CLI command table: one entry per command (its name, summary,
 * --help text, options and arguments, and the function that runs it), one file
 * per command (cli/cmd_NAME.c). Each command returns an fl_status, which main()
 * turns into the exit code after checking that stdout closed cleanly. */
#ifndef FL_COMMANDS_H
#define FL_COMMANDS_H

#include "cli/opts.h"
#include "common/status.h"

struct fl_command {
	const char *name;
	const char *summary;
	const char *usage;       /* full --help text */
	struct fl_optspec opts;  /* what fl_opts_parse accepts */
	/* argv[0] is the command's name; the command parses the rest itself, with
	 * fl_command_args, so it can be called (and re-executed) on its own */
	enum fl_status (*run)(int argc, char **argv);
};

/* NULL-terminated. */
extern const struct fl_command fl_commands[];
const struct fl_command *fl_command_find(const char *name);
void fl_print_usage(void);

/* Parse a command's arguments against its table entry (fl_opts_parse). */
enum fl_status fl_command_args(const char *name, int argc, char **argv, struct fl_args *a);

/* main(): run argv[1] (or the top-level --help, --version, help COMMAND). */
enum fl_status fl_command_main(int argc, char **argv);

/* The commands, one file each (cli/cmd_NAME.c): --help text, options, entry point. */
extern const char fl_run_usage[];
extern const struct fl_opt fl_run_opts[];
enum fl_status fl_cmd_run(int argc, char **argv);
extern const char fl_regen_usage[];
extern const struct fl_opt fl_regen_opts[];
enum fl_status fl_cmd_regen(int argc, char **argv);
extern const char fl_faults_usage[];
extern const struct fl_opt fl_faults_opts[];
enum fl_status fl_cmd_faults(int argc, char **argv);
extern const char fl_analyze_usage[];
extern const struct fl_opt fl_analyze_opts[];
enum fl_status fl_cmd_analyze(int argc, char **argv);
extern const char fl_grade_usage[];
extern const struct fl_opt fl_grade_opts[];
enum fl_status fl_cmd_grade(int argc, char **argv);
extern const char fl_assign_usage[];
extern const struct fl_opt fl_assign_opts[];
enum fl_status fl_cmd_assign(int argc, char **argv);
extern const char fl_validate_usage[];
extern const struct fl_opt fl_validate_opts[];
enum fl_status fl_cmd_validate(int argc, char **argv);
extern const char fl_fleet_usage[];
extern const struct fl_opt fl_fleet_opts[];
enum fl_status fl_cmd_fleet(int argc, char **argv);
extern const char fl_diagnose_usage[];
extern const struct fl_opt fl_diagnose_opts[];
enum fl_status fl_cmd_diagnose(int argc, char **argv);
/* run --check: diagnose the traces just written, warn on stderr when the
 * truth's families are not what is found (cli/cmd_diagnose.c). */
void fl_diagnose_check(const char *truth_path, const char *const *traces, size_t n);

/* run and regen: where a scenario's trace and truth went, and its step times. */
struct fl_scenario;
struct fl_run_result;
void fl_print_run_result(const struct fl_scenario *sc, const struct fl_run_result *r);

#endif
