/* check_writer.c — the Kineto-layout trace writer, read back through the file format. */
#define _GNU_SOURCE /* nftw */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/kineto_writer.h"
#include "capture/tracer.h"
#include "common/jsonutil.h"
#include "common/outfile.h"
#include "common/strbuf.h"
#include "grader/trace/validate.h"
#include "tests/unit/scratch.h"

/* ---- scratch directories (see check_common.c) ---- */

static void base_setup(void) { scratch_base_setup("writer"); }

static void tmp_teardown(void)
{
	rm_rf(tmpdir);
	fl_tracer_release();
}

/* ---- a small recorded window ---- */

#define LONG_NAME_LEN 10240

static char long_name[LONG_NAME_LEN + 1];

/* X events in the order the writer must emit them (buffer order = begin order). */
static const char *expected_names[8];
static size_t n_expected;

static struct fl_trace_meta record_window(void)
{
	for (size_t i = 0; i < LONG_NAME_LEN; i++)
		long_name[i] = (char)('a' + i % 26);
	long_name[LONG_NAME_LEN] = '\0';
	const char *names[] = {"ProfilerStep#2", "forward", "fl::\"quoted\"", "back\\slash", "new\nline",
			       long_name, "metrics"};
	n_expected = sizeof(names) / sizeof(names[0]);
	memcpy(expected_names, names, sizeof(names));

	ck_assert_int_eq(fl_tracer_init(0), FL_OK);
	ck_assert_int_eq(fl_tracer_thread_attach("main", -1), FL_OK);
	uint32_t id[7];
	for (size_t i = 0; i < n_expected; i++)
		id[i] = fl_tracer_intern(names[i]);

	struct fl_trace_meta m = {
		.trace_name = "unit \"trace\"",
		.process_name = "check_writer",
		.rank = 0,
		.world_size = 1,
		.dist_backend = "none",
		.seed = 7,
	};
	fl_tracer_set_recording(1);
	m.window_t0 = fl_clock_ticks();
	uint32_t step = fl_span_begin(id[0], FL_EV_USER_ANNOTATION);
	uint32_t fwd = fl_span_begin(id[1], FL_EV_USER_ANNOTATION);
	for (int i = 2; i <= 5; i++)
		fl_span_end(fl_span_begin(id[i], FL_EV_CPU_OP));
	fl_span_end(fwd);
	fl_span_end(fl_span_begin(id[6], FL_EV_USER_ANNOTATION));
	fl_span_end(step);
	m.window_t1 = fl_clock_ticks();
	fl_tracer_set_recording(0);
	return m;
}

/* Check that every `key` occurrence in text is followed by -?digits.ddd and a
 * non-digit; return how many there were. */
static int check_three_decimals(const char *text, const char *key)
{
	int count = 0;
	size_t klen = strlen(key);
	for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
		const char *q = p + klen;
		if (*q == '-')
			q++;
		const char *digits = q;
		while (isdigit((unsigned char)*q))
			q++;
		ck_assert_msg(q > digits && *q == '.', "%s without an integer part near: %.40s", key, p);
		q++;
		int frac = 0;
		while (isdigit((unsigned char)q[frac]))
			frac++;
		ck_assert_msg(frac == 3, "%s with %d decimals near: %.40s", key, frac, p);
		count++;
	}
	return count;
}

static int key_index(const cJSON *doc, const char *key)
{
	int i = 0;
	for (const cJSON *it = doc->child; it; it = it->next, i++)
		if (strcmp(it->string, key) == 0)
			return i;
	return -1;
}

static void check_trace(const char *path, const struct fl_trace_stats *stats)
{
	char *text = NULL;
	size_t len = 0;
	ck_assert_int_eq(fl_read_file(path, &text, &len), FL_OK);
	cJSON *doc = cJSON_ParseWithLength(text, len);
	ck_assert_msg(doc != NULL, "'%s' is not JSON", path);

	/* metadata before traceEvents, traceName after */
	static const char *const before[] = {"schemaVersion", "deviceProperties", "distributedInfo",
					     "displayTimeUnit", "baseTimeNanoseconds"};
	int ev_at = key_index(doc, "traceEvents");
	ck_assert_int_ge(ev_at, 0);
	for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++) {
		int at = key_index(doc, before[i]);
		ck_assert_msg(at >= 0 && at < ev_at, "'%s' at %d, traceEvents at %d", before[i], at, ev_at);
	}
	ck_assert_int_gt(key_index(doc, "traceName"), ev_at);
	ck_assert_str_eq(cJSON_GetObjectItem(doc, "traceName")->valuestring, "unit \"trace\"");
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(doc, "deviceProperties")));
	ck_assert_str_eq(cJSON_GetObjectItem(doc, "displayTimeUnit")->valuestring, "ms");
	ck_assert_ptr_nonnull(strstr(text, "\"rank\": 0"));
	const cJSON *di = cJSON_GetObjectItem(doc, "distributedInfo");
	ck_assert_int_eq(cJSON_GetObjectItem(di, "world_size")->valueint, 1);

	/* µs with exactly three decimals, everywhere */
	ck_assert_int_gt(check_three_decimals(text, "\"ts\": "), (int)n_expected);
	ck_assert_int_gt(check_three_decimals(text, "\"dur\": "), (int)n_expected - 1);

	const cJSON *events = cJSON_GetObjectItem(doc, "traceEvents");
	ck_assert(cJSON_IsArray(events));
	size_t n_x = 0, n_thread_names = 0;
	double ext_ids[16];
	const cJSON *e, *last = NULL;
	cJSON_ArrayForEach(e, events) {
		last = e;
		const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
		const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
		if (strcmp(ph, "M") == 0 && strcmp(name, "thread_name") == 0) {
			const char *label = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "name")->valuestring;
			ck_assert_ptr_nonnull(strstr(label, "(main)"));
			n_thread_names++;
		}
		if (strcmp(ph, "X") != 0 || strcmp(cJSON_GetObjectItem(e, "cat")->valuestring, "Trace") == 0)
			continue;
		ck_assert_uint_lt(n_x, n_expected);
		ck_assert_str_eq(name, expected_names[n_x]); /* names round-trip exactly */
		ck_assert_str_eq(cJSON_GetObjectItem(e, "cat")->valuestring,
				 n_x >= 2 && n_x <= 5 ? "cpu_op" : "user_annotation");
		ck_assert(cJSON_GetObjectItem(e, "ts")->valuedouble >= 0);
		ck_assert(cJSON_GetObjectItem(e, "dur")->valuedouble >= 0);
		ext_ids[n_x] = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "External id")->valuedouble;
		for (size_t k = 0; k < n_x; k++)
			ck_assert(ext_ids[k] != ext_ids[n_x]);
		n_x++;
	}
	ck_assert_uint_eq(n_x, n_expected);
	ck_assert_uint_eq(n_thread_names, 1);
	ck_assert_ptr_nonnull(last);
	ck_assert_str_eq(cJSON_GetObjectItem(last, "ph")->valuestring, "i");
	ck_assert_str_eq(cJSON_GetObjectItem(last, "name")->valuestring, "Record Window End");

	ck_assert_uint_eq(stats->events, n_expected);
	ck_assert_uint_eq(stats->dropped, 0);
	ck_assert_int_eq(cJSON_GetObjectItem(doc, "faultline_dropped_events")->valueint, 0);

	struct strbuf report = STRBUF_INIT;
	enum fl_status st = fl_trace_validate(path, &report);
	ck_assert_msg(st == FL_OK, "validate: %d\n%s", st, report.buf ? report.buf : "");
	strbuf_release(&report);
	cJSON_Delete(doc);
	free(text);
}

START_TEST(writes_plain_json)
{
	struct fl_trace_meta m = record_window();
	struct fl_trace_stats stats = {99, 99};
	char path[256];
	tmp_path(path, sizeof(path), "trace.json");
	ck_assert_int_eq(fl_kineto_write(path, &m, &stats), FL_OK);
	check_trace(path, &stats);
}
END_TEST

START_TEST(writes_gzip_json)
{
	struct fl_trace_meta m = record_window();
	struct fl_trace_stats stats = {99, 99};
	char path[256];
	tmp_path(path, sizeof(path), "trace.json.gz");
	ck_assert_int_eq(fl_kineto_write(path, &m, &stats), FL_OK);
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	unsigned char magic[2] = {0, 0};
	ck_assert_uint_eq(fread(magic, 1, 2, f), 2);
	fclose(f);
	ck_assert_uint_eq(magic[0], 0x1f);
	ck_assert_uint_eq(magic[1], 0x8b);
	check_trace(path, &stats);
}
END_TEST

START_TEST(writes_rank_and_drops)
{
	/* a buffer of 8 events: the rest are counted, never invented */
	ck_assert_int_eq(fl_tracer_init(8), FL_OK);
	ck_assert_int_eq(fl_tracer_thread_attach("main", -1), FL_OK);
	uint32_t step = fl_tracer_intern("ProfilerStep#3"), op = fl_tracer_intern("fl::add");
	struct fl_trace_meta m = {.trace_name = "r", .rank = 3, .world_size = 4, .dist_backend = "mpi"};
	fl_tracer_set_recording(1);
	m.window_t0 = fl_clock_ticks();
	uint32_t s = fl_span_begin(step, FL_EV_USER_ANNOTATION);
	for (int i = 0; i < 6; i++)
		fl_span_end(fl_span_begin(op, FL_EV_CPU_OP));
	fl_span_end(s);
	(void)fl_span_begin(op, FL_EV_CPU_OP); /* the 8th, never ended: not written */
	fl_span_end(fl_span_begin(op, FL_EV_CPU_OP));
	fl_span_end(fl_span_begin(op, FL_EV_CPU_OP));
	m.window_t1 = fl_clock_ticks();
	fl_tracer_set_recording(0);

	char path[256];
	struct fl_trace_stats stats;
	tmp_path(path, sizeof(path), "rank3.json");
	ck_assert_int_eq(fl_kineto_write(path, &m, &stats), FL_OK);
	ck_assert_uint_eq(stats.events, 7);
	ck_assert_uint_eq(stats.dropped, 2);

	char *text = NULL;
	size_t len;
	ck_assert_int_eq(fl_read_file(path, &text, &len), FL_OK);
	ck_assert_ptr_nonnull(strstr(text, "\"rank\": 3"));
	cJSON *doc = cJSON_Parse(text);
	ck_assert_ptr_nonnull(doc);
	const cJSON *di = cJSON_GetObjectItem(doc, "distributedInfo");
	ck_assert_int_eq(cJSON_GetObjectItem(di, "world_size")->valueint, 4);
	ck_assert_str_eq(cJSON_GetObjectItem(di, "backend")->valuestring, "mpi");
	ck_assert_int_eq(cJSON_GetObjectItem(doc, "faultline_dropped_events")->valueint, 2);
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(writes_op_inputs)
{
	/* torch.profiler's record_shapes args: one list per input, [] for a non-tensor or 0-dim */
	ck_assert_int_eq(fl_tracer_init(0), FL_OK);
	ck_assert_int_eq(fl_tracer_thread_attach("main", -1), FL_OK);
	uint32_t mm = fl_tracer_intern("fl::mm"), sel = fl_tracer_intern("fl::select"),
		 bare = fl_tracer_intern("fl::bare"), step = fl_tracer_intern("ProfilerStep#0");
	const struct fl_input mm_in[] = {
		{.dim = {64, 96}, .ndim = 2, .type = FL_IN_FLOAT},
		{.dim = {96, 96}, .ndim = 2, .type = FL_IN_HALF},
	};
	const struct fl_input sel_in[] = {
		{.dim = {1, 2, 3}, .ndim = 3, .type = FL_IN_FLOAT}, {.type = FL_IN_SCALAR},
		{.type = FL_IN_SCALAR_LIST}, {.type = FL_IN_NONE},
	};
	struct fl_trace_meta m = {.trace_name = "inputs", .world_size = 1, .dist_backend = "none"};
	fl_tracer_set_recording(1);
	m.window_t0 = fl_clock_ticks();
	uint32_t s = fl_span_begin(step, FL_EV_USER_ANNOTATION);
	uint32_t a = fl_op_begin(mm, mm_in, 2);
	fl_span_end(fl_op_begin(sel, sel_in, 4));
	fl_span_end(a);
	fl_span_end(fl_op_begin(bare, NULL, 0));
	fl_span_end(s);
	m.window_t1 = fl_clock_ticks();
	fl_tracer_set_recording(0);

	char path[256];
	tmp_path(path, sizeof(path), "inputs.json");
	ck_assert_int_eq(fl_kineto_write(path, &m, NULL), FL_OK);
	char *text = NULL;
	size_t len;
	ck_assert_int_eq(fl_read_file(path, &text, &len), FL_OK);
	/* the exact text torch.profiler writes for these args */
	ck_assert_ptr_nonnull(strstr(text, "\"Record function id\": 0, \"Input Dims\": [[64, 96], [96, 96]], "
					  "\"Input type\": [\"float\", \"c10::Half\"], \"Ev Idx\": 1}"));
	ck_assert_ptr_nonnull(strstr(text, "\"Input Dims\": [[1, 2, 3], [], [], []], "
					  "\"Input type\": [\"float\", \"Scalar\", \"ScalarList\", \"\"]"));
	cJSON *doc = cJSON_Parse(text);
	ck_assert_ptr_nonnull(doc);
	const cJSON *e;
	int n_ops = 0;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "traceEvents")) {
		const cJSON *cat = cJSON_GetObjectItem(e, "cat");
		if (!cat || strcmp(cat->valuestring, "cpu_op") != 0)
			continue;
		const cJSON *args = cJSON_GetObjectItem(e, "args");
		const cJSON *dims = cJSON_GetObjectItem(args, "Input Dims");
		const cJSON *types = cJSON_GetObjectItem(args, "Input type");
		const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
		if (strcmp(name, "fl::bare") == 0) { /* no inputs: no keys */
			ck_assert_ptr_null(dims);
			ck_assert_ptr_null(types);
		} else {
			ck_assert(cJSON_IsArray(dims) && cJSON_IsArray(types));
			ck_assert_int_eq(cJSON_GetArraySize(dims), cJSON_GetArraySize(types));
		}
		n_ops++;
	}
	ck_assert_int_eq(n_ops, 3);
	cJSON_Delete(doc);
	free(text);
	struct strbuf report = STRBUF_INIT;
	enum fl_status st = fl_trace_validate(path, &report);
	ck_assert_msg(st == FL_OK, "validate: %d\n%s", st, report.buf ? report.buf : "");
	strbuf_release(&report);
}
END_TEST

START_TEST(unwritable_path_leaves_nothing)
{
	struct fl_trace_meta m = record_window();
	struct fl_trace_stats stats = {99, 99};
	char path[320], missing[256];
	tmp_path(missing, sizeof(missing), "no-such-dir");
	snprintf(path, sizeof(path), "%s/trace.json.gz", missing);
	fl_error_clear();
	ck_assert_int_eq(fl_kineto_write(path, &m, &stats), FL_ERUNTIME);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), path));
	ck_assert_int_ne(access(missing, F_OK), 0);
	ck_assert_uint_eq(stats.events, 99); /* untouched on failure */

	/* nothing at all was left in the directory that does exist */
	ck_assert_int_eq(tmp_entries(), 0);
}
END_TEST

static Suite *writer_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *tc = tcase_create("kineto");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, writes_plain_json);
	tcase_add_test(tc, writes_gzip_json);
	tcase_add_test(tc, writes_rank_and_drops);
	tcase_add_test(tc, writes_op_inputs);
	tcase_add_test(tc, unwritable_path_leaves_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(writer_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
