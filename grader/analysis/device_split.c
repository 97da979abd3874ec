/* device_split.c — the device analyses of one job split between processes
 * (fl_device_metrics_split): file i is read by process i % size, which
 * prepares its ranks and runs rank() of every analysis on them; process 0
 * pools the ranks' states in rank order and writes the document, the same
 * bytes as one process writes. Only the states travel (device_wire.c), never
 * the events: a process holds the events of its own files.
 *
 * Two exchanges, as one process orders its work:
 *   1. every process to every process: per file read, its status (and
 *      message), rank and earliest time; the strings that name a step. Every
 *      process then knows the first unreadable file, two files of one rank,
 *      the job's time 0 and its number of step names (the last-step filter).
 *   2. every process to process 0: its strings, and per rank its status (a
 *      rank refused by the preparation) or its states.
 * and a last one from process 0 with the outcome, so that every process
 * ends with the same status. */
#include "grader/analysis/device_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct file_note { /* exchange 1, per file */
	size_t file;
	enum fl_status st;
	const char *msg;
	size_t msg_len;
	long long rank;
	double lo;
};

static int cmp_note(const void *a, const void *b)
{
	const struct file_note *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->file < y->file ? -1 : x->file > y->file;
}

/* Exchange 1: what every process must know of every file. */
static enum fl_status exchange_files(struct fl_dm_job *j, const char *const *paths, const enum fl_status *fst,
				     char (*msg)[1024], const struct fl_dm_comm *comm, size_t *step_symbols,
				     double *t0)
{
	struct strbuf out = STRBUF_INIT;
	dm_put_u64(&out, j->nranks);
	for (size_t i = 0; i < j->nranks; i++) {
		struct dm_rank *r = &j->ranks[i];
		dm_put_u64(&out, r->file);
		dm_put_u64(&out, (uint64_t)fst[i]);
		dm_put_str(&out, msg[i], strlen(msg[i]));
		double lo = fst[i] ? INFINITY : dm_round_rank(r);
		dm_put(&out, &r->rank, sizeof(r->rank));
		dm_put(&out, &lo, sizeof(lo));
	}
	size_t nseen = 0;
	for (size_t id = 0; id < j->nm.nnf; id++)
		nseen += (j->nm.nf[id] & NF_SEEN_PS) != 0;
	dm_put_u64(&out, nseen);
	for (uint32_t id = 0; id < j->nm.nnf; id++)
		if (j->nm.nf[id] & NF_SEEN_PS)
			dm_put_str(&out, str(j, id), fl_strtab_len(j->nm.strings, id));
	char *all = NULL;
	size_t *lens = dm_xalloc(NULL, (size_t)comm->size * sizeof(*lens));
	enum fl_status st = comm->allgather(comm->arg, out.buf, out.len, &all, lens);
	strbuf_release(&out);
	if (st) {
		free(lens);
		return st;
	}
	struct file_note *notes = NULL;
	size_t nn = 0, cap = 0;
	struct fl_strtab *seen = fl_strtab_new();
	struct dm_rd in = {all, all, 0};
	for (int p = 0; p < comm->size; p++) {
		in.end = in.p + lens[p];
		size_t nf = dm_get_u64(&in);
		for (size_t i = 0; i < nf && !in.bad; i++) {
			GROW(notes, nn, cap);
			struct file_note *x = &notes[nn++];
			x->file = dm_get_u64(&in);
			x->st = (enum fl_status)dm_get_u64(&in);
			x->msg = dm_get_str(&in, &x->msg_len);
			dm_get(&in, &x->rank, sizeof(x->rank));
			dm_get(&in, &x->lo, sizeof(x->lo));
		}
		size_t ns = dm_get_u64(&in);
		for (size_t i = 0; i < ns && !in.bad; i++) {
			size_t len;
			const char *s = dm_get_str(&in, &len);
			fl_strtab_intern(seen, s, len);
		}
		if (in.bad || in.p != in.end) {
			st = fl_error(FL_ERUNTIME, "device analyses: process %d sent %zu bytes that do not read as its files", p,
				      lens[p]);
			goto out;
		}
	}
	/* as one process: the first file that cannot be read, then two files of one rank */
	const struct file_note *bad = NULL;
	for (size_t i = 0; i < nn; i++)
		if (notes[i].st && (!bad || notes[i].file < bad->file))
			bad = &notes[i];
	if (bad) {
		st = fl_error(bad->st, "%.*s", (int)bad->msg_len, bad->msg);
		goto out;
	}
	dm_sort_n(notes, nn, sizeof(*notes), cmp_note);
	for (size_t i = 1; i < nn; i++)
		if (notes[i].rank == notes[i - 1].rank) {
			st = dm_same_rank(paths[notes[i - 1].file], paths[notes[i].file], notes[i].rank);
			goto out;
		}
	*step_symbols = fl_strtab_count(seen);
	*t0 = INFINITY;
	for (size_t i = 0; i < nn; i++)
		if (notes[i].lo < *t0)
			*t0 = notes[i].lo;
out:
	fl_strtab_free(seen);
	free(notes);
	free(all);
	free(lens);
	return st;
}

/* A rank's result (or the status that refused it) as bytes. */
static void save_result(const struct dm_result *res, struct strbuf *out)
{
	dm_put(out, &res->rank, sizeof(res->rank));
	dm_put_u64(out, res->file);
	dm_put_str(out, res->path, strlen(res->path));
	dm_put_u64(out, res->events);
	dm_put_u64(out, res->nview);
	dm_put_u64(out, (uint64_t)res->rounded);
	dm_put_u64(out, res->nrec);
	dm_put(out, res->recorded, res->nrec * sizeof(*res->recorded));
	dm_put_u64(out, res->nana);
	dm_put(out, res->analysed, res->nana * sizeof(*res->analysed));
	for (size_t a = 0; dm_analyses[a]; a++) {
		const struct dm_analysis *an = dm_analyses[a];
		dm_put_u64(out, (uint64_t)res->refused[a]);
		if (an->save)
			an->save(res->state[a], out);
		else
			dm_put(out, res->state[a], an->size);
	}
}

static int load_result(struct dm_rd *in, const uint32_t *map, uint32_t nmap, struct dm_result *res)
{
	memset(res, 0, sizeof(*res));
	dm_get(in, &res->rank, sizeof(res->rank));
	res->file = dm_get_u64(in);
	size_t len;
	const char *path = dm_get_str(in, &len);
	res->path = strndup(path, len);
	if (!res->path)
		abort();
	res->events = dm_get_u64(in);
	res->nview = dm_get_u64(in);
	res->rounded = dm_get_u64(in) != 0;
	res->nrec = dm_get_u64(in);
	if (dm_get_array(in, (void **)&res->recorded, res->nrec, sizeof(*res->recorded)))
		return -1;
	res->nana = dm_get_u64(in);
	if (dm_get_array(in, (void **)&res->analysed, res->nana, sizeof(*res->analysed)))
		return -1;
	for (size_t a = 0; dm_analyses[a]; a++) {
		const struct dm_analysis *an = dm_analyses[a];
		res->refused[a] = dm_get_u64(in) != 0;
		if (!(res->state[a] = calloc(1, an->size)))
			abort();
		if (an->load ? an->load(in, map, nmap, res->state[a]) : dm_get(in, res->state[a], an->size))
			return -1;
	}
	return in->bad ? -1 : 0;
}

/* Exchange 2, this process's part: prepare its ranks and run the analyses. */
static void local_results(struct fl_dm_job *j, size_t step_symbols, double t0, struct strbuf *out)
{
	j->step_symbols = step_symbols;
	dm_sort_ranks(j);
	uint32_t ns = fl_strtab_count(j->nm.strings);
	dm_put_u64(out, ns);
	for (uint32_t id = 0; id < ns; id++)
		dm_put_str(out, str(j, id), fl_strtab_len(j->nm.strings, id));
	dm_put_u64(out, j->nranks);
	for (size_t i = 0; i < j->nranks; i++) {
		struct dm_rank *r = &j->ranks[i];
		if (isfinite(t0))
			dm_align_rank(r, t0);
		enum fl_status st = dm_prepare_rank(j, r);
		dm_put_u64(out, (uint64_t)st);
		dm_put(out, &r->rank, sizeof(r->rank));
		dm_put_u64(out, r->file);
		if (st) {
			dm_put_str(out, fl_error_msg(), strlen(fl_error_msg()));
			continue;
		}
		struct dm_result res;
		dm_result_of(j, r, r->file, &res);
		struct strbuf one = STRBUF_INIT;
		save_result(&res, &one);
		dm_put_str(out, one.buf ? one.buf : "", one.len);
		strbuf_release(&one);
		dm_result_release(&res);
	}
}

struct rank_note { /* exchange 2, per rank, at process 0 */
	long long rank;
	size_t file;
	enum fl_status st;
	struct dm_rd bytes; /* the message, or the result */
	int proc;
};

static int cmp_rank_note(const void *a, const void *b)
{
	const struct rank_note *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->file < y->file ? -1 : x->file > y->file;
}

/* Exchange 2 at process 0: the document from every rank's result. */
static enum fl_status pool_results(const char *all, const size_t *lens, const struct fl_dm_comm *comm,
				   const struct fl_dm_opts *o, size_t nfiles, size_t step_symbols, cJSON **out)
{
	enum fl_status st = FL_OK;
	struct fl_dm_job *jr = dm_job_new(o, nfiles);
	uint32_t **maps = calloc((size_t)comm->size, sizeof(*maps));
	uint32_t *nmaps = calloc((size_t)comm->size, sizeof(*nmaps));
	struct rank_note *notes = NULL;
	size_t nn = 0, cap = 0;
	if (!maps || !nmaps)
		abort();
	struct dm_rd in = {all, all, 0};
	for (int p = 0; p < comm->size && !st; p++) {
		in.end = in.p + lens[p];
		uint64_t ns = dm_get_u64(&in);
		if (ns > lens[p] / 8 || ns >= UINT32_MAX)
			in.bad = 1;
		maps[p] = dm_xalloc(NULL, (in.bad ? 1 : ns + 1) * sizeof(**maps));
		for (uint64_t id = 0; id < ns && !in.bad; id++) {
			size_t len;
			const char *s = dm_get_str(&in, &len);
			maps[p][id] = fl_strtab_intern(jr->nm.strings, s, len);
			dm_name_flags(&jr->nm, maps[p][id]);
		}
		nmaps[p] = in.bad ? 0 : (uint32_t)ns;
		uint64_t nr = dm_get_u64(&in);
		for (uint64_t i = 0; i < nr && !in.bad; i++) {
			GROW(notes, nn, cap);
			struct rank_note *x = &notes[nn++];
			x->st = (enum fl_status)dm_get_u64(&in);
			dm_get(&in, &x->rank, sizeof(x->rank));
			x->file = dm_get_u64(&in);
			size_t len;
			const char *b = dm_get_str(&in, &len);
			x->bytes = (struct dm_rd){b, b + len, 0};
			x->proc = p;
		}
		if (in.bad || in.p != in.end)
			st = fl_error(FL_ERUNTIME, "device analyses: process %d sent %zu bytes that do not read as its ranks", p,
				      lens[p]);
	}
	if (st)
		goto out;
	dm_sort_n(notes, nn, sizeof(*notes), cmp_rank_note);
	for (size_t i = 0; i < nn; i++)
		if (notes[i].st) { /* as one process: the first rank refused, in rank order */
			st = fl_error(notes[i].st, "%.*s", (int)(notes[i].bytes.end - notes[i].bytes.p), notes[i].bytes.p);
			goto out;
		}
	struct dm_pool *pool = dm_pool_begin(jr);
	for (size_t i = 0; i < nn; i++) {
		struct dm_result res;
		if (load_result(&notes[i].bytes, maps[notes[i].proc], nmaps[notes[i].proc], &res) ||
		    notes[i].bytes.p != notes[i].bytes.end) {
			dm_result_release(&res);
			st = fl_error(FL_ERUNTIME, "device analyses: the figures of rank %lld (from process %d) do not read back",
				      notes[i].rank, notes[i].proc);
			break;
		}
		dm_pool_add(pool, &res);
	}
	cJSON *doc = dm_pool_end(pool, step_symbols);
	if (st)
		cJSON_Delete(doc);
	else
		*out = doc;
out:
	for (int p = 0; p < comm->size; p++)
		free(maps[p]);
	free(maps);
	free(nmaps);
	free(notes);
	fl_dm_free(jr);
	return st;
}

/* Exchange 3: process 0's outcome to every process. */
static enum fl_status share_outcome(const struct fl_dm_comm *comm, enum fl_status mine)
{
	uint64_t code = (uint64_t)mine;
	char *all = NULL;
	size_t *lens = dm_xalloc(NULL, (size_t)comm->size * sizeof(*lens));
	enum fl_status st = comm->allgather(comm->arg, &code, comm->rank == 0 ? sizeof(code) : 0, &all, lens);
	if (!st && lens[0] == sizeof(code)) {
		memcpy(&code, all, sizeof(code));
		st = (enum fl_status)code;
		if (st && comm->rank != 0)
			fl_error(st, "device analyses: process 0 failed");
	} else if (!st) {
		st = fl_error(FL_ERUNTIME, "device analyses: no outcome from process 0");
	}
	if (comm->rank == 0)
		st = mine;
	free(all);
	free(lens);
	return st;
}

enum fl_status fl_device_metrics_split(const char *const *paths, size_t n, const struct fl_dm_opts *o,
				       const struct fl_dm_comm *comm, cJSON **out)
{
	*out = NULL;
	if (!comm || comm->size <= 1)
		return fl_device_metrics(paths, n, o, out);
	if (!n)
		return fl_error(FL_EINPUT, "no trace to analyse");
	/* this process's files: i % size == rank */
	size_t mine = 0;
	const char **mp = dm_xalloc(NULL, (n + 1) * sizeof(*mp));
	size_t *mf = dm_xalloc(NULL, (n + 1) * sizeof(*mf));
	for (size_t i = (size_t)comm->rank; i < n; i += (size_t)comm->size) {
		mp[mine] = paths[i];
		mf[mine++] = i;
	}
	struct fl_dm_job *j = dm_job_new(o, n);
	enum fl_status *fst = dm_xalloc(NULL, (mine + 1) * sizeof(*fst));
	char (*msg)[1024] = dm_xalloc(NULL, (mine + 1) * sizeof(*msg));
	dm_read_files(j, mp, mf, mine, fst, msg);
	size_t step_symbols = 0;
	double t0 = INFINITY;
	enum fl_status st = exchange_files(j, paths, fst, msg, comm, &step_symbols, &t0);
	free(fst);
	free(msg);
	free(mp);
	free(mf);
	if (st) { /* every process knows it: no further exchange */
		fl_dm_free(j);
		return st;
	}
	struct strbuf part = STRBUF_INIT;
	local_results(j, step_symbols, t0, &part);
	fl_dm_free(j); /* the events go before the states arrive */
	char *all = NULL;
	size_t *lens = dm_xalloc(NULL, (size_t)comm->size * sizeof(*lens));
	st = comm->gather(comm->arg, part.buf ? part.buf : "", part.len, &all, lens);
	strbuf_release(&part);
	if (!st && comm->rank == 0)
		st = pool_results(all, lens, comm, o, n, step_symbols, out);
	free(all);
	free(lens);
	st = share_outcome(comm, st);
	if (st && *out) {
		cJSON_Delete(*out);
		*out = NULL;
	}
	return st;
}
