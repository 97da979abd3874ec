/* device_view.c — HTA's preparation of a rank's events (ns rounding,
 * alignment, correlation links, steps and iterations, the last-step filter)
 * and what the analyses read of them: the view, the device rows in time
 * order, merged intervals. See device_internal.h. */
#include "grader/analysis/device_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- steps and links */

/* The iteration of a host timestamp: the last step in file order with
 * step.ts <= ts < step.ts + step.dur (HTA's add_iteration). */
static void build_step_segments(struct dm_rank *r)
{
	r->nbound = 0;
	if (!r->nsteps)
		return;
	double *b = dm_xalloc(NULL, 2 * r->nsteps * sizeof(*b));
	size_t nb = 0;
	for (size_t i = 0; i < r->nsteps; i++) {
		b[nb++] = r->steps[i].ts;
		b[nb++] = r->steps[i].ts + r->steps[i].dur;
	}
	dm_sort_n(b, nb, sizeof(*b), fl_cmp_double);
	size_t u = 0;
	for (size_t i = 0; i < nb; i++)
		if (!u || b[i] != b[u - 1])
			b[u++] = b[i];
	r->bound = b;
	r->nbound = u;
	r->seg = dm_xalloc(NULL, u * sizeof(*r->seg));
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

int32_t dm_iter_of_ts(const struct dm_rank *r, double ts)
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

int dm_host_kept(const struct dm_rank *r, double ts)
{
	if (!r->filtered)
		return 1;
	return r->cut_incl ? ts <= r->cut : ts < r->cut;
}

/* HTA's ns rounding: pandas reads ts as floats when some ts has a fraction or
 * is missing; then ts = ceil(ts), end = floor(ts + dur). Returns the earliest ts. */
double dm_round_rank(struct dm_rank *r)
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
void dm_align_rank(struct dm_rank *r, double t0)
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
	struct kv *a = dm_xalloc(NULL, (nc ? nc : 1) * sizeof(*a));
	nc = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].corr != -1)
			a[nc++] = (struct kv){dm_ikey(r->ev[i].corr), (uint32_t)i};
	dm_radix_kv(a, nc);
	r->gpos = dm_xalloc(NULL, (nc ? nc : 1) * sizeof(*r->gpos));
	r->gbeg = dm_xalloc(NULL, (nc + 1) * sizeof(*r->gbeg));
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
enum fl_status dm_prepare_rank(struct fl_dm_job *j, struct dm_rank *r)
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
			r->ev[i].iter = dm_iter_of_ts(r, r->ev[i].ts);
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
		r->view = dm_xalloc(NULL, (r->n ? r->n : 1) * sizeof(*r->view));
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
			e->mult = dm_host_kept(r, e->ts);
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

/* The analysed steps: step numbers of the step rows in the views (HTA's
 * get_profiler_steps), sorted and unique. */
size_t dm_analysed_steps(const struct fl_dm_job *j, int32_t **out)
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
		dm_sort_n(v, n, sizeof(*v), dm_cmp_i32);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || v[i] != v[u - 1])
			v[u++] = v[i];
	*out = v;
	return u;
}

/* ------------------------------------------------- the rows the analyses read */

void dm_actx_init(struct actx *c, const struct fl_dm_job *j, const struct dm_rank *r)
{
	c->j = j;
	c->r = r;
	struct kv *a = dm_xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*a));
	double *ts = dm_xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*ts));
	uint32_t *vi = dm_xalloc(NULL, (r->nview ? r->nview : 1) * sizeof(*vi));
	size_t n = 0;
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->stream != -1) {
			ts[n] = e->ts;
			vi[n++] = (uint32_t)i;
		}
	}
	if (n)
		dm_time_keys(a, n, ts, sizeof(*ts));
	dm_radix_kv(a, n);
	c->dev = dm_xalloc(NULL, (n ? n : 1) * sizeof(*c->dev));
	for (size_t i = 0; i < n; i++)
		c->dev[i] = vi[a[i].i];
	c->ndev = n;
	free(a);
	free(ts);
	free(vi);
}

void dm_actx_release(struct actx *c) { free(c->dev); }

/* ------------------------------------------------------------- intervals */

/* HTA's merge_kernel_intervals on the device rows of one kernel type (-1:
 * all): in ts order, a row starts a new group when its ts is after every
 * earlier row's end. Returns the groups (caller frees). */
size_t dm_merged(const struct actx *c, int kt, struct ivl **out)
{
	struct ivl *v = dm_xalloc(NULL, (c->ndev ? c->ndev : 1) * sizeof(*v));
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
double dm_ivl_sum(const struct ivl *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i].end - v[i].ts;
	return s;
}

/* +delta at starts and -delta at ends of merged intervals, by time. */
size_t dm_ticks_of(struct tick **out, size_t n_types, struct ivl *const *v, const size_t *n, const int *val)
{
	size_t total = 0, k = 0;
	for (size_t t = 0; t < n_types; t++)
		total += 2 * n[t];
	struct tick *tk = dm_xalloc(NULL, (total ? total : 1) * sizeof(*tk));
	struct kv *a = dm_xalloc(NULL, (total ? total : 1) * sizeof(*a));
	for (size_t t = 0; t < n_types; t++)
		for (size_t i = 0; i < n[t]; i++) {
			tk[k++] = (struct tick){v[t][i].ts, val[t]};
			tk[k++] = (struct tick){v[t][i].end, -val[t]};
		}
	if (k)
		dm_time_keys(a, k, &tk[0].time, sizeof(*tk));
	dm_radix_kv(a, k);
	dm_apply_perm(tk, sizeof(*tk), a, k);
	free(a);
	*out = tk;
	return k;
}

