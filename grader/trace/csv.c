/* csv.c — the streaming CSV reader: one buffer, unquoted records split in
 * place, quoted fields unescaped into a scratch buffer. */
#include "grader/trace/csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CSV_BUF (64u << 10) /* grows while one record fills it */

struct fl_csv {
	FILE *fp;
	char *path;
	char *buf;         /* [pos, len) is unread input */
	size_t pos, len, cap;
	int eof;
	long line;         /* lines consumed so far */
	size_t bytes;
	struct fl_csv_field *fields;
	size_t nfields_cap;
	char *scratch;     /* unquoted text of quoted fields */
	size_t scratch_cap;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort();
	return q;
}

enum fl_status fl_csv_open(const char *path, struct fl_csv **out)
{
	*out = NULL;
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return fl_error(FL_EINPUT, "cannot open '%s': %s", path, strerror(errno));
	struct fl_csv *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	c->fp = fp;
	c->path = strdup(path);
	c->cap = CSV_BUF;
	c->buf = xrealloc(NULL, c->cap);
	if (!c->path)
		abort();
	*out = c;
	return FL_OK;
}

void fl_csv_close(struct fl_csv *c)
{
	if (!c)
		return;
	fclose(c->fp);
	free(c->path);
	free(c->buf);
	free(c->fields);
	free(c->scratch);
	free(c);
}

size_t fl_csv_bytes(const struct fl_csv *c) { return c->bytes; }

/* Move the unread tail to the front and read more; grow when the buffer is
 * full of one record. Returns -1 on a read error, else the bytes added. */
static long refill(struct fl_csv *c)
{
	if (c->eof)
		return 0;
	if (c->pos > 0) {
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
	}
	if (c->len == c->cap) {
		c->cap *= 2;
		c->buf = xrealloc(c->buf, c->cap);
	}
	size_t got = fread(c->buf + c->len, 1, c->cap - c->len, c->fp);
	if (got == 0) {
		if (ferror(c->fp))
			return -1;
		c->eof = 1;
	}
	if (c->bytes == 0 && c->len == 0 && got >= 3 && !memcmp(c->buf, "\xEF\xBB\xBF", 3)) {
		memmove(c->buf, c->buf + 3, got - 3);
		got -= 3;
	}
	c->len += got;
	c->bytes += got;
	return (long)got;
}

static struct fl_csv_field *field_slot(struct fl_csv *c, size_t i)
{
	if (i >= c->nfields_cap) {
		c->nfields_cap = c->nfields_cap ? c->nfields_cap * 2 : 32;
		c->fields = xrealloc(c->fields, c->nfields_cap * sizeof(*c->fields));
	}
	return &c->fields[i];
}

/* Find the end of the record starting at pos: the index of its LF (or len at
 * end of file) honouring quotes; -1 when more input is needed. Sets *quoted
 * when a quote was seen and *nl to the newlines inside. */
static long record_end(const struct fl_csv *c, int *quoted, long *nl)
{
	const char *b = c->buf + c->pos, *e = c->buf + c->len;
	const char *lf = memchr(b, '\n', (size_t)(e - b));
	const char *q = memchr(b, '"', (size_t)((lf ? lf : e) - b));
	*quoted = 0;
	*nl = 0;
	if (!q)
		return lf ? (long)(lf - c->buf) : c->eof ? (long)c->len : -1;
	*quoted = 1;
	int in = 0;
	for (const char *p = b; p < e; p++) {
		if (*p == '"')
			in = !in; /* "" toggles twice */
		else if (*p == '\n') {
			if (!in)
				return (long)(p - c->buf);
			(*nl)++;
		}
	}
	return c->eof ? (long)c->len : -1;
}

int fl_csv_next(struct fl_csv *c, struct fl_csv_record *rec)
{
	for (;;) {
		int quoted;
		long nl, end;
		while ((end = record_end(c, &quoted, &nl)) < 0) {
			if (refill(c) < 0) {
				fl_error(FL_ERUNTIME, "cannot read '%s': %s", c->path, strerror(errno));
				return -FL_ERUNTIME;
			}
		}
		if (c->pos >= c->len && c->eof)
			return 0;
		const char *b = c->buf + c->pos, *e = c->buf + end;
		long start_line = c->line + 1;
		c->line += 1 + nl;
		c->pos = (size_t)end + (end < (long)c->len ? 1 : 0);
		if (e > b && e[-1] == '\r')
			e--;
		if (e == b)
			continue; /* blank line */
		memset(rec, 0, sizeof(*rec));
		rec->line = start_line;
		size_t n = 0;
		if (!quoted) {
			const char *p = b;
			for (;;) {
				const char *comma = memchr(p, ',', (size_t)(e - p));
				struct fl_csv_field *f = field_slot(c, n++);
				f->s = p;
				f->n = (size_t)((comma ? comma : e) - p);
				if (!comma)
					break;
				p = comma + 1;
			}
		} else {
			if (c->scratch_cap < (size_t)(e - b) + 1) {
				c->scratch_cap = (size_t)(e - b) + 1;
				c->scratch = xrealloc(c->scratch, c->scratch_cap);
			}
			char *o = c->scratch;
			const char *p = b;
			for (;;) {
				struct fl_csv_field *f = field_slot(c, n++);
				f->s = o;
				if (p < e && *p == '"') {
					p++;
					for (;;) {
						if (p >= e) {
							rec->bad_quote = 1;
							break;
						}
						if (*p == '"') {
							if (p + 1 < e && p[1] == '"') {
								*o++ = '"';
								p += 2;
								continue;
							}
							p++;
							break;
						}
						*o++ = *p++;
					}
				}
				while (p < e && *p != ',')
					*o++ = *p++;
				f->n = (size_t)(o - f->s);
				if (p >= e)
					break;
				p++; /* the comma */
			}
		}
		rec->f = c->fields;
		rec->n = n;
		return 1;
	}
}

int fl_csv_eq(const struct fl_csv_field *f, const char *s)
{
	size_t n = strlen(s);
	return f->n == n && memcmp(f->s, s, n) == 0;
}

void fl_csv_copy(const struct fl_csv_field *f, char *buf, size_t n)
{
	size_t k = f->n < n - 1 ? f->n : n - 1;
	memcpy(buf, f->s, k);
	buf[k] = '\0';
}
