/* check_grader.c — unit tests of the grader's pieces: the quantity parser, the
 * normaliser, tolerances, the reference resolver, vocabulary matching, the
 * answer parser, period detection, and the registries (question kinds, report
 * formats, vocabularies). */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "grader/grading/answer.h"
#include "grader/grading/grade.h"
#include "grader/analysis/host_metrics.h"
#include "grader/grading/refs.h"
#include "grader/grading/report.h"
#include "grader/grading/rubric.h"
#include "grader/grading/units.h"
#include "grader/grading/vocab.h"

/* ---- quantities ---- */

static double in_unit(const char *text, const char *unit, int *ok)
{
	struct fl_quantity q;
	const char *why, *note;
	double v = NAN;
	*ok = fl_quantity_parse(text, &q, &why) == 0 && fl_quantity_convert(&q, unit, &v, &why, &note) == 0;
	return v;
}

START_TEST(test_quantity_units)
{
	int ok;
	ck_assert_double_eq_tol(in_unit("36.9 ms", "ms", &ok), 36.9, 1e-12);
	ck_assert(ok);
	ck_assert_double_eq_tol(in_unit("0.3ms", "ms", &ok), 0.3, 1e-12);
	ck_assert_double_eq_tol(in_unit("300 us", "ms", &ok), 0.3, 1e-12);
	ck_assert_double_eq_tol(in_unit("300 \xc2\xb5s", "ms", &ok), 0.3, 1e-12);
	ck_assert_double_eq_tol(in_unit("300 \xce\xbcs", "ms", &ok), 0.3, 1e-12);
	ck_assert_double_eq_tol(in_unit("about 3 s", "ms", &ok), 3000, 1e-9);
	ck_assert_double_eq_tol(in_unit("1.5 seconds.", "ms", &ok), 1500, 1e-9);
	ck_assert_double_eq_tol(in_unit("2e3 ns", "us", &ok), 2, 1e-12);
	ck_assert_double_eq_tol(in_unit("36.9", "ms", &ok), 36.9, 1e-12); /* the question's unit */
	ck_assert_double_eq_tol(in_unit("120x", "x", &ok), 120, 1e-12);
	ck_assert_double_eq_tol(in_unit("~120 \xc3\x97", "x", &ok), 120, 1e-12);
	ck_assert_double_eq_tol(in_unit("\xc3\x97" "25", "x", &ok), 25, 1e-12);
	ck_assert_double_eq_tol(in_unit("x25", "x", &ok), 25, 1e-12);
	ck_assert_double_eq_tol(in_unit("\xe2\x89\x88 7.5 times", "x", &ok), 7.5, 1e-12);
	ck_assert_double_eq_tol(in_unit("97%", "fraction", &ok), 0.97, 1e-12);
	ck_assert_double_eq_tol(in_unit("0.97", "fraction", &ok), 0.97, 1e-12);
	ck_assert_double_eq_tol(in_unit("97", "fraction", &ok), 0.97, 1e-12);
	ck_assert_double_eq_tol(in_unit("7,504", "count", &ok), 7504, 1e-12);
	ck_assert_double_eq_tol(in_unit("1,234,567.5 ops", "count", &ok), 1234567.5, 1e-9);
	ck_assert_double_eq_tol(in_unit("\xe2\x88\x92" "5", "", &ok), -5, 1e-12);
	ck_assert(ok);
}
END_TEST

START_TEST(test_quantity_rejects)
{
	static const char *const bad[] = {"", "   ", "NaN", "nan ms", "inf", "-inf", "1e400", "1e999 ms", "36,9 ms",
					  "1,2345", "1234,567", "12 parsecs", "ms", "abc", "1..2", "x", "3 4", "1e", NULL};
	for (const char *const *b = bad; *b; b++) {
		struct fl_quantity q;
		const char *why = NULL;
		int r = fl_quantity_parse(*b, &q, &why);
		ck_assert_msg(r == -1, "'%s' should not parse", *b);
		ck_assert_ptr_nonnull(why);
	}
	char longtext[400];
	memset(longtext, '9', sizeof(longtext) - 1);
	longtext[sizeof(longtext) - 1] = '\0';
	struct fl_quantity q;
	const char *why;
	ck_assert_int_eq(fl_quantity_parse(longtext, &q, &why), -1);
	/* dimension mismatch */
	int ok;
	in_unit("30 ms", "count", &ok);
	ck_assert(!ok);
	in_unit("3x", "ms", &ok);
	ck_assert(!ok);
	in_unit("50%", "x", &ok);
	ck_assert(!ok);
}
END_TEST

START_TEST(test_tolerance)
{
	ck_assert(fl_tol_number(33, 30, 0, 0.1));
	ck_assert(fl_tol_number(27, 30, 0, 0.1));
	ck_assert(!fl_tol_number(33.01, 30, 0, 0.1));
	ck_assert(fl_tol_number(0.52, 0.5, 0.02, 0));
	ck_assert(!fl_tol_number(0.53, 0.5, 0.02, 0));
	ck_assert(fl_tol_number(-1, -1, 0, 0));
	ck_assert(!fl_tol_number(NAN, 1, 1, 1));
	ck_assert(fl_tol_ratio(110, 100, 0.1));
	ck_assert(fl_tol_ratio(100 / 1.1, 100, 0.1));
	ck_assert(!fl_tol_ratio(89, 100, 0.1));
	ck_assert(!fl_tol_ratio(111, 100, 0.1));
	ck_assert(!fl_tol_ratio(0, 100, 10));
	ck_assert(!fl_tol_ratio(-100, -100, 0.1));
}
END_TEST

START_TEST(test_format_number)
{
	char b[64];
	fl_fmt_num(b, sizeof(b), 10);
	ck_assert_str_eq(b, "10");
	fl_fmt_num(b, sizeof(b), 36.9);
	ck_assert_str_eq(b, "36.9");
	fl_fmt_num(b, sizeof(b), 0.000301);
	ck_assert_str_eq(b, "0.000301");
	fl_fmt_num(b, sizeof(b), 7504);
	ck_assert_str_eq(b, "7504");
	fl_fmt_num(b, sizeof(b), 1e20);
	ck_assert_str_eq(b, "1e+20");
}
END_TEST

/* ---- text ---- */

START_TEST(test_normalise)
{
	char *s = fl_norm("  Input-Starvation\t ", 0);
	ck_assert_str_eq(s, "input starvation");
	free(s);
	s = fl_norm("data_loading", 0);
	ck_assert_str_eq(s, "data loading");
	free(s);
	s = fl_norm("GC (pause)!", 1);
	ck_assert_str_eq(s, "gc pause");
	free(s);
	s = fl_norm("GC (pause)!", 0);
	ck_assert_str_eq(s, "gc (pause)!");
	free(s);
	s = fl_norm("torch.compile", 1);
	ck_assert_str_eq(s, "torch compile");
	free(s);
	s = fl_norm("", 1);
	ck_assert_str_eq(s, "");
	free(s);
	s = fl_norm_key("Step p50 (ms)");
	ck_assert_str_eq(s, "step_p50_ms");
	free(s);
	s = fl_norm_key("--grown-span--");
	ck_assert_str_eq(s, "grown_span");
	free(s);
	ck_assert_int_eq(fl_find_phrase("a gc pause here", "gc pause", 0), 2);
	ck_assert_int_eq(fl_find_phrase("gcc pause", "gc", 0), -1);
	ck_assert_int_eq(fl_find_phrase("the gc", "gc", 0), 4);
	ck_assert_int_eq(fl_find_phrase("logging", "log", 0), -1);
}
END_TEST

START_TEST(test_clean_text)
{
	char *s = fl_clean_text("ok\xff\x01x", 100);
	ck_assert_str_eq(s, "ok\xef\xbf\xbd x");
	free(s);
	s = fl_clean_text("abcdefghij", 6);
	ck_assert_str_eq(s, "abcdef...");
	free(s);
	s = fl_clean_text("\xe2\x80\xae" "evil", 100); /* right-to-left override */
	ck_assert_str_eq(s, "\xef\xbf\xbd" "evil");
	free(s);
	size_t bad = 0;
	ck_assert(!fl_utf8_valid("ab\xc3", 3, &bad));
	ck_assert_int_eq(bad, 2);
	ck_assert(fl_utf8_valid("\xc3\xa9", 2, NULL));
}
END_TEST

/* ---- references ---- */

static const char *truth_text =
	"{\"metrics\": {\"steps\": {\"p50_ms\": 30.0, \"median_ms\": 29.0}, \"ops\": {\"total\": 7504, "
	"\"per_step\": [938, 938]}, \"spans\": {\"a.b\": {\"total_ms\": 4}}},"
	" \"baseline\": {\"metrics\": {\"steps\": {\"p50_ms\": 0.3}, \"ops\": {\"total\": 304}}},"
	" \"faults\": [{\"fault\": \"periodic_stall\", \"params\": {\"period\": 3}},"
	"              {\"fault\": \"gc_pause\", \"params\": {\"period\": 2}}],"
	" \"zero\": 0, \"answer_key\": {\"families\": [\"periodic_host_stall\", \"gc_pause\"]}}";

static double eval_num(const cJSON *truth, const char *expr)
{
	struct fl_ref_ctx ctx = {.truth = truth, .truth_name = "t.truth.json"};
	cJSON *v = NULL;
	ck_assert_msg(fl_ref_eval(expr, &ctx, &v) == FL_OK, "%s: %s", expr, fl_error_msg());
	ck_assert(cJSON_IsNumber(v));
	double d = v->valuedouble;
	cJSON_Delete(v);
	return d;
}

static const char *eval_err(const cJSON *truth, const char *expr)
{
	struct fl_ref_ctx ctx = {.truth = truth, .truth_name = "t.truth.json"};
	cJSON *v = NULL;
	ck_assert_int_eq(fl_ref_eval(expr, &ctx, &v), FL_EINTERNAL);
	ck_assert_ptr_null(v);
	return fl_error_msg();
}

START_TEST(test_refs)
{
	cJSON *t = cJSON_Parse(truth_text);
	ck_assert_ptr_nonnull(t);
	ck_assert_double_eq(eval_num(t, "truth:metrics.steps.p50_ms"), 30.0);
	ck_assert_double_eq_tol(eval_num(t, "ratio(truth:metrics.steps.p50_ms, truth:baseline.metrics.steps.p50_ms)"),
				100.0, 1e-9);
	ck_assert_double_eq(eval_num(t, "truth:faults[fault=gc_pause].params.period"), 2);
	ck_assert_double_eq(eval_num(t, "truth:faults[1].params.period"), 2);
	ck_assert_double_eq(eval_num(t, "truth:metrics.spans[\"a.b\"].total_ms"), 4);
	ck_assert_double_eq(eval_num(t, "truth:metrics.spans[a.b].total_ms"), 4);
	ck_assert_double_eq(eval_num(t, "diff(truth:metrics.ops.total, truth:baseline.metrics.ops.total)"), 7200);
	ck_assert_double_eq(eval_num(t, "sum(truth:metrics.ops.per_step)"), 1876);
	ck_assert_double_eq(eval_num(t, "mean(1, 2, 3)"), 2);
	ck_assert_double_eq(eval_num(t, "max(truth:metrics.steps.p50_ms, truth:metrics.steps.median_ms)"), 30);
	ck_assert_double_eq(eval_num(t, "count(truth:faults)"), 2);
	ck_assert_double_eq(eval_num(t, " mul( 2 , ratio(6, 3) ) "), 4);
	ck_assert(fl_ref_is_expression("truth:x"));
	ck_assert(fl_ref_is_expression("ratio(1,2)"));
	ck_assert(!fl_ref_is_expression("no"));
	ck_assert(!fl_ref_is_expression("data_loading"));

	const char *m = eval_err(t, "truth:metrics.steps.p60_ms");
	ck_assert_msg(strstr(m, "metrics.steps.p60_ms") && strstr(m, "t.truth.json") && strstr(m, "p60_ms"), "%s", m);
	m = eval_err(t, "truth:faults[fault=nope].params");
	ck_assert_msg(strstr(m, "fault=nope"), "%s", m);
	m = eval_err(t, "truth:faults[7]");
	ck_assert_msg(strstr(m, "out of range"), "%s", m);
	m = eval_err(t, "ratio(truth:metrics.ops.total, truth:zero)");
	ck_assert_msg(strstr(m, "denominator"), "%s", m);
	m = eval_err(t, "frobnicate(1)");
	ck_assert_msg(strstr(m, "unknown function"), "%s", m);
	m = eval_err(t, "ratio(1)");
	ck_assert_msg(strstr(m, "argument"), "%s", m);
	m = eval_err(t, "ratio(truth:answer_key, 1)");
	ck_assert_msg(strstr(m, "expected a number"), "%s", m);
	m = eval_err(t, "trace:steps.p50_ms");
	ck_assert_msg(strstr(m, "no trace"), "%s", m);
	m = eval_err(t, "truth:metrics.steps.p50_ms garbage");
	m = eval_err(t, "ratio(ratio(ratio(ratio(ratio(ratio(ratio(ratio(ratio(ratio(ratio(ratio(ratio(ratio(ratio(ratio("
		       "ratio(1,1),1),1),1),1),1),1),1),1),1),1),1),1),1),1),1),1)");
	ck_assert_msg(strstr(m, "deeply"), "%s", m);
	cJSON_Delete(t);
}
END_TEST

/* ---- vocabulary ---- */

static const char *match_one(const struct fl_matcher *m, const char *text)
{
	struct fl_match r;
	fl_matcher_match(m, text, &r);
	return r.n == 1 ? m->terms[r.term[0]].id : r.n ? "(several)" : "(none)";
}

START_TEST(test_vocabulary_matching)
{
	struct fl_matcher m = FL_MATCHER_INIT;
	fl_matcher_add_vocabulary(&m, fl_vocabulary_find("families"));
	ck_assert_str_eq(match_one(&m, "input_starvation"), "input_starvation");
	ck_assert_str_eq(match_one(&m, "Input-Starvation"), "input_starvation");
	ck_assert_str_eq(match_one(&m, "dataloader starvation"), "input_starvation");
	ck_assert_str_eq(match_one(&m, "the GPU is starved by the data loader"), "input_starvation");
	ck_assert_str_eq(match_one(&m, "small op storm"), "op_storm");
	ck_assert_str_eq(match_one(&m, "GC pause"), "gc_pause");
	ck_assert_str_eq(match_one(&m, "op storm or starvation"), "(several)");
	ck_assert_str_eq(match_one(&m, "cosmic rays"), "(none)");
	ck_assert_str_eq(match_one(&m, ""), "(none)");
	fl_matcher_release(&m);

	fl_matcher_add_vocabulary(&m, fl_vocabulary_find("fixes"));
	ck_assert_str_eq(match_one(&m, "use torch.compile"), "fusion");
	ck_assert_str_eq(match_one(&m, "more DataLoader workers + prefetching"), "loader_parallelism");
	ck_assert_str_eq(match_one(&m, "async checkpointing"), "async_checkpoint");
	fl_matcher_release(&m);

	/* a hit inside a longer hit of another term is dropped */
	fl_matcher_add(&m, "t1", "sync");
	fl_matcher_add(&m, "t2", "sync stall");
	ck_assert_str_eq(match_one(&m, "it is a sync stall"), "t2");
	ck_assert_str_eq(match_one(&m, "a sync"), "t1");
	char err[128];
	ck_assert_int_eq(fl_matcher_add_regex(&m, "t3", "ph(ase)? ?[0-9]+", err, sizeof(err)), 0);
	ck_assert_str_eq(match_one(&m, " Phase 12 "), "t3");
	ck_assert_int_eq(fl_matcher_add_regex(&m, "t3", "(unclosed", err, sizeof(err)), -1);
	fl_matcher_release(&m);
}
END_TEST

START_TEST(test_vocabularies_unambiguous)
{
	/* within one vocabulary no ID or alias belongs to two terms */
	for (size_t v = 0; fl_vocabularies[v]; v++) {
		struct fl_matcher m = FL_MATCHER_INIT;
		fl_matcher_add_vocabulary(&m, fl_vocabularies[v]);
		for (size_t i = 0; i < m.n; i++)
			for (size_t k = 0; k < m.terms[i].n_phrases; k++)
				for (size_t j = 0; j < m.n; j++)
					for (size_t l = 0; j != i && l < m.terms[j].n_phrases; l++)
						ck_assert_msg(strcmp(m.terms[i].phrases[k], m.terms[j].phrases[l]) != 0,
							      "%s: '%s' is an alias of %s and %s", fl_vocabularies[v]->name,
							      m.terms[i].phrases[k], m.terms[i].id, m.terms[j].id);
		/* every term reads back as itself */
		for (size_t i = 0; i < m.n; i++)
			ck_assert_str_eq(match_one(&m, m.terms[i].id), m.terms[i].id);
		fl_matcher_release(&m);
	}
}
END_TEST


/* ---- numbers as people write them (issue 14) ---- */

/* Judge one text answer to a one-question kind, in the question's unit, with
 * the default tiers; returns the verdict (caller releases). */
static void judge_text_as(const char *kind, const char *unit, double expected, const char *text, int strict,
			  struct fl_verdict *v)
{
	struct fl_question q = {.id = "q", .kind = fl_question_kind_find(kind), .unit = unit};
	struct fl_tier tiers[2] = {{.rtol = 0.10, .tol = 0.10, .credit = 1}, {.rtol = 0.25, .tol = 0.25, .credit = 0.5}};
	q.tiers = tiers;
	q.n_tiers = !strcmp(kind, "integer") || !strcmp(kind, "period") ? 1 : 2;
	if (q.n_tiers == 1)
		tiers[0] = (struct fl_tier){.credit = 1};
	cJSON *e = cJSON_CreateNumber(expected);
	struct fl_answer_item a = {.type = FL_ANS_TEXT, .text = (char *)text};
	struct fl_judge_ctx c = {.q = &q, .expected = e, .strict = strict};
	memset(v, 0, sizeof(*v));
	q.kind->judge(&c, &a, v);
	cJSON_Delete(e);
}

START_TEST(test_number_forms)
{
	static const struct {
		const char *kind, *unit, *text;
		double expected;
		const char *echo; /* the start of the feedback */
		enum fl_outcome out;
	} cases[] = {
		/* factors */
		{"ratio", "x", "112 times", 112, "read '112 times' as 112x", FL_OUT_CORRECT},
		{"ratio", "x", "112 times slower", 112, "read '112 times slower' as 112x", FL_OUT_CORRECT},
		{"ratio", "x", "112 times longer", 112, "read '112 times longer' as 112x", FL_OUT_CORRECT},
		{"ratio", "x", "112\xc3\x97", 112, "read '112\xc3\x97' as 112x", FL_OUT_CORRECT},
		{"ratio", "x", "112x", 112, "read '112x' as 112x", FL_OUT_CORRECT},
		{"ratio", "x", "112-fold", 112, "read '112-fold' as 112x", FL_OUT_CORRECT},
		{"ratio", "x", "about 57 to 1", 57.25, "read 'about 57 to 1' as 57x", FL_OUT_CORRECT},
		{"ratio", "x", "57:1", 57.25, "read '57:1' as 57x", FL_OUT_CORRECT},
		{"ratio", "x", "twice as long", 2, "read 'twice as long' as 2x", FL_OUT_CORRECT},
		{"ratio", "x", "a hundred and twelve times", 112, "read 'a hundred and twelve times' as 112x", FL_OUT_CORRECT},
		{"ratio", "x", "~112x slower than the baseline", 112, "read '~112x slower than the baseline' as 112x",
		 FL_OUT_CORRECT},
		{"ratio", "x", "roughly 112x", 112, "read 'roughly 112x' as 112x", FL_OUT_CORRECT},
		{"ratio", "x", "approximately 112x", 112, "read 'approximately 112x' as 112x", FL_OUT_CORRECT},
		/* inverses: read as the inverse, and told to check the direction */
		{"ratio", "x", "112 times faster", 112, "read '112 times faster' as 0.00892857143x (the inverse of 112x)",
		 FL_OUT_WRONG},
		{"ratio", "x", "1/112", 112, "read '1/112' as 0.00892857143x (the inverse of 112x)", FL_OUT_WRONG},
		/* counts: k/M suffixes, thousands separators, scientific notation */
		{"number", "count", "7.33k", 7328, "read '7.33k' as 7330", FL_OUT_CORRECT},
		{"number", "count", "7,328", 7328, "read '7,328' as 7328", FL_OUT_CORRECT},
		{"number", "count", "7 328", 7328, "read '7 328' as 7328", FL_OUT_CORRECT},
		{"number", "count", "7.328e3", 7328, "read '7.328e3' as 7328", FL_OUT_CORRECT},
		{"number", "count", "7.328 x 10^3", 7328, "read '7.328 x 10^3' as 7328", FL_OUT_CORRECT},
		{"number", "count", "0.0073M", 7328, "read '0.0073M' as 7300", FL_OUT_CORRECT},
		/* times */
		{"number", "ms", "45.5 ms", 45.5, "read '45.5 ms' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "45.5 msec", 45.5, "read '45.5 msec' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "45.5 milliseconds", 45.5, "read '45.5 milliseconds' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "1 millisecond", 1, "read '1 millisecond' as 1 ms", FL_OUT_CORRECT},
		{"number", "ms", "0.0455 s", 45.5, "read '0.0455 s' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "0.0455 sec", 45.5, "read '0.0455 sec' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "0.0455 seconds", 45.5, "read '0.0455 seconds' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "45500 us", 45.5, "read '45500 us' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "45500 \xc2\xb5s", 45.5, "read '45500 \xc2\xb5s' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "45500 \xce\xbcs", 45.5, "read '45500 \xce\xbcs' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "45500 microseconds", 45.5, "read '45500 microseconds' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "45500000 ns", 45.5, "read '45500000 ns' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "s", "1.5 min", 90, "read '1.5 min' as 90 s", FL_OUT_CORRECT},
		{"number", "ms", "about 45.5 ms per step", 45.5, "read 'about 45.5 ms per step' as 45.5 ms", FL_OUT_CORRECT},
		{"number", "ms", "thirty ms", 30, "read 'thirty ms' as 30 ms", FL_OUT_CORRECT},
		/* shares: a fraction or a percentage */
		{"number", "fraction", "97%", 0.97, "read '97%' as 0.97", FL_OUT_CORRECT},
		{"number", "fraction", "97 percent", 0.97, "read '97 percent' as 0.97", FL_OUT_CORRECT},
		{"number", "fraction", "97 pct", 0.97, "read '97 pct' as 0.97", FL_OUT_CORRECT},
		{"number", "fraction", "0.97", 0.97, "read '0.97' as 0.97", FL_OUT_CORRECT},
		{"number", "fraction", "97", 0.97, "read '97' as 0.97 (read as a percentage)", FL_OUT_CORRECT},
		{"number", "fraction", "97% of step time", 0.97, "read '97% of step time' as 0.97", FL_OUT_CORRECT},
		{"number", "percent", "42%", 42, "read '42%' as 42", FL_OUT_CORRECT},
		/* periods in words */
		{"period", "", "every 3 steps", 3, "read 'every 3 steps' as 3", FL_OUT_CORRECT},
		{"period", "", "every third step", 3, "read 'every third step' as 3", FL_OUT_CORRECT},
		{"period", "", "every 3rd step", 3, "read 'every 3rd step' as 3", FL_OUT_CORRECT},
		{"period", "", "every other step", 2, "read 'every other step' as 2", FL_OUT_CORRECT},
		{"period", "", "every second step", 2, "read 'every second step' as 2", FL_OUT_CORRECT},
		{"period", "", "twice", 2, "read 'twice' as 2", FL_OUT_CORRECT},
		{"period", "", "once every 3 steps", 3, "read 'once every 3 steps' as 3", FL_OUT_CORRECT},
		{"period", "", "1 in 3", 3, "read '1 in 3' as 3", FL_OUT_CORRECT},
		{"period", "", "every step", 1, "read 'every step' as 1", FL_OUT_CORRECT},
		{"period", "", "three", 3, "read 'three' as 3", FL_OUT_CORRECT},
		{"integer", "", "rank 2", 2, "read 'rank 2' as 2", FL_OUT_CORRECT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fl_verdict v;
		judge_text_as(cases[i].kind, cases[i].unit, cases[i].expected, cases[i].text, 0, &v);
		const char *fb = v.feedback.buf ? v.feedback.buf : "";
		ck_assert_msg(!strncmp(fb, cases[i].echo, strlen(cases[i].echo)), "'%s': feedback '%s', expected '%s...'",
			      cases[i].text, fb, cases[i].echo);
		ck_assert_msg(v.outcome == cases[i].out, "'%s': outcome %s, expected %s (%s)", cases[i].text,
			      fl_outcome_name(v.outcome), fl_outcome_name(cases[i].out), fb);
		if (strstr(cases[i].text, "faster") || strchr(cases[i].text, '/'))
			ck_assert_msg(strstr(fb, "Check the direction"), "'%s': %s", cases[i].text, fb);
		fl_verdict_release(&v);
	}
}
END_TEST

START_TEST(test_number_forms_hostile)
{
	/* unreadable, never inf, 0 or a crash; bounded on long input */
	static const char *const bad[] = {"1e400", "1e-400", "10^999", "10^-999", "1e99999", "10^99999", "1/0",
					  "9e307 x 10^9", "12 parsecs", "NaN ms", "inf", "two three", "a", "ms",
					  "7,33k", "1,2345", "3 4", "x", "1e", NULL};
	for (const char *const *b = bad; *b; b++) {
		struct fl_quantity q;
		const char *why = NULL;
		ck_assert_msg(fl_quantity_parse(*b, &q, &why) == -1, "'%s' should not parse (read %g)", *b, q.value);
		ck_assert_ptr_nonnull(why);
	}
	char food[FL_QTY_MAX_LEN + 1];
	for (size_t i = 0; i < FL_QTY_MAX_LEN; i++)
		food[i] = "1,0 ^x-k"[i % 8];
	food[FL_QTY_MAX_LEN] = '\0';
	struct fl_quantity q;
	const char *why;
	(void)fl_quantity_parse(food, &q, &why); /* whatever it reads, it returns */
	memset(food, '9', 150);
	strcpy(food + 150, "e300");
	ck_assert_int_eq(fl_quantity_parse(food, &q, &why), -1); /* 1e449: overflow */
	memset(food, '9', FL_QTY_MAX_LEN);
	ck_assert_int_eq(fl_quantity_parse(food, &q, &why), 0); /* 200 nines: 1e200, finite */
	ck_assert(isfinite(q.value));
	long w;
	ck_assert_int_eq(fl_whole_parse("every 99999999999th step", 1, &w, &why), -1);
	ck_assert_int_eq(fl_whole_parse("10^999", 1, &w, &why), -1);
	ck_assert_int_eq(fl_whole_parse("every 3 steps, phase 2", 1, &w, &why), -1);
	ck_assert_int_eq(fl_whole_parse("3.5", 0, &w, &why), -1);
	ck_assert_int_eq(fl_whole_parse("30 ms", 1, &w, &why), -1);
	ck_assert_int_eq(fl_whole_parse("1 in 3", 0, &w, &why), -1); /* only a period reads "1 in N" */
}
END_TEST

/* ---- unreadable values (issue 14, item 2) ---- */

START_TEST(test_unreadable_value_scored)
{
	/* one question: an unreadable value is wrong (0) with the expected form,
	 * or a format error when strict */
	struct fl_verdict v;
	judge_text_as("number", "ms", 45.5, "fast", 0, &v);
	ck_assert_int_eq(v.outcome, FL_OUT_WRONG);
	ck_assert_double_eq(v.credit, 0);
	ck_assert_msg(strstr(v.feedback.buf, "could not read 'fast'") && strstr(v.feedback.buf, "'N ms'") &&
		      !strstr(v.feedback.buf, "45.5"), "%s", v.feedback.buf);
	fl_verdict_release(&v);
	judge_text_as("number", "ms", 45.5, "fast", 1, &v);
	ck_assert_int_eq(v.outcome, FL_OUT_FORMAT);
	fl_verdict_release(&v);

	/* a whole answer: the other questions are graded; --strict (opts.strict)
	 * makes it not gradable as before */
	char dir[] = "/tmp/fl-check-grader-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char truth[128], rubric[128], answer[128];
	snprintf(truth, sizeof(truth), "%s/t.truth.json", dir);
	snprintf(rubric, sizeof(rubric), "%s/r.rubric.json", dir);
	snprintf(answer, sizeof(answer), "%s/a.txt", dir);
	FILE *f = fopen(truth, "w");
	fputs("{\"schema\": \"faultline.truth/1\", \"scenario\": {\"name\": \"s\"}}", f);
	fclose(f);
	f = fopen(rubric, "w");
	fputs("{\"schema\": \"faultline.rubric/1\", \"name\": \"r\", \"questions\": ["
	      "{\"id\": \"p50\", \"prompt\": \"p50?\", \"points\": 1, \"kind\": \"number\", \"unit\": \"ms\", \"expected\": 45.5},"
	      "{\"id\": \"period\", \"prompt\": \"period?\", \"points\": 1, \"kind\": \"period\", \"expected\": 3},"
	      "{\"id\": \"factor\", \"prompt\": \"factor?\", \"points\": 2, \"kind\": \"ratio\", \"expected\": 112},"
	      "{\"id\": \"family\", \"prompt\": \"family?\", \"points\": 1, \"kind\": \"choice\", \"vocabulary\": \"families\","
	      " \"expected\": \"op_storm\"}]}", f);
	fclose(f);
	f = fopen(answer, "w");
	fputs("p50: NaN ms\nperiod: every third step\nfactor: 112 times slower\n"
	      "family: too many tiny kernels / small-op overhead (eager mode)\n", f);
	fclose(f);
	struct fl_grade_opts o = {.truth_path = truth, .answer_path = answer, .rubric_path = rubric};
	struct fl_grade g;
	ck_assert_int_eq(fl_grade_run(&o, &g), FL_OK);
	ck_assert_int_eq(g.state, FL_GRADE_GRADED);
	ck_assert_int_eq(g.n_format_errors, 0);
	ck_assert_double_eq(g.items[0].score, 0);
	ck_assert_int_eq(g.items[0].v.outcome, FL_OUT_WRONG);
	ck_assert_msg(strstr(g.items[0].v.feedback.buf, "could not read 'NaN ms'"), "%s", g.items[0].v.feedback.buf);
	ck_assert_double_eq(g.items[1].score, 1);
	ck_assert_double_eq(g.items[2].score, 2);
	ck_assert_double_eq(g.items[3].score, 1);
	ck_assert_double_eq(g.score, 4);
	fl_grade_release(&g);
	o.strict = 1;
	ck_assert_int_eq(fl_grade_run(&o, &g), FL_GRADE_EANSWER);
	ck_assert_int_eq(g.state, FL_GRADE_UNPARSEABLE);
	ck_assert_int_eq(g.n_format_errors, 1);
	ck_assert_msg(strstr(g.format_errors[0], "p50: could not read 'NaN ms'"), "%s", g.format_errors[0]);
	fl_grade_release(&g);
	/* an answer that cannot be parsed at all stays not gradable by default */
	f = fopen(answer, "w");
	fputs("the p50 is 45 ms\n", f);
	fclose(f);
	o.strict = 0;
	ck_assert_int_eq(fl_grade_run(&o, &g), FL_GRADE_EANSWER);
	ck_assert_int_eq(g.state, FL_GRADE_UNPARSEABLE);
	fl_grade_release(&g);
	unlink(truth);
	unlink(rubric);
	unlink(answer);
	rmdir(dir);
}
END_TEST

/* ---- vocabulary from real wording, and the lookalike decisions (item 3) ---- */

START_TEST(test_vocabulary_wording)
{
	static const struct {
		const char *vocab, *text, *id;
	} cases[] = {
		{"families", "too many tiny kernels / small-op overhead (eager mode)", "op_storm"},
		{"families", "the GPU waits for data every step", "input_starvation"},
		{"families", "slow input pipeline", "input_starvation"},
		{"families", "synchronous logging every few steps", "periodic_host_stall"},
		{"families", "python gc", "gc_pause"},
		{"families", "one slow rank", "straggler"},
		{"families", ".item() call forces a cuda synchronize", "sync_stall"},
		{"families", "the all-reduce is not overlapped", "unoverlapped_comm"},
		{"families", "allreduce not overlapped", "unoverlapped_comm"},
		{"families", "all good", "healthy"},
		{"families", "checkpoint stall", "checkpoint_stall"},
		{"families", "checkpointing", "checkpoint_stall"},
		{"fixes", "save checkpoints in the background", "async_checkpoint"},
		{"fixes", "async checkpoint", "async_checkpoint"},
		{"fixes", "increase num_workers", "loader_parallelism"},
		{"fixes", "fuse the ops", "fusion"},
		{"fixes", "log every few steps", "async_offload"},
		{"fixes", "gc.freeze()", "gc_control"},
		{"fixes", "stop calling .item()", "defer_host_reads"},
		{"fixes", "gradient bucketing", "overlap_comm"},
		{"fixes", "rebalance data", "rebalance"},
		/* lookalikes, decided in docs/grading.md ("Shared wordings") */
		{"families", "kernel launch overhead", "(none)"},    /* both pay it per launch: the op count decides */
		{"families", "launch overhead", "(none)"},
		{"families", "launch bound", "launch_bound"},         /* its signature: kernels shorter than their launch */
		{"families", "launch-bound", "launch_bound"},
		{"families", "kernels shorter than their launch", "launch_bound"},
		{"families", "too many tiny kernels", "op_storm"},     /* the count: op_storm */
		{"families", "tiny kernels", "(none)"},               /* both rows: the count decides */
		{"families", "slow all-reduce", "(none)"},            /* straggler or comm_bound */
		{"families", "communication bound", "comm_bound"},
		{"families", "stall", "(none)"},
		{"families", "sync", "(none)"},
		{"families", "pause", "(none)"},
		{"families", "periodic stall", "periodic_host_stall"},
		{"families", "idle gpu", "(none)"},
		{"fixes", "cuda graphs", "cuda_graphs"},             /* launch_bound's fix: same ops, cheaper launches */
		{"fixes", "fuse the ops", "fusion"},
		{"fixes", "pin memory and non_blocking=True", "pinned_async_copy"},
		{"fixes", "preallocate the workspace", "preallocate"},
		{"fixes", "widen the autocast region", "autocast_scope"},
		{"families", "blocking memcpy", "blocking_h2d"},
		{"families", "cudaMalloc/cudaFree", "alloc_stall"},
		{"families", "fp16 casts", "dtype_casts"},
		{"fixes", "prefetch", "loader_parallelism"},
		{"fixes", "backward prefetch", "overlap_comm"},
		{"fixes", "async", "(none)"},
		{"fixes", "checkpoint less often", "async_checkpoint"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fl_matcher m = FL_MATCHER_INIT;
		fl_matcher_add_vocabulary(&m, fl_vocabulary_find(cases[i].vocab));
		const char *got = match_one(&m, cases[i].text);
		ck_assert_msg(!strcmp(got, cases[i].id), "%s: '%s' read as %s, expected %s", cases[i].vocab, cases[i].text,
			      got, cases[i].id);
		fl_matcher_release(&m);
	}
	/* every family and fix of today's scenarios has aliases beyond its ID */
	static const char *const covered[] = {"input_starvation", "op_storm", "periodic_host_stall", "gc_pause",
					      "straggler", "sync_stall", "unoverlapped_comm", "healthy",
					      "checkpoint_stall", "loader_parallelism", "fusion", "async_offload",
					      "gc_control", "rebalance", "defer_host_reads", "overlap_comm", "none",
					      "async_checkpoint", "launch_bound", "alloc_stall", "blocking_h2d", "dtype_casts",
					      "cuda_graphs", "preallocate", "pinned_async_copy", "autocast_scope", NULL};
	for (const char *const *c = covered; *c; c++) {
		size_t n = 0;
		for (size_t v = 0; fl_vocabularies[v]; v++)
			for (const struct fl_term *t = fl_vocabularies[v]->terms; t->id; t++)
				if (!strcmp(t->id, *c))
					for (const char *const *a = t->aliases; a && *a; a++)
						n++;
		ck_assert_msg(n >= 4, "%s has %zu aliases", *c, n);
	}
}
END_TEST

/* ---- registries ---- */

START_TEST(test_registries)
{
	for (size_t i = 0; fl_question_kinds[i]; i++) {
		const struct fl_question_kind *k = fl_question_kinds[i];
		ck_assert_ptr_nonnull(k->name);
		ck_assert(k->summary && *k->summary);
		ck_assert_ptr_nonnull(k->judge);
		ck_assert_ptr_eq(fl_question_kind_find(k->name), k);
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(fl_question_kinds[j]->name, k->name);
	}
	for (size_t i = 0; fl_report_formats[i]; i++) {
		const struct fl_report_format *f = fl_report_formats[i];
		ck_assert(f->summary && *f->summary);
		ck_assert_ptr_nonnull(f->write);
		ck_assert_ptr_eq(fl_report_format_find(f->name), f);
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(fl_report_formats[j]->name, f->name);
	}
	const char *want[] = {"text", "json", "gradescope", "prairielearn", "junit"};
	for (size_t i = 0; i < 5; i++)
		ck_assert_ptr_nonnull(fl_report_format_find(want[i]));
	ck_assert_ptr_null(fl_report_format_find("xml"));
	for (size_t i = 0; fl_vocabularies[i]; i++)
		ck_assert_ptr_eq(fl_vocabulary_find(fl_vocabularies[i]->name), fl_vocabularies[i]);
}
END_TEST

/* ---- answers ---- */

static enum fl_status parse(const char *text, struct fl_answer *a)
{
	return fl_answer_parse("answer.txt", text, strlen(text), a);
}

START_TEST(test_answer_lines)
{
	struct fl_answer a;
	const char *text = "\xef\xbb\xbf# my answer\r\n"
			   "Step p50 (ms): 36.9 ms   # measured\r\n"
			   "\r\n"
			   "family = \"input starvation\"\n"
			   "  note: step#3 is # not a comment\n"
			   "empty:\n";
	ck_assert_int_eq(parse(text, &a), FL_OK);
	ck_assert_int_eq(a.n, 4);
	ck_assert_str_eq(a.items[0].norm_key, "step_p50_ms");
	ck_assert_str_eq(a.items[0].text, "36.9 ms");
	ck_assert_int_eq(a.items[0].line, 2);
	ck_assert_str_eq(fl_answer_find(&a, "family")->text, "input starvation");
	ck_assert_str_eq(fl_answer_find(&a, "note")->text, "step#3 is");
	ck_assert_str_eq(fl_answer_find(&a, "empty")->text, "");
	fl_answer_release(&a);
}
END_TEST

START_TEST(test_answer_json)
{
	struct fl_answer a;
	ck_assert_int_eq(parse("{\"p50\": 36.9, \"fam\": \"x\", \"set\": [\"a\", 2], \"ok\": true, \"n\": null, "
			       "\"o\": {\"k\": 1}}", &a), FL_OK);
	ck_assert(a.is_json);
	ck_assert_int_eq(fl_answer_find(&a, "p50")->type, FL_ANS_NUMBER);
	ck_assert_double_eq(fl_answer_find(&a, "p50")->number, 36.9);
	ck_assert_int_eq(fl_answer_find(&a, "set")->n_list, 2);
	ck_assert_str_eq(fl_answer_find(&a, "set")->text, "a, 2");
	ck_assert_str_eq(fl_answer_find(&a, "ok")->text, "yes");
	ck_assert_int_eq(fl_answer_find(&a, "n")->type, FL_ANS_NULL);
	ck_assert_int_eq(fl_answer_find(&a, "o")->type, FL_ANS_OTHER);
	fl_answer_release(&a);
}
END_TEST

START_TEST(test_answer_rejects)
{
	static const struct {
		const char *text;
		size_t len;
		const char *msg;
	} bad[] = {
		{"p50: 1\nP50: 2\n", 0, "already given on line 1"},
		{"{\"p50\": 1, \"P50\": 2}", 0, "appears twice"},
		{"p50 36.9\n", 0, "line 1: expected 'key: value'"},
		{": 36.9\n", 0, "expected a key"},
		{"", 0, "holds no answers"},
		{"# only a comment\n\n", 0, "holds no answers"},
		{"[1, 2]", 0, "expected a JSON object"},
		{"{\"a\": 1,}", 0, "JSON syntax error"},
		{"p50: 1\n\xff\xfe\n", 0, "line 2: not UTF-8"},
		{"p50: 1\0x", 8, "NUL byte"},
		{"\"\": 3", 0, "not a usable key"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fl_answer a;
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
		ck_assert_int_eq(fl_answer_parse("answer.txt", bad[i].text, len, &a), FL_ERUNTIME);
		ck_assert_msg(strstr(fl_error_msg(), bad[i].msg), "case %zu: '%s' lacks '%s'", i, fl_error_msg(),
			      bad[i].msg);
		ck_assert_msg(strstr(fl_error_msg(), "answer.txt"), "case %zu names no file: %s", i, fl_error_msg());
		ck_assert_int_eq(a.n, 0);
	}
	/* deep nesting: a clear error, no crash */
	size_t n = 200000;
	char *deep = malloc(n + 16);
	strcpy(deep, "{\"a\": ");
	memset(deep + 6, '[', n);
	deep[n + 6] = '\0';
	struct fl_answer a;
	ck_assert_int_eq(fl_answer_parse("deep.json", deep, strlen(deep), &a), FL_ERUNTIME);
	free(deep);
}
END_TEST

/* ---- periods ---- */

START_TEST(test_period_detection)
{
	int steps[] = {2, 3, 4, 5, 6, 7, 8, 9};
	double metrics[] = {60.1, 0.001, 0.001, 60.2, 0.002, 0.001, 60.1, 0.001};
	double mystery[] = {0, 28.8, 0, 33.5, 0, 38.5, 0, 39.0};
	double flat[] = {30.1, 30.2, 30.4, 30.3, 30.1, 30.2, 30.3, 30.2};
	double single[] = {1, 1, 1, 9, 1, 1, 1, 1};
	double irregular[] = {9, 1, 9, 9, 1, 1, 1, 1};
	struct fl_span_period p;
	ck_assert(fl_detect_period(metrics, steps, 8, 40, &p));
	ck_assert_int_eq(p.period, 3);
	ck_assert_int_eq(p.phase, 2);
	ck_assert_int_eq(p.n_long, 3);
	ck_assert_int_eq(p.long_steps[0], 2);
	ck_assert_double_eq_tol(p.excess_ms, 180.4 - 3 * 0.001, 1e-6);
	free(p.long_steps);
	ck_assert(fl_detect_period(mystery, steps, 8, 40, &p));
	ck_assert_int_eq(p.period, 2);
	ck_assert_int_eq(p.phase, 1);
	free(p.long_steps);
	ck_assert(!fl_detect_period(flat, steps, 8, 30, &p));
	ck_assert(fl_detect_period(single, steps, 8, 1, &p));
	ck_assert_int_eq(p.period, 0);
	free(p.long_steps);
	ck_assert(fl_detect_period(irregular, steps, 8, 1, &p));
	ck_assert_int_eq(p.period, 0);
	free(p.long_steps);
	ck_assert(!fl_detect_period(metrics, steps, 2, 40, &p));
}
END_TEST

/* Noise made on purpose: the detector must keep the period when one instance
 * is an outlier or a load spike stretches a clean step, and say how sure it is. */
START_TEST(test_period_noise)
{
	int steps[12];
	for (int i = 0; i < 12; i++)
		steps[i] = i;
	struct fl_span_period p;
	/* a cold first instance three times the others (184 vs 61, 64 ms): the
	 * largest jump (64 -> 184) would leave it alone and find no period */
	double cold[] = {184, 1.2, 1.1, 61, 1.3, 1.0, 64, 1.2, 1.1, 62, 1.4, 1.2};
	ck_assert(fl_detect_period(cold, steps, 12, 30, &p));
	ck_assert_int_eq(p.period, 3);
	ck_assert_int_eq(p.phase, 0);
	ck_assert_int_eq(p.n_long, 4);
	ck_assert_double_eq(p.confidence, 1.0);
	ck_assert_int_eq(p.n_off, 0);
	fl_free_period(&p);
	/* a load spike stretches clean step 6 to 30 ms (long steps 60 ms): the
	 * split above the spike fits exactly */
	double spike[] = {2, 60, 2.1, 2, 1.9, 61, 30, 2, 2.2, 60, 2, 2};
	ck_assert(fl_detect_period(spike, steps, 12, 30, &p));
	ck_assert_int_eq(p.period, 4);
	ck_assert_int_eq(p.phase, 1);
	ck_assert_int_eq(p.n_long, 3);
	ck_assert_double_eq(p.confidence, 1.0);
	fl_free_period(&p);
	/* a spike as long as the stalls (50 vs 60 ms): no split leaves it out,
	 * the period stays with a confidence below 1 and names the step */
	double spike2[] = {2, 60, 2.1, 2, 1.9, 61, 50, 2, 2.2, 60, 2, 2};
	ck_assert(fl_detect_period(spike2, steps, 12, 30, &p));
	ck_assert_int_eq(p.period, 4);
	ck_assert_int_eq(p.phase, 1);
	ck_assert_int_eq(p.n_long, 4);
	ck_assert_double_eq_tol(p.confidence, 0.75, 1e-9);
	ck_assert_int_eq(p.n_off, 1);
	ck_assert_int_eq(p.off_steps[0], 6);
	fl_free_period(&p);
	/* a stall absorbed in one instance (step 5 short): period 2 kept */
	double missed[] = {1, 40, 1, 41, 1, 1.5, 1, 40, 1, 42, 1, 40};
	ck_assert(fl_detect_period(missed, steps, 12, 20, &p));
	ck_assert_int_eq(p.period, 2);
	ck_assert_int_eq(p.phase, 1);
	ck_assert(p.confidence < 1 && p.confidence > 0.8);
	ck_assert_int_eq(p.n_off, 1);
	ck_assert_int_eq(p.off_steps[0], 5);
	fl_free_period(&p);
	/* random long steps stay irregular: too many off every pattern */
	double random_long[] = {1, 9, 9, 1, 1, 9, 1, 9, 1, 1, 1, 9};
	ck_assert(fl_detect_period(random_long, steps, 12, 4, &p));
	ck_assert_int_eq(p.period, 0);
	fl_free_period(&p);
}
END_TEST

static Suite *grader_suite(void)
{
	Suite *s = suite_create("grader");
	TCase *tc = tcase_create("units");
	tcase_add_test(tc, test_quantity_units);
	tcase_add_test(tc, test_quantity_rejects);
	tcase_add_test(tc, test_tolerance);
	tcase_add_test(tc, test_format_number);
	tcase_add_test(tc, test_normalise);
	tcase_add_test(tc, test_clean_text);
	tcase_add_test(tc, test_number_forms);
	tcase_add_test(tc, test_number_forms_hostile);
	tcase_add_test(tc, test_unreadable_value_scored);
	suite_add_tcase(s, tc);
	tc = tcase_create("refs");
	tcase_add_test(tc, test_refs);
	suite_add_tcase(s, tc);
	tc = tcase_create("vocab");
	tcase_add_test(tc, test_vocabulary_matching);
	tcase_add_test(tc, test_vocabularies_unambiguous);
	tcase_add_test(tc, test_vocabulary_wording);
	tcase_add_test(tc, test_registries);
	suite_add_tcase(s, tc);
	tc = tcase_create("answer");
	tcase_add_test(tc, test_answer_lines);
	tcase_add_test(tc, test_answer_json);
	tcase_add_test(tc, test_answer_rejects);
	suite_add_tcase(s, tc);
	tc = tcase_create("periods");
	tcase_add_test(tc, test_period_detection);
	tcase_add_test(tc, test_period_noise);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(grader_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
