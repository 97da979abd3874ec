/* device_idle.c — HTA's idle time breakdown per stream (host wait, kernel
 * wait, other). See device_metrics.h for the definitions. */
#include "grader/analysis/device_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* idle time per stream (HTA's get_idle_time_breakdown) */
struct idle_stream {
	int64_t stream;
	double t[3]; /* host wait, kernel wait, other */
	int present[3];
	long gaps;
};

struct idle {
	struct idle_stream *s;
	size_t n;
};

struct krow {
	double ts, end, rt; /* rt: the launch's ts, NaN when there is none */
	int32_t stream;
};

static struct idle_stream *idle_find(struct idle *d, int64_t stream)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->s[i].stream == stream)
			return &d->s[i];
	d->s = dm_xalloc(d->s, (d->n + 1) * sizeof(*d->s));
	memset(&d->s[d->n], 0, sizeof(d->s[d->n]));
	d->s[d->n].stream = stream;
	return &d->s[d->n++];
}

static int cmp_idle_stream(const void *a, const void *b)
{
	int64_t x = ((const struct idle_stream *)a)->stream, y = ((const struct idle_stream *)b)->stream;
	return x < y ? -1 : x > y;
}

static void idle_of(const struct actx *c, struct idle *d)
{
	const struct dm_rank *r = c->r;
	struct krow *k = dm_xalloc(NULL, (c->ndev ? c->ndev : 1) * sizeof(*k));
	size_t n = 0;
	for (size_t i = 0; i < c->ndev; i++) { /* in ts order */
		const struct dm_ev *e = dev_ev(c, i);
		if (!(e->flags & EF_KCAT))
			continue;
		/* the launch: the row whose traceEvents index is index_correlation
		 * (HTA joins on it; without a link a correlated event points at 0) */
		double rt = NAN;
		int32_t target = e->link >= 0 ? e->link : e->corr >= 0 ? r->ev0 : -1;
		if (target >= 0 && r->ev[target].mult)
			rt = r->ev[target].ts;
		k[n++] = (struct krow){e->ts, e->ts + e->dur, rt, e->stream};
	}
	struct kv *a = dm_xalloc(NULL, (n ? n : 1) * sizeof(*a));
	for (size_t i = 0; i < n; i++)
		a[i] = (struct kv){dm_ikey(k[i].stream), (uint32_t)i};
	dm_radix_kv(a, n); /* by stream, then ts, then view order */
	dm_apply_perm(k, sizeof(*k), a, n);
	free(a);
	for (size_t i = 0; i < n; i++) {
		struct idle_stream *s = idle_find(d, k[i].stream);
		if (i == 0 || k[i - 1].stream != k[i].stream) {
			s->present[2] = 1; /* the first kernel: category other, no gap */
			continue;
		}
		double prev_end = k[i - 1].end, gap = k[i].ts - prev_end;
		int cat = k[i].rt > prev_end ? 0 : gap < c->j->o.kernel_wait_us ? 1 : 2;
		s->t[cat] += gap;
		s->present[cat] = 1;
		s->gaps++;
	}
	free(k);
	dm_sort_n(d->s, d->n, sizeof(*d->s), cmp_idle_stream);
}


static int idle_rank(const struct actx *c, void *state)
{
	idle_of(c, state);
	return 0;
}

/* the job's: per stream, the sums over the ranks */
static void idle_pool(void *job_state, const void *rank_state)
{
	struct idle *all = job_state;
	const struct idle *id = rank_state;
	for (size_t s = 0; s < id->n; s++) {
		struct idle_stream *a = idle_find(all, id->s[s].stream);
		for (int k = 0; k < 3; k++) {
			a->t[k] += id->s[s].t[k];
			a->present[k] |= id->s[s].present[k];
		}
		a->gaps += id->s[s].gaps;
	}
}

static cJSON *idle_json(const struct fl_dm_job *j, void *state)
{
	struct idle *d = state;
	(void)j;
	dm_sort_n(d->s, d->n, sizeof(*d->s), cmp_idle_stream);
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < d->n; i++) {
		const struct idle_stream *s = &d->s[i];
		char key[32];
		snprintf(key, sizeof(key), "%lld", (long long)s->stream);
		cJSON *x = cJSON_CreateObject();
		double total = s->t[0] + s->t[1] + s->t[2];
		add_num(x, "host_wait_us", s->t[0]);
		add_num(x, "kernel_wait_us", s->t[1]);
		add_num(x, "other_us", s->t[2]);
		add_num(x, "total_us", total);
		add_num(x, "host_wait_pct", pct(s->t[0], total));
		add_num(x, "kernel_wait_pct", pct(s->t[1], total));
		add_num(x, "other_pct", pct(s->t[2], total));
		cJSON_AddNumberToObject(x, "gaps", (double)s->gaps);
		cJSON_AddItemToObject(o, key, x);
	}
	return o;
}

static void idle_release(void *state)
{
	struct idle *d = state;
	free(d->s);
}

static void idle_save(const void *state, struct strbuf *out)
{
	const struct idle *d = state;
	dm_put_u64(out, d->n);
	dm_put(out, d->s, d->n * sizeof(*d->s));
}

static int idle_load(struct dm_rd *in, const uint32_t *map, uint32_t nmap, void *state)
{
	struct idle *d = state;
	(void)map;
	(void)nmap;
	d->n = dm_get_u64(in);
	return dm_get_array(in, (void **)&d->s, d->n, sizeof(*d->s));
}

const struct dm_analysis dm_idle = {
	.key = "idle",
	.size = sizeof(struct idle),
	.rank = idle_rank,
	.pool = idle_pool,
	.json = idle_json,
	.release = idle_release,
	.save = idle_save,
	.load = idle_load,
};
