/* template_fault — ONE LINE: the mechanism, in the words of the catalog.
 *
 * A few lines on what really runs (a sleep, extra ops, a file, a collection),
 * where in the step it runs, and what a learner sees in the trace. Say what
 * init prepares outside the recorded window (buffers, files, calibration).
 *
 * Start a module from this file with scripts/new-fault.sh NAME, which copies
 * it to faults/NAME.c, renames template_fault and adds the registry line.
 * docs/authoring-faults.md explains every part. This file itself is not built.
 */
#include <stdlib.h>

#include "faults/fault.h" /* the one header a fault includes */

/* The schema: every parameter a scenario may set, with its default and range.
 * NUMBER and INT take def/min/max; STRING and STEPS take def_text (STEPS as
 * JSON text: "\"all\"", "[2, 5]" or "{\"every\": 3, \"offset\": 1}"). */
static const struct fl_param_spec params[] = {
	{"ms", FL_PARAM_NUMBER, 20, 0.01, 60000, NULL, "ms", "how long each instance lasts"},
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "which steps are affected"},
	{"span", FL_PARAM_STRING, 0, 0, 0, "work", NULL, "name of the span the work runs in"},
};

struct template_fault_state {
	double last_ms; /* what the hook measured, for its report */
};

/* Called once before any step: check the run (refuse with FL_EINPUT and a
 * message naming the fault), declare spans, allocate and warm everything. */
static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	struct template_fault_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s; /* release() runs even when init fails */
	return fl_svc_declare_span(env->svc, fl_fault_str(f, "span"));
}

static void work(void *arg)
{
	struct template_fault_state *s = arg;
	(void)s;
	/* the real work of one instance goes here */
}

/* Keep the hooks your fault needs and delete the others (and their lines in
 * the ops struct below). */
static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct template_fault_state *s = f->state;
	if (!fl_steps_match(fl_fault_steps(f, "steps"), ctx->step))
		return;
	const char *span = fl_fault_str(f, "span");
	uint64_t t0 = fl_clock_ticks();
	fl_svc_run_span(ctx->svc, span, work, s);
	s->last_ms = (double)fl_clock_delta_ns(t0, fl_clock_ticks()) / 1e6;
	/* requested: what the parameters asked for; measured: what really happened */
	fl_fault_report(f, ctx, span, fl_fault_num(f, "ms"), s->last_ms, "ms");
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_template_fault = {
	.name = "template_fault",
	.summary = "ONE LINE: the mechanism",
	.family = "healthy",   /* a family ID of grader/grading/vocab.c */
	.fix = "none",         /* a fix ID of grader/grading/vocab.c */
	.backends = "cpu emu cuda",
	.needs_train = 0,
	.min_ranks = 0,
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_end = step_end,
	.release = release,
};
