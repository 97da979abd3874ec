#include "generator/workload.h"

#include <math.h>
#include <string.h>

#include "capture/clock.h"
#include "grader/host_metrics.h"

void fl_workload_init(struct fl_workload *w, struct fl_backend *be, enum fl_alloc_policy alloc, int batch,
		      int dim, uint64_t seed)
{
	memset(w, 0, sizeof(*w));
	fl_rt_init(&w->rt, be, alloc, seed);
	w->batch = batch;
	w->dim = dim;
	float scale = 1.0f / sqrtf((float)dim);
	w->w1 = fl_rt_param(&w->rt, dim, dim, scale);
	w->w2 = fl_rt_param(&w->rt, dim, dim, scale);
}

static void site(struct fl_workload *w, enum fl_site s, struct fl_tensor **t)
{
	if (w->site)
		w->site(w->site_arg, s, t);
}

static void phase_data_loading(struct fl_workload *w)
{
	fl_tensor_free(&w->rt, w->x);
	w->x = fl_rt_randn(&w->rt, w->batch, w->dim);
}

static void phase_forward(struct fl_workload *w)
{
	struct fl_rt *rt = &w->rt;
	struct fl_tensor *h = fl_rt_matmul(rt, w->x, w->w1);
	site(w, FL_SITE_PRE_ACTIVATION, &h);
	struct fl_tensor *a = fl_rt_relu(rt, h);
	fl_tensor_free(rt, h);
	site(w, FL_SITE_POST_ACTIVATION, &a);
	struct fl_tensor *y = fl_rt_matmul(rt, a, w->w2);
	fl_tensor_free(rt, a);
	struct fl_tensor *sq = fl_rt_square(rt, y);
	fl_tensor_free(rt, y);
	fl_tensor_free(rt, w->loss);
	w->loss = fl_rt_mean(rt, sq);
	fl_tensor_free(rt, sq);
}

static void phase_metrics(struct fl_workload *w)
{
	if (w->loss)
		w->last_loss = fl_rt_item(&w->rt, w->loss);
}

static const struct {
	const char *name;
	void (*run)(struct fl_workload *w);
} phases[] = {
	{"data_loading", phase_data_loading},
	{"forward", phase_forward},
	{"metrics", phase_metrics},
};

int fl_workload_has_phase(const char *phase)
{
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		if (strcmp(phases[i].name, phase) == 0)
			return 1;
	return 0;
}

void fl_workload_run_phase(struct fl_workload *w, const char *phase)
{
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		if (strcmp(phases[i].name, phase) == 0)
			phases[i].run(w);
}

void fl_workload_release(struct fl_workload *w)
{
	fl_tensor_free(&w->rt, w->x);
	fl_tensor_free(&w->rt, w->loss);
	fl_tensor_free(&w->rt, w->w1);
	fl_tensor_free(&w->rt, w->w2);
	memset(w, 0, sizeof(*w));
}

static double healthy_step_ms(struct fl_backend *be, enum fl_alloc_policy alloc, int batch, int dim, uint64_t seed)
{
	struct fl_workload w;
	double ms[9];
	fl_workload_init(&w, be, alloc, batch, dim, seed);
	for (int i = 0; i < 3 + 9; i++) {
		uint64_t t0 = fl_clock_ticks();
		for (size_t p = 0; p < sizeof(phases) / sizeof(phases[0]); p++)
			phases[p].run(&w);
		uint64_t t1 = fl_clock_ticks();
		if (i >= 3)
			ms[i - 3] = (double)fl_clock_delta_ns(t0, t1) / 1e6;
	}
	fl_workload_release(&w);
	return fl_median(ms, 9);
}

void fl_workload_calibrate(struct fl_calibration *c, struct fl_backend *be, enum fl_alloc_policy alloc,
			   int batch, int max_dim, double target_ms, uint64_t seed)
{
	static const int ladder[] = {16, 24, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512,
				     640, 768, 1024};
	memset(c, 0, sizeof(*c));
	c->target_ms = target_ms;
	c->batch = batch;
	c->max_dim = max_dim;
	c->alloc = alloc;
	double best = INFINITY;
	for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]) && c->n_tries < FL_CALIB_MAX_TRIES; i++) {
		int dim = ladder[i];
		if (dim > max_dim)
			break;
		double ms = healthy_step_ms(be, alloc, batch, dim, seed);
		c->try_dim[c->n_tries] = dim;
		c->try_ms[c->n_tries] = ms;
		c->n_tries++;
		double err = fabs(log(ms / target_ms));
		if (err < best) {
			best = err;
			c->dim = dim;
			c->measured_ms = ms;
		}
		if (ms > target_ms * 1.5)
			break;
	}
	if (!c->dim) { /* max_dim below the ladder: use it as is */
		c->dim = max_dim;
		c->measured_ms = healthy_step_ms(be, alloc, batch, max_dim, seed);
	}
}
