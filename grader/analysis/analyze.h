/* analyze.h — `faultline analyze`: the metrics of traces (host_metrics.h) as
 * text or JSON, and each later trace compared with the first.
 *
 * The comparison works on metrics JSON, so it applies equally to a truth's
 * `metrics` against its `baseline.metrics`.
 */
#ifndef FL_ANALYZE_H
#define FL_ANALYZE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/status.h"
#include "common/strbuf.h"

struct fl_analyze_opts {
	int json;        /* faultline.analysis/1 instead of text */
	size_t top_gaps; /* 0: FL_GAPS_TOP_DEFAULT */
};

/* Compare metrics m with baseline b (both fl_host_metrics_json layout):
 * {step_p50_ratio, step_median_ratio, step_max_ratio, ops_total_ratio,
 *  ops_per_step_p50_ratio, spans: {NAME: {baseline_ms, ms, growth_ms, factor}},
 *  grew_most: {span, growth_ms, factor}}. A ratio with a zero denominator is
 * null. Caller owns the result. */
cJSON *fl_metrics_compare(const cJSON *b, const cJSON *m);

/* Analyse traces and append the report to out. FL_EINPUT when a trace cannot
 * be read (the message names it). */
enum fl_status fl_analyze_traces(const char *const *paths, size_t n, const struct fl_analyze_opts *o,
				 struct strbuf *out);

#endif
