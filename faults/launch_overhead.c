/* launch_overhead — a launch-bound step: every op pays a real host-side
 * dispatch cost before its kernel launch.
 *
 * Small-batch inference in an eager framework: before each launch the host
 * checks the arguments, infers the output shape and builds the launch
 * descriptor. Here that is real CPU work (hashing the op's arguments into a
 * descriptor, round after round) for a set number of microseconds per launch,
 * as part of the launch (emu: inside its cudaLaunchKernel call; cuda: right
 * before cudaLaunchKernel, inside the op). The op count is the healthy one
 * (unlike op_storm); the kernels are tiny, so each is shorter than its launch
 * and the device waits on the host: it idles most of the step with a queue of
 * 0-1 kernels. The backend runs the work through the runtime's dispatch hook
 * (fl_rt_set_dispatch), which this fault sets at each step's start. */
#include <stdlib.h>
#include <string.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"us", FL_PARAM_NUMBER, 40, 1, 10000, NULL, "us", "host dispatch work per kernel launch"},
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "which steps pay it"},
};

struct launch_state {
	uint64_t budget_ns;  /* per launch */
	unsigned long launches;
	uint64_t ns;         /* dispatch time this step */
	int on;              /* this step pays it */
	volatile uint64_t descriptor; /* the work's result: kept so it is never optimised away */
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (!env->asynchronous)
		return fl_error(FL_EINPUT, "fault '%s' needs a device that launches kernels (emu or cuda): on '%s' ops run "
				"inline, there is no launch to be bound by", f->ops->name, env->backend);
	struct launch_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->budget_ns = (uint64_t)(fl_fault_num(f, "us") * 1e3);
	return FL_OK;
}

/* One round of descriptor building: mix the launch's arguments and the
 * kernel's name into the descriptor hash (FNV-1a over the bytes). */
static uint64_t describe(uint64_t h, const struct fl_kernel *k, const struct fl_kernel_args *a)
{
	const unsigned char *p = (const unsigned char *)a;
	for (size_t i = 0; i < sizeof(*a); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	for (const char *c = k->name; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	/* shape inference: the output extent from the operands' */
	h ^= (uint64_t)a->m * 31u + (uint64_t)a->n * 17u + (uint64_t)a->k;
	return h;
}

static void dispatch(void *arg, const struct fl_kernel *k, const struct fl_kernel_args *a)
{
	struct launch_state *s = arg;
	uint64_t t0 = fl_clock_ticks(), h = 0xcbf29ce484222325ull, ns;
	do {
		for (int r = 0; r < 8; r++)
			h = describe(h, k, a);
		ns = fl_clock_delta_ns(t0, fl_clock_ticks());
	} while (ns < s->budget_ns);
	s->descriptor ^= h;
	s->ns += ns;
	s->launches++;
}

static void step_begin(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct launch_state *s = f->state;
	s->launches = 0;
	s->ns = 0;
	s->on = fl_steps_match(fl_fault_steps(f, "steps"), ctx->step);
	fl_rt_set_dispatch(ctx->rt, s->on ? dispatch : NULL, s);
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct launch_state *s = f->state;
	if (!s->on)
		return;
	fl_rt_set_dispatch(ctx->rt, NULL, NULL); /* nothing after the step pays it */
	s->on = 0;
	/* requested: µs per launch; measured: the mean µs each launch really spent */
	double mean_us = s->launches ? (double)s->ns / 1e3 / (double)s->launches : 0;
	struct fl_instance *in = fl_fault_report(f, ctx, "step", fl_fault_num(f, "us"), mean_us, "us");
	if (in) {
		in->extra_name[0] = "launches";
		in->extra[0] = (double)s->launches;
		in->extra_name[1] = "dispatch_ms";
		in->extra[1] = (double)s->ns / 1e6;
	}
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_launch_overhead = {
	.name = "launch_overhead",
	.summary = "launch-bound: every kernel launch pays a set host dispatch cost (real CPU work per op)",
	.family = "launch_bound",
	.fix = "cuda_graphs",
	.backends = "emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_begin = step_begin,
	.step_end = step_end,
	.release = release,
};
