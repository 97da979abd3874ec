/* check_grader.c — unit tests of the grader's pieces: the quantity parser, the
 * normaliser, tolerances, the reference resolver, vocabulary matching, the
 * answer parser, period detection, and the registries (question kinds, report
 * formats, vocabularies). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "grader/grading/answer.h"
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
	suite_add_tcase(s, tc);
	tc = tcase_create("refs");
	tcase_add_test(tc, test_refs);
	suite_add_tcase(s, tc);
	tc = tcase_create("vocab");
	tcase_add_test(tc, test_vocabulary_matching);
	tcase_add_test(tc, test_vocabularies_unambiguous);
	tcase_add_test(tc, test_registries);
	suite_add_tcase(s, tc);
	tc = tcase_create("answer");
	tcase_add_test(tc, test_answer_lines);
	tcase_add_test(tc, test_answer_json);
	tcase_add_test(tc, test_answer_rejects);
	suite_add_tcase(s, tc);
	tc = tcase_create("periods");
	tcase_add_test(tc, test_period_detection);
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
