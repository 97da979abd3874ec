/* check_diagnose — `faultline diagnose`'s rules (grader/analysis/diagnose.h)
 * on small hand-made Kineto traces: each family from its signature alone,
 * healthy steps as healthy, and what a trace lacks said under limits. */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grader/analysis/diagnose.h"

/* ------------------------------------------------------------- helpers */

struct tr {
	char path[64];
	FILE *f;
	int n;
};

static void tr_open(struct tr *t, int rank)
{
	snprintf(t->path, sizeof t->path, "/tmp/fl-check-diag.XXXXXX");
	int fd = mkstemp(t->path);
	ck_assert_int_ge(fd, 0);
	t->f = fdopen(fd, "w");
	t->n = 0;
	fprintf(t->f, "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": %d, \"world_size\": 2},\n\"traceEvents\": [\n",
		rank);
}

static void ev(struct tr *t, const char *cat, const char *name, double ts, double dur, int tid, const char *args)
{
	fprintf(t->f, "%s{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
		      "\"dur\": %.3f%s%s}\n",
		t->n++ ? "," : "", cat, name, tid < 100 ? 0 : 1, tid, ts, dur, args ? ", \"args\": " : "", args ? args : "");
}

static void tr_close(struct tr *t)
{
	fprintf(t->f, "], \"traceName\": \"lab-healthy.json\"}\n");
	fclose(t->f);
}

static cJSON *diagnose(struct tr *t, int n)
{
	const char *p[4];
	for (int i = 0; i < n; i++)
		p[i] = t[i].path;
	cJSON *d = NULL;
	ck_assert_int_eq(fl_diagnose(p, (size_t)n, NULL, 0, &d), FL_OK);
	for (int i = 0; i < n; i++)
		unlink(t[i].path);
	return d;
}

static const cJSON *finding(const cJSON *d, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(d, "findings"), i); }
static double evn(const cJSON *f, const char *k) { return cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), k)->valuedouble; }

/* a host step: data_loading (an op of `load_op` µs, then `wait` µs of nothing),
 * forward (two ops), metrics (`stall` µs of nothing); returns its end */
static double step(struct tr *t, int no, double ts, double wait, double stall, const char *extra, double extra_us)
{
	char name[32];
	double dl = 50 + wait, fw = 200, me = 10 + stall, ex = extra ? extra_us : 0;
	double dur = dl + fw + me + ex + 4;
	snprintf(name, sizeof name, "ProfilerStep#%d", no);
	ev(t, "user_annotation", name, ts, dur, 100, NULL);
	ev(t, "user_annotation", "data_loading", ts + 1, dl, 100, NULL);
	ev(t, "cpu_op", "fl::randn", ts + 1 + wait, 50, 100, NULL);
	ev(t, "user_annotation", "forward", ts + 2 + dl, fw, 100, NULL);
	ev(t, "cpu_op", "fl::mm", ts + 2 + dl, 120, 100, NULL);
	ev(t, "cpu_op", "fl::relu", ts + 2 + dl + 120, 80, 100, NULL);
	ev(t, "user_annotation", "metrics", ts + 3 + dl + fw, me, 100, NULL);
	ev(t, "cpu_op", "fl::item", ts + 3 + dl + fw, 10, 100, NULL);
	if (extra)
		ev(t, "user_annotation", extra, ts + 3 + dl + fw + me, ex, 100, NULL);
	return ts + dur + 1;
}

/* ------------------------------------------------------------- tests */

START_TEST(healthy_steps)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	for (int s = 2; s < 10; s++)
		ts = step(&t, s, ts, 0, 0, NULL, 0);
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "healthy")));
	ck_assert_str_eq(fl_diagnose_top(d), "healthy");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d, "narration")), 5);
	cJSON_Delete(d);
}
END_TEST

START_TEST(starvation)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	for (int s = 2; s < 10; s++)
		ts = step(&t, s, ts, 9000, 0, NULL, 0);
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert_str_eq(fl_diagnose_top(d), "input_starvation");
	const cJSON *f = finding(d, 0);
	ck_assert_str_eq(cJSON_GetObjectItem(f, "fix")->valuestring, "loader_parallelism");
	ck_assert(evn(f, "waiting_share_of_step") > 0.9);
	ck_assert(fabs(evn(f, "waiting_ms_per_step") - 9.0) < 0.01);
	cJSON_Delete(d);
}
END_TEST

START_TEST(periodic_stall_and_gc)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	/* metrics sleeps 5 ms in steps 2, 5, 8; a `mystery` pause in odd steps */
	for (int s = 2; s < 10; s++)
		ts = step(&t, s, ts, 0, s % 3 == 2 ? 5000 : 0, s % 2 ? "mystery" : NULL, 3000 + 300 * s);
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert(fl_diagnose_has(d, "periodic_host_stall"));
	ck_assert(fl_diagnose_has(d, "gc_pause"));
	for (int i = 0; i < 2; i++) {
		const cJSON *f = finding(d, i);
		const char *fam = cJSON_GetObjectItem(f, "family")->valuestring;
		const char *span = cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), "span")->valuestring;
		if (!strcmp(fam, "periodic_host_stall")) {
			ck_assert_str_eq(span, "metrics");
			ck_assert_int_eq((int)evn(f, "period"), 3);
			ck_assert_int_eq((int)evn(f, "offset"), 2);
			ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "steps")), 3);
		} else {
			ck_assert_str_eq(span, "mystery");
			ck_assert_int_eq((int)evn(f, "period"), 2);
			ck_assert_int_eq((int)evn(f, "offset"), 1);
		}
	}
	cJSON_Delete(d);
}
END_TEST

START_TEST(straggler_two_ranks)
{
	struct tr t[2];
	for (int r = 0; r < 2; r++) {
		tr_open(&t[r], r);
		double ts = 1000;
		for (int s = 2; s < 10; s++) {
			char name[32];
			snprintf(name, sizeof name, "ProfilerStep#%d", s);
			ev(&t[r], "user_annotation", name, ts, 4000, 100, NULL);
			ev(&t[r], "cpu_op", "fl::mm", ts, 3000, 100, NULL);
			double k = r == 1 ? 3000 : 1000; /* rank 1 computes 3x */
			ev(&t[r], "kernel", "gemm_kernel", ts + 10, k, 7, "{\"stream\": 7, \"correlation\": 1}");
			/* both end the all-reduce together: rank 0 waits longer in it */
			ev(&t[r], "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", ts + 10 + k, 3200 - k, 13,
			   "{\"stream\": 13, \"correlation\": 2}");
			ts += 4001;
		}
		tr_close(&t[r]);
	}
	cJSON *d = diagnose(t, 2);
	ck_assert_str_eq(fl_diagnose_top(d), "straggler");
	const cJSON *f = finding(d, 0);
	ck_assert_int_eq((int)evn(f, "rank"), 1);
	ck_assert(fabs(evn(f, "compute_ratio_to_median") - 3.0) < 0.01);
	cJSON_Delete(d);
}
END_TEST

START_TEST(limits_without_steps)
{
	struct tr t;
	tr_open(&t, 0);
	ev(&t, "cpu_op", "aten::mm", 10, 100, 100, NULL);
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(d, "limits"));
	ck_assert_ptr_nonnull(strstr(s, "no ProfilerStep"));
	ck_assert_ptr_nonnull(strstr(s, "no device rows"));
	free(s);
	cJSON_Delete(d);

	tr_open(&t, 0);
	tr_close(&t);
	d = diagnose(&t, 1);
	ck_assert(!cJSON_IsTrue(cJSON_GetObjectItem(d, "healthy")));
	ck_assert_str_eq(fl_diagnose_top(d), "none");
	cJSON_Delete(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diagnose");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, healthy_steps);
	tcase_add_test(tc, starvation);
	tcase_add_test(tc, periodic_stall_and_gc);
	tcase_add_test(tc, straggler_two_ranks);
	tcase_add_test(tc, limits_without_steps);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
