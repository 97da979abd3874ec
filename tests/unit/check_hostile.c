/* check_hostile.c — the bounds that keep hostile input cheap: period
 * detection over the steps present (not every number between the smallest
 * and the largest), the complexity bound of rubric regular expressions, the
 * size cap of fl_read_file, JSON path names over 255 characters, whitespace
 * and large units in the streaming reader, and the bad values the X-event
 * collector skips and counts. */
#define _GNU_SOURCE
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/jsonutil.h"
#include "common/outfile.h"
#include "grader/analysis/host_metrics.h"
#include "grader/grading/vocab.h"
#include "grader/trace/trace_events.h"
#include "grader/trace/trace_stream.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

START_TEST(test_period_bounded)
{
	/* long in #0 and #1, short in #2147483647: the old loop tried 2^31 periods */
	double v[] = {10, 10, 1};
	int num[] = {0, 1, 2147483647};
	struct fl_span_period p;
	double t0 = now_s();
	ck_assert_int_eq(fl_detect_period(v, num, 3, 20, &p), 1);
	ck_assert_int_eq(p.period, 0);
	free(p.long_steps);
	/* far-apart long steps: only the divisors of their gcd (1e9) are tried;
	 * 512 is the smallest that leaves both short steps out */
	double w[] = {10, 1, 10, 1, 10};
	int m[] = {0, 1, 1000000000, 500000000, 2000000000};
	ck_assert_int_eq(fl_detect_period(w, m, 5, 20, &p), 1);
	ck_assert_int_eq(p.period, 512);
	ck_assert_int_eq(p.phase, 0);
	free(p.long_steps);
	/* long steps that share one number: no period */
	int same[] = {7, 1, 7, 2, 7};
	ck_assert_int_eq(fl_detect_period(w, same, 5, 20, &p), 1);
	ck_assert_int_eq(p.period, 0);
	free(p.long_steps);
	/* the extremes of int */
	double a[] = {10, 1, 1, 10, 1, 1, 10};
	int an[] = {INT32_MIN + 2, 3, 4, 2, 6, 7, 2147483647};
	ck_assert_int_eq(fl_detect_period(a, an, 7, 20, &p), 1);
	free(p.long_steps);
	/* the ordinary case keeps its answer: every third step, phase 1 */
	double b[] = {1, 10, 1, 1, 10, 1, 1, 10, 1};
	int bn[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
	ck_assert_int_eq(fl_detect_period(b, bn, 9, 20, &p), 1);
	ck_assert_int_eq(p.period, 3);
	ck_assert_int_eq(p.phase, 1);
	free(p.long_steps);
	ck_assert(now_s() - t0 < 1.0);
}
END_TEST

START_TEST(test_regex_bounds)
{
	char err[128];
	ck_assert_int_eq(fl_regex_check("data ?loader.*(stall|wait)s?", err, sizeof(err)), 0);
	ck_assert_int_eq(fl_regex_check("(input )?starv(ed|ation)", err, sizeof(err)), 0);
	ck_assert_int_eq(fl_regex_check("a{1,100}b{3}", err, sizeof(err)), 0);
	ck_assert_int_eq(fl_regex_check("[(*+]+x", err, sizeof(err)), 0);  /* brackets are no groups */
	ck_assert_int_eq(fl_regex_check("\\(a*\\)*", err, sizeof(err)), 0); /* escaped parentheses */
	ck_assert_int_eq(fl_regex_check("((a{1,100}){1,100}){1,100}", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "nested repetition"));
	ck_assert_int_eq(fl_regex_check("(a+)+", err, sizeof(err)), -1);
	ck_assert_int_eq(fl_regex_check("((ab)*c)*", err, sizeof(err)), -1);
	ck_assert_int_eq(fl_regex_check("((a|b)?)*", err, sizeof(err)), -1);
	ck_assert_int_eq(fl_regex_check("a{1,101}", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "above 100"));
	ck_assert_int_eq(fl_regex_check("a{5,}", err, sizeof(err)), -1);
	/* found by fuzz_rubric: an unbalanced ')' closed the anchoring group "^(...)$" and
	 * let the next repetition wrap a repeated group (1.2 GB in regcomp) */
	ck_assert_int_eq(fl_regex_check("()a{0,100}){1,100}){1,100}", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "unbalanced ')'"));
	ck_assert_int_eq(fl_regex_check("a)|(b", err, sizeof(err)), -1);
	ck_assert_int_eq(fl_regex_check("(a", err, sizeof(err)), -1);
	char longre[600];
	memset(longre, 'a', sizeof(longre) - 1);
	longre[sizeof(longre) - 1] = '\0';
	ck_assert_int_eq(fl_regex_check(longre, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "too long"));
	/* the matcher refuses what the check refuses, before compiling anything */
	struct fl_matcher m = FL_MATCHER_INIT;
	double t0 = now_s();
	ck_assert_int_eq(fl_matcher_add_regex(&m, "x", "((a{1,100}){1,100}){1,100}", err, sizeof(err)), -1);
	ck_assert(now_s() - t0 < 0.5);
	ck_assert_int_eq(fl_matcher_add_regex(&m, "x", "dataloader.*stall", err, sizeof(err)), 0);
	fl_matcher_release(&m);
}
END_TEST

START_TEST(test_read_file_cap)
{
	char path[] = "/tmp/check_hostile.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	gzFile gz = gzopen(path, "wb9");
	char *blk = calloc(1, 1 << 20);
	for (int i = 0; i < 40; i++)
		gzwrite(gz, blk, 1 << 20);
	gzclose(gz);
	char *buf = NULL;
	size_t len;
	ck_assert_int_eq(fl_read_file(path, &buf, &len), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "larger than 32 MiB once decompressed"));
	ck_assert_int_eq(fl_read_file_max(path, (size_t)64 << 20, &buf, &len), FL_OK);
	ck_assert_uint_eq(len, (size_t)40 << 20);
	free(buf);
	free(blk);
	unlink(path);
}
END_TEST

START_TEST(test_json_path_long_name)
{
	cJSON *root = cJSON_CreateObject();
	char name[300];
	memset(name, 'k', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	cJSON_AddNumberToObject(root, name, 1);
	char cut[256];
	memcpy(cut, name, 255);
	cut[255] = '\0';
	cJSON_AddNumberToObject(root, cut, 2); /* what a silent cut would find */
	char why[128];
	ck_assert_ptr_null(fl_json_path(root, name, why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "longer than 255"));
	char br[320];
	snprintf(br, sizeof(br), "[\"%s\"]", name);
	ck_assert_ptr_null(fl_json_path(root, br, why, sizeof(why)));
	ck_assert_ptr_nonnull(fl_json_path(root, cut, why, sizeof(why)));
	cJSON_Delete(root);
}
END_TEST

static enum fl_status count_ev(void *arg, const struct fl_tev *e)
{
	(void)e;
	(*(int *)arg)++;
	return FL_OK;
}

START_TEST(test_stream_whitespace_and_units)
{
	/* whitespace everywhere between units, read in tiny chunks: one pass */
	size_t ws = 4 << 20;
	char *doc = malloc(ws * 3 + 256);
	size_t n = 0;
	n += (size_t)sprintf(doc + n, "{");
	memset(doc + n, ' ', ws), n += ws;
	n += (size_t)sprintf(doc + n, "\"traceEvents\":[{\"ph\":\"X\",\"ts\":1}");
	memset(doc + n, '\n', ws), n += ws;
	n += (size_t)sprintf(doc + n, ",");
	memset(doc + n, '\t', ws), n += ws;
	n += (size_t)sprintf(doc + n, "{\"ph\":\"i\"}]}");
	struct fl_strtab *st = fl_strtab_new();
	int count = 0;
	struct fl_trace_stream_opts o = {.strings = st, .on_event = count_ev, .arg = &count, .chunk = 4096};
	struct fl_trace_info info;
	double t0 = now_s();
	ck_assert_int_eq(fl_trace_stream_mem("ws", doc, n, &o, &info), FL_OK);
	ck_assert_int_eq(count, 2);
	ck_assert(now_s() - t0 < 2.0); /* was quadratic: minutes */
	/* a trailing comma is still an error, even when whitespace splits it from ']' */
	const char *tc = "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},    ]}";
	ck_assert_int_eq(fl_trace_stream_mem("tc", tc, strlen(tc), &o, &info), FL_EINPUT);
	const char *tk = "{\"a\":1,  }";
	ck_assert_int_eq(fl_trace_stream_mem("tk", tk, strlen(tk), &o, &info), FL_EINPUT);
	/* one event over 8 MiB: refused, naming its offset */
	n = (size_t)sprintf(doc, "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"");
	memset(doc + n, 'a', (9 << 20)), n += 9 << 20;
	n += (size_t)sprintf(doc + n, "\",\"ts\":1}]}");
	ck_assert_int_eq(fl_trace_stream_mem("big", doc, n, &o, &info), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "a single value longer than 8 MiB at byte 16"));
	fl_strtab_free(st);
	free(doc);
}
END_TEST

START_TEST(test_bad_values_counted)
{
	const char *doc = "{\"traceEvents\":["
			  "{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":-5},"
			  "{\"ph\":\"X\",\"name\":\"b\",\"ts\":1e400,\"dur\":1},"
			  "{\"ph\":\"X\",\"name\":\"c\",\"ts\":2,\"dur\":1e13},"
			  "{\"ph\":\"X\",\"name\":\"d\",\"ts\":1.7e15,\"dur\":1},"
			  "{\"ph\":\"X\",\"name\":\"e\\u0001\",\"ts\":3,\"dur\":1,\"dur\":2},"
			  "{\"ph\":\"X\",\"name\":\"\\ud800\",\"ts\":4,\"dur\":1}]}";
	char path[] = "/tmp/check_hostile.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
	close(fd);
	struct fl_trace t;
	ck_assert_int_eq(fl_trace_read(path, &t), FL_OK);
	ck_assert_uint_eq(t.n, 3); /* d (an epoch µs ts), e, and the lone surrogate */
	ck_assert_uint_eq(t.bad[FL_BAD_DUR].n, 2);
	ck_assert_uint_eq(t.bad[FL_BAD_DUR].first_at, 16);
	ck_assert_uint_eq(t.bad[FL_BAD_TS].n, 1);
	ck_assert_uint_eq(t.bad[FL_BAD_CONTROL].n, 1);
	ck_assert_uint_eq(t.bad[FL_BAD_DUP_KEY].n, 1);
	ck_assert_uint_eq(t.bad[FL_BAD_UTF8].n, 1);
	for (size_t i = 0; i < t.n; i++)
		ck_assert(t.ev[i].dur >= 0 && t.ev[i].dur == t.ev[i].dur);
	FILE *f = tmpfile();
	ck_assert_int_eq(fl_trace_warn(&t, f), 5);
	fclose(f);
	fl_trace_release(&t);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc = tcase_create("bounds");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_period_bounded);
	tcase_add_test(tc, test_regex_bounds);
	tcase_add_test(tc, test_read_file_cap);
	tcase_add_test(tc, test_json_path_long_name);
	tcase_add_test(tc, test_stream_whitespace_and_units);
	tcase_add_test(tc, test_bad_values_counted);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
