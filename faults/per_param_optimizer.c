/* per_param_optimizer — an unfused optimizer over many small parameters.
 *
 * The model carries `tensors` small parameter tensors (1 × `elements` each, as
 * the biases and norm scales of a deep model are) besides its weight matrices,
 * and after backward a for-loop SGD updates them one by one: for each tensor
 * the gradient of its L2 penalty (grad = weight_decay · p, an fl::mul) and the
 * update param.add_(grad, alpha=-lr) (an fl::add_), each a real eager op with
 * its own tiny kernel. The optimizer phase becomes thousands of tiny ops. The
 * tensors are allocated (fl_rt_param: nothing recorded) in the first step,
 * before the recorded window, and freed after the last one. */
#include <stdlib.h>
#include <string.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"tensors", FL_PARAM_INT, 500, 1, 20000, NULL, "tensors", "small parameter tensors updated one by one"},
	{"elements", FL_PARAM_INT, 64, 1, 65536, NULL, "floats", "elements per small tensor (a 1 × elements row)"},
	{"lr", FL_PARAM_NUMBER, 0.01, 1e-6, 1, NULL, NULL, "SGD learning rate"},
	{"weight_decay", FL_PARAM_NUMBER, 0.01, 0, 1, NULL, NULL, "L2 penalty: each tensor's gradient is weight_decay · p"},
};

struct ppo_state {
	struct fl_tensor **p; /* the small parameters (NULL until the first step) */
	long n;
	long last_step;
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (!env->train)
		return fl_error(FL_EINPUT, "fault '%s' needs a training workload (workload.mode \"train\"): inference has "
				"no optimizer step", f->ops->name);
	int has_opt = 0;
	for (size_t i = 0; i < env->n_phases; i++)
		has_opt |= strcmp(env->phases[i], "optimizer") == 0;
	if (!has_opt)
		return fl_error(FL_EINPUT, "fault '%s' needs the workload's 'optimizer' phase", f->ops->name);
	struct ppo_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->n = (long)fl_fault_num(f, "tensors");
	s->last_step = env->total_steps - 1;
	s->p = calloc((size_t)s->n, sizeof(*s->p));
	if (!s->p)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory for %ld tensors", f->ops->name, s->n);
	return FL_OK;
}

static void step_begin(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct ppo_state *s = f->state;
	if (s->p[0])
		return;
	int cols = (int)fl_fault_num(f, "elements");
	for (long i = 0; i < s->n; i++)
		s->p[i] = fl_rt_param(ctx->rt, 1, cols, 0.02f);
}

static void free_params(struct ppo_state *s, struct fl_rt *rt)
{
	for (long i = 0; i < s->n; i++) {
		fl_tensor_free(rt, s->p[i]);
		s->p[i] = NULL;
	}
}

static void phase_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct ppo_state *s = f->state;
	if (strcmp(ctx->phase, "optimizer") != 0 || !s->p[0])
		return;
	const double lr = fl_fault_num(f, "lr"), wd = fl_fault_num(f, "weight_decay");
	uint64_t t0 = fl_clock_ticks();
	long ops = 0;
	for (long i = 0; i < s->n; i++) {
		struct fl_tensor *g = fl_rt_scalar(ctx->rt, s->p[i], FL_SCALAR_MUL, wd);
		fl_rt_add_(ctx->rt, s->p[i], g, -lr);
		fl_tensor_free(ctx->rt, g);
		ops += 2;
	}
	uint64_t t1 = fl_clock_ticks();
	struct fl_instance *in = fl_fault_report(f, ctx, "optimizer", 2.0 * (double)s->n, (double)ops, "ops");
	if (in) {
		in->extra_name[0] = "measured_ms";
		in->extra[0] = (double)fl_clock_delta_ns(t0, t1) / 1e6;
		in->extra_name[1] = "tensors";
		in->extra[1] = (double)s->n;
	}
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct ppo_state *s = f->state;
	if (ctx->step >= s->last_step && s->p[0])
		free_params(s, ctx->rt); /* the run ends: give the tensors back while the device is open */
}

static void release(struct fl_fault *f)
{
	struct ppo_state *s = f->state;
	if (!s)
		return;
	free(s->p);
	free(s);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_per_param_optimizer = {
	.name = "per_param_optimizer",
	.summary = "unfused optimizer: many small parameter tensors updated one by one, a few tiny ops each",
	.family = "optimizer_dominance",
	.fix = "fused_optimizer",
	.backends = "emu cuda", /* training runs on a device backend */
	.needs_train = 1,
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_begin = step_begin,
	.phase_end = phase_end,
	.step_end = step_end,
	.release = release,
};
