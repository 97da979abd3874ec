/* check_trace_events.c — the X-event collector on the streaming reader (the
 * input of host metrics and validate), the hash taken on the same pass, the
 * layout facts validate reads, and common/stats.
 *
 * The collector replaced a reader that parsed the whole document with cJSON;
 * a differential test keeps a small copy of that reader here and checks that
 * both give the same events on generated traces. */
#define _GNU_SOURCE
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/sha256.h"
#include "common/stats.h"
#include "common/strbuf.h"
#include "grader/analysis/host_metrics.h"
#include "grader/trace/trace_events.h"
#include "grader/trace/trace_stream.h"
#include "grader/trace/validate.h"

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/check_trace_events.XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	size_t n = strlen(text);
	ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
	close(fd);
	return path;
}

/* ---- the reference: the former DOM reader ---- */

struct ref_ev {
	char name[64];
	int kind;
	double ts, dur;
	long long pid, tid;
};

static long long ref_id(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return (long long)v->valuedouble;
	if (cJSON_IsString(v)) {
		unsigned long long h = 1469598103934665603ull;
		for (const char *p = v->valuestring; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		return -(long long)(h >> 2) - 1;
	}
	return 0;
}

static int ref_cmp(const void *a, const void *b)
{
	const struct ref_ev *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1;
	return 0;
}

static size_t ref_read(const char *text, struct ref_ev *out, size_t cap)
{
	cJSON *doc = cJSON_Parse(text);
	ck_assert_ptr_nonnull(doc);
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"), *e;
	size_t n = 0;
	cJSON_ArrayForEach(e, events) {
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0)
			continue;
		ck_assert_uint_lt(n, cap);
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
		const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
		const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
		struct ref_ev *x = &out[n++];
		snprintf(x->name, sizeof(x->name), "%s", cJSON_IsString(name) ? name->valuestring : "");
		x->kind = (int)fl_cat_of(cJSON_IsString(cat) ? cat->valuestring : "");
		x->ts = cJSON_GetObjectItemCaseSensitive(e, "ts")->valuedouble;
		x->dur = cJSON_IsNumber(dur) ? dur->valuedouble : 0.0;
		x->pid = ref_id(cJSON_GetObjectItemCaseSensitive(e, "pid"));
		x->tid = ref_id(cJSON_GetObjectItemCaseSensitive(e, "tid"));
	}
	/* glibc's qsort is a merge sort here: stable, as the collector's tie rule */
	qsort(out, n, sizeof(*out), ref_cmp);
	cJSON_Delete(doc);
	return n;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

START_TEST(test_differential_dom)
{
	static const char *const cats[] = {"cpu_op", "user_annotation", "kernel", "cuda_runtime", "cuda_driver",
					   "gpu_memcpy", "Trace", "python_function", "gpu_user_annotation"};
	static const char *const names[] = {"ProfilerStep#3", "aten::mm", "data", "k\\u00e9", "ProfilerStep#4"};
	for (int round = 0; round < 200; round++) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_adds(&sb, "{\"traceEvents\": [");
		int n = 1 + (int)rnd(60);
		for (int i = 0; i < n; i++) {
			strbuf_addf(&sb, "%s{\"ph\": \"%s\"", i ? ", " : "", rnd(6) ? "X" : rnd(2) ? "i" : "XX");
			if (rnd(8))
				strbuf_addf(&sb, ", \"cat\": \"%s\"", cats[rnd(9)]);
			if (rnd(8))
				strbuf_addf(&sb, ", \"name\": \"%s\"", names[rnd(5)]);
			strbuf_addf(&sb, ", \"ts\": %u%s", rnd(40), rnd(2) ? ".5" : "");
			switch (rnd(4)) {
			case 0: break;
			case 1: strbuf_adds(&sb, ", \"dur\": \"7\""); break;
			default: strbuf_addf(&sb, ", \"dur\": %u.25", rnd(10));
			}
			if (rnd(4))
				strbuf_addf(&sb, ", \"pid\": %u", rnd(3));
			else
				strbuf_addf(&sb, ", \"pid\": \"%s\"", rnd(2) ? "Spans" : "Traces");
			strbuf_addf(&sb, ", \"tid\": %u, \"args\": {\"stream\": 7}}", rnd(3));
		}
		strbuf_adds(&sb, "], \"distributedInfo\": {\"rank\": 1}}");
		struct ref_ev ref[64];
		size_t nr = ref_read(sb.buf, ref, 64);
		char *path = write_tmp(sb.buf);
		struct fl_trace t;
		ck_assert_int_eq(fl_trace_read(path, &t), FL_OK);
		ck_assert_uint_eq(t.n, nr);
		for (size_t i = 0; i < nr; i++) {
			ck_assert_str_eq(t.ev[i].name, ref[i].name);
			ck_assert_int_eq((int)t.ev[i].kind, ref[i].kind);
			ck_assert(t.ev[i].ts == ref[i].ts && t.ev[i].dur == ref[i].dur);
			ck_assert(t.ev[i].pid == ref[i].pid && t.ev[i].tid == ref[i].tid);
		}
		ck_assert(t.has_rank && t.rank == 1 && t.world_size == 1);
		fl_trace_release(&t);
		unlink(path);
		free(path);
		strbuf_release(&sb);
	}
}
END_TEST

START_TEST(test_read_errors_and_forms)
{
	struct fl_trace t;
	char *p = write_tmp("{\"schemaVersion\": 1}");
	ck_assert_int_eq(fl_trace_read(p, &t), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "traceEvents: expected an array of events"));
	unlink(p);
	free(p);
	p = write_tmp("{\"traceEvents\": [{\"ph\": \"i\"}, {\"ph\": \"X\", \"name\": \"a\"}]}");
	ck_assert_int_eq(fl_trace_read(p, &t), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "traceEvents[1].ts: expected a number"));
	unlink(p);
	free(p);
	p = write_tmp("[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1}]");
	ck_assert_int_eq(fl_trace_read(p, &t), FL_OK);
	ck_assert(t.n == 1 && t.world_size == 0 && !t.has_rank && t.ev[0].dur == 0 && t.ev[0].pid == 0);
	fl_trace_release(&t);
	unlink(p);
	free(p);
}
END_TEST

START_TEST(test_hash_on_the_same_pass)
{
	const char *doc = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 1, \"dur\": 2}]}\n";
	char *p = write_tmp(doc);
	char want[65];
	ck_assert_int_eq(fl_sha256_file(p, want), FL_OK);
	struct fl_trace t;
	ck_assert_int_eq(fl_trace_read_hashed(p, &t), FL_OK);
	ck_assert(t.info.has_sha256);
	ck_assert_str_eq(t.info.sha256, want);
	fl_trace_release(&t);
	ck_assert_int_eq(fl_trace_read(p, &t), FL_OK);
	ck_assert(!t.info.has_sha256);
	fl_trace_release(&t);
	unlink(p);
	free(p);
	/* gzip, several chunks, on the inflating thread and without it */
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, "{\"traceEvents\": [");
	for (int i = 0; i < 20000; i++)
		strbuf_addf(&sb, "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"ts\": %d, \"dur\": 1}", i ? "," : "",
			    i % 7, i);
	strbuf_adds(&sb, "]}");
	char gz[] = "/tmp/check_trace_events.XXXXXX";
	int fd = mkstemp(gz);
	ck_assert_int_ge(fd, 0);
	close(fd);
	gzFile z = gzopen(gz, "wb");
	ck_assert_int_eq(gzwrite(z, sb.buf, (unsigned)sb.len), (int)sb.len);
	gzclose(z);
	ck_assert_int_eq(fl_sha256_file(gz, want), FL_OK);
	for (int thread = 0; thread < 2; thread++) {
		struct fl_strtab *st = fl_strtab_new();
		struct fl_trace_stream_opts o = {.strings = st, .sha256 = 1, .no_thread = !thread, .chunk = 4096};
		struct fl_trace_info info;
		ck_assert_int_eq(fl_trace_stream_file(gz, &o, &info), FL_OK);
		ck_assert(info.has_sha256 && info.gzip && info.n_events == 20000);
		ck_assert_str_eq(info.sha256, want);
		fl_strtab_free(st);
	}
	unlink(gz);
	strbuf_release(&sb);
}
END_TEST

static enum fl_status keep_last(void *arg, const struct fl_tev *e)
{
	*(struct fl_tev *)arg = *e;
	return FL_OK;
}

START_TEST(test_layout_facts)
{
	const char *doc = "{\"schemaVersion\": \"1\", \"distributedInfo\": {\"rank\":0},"
			  " \"traceEvents\": [{\"ph\": \"Xy\", \"name\": null, \"dur\": \"x\", \"args\": {\"rank\": 1}}],"
			  " \"baseTimeNanoseconds\": 5, \"deviceProperties\": [], \"baseTimeNanoseconds\": 6}";
	struct fl_strtab *st = fl_strtab_new();
	struct fl_tev last;
	struct fl_trace_stream_opts o = {.strings = st, .on_event = keep_last, .arg = &last, .chunk = 7};
	struct fl_trace_info info;
	ck_assert_int_eq(fl_trace_stream_mem("m.json", doc, strlen(doc), &o, &info), FL_OK);
	ck_assert_str_eq(fl_strtab_str(st, last.ph_str), "Xy");
	ck_assert_uint_eq(last.keys, FL_TEVK_PH | FL_TEVK_NAME | FL_TEVK_DUR | FL_TEVK_ARGS);
	ck_assert(!(last.has & (FL_TEV_NAME | FL_TEV_DUR)));
	ck_assert(info.has_events && !info.schema_version_number);
	ck_assert_uint_eq(info.meta_seen, FL_META_SCHEMA_VERSION | FL_META_DISTRIBUTED_INFO | FL_META_BASE_TIME |
						 FL_META_DEVICE_PROPERTIES);
	ck_assert_uint_eq(info.meta_after_events, FL_META_BASE_TIME | FL_META_DEVICE_PROPERTIES);
	ck_assert_int_eq(info.n_meta_after, 3);
	ck_assert(info.meta_after_order[0] == FL_META_BASE_TIME && info.meta_after_order[1] == FL_META_DEVICE_PROPERTIES &&
		  info.meta_after_order[2] == FL_META_BASE_TIME);
	/* "rank":0 has no space; the first `"rank": ` is inside the events */
	ck_assert_int_gt(info.rank_text_at, info.events_at);
	ck_assert_int_eq(info.events_at, (long long)(strstr(doc, "\"traceEvents\"") - doc));
	ck_assert_int_eq(info.rank_text_at, (long long)(strstr(doc, "\"rank\": ") - doc));
	fl_strtab_free(st);
}
END_TEST

START_TEST(test_validate_problems)
{
	/* metadata after the events (reported in file order), a null dur (present),
	 * a missing tid, a negative dur, a rank HTA cannot read, no thread names */
	const char *doc = "{\"schemaVersion\": 1, \"deviceProperties\": [], \"distributedInfo\": {\"rank\":0},\n"
			  " \"traceEvents\": [\n"
			  "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": 0, \"dur\": 10, \"pid\": 1, \"tid\": 1},\n"
			  "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 5, \"dur\": 10, \"pid\": 1, \"tid\": 1},\n"
			  "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"b\", \"ts\": 1, \"dur\": null, \"pid\": 1},\n"
			  "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c\", \"ts\": 2, \"dur\": -1, \"pid\": 1, \"tid\": 2},\n"
			  "  {\"ph\": \"i\", \"name\": \"Record Window End\", \"ts\": 20}\n"
			  " ], \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 1}\n";
	char *p = write_tmp(doc);
	struct strbuf rep = STRBUF_INIT;
	ck_assert_int_eq(fl_trace_validate(p, &rep), FL_ECHECK);
	const char *want =
		"  top level: 'displayTimeUnit' comes after traceEvents; expected metadata before it\n"
		"  top level: 'baseTimeNanoseconds' comes after traceEvents; expected metadata before it\n"
		"  distributedInfo: expected the rank written as \"rank\": N (with a space; HTA reads it with a regex)\n"
		"  traceEvents[2].tid at byte 288: missing on an X event\n"
		"  traceEvents[3].dur at byte 365: negative (-1)\n"
		"  traceEvents: no thread_name metadata; expected every row named\n"
		"  'a' at ts 5.000 overlaps 'ProfilerStep#1' at ts 0.000 without nesting in it\n";
	ck_assert_str_eq(rep.buf, want);
	strbuf_release(&rep);
	unlink(p);
	free(p);
}
END_TEST

START_TEST(test_stats)
{
	double v[] = {5, 1, 4, 2};
	ck_assert(fl_p50_upper(v, 4) == 4 && fl_median(v, 4) == 3 && fl_mean(v, 4) == 3);
	ck_assert(fl_p50_upper(v, 3) == 4 && fl_median(v, 3) == 4);
	ck_assert(fl_median(NULL, 0) == 0 && fl_p50_upper(NULL, 0) == 0 && isnan(fl_mean(NULL, 0)));
	ck_assert(v[0] == 5); /* inputs are not reordered */
	double s[] = {1, 2, 3, 4};
	ck_assert(fl_quantile_sorted(s, 4, 0.5) == 2.5 && fl_quantile_sorted(s, 4, 0.25) == 1.75);
	ck_assert(fl_quantile_sorted(s, 4, 1) == 4 && isnan(fl_quantile_sorted(s, 0, 0.5)));
	double *c = fl_sorted_copy(v, 4);
	ck_assert(c[0] == 1 && c[1] == 2 && c[2] == 4 && c[3] == 5);
	free(c);
	fl_sort_doubles(NULL, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trace_events");
	TCase *tc = tcase_create("collector");
	tcase_add_test(tc, test_differential_dom);
	tcase_add_test(tc, test_read_errors_and_forms);
	tcase_add_test(tc, test_hash_on_the_same_pass);
	tcase_add_test(tc, test_layout_facts);
	tcase_add_test(tc, test_validate_problems);
	tcase_add_test(tc, test_stats);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
