/* host_metrics.h — step, span, op, gap and period metrics of a host trace.
 *
 * Conventions: a step is a `ProfilerStep#N` user_annotation; a span is any other
 * user_annotation; an op is a cpu_op. An event belongs to the step whose interval
 * contains its start on the same process. "p50" is the track's convention,
 * sorted(steps)[n // 2] (upper median); the true median is reported beside it.
 * The same code fills the `metrics` of truth files and `faultline analyze`, so a
 * rubric's `truth:metrics...` and `trace:...` references read the same numbers.
 *
 * Gaps: time on a row (pid, tid) during which no op runs — the innermost open
 * event is a span (user_annotation or gpu_user_annotation) or nothing. Such time
 * is cut at every event boundary, so each gap lies in exactly one innermost span
 * (its `span`, "" when it lies outside every span) and at most one step. Totals
 * "inside steps" count rows that hold the steps; the largest gaps of other rows
 * (device rows) name the step whose time window holds their middle. On a
 * host row this is the time the thread spent in no recorded op (a sleep, a wait,
 * a pause); on a device row it is device idle time. Trace-category events (the
 * profiler's own window) are ignored.
 *
 * Periods: for each span, the steps in which it is long, and their period
 * (host_period.c). The per-step lengths split into short and long at a gap
 * of at least max(0.1 ms, 25% of the median step) with the long side at least
 * twice the short side, candidates ranked by the ratio across the gap. The
 * period is the smallest p >= 2 whose residue class (step number mod p ==
 * phase) is exactly the set of long steps (confidence 1); failing that, the
 * best p that leaves at most max(1, n/10) steps off the pattern, with its
 * confidence (overlap of pattern and long steps) and the off-pattern steps;
 * 0 when nothing fits (irregular).
 */
#ifndef FL_HOST_METRICS_H
#define FL_HOST_METRICS_H

#include <cjson/cJSON.h>

#include "common/status.h"
#include "grader/trace/trace_events.h"

/* How many of the largest gaps fl_host_metrics_compute keeps. */
#define FL_GAPS_TOP_DEFAULT 5

struct fl_name_stat {
	const char *name;
	long count;
	double total_ms;
	double *per_step_ms; /* n_steps entries, for spans */
};

struct fl_gap {
	double ms;
	double ts;             /* start, µs */
	long long pid, tid;
	long step;             /* index into the steps (by time on rows without steps), -1 outside every step */
	const char *span;      /* innermost span holding the gap ("" none; a step's name when directly in a step) */
	const char *before;    /* name of the event that ended (or opened) just before, "" none */
	const char *after;     /* name of the event that starts (or closes) right after, "" none */
};

struct fl_span_period {
	const char *name;
	size_t n_long;
	int *long_steps;       /* step numbers (ProfilerStep#N), ascending */
	int period;            /* 0: no period fits */
	int phase;             /* step number mod period of the long steps */
	double confidence;     /* 1: every step fits the pattern; less: |pattern and long| / |pattern or long| */
	size_t n_off;
	int *off_steps;        /* step numbers off the pattern (long outside it, short inside), ascending */
	double threshold_ms;   /* long means >= this */
	double long_p50_ms, short_p50_ms;
	double excess_ms;      /* sum over long steps of (length - short p50) */
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
	/* gaps */
	long gap_count;          /* gaps of any length > 0 */
	double gap_total_ms;     /* all gaps, inside and outside steps */
	double gap_in_steps_ms;  /* the part inside steps */
	double gap_max_ms;
	double *gap_per_step_ms; /* n_steps entries */
	size_t n_gaps;           /* kept: the largest, longest first */
	struct fl_gap *gaps;
	/* periods: only spans whose per-step lengths split into long and short */
	size_t n_periods;
	struct fl_span_period *periods;
};

struct fl_host_metrics_opts {
	size_t top_gaps; /* 0: FL_GAPS_TOP_DEFAULT */
};

enum fl_status fl_host_metrics_compute(const struct fl_trace *t, struct fl_host_metrics *m);
enum fl_status fl_host_metrics_compute_opts(const struct fl_trace *t, const struct fl_host_metrics_opts *o,
					    struct fl_host_metrics *m);
/* The metrics as JSON (caller owns). Keys: steps, spans, ops, gaps, periods. */
cJSON *fl_host_metrics_json(const struct fl_host_metrics *m);
/* Period detection on one series (exposed for tests): values[i] belongs to step
 * number step_num[i]; median_step_ms scales the noise floor. Returns 1 and fills
 * p (long_steps malloc'd) when the series splits, 0 otherwise. */
int fl_detect_period(const double *values, const int *step_num, size_t n, double median_step_ms,
		     struct fl_span_period *p);
/* Frees what fl_detect_period allocated in p. */
void fl_free_period(struct fl_span_period *p);
void fl_host_metrics_release(struct fl_host_metrics *m);

#endif
