/* device_diff.c — HTA's trace diff of two jobs: op and kernel counts and
 * total durations per name, test − control. See device_metrics.h. */
#include "grader/analysis/device_internal.h"

#include <stdlib.h>
#include <string.h>

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
	double *cnt = dm_xalloc(NULL, (nid ? nid : 1) * sizeof(double)), *us = dm_xalloc(NULL, (nid ? nid : 1) * sizeof(double));
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
		if (iter != FL_DIFF_ALL && dm_iter_of_ts(r, h->ts) != iter)
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
	dm_sort_n(a, na, sizeof(*a), cmp_op_sum);
	dm_sort_n(b, nb, sizeof(*b), cmp_op_sum);
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
