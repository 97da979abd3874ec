/* truth.h — the truth file (faultline.truth/1), written beside the trace.
 *
 * It records what was injected (every instance, requested and measured), the
 * environment and calibration, the trace's hash and event counts, the metrics
 * recomputed from the written trace, and the answer key rubrics refer to. It
 * is never inside the trace.
 */
#ifndef FL_TRUTH_H
#define FL_TRUTH_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "capture/kineto_writer.h"
#include "faults/fault.h"
#include "generator/scenario.h"
#include "generator/workload.h"

struct fl_truth_input {
	const struct fl_scenario *sc;
	const char *backend;
	uint64_t seed;
	long active;
	const char *trace_path, *trace_name;
	const struct fl_trace_stats *trace_stats;
	const struct fl_calibration *calibration;
	const struct fl_fault *faults;
	size_t n_faults;
	const cJSON *metrics;
	const cJSON *baseline_metrics; /* may be NULL */
	const char *baseline_name;
	double last_loss;
};

enum fl_status fl_truth_write(const char *path, const struct fl_truth_input *in);

#endif
