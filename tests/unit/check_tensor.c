/* check_tensor.c — the workload's eager ops: the math on every backend, and what each op records. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "capture/tracer.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

/* Loop tests run once per configuration: _i indexes this table. */
static const struct config {
	const char *backend;
	enum fl_alloc_policy alloc;
} configs[] = {
	{"cpu", FL_ALLOC_SYSTEM},
	{"cpu", FL_ALLOC_HEAP},
	{"emu", FL_ALLOC_SYSTEM},
	{"emu", FL_ALLOC_HEAP},
};
#define N_CONFIGS ((int)(sizeof(configs) / sizeof(configs[0])))

static struct fl_backend dev;

static void open_device(const struct config *c)
{
	const struct fl_backend_config cfg = {.rank = 0, .world_size = 1, .device = 0};
	memset(&dev, 0, sizeof(dev));
	dev.ops = fl_backend_find(c->backend);
	ck_assert_msg(dev.ops != NULL, "no backend '%s'", c->backend);
	ck_assert_int_eq(dev.ops->open(&dev, &cfg), FL_OK);
}

/* Drain queued work (frees included) and stop the device's workers. */
static void close_device(void)
{
	fl_dev_synchronize(&dev);
	if (dev.ops->close)
		dev.ops->close(&dev);
}

static void rt_setup(struct fl_rt *rt, const struct config *c, uint64_t seed)
{
	fl_rt_init(rt, &dev, c->alloc, seed);
	ck_assert_ptr_eq(rt->be, &dev);
	ck_assert_int_eq(rt->alloc, c->alloc);
}

/* Near within a relative tolerance of `scale` (the magnitude the result came from). */
#define assert_near(got, want, scale, rel)                                                        \
	ck_assert_msg(fabs((double)(got) - (double)(want)) <= (rel) * (double)(scale) + 1e-7, \
		      "got %.9g, want %.9g (scale %.3g)", (double)(got), (double)(want), (double)(scale))

/* ---- math ---- */

static void check_matmul(struct fl_rt *rt, int m, int k, int n)
{
	struct fl_tensor *a = fl_rt_randn(rt, m, k), *b = fl_rt_randn(rt, k, n);
	struct fl_tensor *c = fl_rt_matmul(rt, a, b);
	fl_dev_synchronize(rt->be); /* the host reads device memory below */
	ck_assert_int_eq(c->rows, m);
	ck_assert_int_eq(c->cols, n);
	ck_assert_uint_eq(c->bytes, (size_t)m * n * sizeof(float));
	for (int i = 0; i < m; i++) {
		for (int j = 0; j < n; j++) {
			double want = 0, scale = 0;
			for (int q = 0; q < k; q++) {
				double t = (double)a->data[i * k + q] * b->data[q * n + j];
				want += t;
				scale += fabs(t);
			}
			assert_near(c->data[i * n + j], want, scale, 1e-4);
		}
	}
	fl_tensor_free(rt, c);
	fl_tensor_free(rt, b);
	fl_tensor_free(rt, a);
}

START_TEST(matmul_matches_reference)
{
	struct fl_rt rt;
	open_device(&configs[_i]);
	rt_setup(&rt, &configs[_i], 11);
	check_matmul(&rt, 1, 1, 1);
	check_matmul(&rt, 7, 13, 5);
	check_matmul(&rt, 3, 1, 9);
	check_matmul(&rt, 64, 48, 40); /* over a page: the system policy maps it */
	close_device();
}
END_TEST

START_TEST(elementwise_and_reductions)
{
	struct fl_rt rt;
	open_device(&configs[_i]);
	rt_setup(&rt, &configs[_i], 12);
	for (int shape = 0; shape < 2; shape++) {
		int rows = shape ? 32 : 3, cols = shape ? 64 : 5;
		size_t n = (size_t)rows * cols;
		struct fl_tensor *x = fl_rt_randn(&rt, rows, cols);
		struct fl_tensor *r = fl_rt_relu(&rt, x), *sq = fl_rt_square(&rt, x), *mean = fl_rt_mean(&rt, x);
		struct fl_tensor *sq_mean = fl_rt_mean(&rt, sq);
		double item = fl_rt_item(&rt, mean), sq_item = fl_rt_item(&rt, sq_mean);
		fl_dev_synchronize(&dev);
		double sum = 0, abs_sum = 0, ss = 0;
		int negatives = 0;
		for (size_t i = 0; i < n; i++) {
			ck_assert_float_eq(r->data[i], x->data[i] > 0 ? x->data[i] : 0.0f);
			ck_assert_float_eq(sq->data[i], x->data[i] * x->data[i]);
			sum += x->data[i];
			abs_sum += fabs(x->data[i]);
			ss += (double)sq->data[i];
			negatives += x->data[i] < 0;
		}
		ck_assert_int_gt(negatives, 0); /* relu had something to clamp */
		ck_assert_int_eq(mean->rows, 1);
		ck_assert_int_eq(mean->cols, 1);
		assert_near(mean->data[0], sum / (double)n, abs_sum / (double)n, 1e-5);
		ck_assert_double_eq(item, (double)mean->data[0]);
		assert_near(sq_item, ss / (double)n, ss / (double)n, 1e-5);

		struct fl_tensor *all[] = {sq_mean, mean, sq, r, x};
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			fl_tensor_free(&rt, all[i]);
	}
	close_device();
}
END_TEST

START_TEST(scalar_ops)
{
	struct fl_rt rt;
	open_device(&configs[_i]);
	rt_setup(&rt, &configs[_i], 13);
	struct fl_tensor *x = fl_rt_randn(&rt, 16, 33);
	struct fl_tensor *add = fl_rt_scalar(&rt, x, FL_SCALAR_ADD, 1.25);
	struct fl_tensor *mul = fl_rt_scalar(&rt, x, FL_SCALAR_MUL, -2.5);
	struct fl_tensor *sub = fl_rt_scalar(&rt, x, FL_SCALAR_SUB, 0.75);
	struct fl_tensor *same = fl_rt_scalar(&rt, x, FL_SCALAR_MUL, 1.0);
	fl_dev_synchronize(&dev);
	for (int i = 0; i < 16 * 33; i++) {
		const float v = x->data[i];
		ck_assert_float_eq_tol(add->data[i], v + 1.25f, 1e-6f * (1 + fabsf(v)));
		ck_assert_float_eq_tol(mul->data[i], v * -2.5f, 1e-6f * (1 + fabsf(v)));
		ck_assert_float_eq_tol(sub->data[i], v - 0.75f, 1e-6f * (1 + fabsf(v)));
		ck_assert_float_eq(same->data[i], v);
	}
	ck_assert_int_eq(add->rows, 16);
	ck_assert_int_eq(add->cols, 33);
	struct fl_tensor *all[] = {same, sub, mul, add, x};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		fl_tensor_free(&rt, all[i]);
	close_device();
}
END_TEST

START_TEST(randn_is_standard_normal)
{
	struct fl_rt rt;
	open_device(&configs[_i]);
	rt_setup(&rt, &configs[_i], 14);
	struct fl_tensor *x = fl_rt_randn(&rt, 64, 512);
	fl_dev_synchronize(&dev);
	const size_t n = 64 * 512;
	double sum = 0, sq = 0;
	size_t finite = 0;
	for (size_t i = 0; i < n; i++) {
		finite += isfinite(x->data[i]) != 0;
		sum += x->data[i];
	}
	ck_assert_uint_eq(finite, n);
	double mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		sq += (x->data[i] - mean) * (x->data[i] - mean);
	double var = sq / (double)(n - 1);
	ck_assert_msg(fabs(mean) < 0.05, "randn mean %.4f", mean);
	ck_assert_msg(fabs(var - 1) < 0.05, "randn variance %.4f", var);
	fl_tensor_free(&rt, x);
	close_device();
}
END_TEST

START_TEST(seed_makes_data_deterministic)
{
	struct fl_rt a, b, c;
	open_device(&configs[_i]);
	rt_setup(&a, &configs[_i], 42);
	rt_setup(&b, &configs[_i], 42);
	rt_setup(&c, &configs[_i], 43);
	struct fl_tensor *xa = fl_rt_randn(&a, 8, 100), *xb = fl_rt_randn(&b, 8, 100), *xc = fl_rt_randn(&c, 8, 100);
	/* the stream moves on: a second draw differs from the first */
	struct fl_tensor *ya = fl_rt_randn(&a, 8, 100), *pb = fl_rt_param(&b, 8, 100, 1.0f);
	struct fl_tensor *zero = fl_rt_param(&c, 2, 2, 0.0f);
	fl_dev_synchronize(&dev);
	ck_assert_int_eq(memcmp(xa->data, xb->data, xa->bytes), 0);
	ck_assert_int_ne(memcmp(xa->data, xc->data, xa->bytes), 0);
	ck_assert_int_ne(memcmp(xa->data, ya->data, xa->bytes), 0);
	ck_assert_int_eq(memcmp(ya->data, pb->data, ya->bytes), 0); /* param draws from the same stream */
	for (int i = 0; i < 4; i++)
		ck_assert_float_eq(zero->data[i], 0.0f);
	fl_tensor_free(&c, zero);
	fl_tensor_free(&b, pb);
	fl_tensor_free(&a, ya);
	fl_tensor_free(&c, xc);
	fl_tensor_free(&b, xb);
	fl_tensor_free(&a, xa);
	close_device();
}
END_TEST

START_TEST(policy_names)
{
	ck_assert_str_eq(fl_alloc_policy_name(FL_ALLOC_SYSTEM), "system");
	ck_assert_str_eq(fl_alloc_policy_name(FL_ALLOC_HEAP), "heap");
}
END_TEST

/* ---- the ops each call records ---- */

struct expected_op {
	const char *name;
	uint16_t depth;
};

/* The cpu_op events of buffer b are exactly want, in order, at their depths.
 * (An asynchronous backend adds cuda_runtime spans among them.) */
static void assert_ops(const struct fl_tbuf *b, const struct expected_op *want, size_t n, const char *what)
{
	size_t k = 0;
	ck_assert_uint_eq(b->depth, 0);
	for (uint32_t i = 0; i < b->n; i++) {
		const struct fl_event *e = &b->ev[i];
		ck_assert_uint_ge(e->t1, e->t0);
		if (e->kind != FL_EV_CPU_OP)
			continue;
		ck_assert_msg(k < n, "%s: more than %zu ops, '%s' too", what, n, fl_tracer_name(e->name));
		ck_assert_msg(strcmp(fl_tracer_name(e->name), want[k].name) == 0, "%s: op %zu is '%s', expected '%s'",
			      what, k, fl_tracer_name(e->name), want[k].name);
		ck_assert_msg(e->depth == want[k].depth, "%s: '%s' at depth %u, expected %u", what, want[k].name,
			      e->depth, want[k].depth);
		k++;
	}
	ck_assert_msg(k == n, "%s: %zu ops recorded, expected %zu", what, k, n);
}

static int is_emu(int i) { return strcmp(configs[i].backend, "emu") == 0; }

static void tracer_on_main(void)
{
	ck_assert_int_eq(fl_tracer_init(0), FL_OK);
	ck_assert_int_eq(fl_tracer_thread_attach("main", -1), FL_OK);
}

/* The device rows' buffer of the compute stream's worker (emu), or NULL. */
static const struct fl_tbuf *device_buffer(void)
{
	for (const struct fl_tbuf *b = fl_tracer_threads(); b; b = b->next)
		if (b->device >= 0 && strstr(b->label, "stream 7"))
			return b;
	return NULL;
}

START_TEST(scalar_records_promotion_chain)
{
	struct fl_rt rt;
	tracer_on_main();
	open_device(&configs[_i]);
	rt_setup(&rt, &configs[_i], 15);
	struct fl_tensor *x = fl_rt_randn(&rt, 4, 4); /* before recording: not in the buffer */
	fl_dev_synchronize(&dev);
	const struct fl_tbuf *b = fl_tls_tbuf;
	ck_assert_uint_eq(b->n, 0);

	fl_tracer_set_recording(1);
	struct fl_tensor *y = fl_rt_scalar(&rt, x, FL_SCALAR_ADD, 1.0);
	fl_dev_synchronize(&dev); /* the device records its kernels while recording is on */
	fl_tracer_set_recording(0);
	const struct expected_op add[] = {
		{"fl::add", 0}, {"fl::to", 1}, {"fl::_to_copy", 2}, {"fl::empty_strided", 3}, {"fl::copy_", 3},
	};
	assert_ops(b, add, 5, "add");
	if (!is_emu(_i))
		ck_assert_uint_eq(b->n, 5); /* on cpu, nothing but the ops */

	/* the scalar op's span encloses the whole promotion chain */
	for (uint32_t i = 1; i < b->n; i++) {
		ck_assert_uint_ge(b->ev[i].t0, b->ev[0].t0);
		if (b->ev[i].kind == FL_EV_CPU_OP)
			ck_assert_uint_le(b->ev[i].t1, b->ev[0].t1);
	}

	if (is_emu(_i)) {
		/* two launches (copy_kernel, add_kernel), each matched by a kernel on stream 7 */
		const struct fl_tbuf *d = device_buffer();
		ck_assert_ptr_nonnull(d);
		uint32_t corr[2], n_launch = 0;
		for (uint32_t i = 0; i < b->n; i++)
			if (b->ev[i].kind == FL_EV_CUDA_RUNTIME &&
			    strcmp(fl_tracer_name(b->ev[i].name), "cudaLaunchKernel") == 0) {
				ck_assert_uint_lt(n_launch, 2);
				corr[n_launch++] = b->ev[i].corr;
			}
		ck_assert_uint_eq(n_launch, 2);
		ck_assert_uint_ne(corr[0], corr[1]);
		static const char *const kernels[] = {"copy_kernel", "add_kernel"};
		ck_assert_uint_eq(d->n, 2);
		for (int i = 0; i < 2; i++) {
			ck_assert_uint_eq(d->ev[i].kind, FL_EV_KERNEL);
			ck_assert_uint_eq(d->ev[i].corr, corr[i]);
			ck_assert_int_eq(d->ev[i].stream, FL_STREAM_COMPUTE);
			ck_assert_str_eq(fl_tracer_name(d->ev[i].name), kernels[i]);
		}
	}
	fl_tensor_free(&rt, y);
	fl_tensor_free(&rt, x);
	close_device();
	fl_tracer_release();
}
END_TEST

START_TEST(each_op_records_its_anatomy)
{
	struct fl_rt rt;
	tracer_on_main();
	open_device(&configs[_i]);
	rt_setup(&rt, &configs[_i], 16);
	const struct fl_tbuf *b = fl_tls_tbuf;
	struct fl_tensor *w = fl_rt_param(&rt, 8, 8, 0.5f);

	fl_tracer_set_recording(1);
	struct fl_tensor *x = fl_rt_randn(&rt, 4, 8);
	fl_tracer_set_recording(0);
	/* the loader makes the batch on the host; a device needs it copied over */
	const struct expected_op randn[] = {
		{"fl::randn", 0}, {"fl::empty", 1}, {"fl::normal_", 1},
		{"fl::to", 0}, {"fl::_to_copy", 1}, {"fl::empty_strided", 2}, {"fl::copy_", 2},
	};
	assert_ops(b, randn, is_emu(_i) ? 7 : 3, "randn");

	fl_dev_synchronize(&dev);
	ck_assert_int_eq(fl_tracer_reserve(0), FL_OK);
	fl_tracer_set_recording(1);
	struct fl_tensor *h = fl_rt_matmul(&rt, x, w);
	struct fl_tensor *r = fl_rt_relu(&rt, h);
	struct fl_tensor *s = fl_rt_square(&rt, r);
	struct fl_tensor *m = fl_rt_mean(&rt, s);
	(void)fl_rt_item(&rt, m);
	struct fl_tensor *d = fl_rt_scalar(&rt, m, FL_SCALAR_SUB, 0.0);
	struct fl_tensor *p = fl_rt_scalar(&rt, d, FL_SCALAR_MUL, 2.0);
	fl_tracer_set_recording(0);
	const struct expected_op forward[] = {
		{"fl::matmul", 0}, {"fl::mm", 1},
		{"fl::resolve_conj", 2}, {"fl::resolve_conj", 2}, {"fl::resolve_conj", 2},
		{"fl::relu", 0}, {"fl::clamp_min", 1},
		{"fl::square", 0}, {"fl::pow", 1}, {"fl::result_type", 2}, {"fl::to", 2},
		{"fl::mean", 0}, {"fl::mean", 1},
		{"fl::sum", 2}, {"fl::as_strided", 3}, {"fl::fill_", 3}, {"fl::unsqueeze", 3}, {"fl::as_strided", 4},
		{"fl::empty", 3}, {"fl::copy_", 3}, {"fl::select", 3}, {"fl::as_strided", 4},
		{"fl::div_", 2}, {"fl::div_", 3}, {"fl::to", 4}, {"fl::_to_copy", 5}, {"fl::empty_strided", 6},
		{"fl::copy_", 6},
		{"fl::item", 0}, {"fl::_local_scalar_dense", 1},
		{"fl::sub", 0}, {"fl::to", 1}, {"fl::_to_copy", 2}, {"fl::empty_strided", 3}, {"fl::copy_", 3},
		{"fl::mul", 0}, {"fl::to", 1}, {"fl::_to_copy", 2}, {"fl::empty_strided", 3}, {"fl::copy_", 3},
	};
	const size_t n_forward = sizeof(forward) / sizeof(forward[0]);
	assert_ops(b, forward, n_forward, "forward");

	/* recording off: the same ops leave the buffer alone */
	uint32_t before = b->n;
	struct fl_tensor *q = fl_rt_relu(&rt, h);
	ck_assert_uint_eq(b->n, before);

	struct fl_tensor *all[] = {q, p, d, m, s, r, h, x, w};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		fl_tensor_free(&rt, all[i]);
	close_device();
	fl_tracer_release();
}
END_TEST

/* The n-th cpu_op named `name` in b (0-based), or NULL. */
static const struct fl_event *nth_op(const struct fl_tbuf *b, const char *name, int nth)
{
	for (uint32_t i = 0; i < b->n; i++)
		if (b->ev[i].kind == FL_EV_CPU_OP && strcmp(fl_tracer_name(b->ev[i].name), name) == 0 && nth-- == 0)
			return &b->ev[i];
	return NULL;
}

/* The op's recorded inputs are exactly `want` (a tensor: its sizes; else []). */
static void assert_inputs(const struct fl_tbuf *b, const char *name, int nth, const struct fl_input *want, uint32_t n)
{
	const struct fl_event *e = nth_op(b, name, nth);
	ck_assert_msg(e != NULL, "no op '%s' #%d", name, nth);
	const struct fl_op_inputs *in = fl_event_inputs_of(b, e);
	ck_assert_msg(in != NULL, "'%s' #%d recorded no inputs", name, nth);
	ck_assert_msg(in->n == n, "'%s' #%d: %u inputs, expected %u", name, nth, in->n, n);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_msg(in->in[i].type == want[i].type && in->in[i].ndim == want[i].ndim,
			      "'%s' #%d input %u: type %s ndim %u, expected %s ndim %u", name, nth, i,
			      fl_input_type_name(in->in[i].type), in->in[i].ndim, fl_input_type_name(want[i].type),
			      want[i].ndim);
		for (int d = 0; d < want[i].ndim; d++)
			ck_assert_msg(in->in[i].dim[d] == want[i].dim[d], "'%s' #%d input %u dim %d: %d, expected %d", name,
				      nth, i, d, in->in[i].dim[d], want[i].dim[d]);
	}
}

#define T2(r, c, t) ((struct fl_input){.dim = {(r), (c)}, .ndim = 2, .type = (t)})
#define TV(t, nd, ...) ((struct fl_input){.dim = {__VA_ARGS__}, .ndim = (nd), .type = (t)})
#define SC ((struct fl_input){.type = FL_IN_SCALAR})
#define SL ((struct fl_input){.type = FL_IN_SCALAR_LIST})
#define ASSERT_INPUTS(b, name, nth, ...)                                                            \
	assert_inputs(b, name, nth, (const struct fl_input[]){__VA_ARGS__},                         \
		      sizeof((const struct fl_input[]){__VA_ARGS__}) / sizeof(struct fl_input))

/* Every op's Input Dims and Input type are its real inputs' shapes and dtypes. */
START_TEST(ops_record_their_input_shapes)
{
	struct fl_rt rt;
	tracer_on_main();
	open_device(&configs[_i]);
	rt_setup(&rt, &configs[_i], 17);
	const struct fl_tbuf *b = fl_tls_tbuf;
	struct fl_tensor *w = fl_rt_param(&rt, 12, 5, 0.5f);

	fl_tracer_set_recording(1);
	struct fl_tensor *x = fl_rt_randn(&rt, 3, 12);
	struct fl_tensor *h = fl_rt_matmul(&rt, x, w);
	struct fl_tensor *r = fl_rt_relu(&rt, h);
	struct fl_tensor *sq = fl_rt_square(&rt, r);
	struct fl_tensor *m = fl_rt_mean(&rt, sq);
	struct fl_tensor *a = fl_rt_scalar(&rt, r, FL_SCALAR_ADD, 1.0);
	struct fl_tensor *hf = fl_rt_to_half(&rt, a);
	struct fl_tensor *f = fl_rt_to_float(&rt, hf);
	fl_rt_add_(&rt, r, f, 0.5);
	(void)fl_rt_item(&rt, m);
	fl_dev_synchronize(&dev);
	fl_tracer_set_recording(0);

	const enum fl_input_type F = FL_IN_FLOAT, H = FL_IN_HALF;
	/* shapes as the tensors really are */
	ck_assert_int_eq(h->rows, 3);
	ck_assert_int_eq(h->cols, 5);
	ASSERT_INPUTS(b, "fl::randn", 0, SL);
	ASSERT_INPUTS(b, "fl::normal_", 0, T2(x->rows, x->cols, F), SC, SC);
	ASSERT_INPUTS(b, "fl::matmul", 0, T2(x->rows, x->cols, F), T2(w->rows, w->cols, F));
	ASSERT_INPUTS(b, "fl::mm", 0, T2(3, 12, F), T2(12, 5, F));
	ASSERT_INPUTS(b, "fl::resolve_conj", 0, T2(3, 5, F)); /* the GEMM's output */
	ASSERT_INPUTS(b, "fl::resolve_conj", 1, T2(3, 12, F));
	ASSERT_INPUTS(b, "fl::resolve_conj", 2, T2(12, 5, F));
	ASSERT_INPUTS(b, "fl::relu", 0, T2(h->rows, h->cols, F));
	ASSERT_INPUTS(b, "fl::clamp_min", 0, T2(3, 5, F), SC);
	ASSERT_INPUTS(b, "fl::square", 0, T2(r->rows, r->cols, F));
	ASSERT_INPUTS(b, "fl::pow", 0, T2(3, 5, F), SC);
	ASSERT_INPUTS(b, "fl::result_type", 0, T2(3, 5, F), SC);
	ASSERT_INPUTS(b, "fl::mean", 0, T2(sq->rows, sq->cols, F));
	ASSERT_INPUTS(b, "fl::mean", 1, T2(3, 5, F));
	ASSERT_INPUTS(b, "fl::sum", 0, T2(3, 5, F));
	/* views: the flattened input, the 0-dim result and its kept dimension */
	ASSERT_INPUTS(b, "fl::as_strided", 0, T2(3, 5, F), SL, SL, SC);
	ASSERT_INPUTS(b, "fl::fill_", 0, T2(1, 1, F), SC);
	ASSERT_INPUTS(b, "fl::unsqueeze", 0, TV(F, 0, 0), SC);
	ASSERT_INPUTS(b, "fl::as_strided", 1, TV(F, 0, 0), SL, SL, SC);
	ASSERT_INPUTS(b, "fl::select", 0, TV(F, 1, 1), SC, SC);
	ASSERT_INPUTS(b, "fl::as_strided", 2, TV(F, 1, 1), SL, SL, SC);
	ASSERT_INPUTS(b, "fl::div_", 0, T2(m->rows, m->cols, F), SC);
	ASSERT_INPUTS(b, "fl::add", 0, T2(r->rows, r->cols, F), SC);
	/* dtype casts: float32 in, float16 out, and back */
	ASSERT_INPUTS(b, "fl::add_", 0, T2(3, 5, F), T2(f->rows, f->cols, F), SC);
	ASSERT_INPUTS(b, "fl::item", 0, T2(1, 1, F));
	ASSERT_INPUTS(b, "fl::_local_scalar_dense", 0, T2(1, 1, F));
	/* the casts' fl::to come after pow's, the promotions of mean's divisor and of the
	 * added scalar and, on a device, the batch's copy; the _to_copy after two or three */
	int k = is_emu(_i) ? 4 : 3;
	ASSERT_INPUTS(b, "fl::to", k - 1, SC, SC); /* the added scalar's promotion */
	ASSERT_INPUTS(b, "fl::to", k, T2(a->rows, a->cols, F), SC);
	ASSERT_INPUTS(b, "fl::_to_copy", k - 1, T2(3, 5, F), SC);
	ASSERT_INPUTS(b, "fl::to", k + 1, T2(hf->rows, hf->cols, H), SC);
	ASSERT_INPUTS(b, "fl::_to_copy", k, T2(3, 5, H), SC);
	if (is_emu(_i)) /* x.to(device): the host batch goes to a device tensor of its shape */
		ASSERT_INPUTS(b, "fl::copy_", 0, T2(3, 12, F), T2(3, 12, F), SC);
	/* every recorded op has inputs */
	for (uint32_t i = 0; i < b->n; i++)
		if (b->ev[i].kind == FL_EV_CPU_OP)
			ck_assert_msg(fl_event_inputs_of(b, &b->ev[i]) != NULL, "'%s' recorded no inputs",
				      fl_tracer_name(b->ev[i].name));

	struct fl_tensor *all[] = {f, hf, a, m, sq, r, h, x, w};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		fl_tensor_free(&rt, all[i]);
	close_device();
	fl_tracer_release();
}
END_TEST

/* float16 conversions: round to nearest even, subnormals, overflow, specials */
START_TEST(half_conversions_round_to_nearest_even)
{
	ck_assert_uint_eq(fl_float_to_half(1.0f), 0x3c00);
	ck_assert_uint_eq(fl_float_to_half(-2.0f), 0xc000);
	ck_assert_uint_eq(fl_float_to_half(65504.0f), 0x7bff);   /* the largest half */
	ck_assert_uint_eq(fl_float_to_half(65520.0f), 0x7c00);   /* halfway to 2^16: rounds to inf */
	ck_assert_uint_eq(fl_float_to_half(1e9f), 0x7c00);
	ck_assert_uint_eq(fl_float_to_half(0x1p-24f), 0x0001);   /* the smallest subnormal */
	ck_assert_uint_eq(fl_float_to_half(0x1p-25f), 0x0000);   /* halfway to it: ties to even (0) */
	ck_assert_uint_eq(fl_float_to_half(0x1.8p-24f), 0x0002); /* 1.5 ulp: ties to even (2) */
	ck_assert_uint_eq(fl_float_to_half(1.0f + 0x1p-11f), 0x3c00);        /* tie: stays even */
	ck_assert_uint_eq(fl_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);    /* tie: up to even */
	ck_assert_uint_eq(fl_float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01); /* above the tie */
	ck_assert_uint_eq(fl_float_to_half(INFINITY), 0x7c00);
	ck_assert(isnan(fl_half_to_float(fl_float_to_half(NAN))));
	ck_assert(fl_half_to_float(0x0001) == 0x1p-24f);
	ck_assert(fl_half_to_float(0x7bff) == 65504.0f);
	ck_assert(fl_half_to_float(0xc000) == -2.0f);
	/* every half survives the round trip */
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue; /* NaNs */
		ck_assert_uint_eq(fl_float_to_half(fl_half_to_float((uint16_t)h)), h);
	}
}
END_TEST

static Suite *tensor_suite(void)
{
	Suite *s = suite_create("tensor");
	TCase *tc = tcase_create("math");
	tcase_add_loop_test(tc, matmul_matches_reference, 0, N_CONFIGS);
	tcase_add_loop_test(tc, elementwise_and_reductions, 0, N_CONFIGS);
	tcase_add_loop_test(tc, scalar_ops, 0, N_CONFIGS);
	tcase_add_loop_test(tc, randn_is_standard_normal, 0, N_CONFIGS);
	tcase_add_loop_test(tc, seed_makes_data_deterministic, 0, N_CONFIGS);
	tcase_add_test(tc, policy_names);
	tcase_add_test(tc, half_conversions_round_to_nearest_even);
	suite_add_tcase(s, tc);

	tc = tcase_create("recorded");
	tcase_add_loop_test(tc, scalar_records_promotion_chain, 0, N_CONFIGS);
	tcase_add_loop_test(tc, each_op_records_its_anatomy, 0, N_CONFIGS);
	tcase_add_loop_test(tc, ops_record_their_input_shapes, 0, N_CONFIGS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tensor_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
