/* check_csv.c — the CSV writer and reader of rosters and gradebooks
 * (grader/grading/batch_csv.c): every value written with fl_csv_field reads
 * back as itself through fl_csv_parse and fl_csv_unguard, formulas guarded.
 * The cases are the fuzzer's findings (tests/fuzz/corpus/fuzz_roster/regress-*)
 * and their neighbours. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "grader/grading/batch.h"

static const char *const values[] = {
	"plain", "=SUM(A1)", "+x", "-x", "@x", "-0.5", "+3", "'=x", "''=x", "'-0.5", "'", "it's",
	"a\t", "\tb", " lead", "trail ", "x,y", "q\"q", "two\nlines", "", NULL,
};

START_TEST(field_round_trip)
{
	for (const char *const *v = values; *v; v++) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_adds(&sb, "learner,value\nx,");
		fl_csv_field(&sb, *v);
		strbuf_adds(&sb, "\n");
		struct fl_csv c;
		fl_csv_parse(sb.buf, sb.len, &c);
		ck_assert_uint_eq(c.n, 2);
		ck_assert_ptr_null(c.rows[1].error);
		ck_assert_uint_eq(c.rows[1].n, 2);
		ck_assert_msg(!strcmp(fl_csv_unguard(c.rows[1].f[1]), *v), "'%s' read back as '%s' (written %s)", *v,
			      c.rows[1].f[1], sb.buf);
		fl_csv_release(&c);
		strbuf_release(&sb);
	}
}
END_TEST

START_TEST(formulas_guarded)
{
	struct strbuf sb = STRBUF_INIT;
	fl_csv_field(&sb, "=1+1");
	ck_assert_str_eq(sb.buf, "\"'=1+1\"");
	strbuf_reset(&sb);
	fl_csv_field(&sb, "-0.5");
	ck_assert_str_eq(sb.buf, "-0.5");
	strbuf_reset(&sb);
	fl_csv_field(&sb, "'=1");
	ck_assert_str_eq(sb.buf, "\"''=1\"");
	strbuf_release(&sb);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("csv");
	TCase *tc = tcase_create("csv");
	tcase_add_test(tc, field_round_trip);
	tcase_add_test(tc, formulas_guarded);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
