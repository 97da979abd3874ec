#include "grader/analysis/analyze.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/utf8.h"
#include "grader/analysis/host_metrics.h"
#include "grader/trace/trace_events.h"

static const cJSON *at(const cJSON *root, const char *path)
{
	char why[128];
	return fl_json_path(root, path, why, sizeof(why));
}

static double num_at(const cJSON *root, const char *path)
{
	const cJSON *v = at(root, path);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void add_ratio(cJSON *o, const char *key, double a, double b)
{
	if (isfinite(a) && isfinite(b) && b != 0)
		cJSON_AddNumberToObject(o, key, a / b);
	else
		cJSON_AddNullToObject(o, key);
}

cJSON *fl_metrics_compare(const cJSON *b, const cJSON *m)
{
	cJSON *c = cJSON_CreateObject();
	add_ratio(c, "step_p50_ratio", num_at(m, "steps.p50_ms"), num_at(b, "steps.p50_ms"));
	add_ratio(c, "step_median_ratio", num_at(m, "steps.median_ms"), num_at(b, "steps.median_ms"));
	add_ratio(c, "step_mean_ratio", num_at(m, "steps.mean_ms"), num_at(b, "steps.mean_ms"));
	add_ratio(c, "step_max_ratio", num_at(m, "steps.max_ms"), num_at(b, "steps.max_ms"));
	add_ratio(c, "ops_total_ratio", num_at(m, "ops.total"), num_at(b, "ops.total"));
	add_ratio(c, "ops_per_step_p50_ratio", num_at(m, "ops.per_step_p50"), num_at(b, "ops.per_step_p50"));
	cJSON *spans = cJSON_AddObjectToObject(c, "spans");
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(m, "spans");
	const cJSON *bs = cJSON_GetObjectItemCaseSensitive(b, "spans");
	const char *most = NULL;
	double most_growth = 0, most_factor = NAN;
	for (int pass = 0; pass < 2; pass++) {
		const cJSON *s, *list = pass ? bs : ms;
		cJSON_ArrayForEach(s, list) {
			if (!s->string || cJSON_GetObjectItemCaseSensitive(spans, s->string))
				continue;
			const cJSON *x = cJSON_GetObjectItemCaseSensitive(ms, s->string);
			const cJSON *y = cJSON_GetObjectItemCaseSensitive(bs, s->string);
			const cJSON *xt = cJSON_GetObjectItemCaseSensitive(x, "total_ms");
			const cJSON *yt = cJSON_GetObjectItemCaseSensitive(y, "total_ms");
			double xv = cJSON_IsNumber(xt) ? xt->valuedouble : 0, yv = cJSON_IsNumber(yt) ? yt->valuedouble : 0;
			cJSON *o = cJSON_AddObjectToObject(spans, s->string);
			cJSON_AddNumberToObject(o, "baseline_ms", yv);
			cJSON_AddNumberToObject(o, "ms", xv);
			cJSON_AddNumberToObject(o, "growth_ms", xv - yv);
			add_ratio(o, "factor", xv, yv);
			if (xv - yv > most_growth) {
				most = s->string;
				most_growth = xv - yv;
				most_factor = yv > 0 ? xv / yv : NAN;
			}
		}
	}
	cJSON *g = cJSON_AddObjectToObject(c, "grew_most");
	if (most) {
		cJSON_AddStringToObject(g, "span", most);
		cJSON_AddNumberToObject(g, "growth_ms", most_growth);
		if (isfinite(most_factor))
			cJSON_AddNumberToObject(g, "factor", most_factor);
		else
			cJSON_AddNullToObject(g, "factor");
	} else {
		cJSON_AddNullToObject(g, "span");
	}
	return c;
}

/* ---- text ---- */

/* A name as it may go to a terminal: control characters (C0, DEL, C1) and
 * bytes that are not UTF-8 are written as \xHH, a backslash as \\. The
 * result lives until the eighth call after. */
static const char *safe(const char *s)
{
	static char *ring[8];
	static unsigned next;
	if (!s)
		return "";
	size_t n = strlen(s), clean = 1;
	for (size_t i = 0; i < n && clean; i++) {
		unsigned char c = (unsigned char)s[i];
		clean = c >= 0x20 && c != 0x7f && c != '\\' && !(c == 0xc2 && (unsigned char)s[i + 1] >= 0x80 &&
									(unsigned char)s[i + 1] <= 0x9f);
	}
	for (size_t i = 0; i < n && clean;) {
		size_t k = (unsigned char)s[i] < 0x80 ? 1 : fl_utf8_seq((const unsigned char *)s + i, n - i, NULL);
		clean = k != 0;
		i += k ? k : 1;
	}
	if (clean)
		return s;
	char *o = malloc(4 * n + 1), *w = o;
	if (!o)
		abort();
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c >= 0x80 ? fl_utf8_seq((const unsigned char *)s + i, n - i, NULL) : 1;
		int c1 = k == 2 && c == 0xc2 && (unsigned char)s[i + 1] <= 0x9f;
		if (c < 0x20 || c == 0x7f || c == '\\' || !k || c1) {
			if (c == '\\') {
				*w++ = '\\';
				*w++ = '\\';
			} else {
				w += sprintf(w, "\\x%02x", c);
			}
			if (c1) {
				w += sprintf(w, "\\x%02x", (unsigned char)s[i + 1]);
				i += 2;
			} else {
				i++;
			}
			continue;
		}
		memcpy(w, s + i, k);
		w += k;
		i += k;
	}
	*w = '\0';
	free(ring[next % 8]);
	ring[next++ % 8] = o;
	return o;
}

static void steps_text(const cJSON *m, struct strbuf *out)
{
	const cJSON *ms = at(m, "steps.ms");
	const cJSON *nums = at(m, "steps.numbers");
	int n = cJSON_GetArraySize(ms);
	strbuf_addf(out, "steps     %d recorded", n);
	if (n)
		strbuf_addf(out, " (#%g..#%g)", cJSON_GetArrayItem(nums, 0)->valuedouble,
			    cJSON_GetArrayItem(nums, n - 1)->valuedouble);
	strbuf_addf(out, "\n  p50     %.3f ms (upper median, sorted[n // 2]); true median %.3f ms\n",
		    num_at(m, "steps.p50_ms"), num_at(m, "steps.median_ms"));
	strbuf_addf(out, "  mean    %.3f ms   min %.3f ms   max %.3f ms   total %.3f ms\n", num_at(m, "steps.mean_ms"),
		    num_at(m, "steps.min_ms"), num_at(m, "steps.max_ms"), num_at(m, "steps.total_ms"));
	strbuf_adds(out, "  per step (ms):");
	for (int i = 0; i < n; i++)
		strbuf_addf(out, "%s#%g %.3f", i % 6 ? "  " : "\n    ", cJSON_GetArrayItem(nums, i)->valuedouble,
			    cJSON_GetArrayItem(ms, i)->valuedouble);
	strbuf_adds(out, "\n");
}

static void spans_text(const cJSON *m, struct strbuf *out)
{
	const cJSON *spans = cJSON_GetObjectItemCaseSensitive(m, "spans"), *s;
	strbuf_addf(out, "spans     %-16s %11s %7s %10s   per step (ms)\n", "", "total ms", "share", "p50/step");
	cJSON_ArrayForEach(s, spans) {
		strbuf_addf(out, "  %-24s %11.3f %6.1f%% %10.3f  ", safe(s->string), num_at(s, "total_ms"),
			    100 * num_at(s, "share_of_step_time"), num_at(s, "p50_ms"));
		const cJSON *v;
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(s, "per_step_ms"))
			strbuf_addf(out, " %.3f", v->valuedouble);
		strbuf_adds(out, "\n");
	}
}

static void ops_text(const cJSON *m, struct strbuf *out)
{
	strbuf_addf(out, "ops       %g total, %g per step (p50); per step:", num_at(m, "ops.total"),
		    num_at(m, "ops.per_step_p50"));
	const cJSON *v;
	cJSON_ArrayForEach(v, at(m, "ops.per_step")) strbuf_addf(out, " %g", v->valuedouble);
	strbuf_adds(out, "\n  by name:");
	int k = 0;
	cJSON_ArrayForEach(v, at(m, "ops.by_name"))
		strbuf_addf(out, "%s%s %g", k++ % 5 ? ",  " : "\n    ", safe(v->string), v->valuedouble);
	strbuf_adds(out, "\n");
}

static void gaps_text(const cJSON *m, struct strbuf *out)
{
	strbuf_addf(out, "gaps      %.3f ms with no op running inside steps (%.1f%% of step time), %.3f ms in all; "
		    "largest:\n", num_at(m, "gaps.in_steps_ms"), 100 * num_at(m, "gaps.share_of_step_time"),
		    num_at(m, "gaps.total_ms"));
	const cJSON *g;
	cJSON_ArrayForEach(g, at(m, "gaps.largest")) {
		const cJSON *step = cJSON_GetObjectItemCaseSensitive(g, "step");
		const char *span = cJSON_GetObjectItemCaseSensitive(g, "span")->valuestring;
		strbuf_addf(out, "  %10.3f ms  ", num_at(g, "ms"));
		if (cJSON_IsNumber(step))
			strbuf_addf(out, "step #%-4g", step->valuedouble);
		else
			strbuf_adds(out, "no step   ");
		strbuf_addf(out, " %s%s (after %s, before %s)\n", *span ? "in " : "outside spans", safe(span),
			    safe(cJSON_GetObjectItemCaseSensitive(g, "before")->valuestring),
			    safe(cJSON_GetObjectItemCaseSensitive(g, "after")->valuestring));
	}
}

static void periods_text(const cJSON *m, struct strbuf *out)
{
	const cJSON *ps = cJSON_GetObjectItemCaseSensitive(m, "periods"), *p;
	strbuf_addf(out, "periods   %s\n", cJSON_GetArraySize(ps) ? "(spans long in some steps only)" : "none");
	cJSON_ArrayForEach(p, ps) {
		strbuf_addf(out, "  %-16s long in steps", safe(p->string));
		const cJSON *s;
		int k = 0;
		cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(p, "long_steps"))
			strbuf_addf(out, "%s %g", k++ ? "," : "", s->valuedouble);
		const cJSON *per = cJSON_GetObjectItemCaseSensitive(p, "period");
		if (cJSON_IsNumber(per)) {
			strbuf_addf(out, " -> period %g, phase %g", per->valuedouble, num_at(p, "phase"));
			const cJSON *off = cJSON_GetObjectItemCaseSensitive(p, "off_pattern_steps");
			if (cJSON_GetArraySize(off)) {
				strbuf_addf(out, " (confidence %.2f; off the pattern: step", num_at(p, "confidence"));
				int q = 0;
				cJSON_ArrayForEach(s, off)
					strbuf_addf(out, "%s %g", q++ ? "," : "", s->valuedouble);
				strbuf_adds(out, ")");
			}
		} else
			strbuf_adds(out, " -> no regular period");
		strbuf_addf(out, " (long p50 %.3f ms vs %.3f ms; excess %.3f ms)\n", num_at(p, "long_p50_ms"),
			    num_at(p, "short_p50_ms"), num_at(p, "excess_ms"));
	}
}

static void compare_text(const cJSON *c, const cJSON *m, const cJSON *b, const char *mn, const char *bn,
			 struct strbuf *out)
{
	strbuf_addf(out, "\n== %s compared with %s ==\n", safe(mn), safe(bn));
	strbuf_addf(out, "step p50  %.3f ms vs %.3f ms: x%.2f (true median x%.2f, max x%.2f)\n", num_at(m, "steps.p50_ms"),
		    num_at(b, "steps.p50_ms"), num_at(c, "step_p50_ratio"), num_at(c, "step_median_ratio"),
		    num_at(c, "step_max_ratio"));
	strbuf_addf(out, "ops       %g vs %g: x%.2f (per step p50 %g vs %g)\n", num_at(m, "ops.total"),
		    num_at(b, "ops.total"), num_at(c, "ops_total_ratio"), num_at(m, "ops.per_step_p50"),
		    num_at(b, "ops.per_step_p50"));
	const cJSON *gm = cJSON_GetObjectItemCaseSensitive(c, "grew_most");
	const cJSON *span = cJSON_GetObjectItemCaseSensitive(gm, "span");
	if (cJSON_IsString(span))
		strbuf_addf(out, "grew most %s: +%.3f ms (x%.2f)\n", safe(span->valuestring), num_at(gm, "growth_ms"),
			    num_at(gm, "factor"));
	else
		strbuf_adds(out, "grew most (no span grew)\n");
	const cJSON *s;
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(c, "spans"))
		strbuf_addf(out, "  %-24s %11.3f ms vs %11.3f ms  x%.2f\n", safe(s->string), num_at(s, "ms"),
			    num_at(s, "baseline_ms"), num_at(s, "factor"));
}

enum fl_status fl_analyze_traces(const char *const *paths, size_t n, const struct fl_analyze_opts *o,
				 struct strbuf *out)
{
	cJSON **metrics = calloc(n ? n : 1, sizeof(*metrics));
	if (!metrics)
		abort();
	enum fl_status st = FL_OK;
	struct fl_host_metrics_opts mo = {.top_gaps = o->top_gaps};
	for (size_t i = 0; i < n; i++) {
		struct fl_trace t;
		if ((st = fl_trace_read(paths[i], &t)))
			goto out;
		fl_trace_warn(&t, stderr); /* once per kind of bad value, with the count */
		struct fl_host_metrics hm;
		fl_host_metrics_compute_opts(&t, &mo, &hm);
		metrics[i] = fl_host_metrics_json(&hm);
		fl_host_metrics_release(&hm);
		fl_trace_release(&t);
	}
	if (o->json) {
		cJSON *root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "schema", "faultline.analysis/1");
		cJSON *tr = cJSON_AddArrayToObject(root, "traces");
		for (size_t i = 0; i < n; i++) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "file", paths[i]);
			cJSON_AddItemToObject(x, "metrics", cJSON_Duplicate(metrics[i], 1));
			cJSON_AddItemToArray(tr, x);
		}
		cJSON *cmp = cJSON_AddArrayToObject(root, "comparisons");
		for (size_t i = 1; i < n; i++) {
			cJSON *x = fl_metrics_compare(metrics[0], metrics[i]);
			cJSON_AddStringToObject(x, "baseline", paths[0]);
			cJSON_AddStringToObject(x, "trace", paths[i]);
			cJSON_AddItemToArray(cmp, x);
		}
		fl_json_print(out, root);
		cJSON_Delete(root);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		strbuf_addf(out, "%s== %s ==\n", i ? "\n" : "", safe(paths[i]));
		steps_text(metrics[i], out);
		spans_text(metrics[i], out);
		ops_text(metrics[i], out);
		gaps_text(metrics[i], out);
		periods_text(metrics[i], out);
	}
	for (size_t i = 1; i < n; i++) {
		cJSON *c = fl_metrics_compare(metrics[0], metrics[i]);
		compare_text(c, metrics[i], metrics[0], paths[i], paths[0], out);
		cJSON_Delete(c);
	}
out:
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(metrics[i]);
	free(metrics);
	return st;
}
