/* alloc_churn — allocator stalls: large workspaces allocated and freed in the
 * middle of every step, past the caching allocator.
 *
 * After each forward layer (up to `allocs` per step) the step takes a fresh
 * workspace of `mb` megabytes and gives it back at once, as a runtime without
 * a caching allocator (or with it disabled) does for a big temporary. Each is
 * an fl::empty op: on emu a cudaMalloc whose pages really come from the OS and
 * are faulted in (mmap + first touch), then a cudaFree that waits for the
 * device to drain and unmaps them; on cuda the real cudaMalloc and cudaFree
 * (which synchronizes); on cpu the host allocator's mmap, first touch and
 * munmap. The device idles behind each free while the host maps pages. */
#include <stdlib.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"allocs", FL_PARAM_INT, 2, 1, 64, NULL, "allocs", "workspace allocations (and frees) per step"},
	{"mb", FL_PARAM_NUMBER, 16, 0.25, 2048, NULL, "MB", "size of each workspace"},
	{"steps", FL_PARAM_STEPS, 0, 0, 0, "\"all\"", NULL, "which steps churn"},
};

struct churn_state {
	long step;
	int done;            /* allocations this step */
	int sites, site;     /* forward-layer sites per step, the current one */
	uint64_t ns;         /* time in the allocator (alloc + free) this step */
	int rows, cols;
};

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	struct churn_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->step = -1;
	s->sites = env->train ? env->layers : 2;
	s->cols = 1024; /* rows × 1024 floats: mb × 256 rows */
	s->rows = (int)(fl_fault_num(f, "mb") * 256.0 + 0.5);
	if (s->rows < 1)
		s->rows = 1;
	return FL_OK;
}

static void churn(struct churn_state *s, struct fl_rt *rt)
{
	uint64_t t0 = fl_clock_ticks();
	struct fl_tensor *ws = fl_rt_empty_uncached(rt, s->rows, s->cols);
	fl_tensor_free(rt, ws);
	s->ns += fl_clock_delta_ns(t0, fl_clock_ticks());
	s->done++;
}

static void site(struct fl_fault *f, struct fl_step_ctx *ctx, enum fl_site where, struct fl_tensor **t)
{
	struct churn_state *s = f->state;
	(void)t;
	if (where != FL_SITE_FORWARD_LAYER || !fl_steps_match(fl_fault_steps(f, "steps"), ctx->step))
		return;
	if (s->step != ctx->step) {
		s->step = ctx->step;
		s->done = 0;
		s->site = 0;
		s->ns = 0;
	}
	int allocs = (int)fl_fault_num(f, "allocs");
	s->site++;
	/* spread the allocations over the step's forward layers */
	int due = s->site >= s->sites ? allocs : (int)((long)s->site * allocs / s->sites);
	while (s->done < due)
		churn(s, ctx->rt);
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct churn_state *s = f->state;
	if (s->step != ctx->step)
		return;
	/* requested and measured: allocations this step */
	struct fl_instance *in = fl_fault_report(f, ctx, "forward", fl_fault_num(f, "allocs"), (double)s->done, "allocs");
	if (in) {
		in->extra_name[0] = "allocator_ms";
		in->extra[0] = (double)s->ns / 1e6;
		in->extra_name[1] = "MB";
		in->extra[1] = (double)s->rows * s->cols * 4.0 / 1e6 * s->done;
	}
}

static void release(struct fl_fault *f)
{
	free(f->state);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_alloc_churn = {
	.name = "alloc_churn",
	.summary = "allocator stalls: large workspaces allocated and freed mid-step, past the caching allocator",
	.family = "alloc_stall",
	.fix = "preallocate",
	.backends = "cpu emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.site = site,
	.step_end = step_end,
	.release = release,
};
