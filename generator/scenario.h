/* scenario.h — load and check a scenario file (faultline.scenario/1).
 *
 * Every key is checked: unknown keys, wrong types, unknown faults and
 * out-of-range parameters are errors naming the file, the key path and what
 * was expected (exit 2). Defaults are filled in from the fault's schema.
 */
#ifndef FL_SCENARIO_H
#define FL_SCENARIO_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/status.h"
#include "faults/fault.h"
#include "runtime/tensor.h"

#define FL_MAX_PHASES 8
#define FL_MAX_FAULTS 16

/* A declared variation range of a numeric parameter ("vary": {"ms": [20, 40]}). */
struct fl_vary {
	int declared;
	double lo, hi;
	int drawn;    /* set by fl_scenario_vary */
};

struct fl_fault_spec {
	const struct fl_fault_ops *ops;
	struct fl_param_value *values; /* aligned with ops->params */
	struct fl_vary *vary;          /* aligned with ops->params */
};

struct fl_scenario {
	char *path;
	char sha256[65];
	cJSON *doc;
	const char *name, *description, *backend, *rubric, *baseline;
	long ranks;
	uint64_t seed;
	long wait, warmup, active;
	struct {
		const char *kind, *mode;
		long batch, dim, layers;
		long min_dim;         /* the smallest dim the calibration may choose (0: any) */
		long microbatches;    /* kind "pipeline": micro-batches per step (0 otherwise) */
		double target_step_ms;
		enum fl_alloc_policy alloc;
		const char *phases[FL_MAX_PHASES];
		size_t n_phases;
	} workload;
	struct fl_fault_spec faults[FL_MAX_FAULTS];
	size_t n_faults;
	const char *out_trace, *out_truth;
};

enum fl_status fl_scenario_load(const char *path, struct fl_scenario *sc);
void fl_scenario_release(struct fl_scenario *sc);
/* Per-learner variants: draw every declared "vary" parameter uniformly from its
 * range with a generator seeded by `seed` (integers for integer parameters).
 * Re-checks the fault's constraints (e.g. offset < period) by redrawing. */
enum fl_status fl_scenario_vary(struct fl_scenario *sc, uint64_t seed);
/* Parse one parameter value against its spec (used by the scenario loader and tests). */
enum fl_status fl_param_parse(const char *file, const char *place, const struct fl_param_spec *spec,
			      const cJSON *v, struct fl_param_value *out);
/* JSON of a parameter value (for the truth file). */
cJSON *fl_param_json(const struct fl_param_spec *spec, const struct fl_param_value *v);

#endif
