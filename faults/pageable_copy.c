/* pageable_copy — a blocking host-to-device copy of the batch: the data loader
 * hands the device its batch with a synchronous copy from pageable memory
 * (cudaMemcpy) instead of an asynchronous copy from pinned memory.
 *
 * In the selected steps the runtime's batch copy (runtime/tensor.h,
 * h2d_blocking) is a real synchronous copy: it waits behind the work already
 * queued on the compute stream, the host waits until the bytes have landed,
 * and only then does the forward pass launch anything. The trace shows a
 * cudaMemcpy (not cudaMemcpyAsync) at the start of each step, its
 * `Memcpy HtoD (Pageable -> Device)` on the device row, and the first
 * launches of the step behind it. */
#include <stdlib.h>
#include <string.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "which steps copy the batch synchronously"},
};

struct copy_state {
	struct fl_rt_copy_stats before;
	int on;
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (!env->asynchronous)
		return fl_error(FL_EINPUT, "fault '%s' needs a device with its own memory to copy to (emu or cuda): on "
				"'%s' the batch never leaves the host", f->ops->name, env->backend);
	int has = 0;
	for (size_t i = 0; i < env->n_phases; i++)
		has |= strcmp(env->phases[i], "data_loading") == 0;
	if (!has)
		return fl_error(FL_EINPUT, "fault '%s' needs the data_loading phase in workload.phases: the batch is copied "
				"there", f->ops->name);
	struct copy_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	return FL_OK;
}

static void phase_begin(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct copy_state *s = f->state;
	if (strcmp(ctx->phase, "data_loading") != 0 || !fl_steps_match(fl_fault_steps(f, "steps"), ctx->step))
		return;
	s->before = ctx->rt->h2d;
	s->on = 1;
	ctx->rt->h2d_blocking = 1;
}

static void phase_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct copy_state *s = f->state;
	if (!s->on || strcmp(ctx->phase, "data_loading") != 0)
		return;
	ctx->rt->h2d_blocking = 0;
	s->on = 0;
	const struct fl_rt_copy_stats *now = &ctx->rt->h2d;
	double copies = (double)(now->blocking - s->before.blocking);
	double ms = (double)(now->blocking_ns - s->before.blocking_ns) / 1e6;
	double mb = (double)(now->bytes - s->before.bytes) / 1e6;
	/* requested: one blocking copy of the batch; measured: the blocking copies that ran */
	struct fl_instance *in = fl_fault_report(f, ctx, "data_loading", 1, copies, "copies");
	if (in) {
		in->extra_name[0] = "blocking_ms";
		in->extra[0] = ms;
		in->extra_name[1] = "MB";
		in->extra[1] = mb;
	}
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_pageable_copy = {
	.name = "pageable_copy",
	.summary = "blocking H2D: the batch goes to the device with a synchronous copy from pageable memory",
	.family = "blocking_h2d",
	.fix = "pinned_async_copy",
	.backends = "emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.phase_begin = phase_begin,
	.phase_end = phase_end,
	.release = release,
};
