/* device_kernels.c — HTA's kernel breakdown: time per kernel type and type
 * combination ("A overlapping B"), and per kernel name with HTA's top-N +
 * "others" rule. See device_metrics.h for the definitions. */
#include "grader/analysis/device_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kt_name[] = {"COMMUNICATION", "MEMORY", "COMPUTATION", "OTHER"};
static const int byname_kts[3] = {KT_COMP, KT_COMM, KT_MEM}; /* by_name's types, in order */

/* Time per kernel-type combination (HTA's _get_gpu_kernel_type_time), by the
 * low three bits of the running sum: 1 COMPUTATION, 2 COMMUNICATION, 4 MEMORY. */
static void kernel_type_time(const struct actx *c, double by_mask[8])
{
	static const int kts[3] = {KT_COMP, KT_COMM, KT_MEM}, val[3] = {1, 2, 4};
	struct ivl *v[3];
	size_t n[3];
	for (int t = 0; t < 3; t++)
		n[t] = dm_merged(c, kts[t], &v[t]);
	struct tick *tk;
	size_t k = dm_ticks_of(&tk, 3, v, n, val);
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
	row->std = n > 1 ? dm_std_of(v, n) : 0;
}

/* Aggregate (name, dur) rows; returns rows sorted by total, descending. */
static size_t aggr_by_name(const struct fl_dm_job *j, struct name_dur *nd, size_t n, struct name_row **out)
{
	struct kv *a = dm_xalloc(NULL, (n ? n : 1) * sizeof(*a));
	for (size_t i = 0; i < n; i++)
		a[i] = (struct kv){nd[i].name, (uint32_t)i};
	dm_radix_kv(a, n);
	struct name_row *rows = dm_xalloc(NULL, (n ? n : 1) * sizeof(*rows));
	double *tmp = dm_xalloc(NULL, (n ? n : 1) * sizeof(*tmp));
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
	dm_sort_n(rows, nr, sizeof(*rows), cmp_row_sum_desc);
	size_t top = j->o.top_kernels;
	if (nr > top) {
		double *cum = dm_xalloc(NULL, nr * sizeof(*cum)), *sorted = dm_xalloc(NULL, nr * sizeof(*sorted));
		double c = 0;
		for (size_t i = 0; i < nr; i++)
			cum[i] = sorted[i] = c += rows[i].sum;
		dm_sort_doubles(sorted, nr);
		double q = fl_quantile_sorted(sorted, nr, j->o.duration_ratio);
		size_t keep = 0, no = 0;
		for (size_t i = 0; i < nr; i++) {
			/* HTA's keep_idx is `sum < 0` ("always false"): a name whose rounded
			 * total is negative (sub-µs kernels) is never grouped into others */
			if ((cum[i] > q || i >= top) && !(rows[i].sum < 0))
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
		dm_sort_n(rows, nr, sizeof(*rows), cmp_row_sum_desc);
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

/* ------------------------------------------------------------- analysis */

struct kernels {
	double by_mask[8];         /* kernel_type_time */
	struct name_dur *rows[3];  /* per byname_kts[] */
	size_t n[3], cap[3];
};

static int kernels_rank(const struct actx *c, void *state)
{
	struct kernels *k = state;
	kernel_type_time(c, k->by_mask);
	for (int t = 0; t < 3; t++)
		kernel_rows(c, byname_kts[t], &k->rows[t], &k->n[t], &k->cap[t]);
	return 0;
}

/* the job's: type times summed; names aggregated over every rank's rows */
static void kernels_pool(void *job_state, const void *rank_state)
{
	struct kernels *all = job_state;
	const struct kernels *k = rank_state;
	for (int b = 0; b < 8; b++)
		all->by_mask[b] += k->by_mask[b];
	for (int t = 0; t < 3; t++) {
		if (!k->n[t])
			continue;
		if (all->n[t] + k->n[t] > all->cap[t]) {
			all->cap[t] = all->n[t] + k->n[t];
			all->rows[t] = dm_xalloc(all->rows[t], all->cap[t] * sizeof(*all->rows[t]));
		}
		memcpy(all->rows[t] + all->n[t], k->rows[t], k->n[t] * sizeof(*k->rows[t]));
		all->n[t] += k->n[t];
	}
}

static cJSON *kernels_json(const struct fl_dm_job *j, void *state)
{
	struct kernels *k = state;
	cJSON *kern = cJSON_CreateObject(), *byn = cJSON_CreateObject();
	cJSON_AddItemToObject(kern, "types", types_json(k->by_mask));
	for (int t = 0; t < 3; t++)
		if (k->n[t])
			cJSON_AddItemToObject(byn, kt_name[byname_kts[t]], by_name_json(j, k->rows[t], k->n[t]));
	cJSON_AddItemToObject(kern, "by_name", byn);
	return kern;
}

static void kernels_release(void *state)
{
	struct kernels *k = state;
	for (int t = 0; t < 3; t++)
		free(k->rows[t]);
}

static void kernels_save(const void *state, struct strbuf *out)
{
	const struct kernels *k = state;
	dm_put(out, k->by_mask, sizeof(k->by_mask));
	for (int t = 0; t < 3; t++) {
		dm_put_u64(out, k->n[t]);
		dm_put(out, k->rows[t], k->n[t] * sizeof(*k->rows[t]));
	}
}

static int kernels_load(struct dm_rd *in, const uint32_t *map, uint32_t nmap, void *state)
{
	struct kernels *k = state;
	dm_get(in, k->by_mask, sizeof(k->by_mask));
	for (int t = 0; t < 3; t++) {
		k->n[t] = k->cap[t] = dm_get_u64(in);
		if (dm_get_array(in, (void **)&k->rows[t], k->n[t], sizeof(*k->rows[t])))
			return -1;
		for (size_t i = 0; i < k->n[t]; i++)
			if (dm_map_id(map, nmap, &k->rows[t][i].name))
				return -1;
	}
	return 0;
}

const struct dm_analysis dm_kernels = {
	.key = "kernels",
	.size = sizeof(struct kernels),
	.rank = kernels_rank,
	.pool = kernels_pool,
	.json = kernels_json,
	.release = kernels_release,
	.save = kernels_save,
	.load = kernels_load,
};
