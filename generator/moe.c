/* moe.c — an expert-parallel mixture-of-experts layer in a training step: each
 * rank holds one expert (a dim×dim linear+relu, then a dim×dim linear), and
 * every rank's tokens are routed to the experts by real all-to-alls.
 *
 * Each step, on every rank, in order:
 *   router     scores = x·r (a real GEMV over the batch), then capacity
 *              routing: expert e takes cap[e] of the rank's tokens, filled in
 *              the order of the tokens' scores (highest first); the kernel
 *              writes each token's slot in the packed-by-expert order and the
 *              token count per expert. Healthy capacities are equal (batch /
 *              experts); a fault skews them (fl_moe_set_skew).
 *   counts     an all-to-all of the counts (one number per peer), read back by
 *              the host (a device-to-host copy and a stream synchronize, as
 *              MoE layers do to size the exchange)
 *   dispatch   the rows packed by expert, then an all-to-all moving each row to
 *              its expert's rank (MPI_Alltoallv on the comm stream, recorded as
 *              NCCL's SendRecv kernel: NCCL runs an all-to-all as grouped sends
 *              and receives)
 *   expert     the expert's GEMMs over the rows it received (its op's Input
 *              Dims show that token count)
 *   combine    the all-to-all back, the rows unpacked into token order, the
 *              loss mean(out²)
 *   backward   the loss gradient goes to the experts by a third all-to-all,
 *              each expert runs its gradient GEMMs over its rows
 *   optimizer  SGD on the expert's two weights. The router is fixed (capacity
 *              routing has no gradient) and there is no other layer, so there
 *              is no data-parallel all-reduce.
 * A rank whose expert received more rows computes longer; the others wait for
 * it inside the combine all-to-all (and the next step's count exchange).
 * One rank alone (calibration) has one expert: the exchanges are then copies
 * on the comm stream. Buffers are allocated once, outside the window.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "capture/tracer.h"
#include "generator/workload.h"

struct fl_moe {
	int E, cap_rows;              /* experts (= ranks); receive buffers hold up to E × batch rows */
	int hot;                      /* the skewed expert, or -1: balanced routing */
	double hot_share;
	float *caps_host;             /* tokens per expert on every rank (E) */
	float *hcount;                /* host: counts this rank sends (E), then receives (E) */
	struct fl_tensor *router;     /* dim × 1 */
	struct fl_tensor *caps;       /* 1 × E */
	struct fl_tensor *score;      /* batch × 1 */
	struct fl_tensor *route;      /* 1 × (batch + E): each token's slot, then the counts per expert */
	struct fl_tensor *rcount;     /* 1 × E: the tokens each rank sends this expert */
	struct fl_tensor *xs, *ys, *dys, *out; /* batch × dim: packed by expert (send side); the output */
	struct fl_tensor *xr, *h, *yr, *dyr, *dh, *dz; /* cap_rows × dim: the rows this expert received */
	struct fl_tensor *grads;      /* 2 × dim × dim: dW1, dW2 */
	size_t *one, *scnt, *rcnt;    /* E each: the count exchange (1 float a peer); floats sent, received */
	long received;                /* rows this expert received in the last step */
};

/* ---- kernels ---- */

/* out (m×n) = a (m×k) · b (k×n), then relu when scalar != 0 */
static void k_gemm(const struct fl_kernel_args *a)
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
		if (a->scalar != 0.0f)
			for (int j = 0; j < N; j++)
				c[j] = c[j] > 0.0f ? c[j] : 0.0f;
	}
}

/* capacity routing: a = scores (m tokens), b = capacities (n experts, summing
 * to m); out[0..m) = each token's slot in the packed-by-expert order,
 * out[m..m+n) = tokens per expert. A token's place in the score order (highest
 * first, ties by index) picks its expert; inside an expert tokens keep their order. */
static void k_route(const struct fl_kernel_args *a)
{
	const int M = a->m, E = a->n;
	float *slot = a->out, *count = a->out + M;
	for (int t = 0; t < M; t++) {
		int place = 0;
		for (int u = 0; u < M; u++)
			place += a->a[u] > a->a[t] || (a->a[u] == a->a[t] && u < t);
		int e = 0;
		float cum = a->b[0];
		while (e < E - 1 && (float)place >= cum)
			cum += a->b[++e];
		slot[t] = (float)e; /* the expert, for now */
	}
	int off[1024];
	int start = 0;
	for (int e = 0; e < E && e < 1024; e++) {
		int n = 0;
		for (int t = 0; t < M; t++)
			n += (int)slot[t] == e;
		count[e] = (float)n;
		off[e] = start;
		start += n;
	}
	for (int t = 0; t < M; t++)
		slot[t] = (float)off[(int)slot[t]]++;
}

/* out[slot[i]] = a[i] (rows of n), b = the slots; scalar != 0: the inverse, out[i] = a[slot[i]] */
static void k_permute(const struct fl_kernel_args *a)
{
	const size_t N = (size_t)a->n;
	for (int i = 0; i < a->m; i++) {
		size_t s = (size_t)a->b[i];
		if (a->scalar != 0.0f)
			memcpy(a->out + (size_t)i * N, a->a + s * N, N * sizeof(float));
		else
			memcpy(a->out + s * N, a->a + (size_t)i * N, N * sizeof(float));
	}
}

/* out[0] = scalar · sum of squares of a (m×n) */
static void k_mse(const struct fl_kernel_args *a)
{
	size_t n = (size_t)a->m * (size_t)a->n;
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)a->a[i] * a->a[i];
	a->out[0] = (float)(s * a->scalar);
}

/* the training kernels under the expert's names, so its work reads apart */
static void k_tn(const struct fl_kernel_args *a) { fl_train_k_gemm_tn.run(a); }
static void k_nt(const struct fl_kernel_args *a) { fl_train_k_gemm_nt.run(a); }
static void k_relu_back(const struct fl_kernel_args *a) { fl_train_k_relu_back.run(a); }

static const struct fl_kernel K_ROUTER = {"moe_router_gemm_kernel", k_gemm};
static const struct fl_kernel K_ROUTE = {"moe_route_kernel", k_route};
static const struct fl_kernel K_PERMUTE = {"moe_permute_kernel", k_permute};
static const struct fl_kernel K_UNPERMUTE = {"moe_unpermute_kernel", k_permute};
static const struct fl_kernel K_EXPERT_FC1 = {"expert_gemm_relu_kernel", k_gemm};
static const struct fl_kernel K_EXPERT_FC2 = {"expert_gemm_kernel", k_gemm};
static const struct fl_kernel K_EXPERT_TN = {"expert_gemm_tn_kernel", k_tn};
static const struct fl_kernel K_EXPERT_NT = {"expert_gemm_nt_kernel", k_nt};
static const struct fl_kernel K_EXPERT_RELU_BACK = {"expert_threshold_backward_kernel", k_relu_back};
static const struct fl_kernel K_MSE = {"mse_loss_kernel", k_mse};

static struct {
	uint32_t router, counts, permute, a2a, expert, expert_back, unpermute, mse, mse_back, sgd;
} op;

/* ---- buffers ---- */

static void set_caps(struct fl_workload *w)
{
	struct fl_moe *m = w->moe;
	const int E = m->E, B = w->batch;
	int c[1024], left = B, rest = E;
	if (m->hot >= 0 && E > 1) {
		c[m->hot] = (int)lround(m->hot_share * B);
		c[m->hot] = c[m->hot] < 0 ? 0 : c[m->hot] > B ? B : c[m->hot];
		left -= c[m->hot];
		rest--;
	}
	for (int e = 0, k = 0; e < E; e++) {
		if (m->hot >= 0 && E > 1 && e == m->hot)
			continue;
		c[e] = left / rest + (k++ < left % rest);
	}
	for (int e = 0; e < E; e++)
		m->caps_host[e] = (float)c[e];
	struct fl_backend *be = w->rt.be;
	if (be->ops->asynchronous) { /* to the device, in stream order, before any later router runs */
		be->ops->copy(be, m->caps->data, m->caps_host, (size_t)E * sizeof(float), FL_COPY_H2D, FL_STREAM_COMPUTE);
		fl_dev_stream_synchronize(be, FL_STREAM_COMPUTE);
	} else {
		memcpy(m->caps->data, m->caps_host, (size_t)E * sizeof(float));
	}
}

void fl_moe_alloc(struct fl_workload *w)
{
	op.router = fl_rt_op_name("fl::moe_router");
	op.counts = fl_rt_op_name("fl::moe_token_counts");
	op.permute = fl_rt_op_name("fl::moe_permute");
	op.a2a = fl_rt_op_name("fl::all_to_all_single");
	op.expert = fl_rt_op_name("fl::expert_mlp");
	op.expert_back = fl_rt_op_name("fl::expert_mlp_backward");
	op.unpermute = fl_rt_op_name("fl::moe_unpermute");
	op.mse = fl_rt_op_name("fl::mse_loss");
	op.mse_back = fl_rt_op_name("fl::mse_loss_backward");
	op.sgd = fl_rt_op_name("fl::sgd_step");
	struct fl_moe *m = w->moe = calloc(1, sizeof(*w->moe));
	if (!m)
		abort();
	struct fl_rt *rt = &w->rt;
	const int B = w->batch, D = w->dim, E = w->world > 1024 ? 1024 : w->world;
	m->E = E;
	m->cap_rows = E * B;
	m->hot = -1;
	m->caps_host = calloc((size_t)E, sizeof(float));
	m->hcount = calloc(2 * (size_t)E, sizeof(float));
	m->one = calloc((size_t)E, sizeof(size_t));
	m->scnt = calloc((size_t)E, sizeof(size_t));
	m->rcnt = calloc((size_t)E, sizeof(size_t));
	if (!m->caps_host || !m->hcount || !m->one || !m->scnt || !m->rcnt)
		abort(); /* the workload's sizes are fixed and small (tensor.h) */
	for (int e = 0; e < E; e++)
		m->one[e] = 1;
	m->router = fl_rt_param(rt, D, 1, 1.0f / sqrtf((float)D));
	m->caps = fl_rt_empty(rt, 1, E);
	m->score = fl_rt_empty(rt, B, 1);
	m->route = fl_rt_empty(rt, 1, B + E);
	m->rcount = fl_rt_empty(rt, 1, E);
	struct fl_tensor **bt[] = {&m->xs, &m->ys, &m->dys, &m->out};
	for (size_t i = 0; i < sizeof(bt) / sizeof(bt[0]); i++)
		*bt[i] = fl_rt_empty(rt, B, D);
	struct fl_tensor **rt_[] = {&m->xr, &m->h, &m->yr, &m->dyr, &m->dh, &m->dz};
	for (size_t i = 0; i < sizeof(rt_) / sizeof(rt_[0]); i++)
		*rt_[i] = fl_rt_empty(rt, m->cap_rows, D);
	m->grads = fl_rt_empty(rt, 2 * D, D);
	fl_rt_zero(rt, m->grads);
	w->loss = fl_rt_empty(rt, 1, 1);
	fl_rt_zero(rt, w->loss);
	set_caps(w);
}

enum fl_status fl_moe_set_skew(struct fl_workload *w, int hot, double share)
{
	if (!w->moe)
		return fl_error(FL_EINPUT, "expert skew: the workload is not a mixture of experts (workload.kind \"moe\")");
	if (hot < 0 || hot >= w->moe->E)
		return fl_error(FL_EINPUT, "expert skew: expert %d does not exist, expected 0 to %d (one expert a rank)", hot,
				w->moe->E - 1);
	if (!(share >= 0 && share <= 1))
		return fl_error(FL_EINPUT, "expert skew: share %g is out of range, expected 0 to 1", share);
	fl_dev_synchronize(w->rt.be); /* no router still reads the capacities */
	w->moe->hot = hot;
	w->moe->hot_share = share;
	set_caps(w);
	return FL_OK;
}

long fl_moe_received(const struct fl_workload *w) { return w->moe ? w->moe->received : 0; }

void fl_moe_release(struct fl_workload *w)
{
	struct fl_moe *m = w->moe;
	if (!m)
		return;
	fl_dev_synchronize(w->rt.be); /* nothing queued may still use them */
	struct fl_tensor *t[] = {m->router, m->caps, m->score, m->route, m->rcount, m->xs, m->ys, m->dys, m->out,
				 m->xr, m->h, m->yr, m->dyr, m->dh, m->dz, m->grads};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		fl_tensor_free(&w->rt, t[i]);
	free(m->caps_host);
	free(m->hcount);
	free(m->one);
	free(m->scnt);
	free(m->rcnt);
	free(m);
	w->moe = NULL;
}

/* ---- the exchanges ---- */

/* An all-to-all on the comm stream, after the compute queued so far (which
 * wrote `send`); the compute stream then waits for what arrived. One expert
 * (a rank alone) has nobody to exchange with: a copy on the comm stream. */
static void exchange(struct fl_workload *w, const float *send, const size_t *scnt, float *recv, const size_t *rcnt)
{
	struct fl_backend *be = w->rt.be;
	uint32_t s = fl_span_begin(op.a2a, FL_EV_CPU_OP);
	fl_dev_stream_wait(be, FL_STREAM_COMM, FL_STREAM_COMPUTE);
	if (w->moe->E > 1)
		be->ops->alltoallv(be, send, scnt, recv, rcnt, FL_STREAM_COMM);
	else
		be->ops->copy(be, recv, send, scnt[0] * sizeof(float), FL_COPY_D2D, FL_STREAM_COMM);
	fl_dev_stream_wait(be, FL_STREAM_COMPUTE, FL_STREAM_COMM);
	fl_span_end(s);
}

/* A view of the first `rows` rows of t (the rows this step uses). */
static struct fl_tensor rows_of(const struct fl_tensor *t, int rows)
{
	struct fl_tensor v = *t;
	v.rows = rows;
	v.bytes = (size_t)rows * (size_t)t->cols * sizeof(float);
	return v;
}

static struct fl_input in_t(const struct fl_tensor *t)
{
	return (struct fl_input){.dim = {t->rows, t->cols}, .ndim = 2, .type = FL_IN_FLOAT};
}

/* ---- phases ---- */

void fl_moe_data_loading(struct fl_workload *w)
{
	fl_tensor_free(&w->rt, w->x);
	w->x = fl_rt_randn(&w->rt, w->batch, w->dim);
}

void fl_moe_forward(struct fl_workload *w)
{
	struct fl_rt *rt = &w->rt;
	struct fl_backend *be = rt->be;
	struct fl_moe *m = w->moe;
	const int B = w->batch, D = w->dim, E = m->E;

	/* router: scores, then each token's slot and the counts per expert */
	struct fl_input rin[] = {in_t(w->x), in_t(m->router)};
	uint32_t s = fl_op_begin(op.router, rin, 2);
	struct fl_kernel_args ka = {.out = m->score->data, .a = w->x->data, .b = m->router->data, .m = B, .n = 1, .k = D};
	fl_rt_launch(rt, &K_ROUTER, &ka);
	struct fl_kernel_args kr = {.out = m->route->data, .a = m->score->data, .b = m->caps->data, .m = B, .n = E};
	fl_rt_launch(rt, &K_ROUTE, &kr);
	fl_span_end(s);

	/* the counts: every rank tells every expert how many rows it will get */
	s = fl_span_begin(op.counts, FL_EV_CPU_OP);
	exchange(w, m->route->data + B, m->one, m->rcount->data, m->one);
	be->ops->copy(be, m->hcount, m->route->data + B, (size_t)E * sizeof(float), FL_COPY_D2H, FL_STREAM_COMM);
	be->ops->copy(be, m->hcount + E, m->rcount->data, (size_t)E * sizeof(float), FL_COPY_D2H, FL_STREAM_COMM);
	fl_dev_stream_synchronize(be, FL_STREAM_COMM); /* every earlier exchange is done: the counts may change */
	long R = 0;
	for (int e = 0; e < E; e++) {
		m->scnt[e] = (size_t)m->hcount[e] * (size_t)D;
		m->rcnt[e] = (size_t)m->hcount[E + e] * (size_t)D;
		R += (long)m->hcount[E + e];
	}
	if (R > m->cap_rows)
		R = m->cap_rows; /* cannot happen: every rank routes at most its batch to one expert */
	m->received = R;
	fl_span_end(s);

	/* dispatch */
	struct fl_input pin[] = {in_t(w->x), in_t(m->route)};
	s = fl_op_begin(op.permute, pin, 2);
	struct fl_kernel_args kp = {.out = m->xs->data, .a = w->x->data, .b = m->route->data, .m = B, .n = D};
	fl_rt_launch(rt, &K_PERMUTE, &kp);
	fl_span_end(s);
	exchange(w, m->xs->data, m->scnt, m->xr->data, m->rcnt);

	/* the expert over the rows it received */
	struct fl_tensor xr = rows_of(m->xr, (int)R);
	struct fl_input ein[] = {in_t(&xr), in_t(w->w[0]), in_t(w->w[1])};
	s = fl_op_begin(op.expert, ein, 3);
	struct fl_kernel_args k1 = {.out = m->h->data, .a = m->xr->data, .b = w->w[0]->data, .m = (int)R, .n = D, .k = D,
				    .scalar = 1};
	fl_rt_launch(rt, &K_EXPERT_FC1, &k1);
	struct fl_kernel_args k2 = {.out = m->yr->data, .a = m->h->data, .b = w->w[1]->data, .m = (int)R, .n = D, .k = D};
	fl_rt_launch(rt, &K_EXPERT_FC2, &k2);
	fl_span_end(s);

	/* combine: the rows back to their ranks, into token order, and the loss */
	exchange(w, m->yr->data, m->rcnt, m->ys->data, m->scnt);
	struct fl_input uin[] = {in_t(m->ys), in_t(m->route)};
	s = fl_op_begin(op.unpermute, uin, 2);
	struct fl_kernel_args ku = {.out = m->out->data, .a = m->ys->data, .b = m->route->data, .m = B, .n = D,
				    .scalar = 1};
	fl_rt_launch(rt, &K_UNPERMUTE, &ku);
	fl_span_end(s);
	struct fl_input lin[] = {in_t(m->out)};
	s = fl_op_begin(op.mse, lin, 1);
	struct fl_kernel_args kl = {.out = w->loss->data, .a = m->out->data, .m = B, .n = D,
				    .scalar = 1.0f / (float)((double)B * D)};
	fl_rt_launch(rt, &K_MSE, &kl);
	fl_span_end(s);
}

void fl_moe_backward(struct fl_workload *w)
{
	struct fl_rt *rt = &w->rt;
	struct fl_moe *m = w->moe;
	const int B = w->batch, D = w->dim, R = (int)m->received;

	/* d loss / d out, taken in the packed order the experts sent (a permutation
	 * of the rows: the same gradient), then to the experts */
	struct fl_input gin[] = {in_t(m->ys)};
	uint32_t s = fl_op_begin(op.mse_back, gin, 1);
	struct fl_kernel_args kg = {.out = m->dys->data, .a = m->ys->data, .m = B, .n = D,
				    .scalar = 2.0f / (float)((double)B * D)};
	fl_rt_launch(rt, &fl_train_k_scale, &kg);
	fl_span_end(s);
	exchange(w, m->dys->data, m->scnt, m->dyr->data, m->rcnt);

	/* the expert's gradient GEMMs over its rows: dW2 = hᵀ·dy, dh = dy·W2ᵀ,
	 * dz = dh ⊙ (h > 0), dW1 = xᵀ·dz */
	struct fl_tensor dyr = rows_of(m->dyr, R);
	struct fl_input bin[] = {in_t(&dyr), in_t(w->w[0]), in_t(w->w[1])};
	s = fl_op_begin(op.expert_back, bin, 3);
	float *dw1 = m->grads->data, *dw2 = m->grads->data + (size_t)D * D;
	struct fl_kernel_args a2 = {.out = dw2, .a = m->h->data, .b = m->dyr->data, .m = R, .n = D, .k = D};
	fl_rt_launch(rt, &K_EXPERT_TN, &a2);
	struct fl_kernel_args ah = {.out = m->dh->data, .a = m->dyr->data, .b = w->w[1]->data, .m = R, .n = D, .k = D};
	fl_rt_launch(rt, &K_EXPERT_NT, &ah);
	struct fl_kernel_args az = {.out = m->dz->data, .a = m->dh->data, .b = m->h->data, .m = R, .n = D};
	fl_rt_launch(rt, &K_EXPERT_RELU_BACK, &az);
	struct fl_kernel_args a1 = {.out = dw1, .a = m->xr->data, .b = m->dz->data, .m = R, .n = D, .k = D};
	fl_rt_launch(rt, &K_EXPERT_TN, &a1);
	fl_span_end(s);
}

void fl_moe_optimizer(struct fl_workload *w)
{
	const int D = w->dim;
	uint32_t s = fl_span_begin(op.sgd, FL_EV_CPU_OP);
	for (int l = 0; l < 2; l++) {
		struct fl_kernel_args a = {.out = w->w[l]->data, .a = w->moe->grads->data + (size_t)l * D * D, .m = D,
					   .n = D, .scalar = w->lr};
		fl_rt_launch(&w->rt, &fl_train_k_sgd, &a);
	}
	fl_span_end(s);
}

void fl_moe_metrics(struct fl_workload *w)
{
	w->last_loss = fl_rt_item(&w->rt, w->loss);
}
