#define _GNU_SOURCE /* pthread_{get,set}affinity_np, CPU_* */
#include "runtime/tensor.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "capture/tracer.h"

/* Below a page, even a runtime without a caching allocator gets memory from malloc. */
#define FL_SYSTEM_MIN_BYTES 4096

static const char *const op_names[FL_OP_COUNT] = {
	[FL_OP_RANDN] = "fl::randn", [FL_OP_EMPTY] = "fl::empty", [FL_OP_NORMAL] = "fl::normal_",
	[FL_OP_MATMUL] = "fl::matmul", [FL_OP_MM] = "fl::mm", [FL_OP_RELU] = "fl::relu",
	[FL_OP_CLAMP_MIN] = "fl::clamp_min", [FL_OP_SQUARE] = "fl::square", [FL_OP_POW] = "fl::pow",
	[FL_OP_MEAN] = "fl::mean", [FL_OP_SUM] = "fl::sum", [FL_OP_DIV] = "fl::div_",
	[FL_OP_ITEM] = "fl::item", [FL_OP_LOCAL_SCALAR] = "fl::_local_scalar_dense",
	[FL_OP_ADD] = "fl::add", [FL_OP_MUL] = "fl::mul", [FL_OP_SUB] = "fl::sub", [FL_OP_TO] = "fl::to",
	[FL_OP_TO_COPY] = "fl::_to_copy", [FL_OP_EMPTY_STRIDED] = "fl::empty_strided",
	[FL_OP_COPY] = "fl::copy_",
	[FL_OP_RESOLVE_CONJ] = "fl::resolve_conj", [FL_OP_AS_STRIDED] = "fl::as_strided",
	[FL_OP_RESULT_TYPE] = "fl::result_type", [FL_OP_FILL] = "fl::fill_", [FL_OP_UNSQUEEZE] = "fl::unsqueeze",
	[FL_OP_SELECT] = "fl::select",
	[FL_OP_ADD_INPLACE] = "fl::add_",
};

const char *fl_alloc_policy_name(enum fl_alloc_policy p)
{
	return p == FL_ALLOC_SYSTEM ? "system" : "heap";
}

static void oom(void)
{
	fputs("faultline: out of memory in the workload\n", stderr);
	abort();
}

/* xoshiro256** */
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t rng_next(uint64_t s[4])
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
	return r;
}

void fl_rt_init(struct fl_rt *rt, struct fl_backend *be, enum fl_alloc_policy alloc, uint64_t seed)
{
	memset(rt, 0, sizeof(*rt));
	rt->be = be;
	rt->alloc = alloc;
	uint64_t z = seed;
	for (int i = 0; i < 4; i++) { /* splitmix64 */
		z += 0x9E3779B97F4A7C15ull;
		uint64_t x = z;
		x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
		x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
		rt->rng[i] = x ^ (x >> 31);
	}
	for (int i = 0; i < FL_OP_COUNT; i++)
		rt->op_name[i] = fl_tracer_intern(op_names[i]);
}

/* Host memory, by the allocation policy. */
static struct fl_tensor *tensor_new_host(struct fl_rt *rt, int rows, int cols)
{
	struct fl_tensor *t = malloc(sizeof(*t));
	if (!t)
		oom();
	t->rows = rows;
	t->cols = cols;
	t->bytes = (size_t)rows * (size_t)cols * sizeof(float);
	t->dev = NULL;
	t->uncached = 0;
	t->half = 0;
	if (rt->alloc == FL_ALLOC_SYSTEM && t->bytes >= FL_SYSTEM_MIN_BYTES) {
		void *p = mmap(NULL, t->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			oom();
		t->data = p;
		t->mapped = 1;
	} else {
		t->mapped = 0;
		t->data = malloc(t->bytes);
		if (!t->data)
			oom();
	}
	return t;
}

/* Device memory: the backend's when it has any, else host memory. */
static struct fl_tensor *tensor_new(struct fl_rt *rt, int rows, int cols)
{
	struct fl_backend *be = rt->be;
	if (!be || !be->ops->alloc)
		return tensor_new_host(rt, rows, cols);
	struct fl_tensor *t = malloc(sizeof(*t));
	if (!t)
		oom();
	t->rows = rows;
	t->cols = cols;
	t->bytes = (size_t)rows * (size_t)cols * sizeof(float);
	t->mapped = 0;
	t->uncached = 0;
	t->half = 0;
	t->dev = be;
	t->data = be->ops->alloc(be, t->bytes);
	if (!t->data)
		oom();
	return t;
}

static void tensor_release_now(void *ctx)
{
	struct fl_tensor *t = ctx;
	if (t->dev)
		t->dev->ops->free(t->dev, t->data, t->bytes);
	else if (t->mapped)
		munmap(t->data, t->bytes);
	else
		free(t->data);
	free(t);
}

void fl_tensor_free(struct fl_rt *rt, struct fl_tensor *t)
{
	if (!t)
		return;
	if (t->uncached) { /* no cache to return it to: give it back now */
		if (rt->be && rt->be->ops->free_uncached)
			rt->be->ops->free_uncached(rt->be, t->data, t->bytes);
		else
			munmap(t->data, t->bytes);
		free(t);
		return;
	}
	if (rt->be && rt->be->ops->asynchronous) /* queued work may still read it: free in stream order */
		fl_dev_release(rt->be, tensor_release_now, t, FL_STREAM_COMPUTE);
	else
		tensor_release_now(t);
}

/* An op span with its inputs (struct fl_input values, at most FL_OP_MAX_INPUTS),
 * recorded as torch.profiler's "Input Dims" and "Input type". */
#define OP_BEGIN(rt, id, ...)                                                                      \
	fl_op_begin((rt)->op_name[id], (const struct fl_input[]){__VA_ARGS__},                     \
		    sizeof((const struct fl_input[]){__VA_ARGS__}) / sizeof(struct fl_input))

/* A tensor input: its rows × cols and dtype. */
static inline struct fl_input in_tensor(const struct fl_tensor *t)
{
	return (struct fl_input){.dim = {t->rows, t->cols}, .ndim = 2, .type = t->half ? FL_IN_HALF : FL_IN_FLOAT};
}
/* Non-tensor inputs: a number, a list of numbers (sizes, strides), anything else (a device). */
#define IN_SCALAR ((struct fl_input){.type = FL_IN_SCALAR})
#define IN_LIST ((struct fl_input){.type = FL_IN_SCALAR_LIST})
#define IN_OTHER ((struct fl_input){.type = FL_IN_NONE})

/* ---- kernels ---- */

static void k_normal(const struct fl_kernel_args *a)
{
	uint64_t *s = (uint64_t *)(void *)a->result; /* rng state travels in result */
	size_t n = (size_t)a->m * (size_t)a->n;
	for (size_t i = 0; i < n; i += 2) { /* Box-Muller */
		double u1 = ((double)(rng_next(s) >> 11) + 1.0) * 0x1.0p-53;
		double u2 = (double)(rng_next(s) >> 11) * 0x1.0p-53;
		double r = sqrt(-2.0 * log(u1)) * a->scalar;
		a->out[i] = (float)(r * cos(2 * M_PI * u2));
		if (i + 1 < n)
			a->out[i + 1] = (float)(r * sin(2 * M_PI * u2));
	}
}

static void k_mm(const struct fl_kernel_args *a)
{
	const int M = a->m, N = a->n, K = a->k;
	for (int i = 0; i < M; i++) {
		float *restrict c = a->out + (size_t)i * N;
		memset(c, 0, (size_t)N * sizeof(float));
		for (int k = 0; k < K; k++) {
			const float av = a->a[(size_t)i * K + k];
			const float *restrict b = a->b + (size_t)k * N;
			for (int j = 0; j < N; j++)
				c[j] += av * b[j];
		}
	}
}

static void k_clamp_min(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	for (size_t i = 0; i < n; i++)
		a->out[i] = a->a[i] > a->scalar ? a->a[i] : a->scalar;
}

static void k_pow2(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	for (size_t i = 0; i < n; i++)
		a->out[i] = a->a[i] * a->a[i];
}

static void k_sum(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += a->a[i];
	a->out[0] = (float)s;
}

/* out[0] /= the promoted divisor (b[0]; the device kernel takes the same value as `scalar`) */
static void k_div(const struct fl_kernel_args *a) { a->out[0] /= a->b ? a->b[0] : a->scalar; }
static void k_add(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	const float s = a->b[0];
	for (size_t i = 0; i < n; i++)
		a->out[i] = a->a[i] + s;
}
static void k_mul(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	const float s = a->b[0];
	for (size_t i = 0; i < n; i++)
		a->out[i] = a->a[i] * s;
}
static void k_sub(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	const float s = a->b[0];
	for (size_t i = 0; i < n; i++)
		a->out[i] = a->a[i] - s;
}
/* out -= scalar · a (the name and math of the optimizer's update kernel) */
static void k_axpy_neg(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	for (size_t i = 0; i < n; i++)
		a->out[i] -= a->scalar * a->a[i];
}
static void k_copy_scalar(const struct fl_kernel_args *a) { a->out[0] = a->scalar; }

static const struct fl_kernel K_MM = {"gemm_kernel", k_mm};
static const struct fl_kernel K_CLAMP = {"clamp_min_kernel", k_clamp_min};
static const struct fl_kernel K_POW2 = {"pow_kernel", k_pow2};
static const struct fl_kernel K_SUM = {"reduce_sum_kernel", k_sum};
static const struct fl_kernel K_DIV = {"div_kernel", k_div};
static const struct fl_kernel K_ADD = {"add_kernel", k_add};
static const struct fl_kernel K_MUL = {"mul_kernel", k_mul};
static const struct fl_kernel K_SUB = {"sub_kernel", k_sub};
static const struct fl_kernel K_COPY = {"copy_kernel", k_copy_scalar};
static const struct fl_kernel K_AXPY = {"sgd_kernel", k_axpy_neg};

double fl_rt_core_probe_ms(int core)
{
	enum { N = FL_CORE_PROBE_N };
	cpu_set_t was, one;
	int moved = 0;
	if (core >= 0 && core < CPU_SETSIZE && pthread_getaffinity_np(pthread_self(), sizeof(was), &was) == 0) {
		CPU_ZERO(&one);
		CPU_SET(core, &one);
		moved = pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
	}
	static float a[N * N], b[N * N], c[N * N];
	for (int i = 0; i < N * N; i++) {
		a[i] = (float)(i % 7) * 0.25f;
		b[i] = (float)(i % 5) * 0.5f;
	}
	struct fl_kernel_args args = {.out = c, .a = a, .b = b, .m = N, .n = N, .k = N};
	double best = -1;
	for (int r = 0; r < FL_CORE_PROBE_REPS; r++) {
		uint64_t t0 = fl_clock_ticks();
		k_mm(&args);
		double ms = (double)fl_clock_delta_ns(t0, fl_clock_ticks()) / 1e6;
		if (best < 0 || ms < best)
			best = ms;
	}
	if (moved)
		pthread_setaffinity_np(pthread_self(), sizeof(was), &was);
	return best;
}

static void launch(struct fl_rt *rt, const struct fl_kernel *k, const struct fl_kernel_args *a)
{
	rt->be->ops->launch(rt->be, k, a, FL_STREAM_COMPUTE);
}

void fl_rt_launch(struct fl_rt *rt, const struct fl_kernel *k, const struct fl_kernel_args *a)
{
	launch(rt, k, a);
}

struct fl_tensor *fl_rt_empty(struct fl_rt *rt, int rows, int cols)
{
	return tensor_new(rt, rows, cols);
}

/* ---- the small ops inside the big ones ----
 * Views (as_strided, unsqueeze, select) compute sizes and strides and check the
 * furthest element they reach against the storage; they never touch the data,
 * so they are safe on device memory. Dtypes: every tensor here is float32, but
 * promotion and conjugation are decided the way an eager framework does it. */

enum dtype { DT_INT64, DT_FLOAT32, DT_COMPLEX64 }; /* in promotion order */

#define VIEW_MAX_DIM 3
struct view {
	const struct fl_tensor *base;
	float *data;
	int ndim;
	long size[VIEW_MAX_DIM], stride[VIEW_MAX_DIM];
};

/* A view input: its sizes (0-dim: []) and its storage's dtype. */
static inline struct fl_input in_view(const struct view *v)
{
	struct fl_input x = {.ndim = (uint8_t)v->ndim, .type = v->base->half ? FL_IN_HALF : FL_IN_FLOAT};
	for (int d = 0; d < v->ndim && d < FL_INPUT_MAX_DIMS; d++)
		x.dim[d] = (int32_t)v->size[d];
	return x;
}

static void view_error(const char *what)
{
	fprintf(stderr, "faultline: runtime/tensor.c: %s\n", what);
	abort();
}

/* The 0-dim view of a 1×1 tensor. */
static struct view view_scalar(const struct fl_tensor *t)
{
	return (struct view){.base = t, .data = t->data, .ndim = 0};
}

/* A view of base's storage; self: the view it is taken of (NULL: base itself). */
static void op_as_strided(struct fl_rt *rt, const struct fl_tensor *base, const struct view *self, long offset,
			  int ndim, const long *size, const long *stride, struct view *out)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_AS_STRIDED, self ? in_view(self) : in_tensor(base), IN_LIST, IN_LIST, IN_SCALAR);
	long last = offset, count = 1;
	for (int d = 0; d < ndim; d++) {
		if (size[d] < 0 || stride[d] < 0)
			view_error("as_strided: expected non-negative sizes and strides");
		count *= size[d];
		last += size[d] > 0 ? (size[d] - 1) * stride[d] : 0;
		out->size[d] = size[d];
		out->stride[d] = stride[d];
	}
	if (offset < 0 || (count > 0 && (size_t)(last + 1) * sizeof(float) > base->bytes))
		view_error("as_strided: expected the view inside its tensor's storage");
	out->base = base;
	out->ndim = ndim;
	out->data = base->data + offset;
	fl_span_end(op);
}

/* A new dimension of size 1 before `dim`. */
static void op_unsqueeze(struct fl_rt *rt, const struct view *in, int dim, struct view *out)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_UNSQUEEZE, in_view(in), IN_SCALAR);
	if (dim < 0 || dim > in->ndim || in->ndim + 1 > VIEW_MAX_DIM)
		view_error("unsqueeze: expected a dimension within the tensor's rank");
	long size[VIEW_MAX_DIM], stride[VIEW_MAX_DIM];
	for (int d = 0, s = 0; d <= in->ndim; d++) {
		if (d == dim) {
			size[d] = 1;
			stride[d] = dim < in->ndim ? in->size[dim] * in->stride[dim] : 1;
		} else {
			size[d] = in->size[s];
			stride[d] = in->stride[s];
			s++;
		}
	}
	op_as_strided(rt, in->base, in, (long)(in->data - in->base->data), in->ndim + 1, size, stride, out);
	fl_span_end(op);
}

/* Index `index` of dimension `dim`: that dimension goes away. */
static void op_select(struct fl_rt *rt, const struct view *in, int dim, long index, struct view *out)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_SELECT, in_view(in), IN_SCALAR, IN_SCALAR);
	if (dim < 0 || dim >= in->ndim || index < 0 || index >= in->size[dim])
		view_error("select: expected an index within the tensor's sizes");
	long size[VIEW_MAX_DIM], stride[VIEW_MAX_DIM];
	for (int d = 0, s = 0; d < in->ndim; d++)
		if (d != dim) {
			size[s] = in->size[d];
			stride[s] = in->stride[d];
			s++;
		}
	long offset = (long)(in->data - in->base->data) + index * in->stride[dim];
	op_as_strided(rt, in->base, in, offset, in->ndim - 1, size, stride, out);
	fl_span_end(op);
}

/* A float32 tensor has no conjugate bit to resolve: it is returned as it is. */
static const struct fl_tensor *op_resolve_conj(struct fl_rt *rt, const struct fl_tensor *t, enum dtype dt)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_RESOLVE_CONJ, in_tensor(t));
	if (dt == DT_COMPLEX64)
		view_error("resolve_conj: expected a real tensor (complex tensors are not supported)");
	fl_span_end(op);
	return t;
}

/* The dtype of x (of dtype a) combined with a number of dtype b. */
static enum dtype op_result_type(struct fl_rt *rt, const struct fl_tensor *x, enum dtype a, enum dtype b)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_RESULT_TYPE, in_tensor(x), IN_SCALAR);
	enum dtype r = a > b ? a : b;
	fl_span_end(op);
	return r;
}

/* .to(dtype) of a tensor that already has it: no copy, the tensor itself. */
static const struct fl_tensor *op_to_same(struct fl_rt *rt, const struct fl_tensor *t, enum dtype have, enum dtype want)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_TO, in_tensor(t), IN_SCALAR);
	if (have != want)
		view_error("to: expected the tensor's own dtype (conversions run through _to_copy)");
	fl_span_end(op);
	return t;
}

static void op_fill_zero(struct fl_rt *rt, struct fl_tensor *t)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_FILL, in_tensor(t), IN_SCALAR);
	fl_rt_zero(rt, t);
	fl_span_end(op);
}

/* dst.copy_(src): in_dst and in_src are their shapes. */
static void op_copy(struct fl_rt *rt, void *dst, struct fl_input in_dst, const void *src, struct fl_input in_src,
		    size_t bytes, enum fl_copy_kind kind)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_COPY, in_dst, in_src);
	rt->be->ops->copy(rt->be, dst, src, bytes, kind, FL_STREAM_COMPUTE);
	fl_span_end(op);
}

/* Type promotion of a host scalar: to → _to_copy → empty_strided + copy_, a
 * 1×1 float32 tensor holding `s` (the caller frees it). */
static struct fl_tensor *op_scalar_tensor(struct fl_rt *rt, double s)
{
	uint32_t to = OP_BEGIN(rt, FL_OP_TO, IN_SCALAR, IN_SCALAR);
	uint32_t tc = OP_BEGIN(rt, FL_OP_TO_COPY, IN_SCALAR, IN_SCALAR);
	uint32_t es = OP_BEGIN(rt, FL_OP_EMPTY_STRIDED, IN_LIST, IN_LIST);
	struct fl_tensor *st = tensor_new(rt, 1, 1);
	fl_span_end(es);
	uint32_t cp = OP_BEGIN(rt, FL_OP_COPY, in_tensor(st), IN_SCALAR);
	struct fl_kernel_args ca = {.out = st->data, .scalar = (float)s};
	launch(rt, &K_COPY, &ca);
	fl_span_end(cp);
	fl_span_end(tc);
	fl_span_end(to);
	return st;
}

/* sum of every element into a new 0-dim tensor. */
static struct fl_tensor *op_sum(struct fl_rt *rt, const struct fl_tensor *x)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_SUM, in_tensor(x));
	struct view in, kept, res;
	const long n = (long)x->rows * x->cols, one = 1;
	op_as_strided(rt, x, NULL, 0, 1, &n, &one, &in); /* the input, flattened for the reduction */
	struct fl_tensor *t = tensor_new(rt, 1, 1);
	op_fill_zero(rt, t);                       /* the result starts at the sum's identity */
	struct view t0 = view_scalar(t);
	op_unsqueeze(rt, &t0, 0, &kept);           /* the reduced dimension, kept for the kernel */
	uint32_t e = OP_BEGIN(rt, FL_OP_EMPTY, IN_LIST);
	struct fl_tensor *acc = tensor_new(rt, 1, 1); /* the kernel's accumulator */
	fl_span_end(e);
	struct fl_kernel_args a = {.out = acc->data, .a = in.data, .m = 1, .n = (int)n};
	launch(rt, &K_SUM, &a);
	op_copy(rt, kept.data, in_view(&kept), acc->data, in_tensor(acc), sizeof(float), FL_COPY_D2D); /* accumulator into the result */
	op_select(rt, &kept, 0, 0, &res);          /* the 0-dim result */
	fl_tensor_free(rt, acc);
	fl_span_end(op);
	return t;
}

/* In-place division by an integer count, promoted to a float32 tensor first. */
static void op_div_count(struct fl_rt *rt, struct fl_tensor *t, long count)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_DIV, in_tensor(t), IN_SCALAR);   /* the public in-place op */
	uint32_t impl = OP_BEGIN(rt, FL_OP_DIV, in_tensor(t), IN_SCALAR); /* its implementation, with the wrapped number */
	struct fl_tensor *d = op_scalar_tensor(rt, (double)count);
	struct fl_kernel_args b = {.out = t->data, .b = d->data, .scalar = (float)count};
	launch(rt, &K_DIV, &b);
	fl_span_end(impl);
	fl_span_end(op);
	fl_tensor_free(rt, d);
}

/* ---- ops ---- */

void fl_rt_zero(struct fl_rt *rt, struct fl_tensor *t)
{
	if (t->dev && rt->be->ops->zero)
		rt->be->ops->zero(rt->be, t->data, t->bytes, FL_STREAM_COMPUTE);
	else
		memset(t->data, 0, t->bytes);
}

struct fl_tensor *fl_rt_param(struct fl_rt *rt, int rows, int cols, float scale)
{
	struct fl_tensor *h = tensor_new_host(rt, rows, cols);
	struct fl_kernel_args a = {.out = h->data, .m = rows, .n = cols, .scalar = scale,
				   .result = (double *)(void *)rt->rng};
	k_normal(&a);
	if (!rt->be || !rt->be->ops->alloc)
		return h;
	/* weights live on the device: initialised on the host, then copied once */
	struct fl_tensor *t = tensor_new(rt, rows, cols);
	rt->be->ops->copy(rt->be, t->data, h->data, h->bytes, FL_COPY_H2D, FL_STREAM_COMPUTE);
	fl_dev_stream_synchronize(rt->be, FL_STREAM_COMPUTE);
	tensor_release_now(h);
	return t;
}

struct fl_tensor *fl_rt_randn(struct fl_rt *rt, int rows, int cols)
{
	/* the data loader makes the batch on the host */
	uint32_t op = OP_BEGIN(rt, FL_OP_RANDN, IN_LIST);
	uint32_t e = OP_BEGIN(rt, FL_OP_EMPTY, IN_LIST);
	struct fl_tensor *t = tensor_new_host(rt, rows, cols);
	fl_span_end(e);
	uint32_t nrm = OP_BEGIN(rt, FL_OP_NORMAL, in_tensor(t), IN_SCALAR, IN_SCALAR);
	struct fl_kernel_args a = {.out = t->data, .m = rows, .n = cols, .scalar = 1.0f,
				   .result = (double *)(void *)rt->rng};
	k_normal(&a);
	fl_span_end(nrm);
	fl_span_end(op);
	if (!rt->be->ops->asynchronous)
		return t;
	/* x.to(device): a pageable host-to-device copy */
	uint32_t to = OP_BEGIN(rt, FL_OP_TO, in_tensor(t), IN_OTHER);
	uint32_t tc = OP_BEGIN(rt, FL_OP_TO_COPY, in_tensor(t), IN_OTHER);
	uint32_t es = OP_BEGIN(rt, FL_OP_EMPTY_STRIDED, IN_LIST, IN_LIST);
	struct fl_tensor *d = tensor_new(rt, rows, cols);
	fl_span_end(es);
	uint32_t cp = OP_BEGIN(rt, FL_OP_COPY, in_tensor(d), in_tensor(t), IN_SCALAR);
	if (rt->h2d_blocking) { /* a synchronous copy: the host waits for the device */
		uint64_t t0 = fl_clock_ticks();
		if (rt->be->ops->copy_sync)
			rt->be->ops->copy_sync(rt->be, d->data, t->data, t->bytes, FL_COPY_H2D, FL_STREAM_COMPUTE);
		else {
			rt->be->ops->copy(rt->be, d->data, t->data, t->bytes, FL_COPY_H2D, FL_STREAM_COMPUTE);
			fl_dev_stream_synchronize(rt->be, FL_STREAM_COMPUTE);
		}
		rt->h2d.blocking_ns += fl_clock_delta_ns(t0, fl_clock_ticks());
		rt->h2d.blocking++;
	} else {
		rt->be->ops->copy(rt->be, d->data, t->data, t->bytes, FL_COPY_H2D, FL_STREAM_COMPUTE);
		rt->h2d.async++;
	}
	rt->h2d.bytes += t->bytes;
	fl_span_end(cp);
	fl_span_end(tc);
	fl_span_end(to);
	fl_tensor_free(rt, t);
	return d;
}

struct fl_tensor *fl_rt_matmul(struct fl_rt *rt, const struct fl_tensor *x, const struct fl_tensor *w)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_MATMUL, in_tensor(x), in_tensor(w));
	uint32_t mm = OP_BEGIN(rt, FL_OP_MM, in_tensor(x), in_tensor(w));
	struct fl_tensor *t = tensor_new(rt, x->rows, w->cols);
	/* the GEMM takes its output and both inputs unconjugated */
	op_resolve_conj(rt, t, DT_FLOAT32);
	x = op_resolve_conj(rt, x, DT_FLOAT32);
	w = op_resolve_conj(rt, w, DT_FLOAT32);
	struct fl_kernel_args a = {.out = t->data, .a = x->data, .b = w->data, .m = x->rows, .n = w->cols, .k = x->cols};
	launch(rt, &K_MM, &a);
	fl_span_end(mm);
	fl_span_end(op);
	return t;
}

struct fl_tensor *fl_rt_relu(struct fl_rt *rt, const struct fl_tensor *x)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_RELU, in_tensor(x));
	uint32_t c = OP_BEGIN(rt, FL_OP_CLAMP_MIN, in_tensor(x), IN_SCALAR);
	struct fl_tensor *t = tensor_new(rt, x->rows, x->cols);
	struct fl_kernel_args a = {.out = t->data, .a = x->data, .m = x->rows, .n = x->cols, .scalar = 0.0f};
	launch(rt, &K_CLAMP, &a);
	fl_span_end(c);
	fl_span_end(op);
	return t;
}

struct fl_tensor *fl_rt_square(struct fl_rt *rt, const struct fl_tensor *x)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_SQUARE, in_tensor(x));
	uint32_t p = OP_BEGIN(rt, FL_OP_POW, in_tensor(x), IN_SCALAR);
	/* x ** 2: the integer exponent does not widen a float32 base */
	enum dtype dt = op_result_type(rt, x, DT_FLOAT32, DT_INT64);
	x = op_to_same(rt, x, DT_FLOAT32, dt);
	struct fl_tensor *t = tensor_new(rt, x->rows, x->cols);
	struct fl_kernel_args a = {.out = t->data, .a = x->data, .m = x->rows, .n = x->cols};
	launch(rt, &K_POW2, &a);
	fl_span_end(p);
	fl_span_end(op);
	return t;
}

struct fl_tensor *fl_rt_mean(struct fl_rt *rt, const struct fl_tensor *x)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_MEAN, in_tensor(x));   /* the public op */
	uint32_t impl = OP_BEGIN(rt, FL_OP_MEAN, in_tensor(x)); /* its implementation: sum, then divide in place */
	struct fl_tensor *t = op_sum(rt, x);
	op_div_count(rt, t, (long)x->rows * x->cols);
	fl_span_end(impl);
	fl_span_end(op);
	return t;
}

struct fl_tensor *fl_rt_scalar(struct fl_rt *rt, const struct fl_tensor *x, enum fl_scalar_op kind, double s)
{
	static const enum fl_rt_op ids[] = {FL_OP_ADD, FL_OP_MUL, FL_OP_SUB};
	static const struct fl_kernel *const ks[] = {&K_ADD, &K_MUL, &K_SUB};
	uint32_t op = OP_BEGIN(rt, ids[kind], in_tensor(x), IN_SCALAR);
	/* type promotion: the double scalar becomes a float32 tensor */
	struct fl_tensor *st = op_scalar_tensor(rt, s);
	struct fl_tensor *t = tensor_new(rt, x->rows, x->cols);
	struct fl_kernel_args a = {.out = t->data, .a = x->data, .b = st->data, .m = x->rows, .n = x->cols};
	launch(rt, ks[kind], &a);
	fl_span_end(op);
	fl_tensor_free(rt, st);
	return t;
}

void fl_rt_add_(struct fl_rt *rt, struct fl_tensor *x, const struct fl_tensor *y, double alpha)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_ADD_INPLACE, in_tensor(x), in_tensor(y), IN_SCALAR);
	struct fl_kernel_args a = {.out = x->data, .a = y->data, .m = x->rows, .n = x->cols, .scalar = (float)-alpha};
	launch(rt, &K_AXPY, &a);
	fl_span_end(op);
}

double fl_rt_item(struct fl_rt *rt, const struct fl_tensor *t)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_ITEM, in_tensor(t));
	uint32_t l = OP_BEGIN(rt, FL_OP_LOCAL_SCALAR, in_tensor(t));
	double v;
	if (rt->be->ops->asynchronous) {
		/* the host reads a device value: copy back, then wait for the stream */
		float host = 0;
		rt->be->ops->copy(rt->be, &host, t->data, sizeof(float), FL_COPY_D2H, FL_STREAM_COMPUTE);
		fl_dev_stream_synchronize(rt->be, FL_STREAM_COMPUTE);
		v = host;
	} else {
		v = t->data[0];
	}
	fl_span_end(l);
	fl_span_end(op);
	return v;
}

void fl_rt_set_dispatch(struct fl_rt *rt, void (*fn)(void *arg, const struct fl_kernel *k,
						   const struct fl_kernel_args *a), void *arg)
{
	rt->be->launch_work = fn;
	rt->be->launch_work_arg = fn ? arg : NULL;
}

struct fl_tensor *fl_rt_empty_uncached(struct fl_rt *rt, int rows, int cols)
{
	uint32_t op = OP_BEGIN(rt, FL_OP_EMPTY, IN_LIST);
	struct fl_tensor *t = calloc(1, sizeof(*t));
	if (!t)
		oom();
	t->rows = rows;
	t->cols = cols;
	t->bytes = (size_t)rows * (size_t)cols * sizeof(float);
	t->uncached = 1;
	struct fl_backend *be = rt->be;
	if (be && be->ops->alloc_uncached) {
		t->data = be->ops->alloc_uncached(be, t->bytes);
		t->dev = be->ops->alloc ? be : NULL; /* device memory where the backend has its own */
		if (!t->data)
			oom();
	} else { /* the host allocator: fresh pages, faulted in now */
		void *p = mmap(NULL, t->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			oom();
		memset(p, 0, t->bytes);
		t->data = p;
		t->mapped = 1;
	}
	fl_span_end(op);
	return t;
}

uint16_t fl_float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof(x));
	uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
	if (exp == 0xffu) /* inf stays inf, NaN stays a (quiet) NaN */
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
	int e = (int)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00u); /* too large: inf */
	if (e <= 0) { /* a subnormal half (or zero): value = h × 2^-24 */
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		int shift = 14 - e;
		uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (h & 1u)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
		h++; /* a carry into the exponent is right, up to inf */
	return (uint16_t)(sign | h);
}

float fl_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, x;
	if (exp == 0) {
		float v = ldexpf((float)man, -24);
		return sign ? -v : v;
	}
	if (exp == 31)
		x = sign | 0x7f800000u | (man << 13);
	else
		x = sign | ((exp - 15 + 127) << 23) | (man << 13);
	float f;
	memcpy(&f, &x, sizeof(f));
	return f;
}

static void k_to_half(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	uint16_t *h = (uint16_t *)(void *)a->out;
	for (size_t i = 0; i < n; i++)
		h[i] = fl_float_to_half(a->a[i]);
}

static void k_to_float(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	const uint16_t *h = (const uint16_t *)(const void *)a->a;
	for (size_t i = 0; i < n; i++)
		a->out[i] = fl_half_to_float(h[i]);
}

static const struct fl_kernel K_TO_HALF = {"cast_float_to_half_kernel", k_to_half};
static const struct fl_kernel K_TO_FLOAT = {"cast_half_to_float_kernel", k_to_float};

/* x.to(dtype): to → _to_copy → empty_strided + copy_ (the conversion kernel) */
static struct fl_tensor *cast(struct fl_rt *rt, const struct fl_tensor *x, int to_half)
{
	uint32_t to = OP_BEGIN(rt, FL_OP_TO, in_tensor(x), IN_SCALAR);
	uint32_t tc = OP_BEGIN(rt, FL_OP_TO_COPY, in_tensor(x), IN_SCALAR);
	uint32_t es = OP_BEGIN(rt, FL_OP_EMPTY_STRIDED, IN_LIST, IN_LIST);
	/* a half tensor's rows × cols halves fit in rows × ceil(cols / 2) floats */
	struct fl_tensor *t = tensor_new(rt, x->rows, to_half ? (x->cols + 1) / 2 : x->cols);
	t->cols = x->cols;
	t->half = to_half;
	fl_span_end(es);
	uint32_t cp = OP_BEGIN(rt, FL_OP_COPY, in_tensor(t), in_tensor(x));
	struct fl_kernel_args a = {.out = t->data, .a = x->data, .m = x->rows, .n = x->cols};
	launch(rt, to_half ? &K_TO_HALF : &K_TO_FLOAT, &a);
	fl_span_end(cp);
	fl_span_end(tc);
	fl_span_end(to);
	return t;
}

struct fl_tensor *fl_rt_to_half(struct fl_rt *rt, const struct fl_tensor *x)
{
	return cast(rt, x, 1);
}

struct fl_tensor *fl_rt_to_float(struct fl_rt *rt, const struct fl_tensor *h)
{
	return cast(rt, h, 0);
}

uint32_t fl_rt_op_name(const char *name) { return fl_tracer_intern(name); }
