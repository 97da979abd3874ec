/* host_metrics.h — step, span and op metrics of a host trace.
 *
 * Conventions: a step is a `ProfilerStep#N` user_annotation; a span is any other
 * user_annotation; an op is a cpu_op. An event belongs to the step whose interval
 * contains its start on the same process. "p50" is the track's convention,
 * sorted(steps)[n // 2] (upper median); the true median is reported beside it.
 * The same code fills the `metrics` of truth files and `faultline analyze`.
 */
#ifndef FL_HOST_METRICS_H
#define FL_HOST_METRICS_H

#include <cjson/cJSON.h>

#include "common/status.h"
#include "grader/trace_reader.h"

struct fl_name_stat {
	const char *name;
	long count;
	double total_ms;
	double *per_step_ms; /* n_steps entries, for spans */
};

struct fl_host_metrics {
	size_t n_steps;
	int *step_num;
	double *step_ms;
	double *step_ts; /* start, µs */
	double p50_upper_ms, median_ms, mean_ms, min_ms, max_ms, total_ms;
	size_t n_spans;
	struct fl_name_stat *spans;
	size_t n_op_names;
	struct fl_name_stat *ops;
	long ops_total;
	long *ops_per_step;
};

enum fl_status fl_host_metrics_compute(const struct fl_trace *t, struct fl_host_metrics *m);
/* The metrics as JSON (caller owns). */
cJSON *fl_host_metrics_json(const struct fl_host_metrics *m);
/* Upper median (sorted[n/2]) and true median of n values. */
double fl_p50_upper(const double *v, size_t n);
double fl_median(const double *v, size_t n);
void fl_host_metrics_release(struct fl_host_metrics *m);

#endif
