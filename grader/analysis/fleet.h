/* fleet.h — fleet-level analyses of AcmeTrace-style job logs (lab R2).
 *
 * fl_fleet_analyze streams a jobs CSV (Kalos or Seren header, told apart by
 * the header) and optionally an XID telemetry CSV, in bounded memory (fixed
 * histograms; the only per-row memory kept is the end time of each NODE_FAIL
 * job, for the XID correlation), and returns one JSON document
 * (faultline.fleet/1): the job mix by GPU-count bucket, terminal states by
 * scale, queue-delay percentiles by scale, the empirical per-GPU MTBF from
 * NODE_FAIL terminations (and from XID-correlated ones) with an exact Poisson
 * (Garwood) 95% interval, the goodput waterfall and Young's checkpoint
 * interval. Bad rows are counted by reason, the first few kept with their line
 * numbers; with strict the first bad row is an FL_EINPUT error.
 * docs/fleet.md defines every number.
 */
#ifndef FL_FLEET_H
#define FL_FLEET_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "common/strbuf.h"

struct fl_fleet_opts {
	const char *xid_path;  /* NULL: no telemetry */
	long min_gpus;         /* the MTBF population: jobs with >= min_gpus GPUs ... */
	double min_hours;      /* ... that ran >= min_hours */
	double ckpt_cost_min;  /* Young's interval: the checkpoint cost C */
	long job_gpus;         /* Young's interval for a job of this many GPUs (0: min_gpus) */
	double xid_window_s;   /* an XID event within this many seconds of a NODE_FAIL correlates */
	int strict;            /* the first bad row is an error */
};
#define FL_FLEET_OPTS_INIT {NULL, 256, 0, 10, 0, 300, 0}

enum fl_status fl_fleet_analyze(const char *jobs_path, const struct fl_fleet_opts *o, cJSON **out);
/* The document as text, every number with its definition. */
void fl_fleet_text(const cJSON *fleet, struct strbuf *out);

/* "2023-05-17 11:00:58+00:00" (also 'T' for the space, "Z", "+HHMM", "+HH",
 * no offset = UTC, fractional seconds ignored) to seconds since the epoch, in
 * UTC whatever the locale or TZ. 0 ok, -1 not a time. */
int fl_fleet_parse_time(const char *s, size_t n, int64_t *epoch);
/* The inverse: "YYYY-MM-DD HH:MM:SS+00:00" (26 bytes with the NUL). */
void fl_fleet_format_time(int64_t epoch, char buf[32]);

/* Exact (Garwood) two-sided interval for the mean of a Poisson count k at
 * confidence conf (0.95): lo = chi2(a/2; 2k)/2 (0 for k = 0), hi =
 * chi2(1-a/2; 2k+2)/2, a = 1 - conf. */
void fl_poisson_ci(long k, double conf, double *lo, double *hi);
/* Quantile of the chi-square distribution with dof degrees of freedom. */
double fl_chi2_quantile(double p, double dof);

/* The MTBF object of faultline.fleet/1 (jobs, gpu_hours_at_risk, failures,
 * per_gpu_hours/years, ci95) for GPU-hours at risk and a failure count. */
cJSON *fl_fleet_mtbf_json(double gpu_hours, long jobs, long failures);

/* GPU-count buckets of the job mix. */
#define FL_FLEET_NBUCKETS 7
extern const struct fl_fleet_bucket {
	const char *name;
	long lo, hi; /* inclusive; hi < 0: no upper bound */
} fl_fleet_buckets[FL_FLEET_NBUCKETS];
int fl_fleet_bucket_of(long gpus);

#define FL_HOURS_PER_YEAR 8766.0 /* 365.25 days */

#endif
