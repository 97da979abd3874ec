/* pipeline.c — pipeline-parallel training: the ranks are the stages of one
 * model, the batch runs as micro-batches in the GPipe schedule.
 *
 * Stage r holds `layers` dim×dim linear+relu layers. In forward, for each
 * micro-batch i: stage r > 0 receives its input activation from stage r − 1 on
 * the comm stream (the compute stream waits for it), runs its layers, and sends
 * the output to stage r + 1; the last stage adds the micro-batch's share of the
 * loss mean(h²). In backward, for each micro-batch: the last stage starts from
 * the loss gradient, the others receive the output gradient from stage r + 1;
 * each runs the real gradient GEMMs (the weight gradients accumulate over the
 * micro-batches) and stage r > 0 sends the input gradient back to stage r − 1.
 * Every transfer is a real point-to-point send or receive of the bytes
 * (device sendrecv), so a stage is idle exactly while it waits for a
 * neighbour: the pipeline's fill and drain, (p − 1)/(m + p − 1) of the step.
 * Buffers are allocated once per micro-batch count, outside the window.
 */
#include <stdlib.h>
#include <string.h>

#include "capture/tracer.h"
#include "generator/workload.h"

#define TAG_ACT 1  /* activations, stage r → r + 1 */
#define TAG_GRAD 2 /* their gradients, stage r + 1 → r */

struct fl_pipe {
	int m;
	int *rows, *off;                  /* micro-batch i: rows[i] rows from row off[i] */
	struct fl_tensor **act;           /* act[i * (L + 1) + l]: input of layer l (l = L: the stage's output) */
	struct fl_tensor **gin, **gout;   /* per micro-batch: output gradient received, input gradient sent */
	struct fl_tensor *dz, *dact;      /* backward scratch, batch rows */
	struct fl_tensor *grads;          /* layers × dim × dim */
};

/* ---- kernels ---- */

/* out (m×n) = relu(a (m×k) · b (k×n)) */
static void k_linear_relu(const struct fl_kernel_args *a)
{
	const int M = a->m, N = a->n, K = a->k;
	for (int i = 0; i < M; i++) {
		float *restrict c = a->out + (size_t)i * N;
		memset(c, 0, (size_t)N * sizeof(float));
		for (int kk = 0; kk < K; kk++) {
			const float av = a->a[(size_t)i * K + kk];
			const float *restrict b = a->b + (size_t)kk * N;
			for (int j = 0; j < N; j++)
				c[j] += av * b[j];
		}
		for (int j = 0; j < N; j++)
			c[j] = c[j] > 0.0f ? c[j] : 0.0f;
	}
}

/* out[0] (+)= scalar-weighted sum of squares of a (m×n): the micro-batch's loss share */
static void k_mse(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)a->a[i] * a->a[i];
	float v = (float)(s * a->scalar);
	a->out[0] = a->k ? a->out[0] + v : v;
}

static const struct fl_kernel K_LINEAR = {"gemm_relu_kernel", k_linear_relu};
static const struct fl_kernel K_MSE = {"mse_loss_kernel", k_mse};

static struct {
	uint32_t linear, mse, mse_back, relu_back, mm_back, send, recv, sgd;
} op;

/* ---- buffers ---- */

static void free_buffers(struct fl_workload *w)
{
	struct fl_pipe *p = w->pipe;
	if (!p)
		return;
	fl_dev_synchronize(w->rt.be); /* nothing queued may still use them */
	const int L = w->layers;
	for (int i = 0; i < p->m; i++) {
		for (int l = 0; l <= L; l++)
			if (l > 0 || w->stage > 0) /* stage 0's inputs are views of the batch */
				fl_tensor_free(&w->rt, p->act[(size_t)i * (L + 1) + l]);
		fl_tensor_free(&w->rt, p->gin[i]);
		fl_tensor_free(&w->rt, p->gout[i]);
	}
	fl_tensor_free(&w->rt, p->dz);
	fl_tensor_free(&w->rt, p->dact);
	free(p->act);
	free(p->gin);
	free(p->gout);
	free(p->rows);
	free(p->off);
	p->act = p->gin = p->gout = NULL;
	p->rows = p->off = NULL;
	p->dz = p->dact = NULL;
	p->m = 0;
}

static void alloc_buffers(struct fl_workload *w, int m)
{
	struct fl_pipe *p = w->pipe;
	const int L = w->layers, B = w->batch, D = w->dim;
	p->m = m;
	p->rows = calloc((size_t)m, sizeof(int));
	p->off = calloc((size_t)m, sizeof(int));
	p->act = calloc((size_t)m * (size_t)(L + 1), sizeof(*p->act));
	p->gin = calloc((size_t)m, sizeof(*p->gin));
	p->gout = calloc((size_t)m, sizeof(*p->gout));
	if (!p->rows || !p->off || !p->act || !p->gin || !p->gout)
		abort(); /* the workload's sizes are fixed and small (tensor.h) */
	for (int i = 0, row = 0; i < m; i++) {
		p->rows[i] = B / m + (i < B % m);
		p->off[i] = row;
		row += p->rows[i];
		for (int l = 0; l <= L; l++)
			if (l > 0 || w->stage > 0)
				p->act[(size_t)i * (L + 1) + l] = fl_rt_empty(&w->rt, p->rows[i], D);
		p->gin[i] = fl_rt_empty(&w->rt, p->rows[i], D);
		p->gout[i] = fl_rt_empty(&w->rt, p->rows[i], D);
	}
	p->dz = fl_rt_empty(&w->rt, B, D);
	p->dact = fl_rt_empty(&w->rt, B, D);
	w->microbatches = m;
}

void fl_pipe_alloc(struct fl_workload *w)
{
	op.linear = fl_rt_op_name("fl::linear_relu");
	op.mse = fl_rt_op_name("fl::mse_loss");
	op.mse_back = fl_rt_op_name("fl::mse_loss_backward");
	op.relu_back = fl_rt_op_name("fl::threshold_backward");
	op.mm_back = fl_rt_op_name("fl::mm_backward");
	op.send = fl_rt_op_name("fl::send");
	op.recv = fl_rt_op_name("fl::recv");
	op.sgd = fl_rt_op_name("fl::sgd_step");
	w->pipe = calloc(1, sizeof(*w->pipe));
	if (!w->pipe)
		abort();
	w->pipe->grads = fl_rt_empty(&w->rt, w->layers * w->dim, w->dim);
	fl_rt_zero(&w->rt, w->pipe->grads);
	w->loss = fl_rt_empty(&w->rt, 1, 1);
	fl_rt_zero(&w->rt, w->loss);
	alloc_buffers(w, w->microbatches);
}

enum fl_status fl_pipe_set_microbatches(struct fl_workload *w, int m)
{
	if (!w->pipeline)
		return fl_error(FL_EINPUT, "micro-batches: the workload is not a pipeline (workload.kind \"pipeline\")");
	if (m < 1 || m > w->batch)
		return fl_error(FL_EINPUT, "micro-batches: %d is out of range, expected 1 to the batch size %d", m, w->batch);
	free_buffers(w);
	alloc_buffers(w, m);
	return FL_OK;
}

void fl_pipe_release(struct fl_workload *w)
{
	if (!w->pipe)
		return;
	free_buffers(w);
	fl_tensor_free(&w->rt, w->pipe->grads);
	free(w->pipe);
	w->pipe = NULL;
}

/* ---- transfers ---- */

static void transfer(struct fl_workload *w, struct fl_tensor *t, int peer, int send, int tag)
{
	struct fl_backend *be = w->rt.be;
	uint32_t s = fl_span_begin(send ? op.send : op.recv, FL_EV_CPU_OP);
	if (send) /* the data is ready once the compute queued so far has run */
		fl_dev_stream_wait(be, FL_STREAM_COMM, FL_STREAM_COMPUTE);
	be->ops->sendrecv(be, t->data, (size_t)t->rows * (size_t)t->cols, peer, send, tag, FL_STREAM_COMM);
	if (!send) /* compute from now on uses what arrived */
		fl_dev_stream_wait(be, FL_STREAM_COMPUTE, FL_STREAM_COMM);
	fl_span_end(s);
}

/* ---- phases ---- */

void fl_pipe_data_loading(struct fl_workload *w)
{
	if (w->stage != 0)
		return; /* the batch enters at the first stage */
	fl_tensor_free(&w->rt, w->x);
	w->x = fl_rt_randn(&w->rt, w->batch, w->dim);
}

void fl_pipe_forward(struct fl_workload *w)
{
	struct fl_rt *rt = &w->rt;
	struct fl_pipe *p = w->pipe;
	const int L = w->layers, D = w->dim;
	const int last = w->stage == w->stages - 1;
	if (w->stage > 0) /* the last step's backward is done with the receive buffers */
		fl_dev_stream_wait(rt->be, FL_STREAM_COMM, FL_STREAM_COMPUTE);
	for (int i = 0; i < p->m; i++) {
		struct fl_tensor **a = p->act + (size_t)i * (L + 1);
		struct fl_tensor view;
		if (w->stage == 0) { /* rows off..off+rows of the batch */
			view = *w->x;
			view.rows = p->rows[i];
			view.data = w->x->data + (size_t)p->off[i] * D;
			view.bytes = (size_t)p->rows[i] * D * sizeof(float);
			a[0] = &view;
		} else {
			transfer(w, a[0], w->stage - 1, 0, TAG_ACT);
		}
		for (int l = 0; l < L; l++) {
			uint32_t s = fl_span_begin(op.linear, FL_EV_CPU_OP);
			struct fl_kernel_args ka = {.out = a[l + 1]->data, .a = a[l]->data, .b = w->w[l]->data,
						    .m = p->rows[i], .n = D, .k = D};
			fl_rt_launch(rt, &K_LINEAR, &ka);
			fl_span_end(s);
		}
		if (last) {
			uint32_t s = fl_span_begin(op.mse, FL_EV_CPU_OP);
			struct fl_kernel_args ka = {.out = w->loss->data, .a = a[L]->data, .m = p->rows[i], .n = D, .k = i > 0,
						    .scalar = 1.0f / (float)((double)w->batch * D)};
			fl_rt_launch(rt, &K_MSE, &ka);
			fl_span_end(s);
		} else {
			transfer(w, a[L], w->stage + 1, 1, TAG_ACT);
		}
		if (w->stage == 0)
			a[0] = NULL; /* the view lives on this frame only; kernels got its pointer */
	}
}

void fl_pipe_backward(struct fl_workload *w)
{
	struct fl_rt *rt = &w->rt;
	struct fl_pipe *p = w->pipe;
	const int L = w->layers, D = w->dim;
	const int last = w->stage == w->stages - 1;
	for (int i = 0; i < p->m; i++) {
		struct fl_tensor **a = p->act + (size_t)i * (L + 1);
		const int R = p->rows[i];
		const float *in0 = w->stage == 0 ? w->x->data + (size_t)p->off[i] * D : a[0]->data;
		if (last) {
			uint32_t s = fl_span_begin(op.mse_back, FL_EV_CPU_OP);
			struct fl_kernel_args ka = {.out = p->gin[i]->data, .a = a[L]->data, .m = R, .n = D,
						    .scalar = 2.0f / (float)((double)w->batch * D)};
			fl_rt_launch(rt, &fl_train_k_scale, &ka);
			fl_span_end(s);
		} else {
			transfer(w, p->gin[i], w->stage + 1, 0, TAG_GRAD);
		}
		const float *dact = p->gin[i]->data;
		for (int l = L - 1; l >= 0; l--) {
			uint32_t s = fl_span_begin(op.relu_back, FL_EV_CPU_OP);
			struct fl_kernel_args rb = {.out = p->dz->data, .a = dact, .b = a[l + 1]->data, .m = R, .n = D};
			fl_rt_launch(rt, &fl_train_k_relu_back, &rb);
			fl_span_end(s);
			s = fl_span_begin(op.mm_back, FL_EV_CPU_OP);
			struct fl_kernel_args gw = {.out = p->grads->data + (size_t)l * D * D, .a = l > 0 ? a[l]->data : in0,
						    .b = p->dz->data, .m = R, .n = D, .k = D, .scalar = i > 0};
			fl_rt_launch(rt, &fl_train_k_gemm_tn, &gw);
			if (l > 0 || w->stage > 0) {
				float *dst = l > 0 ? p->dact->data : p->gout[i]->data;
				struct fl_kernel_args gx = {.out = dst, .a = p->dz->data, .b = w->w[l]->data, .m = R, .n = D, .k = D};
				fl_rt_launch(rt, &fl_train_k_gemm_nt, &gx);
				dact = dst;
			}
			fl_span_end(s);
		}
		if (w->stage > 0)
			transfer(w, p->gout[i], w->stage - 1, 1, TAG_GRAD);
	}
}

void fl_pipe_optimizer(struct fl_workload *w)
{
	struct fl_rt *rt = &w->rt;
	const int D = w->dim;
	uint32_t s = fl_span_begin(op.sgd, FL_EV_CPU_OP);
	for (int l = 0; l < w->layers; l++) {
		struct fl_kernel_args a = {.out = w->w[l]->data, .a = w->pipe->grads->data + (size_t)l * D * D, .m = D,
					   .n = D, .scalar = w->lr};
		fl_rt_launch(rt, &fl_train_k_sgd, &a);
	}
	fl_span_end(s);
}

void fl_pipe_metrics(struct fl_workload *w)
{
	/* the step ends when this stage's device is done, its last sends included */
	fl_dev_synchronize(w->rt.be);
	if (w->stage == w->stages - 1)
		w->last_loss = fl_rt_item(&w->rt, w->loss);
}
