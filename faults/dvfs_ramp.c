/* dvfs_ramp — a device clock that drops over the run (power or thermal
 * throttling). The clock factor (how many times longer each compute kernel
 * takes) rises linearly from 1 at the first recorded step to `factor` at the
 * last one; before the window it is 1. The emu and cuda devices stretch each
 * kernel by pausing in proportion to its real work; the cpu backend stretches
 * each op by duty cycle (runs it, then pauses). The same ops, in the same
 * order, take longer and longer: no new ops, no new gaps. Each step reports the
 * factor asked for and the one measured from the device's statistics. */
#include <stdlib.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"factor", FL_PARAM_NUMBER, 3, 1, 20, NULL, "x", "the clock factor reached at the last step"},
};

struct dvfs_state {
	long first, last;        /* the ramp: first recorded step to the last step */
	double want;             /* this step's factor */
	struct fl_device_stats at_begin;
	int have_stats;
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (!env->clock_factor)
		return fl_error(FL_EINPUT, "fault '%s' needs a device whose clock can be slowed; '%s' has none",
				f->ops->name, env->backend);
	struct dvfs_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->first = env->first_recorded;
	s->last = env->total_steps - 1;
	return fl_svc_set_clock_factor(env->svc, 1.0);
}

static double factor_at(const struct fl_fault *f, const struct dvfs_state *s, long step)
{
	const double top = fl_fault_num(f, "factor");
	if (s->last <= s->first) /* a one-step window: that step is the last */
		return step >= s->first ? top : 1.0;
	if (step <= s->first)
		return 1.0;
	if (step >= s->last)
		return top;
	return 1.0 + (top - 1.0) * (double)(step - s->first) / (double)(s->last - s->first);
}

static void step_begin(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct dvfs_state *s = f->state;
	s->want = factor_at(f, s, ctx->step);
	if (fl_svc_set_clock_factor(ctx->svc, s->want) != FL_OK)
		s->want = 0; /* not reported: the device refused (init checked it can) */
	s->have_stats = fl_svc_device_stats(ctx->svc, &s->at_begin);
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct dvfs_state *s = f->state;
	if (s->want <= 0)
		return;
	double measured = s->want;
	struct fl_device_stats now;
	if (s->have_stats && fl_svc_device_stats(ctx->svc, &now)) {
		double k = now.kernel_ms - s->at_begin.kernel_ms, x = now.stretched_ms - s->at_begin.stretched_ms;
		if (k > 0)
			measured = (k + x) / k;
	}
	struct fl_instance *in = fl_fault_report(f, ctx, "device", s->want, measured, "x");
	if (in) {
		in->extra_name[0] = "ramp_to";
		in->extra[0] = fl_fault_num(f, "factor");
	}
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_dvfs_ramp = {
	.name = "dvfs_ramp",
	.summary = "device clock drops over the run: every kernel 1x to `factor`x longer, first to last step",
	.family = "dvfs_throttle",
	.fix = "power_thermal",
	.backends = "cpu emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_begin = step_begin,
	.step_end = step_end,
	.release = release,
};
