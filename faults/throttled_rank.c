/* throttled_rank — a straggler: one rank's device runs slower, as a
 * clock-throttled GPU does. Its device stretches every compute kernel by
 * `factor` (pausing in proportion to the real work, so it takes no CPU from the
 * other ranks); the others reach the gradient all-reduce first and wait in it. */
#include <stdlib.h>

#include "faults/fault.h"

struct throttle_state {
	int throttled; /* this rank is the slow one */
};

static const struct fl_param_spec params[] = {
	{"rank", FL_PARAM_INT, 1, 0, 1023, NULL, NULL, "the rank whose device is throttled"},
	{"factor", FL_PARAM_NUMBER, 2.5, 1, 50, NULL, "x", "how many times longer each compute kernel takes"},
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
	if (s->throttled)
		return fl_svc_set_clock_factor(env->svc, fl_fault_num(f, "factor"));
	return FL_OK;
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct throttle_state *s = f->state;
	struct fl_device_stats st;
	if (!s->throttled || !fl_svc_device_stats(ctx->svc, &st) || st.kernel_ms <= 0)
		return;
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
	.summary = "straggler: one rank's device runs every compute kernel `factor` times longer",
	.family = "straggler",
	.fix = "rebalance",
	.backends = "emu cuda",
	.min_ranks = 2,
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_end = step_end,
	.release = release,
};
