/* device_straggler.c — HTA's straggler rule (late-start collectives), over
 * all the ranks of a job at once, plus the spread of the chosen collective's
 * start across ranks. See device_metrics.h. */
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
	size_t nsteps = dm_analysed_steps(j, &steps);
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
	seen = dm_xalloc(NULL, nsteps);
	memset(seen, 0, nsteps);
	double tmin = INFINITY, tmax = -INFINITY;
	for (size_t ri = 0; ri < nr; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		for (size_t i = 0; i < r->nview; i++) {
			const struct dm_ev *e = &r->ev[r->view[i]];
			long s = e->iter == ITER_NAN ? -1 : dm_find_i32(steps, nsteps, e->iter);
			if (s < 0)
				continue;
			seen[s] = 1;
			if (e->ts < tmin) tmin = e->ts;
			if (e->ts + e->dur > tmax) tmax = e->ts + e->dur;
		}
		for (size_t i = 0; i < r->nh; i++) {
			const struct dm_host *h = &r->host[i];
			if (!dm_host_kept(r, h->ts))
				continue;
			long s = dm_find_i32(steps, nsteps, dm_iter_of_ts(r, h->ts));
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
			if (e->stream <= 0 || e->iter == ITER_NAN || e->iter <= 0 || dm_find_i32(steps, nsteps, e->iter) < 0 ||
			    !(e->dur >= min_dur) || ktype(j, e->name) != KT_COMM)
				continue;
			GROW(rows, nrows, rcap);
			rows[nrows++] = (struct srow){e->stream, e->iter, e->name, (uint32_t)ri, e->ts, e->dur, ord};
		}
	}
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
	cJSON_AddNumberToObject(o, "rank", (double)j->ranks[first].rank);
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

static cJSON *straggler_job(const struct fl_dm_job *j) { return straggler_json(j, j->o.straggler_candidates); }

const struct dm_analysis dm_straggler = {
	.key = "straggler",
	.job = straggler_job,
};
