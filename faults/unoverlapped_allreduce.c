/* unoverlapped_allreduce — exposed communication: the whole gradient all-reduce
 * is issued after the last backward op instead of bucket by bucket during
 * backward, so no compute runs under it. */
#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "which steps reduce after backward"},
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (!env->train || env->world_size < 2)
		return fl_error(FL_EINPUT, "fault '%s' needs a training workload (workload.mode \"train\") on 2 or more ranks",
				f->ops->name);
	return FL_OK;
}

static void step_begin(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	int on = fl_steps_match(fl_fault_steps(f, "steps"), ctx->step);
	fl_svc_set_allreduce_overlap(ctx->svc, !on);
	if (on)
		fl_fault_report(f, ctx, "backward", 1, 1, "all-reduces after backward");
}

const struct fl_fault_ops fl_fault_unoverlapped_allreduce = {
	.name = "unoverlapped_allreduce",
	.summary = "exposed communication: the whole gradient all-reduce runs after the last backward op",
	.family = "unoverlapped_comm",
	.fix = "overlap_comm",
	.backends = "emu cuda",
	.needs_train = 1,
	.min_ranks = 2,
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_begin = step_begin,
};
