/* slow_link — comm-bound: every rank's gradient all-reduce crosses a slow
 * interconnect. The device carries each collective over an emulated link of
 * `gbps` Gbit/s: the real MPI transfer is paced to that speed (each rank sends
 * the ring all-reduce's 2(p−1)/p of the buffer), so the comm kernels are long on
 * every rank alike while compute is unchanged — the lookalike of a straggler,
 * told apart by per-rank symmetry. deviceProperties names the emulated link. */
#include <stdlib.h>

#include "faults/fault.h"

struct link_state {
	double last_ms, last_bytes; /* the device's link counters at the previous step's end */
};

static const struct fl_param_spec params[] = {
	{"gbps", FL_PARAM_NUMBER, 2, 0.05, 400, NULL, "Gbit/s", "the link's bandwidth per rank (bus bandwidth)"},
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (!env->train || env->world_size < 2)
		return fl_error(FL_EINPUT, "fault '%s' needs a training workload (workload.mode \"train\") on 2 or more "
				"ranks: the gradient all-reduce is what crosses the link", f->ops->name);
	if (!env->link_emulated)
		return fl_error(FL_EINPUT, "fault '%s' needs a device with an emulated link (emu), not '%s'", f->ops->name,
				env->backend);
	struct link_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	return fl_svc_set_link_gbps(env->svc, fl_fault_num(f, "gbps"));
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct link_state *s = f->state;
	struct fl_device_stats st;
	if (!fl_svc_device_stats(ctx->svc, &st))
		return;
	if (st.link_ms < s->last_ms || st.link_bytes < s->last_bytes) /* the counters restart with the window */
		s->last_ms = s->last_bytes = 0;
	double ms = st.link_ms - s->last_ms, bytes = st.link_bytes - s->last_bytes;
	s->last_ms = st.link_ms;
	s->last_bytes = st.link_bytes;
	if (ms <= 0 || bytes <= 0)
		return; /* this step's collectives are still queued: the next step counts them */
	/* requested: the link's speed; measured: the bytes sent over the time on the wire */
	struct fl_instance *in = fl_fault_report(f, ctx, "backward", fl_fault_num(f, "gbps"), bytes * 8 / (ms * 1e6),
						 "Gbit/s");
	if (in) {
		in->extra_name[0] = "link_ms";
		in->extra[0] = ms;
		in->extra_name[1] = "link_MB";
		in->extra[1] = bytes / 1e6;
	}
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_slow_link = {
	.name = "slow_link",
	.summary = "comm-bound: every rank's collectives cross an emulated link paced to `gbps` Gbit/s",
	.family = "comm_bound",
	.fix = "change_ratio",
	.backends = "emu",
	.needs_train = 1,
	.min_ranks = 2,
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_end = step_end,
	.release = release,
};
