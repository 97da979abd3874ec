/* workload.h — the model step faultline runs for real, and its calibration.
 *
 * Inference (R7–R9):
 *   data_loading  x = randn(batch, dim) on the host (then to the device on async backends)
 *   forward       y = relu(x·W1)·W2, loss = mean(y²)
 *   metrics       a host read of the loss (item)
 * Training (multi-rank DDP shape), `layers` dim×dim linear+relu layers:
 *   data_loading  as above
 *   forward       h_{l+1} = relu(h_l·W_l), loss = mean(h_L²)
 *   backward      real gradient GEMMs, last layer first; with DDP overlap each
 *                 layer's gradient is all-reduced on the comm stream as soon as
 *                 it is ready (one bucket per layer), else all at once at the end
 *   optimizer     waits for the all-reduce, then SGD on every layer
 *   metrics       a host read of the loss
 * Pipeline-parallel training (kind "pipeline", pipeline.c): the ranks are the
 * stages of one model, each holding `layers` layers; the batch is split into
 * `microbatches` micro-batches run in the GPipe schedule (every micro-batch's
 * forward, then every micro-batch's backward). Activations go forward and their
 * gradients backward between neighbouring stages as point-to-point transfers
 * on the comm stream; the compute stream waits for each one it needs.
 *   data_loading  the batch (first stage only)
 *   forward       per micro-batch: receive, layers, send (the last stage: loss)
 *   backward      per micro-batch: receive the gradient, layers, send it on
 *   optimizer     SGD on this stage's layers (no data-parallel all-reduce)
 *   metrics       every stage waits for its device; the last one reads the loss
 * Expert-parallel mixture of experts (kind "moe", moe.c): every rank holds one
 * expert (two dim×dim layers); each step a router assigns the rank's tokens to
 * the experts and real all-to-alls on the comm stream move them there and back.
 *   data_loading  the batch (every rank)
 *   forward       router, count exchange (read back), dispatch all-to-all, the
 *                 expert's GEMMs over the rows it received, combine all-to-all, loss
 *   backward      the loss gradient to the experts (all-to-all), the expert's gradient GEMMs
 *   optimizer     SGD on the expert (no data-parallel all-reduce: no shared layer is trained)
 *   metrics       a host read of this rank's loss
 * Calibration picks `dim` so that a healthy step lasts about the scenario's
 * target on this machine; the truth records the choice and the measurements.
 */
#ifndef FL_WORKLOAD_H
#define FL_WORKLOAD_H

#include "faults/fault.h"
#include "runtime/tensor.h"

#define FL_MAX_LAYERS 16

struct fl_workload {
	struct fl_rt rt;
	int train;
	int batch, dim, layers;
	int world;                /* ranks taking part in the gradient all-reduce */
	int ddp_overlap;          /* 1: bucketed during backward; 0: after it (a fault sets it through the harness) */
	float lr;
	/* pipeline: this rank's stage of `stages`, and the micro-batches of a step */
	int pipeline, stage, stages, microbatches;
	struct fl_pipe *pipe;
	struct fl_moe *moe;       /* a mixture of experts (kind "moe"); NULL otherwise */
	struct fl_tensor *w[FL_MAX_LAYERS];
	struct fl_tensor *act[FL_MAX_LAYERS + 1]; /* training: saved activations, act[0] = x */
	struct fl_tensor *grads;  /* training: flat gradient buffer, layers × dim × dim */
	struct fl_tensor *x, *loss;
	double last_loss;
	/* called at the fault sites */
	void (*site)(void *arg, enum fl_site site, struct fl_tensor **t);
	void *site_arg;
};

struct fl_workload_shape {
	int train;
	int pipeline, rank, microbatches; /* pipeline: stages = world */
	int moe;                          /* a mixture of experts: experts = world */
	int batch, dim, layers, world;
	int min_dim;                      /* calibration: the smallest dim it may choose (0: any) */
	enum fl_alloc_policy alloc;
};

void fl_workload_init(struct fl_workload *w, struct fl_backend *be, const struct fl_workload_shape *shape,
		      uint64_t seed);
/* 1 if `phase` names a phase of this mode (train or inference). */
int fl_workload_has_phase(int train, const char *phase);
void fl_workload_run_phase(struct fl_workload *w, const char *phase);
void fl_workload_release(struct fl_workload *w);

/* the training kernels (train.c), shared with the pipeline workload: scale
 * (out = a·scalar), relu_back (out = a ⊙ (b > 0)), gemm_tn (out (+)= aᵀb,
 * accumulating when scalar != 0), gemm_nt (out = a·bᵀ), sgd (out -= scalar·a) */
extern const struct fl_kernel fl_train_k_scale, fl_train_k_relu_back, fl_train_k_gemm_tn, fl_train_k_gemm_nt,
	fl_train_k_sgd;

/* training phases (train.c) */
void fl_train_forward(struct fl_workload *w);
void fl_train_backward(struct fl_workload *w);
void fl_train_optimizer(struct fl_workload *w);
void fl_train_alloc(struct fl_workload *w);
void fl_train_release(struct fl_workload *w);

/* pipeline phases (pipeline.c) */
void fl_pipe_alloc(struct fl_workload *w);
void fl_pipe_release(struct fl_workload *w);
void fl_pipe_data_loading(struct fl_workload *w);
void fl_pipe_forward(struct fl_workload *w);
void fl_pipe_backward(struct fl_workload *w);
void fl_pipe_optimizer(struct fl_workload *w);
void fl_pipe_metrics(struct fl_workload *w);
/* Run `m` micro-batches per step from now on (before a step, outside the
 * recorded window: the buffers are reallocated). FL_EINPUT when the workload
 * is not a pipeline or m is not in [1, batch]. */
enum fl_status fl_pipe_set_microbatches(struct fl_workload *w, int m);

/* mixture-of-experts phases (moe.c) */
void fl_moe_alloc(struct fl_workload *w);
void fl_moe_release(struct fl_workload *w);
void fl_moe_data_loading(struct fl_workload *w);
void fl_moe_forward(struct fl_workload *w);
void fl_moe_backward(struct fl_workload *w);
void fl_moe_optimizer(struct fl_workload *w);
void fl_moe_metrics(struct fl_workload *w);
/* Route `share` of every rank's tokens to expert `hot` (rank hot's) and the
 * rest evenly to the others, from now on (before a step, outside the window).
 * FL_EINPUT when the workload is not a mixture of experts, or hot or share is
 * out of range. */
enum fl_status fl_moe_set_skew(struct fl_workload *w, int hot, double share);
/* The rows this rank's expert received in the last step (0: not a mixture of experts). */
long fl_moe_received(const struct fl_workload *w);

#define FL_CALIB_MAX_TRIES 25

struct fl_calibration {
	double target_ms;
	int batch, dim, min_dim, max_dim, layers, train;
	double measured_ms;               /* median healthy step at the chosen dim */
	enum fl_alloc_policy alloc;
	int n_tries;
	int try_dim[FL_CALIB_MAX_TRIES];
	double try_ms[FL_CALIB_MAX_TRIES];
	/* a calibration reused from an earlier scenario (regen) is re-checked
	 * right before this one runs: the healthy step at its dim, measured again */
	int rechecked, recalibrated;
	double recheck_ms, reused_ms;     /* now; what the reused calibration had measured */
	/* rank 0's core probe (fl_rt_core_probe_ms) right after calibrating, to
	 * tell whether the machine kept its speed; 0: not taken */
	double probe_ms;
};

/* Measure healthy single-rank steps (untraced) at growing dims from min_dim
 * (shape->min_dim) up to max_dim (shape->dim) and choose the dim whose step
 * time is closest (in ratio) to target_ms. */
void fl_workload_calibrate(struct fl_calibration *c, struct fl_backend *be, const struct fl_workload_shape *shape,
			   const char *const *phases, size_t n_phases, double target_ms, uint64_t seed);
/* Re-check a reused calibration right before a scenario: measure the healthy
 * step at c->dim again; when it is off the target by more than
 * FL_CALIB_RECHECK_TOL (the machine changed: another load, a slower VM
 * moment), calibrate again from scratch. Records both in c. */
#define FL_CALIB_RECHECK_TOL 0.25
void fl_workload_recheck(struct fl_calibration *c, struct fl_backend *be, const struct fl_workload_shape *shape,
			 const char *const *phases, size_t n_phases, uint64_t seed);

#endif
