/* device_metrics.c — see device_metrics.h (and docs/analyze.md for the
 * differences from HTA, each deliberate). The driver: the table of analyses,
 * run on each rank and pooled over the job here, once for all of them; the
 * analyses are in device_*.c (device_internal.h lists them). */
#include "grader/analysis/device_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct dm_analysis *const dm_analyses[] = {
	&dm_temporal, &dm_overlap, &dm_idle, &dm_kernels, &dm_launch, &dm_queue, &dm_straggler, NULL,
};

#define N_ANALYSES (sizeof(dm_analyses) / sizeof(dm_analyses[0]) - 1)

/* sorted, unique */
static size_t uniq_i32(int32_t *v, size_t n)
{
	if (n)
		dm_sort_n(v, n, sizeof(*v), dm_cmp_i32);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || v[i] != v[u - 1])
			v[u++] = v[i];
	return u;
}

static int32_t clamp_step(long long x) { return x > INT32_MAX ? INT32_MAX : (int32_t)x; }

void dm_result_of(const struct fl_dm_job *j, const struct dm_rank *r, size_t file, struct dm_result *out)
{
	memset(out, 0, sizeof(*out));
	out->rank = r->rank;
	out->file = file;
	out->path = strdup(r->path);
	if (!out->path)
		abort();
	out->events = r->info.n_events;
	out->nview = r->nview;
	out->rounded = r->rounded;
	out->recorded = dm_xalloc(NULL, (r->nsteps ? r->nsteps : 1) * sizeof(int32_t));
	for (size_t s = 0; s < r->nsteps; s++)
		out->recorded[out->nrec++] = clamp_step(r->steps[s].num);
	size_t cap = 0;
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (!(j->nm.nf[e->name] & NF_STEP))
			continue;
		GROW(out->analysed, out->nana, cap);
		out->analysed[out->nana++] = clamp_step(j->nm.stepnum[e->name]);
	}
	out->nana = uniq_i32(out->analysed, out->nana);
	struct actx c;
	dm_actx_init(&c, j, r);
	for (size_t a = 0; a < N_ANALYSES; a++) {
		const struct dm_analysis *an = dm_analyses[a];
		if (!(out->state[a] = calloc(1, an->size)))
			abort(); /* as dm_xalloc */
		out->refused[a] = an->rank(&c, out->state[a]) != 0;
	}
	dm_actx_release(&c);
}

void dm_result_release(struct dm_result *res)
{
	for (size_t a = 0; a < N_ANALYSES; a++) {
		if (res->state[a] && dm_analyses[a]->release)
			dm_analyses[a]->release(res->state[a]);
		free(res->state[a]);
	}
	free(res->path);
	free(res->recorded);
	free(res->analysed);
	memset(res, 0, sizeof(*res));
}

struct dm_pool {
	const struct fl_dm_job *j;
	size_t nranks;
	cJSON *ids, *files, *ranks, *last; /* last: the last rank's entry */
	int32_t *rec, *ana;
	size_t nrec, nana, caprec, capana;
	int rounded;
	void *all[N_ANALYSES]; /* the pooled states */
	int refused[N_ANALYSES];
};

struct dm_pool *dm_pool_begin(const struct fl_dm_job *j)
{
	struct dm_pool *p = calloc(1, sizeof(*p));
	if (!p)
		abort();
	p->j = j;
	p->ids = cJSON_CreateArray();
	p->files = cJSON_CreateArray();
	p->ranks = cJSON_CreateObject();
	for (size_t a = 0; a < N_ANALYSES; a++)
		if (!(p->all[a] = calloc(1, dm_analyses[a]->size)))
			abort();
	return p;
}

static void add_steps(int32_t **v, size_t *n, size_t *cap, const int32_t *x, size_t nx)
{
	for (size_t i = 0; i < nx; i++) {
		GROW(*v, *n, *cap);
		(*v)[(*n)++] = x[i];
	}
}

void dm_pool_add(struct dm_pool *p, struct dm_result *res)
{
	cJSON_AddItemToArray(p->ids, cJSON_CreateNumber((double)res->rank));
	cJSON_AddItemToArray(p->files, cJSON_CreateString(res->path));
	add_steps(&p->rec, &p->nrec, &p->caprec, res->recorded, res->nrec);
	add_steps(&p->ana, &p->nana, &p->capana, res->analysed, res->nana);
	p->rounded |= res->rounded;
	cJSON *x = cJSON_CreateObject();
	cJSON_AddStringToObject(x, "file", res->path);
	cJSON_AddNumberToObject(x, "events", (double)res->events);
	cJSON_AddNumberToObject(x, "events_analyzed", (double)res->nview);
	/* pooled after json(), which may sort the state, as pool() expects */
	for (size_t a = 0; a < N_ANALYSES; a++) {
		const struct dm_analysis *an = dm_analyses[a];
		p->refused[a] |= res->refused[a];
		if (!an->top_only)
			cJSON_AddItemToObject(x, an->key, an->json(p->j, res->state[a]));
		an->pool(p->all[a], res->state[a]);
	}
	char key[32];
	snprintf(key, sizeof(key), "%lld", res->rank);
	cJSON_AddItemToObject(p->ranks, key, x);
	p->last = x;
	p->nranks++;
	dm_result_release(res);
}

cJSON *dm_pool_end(struct dm_pool *p, size_t step_symbols)
{
	const struct fl_dm_job *j = p->j;
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "schema", "faultline.device_metrics/1");
	cJSON_AddStringToObject(root, "definitions", "HolisticTraceAnalysis 0.5.0");
	cJSON_AddItemToObject(root, "rank_ids", p->ids);
	cJSON_AddItemToObject(root, "files", p->files);
	/* steps {recorded, analyzed, dropped_last, rounded_us} */
	cJSON *steps = cJSON_CreateObject(), *rec = cJSON_CreateArray(), *ana = cJSON_CreateArray();
	size_t n = uniq_i32(p->rec, p->nrec);
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(rec, cJSON_CreateNumber(p->rec[i]));
	n = uniq_i32(p->ana, p->nana);
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(ana, cJSON_CreateNumber(p->ana[i]));
	cJSON_AddItemToObject(steps, "recorded", rec);
	cJSON_AddItemToObject(steps, "analyzed", ana);
	cJSON_AddBoolToObject(steps, "dropped_last", step_symbols >= 2 && !j->o.include_last_step);
	cJSON_AddBoolToObject(steps, "rounded_us", p->rounded);
	cJSON_AddItemToObject(root, "steps", steps);
	/* the job's figures: with one rank, the rank's */
	int pool = p->nranks > 1;
	for (size_t a = 0; a < N_ANALYSES; a++) {
		const struct dm_analysis *an = dm_analyses[a];
		cJSON *v;
		if (!an->top_only && p->last && (!pool || p->refused[a]))
			v = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p->last, an->key), 1);
		else
			v = an->json(j, p->all[a]);
		cJSON_AddItemToObject(root, an->key, v);
		if (an->release)
			an->release(p->all[a]);
		free(p->all[a]);
	}
	cJSON_AddItemToObject(root, "ranks", p->ranks);
	free(p->rec);
	free(p->ana);
	free(p);
	return root;
}

cJSON *fl_device_metrics_json(const struct fl_dm_job *j)
{
	struct dm_pool *p = dm_pool_begin(j);
	for (size_t ri = 0; ri < j->nranks; ri++) {
		struct dm_result res;
		dm_result_of(j, &j->ranks[ri], ri, &res);
		dm_pool_add(p, &res);
	}
	return dm_pool_end(p, j->step_symbols);
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
