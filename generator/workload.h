/* workload.h — the MLP step that faultline runs for real, and its calibration.
 *
 * Phases (each a user_annotation span, ops nested inside as they run):
 *   data_loading  x = randn(batch, dim)                       (seeded)
 *   forward       y = relu(x·W1)·W2, loss = mean(y²)            (W1, W2: dim×dim)
 *   metrics       a host read of the loss (item)
 * Calibration picks `dim` so that a healthy step lasts about the scenario's
 * target on this machine; the truth records the choice and the measurements.
 */
#ifndef FL_WORKLOAD_H
#define FL_WORKLOAD_H

#include "faults/fault.h"
#include "generator/tensor.h"

struct fl_workload {
	struct fl_rt rt;
	int batch, dim;
	struct fl_tensor *w1, *w2;
	struct fl_tensor *x, *loss;
	double last_loss;
	/* called at the forward pass's fault sites */
	void (*site)(void *arg, enum fl_site site, struct fl_tensor **t);
	void *site_arg;
};

void fl_workload_init(struct fl_workload *w, struct fl_backend *be, enum fl_alloc_policy alloc, int batch,
		      int dim, uint64_t seed);
/* 1 if `phase` names a phase this workload can run. */
int fl_workload_has_phase(const char *phase);
void fl_workload_run_phase(struct fl_workload *w, const char *phase);
void fl_workload_release(struct fl_workload *w);

#define FL_CALIB_MAX_TRIES 20

struct fl_calibration {
	double target_ms;
	int batch, dim, max_dim;
	double measured_ms;               /* median healthy step at the chosen dim */
	enum fl_alloc_policy alloc;
	int n_tries;
	int try_dim[FL_CALIB_MAX_TRIES];
	double try_ms[FL_CALIB_MAX_TRIES];
};

/* Measure healthy steps (untraced) at growing dims up to max_dim and choose the
 * dim whose step time is closest (in ratio) to target_ms. */
void fl_workload_calibrate(struct fl_calibration *c, struct fl_backend *be, enum fl_alloc_policy alloc,
			   int batch, int max_dim, double target_ms, uint64_t seed);

#endif
