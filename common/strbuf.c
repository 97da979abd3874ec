#include "common/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;
	if (need <= sb->alloc)
		return;
	size_t n = sb->alloc ? sb->alloc : 64;
	while (n < need)
		n *= 2;
	char *p = realloc(sb->buf, n);
	if (!p) {
		fputs("faultline: out of memory\n", stderr);
		abort();
	}
	sb->buf = p;
	sb->alloc = n;
}

void strbuf_add(struct strbuf *sb, const void *p, size_t n)
{
	strbuf_grow(sb, n);
	memcpy(sb->buf + sb->len, p, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void strbuf_adds(struct strbuf *sb, const char *s) { strbuf_add(sb, s, strlen(s)); }

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	strbuf_grow(sb, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

void strbuf_add_json_strn(struct strbuf *sb, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	strbuf_grow(sb, n + 2);
	sb->buf[sb->len++] = '"';
	size_t i = 0;
	while (i < n) {
		unsigned char c = p[i];
		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			size_t j = i;
			while (j < n && p[j] >= 0x20 && p[j] != '"' && p[j] != '\\' && p[j] < 0x80)
				j++;
			strbuf_add(sb, p + i, j - i);
			i = j;
			continue;
		}
		if (c >= 0x80) {
			size_t l = fl_utf8_seq(p + i, n - i, NULL);
			if (l) {
				strbuf_add(sb, p + i, l);
				i += l;
			} else {
				strbuf_adds(sb, "\\ufffd");
				i++;
			}
			continue;
		}
		switch (c) {
		case '"': strbuf_adds(sb, "\\\""); break;
		case '\\': strbuf_adds(sb, "\\\\"); break;
		case '\n': strbuf_adds(sb, "\\n"); break;
		case '\r': strbuf_adds(sb, "\\r"); break;
		case '\t': strbuf_adds(sb, "\\t"); break;
		case '\b': strbuf_adds(sb, "\\b"); break;
		case '\f': strbuf_adds(sb, "\\f"); break;
		default: strbuf_addf(sb, "\\u%04x", c); break;
		}
		i++;
	}
	strbuf_add(sb, "\"", 1);
}

void strbuf_add_json_str(struct strbuf *sb, const char *s)
{
	strbuf_add_json_strn(sb, s, strlen(s));
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
}

char *fl_xstrdup(const char *s)
{
	char *r = strdup(s ? s : "");
	if (!r)
		abort();
	return r;
}

void *fl_grow_one(void *p, size_t n, size_t size)
{
	if (n & (n - 1)) /* not a power of two: room left */
		return p;
	size_t cap = n ? 2 * n : 1;
	if (cap > SIZE_MAX / size)
		abort();
	void *q = realloc(p, cap * size);
	if (!q)
		abort();
	return q;
}

const char *fl_base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}
