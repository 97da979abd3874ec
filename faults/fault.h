/* fault.h — the fault module interface.
 *
 * A fault is one ops struct in the registry table (faults/registry.c): a name,
 * a one-line summary, its catalog family and fix IDs (CATALOG.md), a parameter
 * schema, and hooks the harness calls at fixed points. Any hook may be NULL.
 * A fault never writes trace events: it changes what runs (sleeps, extra ops,
 * real allocation and collection work) and the capture layer records what ran.
 * It reports every injected instance with fl_fault_report().
 */
#ifndef FL_FAULT_H
#define FL_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

struct fl_rt;
struct fl_tensor;
struct fl_harness;
struct fl_backend;

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
};

struct fl_instance {
	long step;
	const char *phase;
	double requested, measured;
	const char *unit;
	int recorded;            /* the step is inside the recorded window */
	const char *extra_name[2];
	double extra[2];
};

/* What the hooks see at each call. */
struct fl_step_ctx {
	long step;               /* global step number (0 = first run step) */
	int recorded;
	const char *phase;       /* current phase (phase hooks) */
	struct fl_rt *rt;        /* run extra ops through the workload runtime */
	struct fl_harness *harness;
};

/* Facts about the run a fault may check or use at init. */
struct fl_fault_env {
	const char *backend;
	struct fl_backend *device;   /* the opened device backend */
	int rank, world_size;
	int train;                   /* the workload trains (has backward, optimizer) */
	int layers;                  /* model layers (forward/backward layer sites per step) */
	int *ddp_overlap;            /* the workload's gradient all-reduce schedule knob */
	const char *const *phases; /* the workload's phase names */
	size_t n_phases;
	long total_steps;
	struct fl_harness *harness; /* to declare span names */
};

struct fl_fault;

struct fl_fault_ops {
	const char *name;
	const char *summary;
	const char *family;      /* catalog family ID */
	const char *fix;         /* catalog fix ID */
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

/* Run fn inside a user_annotation span named `span` (a named region of the
 * program, as record_function makes). Implemented by the harness. */
void fl_harness_run_span(struct fl_harness *h, const char *span, void (*fn)(void *), void *arg);
/* Intern a span name before the window (so the hot path never allocates). */
void fl_harness_declare_span(struct fl_harness *h, const char *span);

/* The registry. */
extern const struct fl_fault_ops *const fl_faults[];
const struct fl_fault_ops *fl_fault_find(const char *name);

#endif
