/* fleet_report.c — faultline.fleet/1 as text: each table with the definition
 * of its numbers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "grader/analysis/fleet.h"

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static const cJSON *obj(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static void mtbf_text(const cJSON *m, struct strbuf *out)
{
	const cJSON *ci = obj(m, "ci95");
	strbuf_addf(out, "  jobs %.0f, GPU-hours at risk %.1f, failures %.0f\n", num(m, "jobs"),
		    num(m, "gpu_hours_at_risk"), num(m, "failures"));
	if (isnan(num(m, "per_gpu_years"))) {
		strbuf_addf(out, "  per-GPU MTBF: no failure, no estimate; at least %.2f years (95%%)\n",
			    num(ci, "years_lo"));
		return;
	}
	strbuf_addf(out, "  per-GPU MTBF %.0f GPU-hours = %.2f years; 95%% interval [%.2f, %.2f] years "
		    "(failures [%.2f, %.2f])\n", num(m, "per_gpu_hours"), num(m, "per_gpu_years"), num(ci, "years_lo"),
		    num(ci, "years_hi"), num(ci, "failures_lo"), num(ci, "failures_hi"));
}

void fl_fleet_text(const cJSON *j, struct strbuf *out)
{
	const cJSON *in = obj(j, "input"), *br = obj(j, "bad_rows"), *jobs = obj(j, "jobs"), *e;
	strbuf_addf(out, "fleet analysis of %s (%s header, %.0f rows", str(in, "jobs"), str(in, "format"),
		    num(in, "rows"));
	if (*str(in, "first_submit"))
		strbuf_addf(out, ", %s .. %s", str(in, "first_submit"), str(in, "last_end"));
	strbuf_addf(out, ")\n");
	strbuf_addf(out, "jobs %.0f, GPU-hours %.1f (gpu_num x (end_time - start_time) / 3600)\n", num(jobs, "count"),
		    num(jobs, "gpu_hours"));
	strbuf_addf(out, "bad rows %.0f", num(br, "count"));
	const cJSON *byr = obj(br, "by_reason");
	cJSON_ArrayForEach(e, byr) strbuf_addf(out, "%s %s %.0f", e == byr->child ? ":" : ",", e->string, e->valuedouble);
	strbuf_addf(out, "\n");
	cJSON_ArrayForEach(e, obj(br, "first")) {
		strbuf_addf(out, "  line %.0f: %s", num(e, "line"), str(e, "reason"));
		if (*str(e, "value"))
			strbuf_addf(out, " %s", str(e, "value"));
		strbuf_addf(out, "\n");
	}
	if (num(in, "duration_mismatches") > 0)
		strbuf_addf(out, "note: %.0f rows' duration column differs from end_time - start_time by over 1 s "
			    "(the times are used)\n", num(in, "duration_mismatches"));

	strbuf_addf(out, "\njob mix by GPU count (share of jobs vs share of GPU-hours)\n");
	strbuf_addf(out, "  %-9s %9s %8s %14s %8s\n", "gpus", "jobs", "share", "GPU-hours", "share");
	cJSON_ArrayForEach(e, obj(j, "mix"))
		strbuf_addf(out, "  %-9s %9.0f %7.2f%% %14.1f %7.2f%%\n", str(e, "bucket"), num(e, "jobs"),
			    100 * num(e, "job_share"), num(e, "gpu_hours"), 100 * num(e, "gpu_hour_share"));
	const cJSON *lg = obj(j, "large");
	strbuf_addf(out, "  jobs with >= %.0f GPUs: %.2f%% of jobs, %.2f%% of GPU-hours\n", num(lg, "min_gpus"),
		    100 * num(lg, "job_share"), 100 * num(lg, "gpu_hour_share"));

	static const char *const st[] = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "RUNNING"};
	strbuf_addf(out, "\nterminal states (jobs / GPU-hours; share of the bucket's GPU-hours)\n  %-9s", "gpus");
	for (size_t i = 0; i < 6; i++)
		strbuf_addf(out, " %21s", st[i]);
	strbuf_addf(out, "\n");
	cJSON_ArrayForEach(e, obj(j, "states_by_scale")) {
		strbuf_addf(out, "  %-9s", str(e, "bucket"));
		for (size_t i = 0; i < 6; i++) {
			const cJSON *s = obj(e, st[i]);
			strbuf_addf(out, " %7.0f/%9.0f %3.0f%%", num(s, "jobs"), num(s, "gpu_hours"),
				    100 * num(s, "gpu_hour_share"));
		}
		strbuf_addf(out, "\n");
	}
	strbuf_addf(out, "  %-9s", "all");
	for (size_t i = 0; i < 6; i++) {
		const cJSON *s = obj(obj(j, "states"), st[i]);
		strbuf_addf(out, " %7.0f/%9.0f %3.0f%%", num(s, "jobs"), num(s, "gpu_hours"), 100 * num(s, "gpu_hour_share"));
	}
	strbuf_addf(out, "\n  the largest share of GPU-hours: %s\n", str(j, "dominant_gpu_hour_state"));

	strbuf_addf(out, "\nqueue delay (start_time - submit_time, s; linear-interpolated quantiles, exact below "
		    "1 day, 0.1%% bins above)\n  %-9s %9s %10s %10s %10s %10s %10s\n", "gpus", "jobs", "p50", "p90",
		    "p99", "mean", "max");
	cJSON_ArrayForEach(e, obj(j, "queue")) {
		if (num(e, "jobs") == 0)
			continue;
		strbuf_addf(out, "  %-9s %9.0f %10.0f %10.0f %10.0f %10.0f %10.0f\n", str(e, "bucket"), num(e, "jobs"),
			    num(e, "p50_s"), num(e, "p90_s"), num(e, "p99_s"), num(e, "mean_s"), num(e, "max_s"));
	}

	const cJSON *m = obj(j, "mtbf");
	strbuf_addf(out, "\nper-GPU MTBF from NODE_FAIL (jobs with >= %.0f GPUs that ran >= %g h)\n",
		    num(m, "min_gpus"), num(m, "min_hours"));
	strbuf_addf(out, "  definition: %s\n", str(m, "definition"));
	mtbf_text(m, out);
	if (num(m, "min_hours") > 0) {
		strbuf_addf(out, "  left-truncated (only the hours after the first %g of each job):\n", num(m, "min_hours"));
		mtbf_text(obj(j, "mtbf_truncated"), out);
	}
	const cJSON *x = obj(j, "xid");
	if (x) {
		strbuf_addf(out, "\nXID telemetry %s: %.0f rows, %.0f GPUs, %.0f events (", str(x, "file"), num(x, "rows"),
			    num(x, "gpus"), num(x, "events"));
		const cJSON *bc = obj(x, "by_code");
		cJSON_ArrayForEach(e, bc) strbuf_addf(out, "%sxid %s: %.0f", e == bc->child ? "" : ", ", e->string,
						      e->valuedouble);
		strbuf_addf(out, "), bad rows %.0f\n", num(x, "bad_rows"));
		cJSON_ArrayForEach(e, obj(x, "first_bad")) strbuf_addf(out, "  line %.0f: %s\n", num(e, "line"),
								       str(e, "reason"));
		strbuf_addf(out, "  NODE_FAIL jobs %.0f, with an XID event within %.0f s: %.0f\n", num(x, "node_fail_jobs"),
			    num(x, "window_s"), num(x, "node_fail_with_xid"));
		strbuf_addf(out, "  per-GPU MTBF from XID-correlated NODE_FAILs: %s\n", str(obj(x, "mtbf"), "definition"));
		mtbf_text(obj(x, "mtbf"), out);
	}

	const cJSON *g = obj(j, "goodput");
	double tot = num(g, "total_gpu_hours");
	strbuf_addf(out, "\ngoodput waterfall (GPU-hours)\n  definition: %s\n", str(g, "definition"));
	double left = tot;
	strbuf_addf(out, "  %-34s %14.1f %7.2f%%\n", "total", tot, 100.0);
	static const struct {
		const char *key, *label;
	} steps[] = {{"node_fail_gpu_hours", "- killed by node failures"},
		     {"failed_gpu_hours", "- failed (user/application)"},
		     {"timeout_gpu_hours", "- timed out"},
		     {"running_gpu_hours", "- still running"},
		     {"cancelled_gpu_hours", "- cancelled"}};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		double v = num(g, steps[i].key);
		left -= v;
		strbuf_addf(out, "  %-34s %14.1f %7.2f%%   (left %.1f)\n", steps[i].label, v, tot > 0 ? 100 * v / tot : 0,
			    left);
	}
	strbuf_addf(out, "  %-34s %14.1f %7.2f%%\n", "= completed", num(g, "completed_gpu_hours"),
		    100 * num(g, "completed_share"));

	const cJSON *y = obj(j, "young");
	strbuf_addf(out, "\nYoung's checkpoint interval\n  definition: %s\n", str(y, "definition"));
	if (isnan(num(y, "interval_min")))
		strbuf_addf(out, "  no NODE_FAIL in the population: no MTBF, no interval\n");
	else
		strbuf_addf(out, "  C = %g min, job of %.0f GPUs: M = %.1f h, tau = %.1f min (%.2f h), waste %.2f%%\n",
			    num(y, "ckpt_cost_min"), num(y, "job_gpus"), num(y, "job_mtbf_hours"), num(y, "interval_min"),
			    num(y, "interval_hours"), 100 * num(y, "waste_fraction"));
}
