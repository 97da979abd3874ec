/* device_queue.c — HTA's queue length per stream (TraceCounters): +1 at each
 * launch, -1 at each kernel start, summarised. See device_metrics.h. */
#include "grader/analysis/device_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* queue length per stream (HTA's TraceCounters) */
struct qsample {
	int64_t stream;
	double *v;
	size_t n, cap;
};

struct queue {
	struct qsample *s;
	size_t n;
	int refused; /* correlation ids repeat too often */
};

struct qtick {
	double ts;
	int32_t stream;
	int delta;
};

static struct qsample *queue_find(struct queue *q, int64_t stream)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->s[i].stream == stream)
			return &q->s[i];
	q->s = dm_xalloc(q->s, (q->n + 1) * sizeof(*q->s));
	memset(&q->s[q->n], 0, sizeof(q->s[q->n]));
	q->s[q->n].stream = stream;
	return &q->s[q->n++];
}

static void qsample_add(struct qsample *s, double v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = dm_xalloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = v;
}

/* a launch call HTA counts: a queue-set name with index_correlation > 0 */
static int queue_launch(const struct fl_dm_job *j, const struct dm_rank *r, const struct dm_ev *e)
{
	return (j->nm.nf[e->name] & NF_QUEUE) && e->link >= 0 && r->ev[e->link].index > 0;
}

static int queue_of(const struct fl_dm_job *j, const struct dm_rank *r, struct queue *q)
{
	unsigned char *launched = dm_xalloc(NULL, r->ngroups ? r->ngroups : 1);
	memset(launched, 0, r->ngroups ? r->ngroups : 1);
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (queue_launch(j, r, e))
			launched[e->grp] = 1;
	}
	/* +1 per (launch, device row of its correlation) in view order, then -1
	 * per device row: HTA's concat order, which breaks ties of ts here */
	struct qtick *t = NULL;
	size_t n = 0, cap = 0, want = 0;
	for (size_t i = 0; i < r->nview; i++) { /* count first: repeated correlations multiply */
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (!queue_launch(j, r, e))
			continue;
		for (uint32_t g = r->gbeg[e->grp]; g < r->gbeg[e->grp + 1]; g++)
			want += r->ev[r->gpos[g]].mult;
	}
	if (want > ROWS_PER_EVENT * r->n + 1000000) {
		free(launched);
		return -1;
	}
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (!queue_launch(j, r, e))
			continue;
		for (uint32_t g = r->gbeg[e->grp]; g < r->gbeg[e->grp + 1]; g++) {
			const struct dm_ev *k = &r->ev[r->gpos[g]];
			for (uint16_t m = 0; k->stream != -1 && m < k->mult; m++) {
				GROW(t, n, cap);
				t[n++] = (struct qtick){e->ts, k->stream, 1};
			}
		}
	}
	for (size_t i = 0; i < r->nview; i++) {
		const struct dm_ev *e = &r->ev[r->view[i]];
		if (e->stream == -1 || e->grp < 0 || !launched[e->grp])
			continue;
		GROW(t, n, cap);
		t[n++] = (struct qtick){e->ts, e->stream, -1};
	}
	free(launched);
	struct kv *a = dm_xalloc(NULL, (n ? n : 1) * sizeof(*a));
	if (n)
		dm_time_keys(a, n, &t[0].ts, sizeof(*t));
	dm_radix_kv(a, n);
	for (size_t i = 0; i < n; i++)
		a[i].k = dm_ikey(t[a[i].i].stream);
	dm_radix_kv(a, n);
	long run = 0;
	for (size_t i = 0; i < n; i++) {
		const struct qtick *x = &t[a[i].i];
		if (i == 0 || x->stream != t[a[i - 1].i].stream)
			run = 0;
		run += x->delta;
		qsample_add(queue_find(q, x->stream), (double)run);
	}
	free(a);
	free(t);
	return 0;
}

static int cmp_qsample(const void *a, const void *b)
{
	int64_t x = ((const struct qsample *)a)->stream, y = ((const struct qsample *)b)->stream;
	return x < y ? -1 : x > y;
}

static void queue_release(void *state)
{
	struct queue *q = state;
	for (size_t i = 0; i < q->n; i++)
		free(q->s[i].v);
	free(q->s);
	memset(q, 0, sizeof(*q));
}

static cJSON *queue_json(const struct fl_dm_job *j, void *state)
{
	struct queue *q = state;
	(void)j;
	cJSON *o = cJSON_CreateObject();
	if (q->refused) {
		cJSON_AddStringToObject(o, "why", "correlation ids repeat too often");
		return o;
	}
	dm_sort_n(q->s, q->n, sizeof(*q->s), cmp_qsample);
	for (size_t i = 0; i < q->n; i++) {
		struct qsample *s = &q->s[i];
		char key[32];
		snprintf(key, sizeof(key), "%lld", (long long)s->stream);
		cJSON *x = cJSON_CreateObject();
		double *c = dm_xalloc(NULL, (s->n ? s->n : 1) * sizeof(*c));
		dm_copy_n(c, s->v, s->n * sizeof(*c));
		dm_sort_doubles(c, s->n);
		cJSON_AddNumberToObject(x, "count", (double)s->n);
		add_num(x, "mean", fl_mean(c, s->n));
		add_num(x, "std", dm_std_of(c, s->n));
		add_num(x, "min", s->n ? c[0] : NAN);
		add_num(x, "p25", fl_quantile_sorted(c, s->n, 0.25));
		add_num(x, "p50", fl_quantile_sorted(c, s->n, 0.5));
		add_num(x, "p75", fl_quantile_sorted(c, s->n, 0.75));
		add_num(x, "max", s->n ? c[s->n - 1] : NAN);
		free(c);
		cJSON_AddItemToObject(o, key, x);
	}
	return o;
}


static int queue_rank(const struct actx *c, void *state)
{
	struct queue *q = state;
	q->refused = queue_of(c->j, c->r, q) != 0;
	return q->refused ? -1 : 0;
}

/* the job's: per stream, the samples of every rank */
static void queue_pool(void *job_state, const void *rank_state)
{
	const struct queue *q = rank_state;
	for (size_t s = 0; s < q->n; s++) {
		struct qsample *a = queue_find(job_state, q->s[s].stream);
		for (size_t i = 0; i < q->s[s].n; i++)
			qsample_add(a, q->s[s].v[i]);
	}
}

static void queue_save(const void *state, struct strbuf *out)
{
	const struct queue *q = state;
	dm_put_u64(out, (uint64_t)q->refused);
	dm_put_u64(out, q->n);
	for (size_t i = 0; i < q->n; i++) {
		dm_put_u64(out, (uint64_t)q->s[i].stream);
		dm_put_u64(out, q->s[i].n);
		dm_put(out, q->s[i].v, q->s[i].n * sizeof(*q->s[i].v));
	}
}

static int queue_load(struct dm_rd *in, const uint32_t *map, uint32_t nmap, void *state)
{
	struct queue *q = state;
	(void)map;
	(void)nmap;
	q->refused = dm_get_u64(in) != 0;
	size_t n = dm_get_u64(in);
	if (in->bad || n > (size_t)(in->end - in->p) / 16)
		return -1;
	q->s = dm_xalloc(NULL, (n ? n : 1) * sizeof(*q->s));
	memset(q->s, 0, (n ? n : 1) * sizeof(*q->s));
	q->n = n;
	for (size_t i = 0; i < n; i++) {
		q->s[i].stream = (int64_t)dm_get_u64(in);
		q->s[i].n = q->s[i].cap = dm_get_u64(in);
		if (dm_get_array(in, (void **)&q->s[i].v, q->s[i].n, sizeof(*q->s[i].v)))
			return -1;
	}
	return 0;
}

const struct dm_analysis dm_queue = {
	.key = "queue",
	.size = sizeof(struct queue),
	.rank = queue_rank,
	.pool = queue_pool,
	.json = queue_json,
	.release = queue_release,
	.save = queue_save,
	.load = queue_load,
};
