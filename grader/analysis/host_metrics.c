#include "grader/analysis/host_metrics.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/categories.h"
#include "common/stats.h"

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		abort();
	return p;
}

static int is_step(const struct fl_xevent *e)
{
	return e->kind == FL_CAT_USER_ANNOTATION && strncmp(e->name, FL_STEP_PREFIX, FL_STEP_PREFIX_LEN) == 0;
}

/* A span marks a region; everything else on a row (cpu_op, kernel, copy, runtime
 * call, unknown categories) is activity. */
static int is_span(const struct fl_xevent *e)
{
	return e->kind == FL_CAT_USER_ANNOTATION || e->kind == FL_CAT_GPU_USER_ANNOTATION;
}

/* Names by string (an open-addressing index over the array, which keeps the
 * order of first appearance): a lookup per event, not a scan of all names. */
struct name_index {
	uint32_t *slot; /* index + 1, 0 empty */
	size_t nslot;   /* a power of two */
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ^ (h >> 29);
}

static void index_put(struct name_index *x, const struct fl_name_stat *arr, size_t i)
{
	size_t j = (size_t)name_hash(arr[i].name) & (x->nslot - 1);
	while (x->slot[j])
		j = (j + 1) & (x->nslot - 1);
	x->slot[j] = (uint32_t)i + 1;
}

static struct fl_name_stat *find_or_add(struct fl_name_stat **arr, size_t *n, struct name_index *x, const char *name,
					size_t n_steps)
{
	if (x->nslot) {
		size_t j = (size_t)name_hash(name) & (x->nslot - 1);
		for (; x->slot[j]; j = (j + 1) & (x->nslot - 1))
			if (strcmp((*arr)[x->slot[j] - 1].name, name) == 0)
				return &(*arr)[x->slot[j] - 1];
	}
	if (2 * (*n + 1) > x->nslot) {
		free(x->slot);
		x->nslot = x->nslot ? 2 * x->nslot : 64;
		x->slot = xcalloc(x->nslot, sizeof(*x->slot));
		for (size_t i = 0; i < *n; i++)
			index_put(x, *arr, i);
	}
	struct fl_name_stat *a = realloc(*arr, (*n + 1) * sizeof(**arr));
	if (!a)
		abort();
	*arr = a;
	struct fl_name_stat *s = &a[*n];
	memset(s, 0, sizeof(*s));
	s->name = name;
	index_put(x, a, (*n)++);
	s->per_step_ms = xcalloc(n_steps, sizeof(double));
	return s;
}

/* ---- gaps ---- */

struct gap_scan {
	struct fl_host_metrics *m;
	size_t top;                   /* capacity of m->gaps */
	const struct fl_xevent **step_ev; /* step k's event (ascending addresses: the events' order) */
	double *end_max;              /* max over steps 0..k of their end (µs) */
};

static long step_index(const struct gap_scan *g, const struct fl_xevent *e)
{
	size_t lo = 0, hi = g->m->n_steps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->step_ev[mid] < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->m->n_steps && g->step_ev[lo] == e ? (long)lo : -1;
}

/* The first step (any process) whose interval holds t: the first k with
 * end_max[k] > t (end_max does not decrease) holds it when it starts by t. */
static long step_at_time(const struct gap_scan *g, double t)
{
	const struct fl_host_metrics *m = g->m;
	size_t lo = 0, hi = m->n_steps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->end_max[mid] > t)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < m->n_steps && t >= m->step_ts[lo] && t < m->step_ts[lo] + m->step_ms[lo] * 1000.0 ? (long)lo : -1;
}

static void add_gap(struct gap_scan *g, double a, double b, const struct fl_xevent *holder, long step,
		    const char *before, const char *after, long long pid, long long tid)
{
	if (!(b > a) || (holder && !is_span(holder)))
		return;
	struct fl_host_metrics *m = g->m;
	double ms = (b - a) / 1000.0;
	m->gap_count++;
	m->gap_total_ms += ms;
	if (ms > m->gap_max_ms)
		m->gap_max_ms = ms;
	if (step >= 0) {
		m->gap_in_steps_ms += ms;
		m->gap_per_step_ms[step] += ms;
	}
	if (!g->top)
		return;
	if (m->n_gaps == g->top && ms <= m->gaps[m->n_gaps - 1].ms)
		return;
	/* a row without steps (a device row): name the step by time, for the report only */
	if (step < 0)
		step = step_at_time(g, (a + b) / 2);
	size_t k = m->n_gaps < g->top ? m->n_gaps++ : m->n_gaps - 1;
	while (k > 0 && m->gaps[k - 1].ms < ms) {
		m->gaps[k] = m->gaps[k - 1];
		k--;
	}
	m->gaps[k] = (struct fl_gap){.ms = ms, .ts = a, .pid = pid, .tid = tid, .step = step,
				      .span = holder ? holder->name : "", .before = before, .after = after};
}

struct row_key {
	long long pid, tid;
	size_t i;
};

static int cmp_row(const void *a, const void *b)
{
	const struct row_key *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Walk each row with a stack of open events; idle time is cut at every
 * boundary and attributed to the innermost open event. */
static void scan_gaps(const struct fl_trace *t, struct gap_scan *g)
{
	size_t n = 0;
	struct row_key *rk = xcalloc(t->n, sizeof(*rk));
	for (size_t i = 0; i < t->n; i++)
		if (t->ev[i].kind != FL_CAT_TRACE)
			rk[n++] = (struct row_key){t->ev[i].pid, t->ev[i].tid, i};
	qsort(rk, n, sizeof(*rk), cmp_row);
	size_t *idx = xcalloc(n, sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		idx[i] = rk[i].i;
	free(rk);
	const struct fl_xevent **stack = xcalloc(n, sizeof(*stack));
	long *stack_step = xcalloc(n, sizeof(long));
	for (size_t a = 0; a < n;) {
		const struct fl_xevent *first = &t->ev[idx[a]];
		size_t b = a;
		while (b < n && t->ev[idx[b]].pid == first->pid && t->ev[idx[b]].tid == first->tid)
			b++;
		size_t sp = 0;
		double cursor = first->ts;
		const char *last = "";
		for (size_t k = a; k <= b; k++) {
			const struct fl_xevent *e = k < b ? &t->ev[idx[k]] : NULL;
			while (sp > 0 && (!e || stack[sp - 1]->ts + stack[sp - 1]->dur <= e->ts)) {
				const struct fl_xevent *top = stack[sp - 1];
				double end = top->ts + top->dur;
				if (end > cursor) {
					add_gap(g, cursor, end, top, stack_step[sp - 1], last, top->name, first->pid,
						first->tid);
					cursor = end;
				}
				last = top->name;
				sp--;
			}
			if (!e)
				break;
			if (e->ts > cursor) {
				add_gap(g, cursor, e->ts, sp ? stack[sp - 1] : NULL, sp ? stack_step[sp - 1] : -1, last,
					e->name, first->pid, first->tid);
				cursor = e->ts;
			}
			last = e->name;
			long st = is_step(e) ? step_index(g, e) : -1;
			if (st < 0 && sp)
				st = stack_step[sp - 1];
			stack[sp] = e;
			stack_step[sp] = st;
			sp++;
		}
		a = b;
	}
	free(stack);
	free(stack_step);
	free(idx);
}

/* ---- the metrics ---- */

/* The steps of each process, for the step of an event: the last step (in time
 * order) of its process whose interval holds its start. */
struct step_lookup {
	size_t *ord;     /* step indices by (pid, index) */
	double *end_max; /* per position of ord: max end of the group so far */
	const long long *pid;
	const struct fl_host_metrics *m;
};

struct pid_step {
	long long pid;
	size_t s;
};

static int cmp_by_pid(const void *a, const void *b)
{
	const struct pid_step *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;
}

static double step_end(const struct fl_host_metrics *m, size_t s) { return m->step_ts[s] + m->step_ms[s] * 1000.0; }

static void lookup_build(struct step_lookup *L, const struct fl_host_metrics *m, const long long *pid)
{
	size_t ns = m->n_steps;
	L->m = m;
	L->pid = pid;
	L->ord = xcalloc(ns, sizeof(size_t));
	L->end_max = xcalloc(ns, sizeof(double));
	struct pid_step *ps = xcalloc(ns, sizeof(*ps));
	for (size_t i = 0; i < ns; i++)
		ps[i] = (struct pid_step){pid[i], i};
	qsort(ps, ns, sizeof(*ps), cmp_by_pid);
	for (size_t i = 0; i < ns; i++)
		L->ord[i] = ps[i].s;
	free(ps);
	for (size_t i = 0; i < ns; i++) {
		double e = step_end(m, L->ord[i]);
		L->end_max[i] = i && pid[L->ord[i - 1]] == pid[L->ord[i]] && L->end_max[i - 1] > e ? L->end_max[i - 1] : e;
	}
}

static long lookup_step(const struct step_lookup *L, long long pid, double ts)
{
	size_t ns = L->m->n_steps, lo = 0, hi = ns;
	while (lo < hi) { /* the first of pid's group */
		size_t mid = lo + (hi - lo) / 2;
		if (L->pid[L->ord[mid]] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t g0 = lo;
	hi = ns;
	while (lo < hi) { /* past the last step of the group starting by ts */
		size_t mid = lo + (hi - lo) / 2;
		if (L->pid[L->ord[mid]] == pid && L->m->step_ts[L->ord[mid]] <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t j = lo; j > g0 && L->end_max[j - 1] > ts; j--)
		if (ts < step_end(L->m, L->ord[j - 1]))
			return (long)L->ord[j - 1];
	return -1;
}

/* The number of a ProfilerStep#N: strtol with its range checked (a number
 * beyond an int is clamped, none reads 0, as atoi did for ordinary names). */
static int step_number(const char *s)
{
	errno = 0;
	long v = strtol(s, NULL, 10);
	if (v > INT_MAX || (errno == ERANGE && v > 0))
		return INT_MAX;
	if (v < INT_MIN || (errno == ERANGE && v < 0))
		return INT_MIN;
	return (int)v;
}

enum fl_status fl_host_metrics_compute(const struct fl_trace *t, struct fl_host_metrics *m)
{
	return fl_host_metrics_compute_opts(t, NULL, m);
}

enum fl_status fl_host_metrics_compute_opts(const struct fl_trace *t, const struct fl_host_metrics_opts *o,
					    struct fl_host_metrics *m)
{
	memset(m, 0, sizeof(*m));
	size_t ns = 0;
	for (size_t i = 0; i < t->n; i++)
		ns += is_step(&t->ev[i]);
	m->n_steps = ns;
	m->step_num = xcalloc(ns, sizeof(int));
	m->step_ms = xcalloc(ns, sizeof(double));
	m->step_ts = xcalloc(ns, sizeof(double));
	m->ops_per_step = xcalloc(ns, sizeof(long));
	m->gap_per_step_ms = xcalloc(ns, sizeof(double));
	long long *step_pid = xcalloc(ns, sizeof(long long));
	const struct fl_xevent **step_ev = xcalloc(ns, sizeof(*step_ev));
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct fl_xevent *e = &t->ev[i];
		if (!is_step(e))
			continue;
		m->step_num[k] = step_number(e->name + FL_STEP_PREFIX_LEN);
		m->step_ms[k] = e->dur / 1000.0;
		m->step_ts[k] = e->ts;
		step_pid[k] = e->pid;
		step_ev[k] = e;
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
	m->mean_ms = ns ? fl_mean(m->step_ms, ns) : 0;
	m->p50_upper_ms = fl_p50_upper(m->step_ms, ns);
	m->median_ms = fl_median(m->step_ms, ns);

	struct step_lookup L;
	lookup_build(&L, m, step_pid);
	struct name_index span_ix = {0}, op_ix = {0};
	for (size_t i = 0; i < t->n; i++) {
		const struct fl_xevent *e = &t->ev[i];
		if (is_step(e) || (e->kind != FL_CAT_USER_ANNOTATION && e->kind != FL_CAT_CPU_OP))
			continue;
		long step = lookup_step(&L, e->pid, e->ts);
		struct fl_name_stat *st;
		if (e->kind == FL_CAT_USER_ANNOTATION) {
			st = find_or_add(&m->spans, &m->n_spans, &span_ix, e->name, ns);
		} else {
			st = find_or_add(&m->ops, &m->n_op_names, &op_ix, e->name, ns);
			m->ops_total++;
			if (step >= 0)
				m->ops_per_step[step]++;
		}
		st->count++;
		st->total_ms += e->dur / 1000.0;
		if (step >= 0)
			st->per_step_ms[step] += e->dur / 1000.0;
	}

	free(span_ix.slot);
	free(op_ix.slot);
	free(L.ord);
	free(L.end_max);

	struct gap_scan g = {.m = m, .top = o && o->top_gaps ? o->top_gaps : FL_GAPS_TOP_DEFAULT, .step_ev = step_ev};
	g.end_max = xcalloc(ns, sizeof(double));
	for (size_t i = 0; i < ns; i++)
		g.end_max[i] = i && g.end_max[i - 1] > step_end(m, i) ? g.end_max[i - 1] : step_end(m, i);
	m->gaps = xcalloc(g.top, sizeof(*m->gaps));
	scan_gaps(t, &g);
	free(g.end_max);

	m->periods = xcalloc(m->n_spans, sizeof(*m->periods));
	for (size_t i = 0; i < m->n_spans; i++) {
		struct fl_span_period *p = &m->periods[m->n_periods];
		if (fl_detect_period(m->spans[i].per_step_ms, m->step_num, ns, m->median_ms, p)) {
			p->name = m->spans[i].name;
			m->n_periods++;
		}
	}
	free(step_pid);
	free(step_ev);
	return FL_OK;
}

static cJSON *num_array(const double *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
	return a;
}

static cJSON *gaps_json(const struct fl_host_metrics *m)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "definition", "time on a row with no op running (innermost open event is a span or none)");
	cJSON_AddNumberToObject(o, "count", (double)m->gap_count);
	cJSON_AddNumberToObject(o, "total_ms", m->gap_total_ms);
	cJSON_AddNumberToObject(o, "in_steps_ms", m->gap_in_steps_ms);
	cJSON_AddNumberToObject(o, "share_of_step_time", m->total_ms > 0 ? m->gap_in_steps_ms / m->total_ms : 0);
	cJSON_AddNumberToObject(o, "max_ms", m->gap_max_ms);
	cJSON_AddItemToObject(o, "per_step_ms", num_array(m->gap_per_step_ms, m->n_steps));
	cJSON *top = cJSON_AddArrayToObject(o, "largest");
	for (size_t i = 0; i < m->n_gaps; i++) {
		const struct fl_gap *g = &m->gaps[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "ms", g->ms);
		if (g->step >= 0)
			cJSON_AddNumberToObject(j, "step", m->step_num[g->step]);
		else
			cJSON_AddNullToObject(j, "step");
		cJSON_AddStringToObject(j, "span", g->span);
		cJSON_AddNumberToObject(j, "offset_ms", m->n_steps ? (g->ts - m->step_ts[0]) / 1000.0 : 0);
		cJSON_AddNumberToObject(j, "pid", (double)g->pid);
		cJSON_AddNumberToObject(j, "tid", (double)g->tid);
		cJSON_AddStringToObject(j, "before", g->before);
		cJSON_AddStringToObject(j, "after", g->after);
		cJSON_AddItemToArray(top, j);
	}
	return o;
}

static cJSON *periods_json(const struct fl_host_metrics *m)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < m->n_periods; i++) {
		const struct fl_span_period *p = &m->periods[i];
		cJSON *j = cJSON_AddObjectToObject(o, p->name);
		cJSON *ls = cJSON_AddArrayToObject(j, "long_steps");
		for (size_t k = 0; k < p->n_long; k++)
			cJSON_AddItemToArray(ls, cJSON_CreateNumber(p->long_steps[k]));
		if (p->period) {
			cJSON_AddNumberToObject(j, "period", p->period);
			cJSON_AddNumberToObject(j, "phase", p->phase);
			cJSON_AddNumberToObject(j, "confidence", p->confidence);
		} else {
			cJSON_AddNullToObject(j, "period");
			cJSON_AddNullToObject(j, "phase");
			cJSON_AddNullToObject(j, "confidence");
		}
		cJSON *off = cJSON_AddArrayToObject(j, "off_pattern_steps");
		for (size_t k = 0; k < p->n_off; k++)
			cJSON_AddItemToArray(off, cJSON_CreateNumber(p->off_steps[k]));
		cJSON_AddNumberToObject(j, "threshold_ms", p->threshold_ms);
		cJSON_AddNumberToObject(j, "long_p50_ms", p->long_p50_ms);
		cJSON_AddNumberToObject(j, "short_p50_ms", p->short_p50_ms);
		cJSON_AddNumberToObject(j, "excess_ms", p->excess_ms);
	}
	return o;
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
	double *pd = xcalloc(m->n_steps, sizeof(double));
	for (size_t i = 0; i < m->n_steps; i++) {
		cJSON_AddItemToArray(per, cJSON_CreateNumber((double)m->ops_per_step[i]));
		pd[i] = (double)m->ops_per_step[i];
	}
	cJSON_AddNumberToObject(ops, "per_step_p50", fl_p50_upper(pd, m->n_steps));
	free(pd);
	cJSON *by = cJSON_AddObjectToObject(ops, "by_name");
	for (size_t i = 0; i < m->n_op_names; i++)
		cJSON_AddNumberToObject(by, m->ops[i].name, (double)m->ops[i].count);

	cJSON_AddItemToObject(root, "gaps", gaps_json(m));
	cJSON_AddItemToObject(root, "periods", periods_json(m));
	return root;
}

void fl_host_metrics_release(struct fl_host_metrics *m)
{
	for (size_t i = 0; i < m->n_spans; i++)
		free(m->spans[i].per_step_ms);
	for (size_t i = 0; i < m->n_op_names; i++)
		free(m->ops[i].per_step_ms);
	for (size_t i = 0; i < m->n_periods; i++)
		fl_free_period(&m->periods[i]);
	free(m->spans);
	free(m->ops);
	free(m->step_num);
	free(m->step_ms);
	free(m->step_ts);
	free(m->ops_per_step);
	free(m->gap_per_step_ms);
	free(m->gaps);
	free(m->periods);
	memset(m, 0, sizeof(*m));
}
