/* cmd_faults.c — faultline faults: the fault modules, their catalog families,
 * fixes and parameters (from the fault registry). */
#include <stdio.h>

#include "cli/commands.h"
#include "faults/fault.h"

const char fl_faults_usage[] =
	"usage: faultline faults\n"
	"\n"
	"Lists every fault module: its catalog family and fix, what it runs on (the\n"
	"backends it lists, and the workload kind, mode and ranks it needs), and each\n"
	"parameter with its default and allowed range.\n";

const struct fl_opt fl_faults_opts[] = {
	{.name = NULL},
};

enum fl_status fl_cmd_faults(int argc, char **argv)
{
	struct fl_args a;
	enum fl_status st = fl_command_args("faults", argc, argv, &a);
	int help = a.help;
	fl_args_release(&a);
	if (st || help)
		return st;
	for (size_t i = 0; fl_faults[i]; i++) {
		const struct fl_fault_ops *f = fl_faults[i];
		printf("%s\n  %s\n  family: %s    fix: %s\n", f->name, f->summary, f->family, f->fix);
		printf("  runs on: backends %s; workload %s%s", f->backends ? f->backends : "cpu emu cuda",
		       f->workload ? f->workload : "mlp", f->needs_train ? " (train)" : "");
		if (f->min_ranks > 1)
			printf("; %d+ ranks", f->min_ranks);
		printf("\n  parameters:\n");
		for (size_t k = 0; k < f->n_params; k++) {
			const struct fl_param_spec *p = &f->params[k];
			char def[64], range[64];
			switch (p->type) {
			case FL_PARAM_NUMBER:
			case FL_PARAM_INT:
				snprintf(def, sizeof(def), "%g", p->def);
				snprintf(range, sizeof(range), "%s in [%g, %g]%s%s", p->type == FL_PARAM_INT ? "integer" : "number",
					 p->min, p->max, p->unit ? " " : "", p->unit ? p->unit : "");
				break;
			case FL_PARAM_STRING:
				snprintf(def, sizeof(def), "\"%s\"", p->def_text);
				snprintf(range, sizeof(range), "name");
				break;
			case FL_PARAM_STEPS:
				snprintf(def, sizeof(def), "%s", p->def_text);
				snprintf(range, sizeof(range), "step selector");
				break;
			}
			printf("    %-11s default %-9s %-28s %s\n", p->name, def, range, p->meaning);
		}
		if (fl_faults[i + 1])
			putchar('\n');
	}
	return FL_OK;
}
