/* dtype_casts — casts around every matmul: each layer's activation, the next
 * matmul's operand, is converted to float16 and back to float32 in the
 * forward pass (an autocast region drawn too narrowly, or a model that mixes
 * dtypes by hand).
 *
 * At each forward layer's site the activation goes through two real eager
 * conversions, x.to(float16) then .to(float32), each an fl::to op with its
 * conversion kernel (round to nearest even: the values really lose their low
 * mantissa bits). The trace shows fl::to / fl::_to_copy / fl::copy_ ops and
 * cast kernels bracketing every matmul: 2 casts per forward layer per step. */
#include <stdlib.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "which steps cast"},
};

struct cast_state {
	long step;
	int casts, per_step;
	uint64_t ns;
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	struct cast_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->step = -1;
	s->per_step = 2 * (env->train ? env->layers : 2); /* two casts at each forward layer */
	return FL_OK;
}

static void site(struct fl_fault *f, struct fl_step_ctx *ctx, enum fl_site where, struct fl_tensor **t)
{
	struct cast_state *s = f->state;
	if (where != FL_SITE_FORWARD_LAYER || !*t || !fl_steps_match(fl_fault_steps(f, "steps"), ctx->step))
		return;
	if (s->step != ctx->step) {
		s->step = ctx->step;
		s->casts = 0;
		s->ns = 0;
	}
	uint64_t t0 = fl_clock_ticks();
	struct fl_tensor *h = fl_rt_to_half(ctx->rt, *t);
	struct fl_tensor *back = fl_rt_to_float(ctx->rt, h);
	fl_tensor_free(ctx->rt, h);
	fl_tensor_free(ctx->rt, *t);
	*t = back;
	s->ns += fl_clock_delta_ns(t0, fl_clock_ticks());
	s->casts += 2;
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct cast_state *s = f->state;
	if (s->step != ctx->step)
		return;
	/* requested: the casts a step should get; measured: the casts that ran */
	struct fl_instance *in = fl_fault_report(f, ctx, "forward", (double)s->per_step, (double)s->casts, "casts");
	if (in) {
		in->extra_name[0] = "cast_ms";
		in->extra[0] = (double)s->ns / 1e6;
	}
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_dtype_casts = {
	.name = "dtype_casts",
	.summary = "dtype casts: every matmul's operand converted to float16 and back, around each forward layer",
	.family = "dtype_casts",
	.fix = "autocast_scope",
	.backends = "cpu emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.site = site,
	.step_end = step_end,
	.release = release,
};
