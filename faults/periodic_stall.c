/* periodic_stall — a periodic host stall: every Nth step a real sleep in a named
 * phase (synchronous logging, a lock, a telemetry scrape). */
#include <string.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"ms", FL_PARAM_NUMBER, 60, 0.01, 60000, NULL, "ms", "stall length"},
	{"period", FL_PARAM_INT, 3, 1, 1000000, NULL, "steps", "a stall every `period` steps"},
	{"offset", FL_PARAM_INT, 2, 0, 999999, NULL, "steps", "stall in steps with step % period == offset"},
	{"phase", FL_PARAM_STRING, 0, 0, 0, "metrics", NULL, "the phase that stalls"},
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	const char *ph = fl_fault_str(f, "phase");
	if (fl_fault_num(f, "offset") >= fl_fault_num(f, "period"))
		return fl_error(FL_EINPUT, "fault '%s': offset %g must be below period %g", f->ops->name,
				fl_fault_num(f, "offset"), fl_fault_num(f, "period"));
	for (size_t i = 0; i < env->n_phases; i++)
		if (strcmp(env->phases[i], ph) == 0)
			return FL_OK;
	return fl_error(FL_EINPUT, "fault '%s': phase '%s' is not a phase of the workload", f->ops->name, ph);
}

static void phase_begin(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	if (strcmp(ctx->phase, fl_fault_str(f, "phase")) != 0)
		return;
	long period = (long)fl_fault_num(f, "period"), offset = (long)fl_fault_num(f, "offset");
	if (ctx->step % period != offset)
		return;
	double ms = fl_fault_num(f, "ms");
	uint64_t t0 = fl_clock_ticks();
	fl_sleep_ms(ms);
	uint64_t t1 = fl_clock_ticks();
	fl_fault_report(f, ctx, ctx->phase, ms, (double)fl_clock_delta_ns(t0, t1) / 1e6, "ms");
}

const struct fl_fault_ops fl_fault_periodic_stall = {
	.name = "periodic_stall",
	.summary = "periodic host stall: a real sleep in a named phase every Nth step",
	.family = "periodic_host_stall",
	.fix = "async_offload",
	.backends = "cpu emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.phase_begin = phase_begin,
};
