#include "grader/grading/units.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/utf8.h"

/* ---- quantities ---- */

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
	{"microsecond", FL_QTY_TIME, 1e-6, "us"},
	{"microseconds", FL_QTY_TIME, 1e-6, "us"},
	{"ms", FL_QTY_TIME, 1e-3, "ms"},
	{"msec", FL_QTY_TIME, 1e-3, "ms"},
	{"msecs", FL_QTY_TIME, 1e-3, "ms"},
	{"millisecond", FL_QTY_TIME, 1e-3, "ms"},
	{"milliseconds", FL_QTY_TIME, 1e-3, "ms"},
	{"s", FL_QTY_TIME, 1, "s"},
	{"sec", FL_QTY_TIME, 1, "s"},
	{"secs", FL_QTY_TIME, 1, "s"},
	{"second", FL_QTY_TIME, 1, "s"},
	{"seconds", FL_QTY_TIME, 1, "s"},
	{"x", FL_QTY_FACTOR, 0, "x"},
	{"\xc3\x97", FL_QTY_FACTOR, 0, "x"}, /* multiplication sign */
	{"times", FL_QTY_FACTOR, 0, "x"},
	{"fold", FL_QTY_FACTOR, 0, "x"},
	{"-fold", FL_QTY_FACTOR, 0, "x"},
	{"%", FL_QTY_PERCENT, 0, "%"},
	{"percent", FL_QTY_PERCENT, 0, "%"},
	{"pct", FL_QTY_PERCENT, 0, "%"},
	{"ops", FL_QTY_COUNT, 0, "ops"},
	{"op", FL_QTY_COUNT, 0, "ops"},
	{"operations", FL_QTY_COUNT, 0, "ops"},
	{"operators", FL_QTY_COUNT, 0, "ops"},
	{"cpu ops", FL_QTY_COUNT, 0, "ops"},
	{"cpu_ops", FL_QTY_COUNT, 0, "ops"},
	{"calls", FL_QTY_COUNT, 0, "calls"},
	{"events", FL_QTY_COUNT, 0, "events"},
	{"steps", FL_QTY_COUNT, 0, "steps"},
	{"step", FL_QTY_COUNT, 0, "steps"},
};

static const char *const approx_words[] = {"approximately", "approx.", "approx", "about", "around",
					   "roughly", "circa", "ca.", NULL};

static int starts_with_ci(const char *s, const char *w)
{
	for (; *w; s++, w++)
		if (tolower((unsigned char)*s) != *w)
			return 0;
	return 1;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

int fl_quantity_parse(const char *s, struct fl_quantity *q, const char **why)
{
	memset(q, 0, sizeof(*q));
	if (strlen(s) > FL_QTY_MAX_LEN) {
		*why = "too long to be a number";
		return -1;
	}
	const char *p = skip_ws(s);
	for (int again = 1; again;) {
		again = 0;
		if (*p == '~') {
			p = skip_ws(p + 1);
			q->approx = again = 1;
		} else if (!strncmp(p, "\xe2\x89\x88", 3)) { /* ≈ */
			p = skip_ws(p + 3);
			q->approx = again = 1;
		} else {
			for (const char *const *w = approx_words; *w; w++) {
				size_t l = strlen(*w);
				if (starts_with_ci(p, *w) && (p[l] == ' ' || p[l] == '\t')) {
					p = skip_ws(p + l);
					q->approx = again = 1;
					break;
				}
			}
		}
	}
	int prefix_factor = 0;
	if ((*p == 'x' || *p == 'X') && isdigit((unsigned char)p[1])) {
		prefix_factor = 1;
		p++;
	} else if (!strncmp(p, "\xc3\x97", 2)) {
		prefix_factor = 1;
		p = skip_ws(p + 2);
	}
	char num[FL_QTY_MAX_LEN + 2];
	size_t k = 0;
	if (*p == '+' || *p == '-') {
		num[k++] = *p++;
	} else if (!strncmp(p, "\xe2\x88\x92", 3)) { /* minus sign */
		num[k++] = '-';
		p += 3;
	}
	if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1]))) {
		*why = *p ? "expected a number" : "empty answer";
		return -1;
	}
	size_t group = 0, groups = 0;
	while (isdigit((unsigned char)*p) || *p == ',') {
		if (*p == ',') {
			/* thousands separator: the first group 1-3 digits, then exactly 3 */
			if (group == 0 || group > 3 || (groups > 0 && group != 3) || !isdigit((unsigned char)p[1]) ||
			    !isdigit((unsigned char)p[2]) || !isdigit((unsigned char)p[3]) || isdigit((unsigned char)p[4])) {
				*why = "a comma inside the number: write the decimal point as '.' and group thousands by three";
				return -1;
			}
			groups++;
			group = 0;
			p++;
			continue;
		}
		num[k++] = *p++;
		group++;
	}
	if (groups && group != 3) {
		*why = "a comma inside the number: write the decimal point as '.' and group thousands by three";
		return -1;
	}
	if (*p == '.') {
		num[k++] = *p++;
		while (isdigit((unsigned char)*p))
			num[k++] = *p++;
	}
	if ((*p == 'e' || *p == 'E') &&
	    (isdigit((unsigned char)p[1]) || ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2])))) {
		num[k++] = *p++;
		if (*p == '+' || *p == '-')
			num[k++] = *p++;
		while (isdigit((unsigned char)*p))
			num[k++] = *p++;
	}
	num[k] = '\0';
	char *end;
	q->value = strtod(num, &end);
	if (*end || !isfinite(q->value)) {
		*why = "not a finite number";
		return -1;
	}
	/* the unit: the rest, trimmed, lowercase, without a final '.' */
	p = skip_ws(p);
	char unit[32];
	size_t ul = strlen(p);
	while (ul && (p[ul - 1] == ' ' || p[ul - 1] == '\t' || p[ul - 1] == '.'))
		ul--;
	if (ul >= sizeof(unit)) {
		*why = "unexpected text after the number";
		return -1;
	}
	for (size_t i = 0; i < ul; i++)
		unit[i] = (char)tolower((unsigned char)p[i]);
	unit[ul] = '\0';
	if (prefix_factor) {
		if (ul) {
			*why = "unexpected text after the number";
			return -1;
		}
		q->dim = FL_QTY_FACTOR;
		snprintf(q->unit, sizeof(q->unit), "x");
		return 0;
	}
	if (!ul) {
		q->dim = FL_QTY_PLAIN;
		return 0;
	}
	for (size_t i = 0; i < sizeof(unit_words) / sizeof(unit_words[0]); i++) {
		if (strcmp(unit, unit_words[i].word) == 0) {
			q->dim = unit_words[i].dim;
			q->seconds = unit_words[i].seconds;
			snprintf(q->unit, sizeof(q->unit), "%s", unit_words[i].canonical);
			return 0;
		}
	}
	*why = "unknown unit after the number (use ms, us, s, x or %)";
	return -1;
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
