/* text.c — normalising, searching, cleaning and formatting text for the
 * grader (grader/grading/text.h). */
#include "grader/grading/text.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/utf8.h"

/* ---- text ---- */

static int is_loose_punct(unsigned char c)
{
	return c && strchr(".,;:!?()[]{}\"'`/\\|*+=<>", c) != NULL;
}

char *fl_norm(const char *s, int loose)
{
	size_t n = strlen(s);
	char *out = malloc(n * 2 + 1);
	if (!out)
		abort();
	size_t k = 0;
	int space = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		int sep = c == '-' || c == '_' || isspace(c) || (loose && is_loose_punct(c));
		if (c == 0xC2 && (unsigned char)s[i + 1] == 0xA0) { /* no-break space */
			sep = 1;
			i++;
		}
		if (sep) {
			space = k > 0;
			continue;
		}
		if (space) {
			out[k++] = ' ';
			space = 0;
		}
		if (c == 0xC2 && (unsigned char)s[i + 1] == 0xB5) { /* micro sign -> Greek mu */
			out[k++] = (char)0xCE;
			out[k++] = (char)0xBC;
			i++;
			continue;
		}
		out[k++] = (char)(c < 0x80 ? tolower(c) : c);
	}
	out[k] = '\0';
	return out;
}

char *fl_norm_key(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(n + 1);
	if (!out)
		abort();
	size_t k = 0;
	int sep = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (isalnum(c) && c < 0x80) {
			if (sep && k)
				out[k++] = '_';
			sep = 0;
			out[k++] = (char)tolower(c);
		} else {
			sep = 1;
		}
	}
	out[k] = '\0';
	return out;
}

long fl_find_phrase(const char *hay, const char *needle, size_t from)
{
	size_t nl = strlen(needle), hl = strlen(hay);
	if (!nl || from > hl)
		return -1;
	for (const char *p = hay + from; (p = strstr(p, needle)) != NULL; p++) {
		int left = p == hay || p[-1] == ' ';
		int right = p[nl] == '\0' || p[nl] == ' ';
		if (left && right)
			return (long)(p - hay);
	}
	return -1;
}

int fl_utf8_valid(const char *s, size_t n, size_t *bad_at)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	unsigned cp;
	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		size_t l = fl_utf8_seq(p + i, n - i, &cp);
		if (!l) {
			if (bad_at)
				*bad_at = i;
			return 0;
		}
		i += l;
	}
	return 1;
}

char *fl_clean_text(const char *s, size_t max)
{
	struct strbuf sb = STRBUF_INIT;
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p), i = 0;
	strbuf_grow(&sb, n < max ? n : max);
	while (i < n) {
		unsigned cp = 0;
		size_t l = fl_utf8_seq(p + i, n - i, &cp);
		if (sb.len + (l ? l : 3) > max) {
			strbuf_adds(&sb, "...");
			break;
		}
		if (!l) {
			strbuf_adds(&sb, "\xef\xbf\xbd");
			i++;
			continue;
		}
		if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0))
			strbuf_add(&sb, " ", 1);
		else if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || /* bidi overrides */
			 cp == 0xFFFE || cp == 0xFFFF)                                       /* not XML characters */
			strbuf_adds(&sb, "\xef\xbf\xbd");
		else
			strbuf_add(&sb, p + i, l);
		i += l;
	}
	strbuf_add(&sb, "", 0); /* terminated even when nothing was added */
	return sb.buf;
}

void fl_fmt_num(char *buf, size_t n, double v)
{
	if (!isfinite(v)) {
		snprintf(buf, n, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
		return;
	}
	double a = fabs(v);
	if (a == 0 || (a >= 1e-6 && a < 1e15)) { /* fixed notation, fewest decimals that read back */
		for (int d = 0; d <= 10; d++) {
			snprintf(buf, n, "%.*f", d, v);
			double back = strtod(buf, NULL);
			int sig = 0; /* significant digits so far */
			for (const char *p = buf; *p; p++)
				sig += isdigit((unsigned char)*p) && (sig || *p != '0');
			if (fabs(back - v) <= 1e-9 * a || sig >= 10)
				return;
		}
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		double back = strtod(buf, NULL);
		if (prec >= 10 || fabs(back - v) <= 1e-9 * a)
			return;
	}
}
