/* diagnosis_ref.c — what diagnosis: references read: `faultline diagnose` of
 * the traces the truth lists (traces[].file, beside the truth), computed at
 * grade time, so a rubric can check that an exercise is fair (the expected
 * family is the one the trace alone shows: diagnosis:findings[0].family) and
 * `grade --reveal` can show the diagnosis' evidence as the worked answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "grader/analysis/diagnose.h"
#include "grader/grading/grade.h"

static enum fl_status diagnose_truth(const struct fl_grade *g, cJSON **out)
{
	*out = NULL;
	const cJSON *traces = cJSON_GetObjectItemCaseSensitive(g->truth, "traces");
	int n = cJSON_GetArraySize(traces);
	if (n < 1)
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': traces[0].file: expected the trace's file name (diagnosis: "
				"reads the traces)", g->truth_name);
	char **paths = calloc((size_t)n, sizeof(char *));
	if (!paths)
		abort();
	enum fl_status st = FL_OK;
	const char *slash = g->truth_path ? strrchr(g->truth_path, '/') : NULL;
	for (int i = 0; i < n; i++) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(traces, i), "file");
		if (!cJSON_IsString(f) || !*f->valuestring || strchr(f->valuestring, '/')) {
			st = fl_error(FL_GRADE_ECONFIG, "truth '%s': traces[%d].file: expected the trace's file name",
				      g->truth_name, i);
			goto out;
		}
		struct strbuf sb = STRBUF_INIT;
		if (slash)
			strbuf_add(&sb, g->truth_path, (size_t)(slash - g->truth_path + 1));
		strbuf_adds(&sb, f->valuestring);
		paths[i] = sb.buf;
	}
	if ((st = fl_diagnose((const char *const *)paths, (size_t)n, NULL, 0, out)))
		st = fl_error_prefix(FL_GRADE_ECONFIG, "diagnosis of the traces of truth '%s': ", g->truth_name);
out:
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return st;
}

enum fl_status fl_grade_diagnosis(void *arg, const cJSON **out)
{
	struct fl_grade *g = arg;
	if (!g->diagnosis) {
		enum fl_status st = diagnose_truth(g, &g->diagnosis);
		if (st)
			return st;
	}
	*out = g->diagnosis;
	return FL_OK;
}

void fl_grade_diagnosis_text(const struct fl_grade *g, struct strbuf *out)
{
	cJSON *d = NULL;
	int own = 0;
	if (g->diagnosis) {
		d = g->diagnosis;
	} else if (diagnose_truth(g, &d) == FL_OK) {
		own = 1;
	} else {
		strbuf_addf(out, "  (no diagnosis: %s)\n", fl_error_msg());
		return;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	fl_diagnose_print(f, d);
	fclose(f);
	strbuf_add(out, buf, len);
	free(buf);
	if (own)
		cJSON_Delete(d);
}
