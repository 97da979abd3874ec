#include "grader/analysis/device_report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void temporal_line(const char *who, const cJSON *t, struct strbuf *out)
{
	if (!cJSON_IsObject(t)) {
		strbuf_addf(out, "  %-8s no device activity\n", who);
		return;
	}
	strbuf_addf(out, "  %-8s span %10.0f us   idle %6.2f%%   compute %6.2f%%   non-compute %6.2f%%\n", who,
		    num(t, "span_us"), num(t, "idle_pct"), num(t, "compute_pct"), num(t, "non_compute_pct"));
}

void fl_device_metrics_text(const cJSON *dm, struct strbuf *out)
{
	const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(dm, "ranks");
	const cJSON *r;
	strbuf_adds(out, "temporal breakdown (HTA definitions; device rows only)\n");
	temporal_line("all", cJSON_GetObjectItemCaseSensitive(dm, "temporal"), out);
	cJSON_ArrayForEach(r, ranks) {
		char who[32];
		snprintf(who, sizeof(who), "rank %s", r->string);
		temporal_line(who, cJSON_GetObjectItemCaseSensitive(r, "temporal"), out);
	}
	strbuf_adds(out, "comm/compute overlap (share of comm time with compute running)\n");
	const cJSON *ov = cJSON_GetObjectItemCaseSensitive(dm, "overlap");
	if (cJSON_IsObject(ov) && !isnan(num(ov, "comm_comp_pct")))
		strbuf_addf(out, "  %-8s %6.2f%% of %.0f us\n", "all", num(ov, "comm_comp_pct"), num(ov, "comm_us"));
	else
		strbuf_adds(out, "  no communication kernels\n");
	cJSON_ArrayForEach(r, ranks) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(r, "overlap");
		if (cJSON_IsObject(o) && !isnan(num(o, "comm_comp_pct")))
			strbuf_addf(out, "  rank %-3s %6.2f%% of %.0f us\n", r->string, num(o, "comm_comp_pct"), num(o, "comm_us"));
	}
	strbuf_adds(out, "idle time by stream (host wait / kernel wait < 30 us / other)\n");
	const cJSON *s;
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(dm, "idle"))
		strbuf_addf(out, "  stream %-4s %10.0f us idle: host wait %6.2f%%, kernel wait %6.2f%%, other %6.2f%%\n",
			    s->string, num(s, "total_us"), num(s, "host_wait_pct"), num(s, "kernel_wait_pct"),
			    num(s, "other_pct"));
	strbuf_adds(out, "kernel time by type\n");
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(dm, "kernels"), "types"))
		strbuf_addf(out, "  %-40s %10.0f us %6.2f%%\n", s->string, num(s, "us"), num(s, "pct"));
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(dm, "launch");
	if (cJSON_IsObject(l)) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(l, "delay_us");
		if (num(l, "pairs") > 0)
			strbuf_addf(out, "launches: %.0f pairs, delay mean %.1f us, p95 %.1f us, max %.1f us; %.0f short kernels\n",
				    num(l, "pairs"), num(d, "mean"), num(d, "p95"), num(d, "max"), num(l, "short_kernels"));
		else /* no delay to report: never a NaN */
			strbuf_addf(out, "launches: 0 pairs; %.0f short kernels\n", num(l, "short_kernels"));
	}
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(dm, "straggler");
	if (cJSON_IsObject(st) && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(st, "rank")))
		strbuf_addf(out, "straggler: rank %.0f (collective start spread mean %.1f us)\n", num(st, "rank"),
			    num(cJSON_GetObjectItemCaseSensitive(st, "spread_us"), "mean"));
	else
		strbuf_adds(out, "straggler: none found (needs two or more ranks with collectives)\n");
}

void fl_trace_diff_text(const cJSON *diff, size_t top, struct strbuf *out)
{
	static const char *const groups[] = {"added", "deleted", "increased", "decreased"};
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(diff, "ops");
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(diff, groups[g]);
		strbuf_addf(out, "%s: %d\n", groups[g], cJSON_GetArraySize(arr));
		size_t k = 0;
		const cJSON *n;
		cJSON_ArrayForEach(n, arr) {
			if (k++ >= top)
				break;
			const cJSON *o = cJSON_GetObjectItemCaseSensitive(ops, cJSON_GetStringValue(n));
			strbuf_addf(out, "  %-48s count %+6.0f  time %+12.0f us\n", cJSON_GetStringValue(n),
				    num(o, "diff_count"), num(o, "diff_us"));
		}
	}
}
