/* throttled_rank — a straggler: one rank's device runs slower, as a
 * clock-throttled GPU does. Its device stretches every compute kernel by
 * `factor` (pausing in proportion to the real work, so it takes no CPU from the
 * other ranks); the others reach the gradient all-reduce first and wait in it.
 * With `phase` set to a phase of the workload (e.g. "backward") only that phase's
 * kernels are slowed: the factor is switched on at the phase's start and off at
 * its end, in the device's stream order, so the culprit's forward stays normal
 * while its backward is long and the others wait in the bucketed all-reduces. */
#include <string.h>
#include <stdlib.h>

#include "faults/fault.h"

struct throttle_state {
	int throttled; /* this rank is the slow one */
	int phased;    /* only the kernels of one phase are slowed */
	enum fl_status err;
};

static const struct fl_param_spec params[] = {
	{"rank", FL_PARAM_INT, 1, 0, 1023, NULL, NULL, "the rank whose device is throttled"},
	{"factor", FL_PARAM_NUMBER, 2.5, 1, 50, NULL, "x", "how many times longer each compute kernel takes"},
	{"phase", FL_PARAM_STRING, 0, 0, 0, "all", NULL,
	 "the phase whose kernels are slowed (\"backward\": a backward-only straggler), or \"all\""},
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	long rank = (long)fl_fault_num(f, "rank");
	if (!env->asynchronous || !env->clock_factor)
		return fl_error(FL_EINPUT, "fault '%s' needs a device backend (emu or cuda), not '%s'", f->ops->name,
				env->backend);
	if (env->world_size < 2)
		return fl_error(FL_EINPUT, "fault '%s' needs 2 or more ranks (a straggler is slow next to others)", f->ops->name);
	if (rank >= env->world_size)
		return fl_error(FL_EINPUT, "fault '%s': rank %ld does not exist in a %d-rank run", f->ops->name, rank,
				env->world_size);
	struct throttle_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	s->throttled = env->rank == rank;
	f->state = s;
	const char *phase = fl_fault_str(f, "phase");
	if (strcmp(phase, "all") != 0) {
		size_t p = 0;
		while (p < env->n_phases && strcmp(env->phases[p], phase) != 0)
			p++;
		if (p == env->n_phases)
			return fl_error(FL_EINPUT, "fault '%s': phase '%s' is not a phase of the workload (expected \"all\" "
					"or one of its workload.phases)", f->ops->name, phase);
		s->phased = 1;
		return FL_OK; /* the factor is set at each start of the phase */
	}
	if (s->throttled)
		return fl_svc_set_clock_factor(env->svc, fl_fault_num(f, "factor"));
	return FL_OK;
}

static void set_factor(struct fl_fault *f, struct fl_step_ctx *ctx, int on)
{
	struct throttle_state *s = f->state;
	if (!s->throttled || !s->phased || strcmp(ctx->phase, fl_fault_str(f, "phase")) != 0 || s->err)
		return;
	s->err = fl_svc_set_clock_factor(ctx->svc, on ? fl_fault_num(f, "factor") : 1.0);
}

static void phase_begin(struct fl_fault *f, struct fl_step_ctx *ctx) { set_factor(f, ctx, 1); }
static void phase_end(struct fl_fault *f, struct fl_step_ctx *ctx) { set_factor(f, ctx, 0); }

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct throttle_state *s = f->state;
	struct fl_device_stats st;
	if (!s->throttled || !fl_svc_device_stats(ctx->svc, &st) || st.kernel_ms <= 0)
		return;
	if (s->phased) {
		/* the slow-down of the kernels that ran slowed (this phase's), so far */
		if (st.slowed_ms > 0)
			fl_fault_report(f, ctx, fl_fault_str(f, "phase"), fl_fault_num(f, "factor"),
					(st.slowed_ms + st.stretched_ms) / st.slowed_ms, "x");
		return;
	}
	/* cumulative over the run so far: measured slow-down of this rank's kernels */
	fl_fault_report(f, ctx, "device", fl_fault_num(f, "factor"), (st.kernel_ms + st.stretched_ms) / st.kernel_ms, "x");
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_throttled_rank = {
	.name = "throttled_rank",
	.summary = "straggler: one rank's device runs every compute kernel (or one phase's) `factor` times longer",
	.family = "straggler",
	.fix = "rebalance",
	.backends = "emu cuda",
	.min_ranks = 2,
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.phase_begin = phase_begin,
	.phase_end = phase_end,
	.step_end = step_end,
	.release = release,
};
