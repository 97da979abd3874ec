/* batch.c — grade a roster in one process: each truth is prepared once
 * (fl_grade_key_load, kept in a small cache), each answer graded with it; then
 * the per-learner reports, the gradebook CSV, the summary and the regrade. */
#include "grader/grading/batch.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/jsonutil.h"
#include "common/outfile.h"
#include "grader/grading/grade.h"
#include "grader/grading/report.h"
#include "grader/grading/units.h"

#define KEY_CACHE 256 /* prepared truths kept at once (one per learner's variant) */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the prepared truths ---- */

struct key_cache {
	struct {
		char *truth, *traces; /* traces: the row's traces directory, or NULL */
		struct fl_grade_key *key;
		unsigned long used;
	} e[KEY_CACHE];
	size_t n;
	unsigned long clock;
	size_t loads;
};

static int same_dir(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* One key per (truth, traces directory): trace: references read the traces. */
static const struct fl_grade_key *cache_get(struct key_cache *c, const char *truth, const char *traces,
					    const struct fl_batch_opts *o)
{
	c->clock++;
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->e[i].truth, truth) && same_dir(c->e[i].traces, traces)) {
			c->e[i].used = c->clock;
			return c->e[i].key;
		}
	size_t slot = c->n;
	if (c->n == KEY_CACHE) { /* evict the least recently used */
		slot = 0;
		for (size_t i = 1; i < c->n; i++)
			if (c->e[i].used < c->e[slot].used)
				slot = i;
		fl_grade_key_free(c->e[slot].key);
		free(c->e[slot].truth);
		free(c->e[slot].traces);
	} else {
		c->n++;
	}
	struct fl_grade_opts go = {.truth_path = truth, .rubric_path = o->rubric_path, .scenarios_dir = o->scenarios_dir,
				   .traces_dir = traces, .reveal = o->reveal, .strict = o->strict};
	fl_grade_key_load(&go, &c->e[slot].key);
	fl_error_clear();
	c->e[slot].truth = fl_xstrdup(truth);
	c->e[slot].traces = traces ? fl_xstrdup(traces) : NULL;
	c->e[slot].used = c->clock;
	c->loads++;
	return c->e[slot].key;
}

static void cache_release(struct key_cache *c)
{
	for (size_t i = 0; i < c->n; i++) {
		fl_grade_key_free(c->e[i].key);
		free(c->e[i].truth);
		free(c->e[i].traces);
	}
}

/* ---- results ---- */

/* A gradebook column: one question of one rubric. */
struct column {
	char *rubric, *id;
	size_t count[6]; /* correct, partial, wrong, unreadable, missing, graded answers */
};

struct cell {
	size_t col;
	double score;
};

struct result {
	const char *learner;
	enum fl_grade_state state;
	double score, max;
	struct cell *cells;
	size_t n_cells;
	char *message; /* why it was not graded; NULL when graded */
};

enum { N_CORRECT, N_PARTIAL, N_WRONG, N_UNREADABLE, N_MISSING, N_GRADED };

struct columns {
	struct column *c;
	size_t n;
	int many_rubrics;
};

static size_t column_of(struct columns *cs, const char *rubric, const char *id)
{
	for (size_t i = cs->n; i-- > 0;)
		if (!strcmp(cs->c[i].id, id) && !strcmp(cs->c[i].rubric, rubric))
			return i;
	for (size_t i = 0; i < cs->n; i++)
		if (strcmp(cs->c[i].rubric, rubric))
			cs->many_rubrics = 1;
	struct column *nc = realloc(cs->c, (cs->n + 1) * sizeof(*nc));
	if (!nc)
		abort();
	cs->c = nc;
	cs->c[cs->n] = (struct column){.rubric = fl_xstrdup(rubric), .id = fl_xstrdup(id)};
	return cs->n++;
}

static const char *state_word(enum fl_grade_state s)
{
	switch (s) {
	case FL_GRADE_GRADED: return "graded";
	case FL_GRADE_UNPARSEABLE: return "not_gradable";
	case FL_GRADE_CONFIG_ERROR: return "truth_or_rubric_error";
	case FL_GRADE_USAGE_ERROR: return "usage_error";
	}
	return "unknown";
}

static void record(struct result *res, struct columns *cs, const struct fl_grade *g)
{
	res->state = g->state;
	res->max = g->max_score;
	if (g->state == FL_GRADE_GRADED) {
		res->score = g->score;
		const char *rubric = g->rubric.name ? g->rubric.name : g->rubric_name ? g->rubric_name : "";
		res->cells = calloc(g->n ? g->n : 1, sizeof(*res->cells));
		if (!res->cells)
			abort();
		for (size_t i = 0; i < g->n; i++) {
			const struct fl_grade_item *it = &g->items[i];
			size_t c = column_of(cs, rubric, it->q->id);
			res->cells[res->n_cells++] = (struct cell){c, it->score};
			struct column *col = &cs->c[c];
			col->count[N_GRADED]++;
			if (it->unreadable)
				col->count[N_UNREADABLE]++;
			else if (it->v.outcome == FL_OUT_CORRECT)
				col->count[N_CORRECT]++;
			else if (it->v.outcome == FL_OUT_PARTIAL)
				col->count[N_PARTIAL]++;
			else if (it->v.outcome == FL_OUT_MISSING)
				col->count[N_MISSING]++;
			else
				col->count[N_WRONG]++;
		}
	} else if (g->state == FL_GRADE_UNPARSEABLE) {
		struct strbuf m = STRBUF_INIT;
		strbuf_adds(&m, "answer not gradable: ");
		for (size_t i = 0; i < g->n_format_errors && i < 3; i++)
			strbuf_addf(&m, "%s%s", i ? "; " : "", g->format_errors[i]);
		res->message = m.buf;
	} else {
		res->message = fl_xstrdup(g->error ? g->error : "not graded");
	}
}

/* ---- per-learner reports ---- */

static const char *report_ext(const char *format)
{
	if (!strcmp(format, "text"))
		return "txt";
	if (!strcmp(format, "json"))
		return "json";
	if (!strcmp(format, "junit"))
		return "xml";
	if (!strcmp(format, "gradescope"))
		return "gradescope.json";
	if (!strcmp(format, "prairielearn"))
		return "prairielearn.json";
	return "out";
}

static enum fl_status make_dir(const char *dir)
{
	if (mkdir(dir, 0777) && errno != EEXIST)
		return fl_error(FL_EINPUT, "grade: cannot create directory '%s': %s", dir, strerror(errno));
	return FL_OK;
}

/* Reports are many small files: written plainly, not fsync'd one by one (the
 * gradebook and summary are written atomically). */
static enum fl_status write_plain(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return fl_error(FL_EINPUT, "grade: cannot write '%s': %s", path, strerror(errno));
	int bad = fwrite(buf, 1, len, f) != len;
	bad |= fclose(f) != 0;
	if (bad)
		return fl_error(FL_EINPUT, "grade: cannot write '%s': %s", path, strerror(errno));
	return FL_OK;
}

/* ---- gradebook ---- */

static void fmt(char *b, size_t n, double v) { fl_fmt_num(b, n, round(v * 1e6) / 1e6); }

static void column_name(const struct columns *cs, size_t i, struct strbuf *sb)
{
	strbuf_reset(sb);
	if (cs->many_rubrics)
		strbuf_addf(sb, "%s/%s", cs->c[i].rubric, cs->c[i].id);
	else
		strbuf_adds(sb, cs->c[i].id);
}

static void gradebook(const struct fl_roster *r, const struct result *res, const struct columns *cs, struct strbuf *out)
{
	struct strbuf name = STRBUF_INIT;
	strbuf_adds(out, "learner,score,max_score");
	for (size_t i = 0; i < cs->n; i++) {
		column_name(cs, i, &name);
		strbuf_adds(out, ",");
		fl_csv_field(out, name.buf);
	}
	strbuf_adds(out, ",state,message\r\n");
	double *row = malloc((cs->n ? cs->n : 1) * sizeof(double));
	unsigned char *has = malloc(cs->n ? cs->n : 1);
	if (!row || !has)
		abort();
	for (size_t k = 0; k < r->n; k++) {
		const struct result *x = &res[k];
		char s[64], m[64];
		fl_csv_field(out, x->learner);
		fmt(s, sizeof(s), x->score);
		fmt(m, sizeof(m), x->max);
		strbuf_addf(out, ",%s,%s", x->state == FL_GRADE_GRADED ? s : "", x->max > 0 ? m : "");
		memset(has, 0, cs->n);
		for (size_t i = 0; i < x->n_cells; i++) {
			row[x->cells[i].col] = x->cells[i].score;
			has[x->cells[i].col] = 1;
		}
		for (size_t i = 0; i < cs->n; i++) {
			fmt(s, sizeof(s), row[i]);
			strbuf_addf(out, ",%s", has[i] ? s : "");
		}
		strbuf_addf(out, ",%s,", state_word(x->state));
		if (x->message) {
			char *c = fl_clean_text(x->message, 400);
			fl_csv_field(out, c);
			free(c);
		}
		strbuf_adds(out, "\r\n");
	}
	free(row);
	free(has);
	strbuf_release(&name);
}

/* ---- summary ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#define BINS 10

static void summary(const struct fl_roster *r, const struct result *res, const struct columns *cs,
		    struct fl_batch_stats *bs, struct strbuf *txt, cJSON *json)
{
	double *frac = malloc((r->n ? r->n : 1) * sizeof(double));
	double *scores = malloc((r->n ? r->n : 1) * sizeof(double));
	size_t n = 0, hist[BINS] = {0};
	double sum = 0, fsum = 0;
	if (!frac || !scores)
		abort();
	for (size_t k = 0; k < r->n; k++) {
		if (res[k].state != FL_GRADE_GRADED)
			continue;
		double f = res[k].max > 0 ? res[k].score / res[k].max : 0;
		f = f < 0 ? 0 : f > 1 ? 1 : f;
		frac[n] = f;
		scores[n++] = res[k].score;
		sum += res[k].score;
		fsum += f;
		int b = (int)floor(f * BINS + 1e-9);
		hist[b >= BINS ? BINS - 1 : b]++;
	}
	qsort(scores, n, sizeof(double), cmp_double);
	qsort(frac, n, sizeof(double), cmp_double);
	double mean = n ? sum / (double)n : 0, median = !n ? 0 : n % 2 ? scores[n / 2] : (scores[n / 2 - 1] + scores[n / 2]) / 2;
	double fmean = n ? fsum / (double)n : 0, fmedian = !n ? 0 : n % 2 ? frac[n / 2] : (frac[n / 2 - 1] + frac[n / 2]) / 2;
	bs->mean = mean;
	bs->median = median;
	char a[64], b[64];
	strbuf_addf(txt, "learners %zu: graded %zu, not gradable %zu, truth or rubric error %zu; roster rows not used %zu\n",
		    bs->learners, bs->graded, bs->unparseable, bs->config_errors, bs->bad_rows);
	fmt(a, sizeof(a), mean);
	fmt(b, sizeof(b), median);
	strbuf_addf(txt, "score: mean %s, median %s (of the graded; as a share: mean %.1f%%, median %.1f%%)\n", a, b,
		    100 * fmean, 100 * fmedian);
	strbuf_adds(txt, "histogram (share of the maximum):\n");
	size_t top = 1;
	for (int i = 0; i < BINS; i++)
		top = hist[i] > top ? hist[i] : top;
	cJSON *jh = cJSON_CreateArray();
	for (int i = 0; i < BINS; i++) {
		int bar = (int)((40.0 * (double)hist[i] + (double)top - 1) / (double)top);
		strbuf_addf(txt, "  %3d-%3d%%%c %6zu %.*s\n", i * 10, i * 10 + 10, i == BINS - 1 ? ']' : ')', hist[i],
			    bar, "########################################");
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "from", i / (double)BINS);
		cJSON_AddNumberToObject(o, "to", (i + 1) / (double)BINS);
		cJSON_AddNumberToObject(o, "count", (double)hist[i]);
		cJSON_AddItemToArray(jh, o);
	}
	strbuf_addf(txt, "per question (share of graded answers): %-28s %7s %7s %7s %10s %7s\n", "", "right", "partly",
		    "wrong", "unreadable", "missing");
	cJSON *jq = cJSON_CreateArray();
	struct strbuf name = STRBUF_INIT;
	static const char *const words[] = {"right", "partly", "wrong", "unreadable", "missing"};
	for (size_t i = 0; i < cs->n; i++) {
		const struct column *c = &cs->c[i];
		double d = c->count[N_GRADED] ? (double)c->count[N_GRADED] : 1;
		column_name(cs, i, &name);
		char *shown = fl_clean_text(name.buf, 66);
		strbuf_addf(txt, "  %-66s", shown);
		free(shown);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "rubric", c->rubric);
		cJSON_AddStringToObject(o, "question", c->id);
		cJSON_AddNumberToObject(o, "answers", (double)c->count[N_GRADED]);
		for (int k = 0; k < 5; k++) {
			double share = (double)c->count[k] / d;
			strbuf_addf(txt, " %*.1f%%", k == 3 ? 9 : 6, 100 * share);
			cJSON_AddNumberToObject(o, words[k], round(share * 1e4) / 1e4);
		}
		strbuf_adds(txt, "\n");
		cJSON_AddItemToArray(jq, o);
	}
	strbuf_release(&name);
	cJSON_AddStringToObject(json, "schema", "faultline.batch-summary/1");
	cJSON_AddNumberToObject(json, "learners", (double)bs->learners);
	cJSON_AddNumberToObject(json, "graded", (double)bs->graded);
	cJSON_AddNumberToObject(json, "not_gradable", (double)bs->unparseable);
	cJSON_AddNumberToObject(json, "truth_or_rubric_errors", (double)bs->config_errors);
	cJSON_AddNumberToObject(json, "roster_rows_not_used", (double)bs->bad_rows);
	cJSON_AddNumberToObject(json, "mean", round(mean * 1e6) / 1e6);
	cJSON_AddNumberToObject(json, "median", round(median * 1e6) / 1e6);
	cJSON_AddNumberToObject(json, "mean_fraction", round(fmean * 1e6) / 1e6);
	cJSON_AddNumberToObject(json, "median_fraction", round(fmedian * 1e6) / 1e6);
	cJSON_AddItemToObject(json, "histogram", jh);
	cJSON_AddItemToObject(json, "questions", jq);
	free(frac);
	free(scores);
}

/* ---- regrade ---- */

static int parse_score(const char *s, double *v)
{
	char *end;
	if (!*s)
		return 0;
	*v = strtod(s, &end);
	return *end == '\0' && isfinite(*v);
}

static enum fl_status regrade(const char *prev_path, const struct fl_roster *r, const struct result *res,
			      struct strbuf *out, struct strbuf *txt, size_t *changed)
{
	char *text = NULL;
	size_t len = 0;
	if (fl_read_file(prev_path, &text, &len))
		return fl_error_prefix(FL_EINPUT, "grade: --previous: ");
	struct fl_csv c;
	fl_csv_parse(text, len, &c);
	free(text);
	const char *file = fl_base_name(prev_path);
	int lc = -1, sc = -1;
	for (size_t k = 0; c.n && k < c.rows[0].n; k++) {
		if (lc < 0 && !strcmp(c.rows[0].f[k], "learner"))
			lc = (int)k;
		if (sc < 0 && !strcmp(c.rows[0].f[k], "score"))
			sc = (int)k;
	}
	if (lc < 0 || sc < 0) {
		fl_csv_release(&c);
		return fl_error(FL_EINPUT, "grade: --previous: gradebook '%s' line 1: expected a header with the columns "
				"learner and score (a gradebook written by grade --batch)", file);
	}
	struct fl_strmap old = {0};
	size_t bad = 0;
	for (size_t i = 1; i < c.n; i++) {
		const struct fl_csv_row *row = &c.rows[i];
		if (row->error || (size_t)lc >= row->n || !*row->f[lc]) {
			bad++;
			continue;
		}
		fl_strmap_put(&old, fl_csv_unguard(row->f[lc]), i);
	}
	struct fl_strmap now = {0};
	size_t up = 0, down = 0, other = 0;
	double maxd = 0;
	strbuf_adds(out, "learner,previous,current,change,note\r\n");
	for (size_t k = 0; k < r->n; k++) {
		fl_strmap_put(&now, res[k].learner, k);
		size_t oi = fl_strmap_get(&old, res[k].learner);
		double ov = 0, nv = res[k].score;
		int og = 0, ng = res[k].state == FL_GRADE_GRADED;
		const char *os = "";
		if (oi != (size_t)-1) {
			const struct fl_csv_row *row = &c.rows[oi];
			os = (size_t)sc < row->n ? row->f[sc] : "";
			og = parse_score(os, &ov);
		}
		char nb[64] = "", d[64] = "";
		if (ng)
			fmt(nb, sizeof(nb), nv);
		const char *note = NULL;
		if (oi == (size_t)-1)
			note = "new learner";
		else if (og && ng && fabs(nv - ov) > 1e-6) {
			fmt(d, sizeof(d), nv - ov);
			note = nv > ov ? "up" : "down";
			if (nv > ov)
				up++;
			else
				down++;
			maxd = fabs(nv - ov) > maxd ? fabs(nv - ov) : maxd;
		} else if (og && !ng)
			note = "now not graded";
		else if (!og && ng)
			note = "now graded";
		if (!note)
			continue;
		if (strcmp(note, "up") && strcmp(note, "down"))
			other++;
		fl_csv_field(out, res[k].learner);
		strbuf_adds(out, ",");
		fl_csv_field(out, og ? os : "");
		strbuf_addf(out, ",%s,%s%s,%s\r\n", nb, nv > ov && *d ? "+" : "", d, note);
	}
	size_t gone = 0;
	for (size_t i = 1; i < c.n; i++) {
		const struct fl_csv_row *row = &c.rows[i];
		if (row->error || (size_t)lc >= row->n || !*row->f[lc])
			continue;
		const char *id = fl_csv_unguard(row->f[lc]);
		if (fl_strmap_get(&now, id) != (size_t)-1 || fl_strmap_get(&old, id) != i)
			continue;
		gone++;
		fl_csv_field(out, id);
		strbuf_adds(out, ",");
		fl_csv_field(out, (size_t)sc < row->n ? row->f[sc] : "");
		strbuf_adds(out, ",,,not in this batch\r\n");
	}
	char md[64];
	fmt(md, sizeof(md), maxd);
	*changed = up + down + other + gone;
	strbuf_addf(txt, "regrade against '%s': %zu learners changed (%zu up, %zu down, largest change %s points; "
		    "%zu new, newly (not) graded or gone)", file, *changed, up, down, md, other + gone);
	if (bad)
		strbuf_addf(txt, "; %zu rows of the old gradebook not read", bad);
	strbuf_adds(txt, "\n");
	fl_strmap_release(&old);
	fl_strmap_release(&now);
	fl_csv_release(&c);
	return FL_OK;
}

/* ---- the batch ---- */

static char *path_in(const char *dir, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s/%s", dir, name);
	return sb.buf;
}

static enum fl_status write_atomic(const char *path, const struct strbuf *sb)
{
	if (fl_write_file_atomic(path, sb->buf ? sb->buf : "", sb->len))
		return fl_error_prefix(FL_EINPUT, "grade: ");
	return FL_OK;
}

enum fl_status fl_batch_run(const struct fl_roster *r, const struct fl_batch_opts *o, struct fl_batch_stats *bs)
{
	double t0 = now_s(), last = t0;
	memset(bs, 0, sizeof(*bs));
	const struct fl_report_format *f = o->format ? fl_report_format_find(o->format) : NULL;
	char *reports = o->out_dir ? path_in(o->out_dir, "reports") : NULL;
	enum fl_status st = FL_OK;
	struct key_cache *cache = calloc(1, sizeof(*cache));
	struct result *res = calloc(r->n ? r->n : 1, sizeof(*res));
	struct columns cs = {0};
	struct strbuf sb = STRBUF_INIT, path = STRBUF_INIT;
	if (!cache || !res)
		abort();
	if ((st = make_dir(o->out_dir)) || (f && (st = make_dir(reports))))
		goto out;
	for (size_t k = 0; k < r->n; k++) {
		const struct fl_roster_row *row = &r->rows[k];
		const struct fl_grade_key *key = cache_get(cache, row->truth, row->traces, o);
		struct fl_grade g;
		fl_grade_with(key, row->answer, &g);
		fl_error_clear();
		res[k].learner = row->learner;
		record(&res[k], &cs, &g);
		bs->graded += g.state == FL_GRADE_GRADED;
		bs->unparseable += g.state == FL_GRADE_UNPARSEABLE;
		bs->config_errors += g.state == FL_GRADE_CONFIG_ERROR || g.state == FL_GRADE_USAGE_ERROR;
		if (f) {
			strbuf_reset(&sb);
			f->write(&g, &sb);
			strbuf_reset(&path);
			strbuf_addf(&path, "%s/%s.%s", reports, row->learner, report_ext(o->format));
			st = write_plain(path.buf, sb.buf ? sb.buf : "", sb.len);
		}
		fl_grade_release(&g);
		if (st)
			goto out;
		double t = now_s();
		if (!o->quiet && (t - last > 2 || k + 1 == r->n) && r->n > 1) {
			double rate = (double)(k + 1) / (t - t0);
			fprintf(stderr, "grade: %zu of %zu answers (%.0f/s, ETA %.0f s)\n", k + 1, r->n, rate,
				(double)(r->n - k - 1) / rate);
			last = t;
		}
	}
	bs->learners = r->n;
	bs->bad_rows = r->n_bad;
	/* the gradebook */
	strbuf_reset(&sb);
	gradebook(r, res, &cs, &sb);
	char *gb = o->gradebook ? fl_xstrdup(o->gradebook) : path_in(o->out_dir, "gradebook.csv");
	st = write_atomic(gb, &sb);
	free(gb);
	if (st)
		goto out;
	/* the summary */
	struct strbuf txt = STRBUF_INIT;
	cJSON *json = cJSON_CreateObject();
	summary(r, res, &cs, bs, &txt, json);
	cJSON *bad = cJSON_AddArrayToObject(json, "roster_rows_not_used");
	if (r->n_bad)
		strbuf_addf(&txt, "roster rows not used (%zu):\n", r->n_bad);
	for (size_t i = 0; i < r->n_bad; i++) {
		char *c = fl_clean_text(r->bad[i], 400);
		if (i < 20)
			strbuf_addf(&txt, "  %s\n", c);
		cJSON_AddItemToArray(bad, cJSON_CreateString(c));
		free(c);
	}
	if (r->n_bad > 20)
		strbuf_addf(&txt, "  ... and %zu more (summary.json lists them all)\n", r->n_bad - 20);
	if (o->previous) {
		struct strbuf rg = STRBUF_INIT;
		if (!(st = regrade(o->previous, r, res, &rg, &txt, &bs->changed))) {
			char *p = path_in(o->out_dir, "regrade.csv");
			st = write_atomic(p, &rg);
			free(p);
			cJSON_AddNumberToObject(json, "regrade_changed", (double)bs->changed);
		}
		strbuf_release(&rg);
	}
	bs->elapsed_s = now_s() - t0;
	strbuf_addf(&txt, "graded in %.2f s (%.0f answers/s; %zu truths prepared)\n", bs->elapsed_s,
		    bs->elapsed_s > 0 ? (double)r->n / bs->elapsed_s : 0, cache->loads);
	if (!st) {
		char *p = path_in(o->out_dir, "summary.txt");
		st = write_atomic(p, &txt);
		free(p);
	}
	if (!st) {
		struct strbuf js = STRBUF_INIT;
		fl_json_print(&js, json);
		char *p = path_in(o->out_dir, "summary.json");
		st = write_atomic(p, &js);
		free(p);
		strbuf_release(&js);
	}
	if (!st)
		fwrite(txt.buf, 1, txt.len, stdout);
	cJSON_Delete(json);
	strbuf_release(&txt);
out:
	for (size_t k = 0; k < r->n; k++) {
		free(res[k].cells);
		free(res[k].message);
	}
	free(res);
	for (size_t i = 0; i < cs.n; i++) {
		free(cs.c[i].rubric);
		free(cs.c[i].id);
	}
	free(cs.c);
	cache_release(cache);
	free(cache);
	free(reports);
	strbuf_release(&sb);
	strbuf_release(&path);
	return st;
}
