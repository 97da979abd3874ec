/* train.c — the training step: forward with saved activations, backward with
 * real gradient GEMMs, the gradient all-reduce (bucketed per layer during
 * backward, or all at once after it), and SGD. */
#include <string.h>

#include "capture/tracer.h"
#include "generator/workload.h"

/* ---- kernels ---- */

static void k_scale(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	for (size_t i = 0; i < n; i++)
		a->out[i] = a->a[i] * a->scalar;
}

/* out = a ⊙ (b > 0) */
static void k_relu_back(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	for (size_t i = 0; i < n; i++)
		a->out[i] = a->b[i] > 0.0f ? a->a[i] : 0.0f;
}

/* out (k×n) (+)= aᵀ · b, with a m×k and b m×n; scalar 0: overwrite, else accumulate */
static void k_gemm_tn(const struct fl_kernel_args *a)
{
	const int M = a->m, N = a->n, K = a->k;
	if (a->scalar == 0.0f)
		memset(a->out, 0, (size_t)K * (size_t)N * sizeof(float));
	for (int i = 0; i < M; i++)
		for (int kk = 0; kk < K; kk++) {
			const float av = a->a[(size_t)i * K + kk];
			const float *restrict b = a->b + (size_t)i * N;
			float *restrict c = a->out + (size_t)kk * N;
			for (int j = 0; j < N; j++)
				c[j] += av * b[j];
		}
}

/* out (m×n) = a · bᵀ, with a m×k and b n×k */
static void k_gemm_nt(const struct fl_kernel_args *a)
{
	const int M = a->m, N = a->n, K = a->k;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			const float *restrict x = a->a + (size_t)i * K, *restrict y = a->b + (size_t)j * K;
			float s = 0;
			for (int kk = 0; kk < K; kk++)
				s += x[kk] * y[kk];
			a->out[(size_t)i * N + j] = s;
		}
}

/* out -= scalar · a */
static void k_sgd(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	for (size_t i = 0; i < n; i++)
		a->out[i] -= a->scalar * a->a[i];
}

const struct fl_kernel fl_train_k_scale = {"mse_backward_kernel", k_scale};
const struct fl_kernel fl_train_k_relu_back = {"threshold_backward_kernel", k_relu_back};
const struct fl_kernel fl_train_k_gemm_tn = {"gemm_tn_kernel", k_gemm_tn};
const struct fl_kernel fl_train_k_gemm_nt = {"gemm_nt_kernel", k_gemm_nt};
const struct fl_kernel fl_train_k_sgd = {"sgd_kernel", k_sgd};

static struct {
	uint32_t mse_back, relu_back, mm_back, all_reduce, sgd;
} op;

void fl_train_alloc(struct fl_workload *w)
{
	op.mse_back = fl_rt_op_name("fl::mse_loss_backward");
	op.relu_back = fl_rt_op_name("fl::threshold_backward");
	op.mm_back = fl_rt_op_name("fl::mm_backward");
	op.all_reduce = fl_rt_op_name("fl::all_reduce");
	op.sgd = fl_rt_op_name("fl::sgd_step");
	w->grads = fl_rt_empty(&w->rt, w->layers * w->dim, w->dim);
	fl_rt_zero(&w->rt, w->grads);
}

void fl_train_release(struct fl_workload *w)
{
	for (int l = 0; l <= w->layers; l++) {
		if (l > 0) /* act[0] is x, owned by data loading */
			fl_tensor_free(&w->rt, w->act[l]);
		w->act[l] = NULL;
	}
	fl_tensor_free(&w->rt, w->grads);
	w->grads = NULL;
}

static void site(struct fl_workload *w, enum fl_site s, struct fl_tensor **t)
{
	if (w->site)
		w->site(w->site_arg, s, t);
}

static float *grad_of(struct fl_workload *w, int l)
{
	return w->grads->data + (size_t)l * (size_t)w->dim * (size_t)w->dim;
}

void fl_train_forward(struct fl_workload *w)
{
	struct fl_rt *rt = &w->rt;
	for (int l = 1; l <= w->layers; l++) {
		fl_tensor_free(rt, w->act[l]);
		w->act[l] = NULL;
	}
	w->act[0] = w->x;
	for (int l = 0; l < w->layers; l++) {
		struct fl_tensor *z = fl_rt_matmul(rt, w->act[l], w->w[l]);
		if (l == 0)
			site(w, FL_SITE_PRE_ACTIVATION, &z);
		struct fl_tensor *h = fl_rt_relu(rt, z);
		fl_tensor_free(rt, z);
		if (l == 0)
			site(w, FL_SITE_POST_ACTIVATION, &h);
		w->act[l + 1] = h;
		site(w, FL_SITE_FORWARD_LAYER, &w->act[l + 1]);
	}
	site(w, FL_SITE_OUTPUT, &w->act[w->layers]);
	struct fl_tensor *sq = fl_rt_square(rt, w->act[w->layers]);
	fl_tensor_free(rt, w->loss);
	w->loss = fl_rt_mean(rt, sq);
	fl_tensor_free(rt, sq);
}

static void all_reduce(struct fl_workload *w, float *buf, size_t n)
{
	struct fl_backend *be = w->rt.be;
	if (w->world < 2 || !be->ops->allreduce)
		return;
	/* its input as torch.profiler records c10d's collectives: the flat
	 * gradient bucket, [n] floats (a learner's bytes per collective) */
	const struct fl_input in = {.dim = {(int32_t)n}, .ndim = 1, .type = FL_IN_FLOAT};
	uint32_t s = fl_op_begin(op.all_reduce, &in, 1);
	fl_dev_stream_wait(be, FL_STREAM_COMM, FL_STREAM_COMPUTE); /* the gradient is ready */
	be->ops->allreduce(be, buf, n, FL_STREAM_COMM);
	fl_span_end(s);
}

void fl_train_backward(struct fl_workload *w)
{
	struct fl_rt *rt = &w->rt;
	const int B = w->batch, D = w->dim;
	struct fl_tensor *dact = fl_rt_empty(rt, B, D);
	uint32_t s = fl_span_begin(op.mse_back, FL_EV_CPU_OP);
	struct fl_kernel_args ka = {.out = dact->data, .a = w->act[w->layers]->data, .m = B, .n = D,
				    .scalar = 2.0f / (float)(B * D)};
	fl_rt_launch(rt, &fl_train_k_scale, &ka);
	fl_span_end(s);
	for (int l = w->layers - 1; l >= 0; l--) {
		struct fl_tensor *dz = fl_rt_empty(rt, B, D);
		s = fl_span_begin(op.relu_back, FL_EV_CPU_OP);
		struct fl_kernel_args rb = {.out = dz->data, .a = dact->data, .b = w->act[l + 1]->data, .m = B, .n = D};
		fl_rt_launch(rt, &fl_train_k_relu_back, &rb);
		fl_span_end(s);
		fl_tensor_free(rt, dact);
		dact = NULL;
		s = fl_span_begin(op.mm_back, FL_EV_CPU_OP);
		struct fl_kernel_args gw = {.out = grad_of(w, l), .a = w->act[l]->data, .b = dz->data, .m = B, .n = D, .k = D};
		fl_rt_launch(rt, &fl_train_k_gemm_tn, &gw);
		if (l > 0) {
			dact = fl_rt_empty(rt, B, D);
			struct fl_kernel_args gx = {.out = dact->data, .a = dz->data, .b = w->w[l]->data, .m = B, .n = D, .k = D};
			fl_rt_launch(rt, &fl_train_k_gemm_nt, &gx);
		}
		fl_span_end(s);
		fl_tensor_free(rt, dz);
		if (w->ddp_overlap) /* this layer's bucket is ready: reduce it while backward goes on */
			all_reduce(w, grad_of(w, l), (size_t)D * D);
		site(w, FL_SITE_BACKWARD_LAYER, &w->grads);
	}
	fl_tensor_free(rt, dact);
	if (!w->ddp_overlap)
		all_reduce(w, w->grads->data, (size_t)w->layers * D * D);
}

void fl_train_optimizer(struct fl_workload *w)
{
	struct fl_rt *rt = &w->rt;
	const int D = w->dim;
	uint32_t s = fl_span_begin(op.sgd, FL_EV_CPU_OP);
	if (w->world > 1)
		fl_dev_stream_wait(rt->be, FL_STREAM_COMPUTE, FL_STREAM_COMM); /* reduced gradients */
	for (int l = 0; l < w->layers; l++) {
		struct fl_kernel_args a = {.out = w->w[l]->data, .a = grad_of(w, l), .m = D, .n = D,
					   .scalar = w->lr / (float)w->world};
		fl_rt_launch(rt, &fl_train_k_sgd, &a);
	}
	fl_span_end(s);
}
