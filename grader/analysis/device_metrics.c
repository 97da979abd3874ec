/* device_metrics.c — see device_metrics.h (and docs/analyze.md for the
 * differences from HTA, each deliberate). The driver: the table of analyses,
 * run on each rank and pooled over the job here, once for all of them; the
 * analyses are in device_*.c (device_internal.h lists them). */
#include "grader/analysis/device_internal.h"

#include <stdio.h>
#include <stdlib.h>

const struct dm_analysis *const dm_analyses[] = {
	&dm_temporal, &dm_overlap, &dm_idle, &dm_kernels, &dm_launch, &dm_queue, &dm_straggler, NULL,
};

#define N_ANALYSES (sizeof(dm_analyses) / sizeof(dm_analyses[0]) - 1)

/* steps {recorded, analyzed, dropped_last, rounded_us} */
static cJSON *steps_json(const struct fl_dm_job *j)
{
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
		dm_sort_n(sv, ns, sizeof(*sv), dm_cmp_i32);
	size_t u = 0;
	for (size_t i = 0; i < ns; i++)
		if (!u || sv[i] != sv[u - 1])
			sv[u++] = sv[i];
	ns = u;
	for (size_t i = 0; i < ns; i++)
		cJSON_AddItemToArray(rec, cJSON_CreateNumber(sv[i]));
	free(sv);
	ns = dm_analysed_steps(j, &sv);
	for (size_t i = 0; i < ns; i++)
		cJSON_AddItemToArray(ana, cJSON_CreateNumber(sv[i]));
	free(sv);
	cJSON_AddItemToObject(steps, "recorded", rec);
	cJSON_AddItemToObject(steps, "analyzed", ana);
	cJSON_AddBoolToObject(steps, "dropped_last", j->step_symbols >= 2 && !j->o.include_last_step);
	cJSON_AddBoolToObject(steps, "rounded_us", rounded);
	return steps;
}

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
	cJSON_AddItemToObject(root, "steps", steps_json(j));

	/* per rank, and pooled: with one rank the job's figures are the rank's */
	int pool = j->nranks > 1;
	void *all[N_ANALYSES] = {NULL}; /* the pooled states */
	int refused[N_ANALYSES] = {0};
	for (size_t a = 0; a < N_ANALYSES; a++)
		if (dm_analyses[a]->rank && !(all[a] = calloc(1, dm_analyses[a]->size)))
			abort(); /* as dm_xalloc */
	cJSON *ranks = cJSON_CreateObject(), *x = NULL;
	for (size_t ri = 0; ri < j->nranks; ri++) {
		const struct dm_rank *r = &j->ranks[ri];
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "file", r->path);
		cJSON_AddNumberToObject(x, "events", (double)r->info.n_events);
		cJSON_AddNumberToObject(x, "events_analyzed", (double)r->nview);
		struct actx c;
		dm_actx_init(&c, j, r);
		for (size_t a = 0; a < N_ANALYSES; a++) {
			const struct dm_analysis *an = dm_analyses[a];
			if (!an->rank)
				continue;
			void *state = calloc(1, an->size);
			if (!state)
				abort();
			refused[a] |= an->rank(&c, state) != 0;
			cJSON_AddItemToObject(x, an->key, an->json(j, state));
			if (pool)
				an->pool(all[a], state);
			if (an->release)
				an->release(state);
			free(state);
		}
		dm_actx_release(&c);
		char key[32];
		snprintf(key, sizeof(key), "%lld", r->rank);
		cJSON_AddItemToObject(ranks, key, x);
	}
	/* the job's figures */
	for (size_t a = 0; a < N_ANALYSES; a++) {
		const struct dm_analysis *an = dm_analyses[a];
		cJSON *v;
		if (an->job)
			v = an->job(j);
		else if (x && (!pool || refused[a]))
			v = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(x, an->key), 1);
		else
			v = an->json(j, all[a]);
		cJSON_AddItemToObject(root, an->key, v);
		if (all[a] && an->release)
			an->release(all[a]);
		free(all[a]);
	}
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
