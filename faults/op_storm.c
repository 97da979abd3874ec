/* op_storm — an eager small-op storm: the same math shredded into many tiny
 * elementwise ops (x + 0.0, x * 1.0 on the first layer before its activation;
 * x - 0.0 on the model's output, after the last layer), each a real eager op
 * with its own allocation and scalar promotion (add → to → _to_copy →
 * empty_strided + copy_: five ops per chain link, as an eager framework records). */
#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"pre", FL_PARAM_INT, 60, 0, 100000, NULL, "pairs", "(add 0.0, mul 1.0) pairs before the activation"},
	{"post", FL_PARAM_INT, 60, 0, 100000, NULL, "ops", "sub 0.0 ops on the output, after the last layer"},
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "which steps storm"},
};

static void chain(struct fl_step_ctx *ctx, struct fl_tensor **t, enum fl_scalar_op op, double s)
{
	struct fl_tensor *n = fl_rt_scalar(ctx->rt, *t, op, s);
	fl_tensor_free(ctx->rt, *t);
	*t = n;
}

static void site(struct fl_fault *f, struct fl_step_ctx *ctx, enum fl_site where, struct fl_tensor **t)
{
	if ((where != FL_SITE_PRE_ACTIVATION && where != FL_SITE_OUTPUT) ||
	    !fl_steps_match(fl_fault_steps(f, "steps"), ctx->step))
		return;
	uint64_t t0 = fl_clock_ticks();
	long n;
	if (where == FL_SITE_PRE_ACTIVATION) {
		n = (long)fl_fault_num(f, "pre");
		for (long i = 0; i < n; i++) {
			chain(ctx, t, FL_SCALAR_ADD, 0.0);
			chain(ctx, t, FL_SCALAR_MUL, 1.0);
		}
		n *= 2;
	} else {
		n = (long)fl_fault_num(f, "post");
		for (long i = 0; i < n; i++)
			chain(ctx, t, FL_SCALAR_SUB, 0.0);
	}
	uint64_t t1 = fl_clock_ticks();
	if (n > 0) {
		struct fl_instance *in = fl_fault_report(f, ctx, "forward", (double)n,
							 (double)fl_clock_delta_ns(t0, t1) / 1e6, "ops");
		if (in) {
			in->extra_name[0] = where == FL_SITE_PRE_ACTIVATION ? "site_pre_activation" : "site_output";
			in->extra[0] = 1;
			in->extra_name[1] = "measured_ms";
			in->extra[1] = in->measured;
			in->measured = (double)n;
		}
	}
}

const struct fl_fault_ops fl_fault_op_storm = {
	.name = "op_storm",
	.summary = "eager small-op storm: the same math shredded into many tiny elementwise ops",
	.family = "op_storm",
	.fix = "fusion",
	.backends = "cpu emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.site = site,
};
