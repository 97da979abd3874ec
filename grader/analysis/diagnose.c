/* diagnose.c — `faultline diagnose`: read the run (and a baseline), run the
 * family rules (diagnose_rules.c), rank the findings, narrate, and write
 * faultline.diagnosis/1 (diagnose.h). */
#include "grader/analysis/diagnose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "grader/analysis/diagnose_internal.h"

static int cmp_score(const void *a, const void *b)
{
	const struct dg_finding *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return strcmp(x->family, y->family);
}

static double r3(double x) { return round(x * 1000.0) / 1000.0; }

static double run_p50(const struct dg_trace *t, size_t n)
{
	/* the median over ranks of each rank's step p50 */
	double *v = malloc(sizeof(double) * (n ? n : 1));
	if (!v)
		abort();
	int m = 0;
	for (size_t i = 0; i < n; i++) {
		if (!t[i].n_steps)
			continue;
		double *d = malloc(sizeof(double) * (size_t)t[i].n_steps);
		if (!d)
			abort();
		for (int k = 0; k < t[i].n_steps; k++)
			d[k] = t[i].steps[k].dur;
		v[m++] = dg_median(d, t[i].n_steps);
		free(d);
	}
	double r = dg_median(v, m);
	free(v);
	return r;
}

/* With a baseline: a run this much slower with no finding is "unexplained",
 * not healthy. */
#define DG_UNEXPLAINED 1.2

static void narrate(cJSON *arr, const struct dg_trace *t, size_t n, const struct dg_trace *b, size_t nb,
		    const struct dg_findings *fs)
{
	struct strbuf s = STRBUF_INIT;
	double p50 = run_p50(t, n), bp50 = nb ? run_p50(b, nb) : 0;
	int steps = n ? t[0].n_steps : 0;
	const struct dg_finding *f = fs->n ? &fs->f[0] : NULL;
	int unexplained = !f && nb && bp50 > 0 && p50 >= DG_UNEXPLAINED * bp50;
#define SENT()                                                       \
	do {                                                         \
		cJSON_AddItemToArray(arr, cJSON_CreateString(s.buf)); \
		strbuf_reset(&s);                                     \
	} while (0)
	int any = 0;
	for (size_t i = 0; i < n; i++)
		any |= t[i].n_steps > 0;
	if (!any)
		strbuf_addf(&s, "The trace has no host events, so there is no step time to read.");
	else if (t[0].has_steps)
		strbuf_addf(&s, "Steps take %.3f ms at the median (%d step%s%s).", p50 / 1000, steps, steps == 1 ? "" : "s",
			    n > 1 ? ", the median over the ranks" : "");
	else
		strbuf_addf(&s, "The trace has no ProfilerStep#N, so it is read as one step of %.3f ms.", p50 / 1000);
	if (n > 1)
		strbuf_addf(&s, " The run has %zu ranks.", n);
	SENT();
	if (nb && bp50 > 0)
		strbuf_addf(&s, "That is %.3f ms (%.1fx) %s than the baseline's %.3f ms%s.", fabs(p50 - bp50) / 1000,
			    p50 >= bp50 ? p50 / bp50 : bp50 / p50, p50 >= bp50 ? "slower" : "faster", bp50 / 1000,
			    f && f->lost_us > 0 ? "" : "");
	else if (f)
		strbuf_addf(&s, "About %.3f ms of each step (%.0f%%) is lost to one cause.", f->lost_us / 1000,
			    p50 > 0 ? 100 * f->lost_us / p50 : 0);
	else if (!any)
		strbuf_addf(&s, "Without host events no gap can be measured.");
	else
		strbuf_addf(&s, "No gap stands out: no span waits, no step is long, and the device rows show nothing "
				"exposed.");
	if (nb && bp50 > 0 && f)
		strbuf_addf(&s, " About %.3f ms of each step (%.0f%%) goes to the top finding.", f->lost_us / 1000,
			    p50 > 0 ? 100 * f->lost_us / p50 : 0);
	SENT();
	if (f)
		strbuf_addf(&s, "The signature is %s: %s.", f->family, f->summary);
	else if (!any)
		strbuf_addf(&s, "No signature can be read: the diagnosis is not healthy, it is absent.");
	else if (unexplained)
		strbuf_addf(&s, "No signature of the catalog explains the gap: the run is slower, but its steps are alike "
				"and no span, op count, sync or rank stands out.");
	else
		strbuf_addf(&s, "The signature is healthy: steps alike, phases in proportion to their work.");
	if (fs->n > 1) {
		strbuf_addf(&s, " Also found:");
		for (size_t i = 1; i < fs->n; i++)
			strbuf_addf(&s, "%s %s (%.2f)", i > 1 ? "," : "", fs->f[i].family, fs->f[i].score);
		strbuf_addf(&s, ".");
	}
	SENT();
	if (f)
		strbuf_addf(&s, "Confirmed by %s.", f->confirm);
	else
		strbuf_addf(&s, "Confirmed by every rule staying below its threshold (input waiting, op count, long "
				"steps, syncs, per-rank compute, comm overlap).");
	SENT();
	if (f) {
		double after = p50 - f->lost_us;
		if (after < 0)
			after = 0;
		strbuf_addf(&s, "Fix (%s): %s; that should save about %.3f ms per step, %.3f -> %.3f ms", f->fix,
			    f->fix_how, f->lost_us / 1000, p50 / 1000, after / 1000);
		if (after > 0)
			strbuf_addf(&s, " (%.2fx faster).", p50 / after);
		else
			strbuf_addf(&s, ".");
	} else if (unexplained) {
		strbuf_addf(&s, "Fix: none from the catalog (fix family none); find what grew first — compare the two "
				"runs op by op and kernel by kernel with `faultline analyze --diff`.");
	} else {
		strbuf_addf(&s, "Fix: none needed (fix family none); no win is expected from a change.");
	}
	SENT();
#undef SENT
	strbuf_release(&s);
}

enum fl_status fl_diagnose(const char *const *paths, size_t n, const char *const *base, size_t nb, cJSON **out)
{
	*out = NULL;
	if (n == 0)
		return fl_error(FL_EINPUT, "diagnose: expected at least one trace");
	struct dg_trace *t = NULL, *b = NULL;
	enum fl_status st = dg_load(paths, n, &t);
	if (st != FL_OK)
		return st;
	if (nb && (st = dg_load(base, nb, &b)) != FL_OK) {
		dg_free(t, n);
		return st;
	}
	/* ranks in order */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && t[j - 1].rank > t[j].rank; j--) {
			struct dg_trace x = t[j];
			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	struct dg_findings fs = {0};
	dg_rules(t, n, b, nb, &fs);
	if (fs.n)
		qsort(fs.f, fs.n, sizeof(*fs.f), cmp_score);

	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "schema", "faultline.diagnosis/1");
	cJSON *tr = cJSON_AddArrayToObject(j, "traces");
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "file", t[i].path); /* reported, never read for the diagnosis */
		cJSON_AddNumberToObject(o, "rank", (double)t[i].rank);
		cJSON_AddNumberToObject(o, "steps", t[i].n_steps);
		cJSON_AddBoolToObject(o, "device_rows", t[i].has_device);
		cJSON_AddNumberToObject(o, "events", (double)t[i].info.n_events);
		cJSON_AddItemToArray(tr, o);
	}
	if (nb) {
		cJSON *bt = cJSON_AddArrayToObject(j, "baseline");
		for (size_t i = 0; i < nb; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "rank", (double)b[i].rank);
			cJSON_AddNumberToObject(o, "steps", b[i].n_steps);
			cJSON_AddNumberToObject(o, "step_p50_ms", r3(run_p50(&b[i], 1) / 1000));
			cJSON_AddItemToArray(bt, o);
		}
	}
	cJSON_AddNumberToObject(j, "step_p50_ms", r3(run_p50(t, n) / 1000));
	/* nothing read, nothing said: no host events is no diagnosis */
	int assessed = 0;
	for (size_t i = 0; i < n; i++)
		assessed |= t[i].n_steps > 0;
	if (!assessed)
		cJSON_AddItemToArray(fs.limits, cJSON_CreateString("no host events: nothing could be assessed"));
	/* slower than the baseline with no finding: not healthy, unexplained */
	double p50 = run_p50(t, n), bp50 = nb ? run_p50(b, nb) : 0;
	int unexplained = assessed && fs.n == 0 && nb && bp50 > 0 && p50 >= DG_UNEXPLAINED * bp50;
	cJSON_AddBoolToObject(j, "healthy", fs.n == 0 && assessed && !unexplained);
	if (unexplained) {
		cJSON *u = cJSON_AddObjectToObject(j, "unexplained");
		cJSON_AddNumberToObject(u, "slower_by", r3(p50 / bp50));
		cJSON_AddNumberToObject(u, "ms_per_step", r3((p50 - bp50) / 1000));
		char msg[160];
		snprintf(msg, sizeof msg, "%.2fx slower than the baseline and no rule explains it: the cause is outside the "
			 "catalog (see analyze --diff)", p50 / bp50);
		cJSON_AddItemToArray(fs.limits, cJSON_CreateString(msg));
	}
	cJSON *fa = cJSON_AddArrayToObject(j, "findings");
	for (size_t i = 0; i < fs.n; i++) {
		struct dg_finding *f = &fs.f[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "family", f->family);
		cJSON_AddNumberToObject(o, "score", r3(f->score));
		cJSON_AddStringToObject(o, "fix", f->fix);
		cJSON_AddStringToObject(o, "summary", f->summary);
		cJSON_AddNumberToObject(o, "lost_ms_per_step", r3(f->lost_us / 1000));
		cJSON_AddItemToObject(o, "evidence", f->evidence);
		f->evidence = NULL;
		if (f->steps) {
			cJSON_AddItemToObject(o, "steps", f->steps);
			f->steps = NULL;
		}
		if (f->ranks) {
			cJSON_AddItemToObject(o, "ranks", f->ranks);
			f->ranks = NULL;
		}
		cJSON_AddItemToArray(fa, o);
	}
	narrate(cJSON_AddArrayToObject(j, "narration"), t, n, b, nb, &fs);
	cJSON_AddItemToObject(j, "limits", fs.limits);
	fs.limits = NULL;
	dg_findings_free(&fs);
	dg_free(t, n);
	dg_free(b, nb);
	*out = j;
	return FL_OK;
}

const char *fl_diagnose_top(const cJSON *diag)
{
	const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(diag, "findings"), 0);
	const cJSON *fam = cJSON_GetObjectItemCaseSensitive(f, "family");
	if (cJSON_IsString(fam))
		return fam->valuestring;
	if (cJSON_GetObjectItemCaseSensitive(diag, "unexplained"))
		return "unexplained";
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(diag, "healthy")) ? "healthy" : "none";
}

int fl_diagnose_has(const cJSON *diag, const char *family)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(diag, "findings"))
	{
		const cJSON *fam = cJSON_GetObjectItemCaseSensitive(f, "family");
		if (cJSON_IsString(fam) && !strcmp(fam->valuestring, family))
			return 1;
	}
	return !strcmp(family, "healthy") && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(diag, "healthy"));
}

void fl_diagnose_print(FILE *out, const cJSON *diag)
{
	const cJSON *f, *it;
	int healthy = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(diag, "healthy"));
	int none = !healthy && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diag, "findings")) == 0;
	const cJSON *un = cJSON_GetObjectItemCaseSensitive(diag, "unexplained");
	if (none && un)
		fprintf(out, "diagnosis: unexplained (%.2fx slower than the baseline; no catalog signature)\n",
			cJSON_GetObjectItemCaseSensitive(un, "slower_by")->valuedouble);
	else
		fprintf(out, "diagnosis: %s\n", healthy ? "healthy (nothing stands out)"
					       : none  ? "none (nothing could be assessed)"
						       : fl_diagnose_top(diag));
	int k = 0;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(diag, "findings"))
	{
		fprintf(out, "\n%d. %s  score %.2f  fix %s\n", ++k,
			cJSON_GetObjectItemCaseSensitive(f, "family")->valuestring,
			cJSON_GetObjectItemCaseSensitive(f, "score")->valuedouble,
			cJSON_GetObjectItemCaseSensitive(f, "fix")->valuestring);
		fprintf(out, "   %s\n", cJSON_GetObjectItemCaseSensitive(f, "summary")->valuestring);
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(f, "steps");
		if (cJSON_IsArray(s)) {
			fprintf(out, "   steps:");
			cJSON_ArrayForEach(it, s) fprintf(out, " %g", it->valuedouble);
			fprintf(out, "\n");
		}
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(f, "ranks");
		if (cJSON_IsArray(r)) {
			fprintf(out, "   ranks:");
			cJSON_ArrayForEach(it, r) fprintf(out, " %g", it->valuedouble);
			fprintf(out, "\n");
		}
	}
	fprintf(out, "\nnarration:\n");
	k = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(diag, "narration"))
		fprintf(out, "  %d. %s\n", ++k, it->valuestring);
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(diag, "limits");
	if (cJSON_GetArraySize(l) > 0) {
		fprintf(out, "\nlimits:\n");
		cJSON_ArrayForEach(it, l) fprintf(out, "  - %s\n", it->valuestring);
	}
}
