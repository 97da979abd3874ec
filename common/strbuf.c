#include "common/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Length of a valid UTF-8 sequence at s (max n bytes), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80)
		return 1;
	if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; c &= 0x1F; }
	else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; c &= 0x0F; }
	else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; c &= 0x07; }
	else return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	return len;
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
			size_t l = utf8_len(p + i, n - i);
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
