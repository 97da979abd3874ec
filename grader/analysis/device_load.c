/* device_load.c — reading the traces of a job for the device analyses: one
 * file per thread, each with its own strings, merged into the job's; then
 * HTA's preparation of each rank (device_view.c). See device_internal.h. */
#include "grader/analysis/device_internal.h"
#include "grader/trace/trace_events.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reading one file: its own strings (files are read in parallel), merged
 * into the job's afterwards. */
struct load_ctx {
	struct names nm;
	struct dm_rank *r;
	const char *path;
	int keep_host, no_thread, sha256;
	struct fl_trace *host;  /* also collect the host metrics' events here */
	enum fl_status st;
	char msg[1024];
};

static enum fl_status on_event(void *arg, const struct fl_tev *e)
{
	struct load_ctx *c = arg;
	struct dm_rank *r = c->r;
	if (c->host) {
		enum fl_status st = fl_trace_on_event(c->host, e);
		if (st)
			return st;
	}
	if (!(e->has & FL_TEV_DUR) || !(e->has & FL_TEV_CAT))
		return FL_OK; /* HTA: dropna(subset=["dur", "cat"]) */
	uint16_t cf = dm_name_flags(&c->nm, e->cat);
	if (cf & NF_TRACE)
		return FL_OK;
	if (!(e->has & FL_TEV_TS) || !isfinite(e->ts) || !isfinite(e->dur)) {
		r->n_no_ts++;
		return FL_OK;
	}
	uint16_t nf = dm_name_flags(&c->nm, e->name);
	if (nf & NF_HAS_PS)
		c->nm.nf[e->name] |= NF_SEEN_PS;
	if (cf & NF_HAS_PS)
		c->nm.nf[e->cat] |= NF_SEEN_PS;
	int32_t stream = -1;
	if (e->has & FL_TEV_STREAM)
		stream = e->stream > INT32_MAX ? INT32_MAX : e->stream < INT32_MIN + 1 ? INT32_MIN + 1 : (int32_t)e->stream;
	int64_t corr = e->has & FL_TEV_CORRELATION ? e->correlation : -1;
	int gpu = (stream >= 0 && corr >= 0) || (nf & NF_SYNC);
	if (gpu || stream != -1 || corr != -1 || (nf & NF_HAS_PS) || e->index == 0) {
		if (r->n >= INT32_MAX - 1)
			return fl_error(FL_EINPUT, "'%s': more than 2^31 device events", r->path);
		GROW(r->ev, r->n, r->cap);
		struct dm_ev *d = &r->ev[r->n++];
		d->ts = e->ts;
		d->dur = e->dur;
		d->corr = corr;
		d->index = e->index;
		d->name = e->name;
		d->stream = stream;
		d->iter = -1;
		d->link = -1;
		d->grp = -1;
		d->mult = 0;
		d->flags = (uint16_t)((gpu ? EF_GPU : 0) | (cf & NF_KCAT ? EF_KCAT : 0));
		return FL_OK;
	}
	r->n_plain++;
	if (c->keep_host) {
		GROW(r->host, r->nh, r->caph);
		r->host[r->nh++] = (struct dm_host){e->ts, e->dur, e->name};
	}
	return FL_OK;
}

static void names_release(struct names *m)
{
	fl_strtab_free(m->strings);
	free(m->nf);
	free(m->stepnum);
	memset(m, 0, sizeof(*m));
}

static void load_one(struct load_ctx *c)
{
	c->nm.strings = fl_strtab_new();
	struct fl_trace_stream_opts so = {.strings = c->nm.strings, .on_event = on_event, .arg = c,
					  .no_thread = c->no_thread, .sha256 = c->sha256};
	if (c->host)
		fl_trace_begin(c->host, c->path, c->nm.strings);
	c->st = fl_trace_stream_file(c->path, &so, &c->r->info);
	if (!c->st && c->host)
		c->st = fl_trace_end(c->host, &c->r->info);
	if (c->st)
		snprintf(c->msg, sizeof(c->msg), "%s", fl_error_msg()); /* messages are per thread */
}

struct loader {
	pthread_mutex_t mu;
	struct load_ctx *ctx;
	size_t n, next;
};

static void *loader_main(void *arg)
{
	struct loader *l = arg;
	for (;;) {
		pthread_mutex_lock(&l->mu);
		size_t i = l->next++;
		pthread_mutex_unlock(&l->mu);
		if (i >= l->n)
			return NULL;
		load_one(&l->ctx[i]);
	}
}

/* Read the files, several at a time when there are cores for them (as HTA
 * parses ranks in parallel processes). */
static void load_all(struct load_ctx *ctx, size_t n, int no_thread, int jobs)
{
	long cpus = jobs > 0 ? jobs : sysconf(_SC_NPROCESSORS_ONLN);
	size_t nt = (no_thread && jobs <= 0) || cpus < 2 ? 1 : (size_t)cpus < n ? (size_t)cpus : n;
	struct loader l = {.ctx = ctx, .n = n};
	pthread_mutex_init(&l.mu, NULL);
	pthread_t th[64];
	size_t started = 0;
	for (size_t t = 1; t < nt && t < 64; t++)
		if (!pthread_create(&th[started], NULL, loader_main, &l))
			started++;
	loader_main(&l);
	for (size_t t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&l.mu);
}

/* Move a file's strings into the job's: rewrite its name ids. */
static void merge_names(struct fl_dm_job *j, struct load_ctx *c)
{
	struct dm_rank *r = c->r;
	uint32_t n = fl_strtab_count(c->nm.strings);
	uint32_t *map = dm_xalloc(NULL, (n ? n : 1) * sizeof(*map));
	for (uint32_t id = 0; id < n; id++) {
		map[id] = fl_strtab_intern(j->nm.strings, fl_strtab_str(c->nm.strings, id),
					   fl_strtab_len(c->nm.strings, id));
		uint16_t f = dm_name_flags(&j->nm, map[id]);
		if (id < c->nm.nnf && (c->nm.nf[id] & NF_SEEN_PS))
			j->nm.nf[map[id]] = (uint16_t)(f | NF_SEEN_PS);
	}
	for (size_t i = 0; i < r->n; i++)
		r->ev[i].name = map[r->ev[i].name];
	for (size_t i = 0; i < r->nh; i++)
		r->host[i].name = map[r->host[i].name];
	free(map);
}

static void rank_release(struct dm_rank *r)
{
	free(r->path);
	free(r->ev);
	free(r->host);
	free(r->steps);
	free(r->bound);
	free(r->seg);
	free(r->view);
	free(r->gpos);
	free(r->gbeg);
}

const char *fl_dm_sha256(const struct fl_dm_job *job, size_t i)
{
	return job && i < job->nfiles && job->sha[i][0] ? job->sha[i] : NULL;
}

void fl_dm_free(struct fl_dm_job *job)
{
	if (!job)
		return;
	for (size_t i = 0; i < job->nranks; i++)
		rank_release(&job->ranks[i]);
	free(job->ranks);
	free(job->sha);
	free(job->nm.nf);
	free(job->nm.stepnum);
	fl_strtab_free(job->nm.strings);
	free(job);
}

static int cmp_rank(const void *a, const void *b)
{
	const struct dm_rank *p = a, *q = b;
	if (p->rank != q->rank)
		return p->rank < q->rank ? -1 : 1;
	return p->file < q->file ? -1 : p->file > q->file;
}

void dm_sort_ranks(struct fl_dm_job *j) { dm_sort_n(j->ranks, j->nranks, sizeof(*j->ranks), cmp_rank); }

struct fl_dm_job *dm_job_new(const struct fl_dm_opts *o, size_t nfiles)
{
	struct fl_dm_job *j = calloc(1, sizeof(*j));
	if (!j)
		abort();
	struct fl_dm_opts dflt = FL_DM_OPTS_INIT;
	j->o = o ? *o : dflt;
	if (nfiles >= 2)
		j->o.keep_host = 1; /* the straggler rule's iteration spans read every host event */
	j->nm.strings = fl_strtab_new();
	return j;
}

/* Read the files into new ranks of j (file positions file0, file0 + 1, ...);
 * st[i] and msg[i] say how file i went. */
void dm_read_files(struct fl_dm_job *j, const char *const *paths, const size_t *file, size_t n,
		   enum fl_status *st, char (*msg)[1024])
{
	j->ranks = dm_xalloc(j->ranks, (j->nranks + n + 1) * sizeof(*j->ranks));
	memset(j->ranks + j->nranks, 0, (n + 1) * sizeof(*j->ranks));
	j->sha = dm_xalloc(j->sha, (j->nfiles + n + 1) * sizeof(*j->sha));
	memset(j->sha + j->nfiles, 0, (n + 1) * sizeof(*j->sha));
	struct load_ctx *ctx = calloc(n ? n : 1, sizeof(*ctx));
	if (!ctx)
		abort();
	size_t base = j->nranks;
	for (size_t i = 0; i < n; i++) {
		struct dm_rank *r = &j->ranks[base + i];
		r->path = strdup(paths[i]);
		if (!r->path)
			abort();
		r->file = file[i];
		ctx[i] = (struct load_ctx){.r = r, .path = paths[i], .keep_host = j->o.keep_host,
					   .no_thread = j->o.no_thread, .sha256 = j->o.sha256,
					   .host = file[i] == 0 ? j->o.host0 : NULL};
	}
	j->nranks += n;
	load_all(ctx, n, j->o.no_thread, j->o.jobs);
	for (size_t i = 0; i < n; i++) {
		st[i] = ctx[i].st;
		snprintf(msg[i], sizeof(msg[i]), "%s", ctx[i].st ? ctx[i].msg : "");
		struct dm_rank *r = ctx[i].r;
		if (!ctx[i].st) {
			merge_names(j, &ctx[i]);
			if (ctx[i].host) { /* the host events name strings of this file's table: it stays theirs */
				ctx[i].host->own_strings = 1;
				ctx[i].nm.strings = NULL;
			}
			if (r->info.has_sha256)
				memcpy(j->sha[j->nfiles + i], r->info.sha256, sizeof(j->sha[0]));
			r->rank = r->info.has_hta_rank ? r->info.hta_rank : 0;
			j->json_bytes += r->info.bytes_json;
			j->events += r->info.n_events;
		}
		names_release(&ctx[i].nm);
	}
	j->nfiles += n;
	free(ctx);
}

enum fl_status fl_dm_load(const char *const *paths, size_t n, const struct fl_dm_opts *o, struct fl_dm_job **out)
{
	struct fl_dm_job *j = dm_job_new(o, n);
	enum fl_status st = FL_OK;
	enum fl_status *fst = NULL;
	char (*msg)[1024] = NULL;
	size_t *file = NULL;
	*out = NULL;
	if (!n) {
		st = fl_error(FL_EINPUT, "no trace to analyse");
		goto fail;
	}
	fst = dm_xalloc(NULL, n * sizeof(*fst));
	msg = dm_xalloc(NULL, n * sizeof(*msg));
	file = dm_xalloc(NULL, n * sizeof(*file));
	for (size_t i = 0; i < n; i++)
		file[i] = i;
	dm_read_files(j, paths, file, n, fst, msg);
	for (size_t i = 0; i < n; i++)
		if (fst[i]) {
			st = fl_error(fst[i], "%s", msg[i]);
			goto fail;
		}
	dm_sort_ranks(j);
	for (size_t i = 1; i < j->nranks; i++)
		if (j->ranks[i].rank == j->ranks[i - 1].rank) {
			st = dm_same_rank(j->ranks[i - 1].path, j->ranks[i].path, j->ranks[i].rank);
			goto fail;
		}
	for (size_t id = 0; id < j->nm.nnf; id++)
		if (j->nm.nf[id] & NF_SEEN_PS)
			j->step_symbols++;
	double t0 = INFINITY;
	for (size_t i = 0; i < j->nranks; i++) {
		double lo = dm_round_rank(&j->ranks[i]);
		if (lo < t0)
			t0 = lo;
	}
	for (size_t i = 0; i < j->nranks; i++) {
		if (isfinite(t0))
			dm_align_rank(&j->ranks[i], t0);
		if ((st = dm_prepare_rank(j, &j->ranks[i])))
			goto fail;
	}
	free(fst);
	free(msg);
	free(file);
	*out = j;
	return FL_OK;
fail:
	free(fst);
	free(msg);
	free(file);
	fl_dm_free(j);
	return st;
}

enum fl_status dm_same_rank(const char *a, const char *b, long long rank)
{
	return fl_error(FL_EINPUT, "'%s' and '%s' are both rank %lld (a job has one trace per rank)", a, b, rank);
}
