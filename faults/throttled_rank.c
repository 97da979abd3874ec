/* throttled_rank — a straggler: one rank's device runs slower, as a
 * clock-throttled GPU does. Its device stretches every compute kernel by
 * `factor` (pausing in proportion to the real work, so it takes no CPU from the
 * other ranks); the others reach the gradient all-reduce first and wait in it. */
#include "faults/fault.h"
#include "runtime/device.h"

static const struct fl_param_spec params[] = {
	{"rank", FL_PARAM_INT, 1, 0, 1023, NULL, NULL, "the rank whose device is throttled"},
	{"factor", FL_PARAM_NUMBER, 2.5, 1, 50, NULL, "x", "how many times longer each compute kernel takes"},
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	long rank = (long)fl_fault_num(f, "rank");
	if (!env->device->ops->set_clock_factor)
		return fl_error(FL_EINPUT, "fault '%s' needs a device backend (emu or cuda), not '%s'", f->ops->name,
				env->backend);
	if (env->world_size < 2)
		return fl_error(FL_EINPUT, "fault '%s' needs 2 or more ranks (a straggler is slow next to others)", f->ops->name);
	if (rank >= env->world_size)
		return fl_error(FL_EINPUT, "fault '%s': rank %ld does not exist in a %d-rank run", f->ops->name, rank,
				env->world_size);
	f->state = env->device;
	if (env->rank == rank)
		return env->device->ops->set_clock_factor(env->device, fl_fault_num(f, "factor"));
	return FL_OK;
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct fl_backend *be = f->state;
	struct fl_device_stats st;
	if (!be->ops->stats)
		return;
	be->ops->stats(be, &st, 0);
	if (be->cfg.rank != (int)fl_fault_num(f, "rank") || st.kernel_ms <= 0)
		return;
	/* cumulative over the run so far: measured slow-down of this rank's kernels */
	fl_fault_report(f, ctx, "device", fl_fault_num(f, "factor"), (st.kernel_ms + st.stretched_ms) / st.kernel_ms, "x");
}

const struct fl_fault_ops fl_fault_throttled_rank = {
	.name = "throttled_rank",
	.summary = "straggler: one rank's device runs every compute kernel `factor` times longer",
	.family = "straggler",
	.fix = "rebalance",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_end = step_end,
};
