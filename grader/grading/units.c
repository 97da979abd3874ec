#include "grader/grading/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/utf8.h"

/* ---- quantities ----
 *
 * The reader works on a lowercase copy of the text (ASCII folded, other bytes
 * kept), at most FL_QTY_MAX_LEN bytes, in one left-to-right pass: no
 * recursion, no regular expressions, every loop bounded by the text. */

struct unit_word {
	const char *word; /* lowercase */
	enum fl_qty_dim dim;
	double seconds;
	const char *canonical;
};

static const struct unit_word unit_words[] = {
	{"ns", FL_QTY_TIME, 1e-9, "ns"},
	{"nsec", FL_QTY_TIME, 1e-9, "ns"},
	{"nanosecond", FL_QTY_TIME, 1e-9, "ns"},
	{"nanoseconds", FL_QTY_TIME, 1e-9, "ns"},
	{"us", FL_QTY_TIME, 1e-6, "us"},
	{"\xc2\xb5s", FL_QTY_TIME, 1e-6, "us"}, /* micro sign */
	{"\xce\xbcs", FL_QTY_TIME, 1e-6, "us"}, /* Greek mu */
	{"usec", FL_QTY_TIME, 1e-6, "us"},
	{"usecs", FL_QTY_TIME, 1e-6, "us"},
	{"\xc2\xb5sec", FL_QTY_TIME, 1e-6, "us"},
	{"\xce\xbcsec", FL_QTY_TIME, 1e-6, "us"},
	{"microsecond", FL_QTY_TIME, 1e-6, "us"},
	{"microseconds", FL_QTY_TIME, 1e-6, "us"},
	{"ms", FL_QTY_TIME, 1e-3, "ms"},
	{"msec", FL_QTY_TIME, 1e-3, "ms"},
	{"msecs", FL_QTY_TIME, 1e-3, "ms"},
	{"millisecond", FL_QTY_TIME, 1e-3, "ms"},
	{"milliseconds", FL_QTY_TIME, 1e-3, "ms"},
	{"millis", FL_QTY_TIME, 1e-3, "ms"},
	{"s", FL_QTY_TIME, 1, "s"},
	{"sec", FL_QTY_TIME, 1, "s"},
	{"secs", FL_QTY_TIME, 1, "s"},
	{"second", FL_QTY_TIME, 1, "s"},
	{"seconds", FL_QTY_TIME, 1, "s"},
	{"min", FL_QTY_TIME, 60, "min"},
	{"mins", FL_QTY_TIME, 60, "min"},
	{"minute", FL_QTY_TIME, 60, "min"},
	{"minutes", FL_QTY_TIME, 60, "min"},
	{"x", FL_QTY_FACTOR, 0, "x"},
	{"\xc3\x97", FL_QTY_FACTOR, 0, "x"}, /* multiplication sign */
	{"times", FL_QTY_FACTOR, 0, "x"},
	{"fold", FL_QTY_FACTOR, 0, "x"},
	{"-fold", FL_QTY_FACTOR, 0, "x"},
	{"%", FL_QTY_PERCENT, 0, "%"},
	{"percent", FL_QTY_PERCENT, 0, "%"},
	{"per cent", FL_QTY_PERCENT, 0, "%"},
	{"pct", FL_QTY_PERCENT, 0, "%"},
	{"ops", FL_QTY_COUNT, 0, "ops"},
	{"op", FL_QTY_COUNT, 0, "ops"},
	{"operations", FL_QTY_COUNT, 0, "ops"},
	{"operators", FL_QTY_COUNT, 0, "ops"},
	{"cpu ops", FL_QTY_COUNT, 0, "ops"},
	{"cpu_ops", FL_QTY_COUNT, 0, "ops"},
	{"kernels", FL_QTY_COUNT, 0, "ops"},
	{"calls", FL_QTY_COUNT, 0, "calls"},
	{"events", FL_QTY_COUNT, 0, "events"},
	{"steps", FL_QTY_COUNT, 0, "steps"},
	{"step", FL_QTY_COUNT, 0, "steps"},
};

/* Hedges before the number ("about 57") and after it ("57 or so"). */
static const char *const approx_words[] = {"approximately", "approx.", "approx", "about", "around", "roughly",
					   "circa", "ca.", "nearly", "almost", "close to", "some", NULL};
static const char *const approx_symbols[] = {"~", "\xe2\x89\x88" /* ≈ */, "\xe2\x89\x83" /* ≃ */,
					     "\xe2\x88\xbc" /* ∼ */, NULL};
static const char *const approx_after[] = {" or so", " or thereabouts", " give or take", "-ish", " ish", "ish",
					   " approx.", " approx", " approximately", " roughly", NULL};

/* What may follow a factor: the direction it is read in, a noun, a comparison. */
static const char *const factor_same[] = {"slower", "longer", "more", "bigger", "larger", "higher", "greater",
					  "as long", "as slow", "as many", "as much", "as large", "as big", "as high",
					  "increase", "slowdown", "growth", NULL};
static const char *const factor_inverse[] = {"faster", "shorter", "quicker", "less", "fewer", "smaller", "lower",
					     "as fast", "as quick", "speedup", "speed up", "speed-up", "decrease",
					     "reduction", NULL};
static const char *const factor_nouns[] = {"cpu ops", "ops", "operations", "operators", "calls", "kernels",
					   "step time", "steps", "time", "work", NULL};
static const char *const factor_compare[] = {"than", "vs.", "vs", "versus", "compared to", "compared with",
					     "relative to", "over", "the", "of", NULL};
/* What may follow a time: it is per step. */
static const char *const time_per_step[] = {"per step", "/step", "a step", "each step", "per iteration",
					    "/iteration", "/iter", "/it", "per iter", NULL};

/* ---- number words ---- */

static const char *const small_words[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
					  "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
					  "sixteen", "seventeen", "eighteen", "nineteen", NULL};
static const char *const tens_words[] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy",
					 "eighty", "ninety", NULL};
static const char *const ordinal_words[] = {"zeroth", "first", "second", "third", "fourth", "fifth", "sixth",
					    "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth", "thirteenth",
					    "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth",
					    "nineteenth", "twentieth", NULL};

static int is_word_char(unsigned char c)
{
	return isalnum(c) || c >= 0x80;
}

/* Length of word w at p when p starts with it as a whole word, else 0. */
static size_t word_at(const char *p, const char *w)
{
	size_t l = strlen(w);
	if (strncmp(p, w, l) != 0 || is_word_char((unsigned char)p[l]))
		return 0;
	return l;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* The index of the word at p in a NULL-terminated table, or -1; *len its length. */
static int table_word(const char *p, const char *const *table, size_t *len)
{
	for (int i = 0; table[i]; i++) {
		size_t l = *table[i] ? word_at(p, table[i]) : 0;
		if (l) {
			*len = l;
			return i;
		}
	}
	return -1;
}

/* Cardinal number words at p ("fifty-seven", "a hundred and twelve", "seven
 * thousand three hundred"), lowercase. Returns the bytes read (0: none) and
 * *v. Words that do not continue the number end it. */
static size_t number_words(const char *p, double *v)
{
	enum { NONE, UNIT, TEEN, TENS, HUNDRED, BIG, AND, ART } last = NONE;
	double total = 0, cur = 0;
	const char *s = p, *end = p;
	for (int guard = 0; guard < 32; guard++) {
		size_t l = 0;
		int i;
		if ((i = table_word(p, small_words, &l)) >= 0) {
			int teen = i >= 10;
			if (last == UNIT || last == TEEN || last == ART || (teen && last == TENS))
				break;
			cur += i;
			last = teen ? TEEN : UNIT;
		} else if ((i = table_word(p, tens_words, &l)) >= 0) {
			if (last != NONE && last != HUNDRED && last != BIG && last != AND)
				break;
			cur += 10 * i;
			last = TENS;
		} else if ((l = word_at(p, "hundred"))) {
			if (last == HUNDRED || last == AND)
				break;
			cur = (cur ? cur : 1) * 100;
			last = HUNDRED;
		} else if ((l = word_at(p, "thousand")) || (l = word_at(p, "million"))) {
			if (last == NONE || last == BIG || last == AND)
				break;
			total += (cur ? cur : 1) * (p[0] == 't' ? 1e3 : 1e6);
			cur = 0;
			last = BIG;
		} else if ((l = word_at(p, "dozen"))) {
			if (last != UNIT && last != ART && last != NONE)
				break;
			cur = (cur ? cur : 1) * 12;
			last = UNIT;
		} else if ((l = word_at(p, "a")) || (l = word_at(p, "an"))) {
			if (last != NONE)
				break;
			last = ART;
		} else if ((l = word_at(p, "and"))) {
			if (last != HUNDRED && last != BIG)
				break;
			last = AND;
		} else {
			break;
		}
		p += l;
		if (last != AND && last != ART)
			end = p;
		if (*p == '-' && isalpha((unsigned char)p[1]))
			p++;
		else
			p = skip_ws(p);
	}
	if (end == s) /* "a" or "and" alone is no number */
		return 0;
	*v = total + cur;
	return (size_t)(end - s);
}

/* ---- numerals ---- */

/* A thousands separator at p: "," "'" " " or a no-break/thin space; its length. */
static size_t group_sep(const char *p)
{
	if (*p == ',' || *p == '\'' || *p == ' ')
		return 1;
	if (!strncmp(p, "\xc2\xa0", 2))
		return 2;
	if (!strncmp(p, "\xe2\x80\x89", 3) || !strncmp(p, "\xe2\x80\xaf", 3))
		return 3;
	return 0;
}

static const char *const superscripts[] = {"\xe2\x81\xb0", "\xc2\xb9", "\xc2\xb2", "\xc2\xb3", "\xe2\x81\xb4",
					   "\xe2\x81\xb5", "\xe2\x81\xb6", "\xe2\x81\xb7", "\xe2\x81\xb8",
					   "\xe2\x81\xb9", NULL};

/* An exponent of ten after "10": "^3", "**-3", "³", "⁻³". Returns bytes read (0:
 * none), -1 on an exponent too long to be a number. */
static long ten_exponent(const char *p, int *e)
{
	const char *s = p;
	int neg = 0, n = 0, digits = 0;
	if (*p == '^' || (p[0] == '*' && p[1] == '*')) {
		p += *p == '^' ? 1 : 2;
		if (*p == '+' || *p == '-')
			neg = *p++ == '-';
		else if (!strncmp(p, "\xe2\x88\x92", 3))
			neg = 1, p += 3;
		while (isdigit((unsigned char)*p)) {
			if (++digits > 4)
				return -1;
			n = n * 10 + (*p++ - '0');
		}
	} else {
		if (!strncmp(p, "\xe2\x81\xbb", 3)) /* superscript minus */
			neg = 1, p += 3;
		for (int more = 1; more;) {
			more = 0;
			for (int d = 0; superscripts[d]; d++) {
				size_t l = strlen(superscripts[d]);
				if (!strncmp(p, superscripts[d], l)) {
					if (++digits > 4)
						return -1;
					n = n * 10 + d;
					p += l;
					more = 1;
					break;
				}
			}
		}
	}
	if (!digits)
		return 0;
	*e = neg ? -n : n;
	return p - s;
}

/* A numeral at p (lowercase copy; `orig` is the same text as written, for the
 * case of "M"): sign, digits with grouping, decimals, an exponent ("3e-1",
 * "3.2 x 10^4", "10^3"), a scale ("7.33k", "1.2M", "2 million"), or number
 * words. Returns bytes read, 0 when no number starts at p, -1 with *why. */
static long numeral(const char *p, const char *orig, double *v, const char **why)
{
	const char *s = p;
	char num[FL_QTY_MAX_LEN + 32];
	size_t k = 0;
	int exp10 = 0;
	if (*p == '+' || *p == '-') {
		num[k++] = *p++;
	} else if (!strncmp(p, "\xe2\x88\x92", 3)) { /* minus sign */
		num[k++] = '-';
		p += 3;
	}
	if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1]))) {
		if (k)
			return 0;
		double w;
		size_t l = number_words(p, &w);
		if (!l)
			return 0;
		*v = w;
		return (long)l;
	}
	const char *comma_msg = "a comma inside the number: write the decimal point as '.' and group thousands by three";
	size_t group = 0, groups = 0, sep_len = 0;
	char sep = 0;
	while (isdigit((unsigned char)*p) || (group_sep(p) && isdigit((unsigned char)p[group_sep(p)]))) {
		size_t gl = group_sep(p);
		if (!isdigit((unsigned char)*p) && gl) {
			/* a separator: the first group 1-3 digits, then exactly 3 */
			const char *d = p + gl;
			int three = isdigit((unsigned char)d[0]) && isdigit((unsigned char)d[1]) &&
				    isdigit((unsigned char)d[2]) && !isdigit((unsigned char)d[3]);
			int ok = three && group >= 1 && group <= 3 && (groups == 0 || group == 3) &&
				 (!sep || (sep == *p && sep_len == gl));
			if (!ok) {
				if (*p == ',') {
					*why = comma_msg;
					return -1;
				}
				break; /* a space that groups nothing ends the number */
			}
			sep = *p;
			sep_len = gl;
			groups++;
			group = 0;
			p += gl;
			continue;
		}
		if (k > FL_QTY_MAX_LEN) {
			*why = "too long to be a number";
			return -1;
		}
		num[k++] = *p++;
		group++;
	}
	if (groups && group != 3) {
		*why = comma_msg;
		return -1;
	}
	if (*p == '.' && isdigit((unsigned char)p[1])) {
		num[k++] = *p++;
		while (isdigit((unsigned char)*p) && k <= FL_QTY_MAX_LEN)
			num[k++] = *p++;
	} else if (*p == '.' && !isdigit((unsigned char)p[1]) && p[1] != '.') {
		p++; /* "3." */
	}
	if ((*p == 'e') && (isdigit((unsigned char)p[1]) || ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2])))) {
		int neg = 0, n = 0, digits = 0;
		p++;
		if (*p == '+' || *p == '-')
			neg = *p++ == '-';
		while (isdigit((unsigned char)*p)) {
			if (++digits > 4) {
				*why = "the exponent is out of range";
				return -1;
			}
			n = n * 10 + (*p++ - '0');
		}
		exp10 += neg ? -n : n;
	}
	num[k] = '\0';
	/* "10^3", "10³" */
	int e = 0;
	long el;
	if (!strcmp(num, "10") && (el = ten_exponent(p, &e)) != 0) {
		if (el < 0) {
			*why = "the exponent is out of range";
			return -1;
		}
		strcpy(num, "1");
		k = 1;
		exp10 += e;
		p += el;
	} else {
		/* "3.2 x 10^4", "3.2×10⁴", "3.2*10^4", "3.2·10^4" */
		const char *q = skip_ws(p);
		size_t ml = *q == 'x' || *q == '*' ? 1 : !strncmp(q, "\xc3\x97", 2) || !strncmp(q, "\xc2\xb7", 2) ? 2 : 0;
		if (ml) {
			q = skip_ws(q + ml);
			if (q[0] == '1' && q[1] == '0' && (el = ten_exponent(q + 2, &e)) != 0) {
				if (el < 0) {
					*why = "the exponent is out of range";
					return -1;
				}
				exp10 += e;
				p = q + 2 + el;
			}
		}
	}
	/* a scale: k, thousand, M, million, bn, billion */
	const char *q = skip_ws(p);
	double scale = 1;
	size_t sl;
	if (*q == 'k' && !is_word_char((unsigned char)q[1])) {
		scale = 1e3, sl = 1;
	} else if (orig[q - s] == 'M' && !is_word_char((unsigned char)q[1])) {
		scale = 1e6, sl = 1;
	} else if ((sl = word_at(q, "thousand"))) {
		scale = 1e3;
	} else if ((sl = word_at(q, "million")) || (sl = word_at(q, "mn"))) {
		scale = 1e6;
	} else if ((sl = word_at(q, "billion")) || (sl = word_at(q, "bn"))) {
		scale = 1e9;
	} else {
		sl = 0;
	}
	if (sl)
		p = q + sl;
	if (exp10 > 400 || exp10 < -400) {
		*why = "the exponent is out of range";
		return -1;
	}
	snprintf(num + k, sizeof(num) - k, "e%d", exp10);
	char *end;
	errno = 0;
	double x = strtod(num, &end);
	int zero_mantissa = 1;
	for (const char *d = num; d < num + k; d++)
		zero_mantissa &= !(*d >= '1' && *d <= '9');
	if (*end || !isfinite(x) || errno == ERANGE || (x == 0 && !zero_mantissa) || !isfinite(x * scale)) {
		*why = "not a finite number (out of range)";
		return -1;
	}
	*v = x * scale;
	return p - s;
}

/* The phrase at p from a table, as whole words; its length or 0. */
static size_t phrase_at(const char *p, const char *const *table)
{
	size_t best = 0;
	for (size_t i = 0; table[i]; i++) {
		size_t l = strlen(table[i]);
		if (!strncmp(p, table[i], l) && !(is_word_char((unsigned char)p[l]) && is_word_char((unsigned char)p[l - 1])) &&
		    l > best)
			best = l;
	}
	return best;
}

/* After a factor: [direction] [noun] [comparison ...]. Returns 0 when the
 * whole tail is of that form; sets *inverse for "faster", "fewer", ... */
static int factor_tail(const char *p, int *inverse)
{
	size_t l;
	p = skip_ws(p);
	if ((l = phrase_at(p, factor_same))) {
		p = skip_ws(p + l);
	} else if ((l = phrase_at(p, factor_inverse))) {
		*inverse = 1;
		p = skip_ws(p + l);
	}
	if ((l = phrase_at(p, factor_nouns)))
		p = skip_ws(p + l);
	if (!*p)
		return 0;
	if ((l = phrase_at(p, factor_compare)) && (p[l] == ' ' || !p[l]))
		return 0; /* "than the baseline", "the healthy run": what it is compared with */
	return -1;
}

static const struct unit_word *unit_at(const char *p, size_t *len)
{
	const struct unit_word *best = NULL;
	size_t bl = 0;
	for (size_t i = 0; i < sizeof(unit_words) / sizeof(unit_words[0]); i++) {
		const char *w = unit_words[i].word;
		size_t l = strlen(w);
		if (strncmp(p, w, l) != 0 || l <= bl)
			continue;
		if (is_word_char((unsigned char)w[l - 1]) && is_word_char((unsigned char)p[l]))
			continue;
		best = &unit_words[i];
		bl = l;
	}
	*len = bl;
	return best;
}

static int starts_with_any(const char *p, const char *const *table, size_t *len)
{
	for (size_t i = 0; table[i]; i++) {
		size_t l = strlen(table[i]);
		if (!strncmp(p, table[i], l)) {
			*len = l;
			return 1;
		}
	}
	return 0;
}

int fl_quantity_parse(const char *s, struct fl_quantity *q, const char **why)
{
	memset(q, 0, sizeof(*q));
	size_t n = strlen(s);
	if (n > FL_QTY_MAX_LEN) {
		*why = "too long to be a number";
		return -1;
	}
	char low[FL_QTY_MAX_LEN + 1], orig[FL_QTY_MAX_LEN + 1];
	for (size_t i = 0; i <= n; i++) {
		unsigned char c = (unsigned char)s[i];
		orig[i] = s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
		low[i] = (char)(c < 0x80 ? tolower((unsigned char)orig[i]) : c);
	}
	/* trailing blanks, a final '.', and hedges after the number */
	for (int again = 1; again && n;) {
		again = 0;
		while (n && (low[n - 1] == ' ' || low[n - 1] == '.'))
			low[--n] = '\0';
		for (const char *const *w = approx_after; *w; w++) {
			size_t l = strlen(*w);
			if (n > l && !strcmp(low + n - l, *w) && (**w == ' ' || **w == '-' || isdigit((unsigned char)low[n - l - 1]))) {
				n -= l;
				low[n] = '\0';
				q->approx = again = 1;
				break;
			}
		}
	}
	const char *p = skip_ws(low);
	for (int again = 1; again;) {
		size_t l;
		again = 0;
		if (starts_with_any(p, approx_symbols, &l)) {
			p = skip_ws(p + l);
			q->approx = again = 1;
			continue;
		}
		for (const char *const *w = approx_words; *w; w++) {
			l = strlen(*w);
			if (!strncmp(p, *w, l) && (p[l] == ' ' || p[l] == '\t')) {
				p = skip_ws(p + l);
				q->approx = again = 1;
				break;
			}
		}
	}
	if ((p[0] == 'a' && p[1] == ' ' && isdigit((unsigned char)p[2])) ||
	    (p[0] == 'a' && p[1] == 'n' && p[2] == ' ' && isdigit((unsigned char)p[3])))
		p += p[1] == ' ' ? 2 : 3; /* "a 112x slowdown" */
	int prefix_factor = 0, implied_factor = 0;
	double a = 0;
	size_t l;
	if ((*p == 'x') && (isdigit((unsigned char)p[1]) || (p[1] == ' ' && isdigit((unsigned char)p[2])))) {
		prefix_factor = 1;
		p = skip_ws(p + 1);
	} else if (!strncmp(p, "\xc3\x97", 2)) {
		prefix_factor = 1;
		p = skip_ws(p + 2);
	}
	if ((l = word_at(p, "twice")) || (l = word_at(p, "double")) || (l = word_at(p, "doubled"))) {
		a = 2, implied_factor = 1, p += l;
	} else if ((l = word_at(p, "thrice")) || (l = word_at(p, "triple")) || (l = word_at(p, "tripled"))) {
		a = 3, implied_factor = 1, p += l;
	} else {
		long r = numeral(p, orig + (p - low), &a, why);
		if (r < 0)
			return -1;
		if (r == 0) {
			*why = *p ? "expected a number" : "empty answer";
			return -1;
		}
		p += r;
	}
	q->value = a;
	p = skip_ws(p);
	/* a ratio: "57:1", "57 to 1", "1/112" */
	int ratio = 0;
	if (!implied_factor && !prefix_factor && (*p == ':' || *p == '/' || word_at(p, "to"))) {
		const char *b_at = skip_ws(p + (*p == ':' || *p == '/' ? 1 : 2));
		double b;
		const char *w2 = NULL;
		long r = numeral(b_at, orig + (b_at - low), &b, &w2);
		if (r > 0) {
			if (b == 0) {
				*why = "a ratio with a zero denominator";
				return -1;
			}
			ratio = *p == '/' ? 1 : 2;
			q->value = a / b;
			if (a != 0 && fabs(a) < fabs(b)) {
				q->inverse = 1;
				q->inverse_of = b / a;
			}
			p = skip_ws(b_at + r);
		} else if (r < 0) {
			*why = w2;
			return -1;
		}
	}
	if (!isfinite(q->value)) {
		*why = "not a finite number (out of range)";
		return -1;
	}
	/* the unit and what may follow it */
	if (prefix_factor || implied_factor || ratio == 2) {
		int inv = 0;
		const struct unit_word *u = unit_at(p, &l);
		if (implied_factor && u && u->dim == FL_QTY_FACTOR) /* "twice times"? no */
			u = NULL;
		if (ratio == 2 && u && u->dim == FL_QTY_FACTOR)
			p += l;
		if (*p && factor_tail(p, &inv) != 0) {
			*why = "unexpected text after the number";
			return -1;
		}
		q->dim = FL_QTY_FACTOR;
		snprintf(q->unit, sizeof(q->unit), "x");
		if (inv && q->value != 0) {
			q->inverse = 1;
			q->inverse_of = q->value;
			q->value = 1 / q->value;
		}
		return 0;
	}
	if (!*p) {
		q->dim = FL_QTY_PLAIN;
		return 0;
	}
	const struct unit_word *u = unit_at(p, &l);
	if (!u) {
		*why = "unknown unit after the number (use ms, us, s, x or %)";
		return -1;
	}
	const char *rest = skip_ws(p + l);
	if (*rest) {
		int ok = 0, inv = 0;
		if (u->dim == FL_QTY_FACTOR)
			ok = factor_tail(rest, &inv) == 0;
		else if (u->dim == FL_QTY_TIME)
			ok = phrase_at(rest, time_per_step) == strlen(rest);
		else if (u->dim == FL_QTY_PERCENT)
			ok = word_at(rest, "of") > 0; /* "97% of step time" */
		else if (u->dim == FL_QTY_COUNT)
			ok = !strcmp(rest, "in total") || !strcmp(rest, "total") || !strcmp(rest, "per run");
		if (!ok) {
			*why = "unexpected text after the unit";
			return -1;
		}
		if (inv && q->value != 0) {
			q->inverse = 1;
			q->inverse_of = q->value;
			q->value = 1 / q->value;
		}
	}
	q->dim = u->dim;
	q->seconds = u->seconds;
	snprintf(q->unit, sizeof(q->unit), "%s", u->canonical);
	return 0;
}

/* ---- whole numbers and periods ---- */

/* Connectors of "1 in 3", "one out of every three", "once per 3 steps". */
static const char *const one_in[] = {"in", "out of", "out of every", "of", "of every", "every", "per", "each",
				     "for every", "/", NULL};

struct found_num {
	long v;
	size_t start, end; /* in the lowercase copy */
	int one_word;      /* "once": 1 that may start "once every 3" */
};

int fl_whole_parse(const char *s, int period, long *out, const char **why)
{
	size_t n = strlen(s);
	if (n > FL_QTY_MAX_LEN) {
		*why = "too long to be a number";
		return -1;
	}
	/* a plain quantity first: "3", "3 steps", "7,328", "7.33k", "1e3" */
	struct fl_quantity qt;
	const char *w;
	int qr = fl_quantity_parse(s, &qt, &w);
	if (qr == 0 && (qt.dim == FL_QTY_TIME || qt.dim == FL_QTY_PERCENT)) {
		*why = period ? "expected a whole number of steps, not a time or a share" : "expected a whole number";
		return -1;
	}
	if (qr == 0 && (qt.dim == FL_QTY_PLAIN || qt.dim == FL_QTY_COUNT) && !qt.inverse) {
		if (qt.value != floor(qt.value)) {
			*why = "expected a whole number";
			return -1;
		}
		if (fabs(qt.value) > 1e9) {
			*why = "the number is too large";
			return -1;
		}
		*out = (long)qt.value;
		return 0;
	}
	char low[FL_QTY_MAX_LEN + 1];
	for (size_t i = 0; i <= n; i++)
		low[i] = (char)((unsigned char)s[i] < 0x80 ? tolower((unsigned char)s[i]) : s[i]);
	struct found_num f[8];
	size_t nf = 0;
	int every = 0, every_step = 0;
	for (const char *p = low; *p;) {
		const char *st = p;
		long v = 0;
		int one_word = 0;
		size_t l;
		int i;
		double d;
		if (isdigit((unsigned char)*p)) {
			while (isdigit((unsigned char)*p))
				p++;
			if (*p == '.' && isdigit((unsigned char)p[1])) {
				*why = "expected a whole number";
				return -1;
			}
			if (p - st > 9) {
				*why = "the number is too large";
				return -1;
			}
			v = strtol(st, NULL, 10);
			if (st > low && st[-1] == '-' && (st - 1 == low || !is_word_char((unsigned char)st[-2])))
				v = -v;
			if ((p[0] == 's' && p[1] == 't') || (p[0] == 'n' && p[1] == 'd') || (p[0] == 'r' && p[1] == 'd') ||
			    (p[0] == 't' && p[1] == 'h'))
				if (!is_word_char((unsigned char)p[2]))
					p += 2; /* "3rd" */
		} else if (!is_word_char((unsigned char)*p) || (st > low && is_word_char((unsigned char)st[-1]))) {
			p++;
			continue;
		} else if ((l = number_words(p, &d)) && !(d == 1 && (word_at(p, "a") || word_at(p, "an")))) {
			v = (long)d;
			p += l;
		} else if ((i = table_word(p, ordinal_words, &l)) >= 0) {
			v = i;
			p += l;
		} else if ((l = word_at(p, "once"))) {
			v = 1, one_word = 1, p += l;
		} else if ((l = word_at(p, "twice"))) {
			v = 2, p += l;
		} else if ((l = word_at(p, "thrice"))) {
			v = 3, p += l;
		} else if (every && (l = word_at(p, "other"))) {
			v = 2, p += l; /* "every other step" */
		} else {
			size_t wl = 0;
			while (isalpha((unsigned char)p[wl]) || (unsigned char)p[wl] >= 0x80)
				wl++;
			every = word_at(p, "every") || word_at(p, "each");
			if (every) {
				const char *nx = skip_ws(p + wl);
				if (word_at(nx, "single"))
					nx = skip_ws(nx + 6);
				if (word_at(nx, "step") || word_at(nx, "iteration"))
					every_step = 1;
			}
			p += wl ? wl : 1;
			continue;
		}
		every = 0;
		if (nf == sizeof(f) / sizeof(f[0])) {
			*why = "read more than one number; give one";
			return -1;
		}
		f[nf++] = (struct found_num){v, (size_t)(st - low), (size_t)(p - low), one_word};
	}
	if (period && nf == 2 && (f[0].v == 1 || f[0].one_word)) {
		/* "1 in 3", "once every 3 steps", "1/3" */
		char between[64];
		size_t bl = f[1].start - f[0].end;
		if (bl < sizeof(between)) {
			memcpy(between, low + f[0].end, bl);
			between[bl] = '\0';
			char *b = between;
			while (*b == ' ')
				b++;
			size_t el = strlen(b);
			while (el && b[el - 1] == ' ')
				b[--el] = '\0';
			for (const char *const *c = one_in; *c; c++)
				if (!strcmp(b, *c)) {
					*out = f[1].v;
					return 0;
				}
		}
	}
	if (!nf && period && every_step) {
		*out = 1; /* "every step" */
		return 0;
	}
	if (!nf) {
		*why = "expected a whole number";
		return -1;
	}
	for (size_t i = 1; i < nf; i++)
		if (f[i].v != f[0].v) {
			*why = "read more than one number; give one";
			return -1;
		}
	*out = f[0].v;
	return 0;
}

struct rubric_unit {
	const char *name;
	const char *canonical;
	double seconds; /* time units */
};

static const struct rubric_unit rubric_units[] = {
	{"ms", "ms", 1e-3},  {"us", "us", 1e-6},      {"s", "s", 1},
	{"ns", "ns", 1e-9},  {"count", "count", 0},   {"fraction", "fraction", 0},
	{"percent", "percent", 0}, {"x", "x", 0},     {"", "", 0},
};

static const struct rubric_unit *rubric_unit_find(const char *u)
{
	for (size_t i = 0; i < sizeof(rubric_units) / sizeof(rubric_units[0]); i++)
		if (strcmp(u ? u : "", rubric_units[i].name) == 0)
			return &rubric_units[i];
	return NULL;
}

const char *fl_unit_canonical(const char *rubric_unit)
{
	const struct rubric_unit *u = rubric_unit_find(rubric_unit);
	return u ? u->canonical : NULL;
}

int fl_quantity_convert(const struct fl_quantity *q, const char *rubric_unit, double *out, const char **why,
			const char **note)
{
	const struct rubric_unit *u = rubric_unit_find(rubric_unit);
	*note = NULL;
	if (!u) {
		*why = "the question has an unknown unit";
		return -1;
	}
	if (u->seconds > 0) {
		if (q->dim == FL_QTY_PLAIN) {
			*out = q->value;
			return 0;
		}
		if (q->dim == FL_QTY_TIME) {
			*out = q->value * (q->seconds / u->seconds);
			return 0;
		}
		*why = "expected a time (ms, us or s)";
		return -1;
	}
	if (!strcmp(u->name, "count")) {
		if (q->dim == FL_QTY_PLAIN || q->dim == FL_QTY_COUNT) {
			*out = q->value;
			return 0;
		}
		*why = "expected a count (a plain number)";
		return -1;
	}
	if (!strcmp(u->name, "fraction")) {
		if (q->dim == FL_QTY_PERCENT) {
			*out = q->value / 100.0;
			return 0;
		}
		if (q->dim == FL_QTY_PLAIN) {
			if (q->value > 1 && q->value <= 100) {
				*out = q->value / 100.0;
				*note = "read as a percentage";
			} else {
				*out = q->value;
			}
			return 0;
		}
		*why = "expected a fraction or a percentage";
		return -1;
	}
	if (!strcmp(u->name, "percent")) {
		if (q->dim == FL_QTY_PERCENT || q->dim == FL_QTY_PLAIN) {
			*out = q->value;
			return 0;
		}
		*why = "expected a percentage";
		return -1;
	}
	if (!strcmp(u->name, "x")) {
		if (q->dim == FL_QTY_FACTOR || q->dim == FL_QTY_PLAIN) {
			*out = q->value;
			return 0;
		}
		*why = "expected a factor such as 2.5x";
		return -1;
	}
	/* no unit: anything but a mismatched dimension reads as the plain number */
	if (q->dim == FL_QTY_PLAIN || q->dim == FL_QTY_COUNT) {
		*out = q->value;
		return 0;
	}
	*why = "expected a plain number";
	return -1;
}

/* ---- tolerance ---- */

int fl_tol_number(double s, double t, double atol, double rtol)
{
	if (!isfinite(s) || !isfinite(t))
		return 0;
	return fabs(s - t) <= atol + rtol * fabs(t) + 1e-12 * fabs(t);
}

int fl_tol_ratio(double s, double t, double tol)
{
	if (!isfinite(s) || !isfinite(t) || !(t > 0) || !(s > 0))
		return 0;
	double eps = 1e-12;
	return s >= t / (1 + tol) * (1 - eps) && s <= t * (1 + tol) * (1 + eps);
}
