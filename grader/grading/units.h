/* units.h — reading a learner's numbers and words: quantities with units,
 * text normalisation for matching, tolerance checks, safe display copies.
 *
 * Everything here takes untrusted text and never fails on it other than by
 * returning an error with a short static reason (no allocation on bad input
 * except where documented).
 */
#ifndef FL_UNITS_H
#define FL_UNITS_H

#include <stddef.h>

/* ---- quantities ---- */

enum fl_qty_dim {
	FL_QTY_PLAIN = 0, /* no unit */
	FL_QTY_TIME,      /* ns, us/µs, ms, s */
	FL_QTY_FACTOR,    /* x, ×, times, fold */
	FL_QTY_PERCENT,   /* %, percent, pct */
	FL_QTY_COUNT,     /* ops, calls, events, steps */
};

struct fl_quantity {
	double value;          /* the number as written */
	enum fl_qty_dim dim;
	double seconds;        /* FL_QTY_TIME: seconds per unit (ms: 1e-3) */
	char unit[12];         /* canonical unit as read: "ms", "us", "x", "%", "ops", "" */
	int approx;            /* written with ~, ≈, about, ... */
};

/* Longest text fl_quantity_parse looks at. */
#define FL_QTY_MAX_LEN 200

/* Parse "36.9 ms", "~120x", "×25", "97%", "7,504", "3e-1 s", "about 0.3ms".
 * Thousands separators must group by three ("7,504"); a decimal comma is
 * refused. NaN, infinities and overflow are refused. Returns 0, or -1 and sets
 * *why to a lowercase reason. */
int fl_quantity_parse(const char *s, struct fl_quantity *q, const char **why);

/* Canonical unit of a rubric's `unit` ("ms", "us", "s", "ns", "count",
 * "fraction", "percent", "x"); NULL when unknown. */
const char *fl_unit_canonical(const char *rubric_unit);

/* Convert q to the rubric unit. Returns 0 and *out, or -1 with *why when the
 * dimensions do not match (a time for a count). *note gets a static remark
 * ("read as a percentage") or NULL. */
int fl_quantity_convert(const struct fl_quantity *q, const char *rubric_unit, double *out, const char **why,
			const char **note);

/* ---- tolerance (GRADING.md) ---- */

/* |s - t| <= atol + rtol * |t| */
int fl_tol_number(double s, double t, double atol, double rtol);
/* t / (1 + tol) <= s <= t * (1 + tol), for t > 0 */
int fl_tol_ratio(double s, double t, double tol);

/* ---- text ---- */

/* Normalise for matching: trim, ASCII lowercase, '-', '_' and whitespace runs
 * become one space; with `loose`, punctuation too (. , ; : ! ? ( ) [ ] { } " '
 * ` / \ | * + = < >). Non-ASCII bytes are kept (no Unicode folding beyond
 * mapping the micro sign U+00B5 to U+03BC). Returns a malloc'd string. */
char *fl_norm(const char *s, int loose);
/* Normalise an answer or rubric key: lowercase, every run of characters other
 * than [a-z0-9] becomes one '_', no leading/trailing '_'. malloc'd. */
char *fl_norm_key(const char *s);
/* Offset of needle in hay as whole words (bounded by start/end or a space),
 * searching from `from`; -1 if absent. Both normalised. */
long fl_find_phrase(const char *hay, const char *needle, size_t from);

/* 1 if s[0..n) is valid UTF-8; else 0 and *bad_at (may be NULL) = offset. */
int fl_utf8_valid(const char *s, size_t n, size_t *bad_at);
/* A display copy of untrusted text: at most `max` bytes of it (cut at a
 * character boundary, "..." appended when cut), invalid UTF-8 as U+FFFD,
 * control characters as spaces. malloc'd; never NULL. */
char *fl_clean_text(const char *s, size_t max);

/* Shortest "%g"-like text of v that reads back within 1e-9 relative: at most
 * 10 significant digits ("36.9", "0.000301", "7504"). */
void fl_fmt_num(char *buf, size_t n, double v);

#endif
