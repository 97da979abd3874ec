/* device_metrics.c — see device_metrics.h (and docs/analyze.md for the
 * differences from HTA, each deliberate). */
#include "grader/device_metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grader/trace_stream.h"

#define ITER_NAN INT32_MIN /* HTA leaves the iteration of such rows NaN */

/* ------------------------------------------------------------ small helpers */

static void *xalloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort(); /* as strbuf: out of memory is not recoverable here */
	return q;
}

#define GROW(arr, n, cap)                                                      \
	do {                                                                   \
		if ((n) == (cap)) {                                            \
			(cap) = (cap) ? 2 * (cap) : 256;                       \
			(arr) = xalloc((arr), (cap) * sizeof(*(arr)));          \
		}                                                              \
	} while (0)

/* int64 -> int32 map (open addressing), for correlations */
struct imap {
	int64_t *key;
	int32_t *val;
	size_t cap, n; /* cap: a power of two */
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static void imap_init(struct imap *m, size_t expect)
{
	size_t cap = 64;
	while (cap < 2 * expect + 2)
		cap *= 2;
	m->cap = cap;
	m->n = 0;
	m->key = xalloc(NULL, cap * sizeof(*m->key));
	m->val = xalloc(NULL, cap * sizeof(*m->val));
	for (size_t i = 0; i < cap; i++)
		m->val[i] = INT32_MIN; /* empty */
}

static void imap_free(struct imap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

/* The slot of key k (found or empty). */
static size_t imap_slot(const struct imap *m, int64_t k)
{
	size_t i = (size_t)mix64((uint64_t)k) & (m->cap - 1);
	while (m->val[i] != INT32_MIN && m->key[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int32_t imap_get(const struct imap *m, int64_t k, int32_t dflt)
{
	if (!m->cap)
		return dflt;
	size_t i = imap_slot(m, k);
	return m->val[i] == INT32_MIN ? dflt : m->val[i];
}

static void imap_put(struct imap *m, int64_t k, int32_t v)
{
	size_t i = imap_slot(m, k);
	if (m->val[i] == INT32_MIN)
		m->n++;
	m->key[i] = k;
	m->val[i] = v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* numpy's linear quantile of sorted v */
static double quantile_sorted(const double *v, size_t n, double q)
{
	if (!n)
		return NAN;
	double pos = q * (double)(n - 1);
	size_t lo = (size_t)floor(pos);
	size_t hi = lo + 1 < n ? lo + 1 : lo;
	double t = pos - (double)lo, a = v[lo], b = v[hi], d = b - a;
	return t >= 0.5 ? b - d * (1 - t) : a + d * t;
}

static double mean_of(const double *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : NAN;
}

/* sample standard deviation (ddof 1); NaN for fewer than two values */
static double std_of(const double *v, size_t n)
{
	if (n < 2)
		return NAN;
	double m = mean_of(v, n), s = 0;
	for (size_t i = 0; i < n; i++)
		s += (v[i] - m) * (v[i] - m);
	return sqrt(s / (double)(n - 1));
}

/* --------------------------------------------------------- names and cats */

enum {
	NF_DONE = 1 << 0,
	NF_HAS_PS = 1 << 1,    /* contains "ProfilerStep" */
	NF_STEP = 1 << 2,      /* matches ProfilerStep\s*#\s*(\d+) at the start */
	NF_STARTS_PS = 1 << 3, /* starts with "ProfilerStep" */
	NF_SYNC = 1 << 4,      /* "Event Sync", "Context Sync": device events */
	NF_LAUNCH = 1 << 5,    /* launch stats: kernel launches */
	NF_MEMLAUNCH = 1 << 6, /* launch stats: cudaMemcpyAsync, cudaMemsetAsync */
	NF_QUEUE = 1 << 7,     /* queue length: runtime calls that enqueue work */
	NF_KCAT = 1 << 8,      /* as a cat: the idle breakdown's kernel categories */
	NF_TRACE = 1 << 9,     /* as a cat: "Trace" */
	NF_SEEN_PS = 1 << 10,  /* a symbol (name or cat) with "ProfilerStep" was read */
	NF_KT_SHIFT = 12,      /* bits 12-13: kernel type */
};
enum { KT_COMM, KT_MEM, KT_COMP, KT_OTHER };
static const char *const kt_name[] = {"COMMUNICATION", "MEMORY", "COMPUTATION", "OTHER"};

static int eq(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);
	return n == l && !memcmp(s, lit, l);
}

static int one_of(const char *s, size_t n, const char *const *list)
{
	for (; *list; list++)
		if (eq(s, n, *list))
			return 1;
	return 0;
}

static const char *find_mem(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);
	for (size_t i = 0; i + l <= n; i++)
		if (s[i] == lit[0] && !memcmp(s + i, lit, l))
			return s + i;
	return NULL;
}

static size_t first_line(const char *s, size_t n)
{
	const char *nl = memchr(s, '\n', n);
	return nl ? (size_t)(nl - s) : n;
}

/* HTA's get_kernel_type (hta/utils/utils.py), regexes read literally: `.`
 * does not match a newline. */
static int kernel_type(const char *s, size_t n)
{
	size_t l1 = first_line(s, n);
	int comm = n >= 4 && !memcmp(s, "nccl", 4) && l1 >= 4 && find_mem(s + 4, l1 - 4, "Kernel");
	if (comm)
		return KT_COMM;
	if ((n >= 6 && (!memcmp(s, "Memcpy", 6) || !memcmp(s, "Memset", 6))) || (n >= 3 && !memcmp(s, "dma", 3)))
		return KT_MEM;
	if (find_mem(s, l1, "Memcpy") || (n >= 6 && !memcmp(s, "Memset", 6)) || find_mem(s, l1, "Sync"))
		return KT_OTHER;
	return KT_COMP;
}

static int py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* ProfilerStep\s*#\s*(\d+) at the start of s; -1 when it does not match */
static long long step_number(const char *s, size_t n)
{
	if (n < 12 || memcmp(s, "ProfilerStep", 12))
		return -1;
	size_t i = 12;
	while (i < n && py_space((unsigned char)s[i]))
		i++;
	if (i >= n || s[i] != '#')
		return -1;
	i++;
	while (i < n && py_space((unsigned char)s[i]))
		i++;
	if (i >= n || !(s[i] >= '0' && s[i] <= '9'))
		return -1;
	long long v = 0;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		if (v < 100000000000000000ll)
			v = v * 10 + (s[i] - '0');
	return v;
}

static const char *const sync_names[] = {"Event Sync", "Context Sync", NULL};
static const char *const launch_names[] = {"cudaLaunchKernel", "cudaLaunchKernelExC",
					   "runFunction - job_prep_and_submit_for_execution", NULL};
static const char *const memlaunch_names[] = {"cudaMemsetAsync", "cudaMemcpyAsync", NULL};
static const char *const queue_names[] = {"cudaMemsetAsync", "cudaMemcpyAsync", "cudaLaunchKernel",
					  "cudaLaunchKernelExC", "cuLaunchKernel",
					  "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
					  "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
					  "hipMemcpyWithStream", NULL};
static const char *const kernel_cats[] = {"kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy",
					  "mtia_ccp_events", NULL};

/* ------------------------------------------------------------------ data */

enum { EF_GPU = 1 << 0, EF_KCAT = 1 << 1 };

/* An event HTA keeps and the device analyses read: device rows, events with a
 * correlation, steps (and the first item of traceEvents, see idle). */
struct dm_ev {
	double ts, dur;  /* µs, rounded as HTA rounds */
	int64_t corr;    /* args.correlation, -1 */
	uint64_t index;  /* position in traceEvents */
	uint32_t name;   /* string id */
	int32_t stream;  /* args.stream as HTA reads it, -1 */
	int32_t iter;    /* HTA's iteration: a step number, -1, or ITER_NAN */
	int32_t link;    /* the event HTA links by correlation (position), -1 */
	uint32_t flags;  /* EF_* */
};

/* Any other host event: only counted, unless kept for the straggler rule and diffs. */
struct dm_host {
	double ts, dur;
	uint32_t name;
};

struct dm_step {
	double ts, dur;
	long long num;
	size_t pos; /* file order */
};

struct dm_rank {
	char *path;
	long long rank;
	struct fl_trace_info info;
	struct dm_ev *ev;
	size_t n, cap;
	struct dm_host *host;
	size_t nh, caph;
	uint64_t n_plain, n_no_ts;
	int rounded;
	struct dm_step *steps;
	size_t nsteps;
	/* iteration of a timestamp: the last step (file order) holding it */
	double *bound;   /* sorted step boundaries */
	int32_t *seg;    /* step index for [bound[i], bound[i+1]), -1 none */
	size_t nbound;
	/* the events HTA analyses after its filter: positions in ev (repeated
	 * when several kept host events share a correlation) */
	int32_t *view;
	size_t nview;
	unsigned char *inview;
	int filtered, cut_incl; /* host events kept: ts < cut (ts <= cut with cut_incl) */
	double cut;
	int32_t ev0;            /* position of traceEvents[0] in ev, -1 */
};

struct fl_dm_job {
	struct fl_dm_opts o;
	struct fl_strtab *strings;
	uint16_t *nf;           /* name flags per string id */
	long long *stepnum;     /* per string id, -1 */
	size_t nnf;
	struct dm_rank *ranks;
	size_t nranks;
	size_t step_symbols;
	uint64_t json_bytes, events;
};

double fl_dm_json_bytes(const struct fl_dm_job *job) { return (double)job->json_bytes; }
uint64_t fl_dm_events(const struct fl_dm_job *job) { return job->events; }

static uint16_t name_flags(struct fl_dm_job *j, uint32_t id)
{
	if (id >= j->nnf) {
		size_t n = fl_strtab_count(j->strings) + 256;
		j->nf = xalloc(j->nf, n * sizeof(*j->nf));
		j->stepnum = xalloc(j->stepnum, n * sizeof(*j->stepnum));
		memset(j->nf + j->nnf, 0, (n - j->nnf) * sizeof(*j->nf));
		j->nnf = n;
	}
	uint16_t f = j->nf[id];
	if (f & NF_DONE)
		return f;
	const char *s = fl_strtab_str(j->strings, id);
	size_t n = fl_strtab_len(j->strings, id);
	f = NF_DONE;
	if (find_mem(s, n, "ProfilerStep"))
		f |= NF_HAS_PS;
	if (n >= 12 && !memcmp(s, "ProfilerStep", 12))
		f |= NF_STARTS_PS;
	j->stepnum[id] = step_number(s, n);
	if (j->stepnum[id] >= 0)
		f |= NF_STEP;
	if (one_of(s, n, sync_names))
		f |= NF_SYNC;
	if (one_of(s, n, launch_names))
		f |= NF_LAUNCH;
	if (one_of(s, n, memlaunch_names))
		f |= NF_MEMLAUNCH;
	if (one_of(s, n, queue_names))
		f |= NF_QUEUE;
	if (one_of(s, n, kernel_cats))
		f |= NF_KCAT;
	if (eq(s, n, "Trace"))
		f |= NF_TRACE;
	f |= (uint16_t)(kernel_type(s, n) << NF_KT_SHIFT);
	j->nf[id] = f;
	return f;
}

static int ktype(const struct fl_dm_job *j, uint32_t name) { return (j->nf[name] >> NF_KT_SHIFT) & 3; }
static const char *str(const struct fl_dm_job *j, uint32_t id) { return fl_strtab_str(j->strings, id); }

/* ------------------------------------------------------------------ load */

struct load_ctx {
	struct fl_dm_job *job;
	struct dm_rank *r;
};

static enum fl_status on_event(void *arg, const struct fl_tev *e)
{
	struct load_ctx *c = arg;
	struct fl_dm_job *j = c->job;
	struct dm_rank *r = c->r;
	if (!(e->has & FL_TEV_DUR) || !(e->has & FL_TEV_CAT))
		return FL_OK; /* HTA: dropna(subset=["dur", "cat"]) */
	uint16_t cf = name_flags(j, e->cat);
	if (cf & NF_TRACE)
		return FL_OK;
	if (!(e->has & FL_TEV_TS) || !isfinite(e->ts) || !isfinite(e->dur)) {
		r->n_no_ts++;
		return FL_OK;
	}
	uint16_t nf = name_flags(j, e->name);
	if (nf & NF_HAS_PS)
		j->nf[e->name] |= NF_SEEN_PS;
	if (cf & NF_HAS_PS)
		j->nf[e->cat] |= NF_SEEN_PS;
	int32_t stream = -1;
	if (e->has & FL_TEV_STREAM)
		stream = e->stream > INT32_MAX ? INT32_MAX : e->stream < INT32_MIN + 1 ? INT32_MIN + 1 : (int32_t)e->stream;
	int64_t corr = e->has & FL_TEV_CORRELATION ? e->correlation : -1;
	int gpu = (stream >= 0 && corr >= 0) || (nf & NF_SYNC);
	if (gpu || stream != -1 || corr != -1 || (nf & NF_HAS_PS) || e->index == 0) {
		if (r->n >= INT32_MAX - 1)
			return fl_error(FL_EINPUT, "'%s': more than 2^31 device events", r->path);
		GROW(r->ev, r->n, r->cap);
		struct dm_ev *d = &r->ev[r->n++];
		d->ts = e->ts;
		d->dur = e->dur;
		d->corr = corr;
		d->index = e->index;
		d->name = e->name;
		d->stream = stream;
		d->iter = -1;
		d->link = -1;
		d->flags = (gpu ? EF_GPU : 0) | (cf & NF_KCAT ? EF_KCAT : 0);
		return FL_OK;
	}
	r->n_plain++;
	if (j->o.keep_host) {
		GROW(r->host, r->nh, r->caph);
		r->host[r->nh++] = (struct dm_host){e->ts, e->dur, e->name};
	}
	return FL_OK;
}

static int cmp_double_p(const void *a, const void *b) { return cmp_double(a, b); }

/* The iteration of a host timestamp: the last step in file order with
 * step.ts <= ts < step.ts + step.dur (HTA's add_iteration). */
static void build_step_segments(struct dm_rank *r)
{
	r->nbound = 0;
	if (!r->nsteps)
		return;
	double *b = xalloc(NULL, 2 * r->nsteps * sizeof(*b));
	size_t nb = 0;
	for (size_t i = 0; i < r->nsteps; i++) {
		b[nb++] = r->steps[i].ts;
		b[nb++] = r->steps[i].ts + r->steps[i].dur;
	}
	qsort(b, nb, sizeof(*b), cmp_double_p);
	size_t u = 0;
	for (size_t i = 0; i < nb; i++)
		if (!u || b[i] != b[u - 1])
			b[u++] = b[i];
	r->bound = b;
	r->nbound = u;
	r->seg = xalloc(NULL, u * sizeof(*r->seg));
	for (size_t i = 0; i < u; i++)
		r->seg[i] = -1;
	for (size_t s = 0; s < r->nsteps; s++) { /* file order: a later step wins */
		double a = r->steps[s].ts, e = r->steps[s].ts + r->steps[s].dur;
		if (!(e > a))
			continue;
		size_t lo = 0, hi = u;
		while (lo < hi) { /* first boundary >= a */
			size_t m = (lo + hi) / 2;
			if (b[m] < a)
				lo = m + 1;
			else
				hi = m;
		}
		for (size_t i = lo; i + 1 < u && b[i + 1] <= e; i++)
			r->seg[i] = (int32_t)s;
	}
}

static int32_t iter_of_ts(const struct dm_rank *r, double ts)
{
	if (!r->nbound || ts < r->bound[0] || ts >= r->bound[r->nbound - 1])
		return -1;
	size_t lo = 0, hi = r->nbound;
	while (hi - lo > 1) { /* last boundary <= ts */
		size_t m = (lo + hi) / 2;
		if (r->bound[m] <= ts)
			lo = m;
		else
			hi = m;
	}
	int32_t s = r->seg[lo];
	if (s < 0)
		return -1;
	long long num = r->steps[s].num;
	return num > INT32_MAX ? INT32_MAX : (int32_t)num;
}

static int host_kept(const struct dm_rank *r, double ts)
{
	if (!r->filtered)
		return 1;
	return r->cut_incl ? ts <= r->cut : ts < r->cut;
}

/* HTA's load_traces for one rank, after all ranks are read. */
static void prepare_rank(struct fl_dm_job *j, struct dm_rank *r)
{
	/* ns rounding: pandas reads ts as floats when some ts has a fraction or
	 * is missing (ceil(ts), floor(ts + dur)) */
	r->rounded = (r->info.n_ts_float + r->info.n_ts_missing) > 0 && r->info.n_ts_other == 0;
	if (r->rounded) {
		for (size_t i = 0; i < r->n; i++) {
			double end = floor(r->ev[i].ts + r->ev[i].dur);
			r->ev[i].ts = ceil(r->ev[i].ts);
			r->ev[i].dur = end - r->ev[i].ts;
		}
		for (size_t i = 0; i < r->nh; i++) {
			double end = floor(r->host[i].ts + r->host[i].dur);
			r->host[i].ts = ceil(r->host[i].ts);
			r->host[i].dur = end - r->host[i].ts;
		}
	}
	/* index_correlation: a device event links to the last host event with
	 * its correlation, a host event to the last device event */
	struct imap cpu, gpu;
	imap_init(&cpu, r->n / 2);
	imap_init(&gpu, r->n / 2);
	r->ev0 = -1;
	for (size_t i = 0; i < r->n; i++) {
		struct dm_ev *e = &r->ev[i];
		if (e->index == 0)
			r->ev0 = (int32_t)i;
		if (e->corr == -1)
			continue;
		imap_put(e->flags & EF_GPU ? &gpu : &cpu, e->corr, (int32_t)i);
	}
	for (size_t i = 0; i < r->n; i++) {
		struct dm_ev *e = &r->ev[i];
		if (e->corr != -1)
			e->link = imap_get(e->flags & EF_GPU ? &cpu : &gpu, e->corr, -1);
	}
	imap_free(&cpu);
	imap_free(&gpu);
	/* steps and iterations */
	size_t cap = 0;
	for (size_t i = 0; i < r->n; i++) {
		struct dm_ev *e = &r->ev[i];
		if (!(j->nf[e->name] & NF_STEP))
			continue;
		GROW(r->steps, r->nsteps, cap);
		r->steps[r->nsteps++] = (struct dm_step){e->ts, e->dur, j->stepnum[e->name], i};
	}
	build_step_segments(r);
	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].stream < 0)
			r->ev[i].iter = iter_of_ts(r, r->ev[i].ts);
	for (size_t i = 0; i < r->n; i++) {
		struct dm_ev *e = &r->ev[i];
		if (e->stream == 0) {
			e->iter = ITER_NAN;
		} else if (e->stream > 0) {
			const struct dm_ev *l = e->link >= 0 ? &r->ev[e->link] : NULL;
			if (l && l->index > 0)
				e->iter = l->stream < 0 ? l->iter : ITER_NAN;
			else
				e->iter = -1;
		}
	}
	/* the filter: with two or more step names in the job, keep host events
	 * before the last step's start, and device events launched by them */
	r->inview = xalloc(NULL, r->n ? r->n : 1);
	memset(r->inview, 0, r->n ? r->n : 1);
	r->filtered = j->step_symbols >= 2;
	if (!r->filtered) {
		r->view = xalloc(NULL, (r->n ? r->n : 1) * sizeof(*r->view));
		for (size_t i = 0; i < r->n; i++) {
			r->view[i] = (int32_t)i;
			r->inview[i] = 1;
		}
		r->nview = r->n;
		return;
	}
	double last_start = NAN, last_end = NAN;
	for (size_t i = 0; i < r->n; i++) {
		const struct dm_ev *e = &r->ev[i];
		if ((e->flags & EF_GPU) || !(j->nf[e->name] & NF_HAS_PS))
			continue;
		if (!(last_start >= e->ts))
			last_start = e->ts;
		if (!(last_end >= e->ts + e->dur))
			last_end = e->ts + e->dur;
	}
	r->cut_incl = j->o.include_last_step;
	r->cut = r->cut_incl ? last_end : last_start;
	struct imap cnt;
	imap_init(&cnt, r->n / 2);
	size_t nview = 0, vcap = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct dm_ev *e = &r->ev[i];
		if ((e->flags & EF_GPU) || !host_kept(r, e->ts) || e->corr == -1)
			continue;
		imap_put(&cnt, e->corr, imap_get(&cnt, e->corr, 0) + 1);
	}
	for (size_t i = 0; i < r->n; i++) { /* device events first (HTA's concat order) */
		const struct dm_ev *e = &r->ev[i];
		if (!(e->flags & EF_GPU) || e->corr == -1)
			continue;
		int32_t m = imap_get(&cnt, e->corr, 0);
		for (int32_t k = 0; k < m; k++) {
			GROW(r->view, nview, vcap);
			r->view[nview++] = (int32_t)i;
			r->inview[i] = 1;
		}
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct dm_ev *e = &r->ev[i];
		if ((e->flags & EF_GPU) || !host_kept(r, e->ts))
			continue;
		GROW(r->view, nview, vcap);
		r->view[nview++] = (int32_t)i;
		r->inview[i] = 1;
	}
	r->nview = nview;
	imap_free(&cnt);
}

static void rank_release(struct dm_rank *r)
{
	free(r->path);
	free(r->ev);
	free(r->host);
	free(r->steps);
	free(r->bound);
	free(r->seg);
	free(r->view);
	free(r->inview);
}

void fl_dm_free(struct fl_dm_job *job)
{
	if (!job)
		return;
	for (size_t i = 0; i < job->nranks; i++)
		rank_release(&job->ranks[i]);
	free(job->ranks);
	free(job->nf);
	free(job->stepnum);
	fl_strtab_free(job->strings);
	free(job);
}

static int cmp_rank(const void *a, const void *b)
{
	long long x = ((const struct dm_rank *)a)->rank, y = ((const struct dm_rank *)b)->rank;
	return x < y ? -1 : x > y;
}

enum fl_status fl_dm_load(const char *const *paths, size_t n, const struct fl_dm_opts *o, struct fl_dm_job **out)
{
	struct fl_dm_job *j = calloc(1, sizeof(*j));
	if (!j)
		abort();
	struct fl_dm_opts dflt = FL_DM_OPTS_INIT;
	j->o = o ? *o : dflt;
	if (n >= 2)
		j->o.keep_host = 1; /* the straggler rule's iteration spans read every host event */
	j->strings = fl_strtab_new();
	j->ranks = calloc(n ? n : 1, sizeof(*j->ranks));
	if (!j->ranks)
		abort();
	enum fl_status st = FL_OK;
	*out = NULL;
	if (!n) {
		st = fl_error(FL_EINPUT, "no trace to analyse");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		struct dm_rank *r = &j->ranks[j->nranks++];
		r->path = strdup(paths[i]);
		if (!r->path)
			abort();
		struct load_ctx c = {j, r};
		struct fl_trace_stream_opts so = {.strings = j->strings, .on_event = on_event, .arg = &c,
						  .no_thread = j->o.no_thread};
		if ((st = fl_trace_stream_file(paths[i], &so, &r->info)))
			goto fail;
		r->rank = r->info.has_hta_rank ? r->info.hta_rank : 0;
		j->json_bytes += r->info.bytes_json;
		j->events += r->info.n_events;
	}
	qsort(j->ranks, j->nranks, sizeof(*j->ranks), cmp_rank);
	for (size_t i = 1; i < j->nranks; i++)
		if (j->ranks[i].rank == j->ranks[i - 1].rank) {
			st = fl_error(FL_EINPUT, "'%s' and '%s' are both rank %lld (a job has one trace per rank)",
				      j->ranks[i - 1].path, j->ranks[i].path, j->ranks[i].rank);
			goto fail;
		}
	for (size_t id = 0; id < j->nnf; id++)
		if (j->nf[id] & NF_SEEN_PS)
			j->step_symbols++;
	for (size_t i = 0; i < j->nranks; i++)
		prepare_rank(j, &j->ranks[i]);
	*out = j;
	return FL_OK;
fail:
	fl_dm_free(j);
	return st;
}

/* ------------------------------------------------------------- intervals */

struct ivl {
	double ts, end;
	uint32_t ord;
};

static int cmp_ivl(const void *a, const void *b)
{
	const struct ivl *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* HTA's merge_kernel_intervals: sort by ts (ties in row order), then a row
 * starts a new group when its ts is after every earlier row's end. Merges in
 * place; returns the number of groups. */
static size_t merge_ivl(struct ivl *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_ivl);
	size_t g = 0;
	double cm = v[0].end;
	for (size_t i = 1; i < n; i++) {
		if (v[i].ts > cm) {
			v[++g] = v[i];
		} else if (v[i].end > v[g].end) {
			v[g].end = v[i].end;
		}
		if (v[i].end > cm)
			cm = v[i].end;
	}
	return g + 1;
}

static double ivl_sum(const struct ivl *v, size_t n)
{
	double e = 0, t = 0;
	for (size_t i = 0; i < n; i++) {
		e += v[i].end;
		t += v[i].ts;
	}
	return e - t;
}

/* The device rows of a rank's view (stream != -1), optionally of one kernel type. */
static size_t device_ivls(const struct fl_dm_job *j, const struct dm_rank *r, int kt, struct ivl **out)
{
	struct ivl *v = xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->stream == -1 || (kt >= 0 && ktype(j, e->name) != kt))
			continue;
		v[n] = (struct ivl){e->ts, e->ts + e->dur, (uint32_t)i};
		n++;
	}
	*out = v;
	return n;
}

/* ------------------------------------------------------------- analyses */

struct temporal {
	int ok;
	double idle, compute, noncompute, span;
};

static struct temporal temporal_of(const struct fl_dm_job *j, const struct dm_rank *r)
{
	struct temporal t = {0};
	struct ivl *v;
	size_t n = device_ivls(j, r, -1, &v);
	if (n) {
		size_t g = merge_ivl(v, n);
		t.ok = 1;
		t.span = v[g - 1].end - v[0].ts;
		t.idle = t.span - ivl_sum(v, g);
	}
	free(v);
	if (t.ok) {
		n = device_ivls(j, r, KT_COMP, &v);
		size_t g = merge_ivl(v, n);
		t.compute = ivl_sum(v, g);
		t.noncompute = t.span - t.compute - t.idle;
		free(v);
	}
	return t;
}

struct tick {
	double time;
	int delta;
};

static int cmp_tick(const void *a, const void *b)
{
	double x = ((const struct tick *)a)->time, y = ((const struct tick *)b)->time;
	return x < y ? -1 : x > y;
}

/* Running sums of +delta at starts and -delta at ends of merged intervals,
 * sorted by time. */
static size_t ticks_of(struct tick **out, size_t n_types, struct ivl *const *v, const size_t *n, const int *val)
{
	size_t total = 0, k = 0;
	for (size_t t = 0; t < n_types; t++)
		total += 2 * n[t];
	struct tick *tk = xalloc(NULL, (total ? total : 1) * sizeof(*tk));
	for (size_t t = 0; t < n_types; t++)
		for (size_t i = 0; i < n[t]; i++) {
			tk[k++] = (struct tick){v[t][i].ts, val[t]};
			tk[k++] = (struct tick){v[t][i].end, -val[t]};
		}
	qsort(tk, k, sizeof(*tk), cmp_tick);
	*out = tk;
	return k;
}

struct overlap {
	int ok;
	double comm, overlap;
};

static struct overlap overlap_of(const struct fl_dm_job *j, const struct dm_rank *r)
{
	struct overlap o = {0};
	struct ivl *v[2];
	size_t n[2];
	n[0] = device_ivls(j, r, KT_COMM, &v[0]);
	n[1] = device_ivls(j, r, KT_COMP, &v[1]);
	n[0] = merge_ivl(v[0], n[0]);
	n[1] = merge_ivl(v[1], n[1]);
	o.comm = ivl_sum(v[0], n[0]);
	o.ok = n[0] > 0;
	struct tick *tk;
	static const int val[2] = {1, 2};
	size_t k = ticks_of(&tk, 2, v, n, val);
	int run = 0;
	for (size_t i = 0; i < k; i++) {
		run += tk[i].delta;
		if (run == 3 && i + 1 < k)
			o.overlap += tk[i + 1].time - tk[i].time;
	}
	free(tk);
	free(v[0]);
	free(v[1]);
	return o;
}

/* Time per kernel-type combination (HTA's _get_gpu_kernel_type_time), by the
 * low three bits of the running sum: 1 COMPUTATION, 2 COMMUNICATION, 4 MEMORY. */
static void kernel_type_time(const struct fl_dm_job *j, const struct dm_rank *r, double by_mask[8])
{
	static const int kts[3] = {KT_COMP, KT_COMM, KT_MEM}, val[3] = {1, 2, 4};
	struct ivl *v[3];
	size_t n[3];
	for (int t = 0; t < 3; t++) {
		n[t] = device_ivls(j, r, kts[t], &v[t]);
		n[t] = merge_ivl(v[t], n[t]);
	}
	struct tick *tk;
	size_t k = ticks_of(&tk, 3, v, n, val);
	int run = 0;
	for (size_t i = 0; i < k; i++) {
		run += tk[i].delta;
		if (run > 0 && i + 1 < k)
			by_mask[run & 7] += trunc(tk[i + 1].time - tk[i].time); /* .astype(int) */
	}
	free(tk);
	for (int t = 0; t < 3; t++)
		free(v[t]);
}

static void mask_label(int mask, char *buf, size_t n)
{
	static const char *const names[3] = {"COMPUTATION", "COMMUNICATION", "MEMORY"};
	buf[0] = '\0';
	for (int b = 0; b < 3; b++)
		if (mask & (1 << b)) {
			size_t l = strlen(buf);
			snprintf(buf + l, n - l, "%s%s", l ? " overlapping " : "", names[b]);
		}
}

/* kernels by name (HTA's _aggr_gpu_kernel_time) */
struct name_dur {
	uint32_t name;
	double dur;
};

struct name_row {
	const char *name; /* "others" for the rest */
	double sum, max, min, mean, std;
};

static const struct fl_dm_job *sort_job; /* for the comparators below (single-threaded) */

static int cmp_name_dur(const void *a, const void *b)
{
	const struct name_dur *x = a, *y = b;
	if (x->name == y->name)
		return 0;
	return strcmp(str(sort_job, x->name), str(sort_job, y->name));
}

static int cmp_row_sum_desc(const void *a, const void *b)
{
	const struct name_row *x = a, *y = b;
	if (x->sum != y->sum)
		return x->sum > y->sum ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_row_name(const void *a, const void *b)
{
	return strcmp(((const struct name_row *)a)->name, ((const struct name_row *)b)->name);
}

static void row_stats(struct name_row *row, const double *v, size_t n)
{
	row->sum = 0;
	row->max = -INFINITY;
	row->min = INFINITY;
	for (size_t i = 0; i < n; i++) {
		row->sum += v[i];
		if (v[i] > row->max)
			row->max = v[i];
		if (v[i] < row->min)
			row->min = v[i];
	}
	row->mean = row->sum / (double)n;
	row->std = n > 1 ? std_of(v, n) : 0;
}

/* Aggregate (name, dur) rows; returns rows sorted by total, descending. */
static size_t aggr_by_name(const struct fl_dm_job *j, struct name_dur *nd, size_t n, struct name_row **out)
{
	sort_job = j;
	qsort(nd, n, sizeof(*nd), cmp_name_dur);
	struct name_row *rows = xalloc(NULL, (n ? n : 1) * sizeof(*rows));
	double *tmp = xalloc(NULL, (n ? n : 1) * sizeof(*tmp));
	size_t nr = 0;
	for (size_t i = 0; i < n;) {
		size_t k = i;
		while (k < n && nd[k].name == nd[i].name)
			k++;
		for (size_t q = i; q < k; q++)
			tmp[q - i] = nd[q].dur;
		rows[nr].name = str(j, nd[i].name);
		row_stats(&rows[nr], tmp, k - i);
		nr++;
		i = k;
	}
	qsort(rows, nr, sizeof(*rows), cmp_row_sum_desc);
	size_t top = j->o.top_kernels;
	if (nr > top) {
		double *cum = xalloc(NULL, nr * sizeof(*cum)), *sorted = xalloc(NULL, nr * sizeof(*sorted));
		double c = 0;
		for (size_t i = 0; i < nr; i++)
			cum[i] = sorted[i] = c += rows[i].sum;
		qsort(sorted, nr, sizeof(*sorted), cmp_double_p);
		double q = quantile_sorted(sorted, nr, j->o.duration_ratio);
		size_t keep = 0, no = 0;
		for (size_t i = 0; i < nr; i++) {
			if (cum[i] > q || i >= top)
				tmp[no++] = rows[i].sum;
			else
				rows[keep++] = (struct name_row){rows[i].name, rows[i].sum, rows[i].sum, rows[i].sum,
								 rows[i].sum, 0};
		}
		if (no) {
			rows[keep].name = "others";
			row_stats(&rows[keep], tmp, no);
			keep++;
		}
		nr = keep;
		qsort(rows, nr, sizeof(*rows), cmp_row_name); /* HTA's groupby("name") order */
		qsort(rows, nr, sizeof(*rows), cmp_row_sum_desc);
		free(cum);
		free(sorted);
	}
	free(tmp);
	*out = rows;
	return nr;
}

/* Append the (name, dur) of a rank's device rows of one kernel type. */
static void kernel_rows(const struct fl_dm_job *j, const struct dm_rank *r, int kt, struct name_dur **v, size_t *n,
			size_t *cap)
{
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->stream == -1 || ktype(j, e->name) != kt)
			continue;
		GROW(*v, *n, *cap);
		(*v)[(*n)++] = (struct name_dur){e->name, e->dur};
	}
}

/* idle time per stream (HTA's get_idle_time_breakdown) */
struct idle_stream {
	int64_t stream;
	double t[3]; /* host wait, kernel wait, other */
	int present[3];
	long gaps;
};

struct idle {
	struct idle_stream *s;
	size_t n;
};

struct krow {
	double ts, end, rt; /* rt: the launch's ts, NaN when there is none */
	int32_t stream;
	uint32_t ord;
};

static int cmp_krow(const void *a, const void *b)
{
	const struct krow *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static struct idle_stream *idle_find(struct idle *d, int64_t stream)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->s[i].stream == stream)
			return &d->s[i];
	d->s = xalloc(d->s, (d->n + 1) * sizeof(*d->s));
	memset(&d->s[d->n], 0, sizeof(d->s[d->n]));
	d->s[d->n].stream = stream;
	return &d->s[d->n++];
}

static int cmp_idle_stream(const void *a, const void *b)
{
	int64_t x = ((const struct idle_stream *)a)->stream, y = ((const struct idle_stream *)b)->stream;
	return x < y ? -1 : x > y;
}

static void idle_of(const struct fl_dm_job *j, const struct dm_rank *r, struct idle *d)
{
	struct krow *k = xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*k));
	size_t n = 0;
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->stream == -1 || !(e->flags & EF_KCAT))
			continue;
		/* the launch: the row whose traceEvents index is index_correlation
		 * (HTA joins on it; without a link a correlated event points at 0) */
		double rt = NAN;
		int32_t target = e->link >= 0 ? e->link : e->corr >= 0 ? r->ev0 : -1;
		if (target >= 0 && r->inview[target])
			rt = r->ev[target].ts;
		k[n++] = (struct krow){e->ts, e->ts + e->dur, rt, e->stream, (uint32_t)i};
	}
	qsort(k, n, sizeof(*k), cmp_krow);
	for (size_t i = 0; i < n; i++) {
		struct idle_stream *s = idle_find(d, k[i].stream);
		if (i == 0 || k[i - 1].stream != k[i].stream) {
			s->present[2] = 1; /* the first kernel: category other, no gap */
			continue;
		}
		double prev_end = k[i - 1].end, gap = k[i].ts - prev_end;
		int cat = k[i].rt > prev_end ? 0 : gap < j->o.kernel_wait_us ? 1 : 2;
		s->t[cat] += gap;
		s->present[cat] = 1;
		s->gaps++;
	}
	free(k);
	qsort(d->s, d->n, sizeof(*d->s), cmp_idle_stream);
}

/* launch statistics (HTA's cuda_kernel_launch_stats) */
struct launch {
	double *cpu, *gpu, *delay;
	size_t n, cap;
};

static void launch_add(struct launch *l, double c, double g, double d)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->cpu = xalloc(l->cpu, l->cap * sizeof(double));
		l->gpu = xalloc(l->gpu, l->cap * sizeof(double));
		l->delay = xalloc(l->delay, l->cap * sizeof(double));
	}
	l->cpu[l->n] = c;
	l->gpu[l->n] = g;
	l->delay[l->n] = d;
	l->n++;
}

static void launch_free(struct launch *l)
{
	free(l->cpu);
	free(l->gpu);
	free(l->delay);
}

static void launch_of(const struct fl_dm_job *j, const struct dm_rank *r, struct launch *l)
{
	struct imap set, first;
	imap_init(&set, 64);
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if ((j->nf[e->name] & (NF_LAUNCH | NF_MEMLAUNCH)) && e->corr != -1)
			imap_put(&set, e->corr, 1);
	}
	/* pair the host rows (stream -1) with the device rows (stream != -1) of
	 * each launch correlation: chain the device rows by correlation */
	int32_t *next = xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*next));
	imap_init(&first, 64);
	for (size_t i = r->nview; i-- > 0;) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		next[i] = -1;
		if (e->stream == -1 || imap_get(&set, e->corr, 0) != 1)
			continue;
		next[i] = imap_get(&first, e->corr, -1);
		imap_put(&first, e->corr, (int32_t)i);
	}
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *c = &r->ev[r->view[i]];
		if (c->stream != -1 || imap_get(&set, c->corr, 0) != 1)
			continue;
		for (int32_t g = imap_get(&first, c->corr, -1); g >= 0; g = next[g]) {
			const struct dm_ev *k = &r->ev[r->view[g]];
			double d = k->ts - c->ts - c->dur;
			launch_add(l, c->dur, k->dur, d > 0 ? d : 0);
		}
	}
	free(next);
	imap_free(&set);
	imap_free(&first);
}

/* queue length per stream (HTA's TraceCounters) */
struct qsample {
	int64_t stream;
	double *v;
	size_t n, cap;
};

struct queue {
	struct qsample *s;
	size_t n;
};

struct qtick {
	double ts;
	int32_t stream;
	int delta;
	uint32_t ord;
};

static int cmp_qtick(const void *a, const void *b)
{
	const struct qtick *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static struct qsample *queue_find(struct queue *q, int64_t stream)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->s[i].stream == stream)
			return &q->s[i];
	q->s = xalloc(q->s, (q->n + 1) * sizeof(*q->s));
	memset(&q->s[q->n], 0, sizeof(q->s[q->n]));
	q->s[q->n].stream = stream;
	return &q->s[q->n++];
}

static void qsample_add(struct qsample *s, double v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = xalloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = v;
}

static void queue_of(const struct fl_dm_job *j, const struct dm_rank *r, struct queue *q)
{
	/* launches: queue-set names with index_correlation > 0 (a linked device
	 * event with a traceEvents index > 0) */
	struct imap launched;
	imap_init(&launched, 64);
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if ((j->nf[e->name] & NF_QUEUE) && e->link >= 0 && r->ev[e->link].index > 0)
			imap_put(&launched, e->corr, 1);
	}
	/* device rows of those correlations, chained per correlation */
	int32_t *next = xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*next));
	struct imap first;
	imap_init(&first, 64);
	struct qtick *t = NULL;
	size_t n = 0, cap = 0;
	uint32_t ord = 0;
	for (size_t i = r->nview; i-- > 0;) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		next[i] = -1;
		if (e->stream == -1 || imap_get(&launched, e->corr, 0) != 1)
			continue;
		next[i] = imap_get(&first, e->corr, -1);
		imap_put(&first, e->corr, (int32_t)i);
	}
	/* +1 per (launch, device row) in launch order, then -1 per device row
	 * (HTA's concat order breaks ties of ts) */
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (!((j->nf[e->name] & NF_QUEUE) && e->link >= 0 && r->ev[e->link].index > 0))
			continue;
		for (int32_t g = imap_get(&first, e->corr, -1); g >= 0; g = next[g]) {
			GROW(t, n, cap);
			t[n++] = (struct qtick){e->ts, r->ev[r->view[g]].stream, 1, ord++};
		}
	}
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->stream == -1 || imap_get(&launched, e->corr, 0) != 1)
			continue;
		GROW(t, n, cap);
		t[n++] = (struct qtick){e->ts, e->stream, -1, ord++};
	}
	qsort(t, n, sizeof(*t), cmp_qtick);
	long run = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || t[i].stream != t[i - 1].stream)
			run = 0;
		run += t[i].delta;
		qsample_add(queue_find(q, t[i].stream), (double)run);
	}
	free(t);
	free(next);
	imap_free(&launched);
	imap_free(&first);
}

static int cmp_qsample(const void *a, const void *b)
{
	int64_t x = ((const struct qsample *)a)->stream, y = ((const struct qsample *)b)->stream;
	return x < y ? -1 : x > y;
}

static void queue_free(struct queue *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->s[i].v);
	free(q->s);
	memset(q, 0, sizeof(*q));
}

/* ---------------------------------------------------------------- JSON */

static cJSON *num_or_null(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

static void add_num(cJSON *o, const char *k, double v) { cJSON_AddItemToObject(o, k, num_or_null(v)); }

static double pct(double x, double total) { return total != 0 ? 100.0 * x / total : NAN; }

static cJSON *temporal_json(const struct temporal *t)
{
	if (!t->ok)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	add_num(o, "idle_us", t->idle);
	add_num(o, "compute_us", t->compute);
	add_num(o, "non_compute_us", t->noncompute);
	add_num(o, "span_us", t->span);
	add_num(o, "idle_pct", pct(t->idle, t->span));
	add_num(o, "compute_pct", pct(t->compute, t->span));
	add_num(o, "non_compute_pct", pct(t->noncompute, t->span));
	return o;
}

static cJSON *overlap_json(const struct overlap *v)
{
	cJSON *o = cJSON_CreateObject();
	add_num(o, "comm_us", v->comm);
	add_num(o, "overlap_us", v->overlap);
	add_num(o, "comm_comp_pct", v->ok ? pct(v->overlap, v->comm) : NAN);
	return o;
}

static cJSON *idle_json(const struct idle *d)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < d->n; i++) {
		const struct idle_stream *s = &d->s[i];
		char key[32];
		snprintf(key, sizeof(key), "%lld", (long long)s->stream);
		cJSON *x = cJSON_CreateObject();
		double total = s->t[0] + s->t[1] + s->t[2];
		add_num(x, "host_wait_us", s->t[0]);
		add_num(x, "kernel_wait_us", s->t[1]);
		add_num(x, "other_us", s->t[2]);
		add_num(x, "total_us", total);
		add_num(x, "host_wait_pct", pct(s->t[0], total));
		add_num(x, "kernel_wait_pct", pct(s->t[1], total));
		add_num(x, "other_pct", pct(s->t[2], total));
		cJSON_AddNumberToObject(x, "gaps", (double)s->gaps);
		cJSON_AddItemToObject(o, key, x);
	}
	return o;
}

static cJSON *stats_json(const double *v, size_t n, int full)
{
	cJSON *o = cJSON_CreateObject();
	double s = 0, mx = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		s += v[i];
		if (v[i] > mx)
			mx = v[i];
	}
	add_num(o, "sum", s);
	add_num(o, "mean", n ? s / (double)n : NAN);
	if (full) {
		double *c = xalloc(NULL, (n ? n : 1) * sizeof(*c));
		memcpy(c, v, n * sizeof(*c));
		qsort(c, n, sizeof(*c), cmp_double_p);
		add_num(o, "p50", quantile_sorted(c, n, 0.5));
		add_num(o, "p95", quantile_sorted(c, n, 0.95));
		free(c);
	}
	add_num(o, "max", n ? mx : NAN);
	return o;
}

static cJSON *launch_json(const struct fl_dm_job *j, const struct launch *l)
{
	cJSON *o = cJSON_CreateObject();
	size_t sk = 0, ro = 0, lo = 0;
	for (size_t i = 0; i < l->n; i++) {
		sk += l->cpu[i] <= j->o.runtime_cutoff_us && l->gpu[i] < l->cpu[i];
		ro += l->cpu[i] > j->o.runtime_cutoff_us;
		lo += l->delay[i] > j->o.launch_delay_cutoff_us;
	}
	cJSON_AddNumberToObject(o, "pairs", (double)l->n);
	cJSON_AddItemToObject(o, "cpu_us", stats_json(l->cpu, l->n, 0));
	cJSON_AddItemToObject(o, "gpu_us", stats_json(l->gpu, l->n, 0));
	cJSON_AddItemToObject(o, "delay_us", stats_json(l->delay, l->n, 1));
	cJSON_AddNumberToObject(o, "short_kernels", (double)sk);
	cJSON_AddNumberToObject(o, "runtime_outliers", (double)ro);
	cJSON_AddNumberToObject(o, "launch_delay_outliers", (double)lo);
	return o;
}

static cJSON *queue_json(struct queue *q)
{
	cJSON *o = cJSON_CreateObject();
	qsort(q->s, q->n, sizeof(*q->s), cmp_qsample);
	for (size_t i = 0; i < q->n; i++) {
		struct qsample *s = &q->s[i];
		char key[32];
		snprintf(key, sizeof(key), "%lld", (long long)s->stream);
		cJSON *x = cJSON_CreateObject();
		double *c = xalloc(NULL, (s->n ? s->n : 1) * sizeof(*c));
		memcpy(c, s->v, s->n * sizeof(*c));
		qsort(c, s->n, sizeof(*c), cmp_double_p);
		cJSON_AddNumberToObject(x, "count", (double)s->n);
		add_num(x, "mean", mean_of(c, s->n));
		add_num(x, "std", std_of(c, s->n));
		add_num(x, "min", s->n ? c[0] : NAN);
		add_num(x, "p25", quantile_sorted(c, s->n, 0.25));
		add_num(x, "p50", quantile_sorted(c, s->n, 0.5));
		add_num(x, "p75", quantile_sorted(c, s->n, 0.75));
		add_num(x, "max", s->n ? c[s->n - 1] : NAN);
		free(c);
		cJSON_AddItemToObject(o, key, x);
	}
	return o;
}

static cJSON *by_name_json(const struct fl_dm_job *j, struct name_dur *nd, size_t n)
{
	struct name_row *rows;
	size_t nr = aggr_by_name(j, nd, n, &rows);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < nr; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", rows[i].name);
		add_num(x, "sum_us", rows[i].sum);
		add_num(x, "max_us", rows[i].max);
		add_num(x, "min_us", rows[i].min);
		add_num(x, "mean_us", rows[i].mean);
		add_num(x, "std_us", rows[i].std);
		cJSON_AddItemToArray(a, x);
	}
	free(rows);
	return a;
}

static cJSON *types_json(const double by_mask[8])
{
	cJSON *o = cJSON_CreateObject();
	double total = 0;
	for (int m = 1; m < 8; m++)
		total += by_mask[m];
	/* HTA's order: by time, descending */
	int order[7], no = 0;
	for (int m = 1; m < 8; m++)
		if (by_mask[m] != 0)
			order[no++] = m;
	for (int a = 1; a < no; a++)
		for (int b = a; b > 0 && by_mask[order[b]] > by_mask[order[b - 1]]; b--) {
			int t = order[b];
			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	for (int i = 0; i < no; i++) {
		char label[80];
		mask_label(order[i], label, sizeof(label));
		cJSON *x = cJSON_CreateObject();
		add_num(x, "us", by_mask[order[i]]);
		add_num(x, "pct", pct(by_mask[order[i]], total));
		cJSON_AddItemToObject(o, label, x);
	}
	return o;
}

/* ----------------------------------------------------------- straggler */

struct srow { /* a long collective: the last of its (rank, stream, iteration, name) */
	size_t rank;
	int32_t stream, iter;
	uint32_t name;
	double ts, dur;
	uint32_t ord;
};

static int cmp_srow(const void *a, const void *b)
{
	const struct srow *x = a, *y = b;
	if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
	if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
	if (x->iter != y->iter) return x->iter < y->iter ? -1 : 1;
	if (x->name != y->name) return strcmp(str(sort_job, x->name), str(sort_job, y->name));
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static int in_list(const int32_t *v, size_t n, int32_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

/* The analysed steps: step numbers of the step rows in the views (HTA's
 * get_profiler_steps), sorted. */
static size_t analysed_steps(const struct fl_dm_job *j, int32_t **out)
{
	int32_t *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t ri = 0; ri < j->nranks; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		for (size_t i = 0; i < r->nview; i++) {
			const struct dm_ev *e = &r->ev[r->view[i]];
			if (!(j->nf[e->name] & NF_STARTS_PS) || !(j->nf[e->name] & NF_STEP))
				continue;
			long long s = j->stepnum[e->name];
			int32_t x = s > INT32_MAX ? INT32_MAX : (int32_t)s;
			if (!in_list(v, n, x)) {
				GROW(v, n, cap);
				v[n++] = x;
			}
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_i32);
	*out = v;
	return n;
}

struct cand { /* a (stream, name) and the mean over iterations of its std across ranks */
	int32_t stream;
	uint32_t name;
	double sum;
	size_t n;
};

static cJSON *straggler_json(const struct fl_dm_job *j, int k_candidates)
{
	cJSON *o = cJSON_CreateObject();
	const char *why = NULL;
	int32_t *steps = NULL, *iters = NULL;
	struct srow *rows = NULL;
	struct cand *cands = NULL;
	size_t nrows = 0, rcap = 0, ncand = 0, niters = 0;
	size_t nsteps = analysed_steps(j, &steps);
	if (j->nranks < 2) {
		why = "needs two or more ranks";
		goto out;
	}
	if (!nsteps) {
		why = "no ProfilerStep in the traces";
		goto out;
	}
	/* the rows of the analysed steps: t_min, the last end, the iterations */
	double tmin = INFINITY, tmax = -INFINITY;
	for (size_t ri = 0; ri < j->nranks; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		for (size_t i = 0; i < r->nview; i++) {
			const struct dm_ev *e = &r->ev[r->view[i]];
			if (e->iter == ITER_NAN || !in_list(steps, nsteps, e->iter))
				continue;
			if (e->ts < tmin) tmin = e->ts;
			if (e->ts + e->dur > tmax) tmax = e->ts + e->dur;
			if (!in_list(iters, niters, e->iter)) {
				iters = xalloc(iters, (niters + 1) * sizeof(*iters));
				iters[niters++] = e->iter;
			}
		}
		for (size_t i = 0; i < r->nh; i++) {
			const struct dm_host *h = &r->host[i];
			if (!host_kept(r, h->ts))
				continue;
			int32_t it = iter_of_ts(r, h->ts);
			if (!in_list(steps, nsteps, it))
				continue;
			if (h->ts < tmin) tmin = h->ts;
			if (h->ts + h->dur > tmax) tmax = h->ts + h->dur;
			if (!in_list(iters, niters, it)) {
				iters = xalloc(iters, (niters + 1) * sizeof(*iters));
				iters[niters++] = it;
			}
		}
	}
	if (!niters) {
		why = "no event in the analysed steps";
		goto out;
	}
	double mean_iter = (tmax - tmin) / (double)niters, min_dur = mean_iter * 0.01;
	uint32_t ord = 0;
	for (size_t ri = 0; ri < j->nranks; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		for (size_t i = 0; i < r->nview; i++) {
			const struct dm_ev *e = &r->ev[r->view[i]];
			if (e->stream <= 0 || e->iter == ITER_NAN || e->iter <= 0 || !in_list(steps, nsteps, e->iter) ||
			    !(e->dur >= min_dur) || ktype(j, e->name) != KT_COMM)
				continue;
			GROW(rows, nrows, rcap);
			rows[nrows++] = (struct srow){ri, e->stream, e->iter, e->name, e->ts, e->dur, ord++};
		}
	}
	sort_job = j;
	qsort(rows, nrows, sizeof(*rows), cmp_srow);
	size_t nl = 0; /* keep the last row of each group */
	for (size_t i = 0; i < nrows; i++) {
		if (i + 1 < nrows && rows[i + 1].rank == rows[i].rank && rows[i + 1].stream == rows[i].stream &&
		    rows[i + 1].iter == rows[i].iter && rows[i + 1].name == rows[i].name)
			continue;
		rows[nl++] = rows[i];
	}
	nrows = nl;
	/* std across ranks of duration / mean_iter per (stream, iteration, name),
	 * averaged per (stream, name) */
	double *tmp = xalloc(NULL, (j->nranks + 1) * sizeof(*tmp));
	for (size_t i = 0; i < nrows; i++) {
		size_t nv = 0;
		for (size_t q = 0; q < nrows; q++)
			if (rows[q].stream == rows[i].stream && rows[q].iter == rows[i].iter && rows[q].name == rows[i].name) {
				if (q < i)
					goto next; /* the group was done at its first row */
				tmp[nv++] = rows[q].dur / mean_iter;
			}
		double sd = std_of(tmp, nv);
		size_t c;
		for (c = 0; c < ncand; c++)
			if (cands[c].stream == rows[i].stream && cands[c].name == rows[i].name)
				break;
		if (c == ncand) {
			cands = xalloc(cands, (ncand + 1) * sizeof(*cands));
			cands[ncand++] = (struct cand){rows[i].stream, rows[i].name, 0, 0};
		}
		if (!isnan(sd)) {
			cands[c].sum += sd;
			cands[c].n++;
		}
	next:;
	}
	free(tmp);
	int best = -1;
	double best_v = -INFINITY;
	for (size_t c = 0; c < ncand; c++) { /* idxmax: the first maximum in (stream, name) order */
		if (!cands[c].n)
			continue;
		double v = cands[c].sum / (double)cands[c].n;
		int better = v > best_v;
		if (best >= 0 && v == best_v) {
			const struct cand *b = &cands[best];
			better = cands[c].stream < b->stream ||
				 (cands[c].stream == b->stream && strcmp(str(j, cands[c].name), str(j, b->name)) < 0);
		}
		if (better) {
			best = (int)c;
			best_v = v;
		}
	}
	if (best < 0) {
		why = nrows ? "the long collectives vary on no rank (one rank per collective)"
			    : "no long collective (nccl...Kernel) in the analysed steps";
		goto out;
	}
	int32_t bstream = cands[best].stream;
	uint32_t bname = cands[best].name;
	/* per iteration: the ranks that start it latest (top k); counts per rank */
	size_t nr = j->nranks;
	double *cnt1 = xalloc(NULL, nr * sizeof(double)), *cntk = xalloc(NULL, nr * sizeof(double));
	double *late = xalloc(NULL, nr * sizeof(double));
	size_t *nlate = xalloc(NULL, nr * sizeof(size_t));
	int *has = xalloc(NULL, nr * sizeof(int));
	memset(cnt1, 0, nr * sizeof(double));
	memset(cntk, 0, nr * sizeof(double));
	memset(late, 0, nr * sizeof(double));
	memset(nlate, 0, nr * sizeof(size_t));
	memset(has, 0, nr * sizeof(int));
	double spread_sum = 0, spread_max = 0;
	size_t nspread = 0, cand_iters = 0;
	double *ms = xalloc(NULL, (nrows ? nrows : 1) * sizeof(double));
	qsort(iters, niters, sizeof(*iters), cmp_i32);
	for (size_t it = 0; it < niters; it++) {
		size_t nv = 0;
		double lo = INFINITY, hi = -INFINITY;
		for (size_t i = 0; i < nrows; i++)
			if (rows[i].stream == bstream && rows[i].name == bname && rows[i].iter == iters[it]) {
				double m = (rows[i].ts - tmin) / mean_iter;
				ms[nv++] = m;
				has[rows[i].rank] = 1;
				if (rows[i].ts < lo) lo = rows[i].ts;
				if (rows[i].ts > hi) hi = rows[i].ts;
			}
		if (!nv)
			continue;
		cand_iters++;
		double *sorted = xalloc(NULL, nv * sizeof(double));
		memcpy(sorted, ms, nv * sizeof(double));
		qsort(sorted, nv, sizeof(double), cmp_double_p);
		double th1 = sorted[nv - 1];
		double thk = sorted[nv >= (size_t)k_candidates ? nv - (size_t)k_candidates : 0];
		free(sorted);
		for (size_t i = 0; i < nrows; i++)
			if (rows[i].stream == bstream && rows[i].name == bname && rows[i].iter == iters[it]) {
				double m = (rows[i].ts - tmin) / mean_iter;
				cnt1[rows[i].rank] += m >= th1;
				cntk[rows[i].rank] += m >= thk;
				late[rows[i].rank] += rows[i].ts - lo;
				nlate[rows[i].rank]++;
			}
		spread_sum += hi - lo;
		if (hi - lo > spread_max)
			spread_max = hi - lo;
		nspread++;
	}
	free(ms);
	/* ranks by count, descending; ties keep rank order */
	int first = -1;
	for (size_t ri = 0; ri < nr; ri++)
		if (has[ri] && (first < 0 || cnt1[ri] > cnt1[first]))
			first = (int)ri;
	cJSON_AddNumberToObject(o, "rank", (double)j->ranks[first].rank);
	cJSON *cand = cJSON_CreateArray();
	unsigned char *used = xalloc(NULL, nr);
	memset(used, 0, nr);
	for (int c = 0; c < k_candidates; c++) {
		int b = -1;
		for (size_t ri = 0; ri < nr; ri++)
			if (has[ri] && !used[ri] && (b < 0 || cntk[ri] > cntk[b]))
				b = (int)ri;
		if (b < 0)
			break;
		used[b] = 1;
		cJSON_AddItemToArray(cand, cJSON_CreateNumber((double)j->ranks[b].rank));
	}
	free(used);
	cJSON_AddItemToObject(o, "candidates", cand);
	cJSON *counts = cJSON_CreateObject(), *lateo = cJSON_CreateObject();
	for (size_t ri = 0; ri < nr; ri++) {
		if (!has[ri])
			continue;
		char key[32];
		snprintf(key, sizeof(key), "%lld", j->ranks[ri].rank);
		cJSON_AddNumberToObject(counts, key, cnt1[ri]);
		add_num(lateo, key, nlate[ri] ? late[ri] / (double)nlate[ri] : NAN);
	}
	cJSON_AddItemToObject(o, "counts", counts);
	cJSON_AddNumberToObject(o, "stream", bstream);
	cJSON_AddStringToObject(o, "kernel", str(j, bname));
	cJSON_AddNumberToObject(o, "iterations", (double)cand_iters);
	add_num(o, "mean_iteration_us", mean_iter);
	cJSON *spread = cJSON_CreateObject();
	add_num(spread, "mean", nspread ? spread_sum / (double)nspread : NAN);
	add_num(spread, "max", spread_max);
	cJSON_AddItemToObject(o, "spread_us", spread);
	cJSON_AddItemToObject(o, "late_us", lateo);
	free(cnt1);
	free(cntk);
	free(late);
	free(nlate);
	free(has);
out:
	free(steps);
	free(iters);
	free(rows);
	free(cands);
	if (why) {
		cJSON_Delete(o);
		o = cJSON_CreateObject();
		cJSON_AddNullToObject(o, "rank");
		cJSON_AddStringToObject(o, "why", why);
	}
	return o;
}

/* ------------------------------------------------------------ builders */

cJSON *fl_device_metrics_json(const struct fl_dm_job *j)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "schema", "faultline.device_metrics/1");
	cJSON_AddStringToObject(root, "definitions", "HolisticTraceAnalysis 0.5.0");
	cJSON *ids = cJSON_CreateArray(), *files = cJSON_CreateArray();
	for (size_t i = 0; i < j->nranks; i++) {
		cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)j->ranks[i].rank));
		cJSON_AddItemToArray(files, cJSON_CreateString(j->ranks[i].path));
	}
	cJSON_AddItemToObject(root, "rank_ids", ids);
	cJSON_AddItemToObject(root, "files", files);
	/* steps */
	cJSON *steps = cJSON_CreateObject(), *rec = cJSON_CreateArray(), *ana = cJSON_CreateArray();
	int32_t *sv = NULL;
	size_t ns = 0, cap = 0;
	int rounded = 0;
	for (size_t ri = 0; ri < j->nranks; ri++) {
		rounded |= j->ranks[ri].rounded;
		for (size_t s = 0; s < j->ranks[ri].nsteps; s++) {
			long long x = j->ranks[ri].steps[s].num;
			int32_t v = x > INT32_MAX ? INT32_MAX : (int32_t)x;
			if (!in_list(sv, ns, v)) {
				GROW(sv, ns, cap);
				sv[ns++] = v;
			}
		}
	}
	if (ns)
		qsort(sv, ns, sizeof(*sv), cmp_i32);
	for (size_t i = 0; i < ns; i++)
		cJSON_AddItemToArray(rec, cJSON_CreateNumber(sv[i]));
	free(sv);
	ns = analysed_steps(j, &sv);
	for (size_t i = 0; i < ns; i++)
		cJSON_AddItemToArray(ana, cJSON_CreateNumber(sv[i]));
	free(sv);
	cJSON_AddItemToObject(steps, "recorded", rec);
	cJSON_AddItemToObject(steps, "analyzed", ana);
	cJSON_AddBoolToObject(steps, "dropped_last", j->step_symbols >= 2 && !j->o.include_last_step);
	cJSON_AddBoolToObject(steps, "rounded_us", rounded);
	cJSON_AddItemToObject(root, "steps", steps);

	/* per rank, and pooled */
	struct temporal tall = {0};
	struct overlap oall = {0};
	struct idle iall = {0};
	struct launch lall = {0};
	struct queue qall = {0};
	double mall[8] = {0};
	struct name_dur *kall[3] = {NULL, NULL, NULL};
	size_t nkall[3] = {0, 0, 0}, ckall[3] = {0, 0, 0};
	static const int kts[3] = {KT_COMP, KT_COMM, KT_MEM};
	cJSON *ranks = cJSON_CreateObject();
	for (size_t ri = 0; ri < j->nranks; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "file", r->path);
		cJSON_AddNumberToObject(x, "events", (double)r->info.n_events);
		cJSON_AddNumberToObject(x, "events_analyzed", (double)r->nview);
		struct temporal t = temporal_of(j, r);
		if (t.ok) {
			tall.ok = 1;
			tall.idle += t.idle;
			tall.compute += t.compute;
			tall.noncompute += t.noncompute;
			tall.span += t.span;
		}
		cJSON_AddItemToObject(x, "temporal", temporal_json(&t));
		struct overlap ov = overlap_of(j, r);
		oall.ok |= ov.ok;
		oall.comm += ov.comm;
		oall.overlap += ov.overlap;
		cJSON_AddItemToObject(x, "overlap", overlap_json(&ov));
		struct idle id = {0};
		idle_of(j, r, &id);
		for (size_t s = 0; s < id.n; s++) {
			struct idle_stream *a = idle_find(&iall, id.s[s].stream);
			for (int c = 0; c < 3; c++) {
				a->t[c] += id.s[s].t[c];
				a->present[c] |= id.s[s].present[c];
			}
			a->gaps += id.s[s].gaps;
		}
		cJSON_AddItemToObject(x, "idle", idle_json(&id));
		free(id.s);
		double m[8] = {0};
		kernel_type_time(j, r, m);
		for (int b = 0; b < 8; b++)
			mall[b] += m[b];
		cJSON *kern = cJSON_CreateObject(), *byn = cJSON_CreateObject();
		cJSON_AddItemToObject(kern, "types", types_json(m));
		for (int t3 = 0; t3 < 3; t3++) {
			struct name_dur *nd = NULL;
			size_t nn = 0, cn = 0;
			kernel_rows(j, r, kts[t3], &nd, &nn, &cn);
			if (nn)
				cJSON_AddItemToObject(byn, kt_name[kts[t3]], by_name_json(j, nd, nn));
			free(nd);
			kernel_rows(j, r, kts[t3], &kall[t3], &nkall[t3], &ckall[t3]);
		}
		cJSON_AddItemToObject(kern, "by_name", byn);
		cJSON_AddItemToObject(x, "kernels", kern);
		struct launch l = {0};
		launch_of(j, r, &l);
		for (size_t i = 0; i < l.n; i++)
			launch_add(&lall, l.cpu[i], l.gpu[i], l.delay[i]);
		cJSON_AddItemToObject(x, "launch", launch_json(j, &l));
		launch_free(&l);
		struct queue q = {0};
		queue_of(j, r, &q);
		for (size_t s = 0; s < q.n; s++) {
			struct qsample *a = queue_find(&qall, q.s[s].stream);
			for (size_t i = 0; i < q.s[s].n; i++)
				qsample_add(a, q.s[s].v[i]);
		}
		cJSON_AddItemToObject(x, "queue", queue_json(&q));
		queue_free(&q);
		char key[32];
		snprintf(key, sizeof(key), "%lld", r->rank);
		cJSON_AddItemToObject(ranks, key, x);
	}
	cJSON_AddItemToObject(root, "temporal", temporal_json(&tall));
	cJSON_AddItemToObject(root, "overlap", overlap_json(&oall));
	qsort(iall.s, iall.n, sizeof(*iall.s), cmp_idle_stream);
	cJSON_AddItemToObject(root, "idle", idle_json(&iall));
	free(iall.s);
	cJSON *kern = cJSON_CreateObject(), *byn = cJSON_CreateObject();
	cJSON_AddItemToObject(kern, "types", types_json(mall));
	for (int t3 = 0; t3 < 3; t3++) {
		if (nkall[t3])
			cJSON_AddItemToObject(byn, kt_name[kts[t3]], by_name_json(j, kall[t3], nkall[t3]));
		free(kall[t3]);
	}
	cJSON_AddItemToObject(kern, "by_name", byn);
	cJSON_AddItemToObject(root, "kernels", kern);
	cJSON_AddItemToObject(root, "launch", launch_json(j, &lall));
	launch_free(&lall);
	cJSON_AddItemToObject(root, "queue", queue_json(&qall));
	queue_free(&qall);
	cJSON_AddItemToObject(root, "straggler", straggler_json(j, j->o.straggler_candidates));
	cJSON_AddItemToObject(root, "ranks", ranks);
	return root;
}

enum fl_status fl_device_metrics(const char *const *paths, size_t n, const struct fl_dm_opts *o, cJSON **out)
{
	struct fl_dm_job *j;
	enum fl_status st = fl_dm_load(paths, n, o, &j);
	if (st)
		return st;
	*out = fl_device_metrics_json(j);
	fl_dm_free(j);
	return FL_OK;
}

/* ---------------------------------------------------------------- diff */

struct op_sum {
	uint32_t name;
	double count, us;
};

static int cmp_op_sum(const void *a, const void *b)
{
	const struct op_sum *x = a, *y = b;
	return strcmp(str(sort_job, x->name), str(sort_job, y->name));
}

/* The first step number of a job (HTA's LabeledTrace.iterations()[0]). */
static int first_step(const struct fl_dm_job *j, long long *out)
{
	int found = 0;
	for (size_t id = 0; id < j->nnf; id++)
		if ((j->nf[id] & NF_STEP) && (j->nf[id] & NF_SEEN_PS) && (!found || j->stepnum[id] < *out)) {
			*out = j->stepnum[id];
			found = 1;
		}
	return found;
}

static enum fl_status diff_side(const struct fl_dm_job *j, long long rank, long long iter, const char *what,
				struct op_sum **out, size_t *nout, long long *rank_out, long long *iter_out)
{
	const struct dm_rank *r = NULL;
	if (rank < 0) {
		r = j->nranks ? &j->ranks[0] : NULL;
	} else {
		for (size_t i = 0; i < j->nranks; i++)
			if (j->ranks[i].rank == rank)
				r = &j->ranks[i];
	}
	if (!r)
		return fl_error(FL_EINPUT, "diff: the %s traces have no rank %lld", what, rank);
	if (r->n_plain && !j->o.keep_host)
		return fl_error(FL_EINTERNAL, "diff: the %s traces were loaded without their host ops (keep_host)", what);
	if (iter == FL_DIFF_FIRST && !first_step(j, &iter))
		return fl_error(FL_EINPUT, "diff: the %s traces have no ProfilerStep", what);
	*rank_out = r->rank;
	*iter_out = iter;
	struct imap idx;
	imap_init(&idx, 256);
	struct op_sum *v = NULL;
	size_t n = 0, cap = 0;
	int any = 0;
#define DIFF_ADD(nm, dur)                                                                 \
	do {                                                                              \
		int32_t k = imap_get(&idx, (nm), -1);                                     \
		if (k < 0) {                                                              \
			GROW(v, n, cap);                                                  \
			v[n] = (struct op_sum){(nm), 0, 0};                               \
			k = (int32_t)n++;                                                 \
			imap_put(&idx, (nm), k);                                          \
		}                                                                         \
		v[k].count += 1;                                                          \
		v[k].us += (dur);                                                         \
	} while (0)
	for (size_t i = 0; i < r->n; i++) {
		const struct dm_ev *e = &r->ev[i];
		if (e->iter == ITER_NAN && iter != FL_DIFF_ALL)
			continue;
		if (iter != FL_DIFF_ALL && e->iter != iter)
			continue;
		DIFF_ADD(e->name, e->dur);
		any = 1;
	}
	for (size_t i = 0; i < r->nh; i++) {
		const struct dm_host *h = &r->host[i];
		if (iter != FL_DIFF_ALL && iter_of_ts(r, h->ts) != iter)
			continue;
		DIFF_ADD(h->name, h->dur);
		any = 1;
	}
#undef DIFF_ADD
	imap_free(&idx);
	if (!any && iter != FL_DIFF_ALL && iter != FL_DIFF_FIRST) {
		int exists = 0;
		for (size_t s = 0; s < r->nsteps; s++)
			exists |= r->steps[s].num == iter;
		if (!exists) {
			free(v);
			return fl_error(FL_EINPUT, "diff: the %s traces have no ProfilerStep#%lld", what, iter);
		}
	}
	*out = v;
	*nout = n;
	return FL_OK;
}

enum fl_status fl_trace_diff_json(const struct fl_dm_job *control, const struct fl_dm_job *test,
				  const struct fl_diff_opts *o, cJSON **out)
{
	struct fl_diff_opts d = FL_DIFF_OPTS_INIT;
	if (o)
		d = *o;
	struct op_sum *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	long long ra, ia, rb, ib;
	enum fl_status st;
	if ((st = diff_side(control, d.control_rank, d.control_iter, "control", &a, &na, &ra, &ia)))
		return st;
	if ((st = diff_side(test, d.test_rank, d.test_iter, "test", &b, &nb, &rb, &ib))) {
		free(a);
		return st;
	}
	/* names live in two string tables: compare by text */
	sort_job = control;
	qsort(a, na, sizeof(*a), cmp_op_sum);
	sort_job = test;
	qsort(b, nb, sizeof(*b), cmp_op_sum);
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "schema", "faultline.trace_diff/1");
	cJSON *c = cJSON_CreateObject(), *t = cJSON_CreateObject();
	cJSON_AddNumberToObject(c, "rank", (double)ra);
	cJSON_AddNumberToObject(t, "rank", (double)rb);
	if (ia == FL_DIFF_ALL)
		cJSON_AddStringToObject(c, "iteration", "all");
	else
		cJSON_AddNumberToObject(c, "iteration", (double)ia);
	if (ib == FL_DIFF_ALL)
		cJSON_AddStringToObject(t, "iteration", "all");
	else
		cJSON_AddNumberToObject(t, "iteration", (double)ib);
	cJSON_AddItemToObject(root, "control", c);
	cJSON_AddItemToObject(root, "test", t);
	cJSON *ops = cJSON_CreateObject();
	cJSON *lists[5];
	static const char *const lnames[5] = {"added", "deleted", "increased", "decreased", "unchanged"};
	for (int i = 0; i < 5; i++)
		lists[i] = cJSON_CreateArray();
	size_t i = 0, k = 0;
	while (i < na || k < nb) {
		int cmp = i >= na ? 1 : k >= nb ? -1 : strcmp(str(control, a[i].name), str(test, b[k].name));
		const char *name = cmp <= 0 ? str(control, a[i].name) : str(test, b[k].name);
		double cc = cmp <= 0 ? a[i].count : 0, cu = cmp <= 0 ? a[i].us : 0;
		double tc = cmp >= 0 ? b[k].count : 0, tu = cmp >= 0 ? b[k].us : 0;
		double dc = tc - cc;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "control_count", cc);
		cJSON_AddNumberToObject(x, "test_count", tc);
		cJSON_AddNumberToObject(x, "diff_count", dc);
		add_num(x, "control_us", cu);
		add_num(x, "test_us", tu);
		add_num(x, "diff_us", tu - cu);
		cJSON_AddStringToObject(x, "change", dc > 0 ? "+" : dc < 0 ? "-" : "=");
		cJSON_AddItemToObject(ops, name, x);
		if (cc == 0 && tc > 0) cJSON_AddItemToArray(lists[0], cJSON_CreateString(name));
		if (cc > 0 && tc == 0) cJSON_AddItemToArray(lists[1], cJSON_CreateString(name));
		if (cc > 0 && dc > 0) cJSON_AddItemToArray(lists[2], cJSON_CreateString(name));
		if (tc > 0 && dc < 0) cJSON_AddItemToArray(lists[3], cJSON_CreateString(name));
		if (tc > 0 && dc == 0) cJSON_AddItemToArray(lists[4], cJSON_CreateString(name));
		if (cmp <= 0)
			i++;
		if (cmp >= 0)
			k++;
	}
	cJSON_AddItemToObject(root, "ops", ops);
	for (int q = 0; q < 5; q++)
		cJSON_AddItemToObject(root, lnames[q], lists[q]);
	free(a);
	free(b);
	*out = root;
	return FL_OK;
}
