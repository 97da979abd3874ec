/* recompile — shape-driven recompilation. At the chosen steps a batch of a new
 * shape arrives and, before the forward pass can run it, the host compiles for
 * that shape: it autotunes the first layer's GEMM by timing `candidates` real
 * tilings of it (`reps` timed runs each, on the host, with the new shape's
 * sizes) and keeps the fastest, then runs the new-shape batch through the
 * layer once (a real fl::matmul with the new input dims). The compile runs in
 * a span the scenario names, each candidate's timing in a nested span; the
 * host is busy computing throughout and nothing is queued on the device.
 * Other steps are untouched: the slowdown is intermittent.
 *
 * The k-th new shape has rows + 16·(k mod 8) rows. The host buffers are sized
 * for the largest and touched at init, and one full autotune runs at init, so
 * the first compile in the window costs what the others do. */
#include <stdlib.h>
#include <string.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "[3, 7]", NULL, "the steps where a new input shape arrives"},
	{"candidates", FL_PARAM_INT, 8, 1, 64, NULL, "tilings", "candidate tilings timed per new shape"},
	{"reps", FL_PARAM_INT, 3, 1, 100, NULL, "runs", "timed runs per candidate"},
	{"rows", FL_PARAM_INT, 96, 1, 8192, NULL, "rows", "rows of the first new input shape"},
	{"span", FL_PARAM_STRING, 0, 0, 0, "compile_graph", NULL, "name of the span the compile runs in"},
	{"candidate_span", FL_PARAM_STRING, 0, 0, 0, "benchmark_kernel", NULL,
	 "name of the nested span of each candidate's timing"},
};

#define RC_SHAPES 8

struct rc_state {
	const struct fl_services *svc;
	const char *cand_span;
	float *a, *b, *c;     /* host buffers: a (max rows × K), b (K × N), c (max rows × N) */
	int K, N, rows;       /* the GEMM of the current shape: c = a · b, rows × K · K × N */
	int candidates, reps;
	int cand;             /* the candidate being timed */
	double best_ns;
	int best;
	long n_shapes;        /* new shapes seen so far */
};

/* Candidate tilings (rows, inner, cols blocks), in the order they are tried. */
static const int tiles[][3] = {
	{4, 64, 64}, {8, 32, 128}, {16, 64, 64}, {8, 128, 32}, {32, 32, 32}, {16, 16, 256},
	{64, 64, 16}, {4, 256, 128}, {32, 128, 64}, {8, 8, 512}, {2, 512, 512}, {128, 16, 16},
};
#define RC_TILES (sizeof(tiles) / sizeof(tiles[0]))

static int imin(int x, int y) { return x < y ? x : y; }

/* c = a · b with one blocking of the loops. */
static void tiled_gemm(const struct rc_state *s, const int t[3])
{
	const int M = s->rows, K = s->K, N = s->N;
	memset(s->c, 0, (size_t)M * (size_t)N * sizeof(float));
	for (int i0 = 0; i0 < M; i0 += t[0])
		for (int k0 = 0; k0 < K; k0 += t[1])
			for (int j0 = 0; j0 < N; j0 += t[2])
				for (int i = i0; i < imin(i0 + t[0], M); i++)
					for (int k = k0; k < imin(k0 + t[1], K); k++) {
						const float av = s->a[(size_t)i * K + k];
						const float *restrict b = s->b + (size_t)k * N;
						float *restrict c = s->c + (size_t)i * N;
						for (int j = j0; j < imin(j0 + t[2], N); j++)
							c[j] += av * b[j];
					}
}

/* Time one candidate: `reps` runs, the fastest counts. */
static void time_candidate(void *arg)
{
	struct rc_state *s = arg;
	const int *t = tiles[s->cand % RC_TILES];
	double fastest = 0;
	for (int r = 0; r < s->reps; r++) {
		uint64_t t0 = fl_clock_ticks();
		tiled_gemm(s, t);
		double ns = (double)fl_clock_delta_ns(t0, fl_clock_ticks());
		if (r == 0 || ns < fastest)
			fastest = ns;
	}
	if (s->cand == 0 || fastest < s->best_ns) {
		s->best_ns = fastest;
		s->best = s->cand;
	}
}

/* The compile: every candidate timed, the fastest kept. */
static void autotune(void *arg)
{
	struct rc_state *s = arg;
	for (s->cand = 0; s->cand < s->candidates; s->cand++)
		fl_svc_run_span(s->svc, s->cand_span, time_candidate, s);
}

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	size_t n;
	struct fl_tensor *const *w = fl_svc_weights(env->svc, &n);
	if (n == 0)
		return fl_error(FL_EINPUT, "fault '%s': the model has no layer to compile", f->ops->name);
	const struct fl_steps *st = fl_fault_steps(f, "steps");
	int any = st->all || st->every > 0;
	for (size_t i = 0; i < st->n && !any; i++)
		any = st->list[i] < env->total_steps;
	if (!any)
		return fl_error(FL_EINPUT, "fault '%s': no step of 'steps' is in the run (%ld steps)", f->ops->name,
				env->total_steps);
	const char *span = fl_fault_str(f, "span"), *cand = fl_fault_str(f, "candidate_span");
	if (strcmp(span, cand) == 0)
		return fl_error(FL_EINPUT, "fault '%s': 'span' and 'candidate_span' are both '%s'", f->ops->name, span);
	struct rc_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->svc = env->svc;
	s->cand_span = cand;
	s->K = w[0]->rows;
	s->N = w[0]->cols;
	s->candidates = (int)fl_fault_num(f, "candidates");
	s->reps = (int)fl_fault_num(f, "reps");
	const int max_rows = (int)fl_fault_num(f, "rows") + 16 * (RC_SHAPES - 1);
	s->a = malloc((size_t)max_rows * (size_t)s->K * sizeof(float));
	s->b = malloc((size_t)s->K * (size_t)s->N * sizeof(float));
	s->c = malloc((size_t)max_rows * (size_t)s->N * sizeof(float));
	if (!s->a || !s->b || !s->c)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory for the autotuning buffers", f->ops->name);
	for (size_t i = 0; i < (size_t)max_rows * (size_t)s->K; i++)
		s->a[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
	for (size_t i = 0; i < (size_t)s->K * (size_t)s->N; i++)
		s->b[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.5f;
	memset(s->c, 0, (size_t)max_rows * (size_t)s->N * sizeof(float));
	enum fl_status e = fl_svc_declare_span(env->svc, span);
	if (!e)
		e = fl_svc_declare_span(env->svc, cand);
	if (e)
		return e;
	/* warm: one full autotune at the largest shape, outside any recording */
	s->rows = max_rows;
	for (s->cand = 0; s->cand < s->candidates; s->cand++)
		time_candidate(s);
	return FL_OK;
}

static void phase_begin(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct rc_state *s = f->state;
	if (strcmp(ctx->phase, "forward") != 0 || !fl_steps_match(fl_fault_steps(f, "steps"), ctx->step))
		return;
	s->rows = (int)fl_fault_num(f, "rows") + 16 * (int)(s->n_shapes % RC_SHAPES);
	s->n_shapes++;
	const char *span = fl_fault_str(f, "span");
	uint64_t t0 = fl_clock_ticks();
	fl_svc_run_span(ctx->svc, span, autotune, s);
	uint64_t t1 = fl_clock_ticks();
	/* the compiled layer runs the new-shape batch once */
	size_t n;
	struct fl_tensor *const *w = fl_svc_weights(ctx->svc, &n);
	struct fl_tensor *x = fl_rt_randn(ctx->rt, s->rows, s->K);
	struct fl_tensor *y = fl_rt_matmul(ctx->rt, x, w[0]);
	fl_tensor_free(ctx->rt, y);
	fl_tensor_free(ctx->rt, x);
	/* requested and measured: the timed runs of the autotune (all of them run) */
	const double runs = (double)s->candidates * s->reps;
	struct fl_instance *in = fl_fault_report(f, ctx, span, runs, runs, "runs");
	if (in) {
		in->extra_name[0] = "measured_ms";
		in->extra[0] = (double)fl_clock_delta_ns(t0, t1) / 1e6;
		in->extra_name[1] = "input_rows";
		in->extra[1] = s->rows;
	}
}

static void release(struct fl_fault *f)
{
	struct rc_state *s = f->state;
	if (!s)
		return;
	free(s->a);
	free(s->b);
	free(s->c);
	free(s);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_recompile = {
	.name = "recompile",
	.summary = "new input shapes at chosen steps: the host autotunes GEMM tilings for each before the forward",
	.family = "recompile",
	.fix = "static_shapes",
	.backends = "cpu emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.phase_begin = phase_begin,
	.release = release,
};
