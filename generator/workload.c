#include "generator/workload.h"

#include <math.h>
#include <string.h>

#include "capture/clock.h"
#include "common/stats.h"

void fl_workload_init(struct fl_workload *w, struct fl_backend *be, const struct fl_workload_shape *shape,
		      uint64_t seed)
{
	memset(w, 0, sizeof(*w));
	fl_rt_init(&w->rt, be, shape->alloc, seed);
	w->train = shape->train;
	w->batch = shape->batch;
	w->dim = shape->dim;
	w->layers = shape->moe ? 2 : shape->train ? shape->layers : 2; /* an expert: two layers */
	if (w->layers > FL_MAX_LAYERS)
		w->layers = FL_MAX_LAYERS;
	w->world = shape->world > 0 ? shape->world : 1;
	w->ddp_overlap = 1;
	w->pipeline = shape->pipeline;
	w->lr = 0.01f;
	float scale = 1.0f / sqrtf((float)w->dim);
	for (int l = 0; l < w->layers; l++)
		w->w[l] = fl_rt_param(&w->rt, w->dim, w->dim, scale);
	if (w->pipeline) {
		w->stage = shape->rank;
		w->stages = w->world;
		w->microbatches = shape->microbatches > 0 ? shape->microbatches : 1;
		if (w->microbatches > w->batch)
			w->microbatches = w->batch;
		fl_pipe_alloc(w);
	} else if (shape->moe) {
		fl_moe_alloc(w);
	} else if (w->train) {
		fl_train_alloc(w);
	}
}

static void site(struct fl_workload *w, enum fl_site s, struct fl_tensor **t)
{
	if (w->site)
		w->site(w->site_arg, s, t);
}

static void phase_data_loading(struct fl_workload *w)
{
	if (w->pipeline) {
		fl_pipe_data_loading(w);
		return;
	}
	if (w->moe) {
		fl_moe_data_loading(w);
		return;
	}
	fl_tensor_free(&w->rt, w->x);
	w->x = fl_rt_randn(&w->rt, w->batch, w->dim);
}

static void phase_forward(struct fl_workload *w)
{
	if (w->pipeline) {
		fl_pipe_forward(w);
		return;
	}
	if (w->moe) {
		fl_moe_forward(w);
		return;
	}
	if (w->train) {
		fl_train_forward(w);
		return;
	}
	struct fl_rt *rt = &w->rt;
	struct fl_tensor *h = fl_rt_matmul(rt, w->x, w->w[0]);
	site(w, FL_SITE_PRE_ACTIVATION, &h);
	struct fl_tensor *a = fl_rt_relu(rt, h);
	fl_tensor_free(rt, h);
	site(w, FL_SITE_POST_ACTIVATION, &a);
	site(w, FL_SITE_FORWARD_LAYER, &a);
	struct fl_tensor *y = fl_rt_matmul(rt, a, w->w[1]);
	fl_tensor_free(rt, a);
	site(w, FL_SITE_FORWARD_LAYER, &y);
	site(w, FL_SITE_OUTPUT, &y);
	struct fl_tensor *sq = fl_rt_square(rt, y);
	fl_tensor_free(rt, y);
	fl_tensor_free(rt, w->loss);
	w->loss = fl_rt_mean(rt, sq);
	fl_tensor_free(rt, sq);
}

static void phase_backward(struct fl_workload *w)
{
	if (w->pipeline)
		fl_pipe_backward(w);
	else if (w->moe)
		fl_moe_backward(w);
	else
		fl_train_backward(w);
}

static void phase_optimizer(struct fl_workload *w)
{
	if (w->pipeline)
		fl_pipe_optimizer(w);
	else if (w->moe)
		fl_moe_optimizer(w);
	else
		fl_train_optimizer(w);
}

static void phase_metrics(struct fl_workload *w)
{
	if (w->pipeline) {
		fl_pipe_metrics(w);
		return;
	}
	if (w->moe) {
		fl_moe_metrics(w);
		return;
	}
	if (w->loss)
		w->last_loss = fl_rt_item(&w->rt, w->loss);
}

static const struct {
	const char *name;
	int train_only;
	void (*run)(struct fl_workload *w);
} phases[] = {
	{"data_loading", 0, phase_data_loading},
	{"forward", 0, phase_forward},
	{"backward", 1, phase_backward},
	{"optimizer", 1, phase_optimizer},
	{"metrics", 0, phase_metrics},
};

int fl_workload_has_phase(int train, const char *phase)
{
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		if (strcmp(phases[i].name, phase) == 0)
			return train || !phases[i].train_only;
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
	fl_dev_synchronize(w->rt.be);
	if (w->pipeline)
		fl_pipe_release(w);
	else if (w->moe)
		fl_moe_release(w);
	else if (w->train)
		fl_train_release(w);
	fl_tensor_free(&w->rt, w->x);
	fl_tensor_free(&w->rt, w->loss);
	for (int l = 0; l < w->layers; l++)
		fl_tensor_free(&w->rt, w->w[l]);
	fl_dev_synchronize(w->rt.be);
	memset(w, 0, sizeof(*w));
}

static double healthy_step_ms(struct fl_backend *be, const struct fl_workload_shape *shape,
			      const char *const *ph, size_t n_ph, uint64_t seed)
{
	struct fl_workload w;
	double ms[9];
	struct fl_workload_shape one = *shape;
	one.world = 1; /* a pipeline measured alone is one stage running every micro-batch; an MoE, one expert */
	one.rank = 0;
	fl_workload_init(&w, be, &one, seed);
	w.world = 1; /* calibration measures one rank alone */
	for (int i = 0; i < 3 + 9; i++) {
		uint64_t t0 = fl_clock_ticks();
		for (size_t p = 0; p < n_ph; p++)
			fl_workload_run_phase(&w, ph[p]);
		fl_dev_synchronize(be);
		uint64_t t1 = fl_clock_ticks();
		if (i >= 3)
			ms[i - 3] = (double)fl_clock_delta_ns(t0, t1) / 1e6;
	}
	fl_workload_release(&w);
	return fl_median(ms, 9);
}

void fl_workload_calibrate(struct fl_calibration *c, struct fl_backend *be, const struct fl_workload_shape *shape,
			   const char *const *ph, size_t n_ph, double target_ms, uint64_t seed)
{
	static const int ladder[] = {16,  24,  32,  48,  64,  80,  96,  112, 128, 160, 192, 224, 256, 320,
				     384, 448, 512, 576, 640, 704, 768, 832, 896, 960, 1024};
	memset(c, 0, sizeof(*c));
	c->target_ms = target_ms;
	c->batch = shape->batch;
	c->max_dim = shape->dim;
	c->min_dim = shape->min_dim;
	c->layers = shape->layers;
	c->train = shape->train;
	c->alloc = shape->alloc;
	/* the dims tried: min_dim itself (a scenario's floor), then the ladder's rungs above it */
	int dims[1 + sizeof(ladder) / sizeof(ladder[0])];
	size_t n_dims = 0;
	if (shape->min_dim > 0 && shape->min_dim <= shape->dim)
		dims[n_dims++] = shape->min_dim;
	for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]) && ladder[i] <= shape->dim; i++)
		if (ladder[i] > shape->min_dim)
			dims[n_dims++] = ladder[i];
	double best = INFINITY;
	struct fl_workload_shape s = *shape;
	for (size_t i = 0; i < n_dims && c->n_tries < FL_CALIB_MAX_TRIES; i++) {
		s.dim = dims[i];
		double ms = healthy_step_ms(be, &s, ph, n_ph, seed);
		c->try_dim[c->n_tries] = s.dim;
		c->try_ms[c->n_tries] = ms;
		c->n_tries++;
		double err = fabs(log(ms / target_ms));
		if (err < best) {
			best = err;
			c->dim = s.dim;
			c->measured_ms = ms;
		}
		if (ms > target_ms * 1.5)
			break;
	}
	if (!c->dim) { /* max_dim below the ladder: use it as is */
		c->dim = shape->dim;
		c->measured_ms = healthy_step_ms(be, shape, ph, n_ph, seed);
	}
}

void fl_workload_recheck(struct fl_calibration *c, struct fl_backend *be, const struct fl_workload_shape *shape,
			 const char *const *ph, size_t n_ph, uint64_t seed)
{
	struct fl_workload_shape s = *shape;
	s.dim = c->dim;
	double ms = healthy_step_ms(be, &s, ph, n_ph, seed);
	double reused = c->measured_ms;
	if (fabs(log(ms / c->target_ms)) > log(1 + FL_CALIB_RECHECK_TOL) &&
	    fabs(log(ms / reused)) > log(1 + FL_CALIB_RECHECK_TOL)) {
		fl_workload_calibrate(c, be, shape, ph, n_ph, c->target_ms, seed);
		c->recalibrated = 1;
	}
	c->rechecked = 1;
	c->recheck_ms = ms;
	c->reused_ms = reused;
}
