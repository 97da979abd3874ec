/* batch_csv.c — the CSV reader and writer of batch grading, and the roster
 * (a CSV file, or a directory of answers) read with it. See batch.h. */
#include "grader/grading/batch.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/outfile.h"

#define CSV_MAX_FIELD 4096 /* characters of one field */
#define CSV_MAX_FIELDS 256 /* fields of one row */

/* ---- CSV ---- */

static void row_push(struct fl_csv_row *r, struct strbuf *f)
{
	if (r->n < CSV_MAX_FIELDS) {
		r->f = fl_grow_one(r->f, r->n, sizeof(char *));
		r->f[r->n++] = fl_xstrdup(f->buf ? f->buf : "");
	} else if (!r->error) {
		r->error = fl_xstrdup("more than 256 fields");
	}
	strbuf_reset(f);
}

static void row_error(struct fl_csv_row *r, const char *why)
{
	if (!r->error)
		r->error = fl_xstrdup(why);
}

static void csv_add_row(struct fl_csv *c, struct fl_csv_row *r)
{
	/* a blank line is one empty unquoted field: left out */
	int blank = !r->error && (r->n == 0 || (r->n == 1 && !*r->f[0]));
	if (blank) {
		for (size_t i = 0; i < r->n; i++)
			free(r->f[i]);
		free(r->f);
	} else {
		c->rows = fl_grow_one(c->rows, c->n, sizeof(*c->rows));
		c->rows[c->n++] = *r;
	}
	memset(r, 0, sizeof(*r));
}

void fl_csv_parse(const char *text, size_t len, struct fl_csv *out)
{
	memset(out, 0, sizeof(*out));
	size_t i = 0, line = 1;
	if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
		i = 3;
	struct strbuf f = STRBUF_INIT;
	struct fl_csv_row r = {.line = 1};
	int quoted = 0, was_quoted = 0, any = 0;
	while (i < len) {
		char ch = text[i];
		if (ch == '\0') {
			row_error(&r, "a NUL byte (not a text file?)");
			i++;
			continue;
		}
		if (quoted) {
			if (ch == '"') {
				if (i + 1 < len && text[i + 1] == '"') {
					strbuf_add(&f, "\"", 1);
					i += 2;
					continue;
				}
				quoted = 0;
				i++;
				continue;
			}
			if (ch == '\n' || (ch == '\r' && !(i + 1 < len && text[i + 1] == '\n')))
				line++;
			if (f.len < CSV_MAX_FIELD)
				strbuf_add(&f, &ch, 1);
			else
				row_error(&r, "a field longer than 4096 characters");
			i++;
			continue;
		}
		if (ch == '"' && !any) {
			/* a quote opens a field only at its start (spaces before it are dropped) */
			strbuf_reset(&f);
			quoted = was_quoted = any = 1;
			i++;
			continue;
		}
		if (ch == ',') {
			if (!was_quoted) { /* unquoted fields are trimmed */
				while (f.len && (f.buf[f.len - 1] == ' ' || f.buf[f.len - 1] == '\t'))
					f.buf[--f.len] = '\0';
			}
			row_push(&r, &f);
			was_quoted = any = 0;
			i++;
			continue;
		}
		if (ch == '\n' || ch == '\r') {
			if (!was_quoted)
				while (f.len && (f.buf[f.len - 1] == ' ' || f.buf[f.len - 1] == '\t'))
					f.buf[--f.len] = '\0';
			row_push(&r, &f);
			csv_add_row(out, &r);
			i += ch == '\r' && i + 1 < len && text[i + 1] == '\n' ? 2 : 1;
			line++;
			r.line = line;
			was_quoted = any = 0;
			continue;
		}
		if (was_quoted) {
			row_error(&r, "text after a closing quote (a quote inside a quoted field is written \"\")");
		} else if ((ch == ' ' || ch == '\t') && !any) {
			i++;
			continue;
		} else if (f.len < CSV_MAX_FIELD) {
			strbuf_add(&f, &ch, 1);
			any = 1;
		} else {
			row_error(&r, "a field longer than 4096 characters");
		}
		i++;
	}
	if (quoted)
		row_error(&r, "a quoted field is not closed");
	if (quoted || any || was_quoted || r.n || r.error) {
		if (!was_quoted)
			while (f.len && (f.buf[f.len - 1] == ' ' || f.buf[f.len - 1] == '\t'))
				f.buf[--f.len] = '\0';
		row_push(&r, &f);
		csv_add_row(out, &r);
	}
	free(r.f);
	strbuf_release(&f);
}

void fl_csv_release(struct fl_csv *c)
{
	for (size_t i = 0; i < c->n; i++) {
		for (size_t k = 0; k < c->rows[i].n; k++)
			free(c->rows[i].f[k]);
		free(c->rows[i].f);
		free(c->rows[i].error);
	}
	free(c->rows);
	memset(c, 0, sizeof(*c));
}

void fl_csv_field(struct strbuf *sb, const char *s)
{
	s = s ? s : "";
	int guard = strchr("=+-@\t\r", *s) && *s;
	/* a number such as -0.5 is not a formula */
	if (guard && (*s == '-' || *s == '+')) {
		char *end;
		strtod(s, &end);
		guard = end == s || *end;
	}
	/* a value that starts as a guarded field does ('=x, ''=x) reads back
	 * without one ' unless guarded too: written "''=x" */
	size_t q = strspn(s, "'");
	if (q && s[q] && strchr("=+-@\t\r", s[q]))
		guard = 1;
	/* the reader trims spaces and tabs around an unquoted field */
	size_t len = strlen(s);
	int quote = guard || strpbrk(s, ",\"\r\n") || *s == ' ' || (len && (s[len - 1] == ' ' || s[len - 1] == '\t'));
	if (!quote) {
		strbuf_adds(sb, s);
		return;
	}
	strbuf_adds(sb, "\"");
	if (guard)
		strbuf_adds(sb, "'");
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			strbuf_adds(sb, "\"\"");
		else
			strbuf_add(sb, p, 1);
	}
	strbuf_adds(sb, "\"");
}

const char *fl_csv_unguard(const char *s)
{
	size_t q = strspn(s, "'"); /* ' before a formula's first character (or before 'ed ones) */
	return q && s[q] && strchr("=+-@\t\r", s[q]) ? s + 1 : s;
}

/* ---- string map ---- */

static size_t hash_str(const char *s)
{
	size_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

size_t fl_strmap_get(const struct fl_strmap *m, const char *key)
{
	if (!m->cap)
		return (size_t)-1;
	for (size_t i = hash_str(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return (size_t)-1;
		if (!strcmp(m->keys[i], key))
			return m->vals[i];
	}
}

static void strmap_insert(struct fl_strmap *m, char *key, size_t val)
{
	size_t i = hash_str(key) & (m->cap - 1);
	while (m->keys[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = val;
}

int fl_strmap_put(struct fl_strmap *m, const char *key, size_t val)
{
	if (fl_strmap_get(m, key) != (size_t)-1)
		return 0;
	if ((m->n + 1) * 2 > m->cap) {
		struct fl_strmap g = {.cap = m->cap ? m->cap * 2 : 64};
		g.keys = calloc(g.cap, sizeof(char *));
		g.vals = calloc(g.cap, sizeof(size_t));
		if (!g.keys || !g.vals)
			abort();
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i])
				strmap_insert(&g, m->keys[i], m->vals[i]);
		g.n = m->n;
		free(m->keys);
		free(m->vals);
		*m = g;
	}
	strmap_insert(m, fl_xstrdup(key), val);
	m->n++;
	return 1;
}

void fl_strmap_release(struct fl_strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* ---- roster ---- */

int fl_learner_id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > 128 || id[0] == '.')
		return 0;
	for (const char *p = id; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-+@", *p))
			return 0;
	return 1;
}

static void add_bad(struct fl_roster *r, const char *file, size_t line, const char *fmt, const char *arg)
{
	char why[512], msg[1024];
	snprintf(why, sizeof(why), fmt, arg);
	if (line)
		snprintf(msg, sizeof(msg), "roster '%s' line %zu: %s", file, line, why);
	else
		snprintf(msg, sizeof(msg), "'%s': %s", file, why);
	r->bad = fl_grow_one(r->bad, r->n_bad, sizeof(char *));
	r->bad[r->n_bad++] = fl_xstrdup(msg);
}

/* dir/name, or name when it is absolute or dir is NULL */
static char *resolve(const char *dir, const char *name)
{
	if (!dir || name[0] == '/')
		return fl_xstrdup(name);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s/%s", dir, name);
	return sb.buf;
}

static char *seed_truth(const char *truths_dir, const char *seed)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s/seed-%s.truth.json", truths_dir, seed);
	return sb.buf;
}

static int all_digits(const char *s)
{
	if (!*s || strlen(s) > 19)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* learner ids seen so far, for the duplicate check */
static int has_learner(struct fl_strmap *seen, const char *id)
{
	return !fl_strmap_put(seen, id, 0);
}

enum col { C_LEARNER, C_ANSWER, C_TRUTH, C_SEED, C_TRACES, C_N };

static int column_of(const char *name)
{
	static const char *const names[C_N][7] = {
		{"learner", "id", "learner_id", "student", "student_id", "email", "sis_id"},
		{"answer", "answer_file", "submission", NULL},
		{"truth", "truth_file", NULL},
		{"seed", "variant_seed", "variant", NULL},
		{"traces", "traces_dir", "trace_dir", NULL},
	};
	for (int c = 0; c < C_N; c++)
		for (int k = 0; k < 7 && names[c][k]; k++)
			if (!strcasecmp(name, names[c][k]))
				return c;
	return -1;
}

static void add_row(struct fl_roster *r, const char *learner, char *answer, char *truth, char *traces, size_t line)
{
	r->rows = fl_grow_one(r->rows, r->n, sizeof(*r->rows));
	r->rows[r->n++] = (struct fl_roster_row){.learner = fl_xstrdup(learner), .answer = answer, .truth = truth,
						 .traces = traces, .line = line};
}

enum fl_status fl_roster_load(const char *path, const struct fl_roster_opts *o, struct fl_roster *r)
{
	memset(r, 0, sizeof(*r));
	char *text = NULL;
	size_t len = 0;
	if (fl_read_file(path, &text, &len))
		return fl_error_prefix(FL_EINPUT, "roster: ");
	const char *file = fl_base_name(path);
	char *dir = NULL;
	const char *slash = strrchr(path, '/');
	if (slash)
		dir = strndup(path, (size_t)(slash - path) ? (size_t)(slash - path) : 1);
	struct fl_csv c;
	fl_csv_parse(text, len, &c);
	free(text);
	int col[C_N] = {0, 1, 2, -1, -1};
	size_t first = 0;
	enum fl_status st = FL_OK;
	if (c.n && !c.rows[0].error) {
		int header = 0;
		for (size_t k = 0; k < c.rows[0].n; k++)
			header |= column_of(c.rows[0].f[k]) >= 0;
		if (header) {
			for (int k = 0; k < C_N; k++)
				col[k] = -1;
			for (size_t k = 0; k < c.rows[0].n; k++) {
				int cc = column_of(c.rows[0].f[k]);
				if (cc >= 0 && col[cc] < 0)
					col[cc] = (int)k;
			}
			first = 1;
			if (col[C_LEARNER] < 0 || col[C_ANSWER] < 0) {
				st = fl_error(FL_EINPUT, "roster '%s' line %zu: the header names no %s column, expected "
					      "learner,answer,truth (or seed)", file, c.rows[0].line,
					      col[C_LEARNER] < 0 ? "learner" : "answer");
				goto out;
			}
			if (col[C_TRUTH] < 0 && col[C_SEED] < 0 && !o->truth) {
				st = fl_error(FL_EINPUT, "roster '%s' line %zu: the header names neither a truth nor a seed "
					      "column, and no --truth was given for every learner", file, c.rows[0].line);
				goto out;
			}
		}
	}
	struct fl_strmap seen = {0};
	char *truths_dir = o->truths_dir ? fl_xstrdup(o->truths_dir) : resolve(dir, "truths");
	for (size_t i = first; i < c.n; i++) {
		const struct fl_csv_row *row = &c.rows[i];
		r->lines++;
		if (row->error) {
			add_bad(r, file, row->line, "%s", row->error);
			continue;
		}
		const char *v[C_N];
		for (int k = 0; k < C_N; k++)
			v[k] = col[k] >= 0 && (size_t)col[k] < row->n ? row->f[col[k]] : "";
		if (!*v[C_LEARNER]) {
			add_bad(r, file, row->line, "%s", "no learner id");
			continue;
		}
		if (!fl_learner_id_ok(v[C_LEARNER])) {
			add_bad(r, file, row->line, "learner id '%.80s' is not usable as a file name (letters, digits and "
				". _ - + @, at most 128, not starting with '.')", v[C_LEARNER]);
			continue;
		}
		if (has_learner(&seen, v[C_LEARNER])) {
			add_bad(r, file, row->line, "learner '%s' is listed again (the first row is graded)", v[C_LEARNER]);
			continue;
		}
		if (!*v[C_ANSWER]) {
			add_bad(r, file, row->line, "learner '%s': no answer file", v[C_LEARNER]);
			continue;
		}
		char *truth = NULL;
		const char *t = v[C_TRUTH], *s = v[C_SEED];
		if (!first && *t && all_digits(t)) { /* no header: the third column is a truth or a seed */
			s = t;
			t = "";
		}
		if (*t) {
			truth = resolve(dir, t);
		} else if (*s) {
			if (!all_digits(s)) {
				add_bad(r, file, row->line, "seed '%.40s' is not a whole number", s);
				continue;
			}
			truth = seed_truth(truths_dir, s);
		} else if (o->truth) {
			truth = fl_xstrdup(o->truth);
		} else {
			add_bad(r, file, row->line, "learner '%s': no truth file or seed (and no --truth)", v[C_LEARNER]);
			continue;
		}
		add_row(r, v[C_LEARNER], resolve(dir, v[C_ANSWER]), truth, *v[C_TRACES] ? resolve(dir, v[C_TRACES]) : NULL,
			row->line);
	}
	free(truths_dir);
	fl_strmap_release(&seen);
	if (!r->n && !r->n_bad)
		st = fl_error(FL_EINPUT, "roster '%s': no learners (expected a header learner,answer,truth and one row "
			      "per learner)", file);
out:
	fl_csv_release(&c);
	free(dir);
	return st;
}

enum fl_status fl_roster_learners_load(const char *path, struct fl_roster *r)
{
	memset(r, 0, sizeof(*r));
	char *text = NULL;
	size_t len = 0;
	if (fl_read_file(path, &text, &len))
		return fl_error_prefix(FL_EINPUT, "roster: ");
	const char *file = fl_base_name(path);
	struct fl_csv c;
	fl_csv_parse(text, len, &c);
	free(text);
	int col = 0;
	size_t first = 0;
	if (c.n && !c.rows[0].error) {
		int header = 0;
		for (size_t k = 0; k < c.rows[0].n; k++)
			header |= column_of(c.rows[0].f[k]) >= 0;
		if (header) {
			col = -1;
			for (size_t k = 0; k < c.rows[0].n && col < 0; k++)
				if (column_of(c.rows[0].f[k]) == C_LEARNER)
					col = (int)k;
			first = 1;
			if (col < 0) {
				enum fl_status st = fl_error(FL_EINPUT, "roster '%s' line %zu: the header names no learner column, "
							     "expected learner (or id, student, email ...)", file, c.rows[0].line);
				fl_csv_release(&c);
				return st;
			}
		}
	}
	struct fl_strmap seen = {0};
	for (size_t i = first; i < c.n; i++) {
		const struct fl_csv_row *row = &c.rows[i];
		r->lines++;
		if (row->error) {
			add_bad(r, file, row->line, "%s", row->error);
			continue;
		}
		const char *id = (size_t)col < row->n ? row->f[col] : "";
		if (!*id) {
			add_bad(r, file, row->line, "%s", "no learner id");
			continue;
		}
		if (!fl_learner_id_ok(id)) {
			add_bad(r, file, row->line, "learner id '%.80s' is not usable as a file name (letters, digits and "
				". _ - + @, at most 128, not starting with '.')", id);
			continue;
		}
		if (has_learner(&seen, id)) {
			add_bad(r, file, row->line, "learner '%s' is listed again", id);
			continue;
		}
		add_row(r, id, NULL, NULL, NULL, row->line);
	}
	fl_strmap_release(&seen);
	fl_csv_release(&c);
	if (!r->n && !r->n_bad)
		return fl_error(FL_EINPUT, "roster '%s': no learners (expected a header 'learner' and one row per learner)",
				file);
	return FL_OK;
}

static int cmp_row(const void *a, const void *b)
{
	return strcmp(((const struct fl_roster_row *)a)->learner, ((const struct fl_roster_row *)b)->learner);
}

enum fl_status fl_roster_from_dirs(const char *answers_dir, const struct fl_roster_opts *o, struct fl_roster *r)
{
	memset(r, 0, sizeof(*r));
	if (!o->truths_dir && !o->truth)
		return fl_error(FL_EINPUT, "grade: --answers DIR needs --truths DIR (ID.truth.json per learner) or --truth FILE");
	DIR *d = opendir(answers_dir);
	if (!d)
		return fl_error(FL_EINPUT, "grade: --answers: cannot open directory '%s': %s", answers_dir, strerror(errno));
	struct dirent *e;
	struct fl_strmap seen = {0};
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *path = resolve(answers_dir, e->d_name);
		struct stat sb;
		if (stat(path, &sb) || !S_ISREG(sb.st_mode)) {
			free(path);
			continue;
		}
		char *id = fl_xstrdup(e->d_name);
		char *dot = strchr(id, '.');
		if (dot)
			*dot = '\0';
		if (!fl_learner_id_ok(id)) {
			add_bad(r, answers_dir, 0, "file '%.80s': its name does not start with a usable learner id", e->d_name);
			free(id);
			free(path);
			continue;
		}
		if (has_learner(&seen, id)) {
			add_bad(r, answers_dir, 0, "file '%.80s': a second answer of the same learner", e->d_name);
			free(id);
			free(path);
			continue;
		}
		char *truth;
		if (o->truths_dir) {
			struct strbuf t = STRBUF_INIT;
			strbuf_addf(&t, "%s/%s.truth.json", o->truths_dir, id);
			truth = t.buf;
			if (o->truth && stat(truth, &sb)) {
				free(truth);
				truth = fl_xstrdup(o->truth);
			}
		} else {
			truth = fl_xstrdup(o->truth);
		}
		add_row(r, id, path, truth, NULL, 0);
		free(id);
	}
	closedir(d);
	fl_strmap_release(&seen);
	qsort(r->rows, r->n, sizeof(*r->rows), cmp_row);
	r->lines = r->n + r->n_bad;
	if (!r->n && !r->n_bad)
		return fl_error(FL_EINPUT, "grade: --answers: no answer files in '%s'", answers_dir);
	return FL_OK;
}

void fl_roster_release(struct fl_roster *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->rows[i].learner);
		free(r->rows[i].answer);
		free(r->rows[i].truth);
		free(r->rows[i].traces);
	}
	free(r->rows);
	for (size_t i = 0; i < r->n_bad; i++)
		free(r->bad[i]);
	free(r->bad);
	memset(r, 0, sizeof(*r));
}
