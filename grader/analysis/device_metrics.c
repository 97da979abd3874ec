/* device_metrics.c — see device_metrics.h (and docs/analyze.md for the
 * differences from HTA, each deliberate). */
#include "grader/analysis/device_metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grader/trace/trace_stream.h"

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

/* qsort, and memcpy, that take n == 0 with a NULL pointer */
static void sort_n(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, sz, cmp);
}

static void copy_n(void *dst, const void *src, size_t bytes)
{
	if (bytes)
		memcpy(dst, src, bytes);
}

/* Stable LSD radix sort of (key, item) pairs by key: 8-bit digits, digits
 * that all keys share are skipped. Sorting is what the analyses spend their
 * time on; this keeps it linear and cache-friendly. */
struct kv {
	uint64_t k;
	uint32_t i;
};

static void radix_kv(struct kv *a, size_t n)
{
	if (n < 2)
		return;
	if (n < 48) { /* insertion sort: stable too */
		for (size_t i = 1; i < n; i++) {
			struct kv x = a[i];
			size_t q = i;
			for (; q > 0 && a[q - 1].k > x.k; q--)
				a[q] = a[q - 1];
			a[q] = x;
		}
		return;
	}
	/* only the bytes in which some keys differ need a pass */
	uint64_t vary = 0, k0 = a[0].k;
	int sorted = 1;
	for (size_t i = 0; i < n; i++) {
		vary |= a[i].k ^ k0;
		sorted &= i == 0 || a[i - 1].k <= a[i].k;
	}
	if (sorted)
		return;
	int digit[8], nd = 0;
	for (int d = 0; d < 8; d++)
		if ((vary >> (8 * d)) & 255)
			digit[nd++] = d;
	size_t (*cnt)[256] = calloc((size_t)nd, sizeof(*cnt));
	if (!cnt)
		abort();
	for (size_t i = 0; i < n; i++)
		for (int q = 0; q < nd; q++)
			cnt[q][(a[i].k >> (8 * digit[q])) & 255]++;
	struct kv *tmp = xalloc(NULL, n * sizeof(*tmp)), *src = a, *dst = tmp;
	for (int q = 0; q < nd; q++) {
		int d = digit[q];
		size_t *c = cnt[q];
		size_t off = 0;
		for (int b = 0; b < 256; b++) {
			size_t t = c[b];
			c[b] = off;
			off += t;
		}
		for (size_t i = 0; i < n; i++)
			dst[c[(src[i].k >> (8 * d)) & 255]++] = src[i];
		struct kv *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(tmp);
	free(cnt);
}

/* order-preserving keys */
static uint64_t dkey(double d)
{
	if (d == 0)
		d = 0; /* -0.0 sorts with 0.0 */
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u >> 63 ? ~u : u | (1ull << 63);
}

static uint64_t ikey(int64_t x) { return (uint64_t)x ^ (1ull << 63); }

/* Keys for times: when all are whole numbers (HTA's rounding) they sort as
 * small integers, which take fewer radix passes than double keys. */
static void time_keys(struct kv *a, size_t n, const double *v, size_t stride)
{
	double lo = INFINITY, hi = -INFINITY;
	int whole = 1;
	for (size_t i = 0; i < n; i++) {
		double x = *(const double *)(const void *)((const char *)v + i * stride);
		whole &= x == floor(x);
		if (x < lo) lo = x;
		if (x > hi) hi = x;
	}
	whole &= n == 0 || hi - lo < 9007199254740992.0;
	for (size_t i = 0; i < n; i++) {
		double x = *(const double *)(const void *)((const char *)v + i * stride);
		a[i] = (struct kv){whole ? (uint64_t)(x - lo) : dkey(x), (uint32_t)i};
	}
}

/* Sort doubles ascending (no NaN). */
static void sort_doubles(double *v, size_t n)
{
	struct kv *a = xalloc(NULL, (n ? n : 1) * sizeof(*a));
	if (n)
		time_keys(a, n, v, sizeof(*v));
	radix_kv(a, n);
	double *o = xalloc(NULL, (n ? n : 1) * sizeof(*o));
	for (size_t i = 0; i < n; i++)
		o[i] = v[a[i].i];
	copy_n(v, o, n * sizeof(*v));
	free(o);
	free(a);
}

/* Reorder items (of size sz) by a permutation: out[k] = in[perm[k].i]. */
static void apply_perm(void *items, size_t sz, const struct kv *perm, size_t n)
{
	char *tmp = xalloc(NULL, (n ? n : 1) * sz);
	for (size_t k = 0; k < n; k++)
		memcpy(tmp + k * sz, (char *)items + (size_t)perm[k].i * sz, sz);
	copy_n(items, tmp, n * sz);
	free(tmp);
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
	int32_t grp;     /* its correlation group (struct dm_rank.gbeg), -1 */
	uint16_t flags;  /* EF_* */
	uint16_t mult;   /* times in the view (HTA's merge repeats rows), 0: filtered out */
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
	/* events with a correlation, by correlation (file order within):
	 * group g is gpos[gbeg[g] .. gbeg[g + 1]) */
	uint32_t *gpos, *gbeg;
	size_t ngroups;
	/* the events HTA analyses after its filter: positions in ev (repeated
	 * when several kept host events share a correlation) */
	int32_t *view;
	size_t nview;
	int filtered, cut_incl; /* host events kept: ts < cut (ts <= cut with cut_incl) */
	double cut;
	int32_t ev0;            /* position of traceEvents[0] in ev, -1 */
};

/* Strings and what the analyses need to know of them, per string id. */
struct names {
	struct fl_strtab *strings;
	uint16_t *nf;       /* NF_* (computed on first use) */
	long long *stepnum; /* the N of ProfilerStep#N, -1 */
	size_t nnf;
};

struct fl_dm_job {
	struct fl_dm_opts o;
	struct names nm;
	struct dm_rank *ranks;
	size_t nranks;
	size_t step_symbols;
	uint64_t json_bytes, events;
};

double fl_dm_json_bytes(const struct fl_dm_job *job) { return (double)job->json_bytes; }
uint64_t fl_dm_events(const struct fl_dm_job *job) { return job->events; }

static uint16_t name_flags(struct names *m, uint32_t id)
{
	if (id >= m->nnf) {
		size_t n = fl_strtab_count(m->strings) + 256;
		m->nf = xalloc(m->nf, n * sizeof(*m->nf));
		m->stepnum = xalloc(m->stepnum, n * sizeof(*m->stepnum));
		memset(m->nf + m->nnf, 0, (n - m->nnf) * sizeof(*m->nf));
		m->nnf = n;
	}
	uint16_t f = m->nf[id];
	if (f & NF_DONE)
		return f;
	const char *s = fl_strtab_str(m->strings, id);
	size_t n = fl_strtab_len(m->strings, id);
	f = NF_DONE;
	if (find_mem(s, n, "ProfilerStep"))
		f |= NF_HAS_PS;
	if (n >= 12 && !memcmp(s, "ProfilerStep", 12))
		f |= NF_STARTS_PS;
	m->stepnum[id] = step_number(s, n);
	if (m->stepnum[id] >= 0)
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
	m->nf[id] = f;
	return f;
}

static int ktype(const struct fl_dm_job *j, uint32_t name) { return (j->nm.nf[name] >> NF_KT_SHIFT) & 3; }
static const char *str(const struct fl_dm_job *j, uint32_t id) { return fl_strtab_str(j->nm.strings, id); }

/* ------------------------------------------------------------------ load */

/* Reading one file: its own strings (files are read in parallel), merged
 * into the job's afterwards. */
struct load_ctx {
	struct names nm;
	struct dm_rank *r;
	const char *path;
	int keep_host, no_thread;
	enum fl_status st;
	char msg[1024];
};

static enum fl_status on_event(void *arg, const struct fl_tev *e)
{
	struct load_ctx *c = arg;
	struct dm_rank *r = c->r;
	if (!(e->has & FL_TEV_DUR) || !(e->has & FL_TEV_CAT))
		return FL_OK; /* HTA: dropna(subset=["dur", "cat"]) */
	uint16_t cf = name_flags(&c->nm, e->cat);
	if (cf & NF_TRACE)
		return FL_OK;
	if (!(e->has & FL_TEV_TS) || !isfinite(e->ts) || !isfinite(e->dur)) {
		r->n_no_ts++;
		return FL_OK;
	}
	uint16_t nf = name_flags(&c->nm, e->name);
	if (nf & NF_HAS_PS)
		c->nm.nf[e->name] |= NF_SEEN_PS;
	if (cf & NF_HAS_PS)
		c->nm.nf[e->cat] |= NF_SEEN_PS;
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
		d->grp = -1;
		d->mult = 0;
		d->flags = (uint16_t)((gpu ? EF_GPU : 0) | (cf & NF_KCAT ? EF_KCAT : 0));
		return FL_OK;
	}
	r->n_plain++;
	if (c->keep_host) {
		GROW(r->host, r->nh, r->caph);
		r->host[r->nh++] = (struct dm_host){e->ts, e->dur, e->name};
	}
	return FL_OK;
}

static void names_release(struct names *m)
{
	fl_strtab_free(m->strings);
	free(m->nf);
	free(m->stepnum);
	memset(m, 0, sizeof(*m));
}

static void load_one(struct load_ctx *c)
{
	c->nm.strings = fl_strtab_new();
	struct fl_trace_stream_opts so = {.strings = c->nm.strings, .on_event = on_event, .arg = c,
					  .no_thread = c->no_thread};
	c->st = fl_trace_stream_file(c->path, &so, &c->r->info);
	if (c->st)
		snprintf(c->msg, sizeof(c->msg), "%s", fl_error_msg()); /* messages are per thread */
}

struct loader {
	pthread_mutex_t mu;
	struct load_ctx *ctx;
	size_t n, next;
};

static void *loader_main(void *arg)
{
	struct loader *l = arg;
	for (;;) {
		pthread_mutex_lock(&l->mu);
		size_t i = l->next++;
		pthread_mutex_unlock(&l->mu);
		if (i >= l->n)
			return NULL;
		load_one(&l->ctx[i]);
	}
}

/* Read the files, several at a time when there are cores for them (as HTA
 * parses ranks in parallel processes). */
static void load_all(struct load_ctx *ctx, size_t n, int no_thread)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nt = no_thread || cpus < 2 ? 1 : (size_t)cpus < n ? (size_t)cpus : n;
	struct loader l = {.ctx = ctx, .n = n};
	pthread_mutex_init(&l.mu, NULL);
	pthread_t th[64];
	size_t started = 0;
	for (size_t t = 1; t < nt && t < 64; t++)
		if (!pthread_create(&th[started], NULL, loader_main, &l))
			started++;
	loader_main(&l);
	for (size_t t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&l.mu);
}

/* Move a file's strings into the job's: rewrite its name ids. */
static void merge_names(struct fl_dm_job *j, struct load_ctx *c)
{
	struct dm_rank *r = c->r;
	uint32_t n = fl_strtab_count(c->nm.strings);
	uint32_t *map = xalloc(NULL, (n ? n : 1) * sizeof(*map));
	for (uint32_t id = 0; id < n; id++) {
		map[id] = fl_strtab_intern(j->nm.strings, fl_strtab_str(c->nm.strings, id),
					   fl_strtab_len(c->nm.strings, id));
		uint16_t f = name_flags(&j->nm, map[id]);
		if (id < c->nm.nnf && (c->nm.nf[id] & NF_SEEN_PS))
			j->nm.nf[map[id]] = (uint16_t)(f | NF_SEEN_PS);
	}
	for (size_t i = 0; i < r->n; i++)
		r->ev[i].name = map[r->ev[i].name];
	for (size_t i = 0; i < r->nh; i++)
		r->host[i].name = map[r->host[i].name];
	free(map);
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
	sort_n(b, nb, sizeof(*b), cmp_double_p);
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
/* HTA's ns rounding: pandas reads ts as floats when some ts has a fraction or
 * is missing; then ts = ceil(ts), end = floor(ts + dur). Returns the earliest ts. */
static double round_rank(struct dm_rank *r)
{
	double lo = INFINITY;
	r->rounded = (r->info.n_ts_float + r->info.n_ts_missing) > 0 && r->info.n_ts_other == 0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->rounded) {
			double end = floor(r->ev[i].ts + r->ev[i].dur);
			r->ev[i].ts = ceil(r->ev[i].ts);
			r->ev[i].dur = end - r->ev[i].ts;
		}
		if (r->ev[i].ts < lo)
			lo = r->ev[i].ts;
	}
	for (size_t i = 0; i < r->nh; i++) {
		if (r->rounded) {
			double end = floor(r->host[i].ts + r->host[i].dur);
			r->host[i].ts = ceil(r->host[i].ts);
			r->host[i].dur = end - r->host[i].ts;
		}
		if (r->host[i].ts < lo)
			lo = r->host[i].ts;
	}
	return lo;
}

/* HTA's _align_all_ranks: the job's earliest event is time 0. */
static void align_rank(struct dm_rank *r, double t0)
{
	for (size_t i = 0; i < r->n; i++)
		r->ev[i].ts -= t0;
	for (size_t i = 0; i < r->nh; i++)
		r->host[i].ts -= t0;
}

/* HTA's transform_correlation_to_index (index_correlation: a device event
 * links to the last host event with its correlation, a host event to the
 * last device event), done on correlation groups. */
static void link_rank(struct dm_rank *r)
{
	size_t nc = 0;
	r->ev0 = -1;
	for (size_t i = 0; i < r->n; i++) {
		if (r->ev[i].index == 0)
			r->ev0 = (int32_t)i;
		nc += r->ev[i].corr != -1;
	}
	struct kv *a = xalloc(NULL, (nc ? nc : 1) * sizeof(*a));
	nc = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].corr != -1)
			a[nc++] = (struct kv){ikey(r->ev[i].corr), (uint32_t)i};
	radix_kv(a, nc);
	r->gpos = xalloc(NULL, (nc ? nc : 1) * sizeof(*r->gpos));
	r->gbeg = xalloc(NULL, (nc + 1) * sizeof(*r->gbeg));
	r->ngroups = 0;
	for (size_t s = 0; s < nc;) {
		size_t e = s;
		int32_t last_cpu = -1, last_gpu = -1;
		while (e < nc && a[e].k == a[s].k) {
			uint32_t p = a[e].i;
			r->gpos[e] = p;
			r->ev[p].grp = (int32_t)r->ngroups;
			if (r->ev[p].flags & EF_GPU)
				last_gpu = (int32_t)p;
			else
				last_cpu = (int32_t)p;
			e++;
		}
		for (size_t q = s; q < e; q++) {
			struct dm_ev *x = &r->ev[a[q].i];
			x->link = x->flags & EF_GPU ? last_cpu : last_gpu;
		}
		r->gbeg[r->ngroups++] = (uint32_t)s;
		s = e;
	}
	r->gbeg[r->ngroups] = (uint32_t)nc;
	free(a);
}

/* HTA's load_traces for one rank, after all ranks are read and aligned. */
/* HTA's merge repeats a device event once per host event of its correlation;
 * correlation ids that repeat thousands of times (a broken trace) would make
 * that quadratic. Past this many rows per event the work is refused. */
#define ROWS_PER_EVENT 4

static enum fl_status prepare_rank(struct fl_dm_job *j, struct dm_rank *r)
{
	link_rank(r);
	/* steps and iterations */
	size_t cap = 0;
	for (size_t i = 0; i < r->n; i++) {
		struct dm_ev *e = &r->ev[i];
		if (!(j->nm.nf[e->name] & NF_STEP))
			continue;
		GROW(r->steps, r->nsteps, cap);
		r->steps[r->nsteps++] = (struct dm_step){e->ts, e->dur, j->nm.stepnum[e->name], i};
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
	r->filtered = j->step_symbols >= 2;
	size_t vcap = 0;
	if (!r->filtered) {
		r->view = xalloc(NULL, (r->n ? r->n : 1) * sizeof(*r->view));
		for (size_t i = 0; i < r->n; i++) {
			r->view[i] = (int32_t)i;
			r->ev[i].mult = 1;
		}
		r->nview = r->n;
		return FL_OK;
	}
	double last_start = NAN, last_end = NAN;
	for (size_t i = 0; i < r->n; i++) {
		const struct dm_ev *e = &r->ev[i];
		if ((e->flags & EF_GPU) || !(j->nm.nf[e->name] & NF_HAS_PS))
			continue;
		if (!(last_start >= e->ts))
			last_start = e->ts;
		if (!(last_end >= e->ts + e->dur))
			last_end = e->ts + e->dur;
	}
	r->cut_incl = j->o.include_last_step;
	r->cut = r->cut_incl ? last_end : last_start;
	for (size_t i = 0; i < r->n; i++) {
		struct dm_ev *e = &r->ev[i];
		if (!(e->flags & EF_GPU))
			e->mult = host_kept(r, e->ts);
	}
	for (size_t g = 0; g < r->ngroups; g++) {
		/* a device event is repeated once per kept host event of its
		 * correlation (HTA's inner merge) */
		size_t kept = 0;
		for (uint32_t q = r->gbeg[g]; q < r->gbeg[g + 1]; q++) {
			const struct dm_ev *x = &r->ev[r->gpos[q]];
			kept += !(x->flags & EF_GPU) && x->mult;
		}
		for (uint32_t q = r->gbeg[g]; q < r->gbeg[g + 1]; q++) {
			struct dm_ev *x = &r->ev[r->gpos[q]];
			if (x->flags & EF_GPU)
				x->mult = (uint16_t)(kept < UINT16_MAX ? kept : UINT16_MAX);
		}
	}
	size_t nview = 0, want = 0;
	for (size_t i = 0; i < r->n; i++)
		want += r->ev[i].mult;
	if (want > ROWS_PER_EVENT * r->n + 1000000)
		return fl_error(FL_EINPUT,
				"'%s': correlation ids repeat too often: HTA's join would make %zu rows of %zu events",
				r->path, want, r->n);
	for (int pass = 0; pass < 2; pass++) /* device events first (HTA's concat order) */
		for (size_t i = 0; i < r->n; i++) {
			const struct dm_ev *e = &r->ev[i];
			if ((int)!(e->flags & EF_GPU) != pass)
				continue;
			for (uint16_t k = 0; k < e->mult; k++) {
				GROW(r->view, nview, vcap);
				r->view[nview++] = (int32_t)i;
			}
		}
	r->nview = nview;
	return FL_OK;
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
	free(r->gpos);
	free(r->gbeg);
}

void fl_dm_free(struct fl_dm_job *job)
{
	if (!job)
		return;
	for (size_t i = 0; i < job->nranks; i++)
		rank_release(&job->ranks[i]);
	free(job->ranks);
	free(job->nm.nf);
	free(job->nm.stepnum);
	fl_strtab_free(job->nm.strings);
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
	j->nm.strings = fl_strtab_new();
	j->ranks = calloc(n ? n : 1, sizeof(*j->ranks));
	if (!j->ranks)
		abort();
	enum fl_status st = FL_OK;
	struct load_ctx *ctx = NULL;
	*out = NULL;
	if (!n) {
		st = fl_error(FL_EINPUT, "no trace to analyse");
		goto fail;
	}
	ctx = calloc(n, sizeof(*ctx));
	if (!ctx)
		abort();
	for (size_t i = 0; i < n; i++) {
		struct dm_rank *r = &j->ranks[j->nranks++];
		r->path = strdup(paths[i]);
		if (!r->path)
			abort();
		ctx[i] = (struct load_ctx){.r = r, .path = paths[i], .keep_host = j->o.keep_host,
					   .no_thread = j->o.no_thread};
	}
	load_all(ctx, n, j->o.no_thread);
	for (size_t i = 0; i < n; i++) {
		if (ctx[i].st) {
			st = fl_error(ctx[i].st, "%s", ctx[i].msg);
			goto fail;
		}
		struct dm_rank *r = ctx[i].r;
		merge_names(j, &ctx[i]);
		names_release(&ctx[i].nm);
		r->rank = r->info.has_hta_rank ? r->info.hta_rank : 0;
		j->json_bytes += r->info.bytes_json;
		j->events += r->info.n_events;
	}
	sort_n(j->ranks, j->nranks, sizeof(*j->ranks), cmp_rank);
	for (size_t i = 1; i < j->nranks; i++)
		if (j->ranks[i].rank == j->ranks[i - 1].rank) {
			st = fl_error(FL_EINPUT, "'%s' and '%s' are both rank %lld (a job has one trace per rank)",
				      j->ranks[i - 1].path, j->ranks[i].path, j->ranks[i].rank);
			goto fail;
		}
	for (size_t id = 0; id < j->nm.nnf; id++)
		if (j->nm.nf[id] & NF_SEEN_PS)
			j->step_symbols++;
	double t0 = INFINITY;
	for (size_t i = 0; i < j->nranks; i++) {
		double lo = round_rank(&j->ranks[i]);
		if (lo < t0)
			t0 = lo;
	}
	for (size_t i = 0; i < j->nranks; i++) {
		if (isfinite(t0))
			align_rank(&j->ranks[i], t0);
		if ((st = prepare_rank(j, &j->ranks[i])))
			goto fail;
	}
	free(ctx);
	*out = j;
	return FL_OK;
fail:
	for (size_t i = 0; ctx && i < n; i++)
		names_release(&ctx[i].nm);
	free(ctx);
	fl_dm_free(j);
	return st;
}

/* ------------------------------------------------------------- intervals */

struct ivl {
	double ts, end;
};

/* A rank's device rows (stream != -1) of the view, sorted by ts (ties in view
 * order), computed once for all the analyses. */
struct actx {
	const struct fl_dm_job *j;
	const struct dm_rank *r;
	uint32_t *dev; /* view indices */
	size_t ndev;
};

static void actx_init(struct actx *c, const struct fl_dm_job *j, const struct dm_rank *r)
{
	c->j = j;
	c->r = r;
	struct kv *a = xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*a));
	double *ts = xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*ts));
	uint32_t *vi = xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*vi));
	size_t n = 0;
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->stream != -1) {
			ts[n] = e->ts;
			vi[n++] = (uint32_t)i;
		}
	}
	if (n)
		time_keys(a, n, ts, sizeof(*ts));
	radix_kv(a, n);
	c->dev = xalloc(NULL, (n ? n : 1) * sizeof(*c->dev));
	for (size_t i = 0; i < n; i++)
		c->dev[i] = vi[a[i].i];
	c->ndev = n;
	free(a);
	free(ts);
	free(vi);
}

static void actx_release(struct actx *c) { free(c->dev); }

static const struct dm_ev *dev_ev(const struct actx *c, size_t i) { return &c->r->ev[c->r->view[c->dev[i]]]; }

/* HTA's merge_kernel_intervals on the device rows of one kernel type (-1:
 * all): in ts order, a row starts a new group when its ts is after every
 * earlier row's end. Returns the groups (caller frees). */
static size_t merged(const struct actx *c, int kt, struct ivl **out)
{
	struct ivl *v = xalloc(NULL, (c->ndev ? c->ndev : 1) * sizeof(*v));
	size_t g = 0;
	int any = 0;
	double cm = 0;
	for (size_t i = 0; i < c->ndev; i++) {
		const struct dm_ev *e = dev_ev(c, i);
		if (kt >= 0 && ktype(c->j, e->name) != kt)
			continue;
		double ts = e->ts, end = e->ts + e->dur;
		if (!any) {
			v[0] = (struct ivl){ts, end};
			cm = end;
			any = 1;
			g = 1;
			continue;
		}
		if (ts > cm)
			v[g++] = (struct ivl){ts, end};
		else if (end > v[g - 1].end)
			v[g - 1].end = end;
		if (end > cm)
			cm = end;
	}
	*out = v;
	return g;
}

/* HTA's end.sum() - ts.sum(), summed as differences: the same value (exact on
 * whole µs), without the rounding of sums of large timestamps. */
static double ivl_sum(const struct ivl *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i].end - v[i].ts;
	return s;
}

/* ------------------------------------------------------------- analyses */

struct temporal {
	int ok;
	double idle, compute, noncompute, span;
};

static struct temporal temporal_of(const struct actx *c)
{
	struct temporal t = {0};
	struct ivl *v;
	size_t g = merged(c, -1, &v);
	if (g) {
		t.ok = 1;
		t.span = v[g - 1].end - v[0].ts;
		t.idle = t.span - ivl_sum(v, g);
	}
	free(v);
	if (t.ok) {
		g = merged(c, KT_COMP, &v);
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

/* +delta at starts and -delta at ends of merged intervals, by time. */
static size_t ticks_of(struct tick **out, size_t n_types, struct ivl *const *v, const size_t *n, const int *val)
{
	size_t total = 0, k = 0;
	for (size_t t = 0; t < n_types; t++)
		total += 2 * n[t];
	struct tick *tk = xalloc(NULL, (total ? total : 1) * sizeof(*tk));
	struct kv *a = xalloc(NULL, (total ? total : 1) * sizeof(*a));
	for (size_t t = 0; t < n_types; t++)
		for (size_t i = 0; i < n[t]; i++) {
			tk[k++] = (struct tick){v[t][i].ts, val[t]};
			tk[k++] = (struct tick){v[t][i].end, -val[t]};
		}
	if (k)
		time_keys(a, k, &tk[0].time, sizeof(*tk));
	radix_kv(a, k);
	apply_perm(tk, sizeof(*tk), a, k);
	free(a);
	*out = tk;
	return k;
}

struct overlap {
	int ok;
	double comm, overlap;
};

static struct overlap overlap_of(const struct actx *c)
{
	struct overlap o = {0};
	struct ivl *v[2];
	size_t n[2];
	n[0] = merged(c, KT_COMM, &v[0]);
	n[1] = merged(c, KT_COMP, &v[1]);
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
static void kernel_type_time(const struct actx *c, double by_mask[8])
{
	static const int kts[3] = {KT_COMP, KT_COMM, KT_MEM}, val[3] = {1, 2, 4};
	struct ivl *v[3];
	size_t n[3];
	for (int t = 0; t < 3; t++)
		n[t] = merged(c, kts[t], &v[t]);
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

static int cmp_row_sum_desc(const void *a, const void *b)
{
	const struct name_row *x = a, *y = b;
	if (x->sum != y->sum)
		return x->sum > y->sum ? -1 : 1;
	return strcmp(x->name, y->name);
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
	struct kv *a = xalloc(NULL, (n ? n : 1) * sizeof(*a));
	for (size_t i = 0; i < n; i++)
		a[i] = (struct kv){nd[i].name, (uint32_t)i};
	radix_kv(a, n);
	struct name_row *rows = xalloc(NULL, (n ? n : 1) * sizeof(*rows));
	double *tmp = xalloc(NULL, (n ? n : 1) * sizeof(*tmp));
	size_t nr = 0;
	for (size_t i = 0; i < n;) {
		size_t k = i;
		while (k < n && a[k].k == a[i].k)
			k++;
		for (size_t q = i; q < k; q++)
			tmp[q - i] = nd[a[q].i].dur;
		rows[nr].name = str(j, nd[a[i].i].name);
		row_stats(&rows[nr], tmp, k - i);
		nr++;
		i = k;
	}
	free(a);
	sort_n(rows, nr, sizeof(*rows), cmp_row_sum_desc);
	size_t top = j->o.top_kernels;
	if (nr > top) {
		double *cum = xalloc(NULL, nr * sizeof(*cum)), *sorted = xalloc(NULL, nr * sizeof(*sorted));
		double c = 0;
		for (size_t i = 0; i < nr; i++)
			cum[i] = sorted[i] = c += rows[i].sum;
		sort_doubles(sorted, nr);
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
		sort_n(rows, nr, sizeof(*rows), cmp_row_sum_desc);
		free(cum);
		free(sorted);
	}
	free(tmp);
	*out = rows;
	return nr;
}

/* Append the (name, dur) of a rank's device rows of one kernel type. */
static void kernel_rows(const struct actx *c, int kt, struct name_dur **v, size_t *n, size_t *cap)
{
	for (size_t i = 0; i < c->ndev; i++) {
		const struct dm_ev *e = dev_ev(c, i);
		if (ktype(c->j, e->name) != kt)
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
};

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

static void idle_of(const struct actx *c, struct idle *d)
{
	const struct dm_rank *r = c->r;
	struct krow *k = xalloc(NULL, (c->ndev ? c->ndev : 1) * sizeof(*k));
	size_t n = 0;
	for (size_t i = 0; i < c->ndev; i++) { /* in ts order */
		const struct dm_ev *e = dev_ev(c, i);
		if (!(e->flags & EF_KCAT))
			continue;
		/* the launch: the row whose traceEvents index is index_correlation
		 * (HTA joins on it; without a link a correlated event points at 0) */
		double rt = NAN;
		int32_t target = e->link >= 0 ? e->link : e->corr >= 0 ? r->ev0 : -1;
		if (target >= 0 && r->ev[target].mult)
			rt = r->ev[target].ts;
		k[n++] = (struct krow){e->ts, e->ts + e->dur, rt, e->stream};
	}
	struct kv *a = xalloc(NULL, (n ? n : 1) * sizeof(*a));
	for (size_t i = 0; i < n; i++)
		a[i] = (struct kv){ikey(k[i].stream), (uint32_t)i};
	radix_kv(a, n); /* by stream, then ts, then view order */
	apply_perm(k, sizeof(*k), a, n);
	free(a);
	for (size_t i = 0; i < n; i++) {
		struct idle_stream *s = idle_find(d, k[i].stream);
		if (i == 0 || k[i - 1].stream != k[i].stream) {
			s->present[2] = 1; /* the first kernel: category other, no gap */
			continue;
		}
		double prev_end = k[i - 1].end, gap = k[i].ts - prev_end;
		int cat = k[i].rt > prev_end ? 0 : gap < c->j->o.kernel_wait_us ? 1 : 2;
		s->t[cat] += gap;
		s->present[cat] = 1;
		s->gaps++;
	}
	free(k);
	sort_n(d->s, d->n, sizeof(*d->s), cmp_idle_stream);
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

/* Host rows (stream -1) paired with device rows (stream != -1) of each
 * correlation that some launch call of the view has. */
static int launch_of(const struct fl_dm_job *j, const struct dm_rank *r, struct launch *l)
{
	size_t pairs = 0;
	for (int pass = 0; pass < 2; pass++)
	for (size_t g = 0; g < r->ngroups; g++) {
		const uint32_t *p = r->gpos + r->gbeg[g], *pe = r->gpos + r->gbeg[g + 1];
		int is_launch = 0;
		for (const uint32_t *q = p; q < pe; q++)
			is_launch |= r->ev[*q].mult && (j->nm.nf[r->ev[*q].name] & (NF_LAUNCH | NF_MEMLAUNCH));
		if (!is_launch)
			continue;
		if (pass == 0) { /* count first: repeated correlations multiply */
			size_t nc = 0, ng = 0;
			for (const uint32_t *q = p; q < pe; q++) {
				if (r->ev[*q].stream == -1)
					nc += r->ev[*q].mult;
				else
					ng += r->ev[*q].mult;
			}
			pairs += nc * ng;
			continue;
		}
		if (pairs > ROWS_PER_EVENT * r->n + 1000000)
			return -1;
		for (const uint32_t *cq = p; cq < pe; cq++) {
			const struct dm_ev *c = &r->ev[*cq];
			if (c->stream != -1 || !c->mult)
				continue;
			for (const uint32_t *gq = p; gq < pe; gq++) {
				const struct dm_ev *k = &r->ev[*gq];
				if (k->stream == -1)
					continue;
				double d = k->ts - c->ts - c->dur;
				for (unsigned m = 0; m < (unsigned)c->mult * k->mult; m++)
					launch_add(l, c->dur, k->dur, d > 0 ? d : 0);
			}
		}
	}
	return 0;
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
};

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

/* a launch call HTA counts: a queue-set name with index_correlation > 0 */
static int queue_launch(const struct fl_dm_job *j, const struct dm_rank *r, const struct dm_ev *e)
{
	return (j->nm.nf[e->name] & NF_QUEUE) && e->link >= 0 && r->ev[e->link].index > 0;
}

static int queue_of(const struct fl_dm_job *j, const struct dm_rank *r, struct queue *q)
{
	unsigned char *launched = xalloc(NULL, r->ngroups ? r->ngroups : 1);
	memset(launched, 0, r->ngroups ? r->ngroups : 1);
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (queue_launch(j, r, e))
			launched[e->grp] = 1;
	}
	/* +1 per (launch, device row of its correlation) in view order, then -1
	 * per device row: HTA's concat order, which breaks ties of ts here */
	struct qtick *t = NULL;
	size_t n = 0, cap = 0, want = 0;
	for (size_t i = 0; i < r->nview; i++) { /* count first: repeated correlations multiply */
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (!queue_launch(j, r, e))
			continue;
		for (uint32_t g = r->gbeg[e->grp]; g < r->gbeg[e->grp + 1]; g++)
			want += r->ev[r->gpos[g]].mult;
	}
	if (want > ROWS_PER_EVENT * r->n + 1000000) {
		free(launched);
		return -1;
	}
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (!queue_launch(j, r, e))
			continue;
		for (uint32_t g = r->gbeg[e->grp]; g < r->gbeg[e->grp + 1]; g++) {
			const struct dm_ev *k = &r->ev[r->gpos[g]];
			for (uint16_t m = 0; k->stream != -1 && m < k->mult; m++) {
				GROW(t, n, cap);
				t[n++] = (struct qtick){e->ts, k->stream, 1};
			}
		}
	}
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->stream == -1 || e->grp < 0 || !launched[e->grp])
			continue;
		GROW(t, n, cap);
		t[n++] = (struct qtick){e->ts, e->stream, -1};
	}
	free(launched);
	struct kv *a = xalloc(NULL, (n ? n : 1) * sizeof(*a));
	if (n)
		time_keys(a, n, &t[0].ts, sizeof(*t));
	radix_kv(a, n);
	for (size_t i = 0; i < n; i++)
		a[i].k = ikey(t[a[i].i].stream);
	radix_kv(a, n);
	long run = 0;
	for (size_t i = 0; i < n; i++) {
		const struct qtick *x = &t[a[i].i];
		if (i == 0 || x->stream != t[a[i - 1].i].stream)
			run = 0;
		run += x->delta;
		qsample_add(queue_find(q, x->stream), (double)run);
	}
	free(a);
	free(t);
	return 0;
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
		copy_n(c, v, n * sizeof(*c));
		sort_doubles(c, n);
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
	sort_n(q->s, q->n, sizeof(*q->s), cmp_qsample);
	for (size_t i = 0; i < q->n; i++) {
		struct qsample *s = &q->s[i];
		char key[32];
		snprintf(key, sizeof(key), "%lld", (long long)s->stream);
		cJSON *x = cJSON_CreateObject();
		double *c = xalloc(NULL, (s->n ? s->n : 1) * sizeof(*c));
		copy_n(c, s->v, s->n * sizeof(*c));
		sort_doubles(c, s->n);
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

struct srow { /* a long collective */
	int32_t stream, iter;
	uint32_t name;
	uint32_t rank; /* position in job->ranks */
	double ts, dur;
	uint32_t ord;  /* row order (ranks, then views) */
};

static int cmp_srow(const void *a, const void *b)
{
	const struct srow *x = a, *y = b;
	if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
	if (x->name != y->name) return x->name < y->name ? -1 : 1;
	if (x->iter != y->iter) return x->iter < y->iter ? -1 : 1;
	if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

/* position of x in sorted v, -1 if absent */
static long find_i32(const int32_t *v, size_t n, int32_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (v[m] < x)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < n && v[lo] == x ? (long)lo : -1;
}

/* The analysed steps: step numbers of the step rows in the views (HTA's
 * get_profiler_steps), sorted and unique. */
static size_t analysed_steps(const struct fl_dm_job *j, int32_t **out)
{
	int32_t *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t ri = 0; ri < j->nranks; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		for (size_t i = 0; i < r->nview; i++) {
			const struct dm_ev *e = &r->ev[r->view[i]];
			if (!(j->nm.nf[e->name] & NF_STEP))
				continue;
			long long s = j->nm.stepnum[e->name];
			GROW(v, n, cap);
			v[n++] = s > INT32_MAX ? INT32_MAX : (int32_t)s;
		}
	}
	if (n)
		sort_n(v, n, sizeof(*v), cmp_i32);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || v[i] != v[u - 1])
			v[u++] = v[i];
	*out = v;
	return u;
}

/* HTA's find_stragglers_with_late_start_comm_kernels: among the collectives
 * of the analysed steps that last >= 1% of the mean iteration, take the last
 * of each (rank, stream, step, name); pick the (stream, name) whose duration
 * varies most across ranks (mean over steps of the std); in each step the
 * ranks that start it latest (top k) are stragglers; ranks by count. */
static cJSON *straggler_json(const struct fl_dm_job *j, int k_candidates)
{
	cJSON *o = cJSON_CreateObject();
	const char *why = NULL;
	int32_t *steps = NULL;
	unsigned char *seen = NULL;
	struct srow *rows = NULL;
	size_t nrows = 0, rcap = 0, niters = 0;
	size_t nsteps = analysed_steps(j, &steps);
	size_t nr = j->nranks;
	double *cnt1 = NULL, *cntk = NULL, *late = NULL, *ms = NULL, *tmp = NULL;
	size_t *nlate = NULL;
	int *has = NULL;
	if (nr < 2) {
		why = "needs two or more ranks";
		goto out;
	}
	if (!nsteps) {
		why = "no ProfilerStep in the traces";
		goto out;
	}
	/* the rows of the analysed steps: the first start, the last end */
	seen = xalloc(NULL, nsteps);
	memset(seen, 0, nsteps);
	double tmin = INFINITY, tmax = -INFINITY;
	for (size_t ri = 0; ri < nr; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		for (size_t i = 0; i < r->nview; i++) {
			const struct dm_ev *e = &r->ev[r->view[i]];
			long s = e->iter == ITER_NAN ? -1 : find_i32(steps, nsteps, e->iter);
			if (s < 0)
				continue;
			seen[s] = 1;
			if (e->ts < tmin) tmin = e->ts;
			if (e->ts + e->dur > tmax) tmax = e->ts + e->dur;
		}
		for (size_t i = 0; i < r->nh; i++) {
			const struct dm_host *h = &r->host[i];
			if (!host_kept(r, h->ts))
				continue;
			long s = find_i32(steps, nsteps, iter_of_ts(r, h->ts));
			if (s < 0)
				continue;
			seen[s] = 1;
			if (h->ts < tmin) tmin = h->ts;
			if (h->ts + h->dur > tmax) tmax = h->ts + h->dur;
		}
	}
	for (size_t s = 0; s < nsteps; s++)
		niters += seen[s];
	if (!niters) {
		why = "no event in the analysed steps";
		goto out;
	}
	double mean_iter = (tmax - tmin) / (double)niters, min_dur = mean_iter * 0.01;
	uint32_t ord = 0;
	for (size_t ri = 0; ri < nr; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		for (size_t i = 0; i < r->nview; i++, ord++) {
			const struct dm_ev *e = &r->ev[r->view[i]];
			if (e->stream <= 0 || e->iter == ITER_NAN || e->iter <= 0 || find_i32(steps, nsteps, e->iter) < 0 ||
			    !(e->dur >= min_dur) || ktype(j, e->name) != KT_COMM)
				continue;
			GROW(rows, nrows, rcap);
			rows[nrows++] = (struct srow){e->stream, e->iter, e->name, (uint32_t)ri, e->ts, e->dur, ord};
		}
	}
	sort_n(rows, nrows, sizeof(*rows), cmp_srow);
	size_t nl = 0; /* the last row of each (stream, name, step, rank) */
	for (size_t i = 0; i < nrows; i++) {
		const struct srow *x = &rows[i], *y = i + 1 < nrows ? &rows[i + 1] : NULL;
		if (y && y->stream == x->stream && y->name == x->name && y->iter == x->iter && y->rank == x->rank)
			continue;
		rows[nl++] = *x;
	}
	nrows = nl;
	/* per (stream, name): the mean over steps of the std across ranks of
	 * duration / mean iteration; the first maximum */
	tmp = xalloc(NULL, (nr + 1) * sizeof(*tmp));
	long best = -1;
	double best_v = -INFINITY;
	for (size_t i = 0; i < nrows;) {
		size_t e = i;
		double sum = 0;
		size_t n = 0;
		while (e < nrows && rows[e].stream == rows[i].stream && rows[e].name == rows[i].name) {
			size_t f = e, nv = 0;
			while (f < nrows && rows[f].stream == rows[e].stream && rows[f].name == rows[e].name &&
			       rows[f].iter == rows[e].iter)
				tmp[nv++] = rows[f++].dur / mean_iter;
			double sd = std_of(tmp, nv);
			if (!isnan(sd)) {
				sum += sd;
				n++;
			}
			e = f;
		}
		if (n) {
			double v = sum / (double)n;
			int better = v > best_v;
			if (best >= 0 && v == best_v)
				better = rows[i].stream < rows[best].stream ||
					 (rows[i].stream == rows[best].stream &&
					  strcmp(str(j, rows[i].name), str(j, rows[best].name)) < 0);
			if (better) {
				best = (long)i;
				best_v = v;
			}
		}
		i = e;
	}
	if (best < 0) {
		why = nrows ? "no long collective ran on two or more ranks in one step"
			    : "no long collective (nccl...Kernel) in the analysed steps";
		goto out;
	}
	int32_t bstream = rows[best].stream;
	uint32_t bname = rows[best].name;
	cnt1 = xalloc(NULL, nr * sizeof(double));
	cntk = xalloc(NULL, nr * sizeof(double));
	late = xalloc(NULL, nr * sizeof(double));
	nlate = xalloc(NULL, nr * sizeof(size_t));
	has = xalloc(NULL, nr * sizeof(int));
	ms = xalloc(NULL, (nr + 1) * sizeof(double));
	memset(cnt1, 0, nr * sizeof(double));
	memset(cntk, 0, nr * sizeof(double));
	memset(late, 0, nr * sizeof(double));
	memset(nlate, 0, nr * sizeof(size_t));
	memset(has, 0, nr * sizeof(int));
	double spread_sum = 0, spread_max = 0;
	size_t nspread = 0;
	for (size_t i = (size_t)best; i < nrows && rows[i].stream == bstream && rows[i].name == bname;) {
		size_t e = i, nv = 0;
		double lo = INFINITY, hi = -INFINITY;
		for (; e < nrows && rows[e].stream == bstream && rows[e].name == bname && rows[e].iter == rows[i].iter; e++) {
			ms[nv++] = (rows[e].ts - tmin) / mean_iter;
			has[rows[e].rank] = 1;
			if (rows[e].ts < lo) lo = rows[e].ts;
			if (rows[e].ts > hi) hi = rows[e].ts;
		}
		sort_doubles(ms, nv);
		double th1 = ms[nv - 1];
		double thk = ms[nv >= (size_t)k_candidates ? nv - (size_t)k_candidates : 0];
		for (size_t q = i; q < e; q++) {
			double m = (rows[q].ts - tmin) / mean_iter;
			cnt1[rows[q].rank] += m >= th1;
			cntk[rows[q].rank] += m >= thk;
			late[rows[q].rank] += rows[q].ts - lo;
			nlate[rows[q].rank]++;
		}
		spread_sum += hi - lo;
		if (hi - lo > spread_max)
			spread_max = hi - lo;
		nspread++;
		i = e;
	}
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
	cJSON_AddNumberToObject(o, "iterations", (double)nspread);
	add_num(o, "mean_iteration_us", mean_iter);
	cJSON *spread = cJSON_CreateObject();
	add_num(spread, "mean", nspread ? spread_sum / (double)nspread : NAN);
	add_num(spread, "max", spread_max);
	cJSON_AddItemToObject(o, "spread_us", spread);
	cJSON_AddItemToObject(o, "late_us", lateo);
out:
	free(steps);
	free(seen);
	free(rows);
	free(tmp);
	free(cnt1);
	free(cntk);
	free(late);
	free(nlate);
	free(has);
	free(ms);
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
			GROW(sv, ns, cap);
			sv[ns++] = x > INT32_MAX ? INT32_MAX : (int32_t)x;
		}
	}
	if (ns)
		sort_n(sv, ns, sizeof(*sv), cmp_i32);
	size_t u = 0;
	for (size_t i = 0; i < ns; i++)
		if (!u || sv[i] != sv[u - 1])
			sv[u++] = sv[i];
	ns = u;
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
	int pool = j->nranks > 1; /* one rank: the job's figures are the rank's */
	int lall_bad = 0, qall_bad = 0;
	cJSON *ranks = cJSON_CreateObject(), *x = NULL;
	for (size_t ri = 0; ri < j->nranks; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "file", r->path);
		cJSON_AddNumberToObject(x, "events", (double)r->info.n_events);
		cJSON_AddNumberToObject(x, "events_analyzed", (double)r->nview);
		struct actx c;
		actx_init(&c, j, r);
		struct temporal t = temporal_of(&c);
		if (t.ok) {
			tall.ok = 1;
			tall.idle += t.idle;
			tall.compute += t.compute;
			tall.noncompute += t.noncompute;
			tall.span += t.span;
		}
		cJSON_AddItemToObject(x, "temporal", temporal_json(&t));
		struct overlap ov = overlap_of(&c);
		oall.ok |= ov.ok;
		oall.comm += ov.comm;
		oall.overlap += ov.overlap;
		cJSON_AddItemToObject(x, "overlap", overlap_json(&ov));
		struct idle id = {0};
		idle_of(&c, &id);
		for (size_t s = 0; s < id.n; s++) {
			struct idle_stream *a = idle_find(&iall, id.s[s].stream);
			for (int k = 0; k < 3; k++) {
				a->t[k] += id.s[s].t[k];
				a->present[k] |= id.s[s].present[k];
			}
			a->gaps += id.s[s].gaps;
		}
		cJSON_AddItemToObject(x, "idle", idle_json(&id));
		free(id.s);
		double m[8] = {0};
		kernel_type_time(&c, m);
		for (int b = 0; b < 8; b++)
			mall[b] += m[b];
		cJSON *kern = cJSON_CreateObject(), *byn = cJSON_CreateObject();
		cJSON_AddItemToObject(kern, "types", types_json(m));
		for (int t3 = 0; t3 < 3; t3++) {
			struct name_dur *nd = NULL;
			size_t nn = 0, cn = 0;
			kernel_rows(&c, kts[t3], &nd, &nn, &cn);
			if (nn)
				cJSON_AddItemToObject(byn, kt_name[kts[t3]], by_name_json(j, nd, nn));
			free(nd);
			if (pool)
				kernel_rows(&c, kts[t3], &kall[t3], &nkall[t3], &ckall[t3]);
		}
		cJSON_AddItemToObject(kern, "by_name", byn);
		cJSON_AddItemToObject(x, "kernels", kern);
		struct launch l = {0};
		if (launch_of(j, r, &l)) {
			lall_bad = 1;
			cJSON *lx = cJSON_CreateObject();
			cJSON_AddNullToObject(lx, "pairs");
			cJSON_AddStringToObject(lx, "why", "correlation ids repeat too often");
			cJSON_AddItemToObject(x, "launch", lx);
		} else {
			cJSON_AddItemToObject(x, "launch", launch_json(j, &l));
		}
		for (size_t i = 0; pool && i < l.n; i++)
			launch_add(&lall, l.cpu[i], l.gpu[i], l.delay[i]);
		launch_free(&l);
		struct queue q = {0};
		int qbad = queue_of(j, r, &q);
		qall_bad |= qbad;
		for (size_t s = 0; pool && s < q.n; s++) {
			struct qsample *a = queue_find(&qall, q.s[s].stream);
			for (size_t i = 0; i < q.s[s].n; i++)
				qsample_add(a, q.s[s].v[i]);
		}
		if (qbad) {
			cJSON *qx = cJSON_CreateObject();
			cJSON_AddStringToObject(qx, "why", "correlation ids repeat too often");
			cJSON_AddItemToObject(x, "queue", qx);
		} else {
			cJSON_AddItemToObject(x, "queue", queue_json(&q));
		}
		queue_free(&q);
		actx_release(&c);
		char key[32];
		snprintf(key, sizeof(key), "%lld", r->rank);
		cJSON_AddItemToObject(ranks, key, x);
	}
	cJSON_AddItemToObject(root, "temporal", temporal_json(&tall));
	cJSON_AddItemToObject(root, "overlap", overlap_json(&oall));
	sort_n(iall.s, iall.n, sizeof(*iall.s), cmp_idle_stream);
	cJSON_AddItemToObject(root, "idle", idle_json(&iall));
	free(iall.s);
	cJSON *kern = cJSON_CreateObject(), *byn;
	cJSON_AddItemToObject(kern, "types", types_json(mall));
	if (pool) {
		byn = cJSON_CreateObject();
		for (int t3 = 0; t3 < 3; t3++)
			if (nkall[t3])
				cJSON_AddItemToObject(byn, kt_name[kts[t3]], by_name_json(j, kall[t3], nkall[t3]));
	} else {
		byn = cJSON_Duplicate(cJSON_GetObjectItem(cJSON_GetObjectItem(x, "kernels"), "by_name"), 1);
	}
	for (int t3 = 0; t3 < 3; t3++)
		free(kall[t3]);
	cJSON_AddItemToObject(kern, "by_name", byn);
	cJSON_AddItemToObject(root, "kernels", kern);
	cJSON_AddItemToObject(root, "launch", pool && !lall_bad ? launch_json(j, &lall)
						   : cJSON_Duplicate(cJSON_GetObjectItem(x, "launch"), 1));
	launch_free(&lall);
	cJSON_AddItemToObject(root, "queue", pool && !qall_bad ? queue_json(&qall)
						  : cJSON_Duplicate(cJSON_GetObjectItem(x, "queue"), 1));
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
	const char *name;
	double count, us;
};

static int cmp_op_sum(const void *a, const void *b)
{
	return strcmp(((const struct op_sum *)a)->name, ((const struct op_sum *)b)->name);
}

/* The first step number of a job (HTA's LabeledTrace.iterations()[0]). */
static int first_step(const struct fl_dm_job *j, long long *out)
{
	int found = 0;
	for (size_t id = 0; id < j->nm.nnf; id++)
		if ((j->nm.nf[id] & NF_STEP) && (j->nm.nf[id] & NF_SEEN_PS) && (!found || j->nm.stepnum[id] < *out)) {
			*out = j->nm.stepnum[id];
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
	/* sums per name id, then the names that occur */
	size_t nid = fl_strtab_count(j->nm.strings);
	double *cnt = xalloc(NULL, (nid ? nid : 1) * sizeof(double)), *us = xalloc(NULL, (nid ? nid : 1) * sizeof(double));
	memset(cnt, 0, nid * sizeof(double));
	memset(us, 0, nid * sizeof(double));
	int any = 0;
#define DIFF_ADD(nm, dur)          \
	do {                       \
		cnt[(nm)] += 1;    \
		us[(nm)] += (dur); \
		any = 1;           \
	} while (0)
	for (size_t i = 0; i < r->n; i++) {
		const struct dm_ev *e = &r->ev[i];
		if (iter != FL_DIFF_ALL && (e->iter == ITER_NAN || e->iter != iter))
			continue;
		DIFF_ADD(e->name, e->dur);
	}
	for (size_t i = 0; i < r->nh; i++) {
		const struct dm_host *h = &r->host[i];
		if (iter != FL_DIFF_ALL && iter_of_ts(r, h->ts) != iter)
			continue;
		DIFF_ADD(h->name, h->dur);
	}
#undef DIFF_ADD
	struct op_sum *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t id = 0; id < nid; id++)
		if (cnt[id] > 0) {
			GROW(v, n, cap);
			v[n++] = (struct op_sum){str(j, (uint32_t)id), cnt[id], us[id]};
		}
	free(cnt);
	free(us);
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
	sort_n(a, na, sizeof(*a), cmp_op_sum);
	sort_n(b, nb, sizeof(*b), cmp_op_sum);
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
		int cmp = i >= na ? 1 : k >= nb ? -1 : strcmp(a[i].name, b[k].name);
		const char *name = cmp <= 0 ? a[i].name : b[k].name;
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
