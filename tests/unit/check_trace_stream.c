/* check_trace_stream — the streaming trace reader (grader/trace/trace_stream.h) and
 * HTA's device analyses on small hand-made traces (grader/analysis/device_metrics.h).
 *
 * The reader is also fuzzed here, briefly and deterministically: every prefix
 * of a trace (plain and gzip) must be reported as truncated, random byte edits
 * must give a clean result or a clean error, random chunk sizes must not
 * change what is read, and random documents must read as cJSON reads them. */
#include <check.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/status.h"
#include "grader/analysis/device_internal.h" /* the table of analyses */
#include "grader/analysis/device_metrics.h"
#include "grader/trace/trace_stream.h"

/* ------------------------------------------------------------- helpers */

#define MAXEV 64

struct got {
	struct fl_strtab *t;
	size_t n;
	struct fl_tev ev[MAXEV];
	char name[MAXEV][64];
	char cat[MAXEV][32];
	int stop_at; /* callback fails at this event (1-based), 0 never */
};

static enum fl_status collect(void *arg, const struct fl_tev *e)
{
	struct got *g = arg;
	if (g->stop_at && (int)g->n + 1 == g->stop_at)
		return fl_error(FL_ECHECK, "stop at %d", g->stop_at);
	if (g->n < MAXEV) {
		g->ev[g->n] = *e;
		snprintf(g->name[g->n], sizeof(g->name[0]), "%s", fl_strtab_str(g->t, e->name));
		snprintf(g->cat[g->n], sizeof(g->cat[0]), "%s", fl_strtab_str(g->t, e->cat));
	}
	g->n++;
	return FL_OK;
}

static enum fl_status read_buf(const void *buf, size_t len, struct got *g, struct fl_trace_info *info,
			       size_t chunk)
{
	memset(g->ev, 0, sizeof(g->ev));
	g->n = 0;
	g->t = fl_strtab_new();
	struct fl_trace_stream_opts o = {.strings = g->t, .on_event = collect, .arg = g, .chunk = chunk};
	enum fl_status st = fl_trace_stream_mem("mem.json", buf, len, &o, info);
	return st;
}

static enum fl_status read_str(const char *s, struct got *g, struct fl_trace_info *info)
{
	return read_buf(s, strlen(s), g, info, 0);
}

static void got_free(struct got *g)
{
	fl_strtab_free(g->t);
	g->t = NULL;
}

static unsigned char *gzip_bytes(const void *p, size_t n, size_t *out_len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	size_t cap = deflateBound(&z, (uLong)n) + 64;
	unsigned char *o = malloc(cap);
	z.next_in = (Bytef *)(uintptr_t)p;
	z.avail_in = (uInt)n;
	z.next_out = o;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
	return o;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static const char *SAMPLE =
	"{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 2, \"world_size\": 4},\n"
	" \"traceEvents\": [\n"
	"  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 7, \"tid\": 0, \"args\": {\"name\": \"x\"}},\n"
	"  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 1700000000123.456,"
	" \"dur\": 12.5, \"args\": {\"stream\": 7, \"correlation\": 42, \"device\": 0, \"External id\": 9}},\n"
	"  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\\u00e9\\ud83d\\ude00\\n\", \"pid\": \"Spans\","
	" \"tid\": \"t 1\", \"ts\": 5, \"dur\": -3},\n"
	"  {\"ph\": \"X\", \"name\": \"no cat\", \"ts\": 1.0e2},\n"
	"  {\"ph\": \"f\", \"id\": 42, \"bp\": \"e\", \"ts\": 7, \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n"
	"  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"ts\": 9, \"dur\": 1,"
	" \"args\": {\"stream\": \"13\", \"bytes\": 4096, \"nested\": {\"a\": [1, {\"b\": null}], \"c\": true}}}\n"
	" ],\n"
	" \"traceName\": \"t\", \"distributedInfo\": {\"rank\": 3, \"world_size\": 8}\n}\n";

/* ------------------------------------------------------------- reader */

START_TEST(test_object_form)
{
	struct got g = {0};
	struct fl_trace_info in;
	ck_assert_int_eq(read_str(SAMPLE, &g, &in), FL_OK);
	ck_assert_uint_eq(g.n, 6);
	ck_assert_uint_eq(in.n_events, 6);
	ck_assert(!in.gzip && !in.array_form);
	/* HTA's rank: the first `"rank": N`; distributedInfo: the last one */
	ck_assert(in.has_hta_rank);
	ck_assert_int_eq(in.hta_rank, 2);
	ck_assert_int_eq(in.dist_rank, 3);
	ck_assert_int_eq(in.world_size, 8);
	ck_assert_int_eq(g.ev[0].ph, 'M');
	ck_assert(!(g.ev[0].has & FL_TEV_TS));
	/* the kernel */
	const struct fl_tev *k = &g.ev[1];
	ck_assert_str_eq(g.name[1], "gemm");
	ck_assert_str_eq(g.cat[1], "kernel");
	ck_assert(k->ts == 1700000000123.456);
	ck_assert(k->dur == 12.5);
	ck_assert(k->has & FL_TEV_TS_FLOAT);
	ck_assert_int_eq(k->stream, 7);
	ck_assert_int_eq(k->correlation, 42);
	ck_assert_int_eq(k->external_id, 9);
	ck_assert_int_eq(k->device, 0);
	ck_assert_int_eq(k->pid, 0);
	ck_assert_int_eq(k->tid, 7);
	/* escapes and string ids */
	ck_assert_str_eq(g.name[2], "a\xc3\xa9\xf0\x9f\x98\x80\n");
	ck_assert(g.ev[2].has & FL_TEV_PID_STR);
	ck_assert_str_eq(fl_strtab_str(g.t, (uint32_t)g.ev[2].pid), "Spans");
	ck_assert_str_eq(fl_strtab_str(g.t, (uint32_t)g.ev[2].tid), "t 1");
	ck_assert(g.ev[2].dur == -3);
	ck_assert(!(g.ev[2].has & FL_TEV_TS_FLOAT));
	ck_assert_int_eq(g.ev[2].stream, -1);
	ck_assert(!(g.ev[2].has & FL_TEV_STREAM));
	/* missing cat and dur, exponent */
	ck_assert(!(g.ev[3].has & FL_TEV_CAT) && !(g.ev[3].has & FL_TEV_DUR));
	ck_assert(g.ev[3].ts == 100.0 && (g.ev[3].has & FL_TEV_TS_FLOAT));
	ck_assert_int_eq(g.ev[4].ph, 'f');
	/* stream as a string, bytes, skipped nesting */
	ck_assert_int_eq(g.ev[5].stream, 13);
	ck_assert_int_eq(g.ev[5].bytes, 4096);
	ck_assert_int_eq(g.ev[5].correlation, -1);
	ck_assert_uint_eq(g.ev[5].index, 5);
	ck_assert_uint_eq(in.n_ts_float, 2);
	ck_assert_uint_eq(in.n_ts_missing, 1);
	got_free(&g);
}
END_TEST

START_TEST(test_array_form_and_gzip_magic)
{
	const char *doc = "[{\"ph\":\"X\",\"cat\":\"c\",\"name\":\"n\",\"ts\":1,\"dur\":2},\n{\"ph\":\"i\",\"ts\":3}]";
	struct got g = {0};
	struct fl_trace_info in;
	ck_assert_int_eq(read_str(doc, &g, &in), FL_OK);
	ck_assert(in.array_form);
	ck_assert_uint_eq(g.n, 2);
	ck_assert(!in.has_hta_rank);
	got_free(&g);
	/* gzip is known by its magic, whatever the name; members are read in turn */
	size_t zl1, zl2;
	unsigned char *z1 = gzip_bytes(doc, 20, &zl1), *z2 = gzip_bytes(doc + 20, strlen(doc) - 20, &zl2);
	unsigned char *cat = malloc(zl1 + zl2 + 8);
	memcpy(cat, z1, zl1);
	memcpy(cat + zl1, z2, zl2);
	memset(cat + zl1 + zl2, 0, 8); /* zero padding after the last member */
	ck_assert_int_eq(read_buf(cat, zl1 + zl2 + 8, &g, &in, 0), FL_OK);
	ck_assert(in.gzip);
	ck_assert_uint_eq(g.n, 2);
	ck_assert_str_eq(g.name[0], "n");
	got_free(&g);
	/* garbage after the gzip data */
	memcpy(cat + zl1 + zl2, "junk", 4);
	ck_assert_int_eq(read_buf(cat, zl1 + zl2 + 4, &g, &in, 0), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "trailing garbage"));
	got_free(&g);
	free(z1);
	free(z2);
	free(cat);
}
END_TEST

START_TEST(test_hta_rank_regex)
{
	static const struct {
		const char *doc;
		int has;
		long long rank;
	} cases[] = {
		{"{\"distributedInfo\": {\"rank\": 5}, \"traceEvents\": []}", 1, 5},
		{"{\"distributedInfo\": {\"rank\":5}, \"traceEvents\": []}", 0, 0},      /* no space */
		{"{\"distributedInfo\": {\"rank\":\n 5}, \"traceEvents\": []}", 0, 0},   /* another line */
		{"{\"distributedInfo\": {\"rank\" : 5}, \"traceEvents\": []}", 0, 0},    /* space before ':' */
		{"{\"distributedInfo\": {\"rank\":  \t7.5}, \"traceEvents\": []}", 1, 7}, /* \d+ of 7.5 */
		{"{\"traceEvents\": [{\"args\": {\"rank\": 9}}], \"distributedInfo\": {\"rank\": 1}}", 1, 9},
		{"{\"distributedInfo\": {\"rank\": -1}, \"x\": {\"rank\": 4}, \"traceEvents\": []}", 1, 4},
		{"{\"distributedInfo\": {\"rank\": \"3\"}, \"traceEvents\": []}", 0, 0},
		{"{\"a\\\"rank\": 6, \"traceEvents\": []}", 1, 6}, /* the text matches inside a key */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct got g = {0};
		struct fl_trace_info in;
		ck_assert_msg(read_str(cases[i].doc, &g, &in) == FL_OK, "case %zu: %s", i, fl_error_msg());
		ck_assert_msg(in.has_hta_rank == cases[i].has, "case %zu", i);
		if (cases[i].has)
			ck_assert_msg(in.hta_rank == cases[i].rank, "case %zu: %lld", i, in.hta_rank);
		got_free(&g);
	}
}
END_TEST

/* deviceProperties[0].interconnect's bandwidth (faultline's emulated link),
 * read at any chunk size; other shapes read as no link; a broken one fails */
START_TEST(test_device_props_link)
{
	static const struct {
		const char *doc;
		int ok, has;
		double gbps;
	} cases[] = {
		{"{\"deviceProperties\": [{\"id\": 0, \"interconnect\": {\"emulated\": true, \"bandwidth (Gbit/s)\": 2}}], "
		 "\"traceEvents\": []}", 1, 1, 2},
		{"{\"deviceProperties\": [{\"id\": 0, \"name\": \"x\", \"interconnect\": {\"bandwidth (Gbit/s)\": 100}}, "
		 "{\"id\": 1, \"interconnect\": {\"bandwidth (Gbit/s)\": 7}}], \"traceEvents\": []}", 1, 1, 100},
		{"{\"traceEvents\": [], \"deviceProperties\": [{\"interconnect\": {\"bandwidth (Gbit/s)\": 2.5e1}}]}", 1, 1, 25},
		{"{\"deviceProperties\": [{\"id\": 0, \"numSms\": 132}], \"traceEvents\": []}", 1, 0, 0},
		{"{\"deviceProperties\": [], \"traceEvents\": []}", 1, 0, 0},
		{"{\"deviceProperties\": {\"id\": 0}, \"traceEvents\": []}", 1, 0, 0},
		{"{\"deviceProperties\": [{\"interconnect\": {\"bandwidth (Gbit/s)\": \"fast\"}}], \"traceEvents\": []}", 1, 0, 0},
		{"{\"deviceProperties\": [{\"interconnect\": {\"bandwidth (Gbit/s)\": -3}}], \"traceEvents\": []}", 1, 0, 0},
		{"{\"deviceProperties\": [{\"interconnect\": {\"bandwidth (Gbit/s)\" 2}}], \"traceEvents\": []}", 0, 0, 0},
		{"{\"deviceProperties\": [{\"interconnect\": 5} 7], \"traceEvents\": []}", 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (size_t chunk = 1; chunk <= 64; chunk = chunk * 3 + 1) {
			struct got g = {0};
			struct fl_trace_info in;
			enum fl_status st = read_buf(cases[i].doc, strlen(cases[i].doc), &g, &in, chunk);
			ck_assert_msg((st == FL_OK) == cases[i].ok, "case %zu chunk %zu: %s", i, chunk, fl_error_msg());
			if (cases[i].ok) {
				ck_assert_msg(in.has_link_gbps == cases[i].has, "case %zu chunk %zu", i, chunk);
				if (cases[i].has)
					ck_assert_msg(in.link_gbps == cases[i].gbps, "case %zu: %g", i, in.link_gbps);
			}
			got_free(&g);
		}
}
END_TEST

START_TEST(test_strings)
{
	const char *doc = "[{\"name\": \"\\\"q\\\" \\\\ \\/ \\b\\f\\r\\t \\u0041\\u00DF\\u20AC\\uD834\\uDD1E\"},"
			  " {\"name\": \"lone \\ud800 x \\udc00\"},"
			  " {\"name\": \"bad \xff\xc3( \xed\xa0\x80 ok \xc3\xa9\"},"
			  " {\"name\": \"\"}, {\"n\\u0061me\": \"escaped key\"}]";
	struct got g = {0};
	struct fl_trace_info in;
	ck_assert_int_eq(read_str(doc, &g, &in), FL_OK);
	ck_assert_str_eq(g.name[0], "\"q\" \\ / \b\f\r\t A\xc3\x9f\xe2\x82\xac\xf0\x9d\x84\x9e");
	ck_assert_str_eq(g.name[1], "lone \xef\xbf\xbd x \xef\xbf\xbd");
	ck_assert_str_eq(g.name[2], "bad \xef\xbf\xbd\xef\xbf\xbd( \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd ok \xc3\xa9");
	ck_assert_str_eq(g.name[3], "");
	ck_assert(g.ev[3].has & FL_TEV_NAME);
	ck_assert_str_eq(g.name[4], "escaped key");
	got_free(&g);
}
END_TEST

START_TEST(test_numbers_and_stream)
{
	const char *doc = "[{\"ts\": 0.1, \"dur\": 1e-7, \"args\": {\"stream\": \" 7 \", \"correlation\": 3.9}},"
			  " {\"ts\": 123456789012345678901234567890, \"dur\": -0.0, \"args\": {\"stream\": \"x\"}},"
			  " {\"ts\": NaN, \"dur\": Infinity, \"args\": {\"stream\": true, \"correlation\": null}},"
			  " {\"ts\": -Infinity, \"dur\": 2.2250738585072014e-308, \"args\": {\"stream\": 7.9}},"
			  " {\"ts\": 9007199254740993, \"dur\": 0.30000000000000004, \"args\": {\"stream\": \"1_0\"}},"
			  " {\"ts\": null, \"dur\": \"5\"}]";
	struct got g = {0};
	struct fl_trace_info in;
	ck_assert_int_eq(read_str(doc, &g, &in), FL_OK);
	ck_assert(g.ev[0].ts == 0.1 && g.ev[0].dur == 1e-7);
	ck_assert_int_eq(g.ev[0].stream, 7);
	ck_assert_int_eq(g.ev[0].correlation, 3);
	ck_assert(g.ev[1].ts == strtod("123456789012345678901234567890", NULL));
	ck_assert(!(g.ev[1].has & FL_TEV_STREAM));
	ck_assert(isnan(g.ev[2].ts) && isinf(g.ev[2].dur) && (g.ev[2].has & FL_TEV_TS_FLOAT));
	ck_assert_int_eq(g.ev[2].stream, 1);
	ck_assert(!(g.ev[2].has & FL_TEV_CORRELATION));
	ck_assert(isinf(g.ev[3].ts) && g.ev[3].ts < 0);
	ck_assert(g.ev[3].dur == 2.2250738585072014e-308);
	ck_assert_int_eq(g.ev[3].stream, 7);
	ck_assert(g.ev[4].ts == 9007199254740992.0); /* rounded to even, as strtod */
	ck_assert(g.ev[4].dur == 0.30000000000000004);
	ck_assert_int_eq(g.ev[4].stream, 10);
	ck_assert(!(g.ev[5].has & FL_TEV_TS) && !(g.ev[5].has & FL_TEV_DUR));
	ck_assert_uint_eq(in.n_ts_missing, 1);
	got_free(&g);
}
END_TEST

START_TEST(test_errors)
{
	static const struct {
		const char *doc, *want;
	} cases[] = {
		{"", "empty file"},
		{"   ", "unexpected end"},
		{"{\"traceEvents\": [{\"ph\": \"X\"} {\"ph\": \"X\"}]}", "byte 29"},
		{"{\"traceEvents\": [1]}", "expected an event"},
		{"{\"traceEvents\": []} x", "extra data"},
		{"{\"traceEvents\": [], \"traceEvents\": []}", "single traceEvents"},
		{"{\"traceEvents\": [{\"ts\": 01}]}", "expected ','"},
		{"{\"traceEvents\": [{\"ts\": 1.}]}", "digit after '.'"},
		{"{\"traceEvents\": [{\"name\": \"a\nb\"}]}", "control characters"},
		{"{\"traceEvents\": [{\"name\": \"\\x\"}]}", "an escape"},
		{"{\"traceEvents\": [{\"name\": \"\\u12G4\"}]}", "4 hex digits"},
		{"{\"traceEvents\": [{\"ph\": tru}]}", "expected a value"},
		{"{\"traceEvents\": {}}", "traceEvents must be an array"},
		{"{\"traceEvents\": [{\"ph\": \"X\",}]}", "a key"},
		{"nul", "'{' or '['"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct got g = {0};
		struct fl_trace_info in;
		enum fl_status st = read_str(cases[i].doc, &g, &in);
		ck_assert_msg(st == FL_EINPUT, "case %zu: status %d", i, st);
		ck_assert_msg(strstr(fl_error_msg(), cases[i].want), "case %zu: '%s' lacks '%s'", i, fl_error_msg(),
			      cases[i].want);
		got_free(&g);
	}
	/* nesting deeper than Python's json accepts: an error, not a crash */
	size_t depth = 100000;
	char *deep = malloc(2 * depth + 64);
	strcpy(deep, "{\"x\": ");
	size_t n = strlen(deep);
	memset(deep + n, '[', depth);
	memset(deep + n + depth, ']', depth);
	strcpy(deep + n + 2 * depth, ", \"traceEvents\": []}");
	struct got g = {0};
	ck_assert_int_eq(read_str(deep, &g, NULL), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "nested"));
	got_free(&g);
	free(deep);
	/* a callback's error stops the read and comes back as is */
	g.stop_at = 2;
	ck_assert_int_eq(read_str(SAMPLE, &g, NULL), FL_ECHECK);
	ck_assert_str_eq(fl_error_msg(), "stop at 2");
	got_free(&g);
	/* files */
	struct fl_strtab *t = fl_strtab_new();
	struct fl_trace_stream_opts o = {.strings = t};
	ck_assert_int_eq(fl_trace_stream_file("/nonexistent/x.json", &o, NULL), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "cannot open"));
	fl_strtab_free(t);
}
END_TEST

/* Every proper prefix is truncated: FL_EINPUT naming a byte offset within it. */
START_TEST(test_fuzz_truncation)
{
	size_t len = strlen(SAMPLE);
	while (len && SAMPLE[len - 1] == '\n')
		len--; /* whitespace after the document may go */
	for (size_t cut = 0; cut < len; cut++) {
		struct got g = {0};
		enum fl_status st = read_buf(SAMPLE, cut, &g, NULL, 0);
		ck_assert_msg(st == FL_EINPUT, "prefix %zu: status %d", cut, st);
		const char *m = strstr(fl_error_msg(), "byte ");
		ck_assert_msg(m || cut == 0, "prefix %zu: %s", cut, fl_error_msg());
		if (m)
			ck_assert_msg(strtoull(m + 5, NULL, 10) <= cut, "prefix %zu: %s", cut, fl_error_msg());
		got_free(&g);
	}
	size_t zl;
	unsigned char *z = gzip_bytes(SAMPLE, strlen(SAMPLE), &zl);
	for (size_t cut = 2; cut < zl; cut++) {
		struct got g = {0};
		enum fl_status st = read_buf(z, cut, &g, NULL, 0);
		ck_assert_msg(st == FL_EINPUT, "gzip prefix %zu: status %d", cut, st);
		ck_assert_msg(strstr(fl_error_msg(), "decompressed") || strstr(fl_error_msg(), "gzip"),
			      "gzip prefix %zu: %s", cut, fl_error_msg());
		got_free(&g);
	}
	free(z);
}
END_TEST

/* Random edits: a clean result or a clean FL_EINPUT, never a crash or a hang
 * (ASan and UBSan builds check the memory side). */
START_TEST(test_fuzz_edits)
{
	size_t len = strlen(SAMPLE);
	char *buf = malloc(len + 16);
	static const char alphabet[] = "{}[]\",:\\u0123456789.eE+-ntfrNaIy \n\t\x80\xff";
	rng_state = 12345;
	for (int it = 0; it < 20000; it++) {
		memcpy(buf, SAMPLE, len);
		size_t n = len;
		int edits = 1 + (int)(rnd() % 3);
		for (int e = 0; e < edits; e++) {
			size_t at = rnd() % n;
			char c = alphabet[rnd() % (sizeof(alphabet) - 1)];
			switch (rnd() % 3) {
			case 0: buf[at] = c; break;
			case 1: memmove(buf + at, buf + at + 1, n - at - 1); n--; break;
			default: memmove(buf + at + 1, buf + at, n - at); buf[at] = c; n++; break;
			}
		}
		struct got g = {0};
		enum fl_status st = read_buf(buf, n, &g, NULL, it % 7 ? 0 : 1 + rnd() % 32);
		ck_assert_msg(st == FL_OK || st == FL_EINPUT, "edit %d: status %d", it, st);
		got_free(&g);
	}
	free(buf);
	/* gzip: flipped bits in the compressed stream */
	size_t zl;
	unsigned char *z = gzip_bytes(SAMPLE, len, &zl);
	unsigned char *c = malloc(zl);
	for (int it = 0; it < 3000; it++) {
		memcpy(c, z, zl);
		c[2 + rnd() % (zl - 2)] ^= (unsigned char)(1u << (rnd() % 8));
		struct got g = {0};
		enum fl_status st = read_buf(c, zl, &g, NULL, 0);
		ck_assert_msg(st == FL_OK || st == FL_EINPUT, "gzip flip %d: status %d", it, st);
		got_free(&g);
	}
	free(c);
	free(z);
}
END_TEST

/* Any chunk size reads the same events (units cut anywhere are re-read). */
START_TEST(test_chunk_sizes)
{
	struct got ref = {0};
	ck_assert_int_eq(read_str(SAMPLE, &ref, NULL), FL_OK);
	for (size_t chunk = 1; chunk <= 80; chunk++) {
		struct got g = {0};
		struct fl_trace_info in;
		ck_assert_int_eq(read_buf(SAMPLE, strlen(SAMPLE), &g, &in, chunk), FL_OK);
		ck_assert_uint_eq(g.n, ref.n);
		ck_assert_int_eq(in.hta_rank, 2);
		for (size_t i = 0; i < g.n; i++) {
			ck_assert_str_eq(g.name[i], ref.name[i]);
			ck_assert(g.ev[i].ts == ref.ev[i].ts || (isnan(g.ev[i].ts) && isnan(ref.ev[i].ts)));
			ck_assert_int_eq(g.ev[i].stream, ref.ev[i].stream);
			ck_assert_int_eq(g.ev[i].has, ref.ev[i].has);
		}
		got_free(&g);
	}
	got_free(&ref);
}
END_TEST

/* Random documents read as cJSON (a DOM parser using strtod) reads them. */
static void rnd_string(char *raw, size_t cap, char *want)
{
	static const char *const pieces[][2] = {
		{"a", "a"}, {"Z", "Z"}, {" ", " "}, {"\\n", "\n"}, {"\\\"", "\""}, {"\\\\", "\\"}, {"\\/", "/"},
		{"\\u00e9", "\xc3\xa9"}, {"\\ud83d\\ude00", "\xf0\x9f\x98\x80"}, {"\xe2\x82\xac", "\xe2\x82\xac"},
		{"::", "::"}, {"<T>", "<T>"},
	};
	size_t n = rnd() % 12, r = 0, w = 0;
	for (size_t i = 0; i < n; i++) {
		const char *const *p = pieces[rnd() % (sizeof(pieces) / sizeof(pieces[0]))];
		size_t a = strlen(p[0]), b = strlen(p[1]);
		if (r + a + 1 >= cap)
			break;
		memcpy(raw + r, p[0], a);
		memcpy(want + w, p[1], b);
		r += a;
		w += b;
	}
	raw[r] = want[w] = '\0';
}

static void rnd_number(char *out, size_t cap)
{
	switch (rnd() % 5) {
	case 0: snprintf(out, cap, "%llu", (unsigned long long)(rnd() % 100000000000000ull)); break;
	case 1: snprintf(out, cap, "%llu.%03llu", (unsigned long long)(rnd() % 10000000000000ull),
			 (unsigned long long)(rnd() % 1000)); break;
	case 2: snprintf(out, cap, "-%llu.%llue%d", (unsigned long long)(rnd() % 1000),
			 (unsigned long long)(rnd() % 1000000000000ull), (int)(rnd() % 600) - 300); break;
	case 3: snprintf(out, cap, "%.17g", (double)(rnd() >> 11) / 9007199254740992.0 * 1e6); break;
	default: snprintf(out, cap, "%llu%llu", (unsigned long long)rnd(), (unsigned long long)(rnd() % 1000)); break;
	}
}

START_TEST(test_differential_cjson)
{
	rng_state = 777;
	for (int it = 0; it < 300; it++) {
		char doc[8192], raw[256], want[256], num[64], num2[64];
		size_t n = 0;
		int nev = 1 + (int)(rnd() % 5);
		char wants[8][256];
		n += (size_t)snprintf(doc + n, sizeof(doc) - n, "{\"traceEvents\": [");
		for (int e = 0; e < nev; e++) {
			rnd_string(raw, sizeof(raw), want);
			strcpy(wants[e], want);
			rnd_number(num, sizeof(num));
			rnd_number(num2, sizeof(num2));
			n += (size_t)snprintf(doc + n, sizeof(doc) - n,
					      "%s{\"name\": \"%s\", \"extra\": [%s, {\"k\": \"%s\"}], \"ts\": %s, \"args\": {\"correlation\": %s}}",
					      e ? ",\n " : "", raw, num2, raw, num, num2);
		}
		snprintf(doc + n, sizeof(doc) - n, "]}");
		struct got g = {0};
		ck_assert_msg(read_str(doc, &g, NULL) == FL_OK, "doc %d: %s\n%s", it, fl_error_msg(), doc);
		cJSON *j = cJSON_Parse(doc);
		ck_assert_ptr_nonnull(j);
		cJSON *evs = cJSON_GetObjectItem(j, "traceEvents");
		ck_assert_uint_eq(g.n, (size_t)cJSON_GetArraySize(evs));
		for (int e = 0; e < nev; e++) {
			cJSON *ev = cJSON_GetArrayItem(evs, e);
			ck_assert_str_eq(g.name[e], wants[e]);
			ck_assert_str_eq(g.name[e], cJSON_GetObjectItem(ev, "name")->valuestring);
			double ts = cJSON_GetObjectItem(ev, "ts")->valuedouble;
			ck_assert_msg(g.ev[e].ts == ts, "doc %d ev %d: %.17g vs %.17g", it, e, g.ev[e].ts, ts);
		}
		cJSON_Delete(j);
		got_free(&g);
	}
}
END_TEST

START_TEST(test_file_gzip)
{
	char path[] = "/tmp/check_trace_stream.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	/* a larger trace than the buffers: many chunks, through the inflating thread */
	size_t cap = 4u << 20, n = 0;
	char *doc = malloc(cap);
	n += (size_t)snprintf(doc + n, cap - n, "{\"traceEvents\": [");
	int nev = 0;
	while (n < cap - 300) {
		n += (size_t)snprintf(doc + n, cap - n,
				      "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"ts\": %d.5, \"dur\": 1.25, \"args\": {\"stream\": 7, \"correlation\": %d}}",
				      nev ? ",\n" : "", nev % 37, nev, nev);
		nev++;
	}
	n += (size_t)snprintf(doc + n, cap - n, "], \"distributedInfo\": {\"rank\": 1}}");
	size_t zl;
	unsigned char *z = gzip_bytes(doc, n, &zl);
	ck_assert_int_eq(write(fd, z, zl), (ssize_t)zl);
	close(fd);
	for (int thread = 0; thread < 2; thread++) {
		struct fl_strtab *t = fl_strtab_new();
		struct got g = {0};
		g.t = t;
		struct fl_trace_stream_opts o = {.strings = t, .on_event = collect, .arg = &g, .no_thread = !thread};
		struct fl_trace_info in;
		ck_assert_int_eq(fl_trace_stream_file(path, &o, &in), FL_OK);
		ck_assert_uint_eq(g.n, (size_t)nev);
		ck_assert(in.gzip);
		ck_assert_uint_eq(in.bytes_json, n);
		ck_assert_uint_eq(in.bytes_in, zl);
		ck_assert_int_eq(in.hta_rank, 1);
		fl_strtab_free(t);
	}
	/* truncated on disk */
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, z, zl / 2), (ssize_t)(zl / 2));
	close(fd);
	struct fl_strtab *t = fl_strtab_new();
	struct fl_trace_stream_opts o = {.strings = t};
	ck_assert_int_eq(fl_trace_stream_file(path, &o, NULL), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "truncated gzip"));
	fl_strtab_free(t);
	unlink(path);
	free(z);
	free(doc);
}
END_TEST

/* --------------------------------------------------------------- analyses */

static cJSON *metrics_of(const char *doc)
{
	char path[] = "/tmp/check_dm.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
	close(fd);
	const char *paths[1] = {path};
	cJSON *j = NULL;
	enum fl_status st = fl_device_metrics(paths, 1, NULL, &j);
	unlink(path);
	ck_assert_msg(st == FL_OK, "%s", fl_error_msg());
	return j;
}

static double at(const cJSON *j, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	const cJSON *x = j;
	for (char *s = strtok(buf, "."); s && x; s = strtok(NULL, "."))
		x = cJSON_GetObjectItemCaseSensitive(x, s);
	ck_assert_msg(x && cJSON_IsNumber(x), "no number at %s", path);
	return x->valuedouble;
}

#define K(name, ts, dur, stream, corr) \
	"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" name "\",\"pid\":0,\"tid\":" #stream ",\"ts\":" ts \
	",\"dur\":" dur ",\"args\":{\"stream\":" #stream ",\"correlation\":" #corr "}}"
#define L(ts, dur, corr) \
	"{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":" ts \
	",\"dur\":" dur ",\"args\":{\"correlation\":" #corr "}}"

START_TEST(test_analyses_small)
{
	/* one step; compute on stream 7: [100,140) [150,200) [260,300); comm on
	 * stream 9: [180,280). Launches: the third kernel's launch starts at 250,
	 * after the second kernel ended (host wait); the second's at 100. */
	const char *doc = "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": ["
		"{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":90,\"dur\":300},"
		L("95", "2", 1) "," L("100", "1", 2) "," L("250", "5", 3) "," L("120", "3", 4) ","
		K("gemm", "100", "40", 7, 1) "," K("gemm", "150", "50", 7, 2) "," K("relu", "260", "40", 7, 3) ","
		K("ncclDevKernel_AllReduce", "180", "100", 9, 4) "]}";
	cJSON *j = metrics_of(doc);
	/* span 100..300 = 200; union: [100,140) [150,300) = 190 */
	ck_assert(at(j, "temporal.span_us") == 200);
	ck_assert(at(j, "temporal.idle_us") == 10);
	ck_assert(at(j, "temporal.compute_us") == 130);
	ck_assert(at(j, "temporal.non_compute_us") == 60);
	ck_assert(fabs(at(j, "temporal.idle_pct") - 5.0) < 1e-9);
	/* comm [180,280) overlaps compute [180,200) and [260,280): 40 of 100 */
	ck_assert(fabs(at(j, "overlap.comm_comp_pct") - 40.0) < 1e-9);
	/* stream 7: gap 10 before the second (launched before: kernel wait),
	 * gap 60 before the third (launched at 250 > 200: host wait) */
	ck_assert(at(j, "idle.7.kernel_wait_us") == 10);
	ck_assert(at(j, "idle.7.host_wait_us") == 60);
	ck_assert(at(j, "idle.7.other_us") == 0);
	ck_assert(fabs(at(j, "idle.7.host_wait_pct") - 600.0 / 7) < 1e-9);
	/* launch delays: 100-97=3, 150-101=49, 260-255=5, 180-123=57 */
	ck_assert(at(j, "launch.pairs") == 4);
	ck_assert(at(j, "launch.delay_us.max") == 57);
	ck_assert(at(j, "launch.delay_us.sum") == 114);
	ck_assert(at(j, "launch.short_kernels") == 0);
	ck_assert(at(j, "kernels.types.COMPUTATION.us") == 90);
	ck_assert(at(j, "kernels.types.COMMUNICATION.us") == 60);
	/* queue on stream 7: +1 +1 -1 -1 +1 -1 at 95 100 100 150 250 260 */
	ck_assert(at(j, "queue.7.count") == 6);
	ck_assert(at(j, "queue.7.max") == 2);
	const cJSON *s = cJSON_GetObjectItem(j, "straggler");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(s, "rank")));
	cJSON_Delete(j);
}
END_TEST

START_TEST(test_analyses_last_step_and_rounding)
{
	/* two steps: the second (and the kernel launched in it) is dropped; ts
	 * with fractions round up, ends round down: [10.2, 20.9) -> [11, 20) */
	const char *doc = "{\"traceEvents\": ["
		"{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":50},"
		"{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#4\",\"pid\":1,\"tid\":1,\"ts\":50,\"dur\":50},"
		L("5", "1", 1) "," L("60", "1", 2) ","
		K("k1", "10.2", "10.7", 7, 1) "," K("k2", "70", "10", 7, 2) "]}";
	cJSON *j = metrics_of(doc);
	ck_assert(at(j, "temporal.span_us") == 9);
	ck_assert(at(j, "kernels.types.COMPUTATION.us") == 9);
	const cJSON *an = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "analyzed");
	ck_assert_int_eq(cJSON_GetArraySize(an), 1);
	ck_assert_int_eq(cJSON_GetArrayItem(an, 0)->valueint, 3);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "dropped_last")));
	cJSON_Delete(j);
}
END_TEST

START_TEST(test_two_ranks_and_diff)
{
	char p0[] = "/tmp/check_dm0.XXXXXX", p1[] = "/tmp/check_dm1.XXXXXX";
	/* rank 1 starts each all-reduce 40 µs later than rank 0 */
	for (int r = 0; r < 2; r++) {
		char doc[4096];
		int late = r ? 40 : 0;
		snprintf(doc, sizeof(doc),
			 "{\"distributedInfo\": {\"rank\": %d}, \"traceEvents\": ["
			 "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1000},"
			 "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"pid\":1,\"tid\":1,\"ts\":1000,\"dur\":1000},"
			 "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"pid\":1,\"tid\":1,\"ts\":2000,\"dur\":1000},"
			 "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\",\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":3},"
			 L("100", "1", 1) "," L("1100", "1", 2) "," L("2100", "1", 3) ","
			 "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_AllReduce\",\"pid\":0,\"tid\":9,\"ts\":%d,\"dur\":%d,\"args\":{\"stream\":9,\"correlation\":1}},"
			 "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_AllReduce\",\"pid\":0,\"tid\":9,\"ts\":%d,\"dur\":%d,\"args\":{\"stream\":9,\"correlation\":2}},"
			 "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_AllReduce\",\"pid\":0,\"tid\":9,\"ts\":%d,\"dur\":%d,\"args\":{\"stream\":9,\"correlation\":3}}"
			 "]}",
			 r, 10 + r, 200 + late, 300 - late, 1200 + late, 300 - late, 2200 + late, 300 - late);
		int fd = mkstemp(r ? p1 : p0);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
		close(fd);
	}
	const char *paths[2] = {p1, p0};
	struct fl_dm_opts o = FL_DM_OPTS_INIT;
	struct fl_dm_job *job;
	ck_assert_int_eq(fl_dm_load(paths, 2, &o, &job), FL_OK);
	cJSON *j = fl_device_metrics_json(job);
	ck_assert(at(j, "straggler.rank") == 1);
	ck_assert(at(j, "straggler.spread_us.mean") == 40);
	ck_assert(at(j, "straggler.late_us.1") == 40);
	ck_assert(at(j, "ranks.1.temporal.span_us") == 1260); /* [240, 1500): two steps analysed */
	cJSON_Delete(j);
	cJSON *d;
	ck_assert_int_eq(fl_trace_diff_json(job, job, NULL, &d), FL_OK);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d, "unchanged")), 4);
	ck_assert(at(d, "control.rank") == 0 && at(d, "control.iteration") == 1);
	cJSON_Delete(d);
	fl_dm_free(job);
	/* the same rank twice is an error */
	const char *same[2] = {p0, p0};
	ck_assert_int_eq(fl_dm_load(same, 2, &o, &job), FL_EINPUT);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "both rank 0"));
	unlink(p0);
	unlink(p1);
}
END_TEST

START_TEST(test_analyses_no_kernels)
{
	/* a CPU-only trace: HTA fails; faultline reports nulls and empty sets */
	const char *doc = "{\"traceEvents\": ["
		"{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":10},"
		"{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":5}]}";
	cJSON *j = metrics_of(doc);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "temporal")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "overlap"), "comm_comp_pct")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "idle")), 0);
	ck_assert(at(j, "launch.pairs") == 0);
	cJSON_Delete(j);
}
END_TEST

/* The table of analyses (device_internal.h): unique keys, the hooks each
 * kind needs, and the JSON follows it: the job's keys and each rank's come in
 * table order. */
START_TEST(test_analysis_table)
{
	size_t n = 0;
	for (; dm_analyses[n]; n++) {
		const struct dm_analysis *a = dm_analyses[n];
		ck_assert_msg(a->key && *a->key, "analysis %zu has no key", n);
		for (size_t k = 0; k < n; k++)
			ck_assert_msg(strcmp(dm_analyses[k]->key, a->key), "two analyses are '%s'", a->key);
		ck_assert_msg(a->rank && a->pool && a->json && a->size, "'%s': a per-rank hook is missing", a->key);
		ck_assert_msg(!a->save == !a->load, "'%s': save() without load() or the reverse", a->key);
	}
	ck_assert_uint_ge(n, 7);
	const char *doc = "{\"traceEvents\": ["
		"{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":100},"
		L("5", "1", 1) "," K("gemm", "10", "10", 7, 1) "]}";
	cJSON *j = metrics_of(doc);
	const cJSON *x = cJSON_GetObjectItem(j, "steps")->next;
	const cJSON *r0 = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "ranks"), "0");
	const cJSON *y = cJSON_GetObjectItem(r0, "events_analyzed")->next;
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(x && !strcmp(x->string, dm_analyses[i]->key), "job key %zu is not '%s'", i,
			      dm_analyses[i]->key);
		x = x->next;
		if (dm_analyses[i]->top_only)
			continue;
		ck_assert_msg(y && !strcmp(y->string, dm_analyses[i]->key), "rank key is not '%s'", dm_analyses[i]->key);
		y = y->next;
	}
	ck_assert_str_eq(x->string, "ranks");
	ck_assert_ptr_null(y);
	cJSON_Delete(j);
}
END_TEST

/* One correlation id on 1,100 launches and 1,100 kernels: launch and queue
 * say why instead of making 1.2M rows; the other analyses still run. */
START_TEST(test_analyses_refused)
{
	size_t cap = 1 << 18, len = 0;
	char *doc = malloc(cap);
	ck_assert_ptr_nonnull(doc);
	len += (size_t)snprintf(doc, cap, "{\"traceEvents\": [");
	for (int i = 0; i < 1100; i++) {
		ck_assert_uint_lt(len + 400, cap);
		len += (size_t)snprintf(doc + len, cap - len, "%s" L("0", "3", 5) "," K("gemm", "0", "9", 7, 5), i ? "," : "");
	}
	snprintf(doc + len, cap - len, "]}");
	cJSON *j = metrics_of(doc);
	free(doc);
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "launch"), "why"));
	ck_assert_ptr_nonnull(why);
	ck_assert_ptr_nonnull(strstr(why, "repeat too often"));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "launch"), "pairs")));
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "queue"), "why"));
	ck_assert(at(j, "ranks.0.temporal.span_us") == 9);
	cJSON_Delete(j);
}
END_TEST

/* Random traces with colliding correlations, streams, negative and
 * fractional durations, odd step names: the analyses finish cleanly (ASan and
 * UBSan builds check the memory side) and diffs of a job with itself show no
 * change. */
START_TEST(test_fuzz_analyses)
{
	static const char *const names[] = {"gemm", "ncclKernel_AllReduce", "ncclDevKernel_Bcast", "Memcpy HtoD",
		"Memset (Device)", "cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize", "Event Sync",
		"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep #3", "ProfilerStep", "aten::add", "x\\nSync"};
	static const char *const cats[] = {"kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "gpu_memset",
		"user_annotation", "gpu_user_annotation", "cuda_sync", "Trace", "weird"};
	rng_state = 4242;
	size_t cap = 1 << 16;
	char *doc = malloc(cap);
	for (int it = 0; it < 150; it++) {
		char paths[3][64];
		size_t nranks = 1 + rnd() % 3;
		for (size_t rk = 0; rk < nranks; rk++) {
			size_t n = (size_t)snprintf(doc, cap, "{\"distributedInfo\": {\"rank\": %zu}, \"traceEvents\": [", rk);
			int nev = (int)(rnd() % 120);
			for (int e = 0; e < nev && n < cap - 400; e++) {
				n += (size_t)snprintf(doc + n, cap - n,
					"%s{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1,"
					" \"ts\": %d.%d, \"dur\": %s%d.%d, \"args\": {\"stream\": %d, \"correlation\": %d}}",
					e ? "," : "", cats[rnd() % 10], names[rnd() % 15], (int)(rnd() % 500), (int)(rnd() % 1000),
					rnd() % 10 ? "" : "-", (int)(rnd() % 60), (int)(rnd() % 10), (int)(rnd() % 5) - 1,
					(int)(rnd() % 30) - 1);
			}
			n += (size_t)snprintf(doc + n, cap - n, "]}");
			snprintf(paths[rk], sizeof(paths[rk]), "/tmp/check_dmf%zu.XXXXXX", rk);
			int fd = mkstemp(paths[rk]);
			ck_assert_int_ge(fd, 0);
			ck_assert_int_eq(write(fd, doc, n), (ssize_t)n);
			close(fd);
		}
		const char *pp[3] = {paths[0], paths[1], paths[2]};
		struct fl_dm_opts o = FL_DM_OPTS_INIT;
		o.keep_host = 1;
		o.include_last_step = (int)(rnd() % 2);
		o.straggler_candidates = 1 + (int)(rnd() % 3);
		struct fl_dm_job *job;
		ck_assert_msg(fl_dm_load(pp, nranks, &o, &job) == FL_OK, "iteration %d: %s", it, fl_error_msg());
		cJSON *j = fl_device_metrics_json(job);
		ck_assert_ptr_nonnull(j);
		char *txt = cJSON_PrintUnformatted(j);
		ck_assert_ptr_nonnull(txt);
		free(txt);
		cJSON_Delete(j);
		struct fl_diff_opts d = FL_DIFF_OPTS_INIT;
		d.control_iter = d.test_iter = rnd() % 2 ? FL_DIFF_ALL : FL_DIFF_FIRST;
		cJSON *df = NULL;
		enum fl_status st = fl_trace_diff_json(job, job, &d, &df);
		ck_assert(st == FL_OK || st == FL_EINPUT);
		if (df)
			ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(df, "added")), 0);
		cJSON_Delete(df);
		fl_dm_free(job);
		for (size_t rk = 0; rk < nranks; rk++)
			unlink(paths[rk]);
	}
	free(doc);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trace_stream");
	TCase *tc = tcase_create("reader");
	tcase_add_test(tc, test_object_form);
	tcase_add_test(tc, test_array_form_and_gzip_magic);
	tcase_add_test(tc, test_hta_rank_regex);
	tcase_add_test(tc, test_device_props_link);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_numbers_and_stream);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_chunk_sizes);
	tcase_add_test(tc, test_file_gzip);
	suite_add_tcase(s, tc);
	TCase *fz = tcase_create("fuzz");
	tcase_set_timeout(fz, 300);
	tcase_add_test(fz, test_fuzz_truncation);
	tcase_add_test(fz, test_fuzz_edits);
	tcase_add_test(fz, test_differential_cjson);
	suite_add_tcase(s, fz);
	TCase *an = tcase_create("analyses");
	tcase_add_test(an, test_analyses_small);
	tcase_add_test(an, test_analyses_last_step_and_rounding);
	tcase_add_test(an, test_two_ranks_and_diff);
	tcase_add_test(an, test_analyses_no_kernels);
	tcase_add_test(an, test_analysis_table);
	tcase_add_test(an, test_analyses_refused);
	tcase_add_test(fz, test_fuzz_analyses);
	suite_add_tcase(s, an);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
