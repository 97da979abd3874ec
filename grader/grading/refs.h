/* refs.h — a rubric's expected values: references into the truth or the trace,
 * and small derived expressions.
 *
 *   expr  := ref | number | "text" | func '(' expr { ',' expr } ')'
 *   ref   := 'truth:' path            a value of the truth file
 *          | 'trace:' path            a value of the metrics computed from the
 *                                     truth's trace at grade time (same layout
 *                                     as the truth's `metrics`)
 *          | 'fleet:' path            a value of the fleet analysis
 *                                     (faultline.fleet/1, grader/analysis/fleet.h)
 *                                     of the jobs CSV the truth's `fleet` names,
 *                                     computed at grade time
 *   path  := step { '.' name | '[' index ']' | '[' key '=' value ']' | '["' name '"]' }
 *   func  := ratio(a, b)  a / b          diff(a, b)  a - b      mul(a, b)  a * b
 *            sum(...)     mean(...)      min(...)    max(...)   (numbers, or one array)
 *            abs(a)       count(x)       (elements of an array / keys of an object)
 *
 * Examples: `truth:metrics.steps.p50_ms`,
 *           `ratio(truth:metrics.ops.total, truth:baseline.metrics.ops.total)`,
 *           `truth:faults[fault=periodic_stall].params.period`,
 *           `truth:metrics.spans["data_loading"].total_ms`.
 * A name is any run of characters other than . [ ] ( ) , and whitespace.
 * `[key=value]` selects the first array element that is an object whose `key`
 * is the string `value` (or the number it spells).
 */
#ifndef FL_REFS_H
#define FL_REFS_H

#include <cjson/cJSON.h>

#include "common/jsonutil.h" /* fl_json_path: the path after truth: */
#include "common/status.h"

struct fl_ref_ctx {
	const cJSON *truth;
	const char *truth_name; /* for messages */
	/* Called on the first trace: reference; returns the trace's metrics
	 * (owned by the callee) or an error. NULL: trace: references are errors. */
	enum fl_status (*trace_metrics)(void *arg, const cJSON **metrics);
	void *arg;
	/* Called on the first fleet: reference, like trace_metrics. NULL:
	 * fleet: references are errors. */
	enum fl_status (*fleet_metrics)(void *arg, const cJSON **metrics);
	/* Called on the first diagnosis: reference, like trace_metrics: the
	 * faultline.diagnosis/1 of the truth's traces. NULL: errors. */
	enum fl_status (*diagnosis)(void *arg, const cJSON **diagnosis);
};

/* 1 if s is an expression (starts with truth:, trace:, fleet:, diagnosis: or a function call),
 * 0 if it is literal text. */
int fl_ref_is_expression(const char *s);

/* Evaluate expr; *out is a new value the caller owns. Errors are FL_EINTERNAL
 * (a truth or rubric error) with a message naming the key that failed, e.g.
 * "truth key 'metrics.steps.p60_ms' not found in 'x.truth.json' (no 'p60_ms')". */
enum fl_status fl_ref_eval(const char *expr, struct fl_ref_ctx *ctx, cJSON **out);

#endif
