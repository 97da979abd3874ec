/* fleet.c — the streaming pass over a jobs CSV (and an XID CSV) behind
 * `faultline fleet analyze`: per-bucket and per-state sums, queue-delay
 * histograms, the MTBF population and the NODE_FAIL end times. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grader/analysis/fleet.h"
#include "grader/trace/csv.h"

enum { ST_COMPLETED, ST_CANCELLED, ST_FAILED, ST_TIMEOUT, ST_NODE_FAIL, ST_RUNNING, NSTATES };
static const char *const state_names[NSTATES] = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "RUNNING"};

enum { BAD_FIELDS, BAD_QUOTE, BAD_MISSING, BAD_GPUS, BAD_STATE, BAD_TIME, BAD_END_BEFORE_START,
       BAD_START_BEFORE_SUBMIT, NBAD };
static const char *const bad_names[NBAD] = {"field_count", "unterminated_quote", "missing_field", "bad_gpu_num",
					    "unknown_state", "unparsable_time", "end_before_start",
					    "start_before_submit"};
#define FIRST_BAD 10

/* Queue delays: one bin per second below a day (exact), then bins 0.1% wide.
 * Two levels: a count per block of Q_BLOCK bins, always there, and the bins
 * of a block allocated when a delay first lands in it, so an order statistic
 * scans Q_NBLK block counts and one block, and memory follows the delays seen. */
#define Q_EXACT 86400
#define Q_LOG_STEP 1.001
#define Q_LOG_BINS 12000
#define Q_BLOCK 256
#define Q_NBLK ((Q_EXACT + Q_LOG_BINS + Q_BLOCK - 1) / Q_BLOCK)
struct qhist {
	uint32_t blk[Q_NBLK];
	uint32_t *bins[Q_NBLK];
	uint64_t n;
	double sum, max;
};

struct acc {
	double jobs, gpu_h;
};

struct nodefail {
	int64_t t;
	int at_risk, xid;
};

struct bad_row {
	long line;
	int reason;
	char detail[80];
};

struct pass {
	const struct fl_fleet_opts *o;
	const char *file;
	long rows, good;
	long bad[NBAD];
	struct bad_row first[FIRST_BAD];
	size_t nfirst;
	long duration_mismatch;
	struct acc bucket[FL_FLEET_NBUCKETS], state[NSTATES], bs[FL_FLEET_NBUCKETS][NSTATES];
	struct acc large;
	struct qhist q[FL_FLEET_NBUCKETS];
	/* the MTBF population */
	long risk_jobs, risk_fail;
	double risk_gpu_h, trunc_gpu_h;
	long trunc_jobs, trunc_fail;
	struct nodefail *nf;
	size_t nnf, capnf;
	int64_t t_first, t_last;
};

static void qhist_add(struct qhist *h, double s)
{
	long i;
	if (s < Q_EXACT) {
		i = (long)s;
	} else {
		long b = (long)(log(s / Q_EXACT) / log(Q_LOG_STEP));
		i = Q_EXACT + (b < Q_LOG_BINS ? b : Q_LOG_BINS - 1);
	}
	uint32_t **blk = &h->bins[i / Q_BLOCK];
	if (!*blk && !(*blk = calloc(Q_BLOCK, sizeof(uint32_t))))
		abort();
	(*blk)[i % Q_BLOCK]++;
	h->blk[i / Q_BLOCK]++;
	h->n++;
	h->sum += s;
	if (s > h->max)
		h->max = s;
}

static void qhist_release(struct qhist *h)
{
	for (long b = 0; b < Q_NBLK; b++)
		free(h->bins[b]);
}

/* The k-th smallest delay (0-based). */
static double qhist_order(const struct qhist *h, uint64_t k)
{
	uint64_t c = 0;
	for (long b = 0; b < Q_NBLK; b++) {
		if (c + h->blk[b] <= k) {
			c += h->blk[b];
			continue;
		}
		for (long j = 0; j < Q_BLOCK; j++) {
			if ((c += h->bins[b][j]) > k) {
				long i = b * Q_BLOCK + j;
				return i < Q_EXACT ? (double)i
						   : fmin(h->max, Q_EXACT * pow(Q_LOG_STEP, (double)(i - Q_EXACT) + 0.5));
			}
		}
	}
	return h->max;
}

/* pandas' default (linear) quantile. */
static double qhist_quantile(const struct qhist *h, double q)
{
	double pos = q * (double)(h->n - 1);
	uint64_t lo = (uint64_t)floor(pos);
	double a = qhist_order(h, lo);
	if (lo + 1 >= h->n)
		return a;
	double b = qhist_order(h, lo + 1);
	return a + (pos - (double)lo) * (b - a);
}

static int bad(struct pass *p, long line, int reason, const struct fl_csv_field *f)
{
	p->bad[reason]++;
	if (p->nfirst < FIRST_BAD) {
		struct bad_row *b = &p->first[p->nfirst++];
		b->line = line;
		b->reason = reason;
		b->detail[0] = '\0';
		if (f) {
			char v[48];
			fl_csv_copy(f, v, sizeof(v));
			snprintf(b->detail, sizeof(b->detail), "'%s'", v);
		}
	}
	if (p->o->strict) {
		char v[64] = "";
		if (f)
			fl_csv_copy(f, v, sizeof(v));
		return fl_error(FL_EINPUT, "'%s': line %ld: %s%s%s%s (--strict)", p->file, line, bad_names[reason],
				f ? " '" : "", v, f ? "'" : "");
	}
	return 0;
}

static int parse_long(const struct fl_csv_field *f, long *v)
{
	char buf[32];
	if (!f->n || f->n >= sizeof(buf))
		return -1;
	fl_csv_copy(f, buf, sizeof(buf));
	char *end;
	double d = strtod(buf, &end); /* "8" and "8.0" both */
	if (*end || d < 0 || d != floor(d) || d > 1e9)
		return -1;
	*v = (long)d;
	return 0;
}

static int parse_state(const struct fl_csv_field *f)
{
	for (int i = 0; i < NSTATES; i++) {
		size_t n = strlen(state_names[i]);
		/* "CANCELLED by 1234" is Slurm's sacct spelling */
		if (f->n >= n && !memcmp(f->s, state_names[i], n) && (f->n == n || f->s[n] == ' '))
			return i;
	}
	return -1;
}

enum col { C_JOB, C_GPU, C_STATE, C_SUBMIT, C_START, C_END, C_DURATION, C_FAIL, NCOLS };
static const char *const col_names[NCOLS] = {"job_id", "gpu_num", "state", "submit_time", "start_time", "end_time",
					     "duration", "fail_time"};

static void add(struct acc *a, double gpu_h)
{
	a->jobs += 1;
	a->gpu_h += gpu_h;
}

static enum fl_status row(struct pass *p, const struct fl_csv_record *r, const int *col, size_t ncols)
{
	const struct fl_csv_field *f = r->f;
	p->rows++;
	if (r->bad_quote)
		return bad(p, r->line, BAD_QUOTE, NULL) ? FL_EINPUT : FL_OK;
	if (r->n != ncols)
		return bad(p, r->line, BAD_FIELDS, NULL) ? FL_EINPUT : FL_OK;
	long gpus;
	int st;
	int64_t submit, start = 0, end = 0;
	const struct fl_csv_field *fs = &f[col[C_SUBMIT]], *fb = &f[col[C_START]], *fe = &f[col[C_END]];
#define BAD(reason, field) return bad(p, r->line, reason, field) ? FL_EINPUT : FL_OK
	for (int c = 0; c <= C_SUBMIT; c++)
		if (!f[col[c]].n)
			BAD(BAD_MISSING, NULL);
	if (parse_long(&f[col[C_GPU]], &gpus))
		BAD(BAD_GPUS, &f[col[C_GPU]]);
	if ((st = parse_state(&f[col[C_STATE]])) < 0)
		BAD(BAD_STATE, &f[col[C_STATE]]);
	if (fl_fleet_parse_time(fs->s, fs->n, &submit))
		BAD(BAD_TIME, fs);
	/* a job cancelled in the queue never started; a RUNNING job has not ended */
	int never_started = !fb->n && st == ST_CANCELLED;
	if (!never_started) {
		if (!fb->n)
			BAD(BAD_MISSING, NULL);
		if (fl_fleet_parse_time(fb->s, fb->n, &start))
			BAD(BAD_TIME, fb);
		if (fe->n) {
			if (fl_fleet_parse_time(fe->s, fe->n, &end))
				BAD(BAD_TIME, fe);
		} else if (st != ST_RUNNING) {
			BAD(BAD_MISSING, NULL);
		} else {
			end = start;
		}
		if (end < start)
			BAD(BAD_END_BEFORE_START, fe);
		if (start < submit)
			BAD(BAD_START_BEFORE_SUBMIT, fb);
	}
#undef BAD
	p->good++;
	double dur_s = never_started ? 0 : (double)(end - start);
	if (col[C_DURATION] >= 0 && f[col[C_DURATION]].n) {
		char buf[32];
		fl_csv_copy(&f[col[C_DURATION]], buf, sizeof(buf));
		char *e;
		double d = strtod(buf, &e);
		if (*e || fabs(d - dur_s) > 1)
			p->duration_mismatch++;
	}
	double gpu_h = (double)gpus * dur_s / 3600;
	int b = fl_fleet_bucket_of(gpus);
	add(&p->bucket[b], gpu_h);
	add(&p->state[st], gpu_h);
	add(&p->bs[b][st], gpu_h);
	if (gpus >= p->o->min_gpus)
		add(&p->large, gpu_h);
	if (!never_started)
		qhist_add(&p->q[b], (double)(start - submit));
	if (p->good == 1 || submit < p->t_first)
		p->t_first = submit;
	if (end > p->t_last)
		p->t_last = end;
	int pop = gpus >= p->o->min_gpus && gpus > 0 && st != ST_RUNNING && !never_started;
	double min_s = p->o->min_hours * 3600;
	int at_risk = pop && dur_s >= min_s;
	if (at_risk) {
		p->risk_jobs++;
		p->risk_gpu_h += gpu_h;
		p->risk_fail += st == ST_NODE_FAIL;
	}
	if (pop && dur_s > min_s) {
		p->trunc_jobs++;
		p->trunc_gpu_h += (double)gpus * (dur_s - min_s) / 3600;
		p->trunc_fail += st == ST_NODE_FAIL;
	}
	if (st == ST_NODE_FAIL) {
		if (p->nnf == p->capnf) {
			p->capnf = p->capnf ? p->capnf * 2 : 256;
			p->nf = realloc(p->nf, p->capnf * sizeof(*p->nf));
			if (!p->nf)
				abort();
		}
		int64_t t = end;
		if (col[C_FAIL] >= 0 && f[col[C_FAIL]].n)
			fl_fleet_parse_time(f[col[C_FAIL]].s, f[col[C_FAIL]].n, &t);
		p->nf[p->nnf++] = (struct nodefail){t, at_risk, 0};
	}
	return FL_OK;
}

static int nf_cmp(const void *a, const void *b)
{
	int64_t x = ((const struct nodefail *)a)->t, y = ((const struct nodefail *)b)->t;
	return (x > y) - (x < y);
}

/* ---- JSON ---- */

static cJSON *acc_json(const struct acc *a, const struct acc *total)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "jobs", a->jobs);
	cJSON_AddNumberToObject(j, "job_share", total->jobs > 0 ? a->jobs / total->jobs : 0);
	cJSON_AddNumberToObject(j, "gpu_hours", a->gpu_h);
	cJSON_AddNumberToObject(j, "gpu_hour_share", total->gpu_h > 0 ? a->gpu_h / total->gpu_h : 0);
	return j;
}

static const char mtbf_definition[] =
	"per-GPU MTBF = GPU-hours at risk / failures; GPU-hours at risk = sum of gpu_num x (end_time - start_time) "
	"over finished jobs with gpu_num >= min_gpus and duration >= min_hours; failures = those jobs that ended "
	"NODE_FAIL; 95% interval: exact Poisson (Garwood) interval [chi2(0.025; 2k)/2, chi2(0.975; 2k+2)/2] on the "
	"failure count k, GPU-hours at risk divided by its ends";

cJSON *fl_fleet_mtbf_json(double gpu_h, long jobs, long failures)
{
	cJSON *m = cJSON_CreateObject();
	double lo, hi;
	fl_poisson_ci(failures, 0.95, &lo, &hi);
	cJSON_AddNumberToObject(m, "jobs", (double)jobs);
	cJSON_AddNumberToObject(m, "gpu_hours_at_risk", gpu_h);
	cJSON_AddNumberToObject(m, "failures", (double)failures);
	if (failures > 0) {
		cJSON_AddNumberToObject(m, "per_gpu_hours", gpu_h / (double)failures);
		cJSON_AddNumberToObject(m, "per_gpu_years", gpu_h / (double)failures / FL_HOURS_PER_YEAR);
	} else {
		cJSON_AddNullToObject(m, "per_gpu_hours");
		cJSON_AddNullToObject(m, "per_gpu_years");
	}
	cJSON *ci = cJSON_AddObjectToObject(m, "ci95");
	cJSON_AddNumberToObject(ci, "failures_lo", lo);
	cJSON_AddNumberToObject(ci, "failures_hi", hi);
	cJSON_AddNumberToObject(ci, "years_lo", gpu_h / hi / FL_HOURS_PER_YEAR);
	if (lo > 0)
		cJSON_AddNumberToObject(ci, "years_hi", gpu_h / lo / FL_HOURS_PER_YEAR);
	else
		cJSON_AddNullToObject(ci, "years_hi"); /* no failure: no upper bound */
	return m;
}

static void add_first_bad(cJSON *arr, const struct bad_row *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(e, "line", (double)b[i].line);
		cJSON_AddStringToObject(e, "reason", bad_names[b[i].reason]);
		if (b[i].detail[0])
			cJSON_AddStringToObject(e, "value", b[i].detail);
		cJSON_AddItemToArray(arr, e);
	}
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* ---- XID telemetry ---- */

struct xid_pass {
	long rows, bad_rows, events, gpus;
	long by_code[1024], other;
	struct bad_row first[FIRST_BAD];
	size_t nfirst;
};

static enum fl_status xid_read(const char *path, struct pass *p, double window, struct xid_pass *x)
{
	struct fl_csv *c;
	enum fl_status st = fl_csv_open(path, &c);
	if (st)
		return st;
	struct fl_csv_record r;
	int k = fl_csv_next(c, &r);
	if (k <= 0 || !r.n || !(fl_csv_eq(&r.f[0], "Time") || fl_csv_eq(&r.f[0], "time"))) {
		st = k < 0 ? FL_ERUNTIME
			   : fl_error(FL_EINPUT, "'%s': line 1: expected a header starting with 'Time' and one column "
					  "per GPU ({IP}-{GPU_INDEX})", path);
		goto out;
	}
	size_t ncols = r.n;
	x->gpus = (long)ncols - 1;
	while ((k = fl_csv_next(c, &r)) > 0) {
		int64_t t;
		x->rows++;
		int reason = r.n != ncols ? BAD_FIELDS : fl_fleet_parse_time(r.f[0].s, r.f[0].n, &t) ? BAD_TIME : -1;
		if (reason >= 0) {
			x->bad_rows++;
			if (x->nfirst < FIRST_BAD)
				x->first[x->nfirst++] = (struct bad_row){r.line, reason, ""};
			if (p->o->strict) {
				st = fl_error(FL_EINPUT, "'%s': line %ld: %s (--strict)", path, r.line, bad_names[reason]);
				goto out;
			}
			continue;
		}
		int any = 0;
		for (size_t i = 1; i < ncols; i++) {
			const struct fl_csv_field *f = &r.f[i];
			if (!f->n)
				continue;
			long code;
			if (parse_long(f, &code) || code == 0)
				continue;
			x->events++;
			if (code < 1024)
				x->by_code[code]++;
			else
				x->other++;
			any = 1;
		}
		if (!any || !p->nnf)
			continue;
		/* mark the NODE_FAILs within the window of this row's events */
		size_t lo = 0, hi = p->nnf;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if ((double)p->nf[mid].t < (double)t - window)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < p->nnf && (double)p->nf[i].t <= (double)t + window; i++)
			p->nf[i].xid = 1;
	}
	if (k < 0)
		st = FL_ERUNTIME;
out:
	fl_csv_close(c);
	return st;
}

/* ---- the analysis ---- */

enum fl_status fl_fleet_analyze(const char *jobs_path, const struct fl_fleet_opts *o, cJSON **out)
{
	*out = NULL;
	struct pass *p = calloc(1, sizeof(*p));
	struct xid_pass *x = NULL;
	if (!p)
		abort();
	p->o = o;
	p->file = jobs_path;
	struct fl_csv *c = NULL;
	enum fl_status st = fl_csv_open(jobs_path, &c);
	if (st)
		goto out;
	struct fl_csv_record r;
	int k = fl_csv_next(c, &r);
	if (k <= 0) {
		st = k < 0 ? FL_ERUNTIME : fl_error(FL_EINPUT, "'%s': empty file, expected a header line", jobs_path);
		goto out;
	}
	int col[NCOLS];
	size_t ncols = r.n;
	int kalos = 0;
	for (int i = 0; i < NCOLS; i++) {
		col[i] = -1;
		for (size_t j = 0; j < r.n; j++)
			if (fl_csv_eq(&r.f[j], col_names[i]))
				col[i] = (int)j;
	}
	for (size_t j = 0; j < r.n; j++)
		kalos |= fl_csv_eq(&r.f[j], "fail_time") || fl_csv_eq(&r.f[j], "mem_per_pod_GB");
	for (int i = 0; i < C_DURATION; i++)
		if (col[i] < 0) {
			st = fl_error(FL_EINPUT, "'%s': line 1: the header has no '%s' column, expected AcmeTrace's job "
				      "trace header (job_id, user, node_num, gpu_num, ..., state, submit_time, "
				      "start_time, end_time, ...)", jobs_path, col_names[i]);
			goto out;
		}
	while ((k = fl_csv_next(c, &r)) > 0)
		if ((st = row(p, &r, col, ncols)))
			goto out;
	if (k < 0) {
		st = FL_ERUNTIME;
		goto out;
	}
	if (p->nnf)
		qsort(p->nf, p->nnf, sizeof(*p->nf), nf_cmp);
	if (o->xid_path) {
		x = calloc(1, sizeof(*x));
		if (!x)
			abort();
		if ((st = xid_read(o->xid_path, p, o->xid_window_s, x)))
			goto out;
	}

	struct acc total = {0};
	for (int b = 0; b < FL_FLEET_NBUCKETS; b++) {
		total.jobs += p->bucket[b].jobs;
		total.gpu_h += p->bucket[b].gpu_h;
	}
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "schema", "faultline.fleet/1");
	cJSON *in = cJSON_AddObjectToObject(j, "input");
	cJSON_AddStringToObject(in, "jobs", base_name(jobs_path));
	cJSON_AddStringToObject(in, "format", kalos ? "kalos" : "seren");
	cJSON_AddNumberToObject(in, "columns", (double)ncols);
	cJSON_AddNumberToObject(in, "rows", (double)p->rows);
	cJSON_AddNumberToObject(in, "bytes", (double)fl_csv_bytes(c));
	if (p->good) {
		char t0[32], t1[32];
		fl_fleet_format_time(p->t_first, t0);
		fl_fleet_format_time(p->t_last, t1);
		cJSON_AddStringToObject(in, "first_submit", t0);
		cJSON_AddStringToObject(in, "last_end", t1);
	}
	cJSON_AddNumberToObject(in, "duration_mismatches", (double)p->duration_mismatch);

	cJSON *br = cJSON_AddObjectToObject(j, "bad_rows");
	long nbad = 0;
	for (int i = 0; i < NBAD; i++)
		nbad += p->bad[i];
	cJSON_AddNumberToObject(br, "count", (double)nbad);
	cJSON *byr = cJSON_AddObjectToObject(br, "by_reason");
	for (int i = 0; i < NBAD; i++)
		if (p->bad[i])
			cJSON_AddNumberToObject(byr, bad_names[i], (double)p->bad[i]);
	add_first_bad(cJSON_AddArrayToObject(br, "first"), p->first, p->nfirst);

	cJSON *jobs = cJSON_AddObjectToObject(j, "jobs");
	cJSON_AddNumberToObject(jobs, "count", total.jobs);
	cJSON_AddNumberToObject(jobs, "gpu_hours", total.gpu_h);

	cJSON *mix = cJSON_AddArrayToObject(j, "mix");
	cJSON *sbs = cJSON_AddArrayToObject(j, "states_by_scale");
	cJSON *queue = cJSON_AddArrayToObject(j, "queue");
	for (int b = 0; b < FL_FLEET_NBUCKETS; b++) {
		cJSON *m = acc_json(&p->bucket[b], &total);
		cJSON_AddItemToObject(m, "bucket", cJSON_CreateString(fl_fleet_buckets[b].name));
		cJSON_AddItemToArray(mix, m);
		cJSON *s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "bucket", fl_fleet_buckets[b].name);
		for (int i = 0; i < NSTATES; i++)
			cJSON_AddItemToObject(s, state_names[i], acc_json(&p->bs[b][i], &p->bucket[b]));
		cJSON_AddItemToArray(sbs, s);
		const struct qhist *h = &p->q[b];
		cJSON *q = cJSON_CreateObject();
		cJSON_AddStringToObject(q, "bucket", fl_fleet_buckets[b].name);
		cJSON_AddNumberToObject(q, "jobs", (double)h->n);
		if (h->n) {
			cJSON_AddNumberToObject(q, "p50_s", qhist_quantile(h, 0.5));
			cJSON_AddNumberToObject(q, "p90_s", qhist_quantile(h, 0.9));
			cJSON_AddNumberToObject(q, "p99_s", qhist_quantile(h, 0.99));
			cJSON_AddNumberToObject(q, "mean_s", h->sum / (double)h->n);
			cJSON_AddNumberToObject(q, "max_s", h->max);
		}
		cJSON_AddItemToArray(queue, q);
	}
	cJSON *lg = acc_json(&p->large, &total);
	cJSON_AddNumberToObject(lg, "min_gpus", (double)o->min_gpus);
	cJSON_AddItemToObject(j, "large", lg);

	cJSON *states = cJSON_AddObjectToObject(j, "states");
	int dom = 0;
	for (int i = 0; i < NSTATES; i++) {
		cJSON_AddItemToObject(states, state_names[i], acc_json(&p->state[i], &total));
		if (p->state[i].gpu_h > p->state[dom].gpu_h)
			dom = i;
	}
	cJSON_AddStringToObject(j, "dominant_gpu_hour_state", state_names[dom]);

	cJSON *mt = fl_fleet_mtbf_json(p->risk_gpu_h, p->risk_jobs, p->risk_fail);
	cJSON_AddNumberToObject(mt, "min_gpus", (double)o->min_gpus);
	cJSON_AddNumberToObject(mt, "min_hours", o->min_hours);
	cJSON_AddStringToObject(mt, "definition", mtbf_definition);
	cJSON_AddItemToObject(j, "mtbf", mt);
	cJSON *tr = fl_fleet_mtbf_json(p->trunc_gpu_h, p->trunc_jobs, p->trunc_fail);
	cJSON_AddStringToObject(tr, "definition", "as mtbf, but each job's first min_hours are not at risk and a failure "
				"counts only after them (left truncation: unbiased whatever min_hours, since choosing jobs "
				"by how long they ran removes early failures)");
	cJSON_AddItemToObject(j, "mtbf_truncated", tr);

	if (x) {
		cJSON *xj = cJSON_AddObjectToObject(j, "xid");
		cJSON_AddStringToObject(xj, "file", base_name(o->xid_path));
		cJSON_AddNumberToObject(xj, "rows", (double)x->rows);
		cJSON_AddNumberToObject(xj, "gpus", (double)x->gpus);
		cJSON_AddNumberToObject(xj, "events", (double)x->events);
		cJSON *bc = cJSON_AddObjectToObject(xj, "by_code");
		for (int i = 1; i < 1024; i++)
			if (x->by_code[i]) {
				char name[16];
				snprintf(name, sizeof(name), "%d", i);
				cJSON_AddNumberToObject(bc, name, (double)x->by_code[i]);
			}
		if (x->other)
			cJSON_AddNumberToObject(bc, "other", (double)x->other);
		cJSON_AddNumberToObject(xj, "bad_rows", (double)x->bad_rows);
		add_first_bad(cJSON_AddArrayToObject(xj, "first_bad"), x->first, x->nfirst);
		cJSON_AddNumberToObject(xj, "window_s", o->xid_window_s);
		long corr = 0, corr_all = 0;
		for (size_t i = 0; i < p->nnf; i++) {
			corr_all += p->nf[i].xid;
			corr += p->nf[i].xid && p->nf[i].at_risk;
		}
		cJSON_AddNumberToObject(xj, "node_fail_jobs", (double)p->nnf);
		cJSON_AddNumberToObject(xj, "node_fail_with_xid", (double)corr_all);
		cJSON *xm = fl_fleet_mtbf_json(p->risk_gpu_h, p->risk_jobs, corr);
		cJSON_AddStringToObject(xm, "definition", "as mtbf, counting only the NODE_FAIL jobs with an XID event "
					"(any non-zero code on any GPU) within window_s of their fail_time (end_time "
					"without one); the jobs log names no nodes, so the match is by time alone");
		cJSON_AddItemToObject(xj, "mtbf", xm);
	}

	cJSON *gp = cJSON_AddObjectToObject(j, "goodput");
	double lost = p->state[ST_NODE_FAIL].gpu_h + p->state[ST_FAILED].gpu_h;
	cJSON_AddNumberToObject(gp, "total_gpu_hours", total.gpu_h);
	cJSON_AddNumberToObject(gp, "node_fail_gpu_hours", p->state[ST_NODE_FAIL].gpu_h);
	cJSON_AddNumberToObject(gp, "failed_gpu_hours", p->state[ST_FAILED].gpu_h);
	cJSON_AddNumberToObject(gp, "lost_to_failures_gpu_hours", lost);
	cJSON_AddNumberToObject(gp, "timeout_gpu_hours", p->state[ST_TIMEOUT].gpu_h);
	cJSON_AddNumberToObject(gp, "running_gpu_hours", p->state[ST_RUNNING].gpu_h);
	cJSON_AddNumberToObject(gp, "cancelled_gpu_hours", p->state[ST_CANCELLED].gpu_h);
	cJSON_AddNumberToObject(gp, "completed_gpu_hours", p->state[ST_COMPLETED].gpu_h);
	cJSON_AddNumberToObject(gp, "completed_share", total.gpu_h > 0 ? p->state[ST_COMPLETED].gpu_h / total.gpu_h : 0);
	cJSON_AddStringToObject(gp, "definition", "total GPU-hours of the log -> minus NODE_FAIL and FAILED jobs' "
				"GPU-hours (lost to failures and restarts: the log shows no checkpoints, so all of a "
				"failed job's hours count as lost, an upper bound) -> minus TIMEOUT and RUNNING -> minus "
				"CANCELLED (stopped by their owner; pretraining is cancelled when it converges, so this "
				"is not waste) -> COMPLETED");

	cJSON *yg = cJSON_AddObjectToObject(j, "young");
	long jg = o->job_gpus > 0 ? o->job_gpus : o->min_gpus;
	cJSON_AddNumberToObject(yg, "ckpt_cost_min", o->ckpt_cost_min);
	cJSON_AddNumberToObject(yg, "job_gpus", (double)jg);
	if (p->risk_fail > 0 && jg > 0) {
		double m_job_h = p->risk_gpu_h / (double)p->risk_fail / (double)jg;
		double c_h = o->ckpt_cost_min / 60;
		double tau_h = sqrt(2 * c_h * m_job_h);
		cJSON_AddNumberToObject(yg, "job_mtbf_hours", m_job_h);
		cJSON_AddNumberToObject(yg, "interval_hours", tau_h);
		cJSON_AddNumberToObject(yg, "interval_min", tau_h * 60);
		cJSON_AddNumberToObject(yg, "waste_fraction", c_h / tau_h + tau_h / (2 * m_job_h));
	} else {
		cJSON_AddNullToObject(yg, "job_mtbf_hours");
		cJSON_AddNullToObject(yg, "interval_hours");
		cJSON_AddNullToObject(yg, "interval_min");
		cJSON_AddNullToObject(yg, "waste_fraction");
	}
	cJSON_AddStringToObject(yg, "definition", "Young's interval tau = sqrt(2 C M) with C the checkpoint cost "
				"(assumed, --ckpt-cost) and M = per-GPU MTBF / job_gpus, the MTBF of a job on job_gpus "
				"GPUs (measured proxy: NODE_FAIL); waste fraction C/tau + tau/(2M) (first order)");
	*out = j;
out:
	fl_csv_close(c);
	for (int b = 0; b < FL_FLEET_NBUCKETS; b++) {
		qhist_release(&p->q[b]);
	}
	free(p->nf);
	free(p);
	free(x);
	return st;
}
