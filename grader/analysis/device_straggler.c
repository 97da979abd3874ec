/* device_straggler.c — HTA's straggler rule (late-start collectives), over
 * all the ranks of a job at once, plus the spread of the chosen collective's
 * start across ranks. Each rank gives what the rule reads of it (the span of
 * each of its steps, and the collectives that may be the last long one of a
 * step), so that ranks read by other processes pool the same. See
 * device_metrics.h. */
#include "grader/analysis/device_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* the first start and the last end of the events of one step */
struct sspan {
	int32_t iter;
	double lo, hi;
};

/* A rank's state, or the job's (the ranks' one after the other). */
struct strag {
	long long *rank_ids;  /* per rank */
	size_t nr;
	int32_t *steps;       /* analysed step numbers, sorted, unique (a rank's) or not (pooled) */
	size_t nsteps;
	struct sspan *spans;  /* a rank's: by iter */
	size_t nspans;
	struct srow *rows;    /* collectives: a rank's, or every rank's (srow.rank: position) */
	size_t nrows;
};

static void span_add(struct strag *st, size_t *cap, int32_t iter, double lo, double hi)
{
	size_t a = 0, b = st->nspans;
	while (a < b) {
		size_t m = (a + b) / 2;
		if (st->spans[m].iter < iter)
			a = m + 1;
		else
			b = m;
	}
	if (a < st->nspans && st->spans[a].iter == iter) {
		if (lo < st->spans[a].lo) st->spans[a].lo = lo;
		if (hi > st->spans[a].hi) st->spans[a].hi = hi;
		return;
	}
	GROW(st->spans, st->nspans, *cap);
	memmove(&st->spans[a + 1], &st->spans[a], (st->nspans - a) * sizeof(*st->spans));
	st->spans[a] = (struct sspan){iter, lo, hi};
	st->nspans++;
}

/* What the rule reads of a rank: the span of each step (its events of the
 * view, and the host events kept, by iteration), and its collectives of a
 * step, of which only those that can be the last long one of their (stream,
 * name, step) are kept: a row followed by a row at least as long never is,
 * whatever the threshold. */
static int straggler_rank(const struct actx *c, void *state)
{
	struct strag *st = state;
	const struct fl_dm_job *j = c->j;
	const struct dm_rank *r = c->r;
	st->rank_ids = dm_xalloc(NULL, sizeof(*st->rank_ids));
	st->rank_ids[0] = r->rank;
	st->nr = 1;
	size_t cap = 0, scap = 0, rcap = 0;
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (!(j->nm.nf[e->name] & NF_STEP))
			continue;
		long long x = j->nm.stepnum[e->name];
		GROW(st->steps, st->nsteps, cap);
		st->steps[st->nsteps++] = x > INT32_MAX ? INT32_MAX : (int32_t)x;
	}
	if (st->nsteps)
		dm_sort_n(st->steps, st->nsteps, sizeof(*st->steps), dm_cmp_i32);
	size_t u = 0;
	for (size_t i = 0; i < st->nsteps; i++)
		if (!u || st->steps[i] != st->steps[u - 1])
			st->steps[u++] = st->steps[i];
	st->nsteps = u;
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->iter >= 0) /* not -1, not ITER_NAN */
			span_add(st, &scap, e->iter, e->ts, e->ts + e->dur);
	}
	for (size_t i = 0; i < r->nh; i++) {
		const struct dm_host *h = &r->host[i];
		if (!dm_host_kept(r, h->ts))
			continue;
		int32_t it = dm_iter_of_ts(r, h->ts);
		if (it >= 0)
			span_add(st, &scap, it, h->ts, h->ts + h->dur);
	}
	uint32_t ord = 0;
	for (size_t i = 0; i < r->nview; i++, ord++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->stream <= 0 || e->iter <= 0 || ktype(j, e->name) != KT_COMM)
			continue;
		GROW(st->rows, st->nrows, rcap);
		st->rows[st->nrows++] = (struct srow){e->stream, e->iter, e->name, 0, e->ts, e->dur, ord};
	}
	dm_sort_n(st->rows, st->nrows, sizeof(*st->rows), cmp_srow);
	/* from the end of each group, keep the rows longer than every later one */
	size_t keep = st->nrows;
	double longest = -INFINITY;
	for (size_t i = st->nrows; i-- > 0;) {
		const struct srow *x = &st->rows[i], *y = i + 1 < st->nrows ? &st->rows[i + 1] : NULL;
		if (!y || y->stream != x->stream || y->name != x->name || y->iter != x->iter)
			longest = -INFINITY;
		if (x->dur > longest) {
			st->rows[--keep] = *x;
			longest = x->dur;
		}
	}
	if (keep) /* rows from the end: to the front */
		memmove(st->rows, st->rows + keep, (st->nrows - keep) * sizeof(*st->rows));
	st->nrows -= keep;
	return 0;
}

/* the job's: the ranks one after the other */
static void straggler_pool(void *job_state, const void *rank_state)
{
	struct strag *all = job_state;
	const struct strag *st = rank_state;
	uint32_t pos = (uint32_t)all->nr;
	all->rank_ids = dm_xalloc(all->rank_ids, (all->nr + st->nr) * sizeof(*all->rank_ids));
	dm_copy_n(all->rank_ids + all->nr, st->rank_ids, st->nr * sizeof(*st->rank_ids));
	all->nr += st->nr;
	all->steps = dm_xalloc(all->steps, (all->nsteps + st->nsteps + 1) * sizeof(*all->steps));
	dm_copy_n(all->steps + all->nsteps, st->steps, st->nsteps * sizeof(*st->steps));
	all->nsteps += st->nsteps;
	all->spans = dm_xalloc(all->spans, (all->nspans + st->nspans + 1) * sizeof(*all->spans));
	dm_copy_n(all->spans + all->nspans, st->spans, st->nspans * sizeof(*st->spans));
	all->nspans += st->nspans;
	all->rows = dm_xalloc(all->rows, (all->nrows + st->nrows + 1) * sizeof(*all->rows));
	for (size_t i = 0; i < st->nrows; i++) {
		all->rows[all->nrows + i] = st->rows[i];
		all->rows[all->nrows + i].rank = pos;
	}
	all->nrows += st->nrows;
}

static void straggler_release(void *state)
{
	struct strag *st = state;
	free(st->rank_ids);
	free(st->steps);
	free(st->spans);
	free(st->rows);
}

static void straggler_save(const void *state, struct strbuf *out)
{
	const struct strag *st = state;
	dm_put_u64(out, st->nr);
	dm_put(out, st->rank_ids, st->nr * sizeof(*st->rank_ids));
	dm_put_u64(out, st->nsteps);
	dm_put(out, st->steps, st->nsteps * sizeof(*st->steps));
	dm_put_u64(out, st->nspans);
	dm_put(out, st->spans, st->nspans * sizeof(*st->spans));
	dm_put_u64(out, st->nrows);
	dm_put(out, st->rows, st->nrows * sizeof(*st->rows));
}

static int straggler_load(struct dm_rd *in, const uint32_t *map, uint32_t nmap, void *state)
{
	struct strag *st = state;
	st->nr = dm_get_u64(in);
	if (dm_get_array(in, (void **)&st->rank_ids, st->nr, sizeof(*st->rank_ids)))
		return -1;
	st->nsteps = dm_get_u64(in);
	if (dm_get_array(in, (void **)&st->steps, st->nsteps, sizeof(*st->steps)))
		return -1;
	st->nspans = dm_get_u64(in);
	if (dm_get_array(in, (void **)&st->spans, st->nspans, sizeof(*st->spans)))
		return -1;
	st->nrows = dm_get_u64(in);
	if (dm_get_array(in, (void **)&st->rows, st->nrows, sizeof(*st->rows)))
		return -1;
	for (size_t i = 0; i < st->nrows; i++)
		if (dm_map_id(map, nmap, &st->rows[i].name))
			return -1;
	return 0;
}

/* HTA's find_stragglers_with_late_start_comm_kernels: among the collectives
 * of the analysed steps that last >= 1% of the mean iteration, take the last
 * of each (rank, stream, step, name); pick the (stream, name) whose duration
 * varies most across ranks (mean over steps of the std); in each step the
 * ranks that start it latest (top k) are stragglers; ranks by count. */
static cJSON *straggler_json(const struct fl_dm_job *j, void *state)
{
	struct strag *st = state;
	int k_candidates = j->o.straggler_candidates;
	cJSON *o = cJSON_CreateObject();
	const char *why = NULL;
	unsigned char *seen = NULL;
	struct srow *rows = NULL;
	size_t nrows = 0, niters = 0;
	size_t nr = st->nr;
	double *cnt1 = NULL, *cntk = NULL, *late = NULL, *ms = NULL, *tmp = NULL;
	size_t *nlate = NULL;
	int *has = NULL;
	/* the analysed steps of the job: sorted, unique */
	int32_t *steps = dm_xalloc(NULL, (st->nsteps ? st->nsteps : 1) * sizeof(*steps));
	dm_copy_n(steps, st->steps, st->nsteps * sizeof(*steps));
	if (st->nsteps)
		dm_sort_n(steps, st->nsteps, sizeof(*steps), dm_cmp_i32);
	size_t nsteps = 0;
	for (size_t i = 0; i < st->nsteps; i++)
		if (!nsteps || steps[i] != steps[nsteps - 1])
			steps[nsteps++] = steps[i];
	if (nr < 2) {
		why = "needs two or more ranks";
		goto out;
	}
	if (!nsteps) {
		why = "no ProfilerStep in the traces";
		goto out;
	}
	/* the rows of the analysed steps: the first start, the last end */
	seen = dm_xalloc(NULL, nsteps);
	memset(seen, 0, nsteps);
	double tmin = INFINITY, tmax = -INFINITY;
	for (size_t i = 0; i < st->nspans; i++) {
		long s = dm_find_i32(steps, nsteps, st->spans[i].iter);
		if (s < 0)
			continue;
		seen[s] = 1;
		if (st->spans[i].lo < tmin) tmin = st->spans[i].lo;
		if (st->spans[i].hi > tmax) tmax = st->spans[i].hi;
	}
	for (size_t s = 0; s < nsteps; s++)
		niters += seen[s];
	if (!niters) {
		why = "no event in the analysed steps";
		goto out;
	}
	double mean_iter = (tmax - tmin) / (double)niters, min_dur = mean_iter * 0.01;
	rows = dm_xalloc(NULL, (st->nrows ? st->nrows : 1) * sizeof(*rows));
	for (size_t i = 0; i < st->nrows; i++)
		if (dm_find_i32(steps, nsteps, st->rows[i].iter) >= 0 && st->rows[i].dur >= min_dur)
			rows[nrows++] = st->rows[i];
	dm_sort_n(rows, nrows, sizeof(*rows), cmp_srow);
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
	tmp = dm_xalloc(NULL, (nr + 1) * sizeof(*tmp));
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
			double sd = dm_std_of(tmp, nv);
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
	cnt1 = dm_xalloc(NULL, nr * sizeof(double));
	cntk = dm_xalloc(NULL, nr * sizeof(double));
	late = dm_xalloc(NULL, nr * sizeof(double));
	nlate = dm_xalloc(NULL, nr * sizeof(size_t));
	has = dm_xalloc(NULL, nr * sizeof(int));
	ms = dm_xalloc(NULL, (nr + 1) * sizeof(double));
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
		dm_sort_doubles(ms, nv);
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
	cJSON_AddNumberToObject(o, "rank", (double)st->rank_ids[first]);
	cJSON *cand = cJSON_CreateArray();
	unsigned char *used = dm_xalloc(NULL, nr);
	memset(used, 0, nr);
	for (int c = 0; c < k_candidates; c++) {
		int b = -1;
		for (size_t ri = 0; ri < nr; ri++)
			if (has[ri] && !used[ri] && (b < 0 || cntk[ri] > cntk[b]))
				b = (int)ri;
		if (b < 0)
			break;
		used[b] = 1;
		cJSON_AddItemToArray(cand, cJSON_CreateNumber((double)st->rank_ids[b]));
	}
	free(used);
	cJSON_AddItemToObject(o, "candidates", cand);
	cJSON *counts = cJSON_CreateObject(), *lateo = cJSON_CreateObject();
	for (size_t ri = 0; ri < nr; ri++) {
		if (!has[ri])
			continue;
		char key[32];
		snprintf(key, sizeof(key), "%lld", st->rank_ids[ri]);
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

const struct dm_analysis dm_straggler = {
	.key = "straggler",
	.size = sizeof(struct strag),
	.top_only = 1,
	.rank = straggler_rank,
	.pool = straggler_pool,
	.json = straggler_json,
	.release = straggler_release,
	.save = straggler_save,
	.load = straggler_load,
};
