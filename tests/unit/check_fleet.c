/* check_fleet.c — the fleet level: times, the Garwood interval, the CSV
 * reader, fleet analyze on hand-made Kalos and Seren logs (hand-written test
 * data, not AcmeTrace's), the fleet fault registry, and the simulation
 * (reproducible, and read back to what it simulated). */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/outfile.h"
#include "common/sha256.h"
#include "faults/fleet_fault.h"
#include "generator/fleet.h"
#include "grader/analysis/fleet.h"
#include "grader/trace/csv.h"
#include "scratch.h"

static void base_setup(void) { scratch_base_setup("fleet"); }

static char *write_tmp(const char *name, const char *text)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	ck_assert_int_eq(fl_write_file_atomic(path, text, strlen(text)), FL_OK);
	return path;
}

static double num_at(const cJSON *j, const char *a, const char *b)
{
	const cJSON *o = cJSON_GetObjectItem(j, a);
	if (b)
		o = cJSON_GetObjectItem(o, b);
	ck_assert_msg(cJSON_IsNumber(o), "%s.%s is not a number", a, b ? b : "");
	return o->valuedouble;
}

/* ---- times ---- */

static int64_t t_of(const char *s)
{
	int64_t t = 0;
	ck_assert_msg(fl_fleet_parse_time(s, strlen(s), &t) == 0, "'%s' did not parse", s);
	return t;
}

START_TEST(times_parse_in_utc_with_offsets)
{
	ck_assert_int_eq(t_of("2023-05-17 11:00:58+00:00"), 1684321258);
	ck_assert_int_eq(t_of("2023-05-17T11:00:58Z"), 1684321258);
	ck_assert_int_eq(t_of("2023-05-17 11:00:58"), 1684321258);
	ck_assert_int_eq(t_of("2023-05-17 11:00:58.250+00:00"), 1684321258);
	ck_assert_int_eq(t_of("2023-05-21 08:00:00+08:00"), 1684627200);
	ck_assert_int_eq(t_of("2023-05-20 16:00:00-08:00"), 1684627200);
	ck_assert_int_eq(t_of("2023-05-21 05:30:00+0530"), 1684627200);
	ck_assert_int_eq(t_of("2024-02-29 23:59:59+00:00"), 1709251199);
	ck_assert_int_eq(t_of("1969-12-31 23:00:00+00:00"), -3600);
	static const char *const bad[] = {"", "2023-05-17", "2023-02-29 00:00:00", "2023-13-01 00:00:00",
					  "2023-05-17 24:00:00", "2023-05-17 11:00:58+25:00", "2023-05-17 11:00:58 UTC",
					  "2023/05/17 11:00:58", "not a time"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t t;
		ck_assert_msg(fl_fleet_parse_time(bad[i], strlen(bad[i]), &t) == -1, "'%s' parsed", bad[i]);
	}
	char buf[32];
	fl_fleet_format_time(1684321258, buf);
	ck_assert_str_eq(buf, "2023-05-17 11:00:58+00:00");
	fl_fleet_format_time(-3600, buf);
	ck_assert_str_eq(buf, "1969-12-31 23:00:00+00:00");
	for (int64_t t = -86400 * 400; t < 86400LL * 365 * 60; t += 86400 * 37 + 3671) {
		fl_fleet_format_time(t, buf);
		ck_assert_int_eq(t_of(buf), t);
	}
}
END_TEST

/* ---- the Garwood interval (reference values: scipy.stats.chi2.ppf) ---- */

START_TEST(garwood_interval_matches_chi_square)
{
	static const struct {
		long k;
		double lo, hi;
	} ref[] = {{0, 0, 3.6888794541139354},
		   {1, 0.025317807984289876, 5.571643390938898},
		   {10, 4.7953886961324335, 18.39035604201778},
		   {100, 81.36399125092314, 121.62679379242638}};
	for (size_t i = 0; i < sizeof(ref) / sizeof(ref[0]); i++) {
		double lo, hi;
		fl_poisson_ci(ref[i].k, 0.95, &lo, &hi);
		ck_assert_msg(fabs(lo - ref[i].lo) <= 1e-9 * fmax(1, ref[i].lo), "k=%ld lo %.12g", ref[i].k, lo);
		ck_assert_msg(fabs(hi - ref[i].hi) <= 1e-9 * ref[i].hi, "k=%ld hi %.12g", ref[i].k, hi);
	}
}
END_TEST

/* ---- the CSV reader ---- */

START_TEST(csv_quotes_crlf_bom_and_lines)
{
	const char *text = "\xEF\xBB\xBF" "a,b,c\r\n"
			   "1,\"x,y\",3\r\n"
			   "\n"
			   "2,\"multi\nline \"\"q\"\"\",\n"
			   "last,,\"unterminated";
	struct fl_csv *c;
	ck_assert_int_eq(fl_csv_open(write_tmp("q.csv", text), &c), FL_OK);
	struct fl_csv_record r;
	char buf[64];
	ck_assert_int_eq(fl_csv_next(c, &r), 1);
	ck_assert_uint_eq(r.n, 3);
	ck_assert(fl_csv_eq(&r.f[0], "a") && fl_csv_eq(&r.f[2], "c"));
	ck_assert_int_eq(r.line, 1);
	ck_assert_int_eq(fl_csv_next(c, &r), 1);
	ck_assert_int_eq(r.line, 2);
	fl_csv_copy(&r.f[1], buf, sizeof(buf));
	ck_assert_str_eq(buf, "x,y");
	ck_assert_int_eq(fl_csv_next(c, &r), 1);
	ck_assert_int_eq(r.line, 4); /* the blank line 3 is skipped */
	ck_assert_uint_eq(r.n, 3);
	fl_csv_copy(&r.f[1], buf, sizeof(buf));
	ck_assert_str_eq(buf, "multi\nline \"q\"");
	ck_assert_uint_eq(r.f[2].n, 0);
	ck_assert_int_eq(fl_csv_next(c, &r), 1);
	ck_assert_int_eq(r.line, 6);
	ck_assert_int_eq(r.bad_quote, 1);
	ck_assert_int_eq(fl_csv_next(c, &r), 0);
	fl_csv_close(c);
}
END_TEST

START_TEST(csv_long_records_grow_the_buffer)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, "h\n");
	for (int i = 0; i < 3000000; i++)
		strbuf_adds(&sb, "x");
	strbuf_adds(&sb, "\nend\n");
	struct fl_csv *c;
	ck_assert_int_eq(fl_csv_open(write_tmp("long.csv", sb.buf), &c), FL_OK);
	struct fl_csv_record r;
	ck_assert_int_eq(fl_csv_next(c, &r), 1);
	ck_assert_int_eq(fl_csv_next(c, &r), 1);
	ck_assert_uint_eq(r.f[0].n, 3000000);
	ck_assert_int_eq(fl_csv_next(c, &r), 1);
	ck_assert(fl_csv_eq(&r.f[0], "end"));
	ck_assert_int_eq(r.line, 3);
	ck_assert_int_eq(fl_csv_next(c, &r), 0);
	fl_csv_close(c);
	strbuf_release(&sb);
}
END_TEST

/* ---- fleet analyze on hand-made logs ---- */

#define KALOS_HEADER                                                                                          \
	"job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,start_time," \
	"end_time,fail_time,stop_time,duration,queue,gpu_time\n"

/* hand-made test data: 256 GPUs x 10 h CANCELLED, 256 x 2 h NODE_FAIL,
 * 512 x 4 h NODE_FAIL (offset +08:00), 8 x 1 h COMPLETED, 1 x 0.5 h FAILED,
 * then four bad rows */
static const char kalos_log[] = KALOS_HEADER
	"a,u1,32,256,1,1,1,P,CANCELLED,2023-05-01 00:00:00+00:00,2023-05-01 01:00:00+00:00,2023-05-01 11:00:00+00:00,,,36000,3600,9216000\n"
	"b,u1,32,256,1,1,1,P,NODE_FAIL,2023-05-02 00:00:00+00:00,2023-05-02 00:00:00+00:00,2023-05-02 02:00:00+00:00,2023-05-02 02:00:00+00:00,,7200,0,1843200\n"
	"c,u2,64,512,1,1,1,P,NODE_FAIL,2023-05-03 08:00:00+08:00,2023-05-03 08:00:10+08:00,2023-05-03 12:00:10+08:00,,,14400,10,7372800\n"
	"d,u3,1,8,1,1,1,S,COMPLETED,2023-05-04 00:00:00+00:00,2023-05-04 00:00:20+00:00,2023-05-04 01:00:20+00:00,,,3600,20,28800\n"
	"e,u3,1,1,1,1,1,D,FAILED,2023-05-04 00:00:00+00:00,2023-05-04 00:00:30+00:00,2023-05-04 00:30:30+00:00,,,1800,30,1800\n"
	"f,u3,1,1,1,1,1,D,WEIRD,2023-05-04 00:00:00+00:00,2023-05-04 00:00:30+00:00,2023-05-04 00:30:30+00:00,,,1800,30,1800\n"
	"g,u3,1,1,1,1,1,D,COMPLETED,2023-05-04 00:00:00+00:00,2023-05-04 01:00:30+00:00,2023-05-04 00:30:30+00:00,,,0,0,0\n"
	"h,u3,1,1,1,1,1,D,COMPLETED,2023-05-04 00:00:00+00:00\n"
	"i,u3,1,x,1,1,1,D,COMPLETED,2023-05-04 00:00:00+00:00,2023-05-04 00:00:30+00:00,2023-05-04 00:30:30+00:00,,,1800,30,1800\n";

static cJSON *analyze(const char *path, const struct fl_fleet_opts *o)
{
	cJSON *j = NULL;
	enum fl_status st = fl_fleet_analyze(path, o, &j);
	ck_assert_msg(st == FL_OK, "analyze: %s", fl_error_msg());
	return j;
}

START_TEST(analyze_kalos_sums_states_and_mtbf)
{
	struct fl_fleet_opts o = FL_FLEET_OPTS_INIT;
	cJSON *j = analyze(write_tmp("k.csv", kalos_log), &o);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "input"), "format")->valuestring, "kalos");
	double total = 2560 + 512 + 2048 + 8 + 0.5;
	ck_assert_double_eq_tol(num_at(j, "jobs", "gpu_hours"), total, 1e-9);
	ck_assert_double_eq(num_at(j, "jobs", "count"), 5);
	ck_assert_double_eq(num_at(j, "bad_rows", "count"), 4);
	const cJSON *first = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "bad_rows"), "first");
	ck_assert_int_eq(cJSON_GetArraySize(first), 4);
	static const struct {
		int line;
		const char *reason;
	} want[] = {{7, "unknown_state"}, {8, "end_before_start"}, {9, "field_count"}, {10, "bad_gpu_num"}};
	for (int i = 0; i < 4; i++) {
		const cJSON *e = cJSON_GetArrayItem(first, i);
		ck_assert_int_eq((int)cJSON_GetObjectItem(e, "line")->valuedouble, want[i].line);
		ck_assert_str_eq(cJSON_GetObjectItem(e, "reason")->valuestring, want[i].reason);
	}
	const cJSON *large = cJSON_GetObjectItem(j, "large");
	ck_assert_double_eq_tol(cJSON_GetObjectItem(large, "gpu_hour_share")->valuedouble, 5120 / total, 1e-12);
	ck_assert_double_eq_tol(cJSON_GetObjectItem(large, "job_share")->valuedouble, 0.6, 1e-12);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "dominant_gpu_hour_state")->valuestring, "CANCELLED");
	const cJSON *m = cJSON_GetObjectItem(j, "mtbf");
	ck_assert_double_eq(num_at(m, "failures", NULL), 2);
	ck_assert_double_eq_tol(num_at(m, "gpu_hours_at_risk", NULL), 5120, 1e-9);
	ck_assert_double_eq_tol(num_at(m, "per_gpu_years", NULL), 2560 / 8766.0, 1e-12);
	double lo, hi;
	fl_poisson_ci(2, 0.95, &lo, &hi);
	ck_assert_double_eq_tol(num_at(m, "ci95", "years_lo"), 5120 / hi / 8766, 1e-12);
	ck_assert_double_eq_tol(num_at(m, "ci95", "years_hi"), 5120 / lo / 8766, 1e-9);
	/* Young: M = 2560 h / 256 GPUs = 10 h, C = 10 min: tau = sqrt(2 * 1/6 * 10) h */
	ck_assert_double_eq_tol(num_at(j, "young", "interval_min"), sqrt(2.0 / 6 * 10) * 60, 1e-9);
	const cJSON *g = cJSON_GetObjectItem(j, "goodput");
	ck_assert_double_eq_tol(num_at(g, "lost_to_failures_gpu_hours", NULL), 512 + 2048 + 0.5, 1e-9);
	ck_assert_double_eq_tol(num_at(g, "completed_gpu_hours", NULL), 8, 1e-9);
	/* the queue of the 256-1023 bucket: 3600, 0, 10 s -> p50 10 */
	const cJSON *q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "queue"), 5);
	ck_assert_str_eq(cJSON_GetObjectItem(q, "bucket")->valuestring, "256-1023");
	ck_assert_double_eq(num_at(q, "p50_s", NULL), 10);
	ck_assert_double_eq_tol(num_at(q, "p90_s", NULL), 10 + 0.8 * 3590, 1e-9);
	cJSON_Delete(j);

	/* a duration cut: only the 10 h and the 4 h jobs are at risk */
	o.min_hours = 3;
	j = analyze(write_tmp("k.csv", kalos_log), &o);
	m = cJSON_GetObjectItem(j, "mtbf");
	ck_assert_double_eq(num_at(m, "failures", NULL), 1);
	ck_assert_double_eq_tol(num_at(m, "gpu_hours_at_risk", NULL), 2560 + 2048, 1e-9);
	m = cJSON_GetObjectItem(j, "mtbf_truncated");
	ck_assert_double_eq_tol(num_at(m, "gpu_hours_at_risk", NULL), 256 * 7 + 512 * 1, 1e-9);
	cJSON_Delete(j);
}
END_TEST

START_TEST(analyze_strict_and_headers)
{
	struct fl_fleet_opts o = FL_FLEET_OPTS_INIT;
	o.strict = 1;
	cJSON *j = NULL;
	ck_assert_int_eq(fl_fleet_analyze(write_tmp("k.csv", kalos_log), &o, &j), FL_EINPUT);
	ck_assert_ptr_null(j);
	ck_assert_msg(strstr(fl_error_msg(), "line 7: unknown_state 'WEIRD'"), "%s", fl_error_msg());
	o.strict = 0;
	ck_assert_int_eq(fl_fleet_analyze(write_tmp("h.csv", "job_id,user,gpu_num,submit_time\n"), &o, &j), FL_EINPUT);
	ck_assert_msg(strstr(fl_error_msg(), "no 'state' column"), "%s", fl_error_msg());
	ck_assert_int_eq(fl_fleet_analyze(write_tmp("e.csv", ""), &o, &j), FL_EINPUT);
	ck_assert_int_eq(fl_fleet_analyze("/nonexistent/x.csv", &o, &j), FL_EINPUT);
	/* Seren's header: no fail_time, no mem_per_pod_GB */
	j = analyze(write_tmp("s.csv", "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,"
				       "duration,queue,gpu_time\n"
				       "1,u,128,1024,1,P,CANCELLED,2023-05-01 00:00:00+00:00,2023-05-01 00:00:00+00:00,"
				       "2023-05-02 00:00:00+00:00,86400,0,88473600\n"),
		    &o);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "input"), "format")->valuestring, "seren");
	ck_assert_double_eq_tol(num_at(j, "jobs", "gpu_hours"), 24576, 1e-9);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "mtbf"), "per_gpu_years")));
	cJSON_Delete(j);
}
END_TEST

START_TEST(analyze_xid_correlates_by_time)
{
	struct fl_fleet_opts o = FL_FLEET_OPTS_INIT;
	char *jobs = strdup(write_tmp("k.csv", kalos_log));
	/* b fails at 2023-05-02 02:00:00, c at 2023-05-03 04:00:10 UTC: one XID
	 * 60 s after b, the other 20 minutes before c (outside 300 s) */
	o.xid_path = write_tmp("x.csv", "Time,10.0.0.1-0,10.0.0.1-1\n"
					"2023-05-02 02:01:00+00:00,0,79\n"
					"2023-05-03 03:40:00+00:00,31,\n"
					"2023-05-03 03:40:15+00:00,,\n"
					"broken,1,2\n");
	cJSON *j = analyze(jobs, &o);
	const cJSON *x = cJSON_GetObjectItem(j, "xid");
	ck_assert_double_eq(num_at(x, "events", NULL), 2);
	ck_assert_double_eq(num_at(x, "gpus", NULL), 2);
	ck_assert_double_eq(num_at(x, "bad_rows", NULL), 1);
	ck_assert_double_eq(num_at(x, "node_fail_with_xid", NULL), 1);
	ck_assert_double_eq(num_at(cJSON_GetObjectItem(x, "mtbf"), "failures", NULL), 1);
	ck_assert_double_eq(num_at(cJSON_GetObjectItem(x, "by_code"), "79", NULL), 1);
	cJSON_Delete(j);
	free(jobs);
}
END_TEST

/* ---- fleet faults ---- */

START_TEST(fleet_fault_registry_entries)
{
	size_t n = 0;
	for (const struct fl_fleet_fault_ops *const *f = fl_fleet_faults; *f; f++, n++) {
		ck_assert_msg((*f)->name && (*f)->summary && (*f)->apply, "fleet fault %zu incomplete", n);
		ck_assert_ptr_eq(fl_fleet_fault_find((*f)->name), *f);
		ck_assert_uint_le((*f)->n_params, 16);
		for (size_t k = 0; k < (*f)->n_params; k++) {
			const struct fl_param_spec *p = &(*f)->params[k];
			ck_assert(p->type == FL_PARAM_NUMBER || p->type == FL_PARAM_INT);
			ck_assert_msg(p->def >= p->min && p->def <= p->max, "%s.%s default out of range", (*f)->name, p->name);
			ck_assert(p->meaning && *p->meaning);
		}
		for (const struct fl_fleet_fault_ops *const *g = fl_fleet_faults; g != f; g++)
			ck_assert_str_ne((*g)->name, (*f)->name);
	}
	ck_assert_uint_eq(n, 4);
	ck_assert_ptr_null(fl_fleet_fault_find("nope"));
}
END_TEST

/* ---- the simulation ---- */

static const char small_fleet[] =
	"{\"schema\": \"faultline.fleet_scenario/1\", \"name\": \"small\", \"seed\": 7,\n"
	" \"cluster\": {\"nodes\": 64, \"gpus_per_node\": 8, \"days\": 30, \"format\": \"%s\"},\n"
	" \"workload\": {\"jobs_per_day\": 120, \"xid_noise_per_day\": 1, \"mix\": [\n"
	"   {\"name\": \"debug\", \"share\": 0.7, \"gpus\": [1, 2], \"median_min\": 20, \"p_fail\": 0.2, \"p_cancel\": 0.2},\n"
	"   {\"name\": \"big\", \"share\": 0.05, \"gpus\": [256], \"median_min\": 1440, \"sigma\": 0.5, \"p_cancel\": 0.8, \"p_restart\": 1}]},\n"
	" \"faults\": [{\"fault\": \"node_failure\", \"params\": {\"mtbf_years\": 0.5}},\n"
	"            {\"fault\": \"checkpoint_cost\", \"params\": {\"cost_min\": 5, \"min_gpus\": 64}}],\n"
	" \"analysis\": {\"min_gpus\": 256}}\n";

static cJSON *generate(const char *fmt, const char *sub, uint64_t seed, char hash[65])
{
	char text[2048], dir[256], path[300];
	snprintf(text, sizeof(text), small_fleet, fmt);
	char *sc = strdup(write_tmp("small.json", text));
	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, sub);
	struct fl_fleet_gen_opts o = {.out_dir = dir, .have_seed = seed != 0, .seed = seed, .json = 1};
	struct strbuf out = STRBUF_INIT;
	enum fl_status st = fl_fleet_generate(sc, &o, &out);
	ck_assert_msg(st == FL_OK, "generate: %s", fl_error_msg());
	cJSON *t = cJSON_Parse(out.buf);
	ck_assert_ptr_nonnull(t);
	snprintf(path, sizeof(path), "%s/%s", dir, !strcmp(fmt, "kalos") ? "trace_kalos.csv" : "trace_seren.csv");
	ck_assert_int_eq(fl_sha256_file(path, hash), FL_OK);
	strbuf_release(&out);
	free(sc);
	return t;
}

START_TEST(simulation_is_seeded_and_reads_back)
{
	char h1[65], h2[65], h3[65];
	cJSON *a = generate("kalos", "a", 0, h1), *b = generate("kalos", "b", 0, h2), *c = generate("kalos", "c", 8, h3);
	ck_assert_str_eq(h1, h2);
	ck_assert_str_ne(h1, h3);
	ck_assert_msg(strstr(cJSON_GetObjectItem(a, "simulated")->valuestring, "SIMULATED"), "no SIMULATED note");
	/* the analysis of the written log sees exactly the simulated population */
	const cJSON *sim = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "realised"), "at_risk");
	const cJSON *got = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "metrics"), "mtbf");
	ck_assert_double_eq(num_at(got, "failures", NULL), num_at(sim, "failures", NULL));
	ck_assert_double_eq_tol(num_at(got, "gpu_hours_at_risk", NULL), num_at(sim, "gpu_hours_at_risk", NULL), 1e-6);
	ck_assert_double_gt(num_at(sim, "failures", NULL), 5);
	const cJSON *w = cJSON_GetObjectItem(a, "waterfall"), *g = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "metrics"), "goodput");
	ck_assert_double_eq_tol(num_at(w, "total_gpu_hours", NULL), num_at(g, "total_gpu_hours", NULL), 1e-6);
	ck_assert_double_eq_tol(num_at(w, "cancelled_gpu_hours", NULL), num_at(g, "cancelled_gpu_hours", NULL), 1e-6);
	ck_assert_double_le(num_at(w, "lost_work_gpu_hours", NULL), num_at(w, "node_fail_gpu_hours", NULL));
	ck_assert_double_gt(num_at(w, "checkpoint_overhead_gpu_hours", NULL), 0);
	ck_assert_double_eq(num_at(cJSON_GetObjectItem(a, "metrics"), "bad_rows", "count"), 0);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	cJSON *s = generate("seren", "s", 0, h3);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metrics"), "input"), "format")
				 ->valuestring, "seren");
	cJSON_Delete(s);
}
END_TEST

START_TEST(scenario_errors_name_the_key)
{
	static const struct {
		const char *doc, *msg;
	} bad[] = {
		{"{\"schema\": \"faultline.scenario/1\"}", "expected faultline.fleet_scenario/1"},
		{"{\"schema\": \"faultline.fleet_scenario/1\", \"name\": \"x\", \"cluster\": {\"nodes\": 0}}", "cluster.nodes"},
		{"{\"schema\": \"faultline.fleet_scenario/1\", \"name\": \"x\", \"cluster\": {\"nodes\": 4}, \"workload\": "
		 "{\"jobs_per_day\": 1, \"mix\": [{\"name\": \"a\", \"share\": 1, \"gpus\": [64], \"median_min\": 1}]}}",
		 "do not fit"},
		{"{\"schema\": \"faultline.fleet_scenario/1\", \"name\": \"x\", \"cluster\": {\"nodes\": 4}, \"workload\": "
		 "{\"jobs_per_day\": 1, \"mix\": [{\"name\": \"a\", \"share\": 1, \"gpus\": [1], \"median_min\": 1}]}, "
		 "\"faults\": [{\"fault\": \"bad_node\", \"params\": {\"node\": 9}}]}", "not in a fleet of 4 nodes"},
		{"{\"schema\": \"faultline.fleet_scenario/1\", \"name\": \"x\", \"cluster\": {\"nodes\": 4}, \"workload\": "
		 "{\"jobs_per_day\": 1, \"mix\": [{\"name\": \"a\", \"share\": 1, \"gpus\": [1], \"median_min\": 1}]}, "
		 "\"faults\": [{\"fault\": \"meteor\"}]}", "unknown fleet fault 'meteor'"},
		{"{\"schema\": \"faultline.fleet_scenario/1\", \"name\": \"x\", \"cluster\": {\"nodes\": 4}, \"workload\": "
		 "{\"jobs_per_day\": 1, \"mix\": [{\"name\": \"a\", \"share\": 1, \"gpus\": [1], \"median_min\": 1}]}, "
		 "\"faults\": [{\"fault\": \"node_failure\", \"vary\": {\"mtbf_years\": [5, 1]}}]}", "vary.mtbf_years"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *sc = strdup(write_tmp("bad.json", bad[i].doc));
		char dir[256];
		snprintf(dir, sizeof(dir), "%s/out", tmpdir);
		struct fl_fleet_gen_opts o = {.out_dir = dir};
		struct strbuf out = STRBUF_INIT;
		ck_assert_int_eq(fl_fleet_generate(sc, &o, &out), FL_EINPUT);
		ck_assert_msg(strstr(fl_error_msg(), bad[i].msg), "case %zu: '%s' lacks '%s'", i, fl_error_msg(), bad[i].msg);
		strbuf_release(&out);
		free(sc);
	}
}
END_TEST

static Suite *fleet_suite(void)
{
	Suite *s = suite_create("fleet");
	TCase *tc = tcase_create("fleet");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, NULL);
	tcase_add_test(tc, times_parse_in_utc_with_offsets);
	tcase_add_test(tc, garwood_interval_matches_chi_square);
	tcase_add_test(tc, csv_quotes_crlf_bom_and_lines);
	tcase_add_test(tc, csv_long_records_grow_the_buffer);
	tcase_add_test(tc, analyze_kalos_sums_states_and_mtbf);
	tcase_add_test(tc, analyze_strict_and_headers);
	tcase_add_test(tc, analyze_xid_correlates_by_time);
	tcase_add_test(tc, fleet_fault_registry_entries);
	tcase_add_test(tc, simulation_is_seeded_and_reads_back);
	tcase_add_test(tc, scenario_errors_name_the_key);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fleet_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
