/* cmd_diagnose.c — faultline diagnose: name the fault family from the traces
 * alone (grader/analysis/diagnose.h), with evidence and a narration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/jsonutil.h"
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
	{.name = NULL},
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

/* run --check: diagnose what was just written and warn (stderr) when the
 * injected families (the truth's answer key, read here only to compare; the
 * diagnosis never sees it) are not what diagnose finds. Never fails the run. */
void fl_diagnose_check(const char *truth_path, const char *const *traces, size_t n)
{
	cJSON *truth = NULL, *d = NULL;
	if (fl_json_load(truth_path, &truth) != FL_OK) {
		fprintf(stderr, "faultline: check: cannot read %s: %s\n", truth_path, fl_error_msg());
		return;
	}
	if (fl_diagnose(traces, n, NULL, 0, &d) != FL_OK) {
		fprintf(stderr, "faultline: check: cannot diagnose the trace: %s\n", fl_error_msg());
		cJSON_Delete(truth);
		return;
	}
	const cJSON *fams =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(truth, "answer_key"), "families");
	const char *top = fl_diagnose_top(d);
	int nf = cJSON_GetArraySize(fams), ok = 1;
	const cJSON *it;
	if (nf == 1 && cJSON_IsString(cJSON_GetArrayItem(fams, 0))) {
		const char *want = cJSON_GetArrayItem(fams, 0)->valuestring;
		if (strcmp(want, top)) {
			ok = 0;
			if (!strcmp(want, "healthy"))
				fprintf(stderr, "faultline: check: warning: a healthy run is diagnosed as %s\n", top);
			else
				fprintf(stderr, "faultline: check: warning: %s was injected but the top finding is %s\n", want,
					top);
		}
	} else {
		cJSON_ArrayForEach(it, fams)
			if (cJSON_IsString(it) && !fl_diagnose_has(d, it->valuestring)) {
				ok = 0;
				fprintf(stderr, "faultline: check: warning: %s was injected but diagnose does not find it (top: %s)\n",
					it->valuestring, top);
			}
	}
	if (ok)
		fprintf(stderr, "faultline: check: diagnosed as %s, as injected\n", top);
	else
		fl_diagnose_print(stderr, d);
	cJSON_Delete(d);
	cJSON_Delete(truth);
}
