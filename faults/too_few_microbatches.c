/* too_few_microbatches — pipeline bubble: a pipeline-parallel training run
 * whose batch is split into too few micro-batches. The workload's stages are
 * the ranks and really send activations forward and gradients backward
 * between neighbours; with m micro-batches in the GPipe schedule each stage
 * waits while the pipeline fills and drains, (p − 1)/(m + p − 1) of the step
 * on p stages. The fault sets m (the scenario's own count is the healthy one);
 * each step reports that share against the share this rank's device really
 * sat idle (step time minus compute-kernel time). */
#include <stdlib.h>

#include "faults/fault.h"

struct bubble_state {
	double last_kernel_ms; /* the device's compute-kernel time at the previous step's end */
	uint64_t last_t;       /* and the clock then (0: no previous step) */
	int m, p;
};

static const struct fl_param_spec params[] = {
	{"microbatches", FL_PARAM_INT, 2, 1, 1024, NULL, "micro-batches", "micro-batches per step (at most the batch)"},
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (env->pipeline_stages < 2)
		return fl_error(FL_EINPUT, "fault '%s' needs a pipeline-parallel workload (workload.kind \"pipeline\") on 2 "
				"or more ranks: its stages are the ranks", f->ops->name);
	struct bubble_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->m = (int)fl_fault_num(f, "microbatches");
	s->p = env->pipeline_stages;
	return fl_svc_set_microbatches(env->svc, s->m);
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct bubble_state *s = f->state;
	struct fl_device_stats st;
	if (!fl_svc_device_stats(ctx->svc, &st))
		return;
	uint64_t now = fl_clock_ticks(), prev = s->last_t;
	double prev_ms = s->last_kernel_ms;
	s->last_t = now;
	s->last_kernel_ms = st.kernel_ms;
	if (!prev || st.kernel_ms < prev_ms) /* the first step, or the counters restarted with the window */
		return;
	double step_ms = (double)fl_clock_delta_ns(prev, now) / 1e6, busy = st.kernel_ms - prev_ms;
	if (step_ms <= 0)
		return;
	double idle = 100.0 * (1.0 - busy / step_ms);
	/* requested: the schedule's bubble share; measured: this stage's idle share of the step */
	struct fl_instance *in = fl_fault_report(f, ctx, "step", 100.0 * (s->p - 1) / (s->m + s->p - 1),
						 idle < 0 ? 0 : idle, "%");
	if (in) {
		in->extra_name[0] = "microbatches";
		in->extra[0] = s->m;
		in->extra_name[1] = "stages";
		in->extra[1] = s->p;
	}
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_too_few_microbatches = {
	.name = "too_few_microbatches",
	.summary = "pipeline bubble: a pipeline-parallel run splits its batch into too few micro-batches",
	.family = "pipeline_bubble",
	.fix = "more_microbatches",
	.backends = "emu",
	.needs_train = 1,
	.min_ranks = 2,
	.workload = "pipeline",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_end = step_end,
	.release = release,
};
