/* check_csv.c — the CSV writer and reader of rosters and gradebooks
 * (grader/grading/batch_csv.c): every value written with fl_csv_field reads
 * back as itself through fl_csv_parse and fl_csv_unguard, formulas guarded.
 * The cases are the fuzzer's findings (tests/fuzz/corpus/fuzz_roster/regress-*)
 * and their neighbours. And the streaming reader of fleet logs
 * (grader/trace/csv.c): records across its buffer's refills, and one record
 * larger than the buffer, read back whole. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "grader/grading/batch.h"
#include "grader/trace/csv.h"

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

START_TEST(stream_refills_and_grows)
{
	char path[] = "/tmp/fl-check-csv-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *fp = fdopen(fd, "w");
	const size_t big = 300000; /* > the 64 KiB buffer: it must grow */
	fputs("id,text\n", fp);
	for (int i = 0; i < 20000; i++) {
		if (i == 7777) {
			fputs("big,\"", fp);
			for (size_t k = 0; k < big; k++)
				fputc(k % 1000 == 999 ? '\n' : 'a' + (int)(k % 26), fp);
			fputs("\"\r\n", fp);
		}
		fprintf(fp, "%d,\"row \"\"%d\"\"\"\n", i, i * 7);
	}
	fclose(fp);
	struct fl_csv *c;
	ck_assert_int_eq(fl_csv_open(path, &c), FL_OK);
	struct fl_csv_record r;
	ck_assert_int_eq(fl_csv_next(c, &r), 1);
	ck_assert(r.n == 2 && fl_csv_eq(&r.f[0], "id") && fl_csv_eq(&r.f[1], "text"));
	int want = 0, saw_big = 0;
	while (fl_csv_next(c, &r) == 1) {
		ck_assert_uint_eq(r.n, 2);
		if (fl_csv_eq(&r.f[0], "big")) {
			ck_assert_uint_eq(r.f[1].n, big);
			for (size_t k = 0; k < big; k++)
				ck_assert(r.f[1].s[k] == (k % 1000 == 999 ? '\n' : 'a' + (int)(k % 26)));
			saw_big = 1;
			continue;
		}
		char id[16], text[64];
		fl_csv_copy(&r.f[0], id, sizeof(id));
		fl_csv_copy(&r.f[1], text, sizeof(text));
		ck_assert_int_eq(atoi(id), want);
		char expect[64];
		snprintf(expect, sizeof(expect), "row \"%d\"", want * 7);
		ck_assert_str_eq(text, expect);
		want++;
	}
	ck_assert_int_eq(want, 20000);
	ck_assert(saw_big);
	fl_csv_close(c);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("csv");
	TCase *tc = tcase_create("csv");
	tcase_add_test(tc, field_round_trip);
	tcase_add_test(tc, formulas_guarded);
	tcase_add_test(tc, stream_refills_and_grows);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
