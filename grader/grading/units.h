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
#include "grader/grading/text.h" /* text helpers, formerly declared here */

/* ---- quantities ---- */

enum fl_qty_dim {
	FL_QTY_PLAIN = 0, /* no unit */
	FL_QTY_TIME,      /* ns, us/µs, ms, s, min */
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
	int inverse;           /* written as an inverse: "112 times faster", "1/112", "1:112" */
	double inverse_of;     /* then the factor it is the inverse of (112) */
};

/* Longest text fl_quantity_parse looks at. */
#define FL_QTY_MAX_LEN 200

/* Parse a number as people write it (docs/grading.md, "Numbers"):
 *   "36.9 ms", "0.3ms", "300 µs", "2 sec", "1.5 min", "30 ms per step";
 *   "7,504", "7 504", "7.33k", "1.2M", "2 million", "3e-1", "3.2 x 10^4", "10^3";
 *   "thirty", "a hundred and twelve", "fifty-seven";
 *   factors "120x", "×120", "120 times", "7-fold", "112 times slower",
 *   "twice as long", ratios "57:1", "57 to 1", "7328/128";
 *   "97%", "97 percent", "97 pct", "97% of step time";
 *   hedges "about", "~", "≈", "roughly", "approximately", "57 or so", "57ish".
 * An inverse ("112 times faster", "1/112", "1 to 112") sets q->inverse and
 * gives the inverse value (1/112). Thousands separators must group by three
 * ("7,504"); a decimal comma is refused. NaN, infinities, overflow and
 * underflow ("1e400", "10^999", "1e-400") are refused. Returns 0, or -1 and
 * sets *why to a lowercase reason. Bounded: one pass over at most
 * FL_QTY_MAX_LEN bytes. */
int fl_quantity_parse(const char *s, struct fl_quantity *q, const char **why);

/* One whole number for an integer or period question: a plain quantity
 * ("3", "3 steps", "7,328"), or the one number in words around it ("every 3
 * steps", "every 3rd step", "every third step", "rank 2", "twice"). With
 * `period`, also "every other step" (2), "every step" (1), "1 in 3", "once
 * every 3 steps", "1/3" (3). Two different numbers are refused. Returns 0 and
 * *out, or -1 with *why. */
int fl_whole_parse(const char *s, int period, long *out, const char **why);

/* Canonical unit of a rubric's `unit` ("ms", "us", "s", "ns", "count",
 * "fraction", "percent", "x"); NULL when unknown. */
const char *fl_unit_canonical(const char *rubric_unit);

/* Convert q to the rubric unit. Returns 0 and *out, or -1 with *why when the
 * dimensions do not match (a time for a count). *note gets a static remark
 * ("read as a percentage") or NULL. */
int fl_quantity_convert(const struct fl_quantity *q, const char *rubric_unit, double *out, const char **why,
			const char **note);

/* ---- tolerance (docs/grading.md) ---- */

/* |s - t| <= atol + rtol * |t| */
int fl_tol_number(double s, double t, double atol, double rtol);
/* t / (1 + tol) <= s <= t * (1 + tol), for t > 0 */
int fl_tol_ratio(double s, double t, double tol);

/* text normalisation, search and formatting: grader/grading/text.h */

#endif
