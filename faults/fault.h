/* fault.h — the fault module interface, the one header a fault module includes.
 *
 * A fault is one ops struct in the registry table (faults/registry.c): a name,
 * a one-line summary, its catalog family and fix IDs (the grader's vocabulary,
 * grader/grading/vocab.c), what it needs of a run, a parameter schema, and hooks
 * the harness calls at fixed points. Any hook may be NULL.
 * A fault never writes trace events: it changes what runs (sleeps, extra ops,
 * real allocation, collection and file work) and the capture layer records what
 * ran. It reports every injected instance with fl_fault_report().
 *
 * A fault reaches the run only through what this header names: the eager tensor
 * runtime (runtime/tensor.h: ctx->rt), the clock (capture/clock.h) and the
 * services table the harness hands it (struct fl_services, in env and ctx).
 * It never includes a generator/ header. docs/authoring-faults.md walks
 * through writing one.
 */
#ifndef FL_FAULT_H
#define FL_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include "capture/clock.h"
#include "common/status.h"
#include "runtime/tensor.h"

enum fl_param_type {
	FL_PARAM_NUMBER, /* a real number in [min, max] */
	FL_PARAM_INT,    /* an integer in [min, max] */
	FL_PARAM_STRING, /* a name, e.g. a phase or a span name */
	FL_PARAM_STEPS,  /* "all", a list of step numbers, or {"every": N, "offset": K} */
};

struct fl_param_spec {
	const char *name;
	enum fl_param_type type;
	double def, min, max;    /* NUMBER and INT */
	const char *def_text;    /* STRING and STEPS default, as JSON text for STEPS */
	const char *unit;        /* "ms", "ops", ... or NULL */
	const char *meaning;
};

struct fl_steps {
	int all;
	long every, offset;   /* every > 0: steps with step % every == offset */
	long *list;           /* explicit step numbers */
	size_t n;
};
int fl_steps_match(const struct fl_steps *s, long step);
/* "all" | "every 3 from 2" | "2, 5, 8" */
void fl_steps_describe(const struct fl_steps *s, char *buf, size_t n);

struct fl_param_value {
	double num;
	const char *str;      /* owned by the scenario document */
	struct fl_steps steps;
};

/* Points inside the workload's forward pass where a fault may run extra ops. */
enum fl_site {
	FL_SITE_PRE_ACTIVATION,  /* on the first layer's pre-activation tensor, before relu */
	FL_SITE_POST_ACTIVATION, /* on the first layer's activation, after relu */
	FL_SITE_FORWARD_LAYER,   /* after each forward layer (*t: its activation) */
	FL_SITE_BACKWARD_LAYER,  /* after each backward layer (*t: the gradient buffer; do not replace) */
	FL_SITE_OUTPUT,          /* on the model's output, after the last layer, before the loss */
};

/* One injected instance, as the truth lists it: what the fault asked for and
 * what really happened, in one unit ("ms", "ops", "x", "MB"), in the step and
 * phase (or span) where it happened. Up to two extra named numbers (e.g. the
 * measured milliseconds of an instance counted in ops). */
struct fl_instance {
	long step;
	const char *phase;
	double requested, measured;
	const char *unit;
	int recorded;            /* the step is inside the recorded window */
	const char *extra_name[2];
	double extra[2];
};

/* What the harness does for a fault. Every service takes `host` (the harness's
 * own state) first; the fl_svc_* wrappers below pass it. The table is valid from
 * init to release and is the same in env and ctx.
 *
 * Spans: a fault names each span it will run code in at init (declare_span,
 * which interns the name so the recorded window never allocates). A full span
 * table or a span never declared fails the run (exit 2) naming the fault and
 * the span: declaring fails at init; running an undeclared span fails the run
 * the first time it is asked for. */
struct fl_services {
	void *host;
	/* at init only: make `span` a span name this fault may run code in */
	enum fl_status (*declare_span)(void *host, const char *span);
	/* run fn(arg) inside a user_annotation span named `span` (a named region of
	 * the program, as record_function makes) */
	void (*run_span)(void *host, const char *span, void (*fn)(void *arg), void *arg);
	/* copy all of t's bytes (t->bytes) into host memory dst, as a host read of a
	 * device value does: a device-to-host copy on the compute stream, then a
	 * stream synchronize (recorded as an fl::copy_ op) */
	void (*to_host)(void *host, void *dst, const struct fl_tensor *t);
	/* the model's weight tensors, first layer first; *n gets their count. They
	 * live on the device and the optimizer updates them in place. */
	struct fl_tensor *const *(*weights)(void *host, size_t *n);
	/* slow every compute kernel of this rank's device by `factor` (a
	 * clock-throttled device); FL_EINPUT when the device has no clock to slow */
	enum fl_status (*set_clock_factor)(void *host, double factor);
	/* this rank's device statistics so far; 0 when the device keeps none */
	int (*device_stats)(void *host, struct fl_device_stats *out);
	/* the gradient all-reduce schedule from now on: 1 bucket by bucket during
	 * backward (overlapped with it), 0 all at once after the last backward op */
	void (*set_allreduce_overlap)(void *host, int overlapped);
	/* carry this rank's collectives from now on over an emulated link of `gbps`
	 * Gbit/s (the device paces the real transfer); FL_EINPUT when the device
	 * has no emulated link (env->link_emulated says beforehand) */
	enum fl_status (*set_link_gbps)(void *host, double gbps);
	/* a pipeline workload: run `m` micro-batches per step from now on (at init:
	 * the buffers are reallocated); FL_EINPUT when the workload is not a
	 * pipeline or m is not in [1, batch] (env->pipeline_stages says beforehand) */
	enum fl_status (*set_microbatches)(void *host, int m);
	/* a mixture-of-experts workload: route `share` of every rank's tokens to
	 * expert `hot` (rank hot's) and the rest evenly to the other experts, from
	 * now on (at init: before the first step); FL_EINPUT when the workload is
	 * not one (env->experts says beforehand) or hot or share is out of range */
	enum fl_status (*set_expert_skew)(void *host, int hot, double share);
	/* a mixture-of-experts workload: the token rows this rank's expert
	 * received in the last step's dispatch all-to-all; 0 otherwise */
	long (*expert_tokens)(void *host);
	/* folders: scratch is this rank's own, empty at the start and removed after
	 * the run (files a fault needs: never seen by the learner); out is where
	 * the traces and the truth go (a file there is part of what learners get) */
	const char *scratch_dir;
	const char *out_dir;
};

static inline __attribute__((warn_unused_result)) enum fl_status fl_svc_declare_span(const struct fl_services *s,
										       const char *span)
{
	return s->declare_span(s->host, span);
}
static inline void fl_svc_run_span(const struct fl_services *s, const char *span, void (*fn)(void *arg), void *arg)
{
	s->run_span(s->host, span, fn, arg);
}
static inline void fl_svc_to_host(const struct fl_services *s, void *dst, const struct fl_tensor *t)
{
	s->to_host(s->host, dst, t);
}
static inline struct fl_tensor *const *fl_svc_weights(const struct fl_services *s, size_t *n)
{
	return s->weights(s->host, n);
}
static inline __attribute__((warn_unused_result)) enum fl_status fl_svc_set_clock_factor(const struct fl_services *s,
											   double factor)
{
	return s->set_clock_factor(s->host, factor);
}
static inline int fl_svc_device_stats(const struct fl_services *s, struct fl_device_stats *out)
{
	return s->device_stats(s->host, out);
}
static inline __attribute__((warn_unused_result)) enum fl_status fl_svc_set_microbatches(const struct fl_services *s,
											  int m)
{
	return s->set_microbatches(s->host, m);
}
static inline __attribute__((warn_unused_result)) enum fl_status fl_svc_set_expert_skew(const struct fl_services *s,
											  int hot, double share)
{
	return s->set_expert_skew(s->host, hot, share);
}
static inline long fl_svc_expert_tokens(const struct fl_services *s) { return s->expert_tokens(s->host); }
static inline void fl_svc_set_allreduce_overlap(const struct fl_services *s, int overlapped)
{
	s->set_allreduce_overlap(s->host, overlapped);
}
static inline __attribute__((warn_unused_result)) enum fl_status fl_svc_set_link_gbps(const struct fl_services *s,
											double gbps)
{
	return s->set_link_gbps(s->host, gbps);
}

/* What the hooks see at each call. */
struct fl_step_ctx {
	long step;               /* global step number (0 = first run step) */
	int recorded;            /* the step is inside the recorded window */
	const char *phase;       /* current phase (phase hooks and sites; NULL in step hooks) */
	struct fl_rt *rt;        /* run extra ops through the workload runtime (runtime/tensor.h) */
	const struct fl_services *svc;
};

/* Facts about the run a fault may check or use at init. */
struct fl_fault_env {
	const char *backend;         /* the opened device backend's name */
	int asynchronous;            /* the device runs kernels asynchronously (emu, cuda) */
	int clock_factor;            /* the device's clock can be slowed (set_clock_factor) */
	int link_emulated;           /* the device's collectives can be paced (set_link_gbps) */
	int rank, world_size;
	int train;                   /* the workload trains (has backward, optimizer) */
	int layers;                  /* model layers (forward/backward layer sites per step) */
	int pipeline_stages;         /* a pipeline workload: its stages (= ranks); 0: not a pipeline */
	int microbatches;            /* a pipeline workload: the scenario's micro-batches per step */
	int experts;                 /* a mixture-of-experts workload: its experts (= ranks); 0: not one */
	int batch;                   /* rows per step */
	const char *const *phases;   /* the workload's phase names */
	size_t n_phases;
	long total_steps;
	long first_recorded;         /* the first step of the recorded window */
	const struct fl_services *svc;
};

struct fl_fault;

struct fl_fault_ops {
	const char *name;
	const char *summary;
	const char *family;      /* catalog family ID (a term of the "families" vocabulary) */
	const char *fix;         /* catalog fix ID (a term of the "fixes" vocabulary) */
	/* What a run needs for this fault to make sense. The every-fault test builds
	 * its smoke runs from these; init still refuses a run it cannot use, with a
	 * message saying why. */
	const char *backends;    /* the backends it runs on, space-separated: "cpu emu cuda" */
	int needs_train;         /* a training workload (workload.mode "train") */
	int min_ranks;           /* ranks it needs (0 or 1: any) */
	const char *workload;    /* the workload.kind it needs ("pipeline", "moe"); NULL: the default "mlp" */
	const struct fl_param_spec *params;
	size_t n_params;
	/* called once before any step; may refuse the run (wrong backend, bad phase) */
	enum fl_status (*init)(struct fl_fault *f, const struct fl_fault_env *env);
	/* called at the start of every step, before the first phase */
	void (*step_begin)(struct fl_fault *f, struct fl_step_ctx *ctx);
	/* called just inside a phase's span, before the phase's own work */
	void (*phase_begin)(struct fl_fault *f, struct fl_step_ctx *ctx);
	/* called at a site inside the forward pass; may replace *t (the old tensor is then freed by the fault) */
	void (*site)(struct fl_fault *f, struct fl_step_ctx *ctx, enum fl_site site, struct fl_tensor **t);
	/* called just inside a phase's span, after the phase's own work */
	void (*phase_end)(struct fl_fault *f, struct fl_step_ctx *ctx);
	/* called at the end of every step, inside the step's span */
	void (*step_end)(struct fl_fault *f, struct fl_step_ctx *ctx);
	/* called once after the run; frees the state */
	void (*release)(struct fl_fault *f);
};

struct fl_fault {
	const struct fl_fault_ops *ops;
	struct fl_param_value *params; /* aligned with ops->params */
	void *state;
	struct fl_instance *inst;      /* pre-allocated before the window */
	size_t n_inst, cap_inst;
	uint64_t seed;
};

/* Parameter access by name (aborts on a name the schema lacks: a bug). */
double fl_fault_num(const struct fl_fault *f, const char *name);
const char *fl_fault_str(const struct fl_fault *f, const char *name);
const struct fl_steps *fl_fault_steps(const struct fl_fault *f, const char *name);

/* Record one injected instance; never allocates (extra instances are counted). */
struct fl_instance *fl_fault_report(struct fl_fault *f, const struct fl_step_ctx *ctx, const char *phase,
				    double requested, double measured, const char *unit);

/* 1 if `backend` is one of the names in ops->backends. */
int fl_fault_supports(const struct fl_fault_ops *ops, const char *backend);

/* The registry. */
extern const struct fl_fault_ops *const fl_faults[];
const struct fl_fault_ops *fl_fault_find(const char *name);

#endif
