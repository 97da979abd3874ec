/* cmd_diagnose.c — faultline diagnose: name the fault family from the traces
 * alone (grader/analysis/diagnose.h), with evidence and a narration. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "grader/analysis/diagnose.h"

const char fl_diagnose_usage[] =
	"usage: faultline diagnose TRACE... [--baseline TRACE]... [--json]\n"
	"\n"
	"Names what went wrong in a run from its traces alone (TRACE... are the ranks\n"
	"of one run, .json or .json.gz, ours or torch.profiler's): the fault families\n"
	"found, ranked, each with a score in [0, 1], its fix family and the evidence\n"
	"with its numbers (steps and ranks where they apply), or `healthy` when\n"
	"nothing stands out; then a five-sentence narration: step time, the gap, the\n"
	"signature, the confirming measurement, the fix and its expected win.\n"
	"Only the events are read: never file names, traceName or a truth file.\n"
	"What a trace lacks (steps, device rows, ranks) is listed under `limits`.\n"
	"The rules and their thresholds: docs/diagnose.md.\n"
	"\n"
	"  --baseline TRACE  a healthy run to compare with (repeat for its ranks)\n"
	"  --json            faultline.diagnosis/1 instead of text\n"
	"\n"
	"Exit: 0 ok; 2 usage or a trace cannot be read; 3 runtime error.\n";

const struct fl_opt fl_diagnose_opts[] = {
	{.name = "--json"},
	{.name = "--baseline", .kind = FL_OPT_TEXT, .expects = "a trace file", .flags = FL_OPT_NONEMPTY},
	{NULL},
};

enum fl_status fl_cmd_diagnose(int argc, char **argv)
{
	struct fl_args a;
	enum fl_status st = fl_command_args("diagnose", argc, argv, &a);
	if (st != FL_OK || a.help) {
		fl_args_release(&a);
		return st;
	}
	size_t nb = 0;
	while (fl_args_nth(&a, "--baseline", nb))
		nb++;
	const char **base = calloc(nb ? nb : 1, sizeof(*base));
	if (!base) {
		fl_args_release(&a);
		return fl_error(FL_ERUNTIME, "diagnose: out of memory");
	}
	for (size_t i = 0; i < nb; i++)
		base[i] = fl_args_nth(&a, "--baseline", i)->value;
	cJSON *d = NULL;
	st = fl_diagnose(a.args, a.nargs, base, nb, &d);
	if (st == FL_OK) {
		if (fl_args_has(&a, "--json")) {
			char *s = cJSON_Print(d);
			if (!s)
				abort();
			printf("%s\n", s);
			free(s);
		} else {
			fl_diagnose_print(stdout, d);
		}
	}
	cJSON_Delete(d);
	free(base);
	fl_args_release(&a);
	return st;
}
