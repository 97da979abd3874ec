/* fleet_ref.c — what fleet: references read: the fleet analysis of the logs
 * the truth's `fleet` object names, computed at grade time, so a rubric grades
 * a generated fleet (its truth written by fleet generate) and the real
 * AcmeTrace files (a small truth an instructor writes beside them) alike:
 *   "fleet": {"jobs": "trace_kalos.csv", "jobs_sha256": "...",   (sha optional)
 *             "xid": "XID_ERRORS.csv", "xid_sha256": "...",     (optional)
 *             "min_gpus": 256, "min_hours": 0, "ckpt_cost_min": 10,
 *             "job_gpus": 512, "xid_window_s": 300}             (optional)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "common/strbuf.h"
#include "grader/analysis/fleet.h"
#include "grader/grading/grade.h"

static char *beside_truth(const char *truth_path, const char *name)
{
	const char *slash = strrchr(truth_path, '/');
	struct strbuf sb = STRBUF_INIT;
	if (slash)
		strbuf_add(&sb, truth_path, (size_t)(slash - truth_path + 1));
	strbuf_adds(&sb, name);
	return sb.buf;
}

/* The file the key names, beside the truth, checked against key_sha256. */
static enum fl_status fleet_file(const struct fl_grade *g, const cJSON *fl, const char *key, int required, char **out)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(fl, key);
	char shakey[32];
	*out = NULL;
	if (!f && !required)
		return FL_OK;
	if (!cJSON_IsString(f) || !*f->valuestring || strchr(f->valuestring, '/'))
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': fleet.%s: expected the file name of a %s CSV beside the truth",
				g->truth_name, key, key);
	*out = beside_truth(g->truth_path, f->valuestring);
	snprintf(shakey, sizeof(shakey), "%s_sha256", key);
	const cJSON *sha = cJSON_GetObjectItemCaseSensitive(fl, shakey);
	char hash[65];
	if (cJSON_IsString(sha) && (fl_sha256_file(*out, hash) || strcmp(hash, sha->valuestring) != 0))
		return fl_error(FL_GRADE_ECONFIG, "fleet log '%s' does not match truth '%s' (fleet.%s differs or the file "
				"cannot be read)", f->valuestring, g->truth_name, shakey);
	return FL_OK;
}

static enum fl_status number(const struct fl_grade *g, const cJSON *fl, const char *key, double lo, double *v)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(fl, key);
	if (!n)
		return FL_OK;
	if (!cJSON_IsNumber(n) || n->valuedouble < lo)
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': fleet.%s: expected a number >= %g", g->truth_name, key, lo);
	*v = n->valuedouble;
	return FL_OK;
}

enum fl_status fl_grade_fleet_metrics(void *arg, const cJSON **metrics)
{
	struct fl_grade *g = arg;
	if (g->fleet_metrics) {
		*metrics = g->fleet_metrics;
		return FL_OK;
	}
	const cJSON *fl = cJSON_GetObjectItemCaseSensitive(g->truth, "fleet");
	if (!cJSON_IsObject(fl))
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': fleet: missing, expected an object naming the jobs CSV "
				"({\"jobs\": \"trace_kalos.csv\", ...})", g->truth_name);
	char *jobs = NULL, *xid = NULL;
	struct fl_fleet_opts o = FL_FLEET_OPTS_INIT;
	double min_gpus = (double)o.min_gpus, job_gpus = 0;
	enum fl_status st;
	if ((st = fleet_file(g, fl, "jobs", 1, &jobs)) || (st = fleet_file(g, fl, "xid", 0, &xid)) ||
	    (st = number(g, fl, "min_gpus", 1, &min_gpus)) || (st = number(g, fl, "min_hours", 0, &o.min_hours)) ||
	    (st = number(g, fl, "ckpt_cost_min", 1e-6, &o.ckpt_cost_min)) || (st = number(g, fl, "job_gpus", 0, &job_gpus)) ||
	    (st = number(g, fl, "xid_window_s", 0, &o.xid_window_s)))
		goto out;
	o.min_gpus = (long)min_gpus;
	o.job_gpus = (long)job_gpus;
	o.xid_path = xid;
	cJSON *j = NULL;
	if ((st = fl_fleet_analyze(jobs, &o, &j))) {
		st = fl_error_prefix(FL_GRADE_ECONFIG, "fleet log of truth '%s': ", g->truth_name);
		goto out;
	}
	g->fleet_metrics = j;
	*metrics = j;
out:
	free(jobs);
	free(xid);
	return st;
}
