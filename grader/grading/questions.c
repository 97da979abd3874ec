/* questions.c — the question kinds: how each reads its rubric keys and judges
 * one answer. Feedback says what the answer was read as and how it fared; the
 * expected value and the tolerance go only into the verdict's `key` text,
 * which reports print with --reveal. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/jsonutil.h"
#include "grader/grading/rubric.h"
#include "grader/grading/units.h"

#define SHOWN 60 /* bytes of the learner's answer quoted back */

/* ---- shared helpers ---- */

static enum fl_status rubric_error(enum fl_status st)
{
	return st ? fl_error_prefix(FL_EINTERNAL, "rubric ") : FL_OK;
}

static void set_credit(struct fl_verdict *v, double credit)
{
	credit = credit < 0 ? 0 : credit > 1 ? 1 : credit;
	v->credit = round(credit * 1e6) / 1e6;
	v->outcome = v->credit >= 1 ? FL_OUT_CORRECT : v->credit > 0 ? FL_OUT_PARTIAL : FL_OUT_WRONG;
}

static const char *verdict_words(const struct fl_verdict *v)
{
	return v->outcome == FL_OUT_CORRECT ? "correct" : v->outcome == FL_OUT_PARTIAL ? "partly right" : "not the answer";
}

/* The form a question's answer takes, for the feedback on a value that cannot
 * be read. Never a number that could be the key: 'N' stands for the digits. */
static const char *expected_form(const struct fl_question *q)
{
	const char *k = q->kind->name;
	if (!strcmp(k, "number")) {
		const char *u = q->unit ? q->unit : "";
		if (!strcmp(u, "ms") || !strcmp(u, "us") || !strcmp(u, "s") || !strcmp(u, "ns"))
			return "a time with its unit, such as 'N ms', 'N us' or 'N s'";
		if (!strcmp(u, "count"))
			return "a count, such as 'N', 'N,NNN' or 'N.Nk'";
		if (!strcmp(u, "fraction"))
			return "a share, such as 'N%' or '0.NN'";
		if (!strcmp(u, "percent"))
			return "a percentage, such as 'N%'";
		if (!strcmp(u, "x"))
			return "a factor, such as 'Nx', 'N times' or 'N:1'";
		return "a number, such as 'N' or 'N.N'";
	}
	if (!strcmp(k, "ratio"))
		return "a factor, such as 'Nx', 'N times' or 'N:1'";
	if (!strcmp(k, "period"))
		return "a period in steps, such as 'N' or 'every Nth step'";
	if (!strcmp(k, "integer"))
		return "a whole number, such as 'N'";
	if (!strcmp(k, "set"))
		return "one or more terms, separated by commas";
	if (!strcmp(k, "text"))
		return "a sentence of text";
	return "one term, as text";
}

/* A value that cannot be read as the question's kind. By default it scores 0
 * for this question and the others are graded (docs/grading.md); with
 * c->strict it is a format error that makes the whole answer not gradable. */
static void format_error(const struct fl_judge_ctx *c, struct fl_verdict *v, const struct fl_answer_item *a,
			 const char *as, const char *why)
{
	v->credit = 0;
	v->outcome = c->strict ? FL_OUT_FORMAT : FL_OUT_WRONG;
	if (a->too_long) {
		strbuf_addf(&v->feedback, "the answer is too long to read (more than %d characters)", FL_ANSWER_MAX_VALUE);
	} else if (!a->text || !*a->text || !why) {
		strbuf_adds(&v->feedback, "the answer is empty");
	} else {
		char *shown = fl_clean_text(a->text, SHOWN);
		strbuf_addf(&v->feedback, "could not read '%s' as %s%s%s", shown, as, *why ? ": " : "", why);
		free(shown);
	}
	if (!c->strict) {
		strbuf_addf(&v->feedback, "; expected %s. This answer scores 0; the others are graded.",
			    expected_form(c->q));
		strbuf_addf(&v->notes, "unreadable value (%s)", why && *why ? why : "empty");
	} else {
		strbuf_addf(&v->feedback, "; expected %s", expected_form(c->q));
	}
}

/* The value as text for kinds that read text; NULL after a format error. */
static const char *text_of(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v,
			   const char *as)
{
	if (a->type == FL_ANS_OTHER) {
		format_error(c, v, a, as, a->too_long ? "" : "expected text or a list of text");
		return NULL;
	}
	if (a->too_long || !a->text || !*a->text) {
		format_error(c, v, a, as, NULL);
		return NULL;
	}
	int blank = 1;
	for (const char *p = a->text; *p && blank; p++)
		blank = isspace((unsigned char)*p);
	if (blank) {
		format_error(c, v, a, as, NULL);
		return NULL;
	}
	return a->text;
}

/* The numbers of an expected value: a number or an array of alternatives. */
static size_t expected_numbers(const cJSON *e, double *out, size_t cap)
{
	size_t n = 0;
	if (cJSON_IsNumber(e)) {
		out[n++] = e->valuedouble;
		return n;
	}
	const cJSON *x;
	cJSON_ArrayForEach(x, e) if (cJSON_IsNumber(x) && n < cap) out[n++] = x->valuedouble;
	return n;
}

static const char *expect_numbers(const struct fl_question *q, const cJSON *e)
{
	(void)q;
	double v[16];
	if (!(cJSON_IsNumber(e) || cJSON_IsArray(e)))
		return "a number (or an array of alternative numbers)";
	const cJSON *x;
	cJSON_ArrayForEach(x, e) if (!cJSON_IsNumber(x)) return "an array of numbers";
	size_t n = expected_numbers(e, v, 16);
	if (!n)
		return "at least one number";
	for (size_t i = 0; i < n; i++)
		if (!isfinite(v[i]))
			return "finite numbers";
	return NULL;
}

static const char *expect_positive(const struct fl_question *q, const cJSON *e)
{
	const char *why = expect_numbers(q, e);
	if (why)
		return why;
	double v[16];
	size_t n = expected_numbers(e, v, 16);
	for (size_t i = 0; i < n; i++)
		if (!(v[i] > 0))
			return "a positive factor";
	return NULL;
}

static const char *expect_integers(const struct fl_question *q, const cJSON *e)
{
	const char *why = expect_numbers(q, e);
	if (why)
		return why;
	double v[16];
	size_t n = expected_numbers(e, v, 16);
	for (size_t i = 0; i < n; i++)
		if (v[i] != floor(v[i]))
			return "a whole number";
	return NULL;
}

static const char *expect_texts(const struct fl_question *q, const cJSON *e)
{
	(void)q;
	if (cJSON_IsString(e))
		return NULL;
	if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) == 0)
		return "text (or an array of text)";
	const cJSON *x;
	cJSON_ArrayForEach(x, e) if (!cJSON_IsString(x)) return "an array of text";
	return NULL;
}

/* ---- tiers ---- */

enum tier_mode { TIERS_NUMBER, TIERS_RATIO, TIERS_INTEGER };

static enum fl_status load_tiers(struct fl_question *q, const char *file, const char *place, const cJSON *j,
				 enum tier_mode mode)
{
	static const char *const number_tier_keys[] = {"atol", "rtol", "credit", NULL};
	static const char *const ratio_tier_keys[] = {"tol", "credit", NULL};
	static const char *const integer_tier_keys[] = {"atol", "credit", NULL};
	const cJSON *tiers = cJSON_GetObjectItemCaseSensitive(j, "tiers");
	if (!tiers) { /* defaults, documented in docs/grading.md */
		q->tiers = calloc(2, sizeof(*q->tiers));
		if (!q->tiers)
			abort();
		if (mode == TIERS_INTEGER) {
			q->tiers[0] = (struct fl_tier){.credit = 1};
			q->n_tiers = 1;
		} else {
			q->tiers[0] = (struct fl_tier){.rtol = 0.10, .tol = 0.10, .credit = 1};
			q->tiers[1] = (struct fl_tier){.rtol = 0.25, .tol = 0.25, .credit = 0.5};
			q->n_tiers = 2;
		}
		return FL_OK;
	}
	if (!cJSON_IsArray(tiers) || cJSON_GetArraySize(tiers) == 0)
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.tiers: expected a non-empty array of tiers", file, place);
	q->n_tiers = (size_t)cJSON_GetArraySize(tiers);
	q->tiers = calloc(q->n_tiers, sizeof(*q->tiers));
	if (!q->tiers)
		abort();
	size_t i = 0;
	const cJSON *t;
	cJSON_ArrayForEach(t, tiers) {
		char pl[64];
		snprintf(pl, sizeof(pl), "%s.tiers[%zu]", place, i);
		struct fl_tier *tr = &q->tiers[i++];
		enum fl_status st;
		if (!cJSON_IsObject(t))
			return fl_error(FL_EINTERNAL, "rubric '%s': %s: expected an object", file, pl);
		const char *const *keys = mode == TIERS_NUMBER ? number_tier_keys
					  : mode == TIERS_RATIO ? ratio_tier_keys
								: integer_tier_keys;
		if ((st = rubric_error(fl_json_check_keys(file, pl, t, keys))) ||
		    (st = rubric_error(fl_json_get_number(file, pl, t, "credit", 1, &tr->credit))) ||
		    (st = rubric_error(fl_json_get_number(file, pl, t, "atol", 0, &tr->atol))) ||
		    (st = rubric_error(fl_json_get_number(file, pl, t, "rtol", 0, &tr->rtol))) ||
		    (st = rubric_error(fl_json_get_number(file, pl, t, "tol", 0, &tr->tol))))
			return st;
		if (!(tr->credit > 0 && tr->credit <= 1))
			return fl_error(FL_EINTERNAL, "rubric '%s': %s.credit: %g is out of range, expected (0, 1]", file, pl,
					tr->credit);
		if (tr->atol < 0 || tr->rtol < 0 || tr->tol < 0)
			return fl_error(FL_EINTERNAL, "rubric '%s': %s: tolerances must not be negative", file, pl);
		if (mode == TIERS_RATIO && !cJSON_GetObjectItemCaseSensitive(t, "tol"))
			return fl_error(FL_EINTERNAL, "rubric '%s': %s.tol: missing, expected a number (0.1 = within 10%%)",
					file, pl);
	}
	return FL_OK;
}

static void describe_tiers(const struct fl_question *q, enum tier_mode mode, struct strbuf *sb)
{
	for (size_t i = 0; i < q->n_tiers; i++) {
		const struct fl_tier *t = &q->tiers[i];
		strbuf_addf(sb, "%s%g credit within ", i ? "; " : "", t->credit);
		if (mode == TIERS_RATIO)
			strbuf_addf(sb, "a factor of %g", 1 + t->tol);
		else if (mode == TIERS_INTEGER)
			strbuf_addf(sb, "%g", t->atol);
		else
			strbuf_addf(sb, "atol %g + rtol %g", t->atol, t->rtol);
	}
}

static void describe_expected_numbers(const struct fl_judge_ctx *c, const char *unit, struct strbuf *sb)
{
	double v[16];
	size_t n = expected_numbers(c->expected, v, 16);
	strbuf_adds(sb, "expected ");
	for (size_t i = 0; i < n; i++) {
		char b[64];
		fl_fmt_num(b, sizeof(b), v[i]);
		strbuf_addf(sb, "%s%s%s%s", i ? " or " : "", b, unit && *unit ? " " : "", unit ? unit : "");
	}
	strbuf_adds(sb, "; ");
}

static void note_expected_ref(const struct fl_judge_ctx *c, size_t alt, struct strbuf *notes)
{
	const cJSON *spec = c->q->expected;
	const cJSON *s = cJSON_IsArray(spec) ? cJSON_GetArrayItem(spec, (int)alt) : spec;
	if (cJSON_IsString(s))
		strbuf_addf(notes, "matched %s", s->valuestring);
	else
		strbuf_addf(notes, "matched alternative %zu", alt + 1);
}

/* ---- number and ratio ---- */

static const char *const number_keys[] = {"unit", "tiers", NULL};
static const char *const ratio_keys[] = {"tiers", NULL};
static const char *const integer_keys[] = {"tiers", NULL};

static enum fl_status load_number(struct fl_question *q, const char *file, const char *place, const cJSON *j)
{
	const char *unit = "";
	enum fl_status st = rubric_error(fl_json_get_string(file, place, j, "unit", 0, &unit));
	if (st)
		return st;
	q->unit = fl_unit_canonical(unit);
	if (!q->unit)
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.unit: unknown unit '%s', expected ms, us, s, ns, count, "
				"fraction, percent or x", file, place, unit);
	return load_tiers(q, file, place, j, TIERS_NUMBER);
}

static enum fl_status load_ratio(struct fl_question *q, const char *file, const char *place, const cJSON *j)
{
	q->unit = "x";
	return load_tiers(q, file, place, j, TIERS_RATIO);
}

static enum fl_status load_integer(struct fl_question *q, const char *file, const char *place, const cJSON *j)
{
	q->unit = "";
	return load_tiers(q, file, place, j, TIERS_INTEGER);
}

static const char *display_unit(const char *unit)
{
	return !strcmp(unit, "count") || !strcmp(unit, "fraction") || !strcmp(unit, "percent") ? "" : unit;
}

/* Read a quantity in the question's unit; 0 after a format error (v filled).
 * *inverse_of > 0 when it was written as an inverse ("112 times faster"). */
static int read_number(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v, double *s,
		       const char **note, double *inverse_of)
{
	const struct fl_question *q = c->q;
	const char *as = !strcmp(q->unit, "x") || !strcmp(q->kind->name, "ratio") ? "a factor" : "a number";
	*note = NULL;
	*inverse_of = 0;
	if (a->type == FL_ANS_NUMBER) {
		if (!isfinite(a->number)) {
			format_error(c, v, a, as, "not a finite number");
			return 0;
		}
		*s = a->number;
		if (!strcmp(q->unit, "fraction") && *s > 1 && *s <= 100) {
			*s /= 100;
			*note = "read as a percentage";
		}
		return 1;
	}
	if (a->type != FL_ANS_TEXT) {
		format_error(c, v, a, as, a->type == FL_ANS_NULL || a->too_long ? NULL : "expected one number");
		return 0;
	}
	if (!text_of(c, a, v, as))
		return 0;
	struct fl_quantity qt;
	const char *why;
	if (fl_quantity_parse(a->text, &qt, &why) != 0 || fl_quantity_convert(&qt, q->unit, s, &why, note) != 0) {
		format_error(c, v, a, as, why);
		return 0;
	}
	if (qt.inverse)
		*inverse_of = qt.inverse_of;
	return 1;
}

static void judge_numeric(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v,
			  enum tier_mode mode)
{
	const struct fl_question *q = c->q;
	double s, inverse_of;
	const char *note;
	if (!read_number(c, a, v, &s, &note, &inverse_of))
		return;
	double t[16];
	size_t nt = expected_numbers(c->expected, t, 16);
	double best = 0;
	size_t best_alt = 0, best_tier = 0;
	for (size_t i = 0; i < nt; i++)
		for (size_t k = 0; k < q->n_tiers; k++) {
			const struct fl_tier *tr = &q->tiers[k];
			int ok = mode == TIERS_RATIO ? fl_tol_ratio(s, t[i], tr->tol) : fl_tol_number(s, t[i], tr->atol, tr->rtol);
			if (ok && tr->credit > best) {
				best = tr->credit;
				best_alt = i;
				best_tier = k;
			}
		}
	set_credit(v, best);
	char num[64], *shown = fl_clean_text(a->text, SHOWN);
	fl_fmt_num(num, sizeof(num), s);
	const char *du = display_unit(q->unit);
	struct strbuf ra = STRBUF_INIT;
	strbuf_addf(&ra, "%s%s%s", num, *du && strcmp(du, "x") ? " " : "", du);
	v->read_as = ra.buf;
	strbuf_addf(&v->feedback, "read '%s' as %s%s%s%s", shown, v->read_as, note ? " (" : "", note ? note : "",
		    note ? ")" : "");
	free(shown);
	int ratio_like = mode == TIERS_RATIO || !strcmp(q->unit, "x");
	if (inverse_of > 0 || inverse_of < 0) {
		char inv[64];
		fl_fmt_num(inv, sizeof(inv), inverse_of);
		strbuf_addf(&v->feedback, " (the inverse of %s%s)", inv, ratio_like ? "x" : "");
	}
	strbuf_addf(&v->feedback, ": %s", verdict_words(v));
	if (v->outcome == FL_OUT_PARTIAL)
		strbuf_addf(&v->feedback, " (%g%% credit)", v->credit * 100);
	strbuf_adds(&v->feedback, ".");
	if (v->outcome == FL_OUT_WRONG) {
		const struct fl_tier *top = &q->tiers[0];
		for (size_t k = 0; k < q->n_tiers; k++)
			if (q->tiers[k].credit > top->credit)
				top = &q->tiers[k];
		int units = 0, inverted = 0;
		for (size_t i = 0; i < nt; i++) {
			for (int d = -1; d <= 1; d += 2) {
				double f = d < 0 ? 1e-3 : 1e3;
				units |= mode == TIERS_RATIO ? fl_tol_ratio(s * f, t[i], top->tol)
							     : fl_tol_number(s * f, t[i], top->atol, top->rtol);
			}
			if (mode == TIERS_RATIO && s > 0)
				inverted |= fl_tol_ratio(1 / s, t[i], top->tol);
		}
		if (units)
			strbuf_adds(&v->feedback, " Check your units: the value looks off by a factor of 1000.");
		else if (inverted || (ratio_like && inverse_of != 0))
			strbuf_adds(&v->feedback, " Check the direction of the ratio (which run is divided by which).");
		strbuf_addf(&v->notes, "no tier matched%s%s", units ? "; off by 1000 (units)" : inverted ? "; inverted" : "",
			    inverse_of != 0 ? "; written as an inverse" : "");
	} else {
		note_expected_ref(c, best_alt, &v->notes);
		strbuf_addf(&v->notes, ", tier %zu of %zu (credit %g)", best_tier + 1, q->n_tiers, best);
	}
	describe_expected_numbers(c, mode == TIERS_RATIO ? "x" : du, &v->key);
	describe_tiers(q, mode, &v->key);
}

static void judge_number(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v)
{
	judge_numeric(c, a, v, TIERS_NUMBER);
}

static void judge_ratio(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v)
{
	judge_numeric(c, a, v, TIERS_RATIO);
}

/* ---- integer / period ---- */

static void judge_integer(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v)
{
	const struct fl_question *q = c->q;
	int period = !strcmp(q->kind->name, "period");
	const char *as = period ? "a period" : "a whole number";
	long s;
	const char *why;
	if (a->type == FL_ANS_NUMBER) {
		if (!isfinite(a->number) || a->number != floor(a->number) || fabs(a->number) > 1e9) {
			format_error(c, v, a, as, "expected a whole number");
			return;
		}
		s = (long)a->number;
	} else if (a->type != FL_ANS_TEXT) {
		format_error(c, v, a, as, a->type == FL_ANS_NULL || a->too_long ? NULL : "expected one number");
		return;
	} else if (!text_of(c, a, v, as)) {
		return;
	} else if (fl_whole_parse(a->text, period, &s, &why) != 0) {
		format_error(c, v, a, as, why);
		return;
	}
	double t[16];
	size_t nt = expected_numbers(c->expected, t, 16);
	double best = 0;
	size_t best_alt = 0, best_tier = 0;
	for (size_t i = 0; i < nt; i++)
		for (size_t k = 0; k < q->n_tiers; k++)
			if (fabs((double)s - t[i]) <= q->tiers[k].atol && q->tiers[k].credit > best) {
				best = q->tiers[k].credit;
				best_alt = i;
				best_tier = k;
			}
	set_credit(v, best);
	char *shown = fl_clean_text(a->text, SHOWN);
	struct strbuf ra = STRBUF_INIT;
	strbuf_addf(&ra, "%ld", s);
	v->read_as = ra.buf;
	strbuf_addf(&v->feedback, "read '%s' as %ld: %s", shown, s, verdict_words(v));
	free(shown);
	if (v->outcome == FL_OUT_PARTIAL)
		strbuf_addf(&v->feedback, " (%g%% credit)", v->credit * 100);
	strbuf_adds(&v->feedback, ".");
	if (v->outcome != FL_OUT_WRONG) {
		note_expected_ref(c, best_alt, &v->notes);
		strbuf_addf(&v->notes, ", tier %zu of %zu (credit %g)", best_tier + 1, q->n_tiers, best);
	} else {
		strbuf_adds(&v->notes, "no tier matched");
	}
	describe_expected_numbers(c, "", &v->key);
	describe_tiers(q, TIERS_INTEGER, &v->key);
}

/* ---- choice, span and set ---- */

static const char *const choice_keys[] = {"vocabulary", "choices", "aliases", "partial_credit", NULL};
static const char *const set_keys[] = {"vocabulary", "choices", "aliases", "extra_penalty", NULL};

static enum fl_status load_vocabulary(struct fl_question *q, const char *file, const char *place, const cJSON *j,
				      const char *default_vocabulary)
{
	enum fl_status st;
	q->vocabulary = default_vocabulary;
	if ((st = rubric_error(fl_json_get_string(file, place, j, "vocabulary", 0, &q->vocabulary))))
		return st;
	if (q->vocabulary && strcmp(q->vocabulary, "spans") && !fl_vocabulary_find(q->vocabulary))
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.vocabulary: unknown '%s', expected families, fixes, yesno "
				"or spans", file, place, q->vocabulary);
	q->choices = cJSON_GetObjectItemCaseSensitive(j, "choices");
	if (q->choices) {
		int good = cJSON_IsArray(q->choices) && cJSON_GetArraySize(q->choices) > 0;
		const cJSON *c;
		cJSON_ArrayForEach(c, q->choices) good &= cJSON_IsString(c) && *c->valuestring;
		if (!good)
			return fl_error(FL_EINTERNAL, "rubric '%s': %s.choices: expected a non-empty array of IDs", file, place);
	}
	if (!q->vocabulary && !q->choices)
		return fl_error(FL_EINTERNAL, "rubric '%s': %s: expected 'vocabulary' or 'choices'", file, place);
	q->aliases = cJSON_GetObjectItemCaseSensitive(j, "aliases");
	if (q->aliases) {
		if (!cJSON_IsObject(q->aliases))
			return fl_error(FL_EINTERNAL, "rubric '%s': %s.aliases: expected an object {\"ID\": [aliases]}", file,
					place);
		struct fl_matcher probe = FL_MATCHER_INIT;
		const cJSON *list;
		st = FL_OK;
		cJSON_ArrayForEach(list, q->aliases) {
			int good = cJSON_IsArray(list);
			const cJSON *al;
			cJSON_ArrayForEach(al, list) {
				good &= cJSON_IsString(al);
				char err[128];
				if (good && !strncmp(al->valuestring, "re:", 3) &&
				    fl_matcher_add_regex(&probe, list->string, al->valuestring + 3, err, sizeof(err))) {
					st = fl_error(FL_EINTERNAL, "rubric '%s': %s.aliases.%s: bad regular expression '%s': %s",
						      file, place, list->string, al->valuestring + 3, err);
					break;
				}
			}
			if (!st && !good)
				st = fl_error(FL_EINTERNAL, "rubric '%s': %s.aliases.%s: expected an array of text", file, place,
					      list->string);
			if (st)
				break;
		}
		fl_matcher_release(&probe);
		if (st)
			return st;
	}
	return FL_OK;
}

static enum fl_status load_choice_with(struct fl_question *q, const char *file, const char *place, const cJSON *j,
				      const char *default_vocabulary)
{
	enum fl_status st = load_vocabulary(q, file, place, j, default_vocabulary);
	if (st)
		return st;
	q->partial_credit = cJSON_GetObjectItemCaseSensitive(j, "partial_credit");
	if (q->partial_credit) {
		int good = cJSON_IsObject(q->partial_credit);
		const cJSON *c;
		cJSON_ArrayForEach(c, q->partial_credit) good &= cJSON_IsNumber(c) && c->valuedouble > 0 && c->valuedouble < 1;
		if (!good)
			return fl_error(FL_EINTERNAL, "rubric '%s': %s.partial_credit: expected {\"ID\": credit in (0, 1)}",
					file, place);
	}
	return FL_OK;
}

static enum fl_status load_choice(struct fl_question *q, const char *file, const char *place, const cJSON *j)
{
	return load_choice_with(q, file, place, j, NULL);
}

static enum fl_status load_span(struct fl_question *q, const char *file, const char *place, const cJSON *j)
{
	return load_choice_with(q, file, place, j, "spans");
}

static enum fl_status load_set(struct fl_question *q, const char *file, const char *place, const cJSON *j)
{
	enum fl_status st = load_vocabulary(q, file, place, j, NULL);
	if (st)
		return st;
	q->extra_penalty = -1; /* default: 1 / number of expected items */
	if ((st = rubric_error(fl_json_get_number(file, place, j, "extra_penalty", 0, &q->extra_penalty))))
		return st;
	if (cJSON_GetObjectItemCaseSensitive(j, "extra_penalty") && !(q->extra_penalty >= 0 && q->extra_penalty <= 1))
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.extra_penalty: %g is out of range, expected [0, 1]", file,
				place, q->extra_penalty);
	return FL_OK;
}

static void add_spans_of(struct fl_matcher *m, const cJSON *metrics)
{
	const cJSON *s;
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(metrics, "spans")) fl_matcher_add(m, s->string, NULL);
}

static const char *build_matcher(const struct fl_judge_ctx *c, struct fl_matcher *m)
{
	const struct fl_question *q = c->q;
	const char *noun = "choice";
	if (q->vocabulary && !strcmp(q->vocabulary, "spans")) {
		add_spans_of(m, cJSON_GetObjectItemCaseSensitive(c->truth, "metrics"));
		add_spans_of(m, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c->truth, "baseline"),
								 "metrics"));
		noun = "span name of this trace";
	} else if (q->vocabulary) {
		const struct fl_vocabulary *voc = fl_vocabulary_find(q->vocabulary);
		fl_matcher_add_vocabulary(m, voc);
		noun = voc->noun;
	}
	const cJSON *x;
	cJSON_ArrayForEach(x, q->choices) fl_matcher_add(m, x->valuestring, NULL);
	if (cJSON_IsString(c->expected))
		fl_matcher_add(m, c->expected->valuestring, NULL);
	cJSON_ArrayForEach(x, c->expected) if (cJSON_IsString(x)) fl_matcher_add(m, x->valuestring, NULL);
	const cJSON *list;
	cJSON_ArrayForEach(list, q->aliases) {
		cJSON_ArrayForEach(x, list) {
			char err[128];
			if (!strncmp(x->valuestring, "re:", 3))
				fl_matcher_add_regex(m, list->string, x->valuestring + 3, err, sizeof(err));
			else
				fl_matcher_add(m, list->string, x->valuestring);
		}
	}
	return noun;
}

static int expected_has(const cJSON *expected, const char *id)
{
	char *n = fl_norm(id, 1);
	int hit = 0;
	if (cJSON_IsString(expected)) {
		char *e = fl_norm(expected->valuestring, 1);
		hit = !strcmp(e, n);
		free(e);
	}
	const cJSON *x;
	cJSON_ArrayForEach(x, expected) {
		if (!cJSON_IsString(x))
			continue;
		char *e = fl_norm(x->valuestring, 1);
		hit |= !strcmp(e, n);
		free(e);
	}
	free(n);
	return hit;
}

static void describe_expected_texts(const cJSON *expected, struct strbuf *sb)
{
	strbuf_adds(sb, "expected ");
	if (cJSON_IsString(expected))
		strbuf_adds(sb, expected->valuestring);
	const cJSON *x;
	int first = 1;
	cJSON_ArrayForEach(x, expected) {
		if (cJSON_IsString(x)) {
			strbuf_addf(sb, "%s%s", first ? "" : ", ", x->valuestring);
			first = 0;
		}
	}
}

static void judge_choice(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v)
{
	const struct fl_question *q = c->q;
	const char *text = text_of(c, a, v, "a choice");
	if (!text)
		return;
	struct fl_matcher m = FL_MATCHER_INIT;
	const char *noun = build_matcher(c, &m);
	struct fl_match r;
	fl_matcher_match(&m, text, &r);
	char *shown = fl_clean_text(text, SHOWN);
	if (r.n == 0) {
		set_credit(v, 0);
		int catalog = q->vocabulary && (!strcmp(q->vocabulary, "families") || !strcmp(q->vocabulary, "fixes"));
		strbuf_addf(&v->feedback, "could not read '%s' as any %s%s", shown, noun,
			    catalog ? "; answers are matched against the catalog IDs (docs/catalog.md) and common names for them"
				    : "");
		strbuf_adds(&v->notes, "no term matched");
	} else if (r.n > 1) {
		set_credit(v, 0);
		struct strbuf ra = STRBUF_INIT;
		for (size_t i = 0; i < r.n; i++)
			strbuf_addf(&ra, "%s%s", i ? ", " : "", m.terms[r.term[i]].id);
		strbuf_addf(&v->feedback, "read '%s' as several answers (%s): give one", shown, ra.buf);
		v->read_as = ra.buf;
		strbuf_adds(&v->notes, "ambiguous: several terms matched");
	} else {
		const char *id = m.terms[r.term[0]].id;
		double credit = expected_has(c->expected, id) ? 1 : 0;
		const cJSON *pc;
		cJSON_ArrayForEach(pc, q->partial_credit) {
			char *a_n = fl_norm(pc->string, 1), *b_n = fl_norm(id, 1);
			if (!credit && !strcmp(a_n, b_n))
				credit = pc->valuedouble;
			free(a_n);
			free(b_n);
		}
		set_credit(v, credit);
		v->read_as = fl_clean_text(id, 200);
		strbuf_addf(&v->feedback, "read '%s' as %s: %s", shown, v->read_as, verdict_words(v));
		if (v->outcome == FL_OUT_PARTIAL)
			strbuf_addf(&v->feedback, " (%g%% credit)", v->credit * 100);
		strbuf_adds(&v->feedback, ".");
		strbuf_addf(&v->notes, "%s match", r.exact ? "exact" : "phrase");
	}
	free(shown);
	describe_expected_texts(c->expected, &v->key);
	fl_matcher_release(&m);
}

/* Split a set answer into items: a JSON list, or text cut at , ; / + & newlines
 * and the word "and". */
static size_t split_items(const struct fl_answer_item *a, char ***out)
{
	size_t n = 0, cap = 8;
	char **items = calloc(cap, sizeof(char *));
	if (!items)
		abort();
	if (a->type == FL_ANS_LIST) {
		for (size_t i = 0; i < a->n_list; i++) {
			if (n == cap && !(items = realloc(items, (cap *= 2) * sizeof(char *))))
				abort();
			items[n++] = strdup(a->list[i]);
		}
		*out = items;
		return n;
	}
	const char *p = a->text;
	while (*p) {
		const char *s = p;
		while (*p && !strchr(",;/+&\n", *p)) {
			if (p > s && p[-1] == ' ' && !strncasecmp(p, "and ", 4))
				break;
			p++;
		}
		const char *e = p;
		if (*p && strchr(",;/+&\n", *p))
			p++;
		else if (*p)
			p += 4; /* "and " */
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		if (e == s)
			continue;
		if (n == cap && !(items = realloc(items, (cap *= 2) * sizeof(char *))))
			abort();
		items[n++] = strndup(s, (size_t)(e - s));
	}
	*out = items;
	return n;
}

static void judge_set(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v)
{
	const struct fl_question *q = c->q;
	if (!text_of(c, a, v, "a list"))
		return;
	char **items;
	size_t n_items = split_items(a, &items);
	if (!n_items) {
		free(items);
		format_error(c, v, a, "a list", NULL);
		return;
	}
	struct fl_matcher m = FL_MATCHER_INIT;
	build_matcher(c, &m);
	int *found = calloc(m.n ? m.n : 1, sizeof(int));
	if (!found)
		abort();
	struct strbuf unknown = STRBUF_INIT;
	size_t n_unknown = 0;
	for (size_t i = 0; i < n_items; i++) {
		struct fl_match r;
		fl_matcher_match(&m, items[i], &r);
		if (!r.n) {
			char *sh = fl_clean_text(items[i], 40);
			strbuf_addf(&unknown, "%s'%s'", n_unknown ? ", " : "", sh);
			free(sh);
			n_unknown++;
		}
		for (size_t k = 0; k < r.n; k++)
			found[r.term[k]] = 1;
		free(items[i]);
	}
	free(items);
	size_t n_expected = cJSON_IsString(c->expected) ? 1 : (size_t)cJSON_GetArraySize(c->expected);
	size_t right = 0, extra = n_unknown;
	struct strbuf ra = STRBUF_INIT;
	for (size_t i = 0; i < m.n; i++) {
		if (!found[i])
			continue;
		strbuf_addf(&ra, "%s%s", ra.len ? ", " : "", m.terms[i].id);
		if (expected_has(c->expected, m.terms[i].id))
			right++;
		else
			extra++;
	}
	double penalty = q->extra_penalty >= 0 ? q->extra_penalty : 1.0 / (double)(n_expected ? n_expected : 1);
	set_credit(v, (double)right / (double)(n_expected ? n_expected : 1) - (double)extra * penalty);
	v->read_as = ra.buf ? ra.buf : fl_clean_text("", 1);
	size_t given = right + extra;
	strbuf_addf(&v->feedback, "read as: %s", ra.len ? ra.buf : "(no recognised items)");
	if (n_unknown)
		strbuf_addf(&v->feedback, "; not recognised: %s", unknown.buf);
	strbuf_addf(&v->feedback, ". %zu of your %zu item%s %s right", right, given, given == 1 ? "" : "s",
		    right == 1 ? "is" : "are");
	if (extra && v->credit < 1)
		strbuf_adds(&v->feedback, "; wrong extra items cost credit");
	strbuf_addf(&v->feedback, ": %s", verdict_words(v));
	if (v->outcome == FL_OUT_PARTIAL)
		strbuf_addf(&v->feedback, " (%g%% credit)", v->credit * 100);
	strbuf_adds(&v->feedback, ".");
	strbuf_addf(&v->notes, "%zu right of %zu expected, %zu extra (penalty %g each)", right, n_expected, extra, penalty);
	describe_expected_texts(c->expected, &v->key);
	strbuf_release(&unknown);
	free(found);
	fl_matcher_release(&m);
}

/* ---- free text with required concepts ---- */

static const char *const text_keys[] = {"concepts", "need", NULL};

static enum fl_status load_text(struct fl_question *q, const char *file, const char *place, const cJSON *j)
{
	static const char *const concept_keys[] = {"name", "aliases", NULL};
	const cJSON *cs = cJSON_GetObjectItemCaseSensitive(j, "concepts");
	if (q->expected)
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.expected: a text question has concepts, not an expected value",
				file, place);
	if (!cJSON_IsArray(cs) || cJSON_GetArraySize(cs) == 0)
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.concepts: expected a non-empty array of {name, aliases}", file,
				place);
	size_t i = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cs) {
		char pl[64];
		snprintf(pl, sizeof(pl), "%s.concepts[%zu]", place, i++);
		const char *name = NULL;
		enum fl_status st;
		if (!cJSON_IsObject(c))
			return fl_error(FL_EINTERNAL, "rubric '%s': %s: expected an object {name, aliases}", file, pl);
		if ((st = rubric_error(fl_json_check_keys(file, pl, c, concept_keys))) ||
		    (st = rubric_error(fl_json_get_string(file, pl, c, "name", 1, &name))))
			return st;
		if (fl_matcher_find(&q->concepts, name) >= 0)
			return fl_error(FL_EINTERNAL, "rubric '%s': %s.name: '%s' is given twice", file, pl, name);
		fl_matcher_add(&q->concepts, name, NULL);
		const cJSON *al = cJSON_GetObjectItemCaseSensitive(c, "aliases"), *x;
		if (al && !cJSON_IsArray(al))
			return fl_error(FL_EINTERNAL, "rubric '%s': %s.aliases: expected an array of text", file, pl);
		cJSON_ArrayForEach(x, al) {
			char err[128];
			if (!cJSON_IsString(x))
				return fl_error(FL_EINTERNAL, "rubric '%s': %s.aliases: expected an array of text", file, pl);
			if (!strncmp(x->valuestring, "re:", 3)) {
				if (fl_matcher_add_regex(&q->concepts, name, x->valuestring + 3, err, sizeof(err)))
					return fl_error(FL_EINTERNAL, "rubric '%s': %s.aliases: bad regular expression '%s': %s",
							file, pl, x->valuestring + 3, err);
			} else {
				fl_matcher_add(&q->concepts, name, x->valuestring);
			}
		}
	}
	q->need = (long)q->concepts.n;
	enum fl_status st = rubric_error(fl_json_get_int(file, place, j, "need", 0, 1, (long)q->concepts.n, &q->need));
	return st;
}

static void judge_text(const struct fl_judge_ctx *c, const struct fl_answer_item *a, struct fl_verdict *v)
{
	const struct fl_question *q = c->q;
	const char *text = text_of(c, a, v, "text");
	if (!text)
		return;
	struct fl_match r;
	fl_matcher_match(&q->concepts, text, &r);
	set_credit(v, (double)r.n / (double)q->need);
	struct strbuf ra = STRBUF_INIT;
	for (size_t i = 0; i < r.n; i++)
		strbuf_addf(&ra, "%s%s", i ? ", " : "", q->concepts.terms[r.term[i]].id);
	v->read_as = ra.buf ? ra.buf : fl_clean_text("", 1);
	size_t found = r.n > (size_t)q->need ? (size_t)q->need : r.n;
	if (q->need == 1)
		strbuf_addf(&v->feedback, "%s the idea this answer needs", found ? "found" : "did not find");
	else
		strbuf_addf(&v->feedback, "found %zu of the %ld ideas this answer needs", found, q->need);
	if (r.n)
		strbuf_addf(&v->feedback, " (read as mentioning: %s)", v->read_as);
	strbuf_addf(&v->feedback, ": %s", verdict_words(v));
	if (v->outcome == FL_OUT_PARTIAL)
		strbuf_addf(&v->feedback, " (%g%% credit)", v->credit * 100);
	strbuf_adds(&v->feedback, ".");
	strbuf_addf(&v->notes, "%zu concept(s) matched, %ld needed", r.n, q->need);
	strbuf_adds(&v->key, "concepts: ");
	for (size_t i = 0; i < q->concepts.n; i++)
		strbuf_addf(&v->key, "%s%s", i ? ", " : "", q->concepts.terms[i].id);
	strbuf_addf(&v->key, " (%ld needed)", q->need);
}

/* ---- the registry ---- */

static const struct fl_question_kind kind_number = {
	.name = "number",
	.summary = "a measured value with a unit; tiers |s - t| <= atol + rtol*|t|",
	.keys = number_keys,
	.load = load_number,
	.check_expected = expect_numbers,
	.judge = judge_number,
};

static const struct fl_question_kind kind_ratio = {
	.name = "ratio",
	.summary = "a factor (120x); geometric tiers t/(1+tol) <= s <= t*(1+tol)",
	.keys = ratio_keys,
	.load = load_ratio,
	.check_expected = expect_positive,
	.judge = judge_ratio,
};

static const struct fl_question_kind kind_integer = {
	.name = "integer",
	.summary = "a whole number (a count, a step); exact unless tiers give an atol",
	.keys = integer_keys,
	.load = load_integer,
	.check_expected = expect_integers,
	.judge = judge_integer,
};

static const struct fl_question_kind kind_period = {
	.name = "period",
	.summary = "a period in steps ('3', 'every 3rd step'); exact unless tiers give an atol",
	.keys = integer_keys,
	.load = load_integer,
	.check_expected = expect_integers,
	.judge = judge_integer,
};

static const struct fl_question_kind kind_choice = {
	.name = "choice",
	.summary = "one term of a vocabulary (families, fixes, yesno, spans) matched through aliases",
	.keys = choice_keys,
	.load = load_choice,
	.check_expected = expect_texts,
	.judge = judge_choice,
};

static const struct fl_question_kind kind_span = {
	.name = "span",
	.summary = "a span name of the trace (a choice over the truth's span names)",
	.keys = choice_keys,
	.load = load_span,
	.check_expected = expect_texts,
	.judge = judge_choice,
};

static const struct fl_question_kind kind_set = {
	.name = "set",
	.summary = "several terms of a vocabulary; coverage scoring, wrong extras cost",
	.keys = set_keys,
	.load = load_set,
	.check_expected = expect_texts,
	.judge = judge_set,
};

static const struct fl_question_kind kind_text = {
	.name = "text",
	.summary = "free text that must mention required concepts (alias lists per concept)",
	.keys = text_keys,
	.load = load_text,
	.check_expected = NULL,
	.judge = judge_text,
};

const struct fl_question_kind *const fl_question_kinds[] = {
	&kind_number, &kind_ratio, &kind_integer, &kind_period, &kind_choice, &kind_span, &kind_set, &kind_text, NULL,
};

const struct fl_question_kind *fl_question_kind_find(const char *name)
{
	for (size_t i = 0; fl_question_kinds[i]; i++)
		if (strcmp(fl_question_kinds[i]->name, name) == 0)
			return fl_question_kinds[i];
	return NULL;
}
