#include "grader/host_metrics.h"

#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double *sorted_copy(const double *v, size_t n)
{
	double *s = malloc((n ? n : 1) * sizeof(*s));
	if (!s)
		abort();
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_d);
	return s;
}

double fl_p50_upper(const double *v, size_t n)
{
	if (!n)
		return 0;
	double *s = sorted_copy(v, n);
	double r = s[n / 2];
	free(s);
	return r;
}

double fl_median(const double *v, size_t n)
{
	if (!n)
		return 0;
	double *s = sorted_copy(v, n);
	double r = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return r;
}

static int is_step(const struct fl_xevent *e)
{
	return e->kind == FL_CAT_USER_ANNOTATION && strncmp(e->name, "ProfilerStep#", 13) == 0;
}

static struct fl_name_stat *find_or_add(struct fl_name_stat **arr, size_t *n, const char *name, size_t n_steps)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*arr)[i].name, name) == 0)
			return &(*arr)[i];
	struct fl_name_stat *a = realloc(*arr, (*n + 1) * sizeof(**arr));
	if (!a)
		abort();
	*arr = a;
	struct fl_name_stat *s = &a[(*n)++];
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->per_step_ms = calloc(n_steps ? n_steps : 1, sizeof(double));
	if (!s->per_step_ms)
		abort();
	return s;
}

enum fl_status fl_host_metrics_compute(const struct fl_trace *t, struct fl_host_metrics *m)
{
	memset(m, 0, sizeof(*m));
	size_t ns = 0;
	for (size_t i = 0; i < t->n; i++)
		ns += is_step(&t->ev[i]);
	m->n_steps = ns;
	m->step_num = calloc(ns ? ns : 1, sizeof(int));
	m->step_ms = calloc(ns ? ns : 1, sizeof(double));
	m->step_ts = calloc(ns ? ns : 1, sizeof(double));
	m->ops_per_step = calloc(ns ? ns : 1, sizeof(long));
	long long *step_pid = calloc(ns ? ns : 1, sizeof(long long));
	if (!m->step_num || !m->step_ms || !m->step_ts || !m->ops_per_step || !step_pid)
		abort();
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct fl_xevent *e = &t->ev[i];
		if (!is_step(e))
			continue;
		m->step_num[k] = atoi(e->name + 13);
		m->step_ms[k] = e->dur / 1000.0;
		m->step_ts[k] = e->ts;
		step_pid[k] = e->pid;
		k++;
	}
	double sum = 0;
	m->min_ms = ns ? m->step_ms[0] : 0;
	for (size_t i = 0; i < ns; i++) {
		sum += m->step_ms[i];
		if (m->step_ms[i] < m->min_ms) m->min_ms = m->step_ms[i];
		if (m->step_ms[i] > m->max_ms) m->max_ms = m->step_ms[i];
	}
	m->total_ms = sum;
	m->mean_ms = ns ? sum / (double)ns : 0;
	m->p50_upper_ms = fl_p50_upper(m->step_ms, ns);
	m->median_ms = fl_median(m->step_ms, ns);

	for (size_t i = 0; i < t->n; i++) {
		const struct fl_xevent *e = &t->ev[i];
		if (is_step(e) || (e->kind != FL_CAT_USER_ANNOTATION && e->kind != FL_CAT_CPU_OP))
			continue;
		long step = -1;
		for (size_t s = 0; s < ns; s++)
			if (step_pid[s] == e->pid && e->ts >= m->step_ts[s] &&
			    e->ts < m->step_ts[s] + m->step_ms[s] * 1000.0)
				step = (long)s;
		struct fl_name_stat *st;
		if (e->kind == FL_CAT_USER_ANNOTATION) {
			st = find_or_add(&m->spans, &m->n_spans, e->name, ns);
		} else {
			st = find_or_add(&m->ops, &m->n_op_names, e->name, ns);
			m->ops_total++;
			if (step >= 0)
				m->ops_per_step[step]++;
		}
		st->count++;
		st->total_ms += e->dur / 1000.0;
		if (step >= 0)
			st->per_step_ms[step] += e->dur / 1000.0;
	}
	free(step_pid);
	return FL_OK;
}

static cJSON *num_array(const double *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
	return a;
}

cJSON *fl_host_metrics_json(const struct fl_host_metrics *m)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *steps = cJSON_AddObjectToObject(root, "steps");
	cJSON_AddNumberToObject(steps, "count", (double)m->n_steps);
	cJSON *nums = cJSON_AddArrayToObject(steps, "numbers");
	for (size_t i = 0; i < m->n_steps; i++)
		cJSON_AddItemToArray(nums, cJSON_CreateNumber(m->step_num[i]));
	cJSON_AddItemToObject(steps, "ms", num_array(m->step_ms, m->n_steps));
	cJSON_AddNumberToObject(steps, "p50_ms", m->p50_upper_ms);
	cJSON_AddStringToObject(steps, "p50_convention", "upper median: sorted(steps)[n // 2]");
	cJSON_AddNumberToObject(steps, "median_ms", m->median_ms);
	cJSON_AddNumberToObject(steps, "mean_ms", m->mean_ms);
	cJSON_AddNumberToObject(steps, "min_ms", m->min_ms);
	cJSON_AddNumberToObject(steps, "max_ms", m->max_ms);
	cJSON_AddNumberToObject(steps, "total_ms", m->total_ms);

	cJSON *spans = cJSON_AddObjectToObject(root, "spans");
	for (size_t i = 0; i < m->n_spans; i++) {
		const struct fl_name_stat *s = &m->spans[i];
		cJSON *o = cJSON_AddObjectToObject(spans, s->name);
		cJSON_AddNumberToObject(o, "count", (double)s->count);
		cJSON_AddNumberToObject(o, "total_ms", s->total_ms);
		cJSON_AddNumberToObject(o, "share_of_step_time", m->total_ms > 0 ? s->total_ms / m->total_ms : 0);
		cJSON_AddItemToObject(o, "per_step_ms", num_array(s->per_step_ms, m->n_steps));
		cJSON *in = cJSON_AddArrayToObject(o, "in_steps");
		for (size_t k = 0; k < m->n_steps; k++)
			if (s->per_step_ms[k] > 0)
				cJSON_AddItemToArray(in, cJSON_CreateNumber(m->step_num[k]));
		cJSON_AddNumberToObject(o, "p50_ms", fl_p50_upper(s->per_step_ms, m->n_steps));
	}

	cJSON *ops = cJSON_AddObjectToObject(root, "ops");
	cJSON_AddNumberToObject(ops, "total", (double)m->ops_total);
	cJSON *per = cJSON_AddArrayToObject(ops, "per_step");
	double *pd = calloc(m->n_steps ? m->n_steps : 1, sizeof(double));
	for (size_t i = 0; i < m->n_steps; i++) {
		cJSON_AddItemToArray(per, cJSON_CreateNumber((double)m->ops_per_step[i]));
		pd[i] = (double)m->ops_per_step[i];
	}
	cJSON_AddNumberToObject(ops, "per_step_p50", fl_p50_upper(pd, m->n_steps));
	free(pd);
	cJSON *by = cJSON_AddObjectToObject(ops, "by_name");
	for (size_t i = 0; i < m->n_op_names; i++)
		cJSON_AddNumberToObject(by, m->ops[i].name, (double)m->ops[i].count);
	return root;
}

void fl_host_metrics_release(struct fl_host_metrics *m)
{
	for (size_t i = 0; i < m->n_spans; i++)
		free(m->spans[i].per_step_ms);
	for (size_t i = 0; i < m->n_op_names; i++)
		free(m->ops[i].per_step_ms);
	free(m->spans);
	free(m->ops);
	free(m->step_num);
	free(m->step_ms);
	free(m->step_ts);
	free(m->ops_per_step);
	memset(m, 0, sizeof(*m));
}
