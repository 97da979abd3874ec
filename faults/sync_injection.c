/* sync_injection — sync-forcing host reads: k times per step the host reads a
 * device value (the .item() analogue: a device-to-host copy and a stream
 * synchronize), so the device drains and then idles while the host catches up. */
#include <stdlib.h>

#include "faults/fault.h"

struct sync_state {
	long step;
	int site, reads;
	int sites_per_step;
};

static const struct fl_param_spec params[] = {
	{"k", FL_PARAM_INT, 4, 1, 256, NULL, "reads", "host reads of a device value per step"},
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "which steps read"},
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (!env->asynchronous)
		return fl_error(FL_EINPUT, "fault '%s' needs an asynchronous device (emu or cuda): on '%s' there is nothing "
				"asynchronous to sync", f->ops->name, env->backend);
	struct sync_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	s->step = -1;
	s->sites_per_step = env->train ? 2 * env->layers : 2;
	f->state = s;
	return FL_OK;
}

static void site(struct fl_fault *f, struct fl_step_ctx *ctx, enum fl_site where, struct fl_tensor **t)
{
	struct sync_state *s = f->state;
	if ((where != FL_SITE_FORWARD_LAYER && where != FL_SITE_BACKWARD_LAYER) || !*t)
		return;
	if (!fl_steps_match(fl_fault_steps(f, "steps"), ctx->step))
		return;
	if (s->step != ctx->step) {
		s->step = ctx->step;
		s->site = 0;
		s->reads = 0;
	}
	int k = (int)fl_fault_num(f, "k");
	s->site++;
	/* spread k reads evenly over the step's layer sites */
	int due = (int)((long)s->site * k / s->sites_per_step);
	if (s->site >= s->sites_per_step)
		due = k;
	while (s->reads < due) {
		uint64_t t0 = fl_clock_ticks();
		fl_rt_item(ctx->rt, *t);
		uint64_t t1 = fl_clock_ticks();
		s->reads++;
		fl_fault_report(f, ctx, ctx->phase, 1, (double)fl_clock_delta_ns(t0, t1) / 1e6, "ms");
	}
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_sync_injection = {
	.name = "sync_injection",
	.summary = "sync-forcing host reads: k device-to-host reads per step, each draining the device",
	.family = "sync_stall",
	.fix = "defer_host_reads",
	.backends = "emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.site = site,
	.release = release,
};
