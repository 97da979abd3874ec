/* device_temporal.c — HTA's temporal breakdown (idle / compute / non-compute
 * time of the device rows) and comm/compute overlap, both from merged kernel
 * intervals. See device_metrics.h for the definitions. */
#include "grader/analysis/device_internal.h"

#include <stdlib.h>

/* ------------------------------------------------------------- temporal */

struct temporal {
	int ok;
	double idle, compute, noncompute, span;
};

static struct temporal temporal_of(const struct actx *c)
{
	struct temporal t = {0};
	struct ivl *v;
	size_t g = dm_merged(c, -1, &v);
	if (g) {
		t.ok = 1;
		t.span = v[g - 1].end - v[0].ts;
		t.idle = t.span - dm_ivl_sum(v, g);
	}
	free(v);
	if (t.ok) {
		g = dm_merged(c, KT_COMP, &v);
		t.compute = dm_ivl_sum(v, g);
		t.noncompute = t.span - t.compute - t.idle;
		free(v);
	}
	return t;
}

static int temporal_rank(const struct actx *c, void *state)
{
	*(struct temporal *)state = temporal_of(c);
	return 0;
}

/* the job's: sums over the ranks with device rows */
static void temporal_pool(void *job_state, const void *rank_state)
{
	struct temporal *all = job_state;
	const struct temporal *t = rank_state;
	if (!t->ok)
		return;
	all->ok = 1;
	all->idle += t->idle;
	all->compute += t->compute;
	all->noncompute += t->noncompute;
	all->span += t->span;
}

static cJSON *temporal_json(const struct fl_dm_job *j, void *state)
{
	const struct temporal *t = state;
	(void)j;
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

const struct dm_analysis dm_temporal = {
	.key = "temporal",
	.size = sizeof(struct temporal),
	.rank = temporal_rank,
	.pool = temporal_pool,
	.json = temporal_json,
};

/* -------------------------------------------------------------- overlap */

struct overlap {
	int ok;
	double comm, overlap;
};

static struct overlap overlap_of(const struct actx *c)
{
	struct overlap o = {0};
	struct ivl *v[2];
	size_t n[2];
	n[0] = dm_merged(c, KT_COMM, &v[0]);
	n[1] = dm_merged(c, KT_COMP, &v[1]);
	o.comm = dm_ivl_sum(v[0], n[0]);
	o.ok = n[0] > 0;
	struct tick *tk;
	static const int val[2] = {1, 2};
	size_t k = dm_ticks_of(&tk, 2, v, n, val);
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

static int overlap_rank(const struct actx *c, void *state)
{
	*(struct overlap *)state = overlap_of(c);
	return 0;
}

/* the job's: comm time and overlap summed over the ranks */
static void overlap_pool(void *job_state, const void *rank_state)
{
	struct overlap *all = job_state;
	const struct overlap *o = rank_state;
	all->ok |= o->ok;
	all->comm += o->comm;
	all->overlap += o->overlap;
}

static cJSON *overlap_json(const struct fl_dm_job *j, void *state)
{
	const struct overlap *v = state;
	(void)j;
	cJSON *o = cJSON_CreateObject();
	add_num(o, "comm_us", v->comm);
	add_num(o, "overlap_us", v->overlap);
	add_num(o, "comm_comp_pct", v->ok ? pct(v->overlap, v->comm) : NAN);
	return o;
}

const struct dm_analysis dm_overlap = {
	.key = "overlap",
	.size = sizeof(struct overlap),
	.rank = overlap_rank,
	.pool = overlap_pool,
	.json = overlap_json,
};
