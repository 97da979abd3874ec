/* device_launch.c — HTA's kernel launch statistics: launch (cpu) and kernel
 * (gpu) durations, launch delay, short kernels and outliers. See
 * device_metrics.h for the definitions. */
#include "grader/analysis/device_internal.h"

#include <math.h>
#include <stdlib.h>

/* launch statistics (HTA's cuda_kernel_launch_stats) */
struct launch {
	double *cpu, *gpu, *delay;
	size_t n, cap;
	int refused; /* correlation ids repeat too often */
};

static void launch_add(struct launch *l, double c, double g, double d)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->cpu = dm_xalloc(l->cpu, l->cap * sizeof(double));
		l->gpu = dm_xalloc(l->gpu, l->cap * sizeof(double));
		l->delay = dm_xalloc(l->delay, l->cap * sizeof(double));
	}
	l->cpu[l->n] = c;
	l->gpu[l->n] = g;
	l->delay[l->n] = d;
	l->n++;
}

static void launch_release(void *state)
{
	struct launch *l = state;
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
		double *c = dm_xalloc(NULL, (n ? n : 1) * sizeof(*c));
		dm_copy_n(c, v, n * sizeof(*c));
		dm_sort_doubles(c, n);
		add_num(o, "p50", fl_quantile_sorted(c, n, 0.5));
		add_num(o, "p95", fl_quantile_sorted(c, n, 0.95));
		free(c);
	}
	add_num(o, "max", n ? mx : NAN);
	return o;
}

static cJSON *launch_json(const struct fl_dm_job *j, void *state)
{
	const struct launch *l = state;
	cJSON *o = cJSON_CreateObject();
	if (l->refused) {
		cJSON_AddNullToObject(o, "pairs");
		cJSON_AddStringToObject(o, "why", "correlation ids repeat too often");
		return o;
	}
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


static int launch_rank(const struct actx *c, void *state)
{
	struct launch *l = state;
	l->refused = launch_of(c->j, c->r, l) != 0;
	return l->refused ? -1 : 0;
}

/* the job's: statistics of every rank's pairs */
static void launch_pool(void *job_state, const void *rank_state)
{
	const struct launch *l = rank_state;
	for (size_t i = 0; i < l->n; i++)
		launch_add(job_state, l->cpu[i], l->gpu[i], l->delay[i]);
}

static void launch_save(const void *state, struct strbuf *out)
{
	const struct launch *l = state;
	dm_put_u64(out, (uint64_t)l->refused);
	dm_put_u64(out, l->n);
	dm_put(out, l->cpu, l->n * sizeof(double));
	dm_put(out, l->gpu, l->n * sizeof(double));
	dm_put(out, l->delay, l->n * sizeof(double));
}

static int launch_load(struct dm_rd *in, const uint32_t *map, uint32_t nmap, void *state)
{
	struct launch *l = state;
	(void)map;
	(void)nmap;
	l->refused = dm_get_u64(in) != 0;
	l->n = l->cap = dm_get_u64(in);
	if (dm_get_array(in, (void **)&l->cpu, l->n, sizeof(double)) ||
	    dm_get_array(in, (void **)&l->gpu, l->n, sizeof(double)) ||
	    dm_get_array(in, (void **)&l->delay, l->n, sizeof(double)))
		return -1;
	return 0;
}

const struct dm_analysis dm_launch = {
	.key = "launch",
	.size = sizeof(struct launch),
	.rank = launch_rank,
	.pool = launch_pool,
	.json = launch_json,
	.release = launch_release,
	.save = launch_save,
	.load = launch_load,
};
