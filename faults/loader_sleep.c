/* loader_sleep — input starvation: a real sleep inside data_loading, before the
 * batch is made (the loader waiting on storage or decode). */
#include <string.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"ms", FL_PARAM_NUMBER, 30, 0.01, 60000, NULL, "ms", "sleep length per affected step"},
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "which steps starve: \"all\", [2, 5], or {\"every\": N, \"offset\": K}"},
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	for (size_t i = 0; i < env->n_phases; i++)
		if (strcmp(env->phases[i], "data_loading") == 0)
			return FL_OK;
	return fl_error(FL_EINPUT, "fault '%s' needs a 'data_loading' phase in the workload", f->ops->name);
}

static void phase_begin(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	if (strcmp(ctx->phase, "data_loading") != 0 || !fl_steps_match(fl_fault_steps(f, "steps"), ctx->step))
		return;
	double ms = fl_fault_num(f, "ms");
	uint64_t t0 = fl_clock_ticks();
	fl_sleep_ms(ms);
	uint64_t t1 = fl_clock_ticks();
	fl_fault_report(f, ctx, "data_loading", ms, (double)fl_clock_delta_ns(t0, t1) / 1e6, "ms");
}

const struct fl_fault_ops fl_fault_loader_sleep = {
	.name = "loader_sleep",
	.summary = "input starvation: a real sleep inside data_loading before the batch is made",
	.family = "input_starvation",
	.fix = "loader_parallelism",
	.backends = "cpu emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.phase_begin = phase_begin,
};
