/* trace_lex.h — the JSON lexer of the streaming trace reader (private to
 * grader/trace: included only by the reader's .c files, trace_stream.c and
 * trace_meta.c, after trace_stream_internal.h).
 *
 * Whitespace, strings (scanned, validated, decoded to valid UTF-8), numbers
 * (NaN and Infinity as Python reads them), keys (with the HTA rank check),
 * integers, and any value checked and skipped. Every function works on the
 * parser's buffer, whose NUL sentinel and padding stop every scan (see
 * trace_stream_internal.h), and returns P_OK, P_MORE or P_ERR (bad()).
 *
 * The functions are defined here, not in a .c of their own, because they are
 * the reader's hot path: each .c that includes this header gets its own copy
 * the compiler can inline. They keep the `static` / `static inline` each had
 * when they lived in trace_stream.c (`inline` changes what GCC chooses to
 * inline, and the reader was measured as it is). A file including this
 * header uses them all (trace_meta.c does, through parse_key, int_value,
 * parse_number and skip_value), else -Wunused-function says so.
 */
#ifndef FL_TRACE_LEX_H
#define FL_TRACE_LEX_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "grader/trace/trace_stream_internal.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_DEPTH 1000 /* nesting, as Python's json (recursion limit) */

static int bad(struct parser *ps, const uint8_t *at, const char *expected)
{
	if (at >= ps->buf + ps->end)
		return P_MORE;
	ps->err_at = at;
	ps->err_expected = expected;
	return P_ERR;
}

static inline const uint8_t *skip_ws(const uint8_t *p)
{
	if (*p > ' ') /* the usual cases: no space, or one */
		return p;
	if (*p == ' ' && p[1] > ' ')
		return p + 1;
	while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
		p++;
	return p;
}

static inline const uint8_t *find_special(const uint8_t *p)
{
#ifdef __SSE2__
	const __m128i q = _mm_set1_epi8('"'), b = _mm_set1_epi8('\\'), c = _mm_set1_epi8(0x1f);
	for (;;) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, b)),
					 _mm_cmpeq_epi8(_mm_max_epu8(v, c), c));
		unsigned mask = (unsigned)_mm_movemask_epi8(m);
		if (mask)
			return p + __builtin_ctz(mask);
		p += 16;
	}
#else
	while (*p != '"' && *p != '\\' && *p >= 0x20)
		p++;
	return p;
#endif
}

static inline int is_hex(uint8_t c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* *pp: just after the opening quote. On P_OK *pp is at the closing quote and
 * *esc says whether escapes occurred. Escapes are validated here. */
static int scan_str(struct parser *ps, const uint8_t **pp, int *esc)
{
	const uint8_t *p = *pp;
	for (;;) {
		p = find_special(p);
		if (*p == '"') {
			*pp = p;
			return P_OK;
		}
		if (*p == '\\') {
			*esc = 1;
			uint8_t c = p[1];
			if (c == 'u') {
				for (int i = 2; i < 6; i++)
					if (!is_hex(p[i]))
						return bad(ps, p + i, "4 hex digits after \\u");
				p += 6;
			} else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
				   c == 't') {
				p += 2;
			} else {
				return bad(ps, p + 1, "an escape (one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
			}
			continue;
		}
		return bad(ps, p, "'\"' to end the string (control characters must be escaped)");
	}
}

static void scratch_need(struct scratch *s, size_t n)
{
	if (n > s->cap) {
		s->cap = n > 2 * s->cap ? n : 2 * s->cap;
		s->p = xrealloc(s->p, s->cap);
	}
}

static unsigned hexval(uint8_t c) { return c <= '9' ? (unsigned)(c - '0') : (unsigned)((c | 0x20) - 'a' + 10); }

static size_t put_utf8(uint8_t *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (uint8_t)(0xc0 | (cp >> 6));
		o[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (uint8_t)(0xe0 | (cp >> 12));
		o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (uint8_t)(0xf0 | (cp >> 18));
	o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

static int utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (i + 8 <= n) {
			uint64_t w;
			memcpy(&w, s + i, 8);
			if (!(w & 0x8080808080808080ull)) {
				i += 8;
				continue;
			}
		}
		size_t k = fl_utf8_seq(s + i, n - i, NULL);
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

/* The string between s and e (the raw bytes inside the quotes), decoded and
 * made valid UTF-8. The result points into the buffer or into a scratch. */
static void decode_str(struct parser *ps, const uint8_t *s, const uint8_t *e, int esc, const uint8_t **out,
		       size_t *outlen)
{
	size_t n = (size_t)(e - s);
	if (esc) {
		scratch_need(&ps->s1, n + 1);
		uint8_t *o = ps->s1.p;
		const uint8_t *p = s;
		while (p < e) {
			if (*p != '\\') {
				*o++ = *p++;
				continue;
			}
			uint8_t c = p[1];
			p += 2;
			switch (c) {
			case 'b': *o++ = '\b'; break;
			case 'f': *o++ = '\f'; break;
			case 'n': *o++ = '\n'; break;
			case 'r': *o++ = '\r'; break;
			case 't': *o++ = '\t'; break;
			case 'u': {
				uint32_t cp = hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]);
				p += 4;
				if (cp >= 0xd800 && cp <= 0xdbff && p + 6 <= e && p[0] == '\\' && p[1] == 'u') {
					uint32_t lo = hexval(p[2]) << 12 | hexval(p[3]) << 8 | hexval(p[4]) << 4 | hexval(p[5]);
					if (lo >= 0xdc00 && lo <= 0xdfff) {
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
						p += 6;
					}
				}
				if (cp >= 0xd800 && cp <= 0xdfff) {
					cp = 0xfffd; /* a lone surrogate cannot be UTF-8 */
					ps->bad_utf8 = 1;
				}
				o += put_utf8(o, cp);
				break;
			}
			default: *o++ = c; break; /* " \ / */
			}
		}
		s = ps->s1.p;
		n = (size_t)(o - ps->s1.p);
	}
	if (utf8_valid(s, n)) {
		*out = s;
		*outlen = n;
		return;
	}
	ps->bad_utf8 = 1;
	scratch_need(&ps->s2, 3 * n + 1);
	uint8_t *o = ps->s2.p;
	size_t i = 0;
	while (i < n) {
		size_t k = fl_utf8_seq(s + i, n - i, NULL);
		if (k) {
			memcpy(o, s + i, k);
			o += k;
			i += k;
		} else {
			o += put_utf8(o, 0xfffd); /* one per invalid byte */
			i++;
		}
	}
	*out = ps->s2.p;
	*outlen = (size_t)(o - ps->s2.p);
}

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
				       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int match_word(struct parser *ps, const uint8_t **pp, const char *w)
{
	const uint8_t *p = *pp;
	for (; *w; w++, p++)
		if (*p != (uint8_t)*w)
			return bad(ps, p, "a value");
	*pp = p;
	return P_OK;
}

/* A JSON number (or NaN, Infinity, -Infinity, as Python reads them), checked
 * and measured; its value is computed only when wanted. */
struct numtok {
	const uint8_t *start, *end;
	uint64_t m;      /* the digits (integer and fraction), valid when nd <= 19 */
	int nd, nf;      /* digits in all, digits of the fraction */
	int64_t exp;     /* the written exponent */
	int neg, special; /* special: 1 NaN, 2 Infinity */
	int isf;          /* a fraction, an exponent, NaN or Infinity */
};

/* A run of decimal digits at p, eight at a time (SWAR; reads up to 8 bytes
 * ahead: the buffer is padded and ends in NUL, which is no digit). Adds the
 * digits to *m (modulo 2^64: only runs of <= 19 digits are used as values)
 * and returns the end of the run. */
static inline const uint8_t *digit_run(const uint8_t *p, uint64_t *m)
{
	uint64_t acc = *m;
	for (;;) {
		uint64_t w;
		memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		uint64_t t = w - 0x3030303030303030ull;
		uint64_t nd = (t | (t + 0x7676767676767676ull)) & 0x8080808080808080ull; /* bytes that are no digit */
		if (!nd) { /* eight digits */
			t = (t * 10 + (t >> 8)) & 0x00ff00ff00ff00ffull;
			t = (t * 100 + (t >> 16)) & 0x0000ffff0000ffffull;
			t = (t * 10000 + (t >> 32)) & 0xffffffffull;
			acc = acc * 100000000u + t;
			p += 8;
			continue;
		}
		int k = __builtin_ctzll(nd) / 8; /* digits before the first non-digit */
		if (k) { /* as eight digits with leading zeros */
			static const uint64_t p10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
			t <<= 8 * (8 - k);
			t = (t * 10 + (t >> 8)) & 0x00ff00ff00ff00ffull;
			t = (t * 100 + (t >> 16)) & 0x0000ffff0000ffffull;
			t = (t * 10000 + (t >> 32)) & 0xffffffffull;
			acc = acc * p10[k] + t;
		}
		*m = acc;
		return p + k;
#else
		(void)w;
		while (*p >= '0' && *p <= '9')
			acc = acc * 10 + (uint64_t)(*p++ - '0');
		*m = acc;
		return p;
#endif
	}
}

static int scan_number(struct parser *ps, const uint8_t **pp, struct numtok *t)
{
	const uint8_t *p = *pp;
	uint64_t m = 0;
	t->start = p;
	t->neg = t->special = t->isf = 0;
	t->nf = 0;
	t->exp = 0;
	if (*p == '-') {
		t->neg = 1;
		p++;
	}
	const uint8_t *d0 = p;
	if (*p == '0') {
		p++;
	} else if (*p >= '1' && *p <= '9') {
		p = digit_run(p, &m);
	} else if (*p == 'I' || (*p == 'N' && !t->neg)) {
		int r = match_word(ps, &p, *p == 'I' ? "Infinity" : "NaN");
		if (r)
			return r;
		t->special = *d0 == 'N' ? 1 : 2;
		t->isf = 1;
		t->nd = 0;
		goto done;
	} else {
		return bad(ps, p, "a digit");
	}
	t->nd = (int)(p - d0 < 1000 ? p - d0 : 1000);
	if (*p == '.') {
		t->isf = 1;
		const uint8_t *f0 = ++p;
		if (!(*p >= '0' && *p <= '9'))
			return bad(ps, p, "a digit after '.'");
		p = digit_run(p, &m);
		t->nf = (int)(p - f0 < 1000000 ? p - f0 : 1000000);
		t->nd += t->nf;
	}
	if (*p == 'e' || *p == 'E') {
		t->isf = 1;
		p++;
		int eneg = 0;
		if (*p == '+' || *p == '-')
			eneg = *p++ == '-';
		if (!(*p >= '0' && *p <= '9'))
			return bad(ps, p, "a digit in the exponent");
		int64_t x = 0;
		while (*p >= '0' && *p <= '9') {
			if (x < 100000000)
				x = x * 10 + (*p - '0');
			p++;
		}
		t->exp = eneg ? -x : x;
	}
done:
	if (p >= ps->buf + ps->end)
		return P_MORE; /* the number may go on in the next bytes */
	t->m = m;
	t->end = p;
	*pp = p;
	return P_OK;
}

/* The value, correctly rounded (exact arithmetic when the digits and the
 * power of ten are exact doubles, else strtod). */
static double number_value(const struct numtok *t)
{
	if (t->special)
		return t->special == 1 ? NAN : t->neg ? -INFINITY : INFINITY;
	int64_t e = t->exp - t->nf;
	double d;
	if (t->nd <= 19 && t->m <= (1ull << 53) && e >= -22 && e <= 22) {
		d = (double)t->m;
		if (e > 0)
			d *= pow10_exact[e];
		else if (e < 0)
			d /= pow10_exact[-e];
		return t->neg ? -d : d;
	}
	char tmp[128];
	size_t n = (size_t)(t->end - t->start);
	char *s = n < sizeof(tmp) ? tmp : xrealloc(NULL, n + 1);
	memcpy(s, t->start, n);
	s[n] = '\0';
	d = strtod(s, NULL);
	if (s != tmp)
		free(s);
	return d;
}

static int parse_number(struct parser *ps, const uint8_t **pp, double *out, int *isf)
{
	struct numtok t;
	int r = scan_number(ps, pp, &t);
	if (r)
		return r;
	*out = number_value(&t);
	*isf = t.isf;
	return P_OK;
}

/* HTA finds the rank with the regex `"rank":\s+(\d+)` applied line by line.
 * k/klen: the raw bytes of a key; after: just past its closing quote. */
static int check_rank(struct parser *ps, const uint8_t *k, size_t klen, const uint8_t *after)
{
	if (!((klen == 4 && !memcmp(k, "rank", 4)) || (klen > 5 && !memcmp(k + klen - 5, "\"rank", 5))))
		return P_OK;
	if (*after != ':')
		return P_OK;
	const uint8_t *p = after + 1;
	int nws = 0;
	for (; *p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'; p++) {
		if (*p == '\n' || (*p == '\r' && !ps->info.gzip))
			return P_OK; /* HTA reads one line at a time */
		nws++;
	}
	if (!nws || !(*p >= '0' && *p <= '9'))
		return *p == 0 && p >= ps->buf + ps->end ? P_MORE : P_OK;
	long long v = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		if (v < 1000000000000000000ll / 10)
			v = v * 10 + (*p - '0');
	if (p >= ps->buf + ps->end)
		return P_MORE;
	ps->info.has_hta_rank = 1;
	ps->info.hta_rank = v;
	ps->rank_done = 1;
	return P_OK;
}

/* A key at *pp (the opening quote), through the ':' and the whitespace after
 * it. k, klen: the decoded key (in the buffer or scratch s1). */
static int parse_key(struct parser *ps, const uint8_t **pp, const uint8_t **k, size_t *klen)
{
	const uint8_t *p = *pp;
	if (*p != '"')
		return bad(ps, p, "a key (a string in double quotes)");
	const uint8_t *s = ++p;
	int esc = 0, r = scan_str(ps, &p, &esc);
	if (r)
		return r;
	if (!ps->rank_done && (r = check_rank(ps, s, (size_t)(p - s), p + 1)))
		return r;
	if (ps->info.rank_text_at < 0 && p - s == 4 && !memcmp(s, "rank", 4)) {
		if (p + 2 >= ps->buf + ps->end)
			return P_MORE;
		if (p[1] == ':' && p[2] == ' ')
			ps->info.rank_text_at = (long long)(ps->base + (uint64_t)(s - 1 - ps->buf));
	}
	if (esc) {
		decode_str(ps, s, p, esc, k, klen);
	} else {
		*k = s;
		*klen = (size_t)(p - s);
	}
	p = skip_ws(p + 1);
	if (*p != ':')
		return bad(ps, p, "':' after the key");
	*pp = skip_ws(p + 1);
	return P_OK;
}

/* Any value, checked and skipped. */
static int skip_value(struct parser *ps, const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint8_t stack[MAX_DEPTH]; /* 1: object, 0: array */
	int depth = 0, r, esc;
	struct numtok nt;
	const uint8_t *k;
	size_t kl;
value:
	switch (*p) {
	case '{':
		p = skip_ws(p + 1);
		if (*p == '}') {
			p++;
			goto after;
		}
		if (depth == MAX_DEPTH)
			return bad(ps, p, "less deeply nested values (1000 levels at most)");
		stack[depth++] = 1;
		goto key;
	case '[':
		p = skip_ws(p + 1);
		if (*p == ']') {
			p++;
			goto after;
		}
		if (depth == MAX_DEPTH)
			return bad(ps, p, "less deeply nested values (1000 levels at most)");
		stack[depth++] = 0;
		goto value;
	case '"':
		p++;
		esc = 0;
		if ((r = scan_str(ps, &p, &esc)))
			return r;
		p++;
		goto after;
	case 't':
		if ((r = match_word(ps, &p, "true")))
			return r;
		goto after;
	case 'f':
		if ((r = match_word(ps, &p, "false")))
			return r;
		goto after;
	case 'n':
		if ((r = match_word(ps, &p, "null")))
			return r;
		goto after;
	default:
		if ((r = scan_number(ps, &p, &nt)))
			return r == P_ERR && ps->err_at == p ? bad(ps, p, "a value") : r;
		goto after;
	}
key:
	if ((r = parse_key(ps, &p, &k, &kl)))
		return r;
	goto value;
after:
	if (!depth) {
		*pp = p;
		return P_OK;
	}
	p = skip_ws(p);
	if (*p == ',') {
		p = skip_ws(p + 1);
		if (stack[depth - 1])
			goto key;
		goto value;
	}
	if (*p == (stack[depth - 1] ? '}' : ']')) {
		p++;
		depth--;
		goto after;
	}
	return bad(ps, p, stack[depth - 1] ? "',' or '}' in an object" : "',' or ']' in an array");
}

/* An integer argument (correlation, External id, device, bytes): a number,
 * truncated; anything else is skipped and counts as absent. */
static int int_value(struct parser *ps, const uint8_t **pp, int64_t *out, int *has)
{
	const uint8_t *p = *pp;
	if (*p == '-' || (*p >= '0' && *p <= '9') || *p == 'N' || *p == 'I') {
		struct numtok t;
		int r = scan_number(ps, &p, &t);
		if (r)
			return r;
		*pp = p;
		if (!t.isf && t.nd <= 18) {
			*out = t.neg ? -(int64_t)t.m : (int64_t)t.m;
			*has = 1;
			return P_OK;
		}
		double d = number_value(&t);
		if (d == d && d > -9.2e18 && d < 9.2e18) {
			*out = (int64_t)d;
			*has = 1;
		}
		return P_OK;
	}
	return skip_value(ps, pp);
}

#endif
