/* gc_pause — GC-like pauses from allocation churn.
 *
 * A small mark-and-sweep heap lives beside the workload. Every step allocates
 * objects that stay reachable (the live heap grows) and short-lived ones that
 * become garbage at once. Every Nth step a collection runs inside a span named
 * by the scenario: it really marks the live graph from its roots (pointer
 * chasing in allocation-random order, like a real tracing collector) and sweeps
 * every object, freeing the dead. The pause is real work and grows with the heap.
 *
 * `pause_ms` is the first collection a learner sees: the first one in the
 * recorded window. The heap is sized for it at init, by measurement: a first
 * estimate from a small heap's cost per live and per dead object, then trial
 * collections at the real size (size_heap). A trial at init runs with nothing
 * else going on; the collections of the run follow workload steps, whose
 * memory traffic makes each marked object cost more. So every collection
 * before the window (the warm-up steps) is a measurement too: its cost per
 * object, at the real heap in the real loop, resizes the live heap so the
 * first recorded collection lasts `pause_ms` (retune: the heap is rebuilt at
 * that size in init's layout), all in unrecorded steps. Inside the window nothing is adjusted: the pauses grow as
 * the heap grows (`growth_pct`).
 *
 * Survivors are 512 bytes, so a heap of a few hundred thousand of them is well
 * past the last-level cache: every marked object is a memory access, whatever
 * else the machine's caches hold (a heap straddling the cache size would cost
 * 20x more per object at 3x the size). Short-lived objects are small (a header:
 * 32 bytes), as a loop's temporaries are; the collector never reads past it.
 * Objects live in the heap's own mapped chunks (struct pool), not in the C
 * library's heap, so their layout does not depend on what ran before in the
 * process, and the memory the run will allocate is faulted in before the
 * window: a step pays for allocating, not for the kernel's page faults.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "faults/fault.h"

struct obj {
	struct obj *all_next;  /* every object, for the sweep */
	struct obj *ref[2];    /* ref[0]: root chain; ref[1]: a random older object */
	uint32_t mark;
	uint32_t cls;          /* its size class: 1 a survivor, 0 a short-lived object */
	uint32_t payload[];    /* a survivor's data, which the collector does not scan */
};

/* survivors are 512 bytes; a short-lived object is the header only */
#define LIVE_SIZE 512
#define DEAD_SIZE sizeof(struct obj)

#define N_ROOTS 1024

/* The heap's own memory, as a collected runtime has it (Python's arenas, a
 * JVM's heap) rather than the C library's: objects come from large mapped
 * chunks, a free list per size class takes what the sweep frees, and the
 * layout is the same whatever else the process allocated before (a regen runs
 * the other labs first in the same process). */
#define POOL_CHUNK (64u << 20)
struct pool {
	struct obj *free[2];
	char *cur;
	size_t left;
	void **chunks;
	size_t n_chunks, cap_chunks;
	size_t n_used;     /* chunks[0..n_used) handed out; the rest mapped ahead (pool_reserve) */
};

struct heap {
	struct pool pool;
	struct obj *roots[N_ROOTS];
	struct obj *all;
	struct obj **live_sample; /* random picks for ref[1] */
	size_t n_sample, cap_sample;
	struct obj **stack;
	size_t cap_stack;
	size_t n_live, n_dead;
	uint64_t rng;
	uint32_t epoch;
	/* per-step plan */
	size_t live_per_step, dead_per_step;
	double ns_per_live, ns_per_dead;
};

/* what sizing the heap by measurement found (size_heap) */
struct sizing {
	int rounds;
	double trial_ms, target_ms;
};

/* what retune did before the recorded window */
struct retune {
	int rounds;             /* collections before the window that resized the heap */
	double measured_ms;     /* the last such collection */
	double predicted_ms;    /* what the model said it would last */
	size_t live_before, live_after;
};

struct gc_state {
	struct heap h;
	struct fl_fault *f;
	struct fl_step_ctx *ctx;
	double predicted_ms;
	size_t freed;
	long first_target;      /* the step of the first collection in the recorded window */
	long total_steps;
	double g, churn;
	struct sizing sizing;
	struct retune retune;
};

static void reserve_run(struct gc_state *s, long from_step);

static const struct fl_param_spec params[] = {
	{"period", FL_PARAM_INT, 2, 1, 1000000, NULL, "steps", "a collection every `period` steps"},
	{"offset", FL_PARAM_INT, 1, 0, 999999, NULL, "steps", "collect in steps with step % period == offset"},
	{"pause_ms", FL_PARAM_NUMBER, 35, 0.1, 10000, NULL, "ms", "length of the first collection in the recorded window (sizes the heap)"},
	{"growth_pct", FL_PARAM_NUMBER, 9, 0, 500, NULL, "%", "live-heap growth per collection period, in % of the initial heap"},
	{"churn", FL_PARAM_NUMBER, 4, 0, 100, NULL, "objects", "short-lived objects allocated per surviving object"},
	{"span", FL_PARAM_STRING, 0, 0, 0, "mystery", NULL, "name of the span the collection runs in"},
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One more chunk at the end of the list; `populate`: its pages faulted in now. */
static void pool_map(struct pool *p, int populate)
{
	if (p->n_chunks == p->cap_chunks) {
		size_t cap = p->cap_chunks ? 2 * p->cap_chunks : 16;
		void **c = realloc(p->chunks, cap * sizeof(*c));
		if (!c)
			abort();
		p->chunks = c;
		p->cap_chunks = cap;
	}
	void *m = mmap(NULL, POOL_CHUNK, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
	if (m == MAP_FAILED)
		abort();
	p->chunks[p->n_chunks++] = m;
}

/* Map and fault in, before the recorded window, the memory `bytes` more of
 * allocation will need, so a step in the window takes no page faults for the
 * heap's growth (a runtime's heap is committed ahead too). */
static void pool_reserve(struct pool *p, size_t bytes)
{
	size_t have = p->left + (p->n_chunks - p->n_used) * (size_t)POOL_CHUNK;
	if (p->left) /* the current chunk's rest: touch its pages */
		for (size_t off = 0; off < p->left; off += 4096)
			((volatile char *)p->cur)[off] = 0;
	while (have < bytes) {
		pool_map(p, 1);
		have += POOL_CHUNK;
	}
}

static struct obj *pool_alloc(struct pool *p, int cls)
{
	struct obj *o = p->free[cls];
	if (o) {
		p->free[cls] = o->all_next;
		return o;
	}
	size_t size = cls ? LIVE_SIZE : DEAD_SIZE;
	if (p->left < size) {
		if (p->n_used == p->n_chunks)
			pool_map(p, 0);
		p->cur = p->chunks[p->n_used++];
		p->left = POOL_CHUNK;
	}
	o = (struct obj *)(void *)p->cur;
	p->cur += size;
	p->left -= size;
	return o;
}

static void pool_free(struct pool *p, struct obj *o)
{
	o->all_next = p->free[o->cls];
	p->free[o->cls] = o;
}

static void pool_release(struct pool *p)
{
	for (size_t i = 0; i < p->n_chunks; i++)
		munmap(p->chunks[i], POOL_CHUNK);
	free(p->chunks);
	memset(p, 0, sizeof(*p));
}

static void heap_alloc(struct heap *h, int live)
{
	struct obj *o = pool_alloc(&h->pool, live ? 1 : 0);
	o->cls = live ? 1 : 0;
	o->ref[0] = o->ref[1] = NULL;
	o->mark = h->epoch;
	o->all_next = h->all;
	h->all = o;
	if (!live) {
		h->n_dead++;
		return;
	}
	o->payload[0] = (uint32_t)h->n_live; /* the first word of its data; the rest is left as it comes */
	size_t r = (size_t)(rnd(&h->rng) % N_ROOTS);
	o->ref[0] = h->roots[r];
	h->roots[r] = o;
	if (h->n_sample)
		o->ref[1] = h->live_sample[rnd(&h->rng) % h->n_sample];
	if (h->n_sample < h->cap_sample)
		h->live_sample[h->n_sample++] = o;
	else if (h->cap_sample)
		h->live_sample[rnd(&h->rng) % h->cap_sample] = o;
	h->n_live++;
}

/* Mark from the roots, then sweep: returns the number of objects freed. */
static size_t heap_collect(struct heap *h)
{
	/* the mark stack holds at most every live object (grown if retune grew the heap) */
	if (h->cap_stack < h->n_live + N_ROOTS + 16) {
		size_t cap = h->n_live + h->n_live / 4 + N_ROOTS + 16;
		struct obj **st = realloc(h->stack, cap * sizeof(*st));
		if (!st)
			abort();
		h->stack = st;
		h->cap_stack = cap;
	}
	uint32_t m = ++h->epoch;
	size_t sp = 0;
	for (size_t r = 0; r < N_ROOTS; r++) {
		if (h->roots[r] && h->roots[r]->mark != m && sp < h->cap_stack) {
			h->roots[r]->mark = m;
			h->stack[sp++] = h->roots[r];
		}
		while (sp) {
			struct obj *o = h->stack[--sp];
			for (int k = 0; k < 2; k++) {
				struct obj *c = o->ref[k];
				if (c && c->mark != m && sp < h->cap_stack) {
					c->mark = m;
					h->stack[sp++] = c;
				}
			}
		}
	}
	size_t freed = 0, kept = 0;
	struct obj **pp = &h->all;
	while (*pp) {
		struct obj *o = *pp;
		if (o->mark != m) {
			*pp = o->all_next;
			pool_free(&h->pool, o);
			freed++;
		} else {
			pp = &o->all_next;
			kept++;
		}
	}
	h->n_dead = 0;
	h->n_live = kept;
	return freed;
}

/* Start the heap again with `want` survivors allocated in a row, as init
 * builds it (the same layout, so the same cost per object). */
static void heap_rebuild(struct heap *h, size_t want)
{
	pool_release(&h->pool); /* fresh chunks: the layout init gives */
	h->all = NULL;
	memset(h->roots, 0, sizeof(h->roots));
	h->n_live = h->n_dead = h->n_sample = 0;
	for (size_t i = 0; i < want; i++)
		heap_alloc(h, 1);
}

static void heap_free_all(struct heap *h)
{
	pool_release(&h->pool);
	free(h->stack);
	free(h->live_sample);
	memset(h, 0, sizeof(*h));
}

static int heap_reserve(struct heap *h, size_t max_live)
{
	h->cap_stack = max_live + N_ROOTS + 16;
	h->stack = malloc(h->cap_stack * sizeof(*h->stack));
	h->cap_sample = 1u << 16;
	h->live_sample = malloc(h->cap_sample * sizeof(*h->live_sample));
	return h->stack && h->live_sample;
}

/* Measure the collection cost per live and per dead object on this machine. */
static void calibrate(struct heap *out, uint64_t seed)
{
	struct heap h;
	memset(&h, 0, sizeof(h));
	h.rng = seed | 1;
	const size_t n = 200000;
	heap_reserve(&h, n);
	/* live objects interleaved with garbage, as the steps will leave the heap */
	for (size_t i = 0; i < n; i++) {
		heap_alloc(&h, 1);
		heap_alloc(&h, 0);
	}
	heap_collect(&h); /* frees the garbage, leaving the holes a real heap has */
	for (size_t i = 0; i < n; i++)
		heap_alloc(&h, 0);
	uint64_t t0 = fl_clock_ticks();
	heap_collect(&h);
	uint64_t t1 = fl_clock_ticks();
	double both = (double)fl_clock_delta_ns(t0, t1);
	t0 = fl_clock_ticks();
	heap_collect(&h);
	t1 = fl_clock_ticks();
	out->ns_per_live = (double)fl_clock_delta_ns(t0, t1) / (double)n;
	out->ns_per_dead = (both - out->ns_per_live * (double)n) / (double)n;
	if (out->ns_per_dead < 1)
		out->ns_per_dead = 1;
	heap_free_all(&h);
}

/* Sizing by measurement, at the heap's real size (a small heap's per-object cost
 * underestimates a large one's: more of it misses the caches). The heap starts
 * below its estimate and grows until a trial collection, with the garbage the
 * first real one will find, lasts what it should; each trial is the least of a
 * few timed collections (a preemption only ever adds time). */
#define SIZING_START 0.7      /* of the small-heap estimate: a larger heap costs a little more per object */
#define SIZING_MAX_GROWTH 8.0  /* the most the heap may grow past its start */
#define SIZING_STEP_MAX 1.5    /* the most one round grows it (the cost per object can jump at a cache size) */
#define SIZING_ROUNDS 16
#define SIZING_TOL 0.04
#define SIZING_TRIES 3

static double trial_collect_ns(struct heap *h, size_t garbage)
{
	double best = 0;
	for (int k = 0; k < SIZING_TRIES; k++) {
		for (size_t i = 0; i < garbage; i++)
			heap_alloc(h, 0);
		uint64_t t0 = fl_clock_ticks();
		heap_collect(h);
		uint64_t t1 = fl_clock_ticks();
		double ns = (double)fl_clock_delta_ns(t0, t1);
		if (k == 0 || ns < best)
			best = ns;
	}
	return best;
}

/* Grow the live heap until the first recorded collection would last pause_ns:
 * the `grow_steps` steps up to it add their survivors, the `garbage_steps`
 * since the collection before it their garbage. */
static void size_heap(struct heap *h, double pause_ns, double g, double churn, double period, double grow_steps,
		      double garbage_steps, size_t cap, struct sizing *out)
{
	double steps = garbage_steps;
	/* the survivors of those steps make that collection longer by this factor */
	double target = pause_ns / (1 + grow_steps * g / period);
	double t = 0;
	int r;
	for (r = 0; r < SIZING_ROUNDS; r++) {
		size_t garbage = (size_t)((double)h->n_live * g / period * churn * steps + 0.5);
		t = trial_collect_ns(h, garbage);
		if (t >= target * (1 - SIZING_TOL) || h->n_live >= cap || r == SIZING_ROUNDS - 1)
			break;
		/* the cost per object rises with the heap (caches): step short of the target */
		double grow = target / t;
		grow = grow > SIZING_STEP_MAX ? SIZING_STEP_MAX : 1 + (grow - 1) * 0.9;
		size_t want = (size_t)((double)h->n_live * grow) + 1;
		if (want > cap)
			want = cap;
		while (h->n_live < want)
			heap_alloc(h, 1);
	}
	/* the per-object costs at this size predict the later collections */
	double garbage = (double)h->n_live * g / period * churn * steps;
	double live_ns = t - garbage * h->ns_per_dead;
	if (live_ns > 0)
		h->ns_per_live = live_ns / (double)h->n_live;
	out->rounds = r + 1;
	out->trial_ms = t / 1e6;
	out->target_ms = target / 1e6;
}

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (fl_fault_num(f, "offset") >= fl_fault_num(f, "period"))
		return fl_error(FL_EINPUT, "fault '%s': offset %g must be below period %g", f->ops->name,
				fl_fault_num(f, "offset"), fl_fault_num(f, "period"));
	struct gc_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->f = f;
	struct heap *h = &s->h;
	h->rng = f->seed * 2654435761u + 12345;
	calibrate(h, h->rng);
	double period = fl_fault_num(f, "period"), pause_ns = fl_fault_num(f, "pause_ms") * 1e6;
	double g = fl_fault_num(f, "growth_pct") / 100.0, churn = fl_fault_num(f, "churn");
	/* first collection: a·L0 + b·(churn·g·L0) = pause, with a and b from the small
	 * heap of calibrate(); the real heap is larger (more cache misses per object),
	 * so that estimate is only where the sizing starts */
	double per_l0 = h->ns_per_live + h->ns_per_dead * churn * g;
	size_t l0 = (size_t)(SIZING_START * pause_ns / per_l0);
	if (l0 < 1000)
		l0 = 1000;
	/* room for the largest heap the sizing may reach, and for every step's survivors */
	size_t cap = (size_t)((double)l0 * SIZING_MAX_GROWTH);
	size_t max_live = cap + (size_t)((double)cap * g / period + 1.0) * (size_t)(env->total_steps + 1);
	if (!heap_reserve(h, max_live))
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory sizing the heap", f->ops->name);
	for (size_t i = 0; i < l0; i++)
		heap_alloc(h, 1);
	/* the first collection inside the recorded window */
	long offset = (long)fl_fault_num(f, "offset"), per = (long)period;
	long first = env->first_recorded > 0 ? env->first_recorded : 0;
	s->first_target = first + ((offset - first % per) % per + per) % per;
	double garbage_steps = s->first_target < per ? (double)s->first_target + 1 : period;
	s->g = g;
	s->churn = churn;
	size_heap(h, pause_ns, g, churn, period, (double)s->first_target + 1, garbage_steps, cap, &s->sizing);
	h->live_per_step = (size_t)((double)h->n_live * g / period + 0.5);
	h->dead_per_step = (size_t)((double)h->live_per_step * churn + 0.5);
	s->total_steps = env->total_steps;
	reserve_run(s, 0);
	return fl_svc_declare_span(env->svc, fl_fault_str(f, "span"));
}

/* The memory the rest of the run allocates: every remaining step's survivors,
 * and a period's garbage (the sweep returns it to the free list). */
static void reserve_run(struct gc_state *s, long from_step)
{
	struct heap *h = &s->h;
	double period = fl_fault_num(s->f, "period");
	long steps = s->total_steps - from_step + 1;
	size_t bytes = (size_t)steps * h->live_per_step * LIVE_SIZE +
		       (size_t)(period + 1) * h->dead_per_step * DEAD_SIZE;
	pool_reserve(&h->pool, bytes);
}

/* A collection before the recorded window measured `ms` at `live` survivors and
 * `dead` garbage: its cost per object, in the real loop (after workload steps
 * and their allocations, which a trial at init does not have), sizes the live
 * heap so the first recorded collection (s->first_target) lasts pause_ms. The
 * heap is rebuilt at that size in the layout init gives it, so the measured
 * cost per object holds for it. */
#define RETUNE_TOL 0.03
#define RETUNE_MAX 4.0

static void retune(struct gc_state *s, long step, size_t live, size_t dead, double predicted_ms, double ms)
{
	struct heap *h = &s->h;
	double period = fl_fault_num(s->f, "period"), pause_ns = fl_fault_num(s->f, "pause_ms") * 1e6;
	double ratio = h->ns_per_live > 0 ? h->ns_per_dead / h->ns_per_live : 0;
	double units = (double)live + (double)dead * ratio;
	if (units <= 0 || ms <= 0)
		return;
	double a = ms * 1e6 / units; /* ns per live object, as measured */
	double togo = (double)(s->first_target - step);
	double garbage_steps = togo < period ? togo : period;
	double per_live = 1 + s->g / period * togo + s->churn * s->g / period * garbage_steps * ratio;
	double want_f = pause_ns / (a * per_live);
	/* one collection is one measurement: a preemption in it (a loaded
	 * machine) must not shrink the heap to nothing, nor a lucky one blow
	 * it up — the heap moves by at most RETUNE_MAX either way */
	double cur = (double)h->n_live;
	if (want_f < cur / RETUNE_MAX)
		want_f = cur / RETUNE_MAX;
	if (want_f > cur * RETUNE_MAX)
		want_f = cur * RETUNE_MAX;
	size_t want = (size_t)(want_f + 0.5);
	if (want < 1000)
		want = 1000;
	s->retune.rounds++;
	s->retune.measured_ms = ms;
	s->retune.predicted_ms = predicted_ms;
	s->retune.live_before = h->n_live;
	if (fabs((double)want - (double)h->n_live) >= RETUNE_TOL * (double)h->n_live)
		heap_rebuild(h, want);
	h->ns_per_live = a;
	h->ns_per_dead = a * ratio;
	h->live_per_step = (size_t)((double)h->n_live * s->g / period + 0.5);
	h->dead_per_step = (size_t)((double)h->live_per_step * s->churn + 0.5);
	s->retune.live_after = h->n_live;
	reserve_run(s, step + 1);
}

static void collect_in_span(void *arg)
{
	struct gc_state *s = arg;
	s->freed = heap_collect(&s->h);
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct gc_state *s = f->state;
	struct heap *h = &s->h;
	/* churn: survivors and garbage, every step */
	for (size_t i = 0; i < h->live_per_step; i++) {
		heap_alloc(h, 1);
		for (size_t k = 0; k < h->dead_per_step / (h->live_per_step ? h->live_per_step : 1); k++)
			heap_alloc(h, 0);
	}
	long period = (long)fl_fault_num(f, "period"), offset = (long)fl_fault_num(f, "offset");
	if (ctx->step % period != offset)
		return;
	size_t live = h->n_live, dead = h->n_dead;
	double predicted = ((double)live * h->ns_per_live + (double)dead * h->ns_per_dead) / 1e6;
	uint64_t t0 = fl_clock_ticks();
	fl_svc_run_span(ctx->svc, fl_fault_str(f, "span"), collect_in_span, s);
	uint64_t t1 = fl_clock_ticks();
	double ms = (double)fl_clock_delta_ns(t0, t1) / 1e6;
	struct fl_instance *in = fl_fault_report(f, ctx, fl_fault_str(f, "span"), predicted, ms, "ms");
	if (!ctx->recorded && ctx->step < s->first_target)
		retune(s, ctx->step, live, dead, predicted, ms);
	if (in) {
		in->extra_name[0] = "live_objects";
		in->extra[0] = (double)live;
		in->extra_name[1] = "freed_objects";
		in->extra[1] = (double)s->freed;
	}
}

static void release(struct fl_fault *f)
{
	struct gc_state *s = f->state;
	if (!s)
		return;
	heap_free_all(&s->h);
	free(s);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_gc_pause = {
	.name = "gc_pause",
	.summary = "GC-like pause: allocation churn every step, a real mark-and-sweep collection every Nth step",
	.family = "gc_pause",
	.fix = "gc_control",
	.backends = "cpu emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_end = step_end,
	.release = release,
};
