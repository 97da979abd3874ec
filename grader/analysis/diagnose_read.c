/* diagnose_read.c — `diagnose`'s reading: each trace streams (one thread per
 * file, each with its own strings) into a compact event list, then folds into
 * per-step aggregates on the step's thread and the device rows. See
 * diagnose_internal.h. */
#include "grader/analysis/diagnose_internal.h"
#include "common/stats.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TINY_OP_US 50.0
#define CONV_OP_US 5.0 /* a conversion op this long converts a tensor, not a scalar */
#define ALLOC_OP_US 200.0 /* an allocation op this long maps and touches fresh memory */

struct cats {
	uint32_t cpu_op, user_annotation, cuda_runtime, cuda_driver, kernel, gpu_memcpy, gpu_memset, trace;
};

struct read_ctx {
	struct dg_trace *t;
	struct cats c;
	/* per name id: 0 unknown, 1 plain, 2 step, 3 comm, 4 mem, 5 non-compute */
	uint8_t *nk;
	uint8_t *rtf, *devf, *opf;
	size_t n_nk;
};

const char *dg_str(const struct dg_trace *t, uint32_t id) { return fl_strtab_str(t->st, id); }

double dg_median(const double *v, int n)
{
	return n > 0 ? fl_median(v, (size_t)n) : 0;
}

/* What a name says (computed once per name id). */
static void classify_name(struct read_ctx *c, uint32_t id)
{
	if (id >= c->n_nk) {
		size_t nn = c->n_nk ? c->n_nk : 1024;
		while (nn <= id)
			nn *= 2;
		c->nk = realloc(c->nk, nn);
		c->rtf = realloc(c->rtf, nn);
		c->devf = realloc(c->devf, nn);
		c->opf = realloc(c->opf, nn);
		if (!c->nk || !c->rtf || !c->devf || !c->opf)
			abort();
		memset(c->nk + c->n_nk, 0, nn - c->n_nk);
		memset(c->rtf + c->n_nk, 0, nn - c->n_nk);
		memset(c->devf + c->n_nk, 0, nn - c->n_nk);
		memset(c->opf + c->n_nk, 0, nn - c->n_nk);
		c->n_nk = nn;
	}
	if (c->nk[id])
		return;
	const char *s = fl_strtab_str(c->t->st, id);
	uint8_t k = 1;
	if (!strncmp(s, "ProfilerStep#", 13))
		k = 2;
	else if (!strncmp(s, "nccl", 4) && strstr(s, "Kernel"))
		k = 3;
	else if (!strncmp(s, "Memcpy", 6) || !strncmp(s, "Memset", 6) || !strncmp(s, "dma", 3))
		k = 4;
	else {
		/* HTA: not computation when the first line holds Memcpy or Sync */
		size_t line = strcspn(s, "\n");
		char buf[256];
		size_t m = line < sizeof buf - 1 ? line : sizeof buf - 1;
		memcpy(buf, s, m);
		buf[m] = 0;
		if (strstr(buf, "Memcpy") || strstr(buf, "Sync"))
			k = 5;
	}
	c->nk[id] = k;
	uint8_t f = 0;
	if (strstr(s, "Synchronize") || !strcmp(s, "cudaMemcpy") || !strcmp(s, "cuMemcpyDtoH_v2") ||
	    !strcmp(s, "cuMemcpyDtoH") || !strcmp(s, "cudaMemcpy2D"))
		f |= DG_RT_SYNC;
	if (strstr(s, "LaunchKernel") || !strncmp(s, "cuLaunch", 8) || !strcmp(s, "cudaLaunchCooperativeKernel") ||
	    !strcmp(s, "cudaGraphLaunch"))
		f |= DG_RT_LAUNCH;
	if (!strcmp(s, "cudaMemcpy") || !strcmp(s, "cuMemcpyHtoD_v2") || !strcmp(s, "cuMemcpyHtoD"))
		f |= DG_RT_MEMCPY;
	if (!strcmp(s, "cudaMalloc") || !strcmp(s, "cudaFree") || !strcmp(s, "cuMemAlloc_v2") ||
	    !strcmp(s, "cuMemFree_v2") || !strcmp(s, "cudaMallocHost") || !strcmp(s, "cudaFreeHost"))
		f |= DG_RT_ALLOC;
	c->rtf[id] = f;
	/* device and op flags, by name alone */
	uint8_t d = 0;
	if (k == 4 && strstr(s, "DtoH"))
		d |= DG_DEV_D2H;
	if (k == 4 && strstr(s, "HtoD"))
		d |= DG_DEV_H2D;
	if (k != 4 && (strstr(s, "cast_") || strstr(s, "_cast") || strstr(s, "Cast")))
		d |= DG_DEV_CAST;
	const char *colon = strrchr(s, ':');
	const char *base = colon ? colon + 1 : s;
	uint8_t o = 0;
	if (!strcmp(base, "empty") || !strcmp(base, "empty_strided"))
		o |= DG_OP_ALLOC;
	if (!strcmp(base, "copy_") || !strcmp(base, "_to_copy"))
		o |= DG_OP_COPY;
	if (!strcmp(base, "_to_copy"))
		o |= DG_OP_CONV;
	c->devf[id] = d;
	c->opf[id] = o;
}

static uint64_t thread_key(int64_t pid, int64_t tid, uint32_t has)
{
	uint64_t p = (uint64_t)pid * 2 + ((has & FL_TEV_PID_STR) ? 1 : 0);
	uint64_t q = (uint64_t)tid * 2 + ((has & FL_TEV_TID_STR) ? 1 : 0);
	return (p << 32) ^ (q & 0xffffffffu) ^ (p >> 32);
}

static enum fl_status on_event(void *arg, const struct fl_tev *e)
{
	struct read_ctx *c = arg;
	struct dg_trace *t = c->t;
	if (e->ph != 'X' || !(e->has & FL_TEV_DUR) || !(e->has & FL_TEV_TS) || !(e->has & FL_TEV_CAT))
		return FL_OK;
	if (!isfinite(e->ts) || !isfinite(e->dur) || e->dur < 0)
		return FL_OK;
	uint32_t cat = e->cat;
	if (cat == c->c.trace)
		return FL_OK;
	classify_name(c, e->name);
	uint8_t nk = c->nk[e->name];
	struct dg_ev v = {.ts = e->ts, .end = e->ts + e->dur, .name = e->name, .step_no = -1};
	int device = (cat == c->c.kernel || cat == c->c.gpu_memcpy || cat == c->c.gpu_memset ||
		      ((e->has & FL_TEV_STREAM) && e->stream >= 0 && (e->has & FL_TEV_CORRELATION) &&
		       e->correlation >= 0 && cat != c->c.cuda_runtime && cat != c->c.cuda_driver &&
		       cat != c->c.cpu_op && cat != c->c.user_annotation));
	if (device) {
		v.thread = thread_key(e->pid, (e->has & FL_TEV_STREAM) ? e->stream : e->tid, e->has);
		if (cat == c->c.gpu_memcpy || cat == c->c.gpu_memset || nk == 4)
			v.kind = DG_KMEM;
		else if (nk == 3)
			v.kind = DG_KCOMM;
		else if (nk == 5)
			v.kind = DG_KOTHER;
		else
			v.kind = DG_KCOMP;
		v.rtf = c->devf[e->name];
		t->has_device = 1;
	} else {
		v.thread = thread_key(e->pid, e->tid, e->has);
		if (nk == 2) {
			v.kind = DG_STEP;
			v.step_no = atoi(fl_strtab_str(t->st, e->name) + 13);
			t->has_steps = 1;
		} else if (cat == c->c.cpu_op) {
			v.kind = DG_OP;
			v.rtf = c->opf[e->name];
			t->has_ops = 1;
			if (e->in_rows >= 0) {
				const char *nm = fl_strtab_str(t->st, e->name);
				if (strstr(nm, "expert") && !strstr(nm, "backward")) {
					t->expert_rows += (double)e->in_rows;
					t->n_expert_ops++;
				}
				if (strstr(nm, "all_reduce") || strstr(nm, "allreduce")) {
					t->allreduce_elems += (double)e->in_rows;
					t->n_allreduce_ops++;
				}
			}
		} else if (cat == c->c.user_annotation) {
			v.kind = DG_SPAN;
		} else if (cat == c->c.cuda_runtime || cat == c->c.cuda_driver) {
			v.kind = DG_RT;
			v.rtf = c->rtf[e->name];
		} else {
			return FL_OK; /* python_function and the like: not used */
		}
	}
	if (t->n_ev == t->cap_ev) {
		t->cap_ev = t->cap_ev ? 2 * t->cap_ev : 4096;
		t->ev = realloc(t->ev, sizeof(*t->ev) * t->cap_ev);
		if (!t->ev)
			return fl_error(FL_ERUNTIME, "%s: out of memory reading events", t->path);
	}
	t->ev[t->n_ev++] = v;
	return FL_OK;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct dg_ev *x = a, *y = b;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1; /* parents first */
	return (int)x->kind - (int)y->kind;
}

/* Union length of intervals [a[i], b[i]) sorted by start, clipped to [lo, hi). */
struct ivs {
	double *a, *b;
	size_t n, cap;
};
static void ivs_add(struct ivs *v, double a, double b)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 256;
		v->a = realloc(v->a, sizeof(double) * v->cap);
		v->b = realloc(v->b, sizeof(double) * v->cap);
		if (!v->a || !v->b)
			abort();
	}
	v->a[v->n] = a;
	v->b[v->n] = b;
	v->n++;
}
/* merge in place (input sorted by start) */
static void ivs_merge(struct ivs *v)
{
	size_t m = 0;
	for (size_t i = 0; i < v->n; i++) {
		if (m && v->a[i] <= v->b[m - 1]) {
			if (v->b[i] > v->b[m - 1])
				v->b[m - 1] = v->b[i];
		} else {
			v->a[m] = v->a[i];
			v->b[m] = v->b[i];
			m++;
		}
	}
	v->n = m;
}
static double ivs_len(const struct ivs *v, double lo, double hi)
{
	double s = 0;
	for (size_t i = 0; i < v->n; i++) {
		double a = v->a[i] > lo ? v->a[i] : lo, b = v->b[i] < hi ? v->b[i] : hi;
		if (b > a)
			s += b - a;
	}
	return s;
}
static double ivs_inter(const struct ivs *x, const struct ivs *y, double lo, double hi)
{
	double s = 0;
	size_t i = 0, j = 0;
	while (i < x->n && j < y->n) {
		double a = x->a[i] > y->a[j] ? x->a[i] : y->a[j];
		double b = x->b[i] < y->b[j] ? x->b[i] : y->b[j];
		if (a < lo)
			a = lo;
		if (b > hi)
			b = hi;
		if (b > a)
			s += b - a;
		if (x->b[i] < y->b[j])
			i++;
		else
			j++;
	}
	return s;
}
/* how many starts (a, sorted) lie in [lo, hi] */
static size_t count_in(const struct ivs *v, double lo, double hi)
{
	size_t a = 0, b = v->n;
	while (a < b) {
		size_t m = (a + b) / 2;
		if (v->a[m] < lo)
			a = m + 1;
		else
			b = m;
	}
	size_t c = 0;
	for (size_t q = a; q < v->n && v->a[q] <= hi; q++)
		c++;
	return c;
}
static void ivs_free(struct ivs *v)
{
	free(v->a);
	free(v->b);
}
/* first index with a[i] >= x ... of merged intervals: the one ending after x */
static size_t ivs_find(const struct ivs *v, double x)
{
	size_t lo = 0, hi = v->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v->b[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct dg_span *span_of(struct dg_trace *t, uint32_t name)
{
	for (int i = 0; i < t->n_spans; i++)
		if (t->spans[i].name == name)
			return &t->spans[i];
	t->spans = realloc(t->spans, sizeof(*t->spans) * (size_t)(t->n_spans + 1));
	if (!t->spans)
		abort();
	struct dg_span *s = &t->spans[t->n_spans++];
	*s = (struct dg_span){.name = name};
	s->dur = calloc((size_t)t->n_steps, sizeof(double));
	s->ops_us = calloc((size_t)t->n_steps, sizeof(double));
	s->gap = calloc((size_t)t->n_steps, sizeof(double));
	s->count = calloc((size_t)t->n_steps, sizeof(int));
	s->n_ops = calloc((size_t)t->n_steps, sizeof(int));
	s->n_nested = calloc((size_t)t->n_steps, sizeof(int));
	s->n_copy = calloc((size_t)t->n_steps, sizeof(int));
	s->launch_before = calloc((size_t)t->n_steps, sizeof(int));
	s->launch_in = calloc((size_t)t->n_steps, sizeof(int));
	if (!s->dur || !s->ops_us || !s->gap || !s->count || !s->n_ops || !s->n_nested || !s->n_copy ||
	    !s->launch_before || !s->launch_in)
		abort();
	return s;
}

/* Fold the events into steps. */
static void build(struct dg_trace *t)
{
	if (t->n_ev)
		qsort(t->ev, t->n_ev, sizeof(*t->ev), cmp_ev);
	/* steps: on the thread with the most of them */
	size_t n_step = 0;
	for (size_t i = 0; i < t->n_ev; i++)
		n_step += t->ev[i].kind == DG_STEP;
	uint64_t main = 0;
	if (n_step) {
		size_t best = 0;
		for (size_t i = 0; i < t->n_ev;) {
			size_t j = i, k = 0;
			while (j < t->n_ev && t->ev[j].thread == t->ev[i].thread)
				k += t->ev[j++].kind == DG_STEP;
			if (k > best) {
				best = k;
				main = t->ev[i].thread;
			}
			i = j;
		}
	} else {
		/* no steps: the host thread with the most ops is one "step" */
		size_t best = 0;
		for (size_t i = 0; i < t->n_ev;) {
			size_t j = i, k = 0;
			while (j < t->n_ev && t->ev[j].thread == t->ev[i].thread) {
				k += t->ev[j].kind == DG_OP || t->ev[j].kind == DG_SPAN;
				j++;
			}
			if (k > best) {
				best = k;
				main = t->ev[i].thread;
			}
			i = j;
		}
	}
	t->main_thread = main;
	size_t m0 = t->n_ev, m1 = t->n_ev;
	for (size_t i = 0; i < t->n_ev; i++)
		if (t->ev[i].thread == main && t->ev[i].kind <= DG_RT) {
			if (m0 == t->n_ev)
				m0 = i;
			m1 = i + 1;
		}
	if (m0 == t->n_ev)
		m0 = m1 = 0;
	/* the step list */
	t->steps = calloc(n_step ? n_step : 1, sizeof(*t->steps));
	if (!t->steps)
		abort();
	if (n_step) {
		for (size_t i = m0; i < m1; i++)
			if (t->ev[i].kind == DG_STEP) {
				/* a repeated step (nested duplicates): keep the outer one */
				if (t->n_steps && t->steps[t->n_steps - 1].no == t->ev[i].step_no)
					continue;
				struct dg_step *s = &t->steps[t->n_steps++];
				s->no = t->ev[i].step_no;
				s->ts = t->ev[i].ts;
				s->end = t->ev[i].end;
			}
	} else if (m1 > m0) {
		struct dg_step *s = &t->steps[t->n_steps++];
		s->no = 0;
		s->ts = t->ev[m0].ts;
		s->end = t->ev[m0].end;
		for (size_t i = m0; i < m1; i++)
			if (t->ev[i].end > s->end)
				s->end = t->ev[i].end;
	}
	for (int k = 0; k < t->n_steps; k++)
		t->steps[k].dur = t->steps[k].end - t->steps[k].ts;

	/* device rows: unions of all, computation and communication */
	struct ivs all = {0}, comp = {0}, comm = {0};
	struct ivs d2h = {0}, h2d = {0}, cast = {0}, kdur = {0}, ldur = {0}; /* starts (a); durations */
	struct dg_ev *kc = NULL; /* computation kernels, sorted by start */
	size_t nkc = 0;
	{
		/* device events sorted by start, across streams */
		size_t nd = 0;
		for (size_t i = 0; i < t->n_ev; i++)
			nd += t->ev[i].kind >= DG_KCOMP;
		struct dg_ev *d = malloc(sizeof(*d) * (nd ? nd : 1));
		if (!d)
			abort();
		nd = 0;
		for (size_t i = 0; i < t->n_ev; i++)
			if (t->ev[i].kind >= DG_KCOMP)
				d[nd++] = t->ev[i];
		for (size_t i = 0; i < nd; i++)
			d[i].thread = 0;
		qsort(d, nd, sizeof(*d), cmp_ev);
		t->comm_dur = malloc(sizeof(double) * (nd ? nd : 1));
		kc = malloc(sizeof(*kc) * (nd ? nd : 1));
		if (!t->comm_dur || !kc)
			abort();
		for (size_t i = 0; i < nd; i++)
			if (d[i].kind == DG_KCOMP)
				kc[nkc++] = d[i];
		for (size_t i = 0; i < nd; i++) {
			if (d[i].kind == DG_KMEM && (d[i].rtf & DG_DEV_D2H))
				ivs_add(&d2h, d[i].ts, d[i].ts);
			if (d[i].kind == DG_KMEM && (d[i].rtf & DG_DEV_H2D))
				ivs_add(&h2d, d[i].ts, d[i].ts);
			if (d[i].rtf & DG_DEV_CAST)
				ivs_add(&cast, d[i].ts, d[i].end);
			if (d[i].kind == DG_KCOMP)
				ivs_add(&kdur, d[i].end - d[i].ts, 0);
			ivs_add(&all, d[i].ts, d[i].end);
			if (d[i].kind == DG_KCOMP)
				ivs_add(&comp, d[i].ts, d[i].end);
			else if (d[i].kind == DG_KCOMM) {
				ivs_add(&comm, d[i].ts, d[i].end);
				t->comm_dur[t->n_comm++] = d[i].end - d[i].ts;
			}
		}
		free(d);
		ivs_merge(&all);
		ivs_merge(&comp);
		ivs_merge(&comm);
		t->comp_us = ivs_len(&comp, -INFINITY, INFINITY);
		t->comm_us = ivs_len(&comm, -INFINITY, INFINITY);
		t->overlap_us = ivs_inter(&comp, &comm, -INFINITY, INFINITY);
		if (all.n)
			t->dev_span_us = all.b[all.n - 1] - all.a[0];
		t->kern_med_us = dg_median(kdur.a, (int)kdur.n);
	}

	/* busy anywhere: ops of every host thread and every device event but
	 * communication (a collective waiting for its peers is no work); a
	 * stretch of the step's thread with none of them is a wait */
	struct ivs busy = {0};
	{
		struct dg_ev *d = malloc(sizeof(*d) * (t->n_ev ? t->n_ev : 1));
		if (!d)
			abort();
		size_t nd = 0;
		for (size_t q = 0; q < t->n_ev; q++)
			if (t->ev[q].kind == DG_OP || (t->ev[q].kind >= DG_KCOMP && t->ev[q].kind != DG_KCOMM)) {
				d[nd] = t->ev[q];
				d[nd++].thread = 0;
			}
		qsort(d, nd, sizeof(*d), cmp_ev);
		for (size_t q = 0; q < nd; q++)
			ivs_add(&busy, d[q].ts, d[q].end);
		free(d);
		ivs_merge(&busy);
	}

	uint32_t n_names = fl_strtab_count(t->st);
	uint32_t *tiny_by_name = calloc(n_names ? n_names : 1, sizeof(uint32_t));
	/* per kernel name in one step: its count and its fastest instance */
	uint32_t *kc_count = calloc(n_names ? n_names : 1, sizeof(uint32_t));
	double *kc_fast = calloc(n_names ? n_names : 1, sizeof(double));
	if (!tiny_by_name || !kc_count || !kc_fast)
		abort();
	size_t kq = 0;

	/* per step, on the main thread */
	size_t i = m0;
	for (int k = 0; k < t->n_steps; k++) {
		struct dg_step *s = &t->steps[k];
		double lo = s->ts, hi = s->end;
		/* device window: up to the next step's start (kernels run late) */
		double dhi = k + 1 < t->n_steps ? t->steps[k + 1].ts : (all.n ? all.b[all.n - 1] : hi);
		if (dhi < hi)
			dhi = hi;
		s->dev_busy_us = ivs_len(&all, lo, dhi);
		s->comp_us = ivs_len(&comp, lo, dhi);
		/* the same compute at its fastest: per kernel name, the step's
		 * fastest instance times its count (load, a late wake or a
		 * descheduled worker only lengthen a kernel) */
		while (kq < nkc && kc[kq].ts < lo)
			kq++;
		size_t ke = kq;
		for (; ke < nkc && kc[ke].ts < dhi; ke++) {
			uint32_t nm = kc[ke].name < n_names ? kc[ke].name : 0;
			double du = kc[ke].end - kc[ke].ts;
			if (!kc_count[nm]++ || du < kc_fast[nm])
				kc_fast[nm] = du;
		}
		for (size_t q = kq; q < ke; q++) {
			uint32_t nm = kc[q].name < n_names ? kc[q].name : 0;
			s->comp_fast_us += kc_count[nm] * kc_fast[nm];
			kc_count[nm] = 0; /* counted once, and reset for the next step */
		}
		s->comm_us = ivs_len(&comm, lo, dhi);
		s->comm_overlap_us = ivs_inter(&comp, &comm, lo, dhi);
		s->n_cast = (int)(count_in(&cast, lo, dhi));
		for (size_t q = 0; q < cast.n; q++) /* starts sorted: the ones in the window */
			if (cast.a[q] >= lo && cast.a[q] <= dhi)
				s->cast_us += cast.b[q] - cast.a[q];
		s->launch_first_pos = 1;
		while (i < m1 && t->ev[i].ts < lo)
			i++;
		size_t j = i;
		while (j < m1 && t->ev[j].ts < hi)
			j++;
		double top_end = -INFINITY, cov_end = -INFINITY, alloc_end = -INFINITY;
		double last_launch = -INFINITY;
		for (size_t q = i; q < j; q++)
			if (t->ev[q].kind == DG_RT && (t->ev[q].rtf & DG_RT_LAUNCH))
				last_launch = t->ev[q].ts;
		for (size_t q = i; q < j; q++) {
			const struct dg_ev *e = &t->ev[q];
			double ee = e->end < hi ? e->end : hi;
			if (e->kind == DG_OP) {
				s->n_ops++;
				if ((e->rtf & DG_OP_CONV) && e->end - e->ts >= CONV_OP_US) {
					s->n_conv++;
					s->conv_us += e->end - e->ts;
				}
				if (e->ts >= top_end) {
					s->n_top++;
					s->top_us += ee - e->ts;
					/* tiny by its own work: less the launch calls under it
					 * (a slow launch path must not hide a storm) */
					double own = e->end - e->ts;
					for (size_t r = q + 1; r < j && t->ev[r].ts < e->end; r++)
						if (t->ev[r].kind == DG_RT && (t->ev[r].rtf & DG_RT_LAUNCH))
							own -= t->ev[r].end - t->ev[r].ts;
					if (own < TINY_OP_US) {
						s->n_tiny++;
						s->tiny_us += e->end - e->ts;
						if (e->name < n_names)
							tiny_by_name[e->name]++;
					}
					top_end = e->end;
				}
			}
			if (e->kind == DG_OP || e->kind == DG_SPAN) {
				if (e->ts >= cov_end) {
					s->covered_us += ee - e->ts;
					cov_end = ee;
				} else if (ee > cov_end) {
					s->covered_us += ee - cov_end;
					cov_end = ee;
				}
			}
			if (e->kind == DG_RT && (e->rtf & DG_RT_LAUNCH)) {
				if (!s->n_launch)
					s->launch_first_pos = s->dur > 0 ? (e->ts - lo) / s->dur : 0;
				s->n_launch++;
				s->launch_us += e->end - e->ts;
				ivs_add(&ldur, e->end - e->ts, 0);
			}
			if ((e->kind == DG_RT && (e->rtf & DG_RT_ALLOC)) ||
			    (e->kind == DG_OP && (e->rtf & DG_OP_ALLOC) && e->end - e->ts >= ALLOC_OP_US)) {
				/* the time once: an allocation op with its cudaMalloc under it */
				s->n_alloc++;
				double from = e->ts > alloc_end ? e->ts : alloc_end;
				if (e->end > from) {
					s->alloc_us += e->end - from;
					alloc_end = e->end;
				}
			}
			/* a blocking copy with a host-to-device copy under it: the
			 * host waits for the queue and the copy, a feed, not a read */
			if (e->kind == DG_RT && (e->rtf & DG_RT_MEMCPY) && count_in(&h2d, e->ts, e->end) > 0) {
				if (!s->n_h2d_block)
					s->h2d_first_pos = s->dur > 0 ? (e->ts - lo) / s->dur : 0;
				s->n_h2d_block++;
				s->h2d_block_us += e->end - e->ts;
				continue;
			}
			if (e->kind == DG_RT && (e->rtf & DG_RT_SYNC)) {
				s->n_sync++;
				s->sync_us += e->end - e->ts;
				if (last_launch > e->end) {
					s->n_mid_sync++;
					/* device idle around it: last device end before the
					 * sync's end, to the first device start after it */
					if (all.n) {
						size_t x = ivs_find(&all, e->end);
						double prev = x > 0 ? all.b[x - 1] : lo;
						double next = x < all.n ? all.a[x] : e->end;
						if (x < all.n && all.a[x] <= e->end)
							next = prev = e->end; /* device busy at the sync's end */
						if (prev < e->ts)
							prev = e->ts < lo ? lo : e->ts; /* count from the sync's start at most */
						if (next > prev)
							s->sync_idle_us += next - prev;
					}
				}
			}
			if (e->kind == DG_SPAN) {
				struct dg_span *sp = span_of(t, e->name);
				/* outermost occurrence of this name only */
				int nested = 0;
				for (size_t r = i; r < q; r++)
					if (t->ev[r].kind == DG_SPAN && t->ev[r].name == e->name && t->ev[r].end >= e->end) {
						nested = 1;
						break;
					}
				if (nested)
					continue;
				sp->dur[k] += ee - e->ts;
				sp->count[k]++;
				sp->n_copy[k] += (int)count_in(&d2h, e->ts, e->end);
				for (size_t r = i; r < q; r++)
					if (t->ev[r].kind == DG_RT && (t->ev[r].rtf & DG_RT_LAUNCH))
						sp->launch_before[k]++;
				for (size_t r = q + 1; r < j && t->ev[r].ts < e->end; r++) {
					const struct dg_ev *u = &t->ev[r];
					if (u->kind == DG_SPAN && u->name != e->name)
						sp->n_nested[k]++;
					else if (u->kind == DG_RT && (u->rtf & DG_RT_LAUNCH))
						sp->launch_in[k]++;
					else if (u->kind == DG_OP && (u->rtf & DG_OP_COPY))
						sp->n_copy[k]++;
				}
				sp->first_pos += s->dur > 0 ? (e->ts - lo) / s->dur : 0;
				/* outermost ops under the span */
				double oe = -INFINITY, prev = e->ts, gap = 0, ga = e->ts;
				for (size_t r = q + 1; r < j && t->ev[r].ts < e->end; r++)
					if (t->ev[r].kind == DG_OP && t->ev[r].ts >= oe) {
						double a = t->ev[r].ts, b = t->ev[r].end < e->end ? t->ev[r].end : e->end;
						if (b > a)
							sp->ops_us[k] += b - a;
						sp->n_ops[k]++;
						if (a - prev > gap) {
							gap = a - prev;
							ga = prev;
						}
						prev = b > prev ? b : prev;
						oe = t->ev[r].end;
					}
				if (ee - prev > gap) {
					gap = ee - prev;
					ga = prev;
				}
				/* less what ran meanwhile on other threads or the device */
				gap -= ivs_len(&busy, ga, ga + gap);
				if (gap > sp->gap[k])
					sp->gap[k] = gap;
			}
		}
		i = j;
	}
	for (int q = 0; q < t->n_spans; q++) {
		struct dg_span *sp = &t->spans[q];
		int c = 0;
		for (int k = 0; k < t->n_steps; k++)
			c += sp->count[k] > 0;
		sp->n_present = c;
		int tot = 0;
		for (int k = 0; k < t->n_steps; k++)
			tot += sp->count[k];
		if (tot)
			sp->first_pos /= tot;
	}
	{
		uint32_t b[3] = {0, 0, 0};
		uint64_t tot = 0;
		for (uint32_t q = 0; q < n_names; q++) {
			uint32_t c = tiny_by_name[q];
			tot += c;
			if (c > b[0]) {
				b[2] = b[1];
				b[1] = b[0];
				b[0] = c;
			} else if (c > b[1]) {
				b[2] = b[1];
				b[1] = c;
			} else if (c > b[2])
				b[2] = c;
		}
		t->tiny_top3_share = tot ? (double)(b[0] + b[1] + b[2]) / (double)tot : 0;
		free(tiny_by_name);
		free(kc_count);
		free(kc_fast);
		free(kc);
	}
	t->launch_med_us = dg_median(ldur.a, (int)ldur.n);
	ivs_free(&d2h);
	ivs_free(&h2d);
	ivs_free(&cast);
	ivs_free(&kdur);
	ivs_free(&ldur);
	ivs_free(&all);
	ivs_free(&busy);
	ivs_free(&comp);
	ivs_free(&comm);
	/* events are no longer needed */
	free(t->ev);
	t->ev = NULL;
	t->n_ev = t->cap_ev = 0;
}

struct loader {
	struct dg_trace *t;
	size_t n, next;
	pthread_mutex_t mu;
};

static void load_one(struct dg_trace *t)
{
	struct read_ctx c = {.t = t};
	t->st = fl_strtab_new();
	if (!t->st) {
		t->st_read = FL_ERUNTIME;
		snprintf(t->msg, sizeof t->msg, "%s: out of memory", t->path);
		return;
	}
	c.c.cpu_op = fl_strtab_intern(t->st, "cpu_op", 6);
	c.c.user_annotation = fl_strtab_intern(t->st, "user_annotation", 15);
	c.c.cuda_runtime = fl_strtab_intern(t->st, "cuda_runtime", 12);
	c.c.cuda_driver = fl_strtab_intern(t->st, "cuda_driver", 11);
	c.c.kernel = fl_strtab_intern(t->st, "kernel", 6);
	c.c.gpu_memcpy = fl_strtab_intern(t->st, "gpu_memcpy", 10);
	c.c.gpu_memset = fl_strtab_intern(t->st, "gpu_memset", 10);
	c.c.trace = fl_strtab_intern(t->st, "Trace", 5);
	struct fl_trace_stream_opts o = {.strings = t->st, .on_event = on_event, .arg = &c};
	enum fl_status st = fl_trace_stream_file(t->path, &o, &t->info);
	free(c.nk);
	free(c.rtf);
	free(c.devf);
	free(c.opf);
	if (st != FL_OK) {
		t->st_read = st;
		snprintf(t->msg, sizeof t->msg, "%s", fl_error_msg());
		return;
	}
	build(t);
}

static void *loader_main(void *arg)
{
	struct loader *l = arg;
	for (;;) {
		pthread_mutex_lock(&l->mu);
		size_t k = l->next++;
		pthread_mutex_unlock(&l->mu);
		if (k >= l->n)
			return NULL;
		load_one(&l->t[k]);
	}
}

enum fl_status dg_load(const char *const *paths, size_t n, struct dg_trace **out)
{
	*out = NULL;
	struct dg_trace *t = calloc(n ? n : 1, sizeof(*t));
	if (!t)
		return fl_error(FL_ERUNTIME, "diagnose: out of memory");
	for (size_t k = 0; k < n; k++)
		t[k].path = paths[k];
	struct loader l = {.t = t, .n = n};
	pthread_mutex_init(&l.mu, NULL);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nth = cpus > 1 ? (size_t)cpus : 1;
	if (nth > n)
		nth = n;
	if (nth > 16)
		nth = 16;
	pthread_t th[16];
	size_t started = 0;
	for (size_t k = 1; k < nth; k++)
		if (!pthread_create(&th[started], NULL, loader_main, &l))
			started++;
	loader_main(&l);
	for (size_t k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	pthread_mutex_destroy(&l.mu);
	for (size_t k = 0; k < n; k++)
		if (t[k].st_read != FL_OK) {
			enum fl_status st = fl_error(t[k].st_read, "%s", t[k].msg);
			dg_free(t, n);
			return st;
		}
	for (size_t k = 0; k < n; k++) {
		if (t[k].info.has_dist_rank)
			t[k].rank = t[k].info.dist_rank;
		else if (t[k].info.has_hta_rank)
			t[k].rank = t[k].info.hta_rank;
		else
			t[k].rank = (long long)k;
	}
	*out = t;
	return FL_OK;
}

void dg_free(struct dg_trace *t, size_t n)
{
	if (!t)
		return;
	for (size_t k = 0; k < n; k++) {
		free(t[k].ev);
		free(t[k].comm_dur);
		free(t[k].steps);
		for (int q = 0; q < t[k].n_spans; q++) {
			free(t[k].spans[q].dur);
			free(t[k].spans[q].ops_us);
			free(t[k].spans[q].gap);
			free(t[k].spans[q].count);
			free(t[k].spans[q].n_ops);
			free(t[k].spans[q].n_nested);
			free(t[k].spans[q].n_copy);
			free(t[k].spans[q].launch_before);
			free(t[k].spans[q].launch_in);
		}
		free(t[k].spans);
		if (t[k].st)
			fl_strtab_free(t[k].st);
	}
	free(t);
}
