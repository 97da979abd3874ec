/* Whether a run's cores kept one speed (generator/truth.c,
 * fl_truth_core_speed), judged from the rank reports' core probes and their
 * devices' GEMM speed step by step, and the probe itself (runtime/tensor.c,
 * fl_rt_core_probe_ms); and the machine load's count of this process's CPU
 * time against the host's busy time (capture/machine_load.c), from which the
 * truth takes other processes' share. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "generator/truth.h"
#include "runtime/tensor.h"

/* n rank reports, rank r's probes start[r] / end[r] ms (a negative start: no core_probe) */
static void reports(cJSON **out, size_t n, const double *start, const double *end)
{
	for (size_t r = 0; r < n; r++) {
		out[r] = cJSON_CreateObject();
		cJSON_AddNumberToObject(out[r], "rank", (double)r);
		if (start[r] < 0)
			continue;
		cJSON *p = cJSON_AddObjectToObject(out[r], "core_probe");
		cJSON_AddNumberToObject(p, "core", (double)r);
		cJSON_AddNumberToObject(p, "start_ms", start[r]);
		cJSON_AddNumberToObject(p, "end_ms", end[r]);
	}
}

static void release(cJSON **rep, size_t n)
{
	for (size_t r = 0; r < n; r++)
		cJSON_Delete(rep[r]);
}

START_TEST(alike_cores_are_alike)
{
	cJSON *rep[2];
	const double s[2] = {0.110, 0.113}, e[2] = {0.112, 0.111};
	reports(rep, 2, s, e);
	struct fl_core_speed rs;
	ck_assert_int_eq(fl_truth_core_speed(rep, 2, 0.111, &rs), 0);
	ck_assert(rs.spread < 1.05);
	ck_assert_str_eq(rs.why, "");
	release(rep, 2);
}
END_TEST

START_TEST(a_slow_core_is_named)
{
	cJSON *rep[4];
	const double s[4] = {0.110, 0.111, 0.112, 0.110}, e[4] = {0.110, 0.205, 0.111, 0.112};
	reports(rep, 4, s, e);
	struct fl_core_speed rs;
	ck_assert_int_eq(fl_truth_core_speed(rep, 4, 0.110, &rs), 1);
	ck_assert(rs.spread > 1.8 && rs.spread < 1.9);
	ck_assert_msg(strstr(rs.why, "rank 1's core") && strstr(rs.why, "as the window closed"), "%s", rs.why);
	release(rep, 4);
}
END_TEST

START_TEST(the_machine_changing_speed_is_unequal)
{
	cJSON *rep[2];
	const double s[2] = {0.110, 0.111}, e[2] = {0.150, 0.151}; /* both cores slowed together */
	reports(rep, 2, s, e);
	struct fl_core_speed rs;
	ck_assert_int_eq(fl_truth_core_speed(rep, 2, 0.110, &rs), 1);
	ck_assert_msg(strstr(rs.why, "changed speed"), "%s", rs.why);
	release(rep, 2);
	/* or since the calibration, the window's two ends alike */
	const double s2[2] = {0.160, 0.161}, e2[2] = {0.160, 0.159};
	reports(rep, 2, s2, e2);
	ck_assert_int_eq(fl_truth_core_speed(rep, 2, 0.110, &rs), 1);
	ck_assert_msg(strstr(rs.why, "calibrated"), "%s", rs.why);
	ck_assert_int_eq(fl_truth_core_speed(rep, 2, 0, &rs), 0); /* no calibration probe: nothing against it */
	release(rep, 2);
}
END_TEST

START_TEST(nothing_to_compare)
{
	cJSON *rep[2];
	const double s[2] = {0.110, -1}, e[2] = {0.110, -1};
	reports(rep, 2, s, e);
	struct fl_core_speed rs;
	ck_assert_int_eq(fl_truth_core_speed(rep, 2, 0.110, &rs), -1); /* a report without probes */
	ck_assert_int_eq(fl_truth_core_speed(rep, 0, 0.110, &rs), -1); /* no reports */
	release(rep, 2);
}
END_TEST

START_TEST(one_rank_against_itself)
{
	cJSON *rep[1];
	const double s[1] = {0.110}, e[1] = {0.111};
	reports(rep, 1, s, e);
	struct fl_core_speed rs;
	ck_assert_int_eq(fl_truth_core_speed(rep, 1, 0.112, &rs), 0);
	release(rep, 1);
	const double s2[1] = {0.110}, e2[1] = {0.190}; /* the core slowed during the window */
	reports(rep, 1, s2, e2);
	ck_assert_int_eq(fl_truth_core_speed(rep, 1, 0.110, &rs), 1);
	ck_assert_msg(strstr(rs.why, "rank 0's core") && strstr(rs.why, "slower as the window closed"), "%s", rs.why);
	release(rep, 1);
}
END_TEST

/* rank r's device ran its steps' fastest GEMMs at ns[0..n) per multiply-add, from step `from` */
static void steps(cJSON *report, long from, const double *ns, int n)
{
	cJSON *p = cJSON_GetObjectItemCaseSensitive(report, "core_probe");
	cJSON_AddNumberToObject(p, "step_gemm_from", (double)from);
	cJSON_AddItemToObject(p, "step_gemm_ns_per_mac", cJSON_CreateDoubleArray(ns, n));
}

START_TEST(a_speed_change_inside_the_window_is_unequal)
{
	/* the probes at both ends agree; step 5 ran its GEMMs 1.8x as long */
	cJSON *rep[2];
	const double s[2] = {0.110, 0.111}, e[2] = {0.111, 0.110};
	const double steady[4] = {0.080, 0.082, 0.079, 0.081}, changed[4] = {0.080, 0.081, 0.144, 0.079};
	reports(rep, 2, s, e);
	steps(rep[0], 2, steady, 4);
	steps(rep[1], 2, steady, 4);
	struct fl_core_speed rs;
	ck_assert_int_eq(fl_truth_core_speed(rep, 2, 0.110, &rs), 0);
	release(rep, 2);
	reports(rep, 2, s, e);
	steps(rep[0], 2, steady, 4);
	steps(rep[1], 3, changed, 4);
	ck_assert_int_eq(fl_truth_core_speed(rep, 2, 0.110, &rs), 1);
	ck_assert(rs.spread > 1.8 && rs.spread < 1.85);
	ck_assert_msg(strstr(rs.why, "rank 1's device") && strstr(rs.why, "step 5") && strstr(rs.why, "step 6") &&
			      strstr(rs.why, "during the window"),
		      "%s", rs.why);
	release(rep, 2);
	/* a step that ran no GEMM (0) is no measurement */
	const double gap[4] = {0.080, 0, 0.081, 0.080};
	reports(rep, 1, s, e);
	steps(rep[0], 2, gap, 4);
	ck_assert_int_eq(fl_truth_core_speed(rep, 1, 0.110, &rs), 0);
	release(rep, 1);
}
END_TEST

/* training meters each backward GEMM on its own: a core that changed speed
 * between a step's forward and its backward shows in the backward meter alone */
START_TEST(a_backward_meter_changing_speed_is_unequal)
{
	cJSON *rep[1];
	const double s[1] = {0.110}, e[1] = {0.111};
	const double steady[4] = {0.080, 0.082, 0.079, 0.081}, changed[4] = {0.090, 0.091, 0.162, 0.090};
	struct fl_core_speed rs;
	reports(rep, 1, s, e);
	steps(rep[0], 2, steady, 4);
	cJSON *bw = cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(rep[0], "core_probe"),
					    "step_backward_gemm_ns_per_mac");
	cJSON_AddItemToObject(bw, "gemm_tn_kernel", cJSON_CreateDoubleArray(steady, 4));
	ck_assert_int_eq(fl_truth_core_speed(rep, 1, 0.110, &rs), 0);
	cJSON_AddItemToObject(bw, "gemm_nt_kernel", cJSON_CreateDoubleArray(changed, 4));
	ck_assert_int_eq(fl_truth_core_speed(rep, 1, 0.110, &rs), 1);
	ck_assert(rs.spread > 1.79 && rs.spread < 1.81);
	ck_assert_msg(strstr(rs.why, "rank 0's device") && strstr(rs.why, "gemm_nt_kernel") && strstr(rs.why, "step 4") &&
			      strstr(rs.why, "step 2"),
		      "%s", rs.why);
	release(rep, 1);
}
END_TEST

START_TEST(probe_measures)
{
	double a = fl_rt_core_probe_ms(-1), b = fl_rt_core_probe_ms(0);
	ck_assert(a > 0 && b > 0);
	ck_assert(a < 1000 && b < 1000);
}
END_TEST

static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

/* 150 ms of this process's CPU time (however long a busy machine makes that
 * take): the load's count of it agrees with the kernel's process clock, and
 * the host's busy time holds it (to /proc/stat's ticks). Without /proc the
 * host's share is not read. */
START_TEST(machine_load_counts_this_process)
{
	struct fl_machine_sample a, b;
	struct fl_machine_load l;
	fl_machine_sample(&a);
	double c0 = cpu_ms(), c1 = c0;
	volatile unsigned long spin = 0;
	while ((c1 = cpu_ms()) - c0 < 150)
		spin++;
	fl_machine_sample(&b);
	fl_machine_load_between(&a, &b, 1, &l);
	double want = c1 - c0;
	ck_assert_msg(l.self_cpu_ms > 0.9 * want && l.self_cpu_ms < 1.1 * want + 10,
		      "this process's CPU time %.1f ms, the process clock's %.1f", l.self_cpu_ms, want);
	if (!l.have_stat)
		return;
	ck_assert_msg(l.busy_resolution_ms > 0 && l.busy_ms + l.busy_resolution_ms >= l.self_cpu_ms,
		      "host busy %.1f ms (to %.1f ms) < this process's %.1f ms", l.busy_ms, l.busy_resolution_ms,
		      l.self_cpu_ms);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("core_speed");
	TCase *tc = tcase_create("verdict");
	tcase_add_test(tc, alike_cores_are_alike);
	tcase_add_test(tc, a_slow_core_is_named);
	tcase_add_test(tc, the_machine_changing_speed_is_unequal);
	tcase_add_test(tc, nothing_to_compare);
	tcase_add_test(tc, one_rank_against_itself);
	tcase_add_test(tc, a_speed_change_inside_the_window_is_unequal);
	tcase_add_test(tc, a_backward_meter_changing_speed_is_unequal);
	tcase_add_test(tc, probe_measures);
	tcase_add_test(tc, machine_load_counts_this_process);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
