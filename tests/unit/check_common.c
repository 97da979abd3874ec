/* check_common.c — strbuf JSON escaping, SHA-256, whole-or-absent files, JSON helpers. */
#define _GNU_SOURCE /* nftw */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonutil.h"
#include "common/outfile.h"
#include "common/sha256.h"
#include "common/status.h"
#include "common/strbuf.h"
#include "tests/unit/scratch.h"

#define assert_msg_has(needle)                                                                  \
	ck_assert_msg(strstr(fl_error_msg(), (needle)) != NULL, "error message '%s' lacks '%s'", \
		      fl_error_msg(), (needle))

/* ---- scratch directories ----
 * A base directory per test case (an unchecked fixture, so it is removed even
 * when a forked test fails) and a fresh directory inside it per test. */

static void base_setup(void) { scratch_base_setup("common"); }

static void tmp_teardown(void) { rm_rf(tmpdir); }

/* ---- strbuf ---- */

static void assert_escapes(const char *in, size_t n, const char *want)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_json_strn(&sb, in, n);
	ck_assert_str_eq(sb.buf, want);
	ck_assert_uint_eq(sb.len, strlen(want));
	strbuf_release(&sb);
}

START_TEST(escape_quotes_and_backslash)
{
	assert_escapes("plain", 5, "\"plain\"");
	assert_escapes("", 0, "\"\"");
	assert_escapes("a\"b", 3, "\"a\\\"b\"");
	assert_escapes("back\\slash", 10, "\"back\\\\slash\"");
	assert_escapes("\"\\\"", 3, "\"\\\"\\\\\\\"\"");
}
END_TEST

START_TEST(escape_control_chars)
{
	assert_escapes("\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\"");
	assert_escapes("\x01", 1, "\"\\u0001\"");
	assert_escapes("a\x1f" "b", 3, "\"a\\u001fb\"");
	assert_escapes("\x7f", 1, "\"\x7f\""); /* DEL is not a JSON control character */
	assert_escapes("a\0b", 3, "\"a\\u0000b\"");
}
END_TEST

START_TEST(escape_invalid_utf8)
{
	assert_escapes("\xff", 1, "\"\\ufffd\"");
	assert_escapes("x\xc3", 2, "\"x\\ufffd\"");             /* truncated 2-byte sequence */
	assert_escapes("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"");     /* overlong '/' */
	assert_escapes("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""); /* UTF-16 surrogate */
	assert_escapes("\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* above U+10FFFF */
	assert_escapes("\xe2\x82", 2, "\"\\ufffd\\ufffd\"");     /* cut-off euro sign */
}
END_TEST

START_TEST(escape_keeps_valid_multibyte)
{
	const char *s = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf";
	struct strbuf sb = STRBUF_INIT;
	strbuf_add_json_str(&sb, s);
	ck_assert_uint_eq(sb.len, strlen(s) + 2);
	ck_assert_int_eq(memcmp(sb.buf + 1, s, strlen(s)), 0);
	strbuf_release(&sb);
}
END_TEST

START_TEST(escape_one_megabyte)
{
	/* every kind of character, repeated past 1 MB, all of it valid UTF-8 */
	static const char *const pieces[] = {"abc", "\"", "\\", "\n", "\x01", "\t", "\xc3\xa9",
					     "\xe2\x82\xac", "\xf0\x9f\x98\x80", " z", "\x1f"};
	struct strbuf src = STRBUF_INIT;
	for (size_t i = 0; src.len < (1u << 20); i++)
		strbuf_adds(&src, pieces[i % (sizeof(pieces) / sizeof(pieces[0]))]);

	struct strbuf out = STRBUF_INIT;
	strbuf_add_json_strn(&out, src.buf, src.len);
	ck_assert_uint_gt(out.len, src.len);
	size_t raw_controls = 0; /* counted, then asserted once: each assertion costs a pipe write */
	for (size_t i = 0; i < out.len; i++)
		raw_controls += (unsigned char)out.buf[i] < 0x20;
	ck_assert_uint_eq(raw_controls, 0);

	cJSON *v = cJSON_ParseWithLength(out.buf, out.len);
	ck_assert_ptr_nonnull(v);
	ck_assert(cJSON_IsString(v));
	ck_assert_uint_eq(strlen(v->valuestring), src.len);
	ck_assert_int_eq(memcmp(v->valuestring, src.buf, src.len), 0);
	cJSON_Delete(v);
	strbuf_release(&out);
	strbuf_release(&src);
}
END_TEST

START_TEST(strbuf_addf_and_reset)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%d-%s", 42, "x");
	ck_assert_str_eq(sb.buf, "42-x");
	char big[5000];
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	strbuf_addf(&sb, "%s", big);
	ck_assert_uint_eq(sb.len, 4 + sizeof(big) - 1);
	strbuf_reset(&sb);
	ck_assert_uint_eq(sb.len, 0);
	ck_assert_str_eq(sb.buf, "");
	strbuf_release(&sb);
	ck_assert_ptr_null(sb.buf);
}
END_TEST

/* ---- sha256 ---- */

/* an array grown one element at a time keeps every element; it is
 * reallocated only at powers of two */
START_TEST(grow_one_keeps_elements)
{
	size_t *a = NULL;
	int moves = 0;
	for (size_t n = 0; n < 5000; n++) {
		size_t *b = fl_grow_one(a, n, sizeof(*a));
		moves += n == 0 || (n & (n - 1)) == 0;
		a = b;
		a[n] = n * 7;
	}
	for (size_t n = 0; n < 5000; n++)
		ck_assert_uint_eq(a[n], n * 7);
	ck_assert_int_eq(moves, 14); /* 0, 1, 2, 4, ..., 4096 */
	free(a);
}
END_TEST

START_TEST(sha256_vectors)
{
	char hex[65];
	fl_sha256_hex("", 0, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	fl_sha256_hex("abc", 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	fl_sha256_hex(two_blocks, strlen(two_blocks), hex);
	ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

/* RFC 4231 test cases 1, 2 and 6 (a key longer than the block is hashed first) */
START_TEST(hmac_sha256_rfc4231)
{
	static const struct {
		unsigned char key_byte;
		size_t key_len;
		const char *key, *msg, *want;
	} v[] = {
		{0x0b, 20, NULL, "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
		{0, 4, "Jefe", "what do ya want for nothing?",
		 "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{0xaa, 131, NULL, "Test Using Larger Than Block-Size Key - Hash Key First",
		 "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unsigned char key[131], d[32];
		if (v[i].key)
			memcpy(key, v[i].key, v[i].key_len);
		else
			memset(key, v[i].key_byte, v[i].key_len);
		fl_hmac_sha256(key, v[i].key_len, v[i].msg, strlen(v[i].msg), d);
		char hex[65];
		for (int k = 0; k < 32; k++)
			snprintf(hex + 2 * k, 3, "%02x", d[k]);
		ck_assert_str_eq(hex, v[i].want);
	}
}
END_TEST

START_TEST(sha256_million_a)
{
	static const char *want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	char *a = malloc(1000000);
	ck_assert_ptr_nonnull(a);
	memset(a, 'a', 1000000);
	char hex[65];
	fl_sha256_hex(a, 1000000, hex);
	ck_assert_str_eq(hex, want);

	/* the same bytes fed in uneven pieces */
	struct fl_sha256 c;
	unsigned char d[32];
	fl_sha256_init(&c);
	size_t off = 0, step = 1;
	while (off < 1000000) {
		size_t k = step < 1000000 - off ? step : 1000000 - off;
		fl_sha256_update(&c, a + off, k);
		off += k;
		step = step * 3 % 197 + 1;
	}
	fl_sha256_final(&c, d);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	ck_assert_str_eq(hex, want);
	free(a);
}
END_TEST

START_TEST(sha256_of_file)
{
	char path[256], hex[65], want[65];
	tmp_path(path, sizeof(path), "abc.txt");
	ck_assert_int_eq(fl_write_file_atomic(path, "abc", 3), FL_OK);
	ck_assert_int_eq(fl_sha256_file(path, hex), FL_OK);
	fl_sha256_hex("abc", 3, want);
	ck_assert_str_eq(hex, want);
	tmp_path(path, sizeof(path), "missing.txt");
	ck_assert_int_ne(fl_sha256_file(path, hex), FL_OK);
}
END_TEST

/* ---- outfile ---- */

/* 200 KB of varied bytes, NULs included: more than one write and one read buffer. */
static char *sample_bytes(size_t n)
{
	char *p = malloc(n);
	ck_assert_ptr_nonnull(p);
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (char)(i % 7 == 0 ? 0 : (x >> 16) % 40 + 'A');
	}
	return p;
}

static void round_trip(const char *name)
{
	char path[256];
	tmp_path(path, sizeof(path), name);
	const size_t n = 200000;
	char *data = sample_bytes(n);
	ck_assert_int_eq(fl_write_file_atomic(path, data, n), FL_OK);
	ck_assert_int_eq(tmp_entries(), 1); /* the file, and no temporary beside it */

	char *back = NULL;
	size_t len = 0;
	ck_assert_int_eq(fl_read_file(path, &back, &len), FL_OK);
	ck_assert_uint_eq(len, n);
	ck_assert_int_eq(memcmp(back, data, n), 0);
	ck_assert_int_eq(back[len], '\0');
	free(back);
	free(data);
}

START_TEST(write_read_plain)
{
	round_trip("plain.bin");
}
END_TEST

START_TEST(write_read_gzip)
{
	round_trip("packed.json.gz");
	char path[256];
	unsigned char magic[2] = {0, 0};
	tmp_path(path, sizeof(path), "packed.json.gz");
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(magic, 1, 2, f), 2);
	fclose(f);
	ck_assert_uint_eq(magic[0], 0x1f);
	ck_assert_uint_eq(magic[1], 0x8b);
}
END_TEST

START_TEST(write_empty_file)
{
	char path[256], *back = NULL;
	size_t len = 99;
	tmp_path(path, sizeof(path), "empty.json");
	ck_assert_int_eq(fl_write_file_atomic(path, "", 0), FL_OK);
	ck_assert_int_eq(fl_read_file(path, &back, &len), FL_OK);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(back, "");
	free(back);
}
END_TEST

START_TEST(write_replaces_whole_file)
{
	char path[256], *back = NULL;
	size_t len;
	tmp_path(path, sizeof(path), "twice.txt");
	ck_assert_int_eq(fl_write_file_atomic(path, "a much longer first version", 27), FL_OK);
	ck_assert_int_eq(fl_write_file_atomic(path, "short", 5), FL_OK);
	ck_assert_int_eq(fl_read_file(path, &back, &len), FL_OK);
	ck_assert_str_eq(back, "short");
	ck_assert_int_eq(tmp_entries(), 1);
	free(back);
}
END_TEST

START_TEST(remove_tree_follows_no_link)
{
	char p[256], outside[256], link[256];
	tmp_path(p, sizeof(p), "tree");
	ck_assert_int_eq(mkdir(p, 0700), 0);
	tmp_path(p, sizeof(p), "tree/sub");
	ck_assert_int_eq(mkdir(p, 0700), 0);
	tmp_path(p, sizeof(p), "tree/sub/file");
	ck_assert_int_eq(fl_write_file_atomic(p, "x", 1), FL_OK);
	tmp_path(outside, sizeof(outside), "outside");
	ck_assert_int_eq(mkdir(outside, 0700), 0);
	tmp_path(p, sizeof(p), "outside/kept");
	ck_assert_int_eq(fl_write_file_atomic(p, "x", 1), FL_OK);
	tmp_path(link, sizeof(link), "tree/link");
	ck_assert_int_eq(symlink(outside, link), 0);
	tmp_path(p, sizeof(p), "tree");
	fl_remove_tree(p);
	ck_assert_int_ne(access(p, F_OK), 0);
	tmp_path(p, sizeof(p), "outside/kept");
	ck_assert_int_eq(access(p, F_OK), 0); /* the link went, not its target */
	fl_remove_tree(p);                    /* a plain file */
	ck_assert_int_ne(access(p, F_OK), 0);
	fl_remove_tree(p); /* absent: nothing to do */
}
END_TEST

START_TEST(abort_leaves_nothing)
{
	static const char *const names[] = {"gone.json", "gone.json.gz"};
	for (int i = 0; i < 2; i++) {
		char path[256];
		struct fl_outfile *f = NULL;
		tmp_path(path, sizeof(path), names[i]);
		ck_assert_int_eq(fl_outfile_open(&f, path), FL_OK);
		ck_assert_int_eq(tmp_entries(), 1); /* the temporary */
		char *data = sample_bytes(100000);
		fl_outfile_write(f, data, 100000);
		fl_outfile_puts(f, "tail");
		free(data);
		fl_outfile_abort(f);
		ck_assert_int_eq(tmp_entries(), 0);
		ck_assert_int_ne(access(path, F_OK), 0);
	}
	fl_outfile_abort(NULL);
}
END_TEST

START_TEST(write_into_missing_dir)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/no-such-dir/out.json", tmpdir);
	fl_error_clear();
	ck_assert_int_eq(fl_write_file_atomic(path, "x", 1), FL_ERUNTIME);
	assert_msg_has(path);
	assert_msg_has("cannot write");
	ck_assert_int_eq(tmp_entries(), 0);
}
END_TEST

START_TEST(read_missing_file)
{
	char path[256], *back = NULL;
	size_t len;
	tmp_path(path, sizeof(path), "absent.json");
	ck_assert_int_eq(fl_read_file(path, &back, &len), FL_EINPUT);
	assert_msg_has(path);
	ck_assert_ptr_null(back);
}
END_TEST

START_TEST(read_truncated_gzip)
{
	char path[256], *back = NULL;
	size_t len;
	tmp_path(path, sizeof(path), "cut.json.gz");
	char *data = sample_bytes(200000);
	ck_assert_int_eq(fl_write_file_atomic(path, data, 200000), FL_OK);
	free(data);
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	long full = ftell(f);
	fclose(f);
	ck_assert_int_gt(full, 100);

	/* cut in the middle of the deflate stream, then only the 8-byte trailer */
	const long cuts[] = {full / 2, full - 8};
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(truncate(path, cuts[i]), 0);
		fl_error_clear();
		ck_assert_int_eq(fl_read_file(path, &back, &len), FL_EINPUT);
		assert_msg_has(path);
		ck_assert_ptr_null(back);
	}
}
END_TEST

/* ---- JSON helpers ---- */

START_TEST(json_parse_ok)
{
	const char *text = "{\"a\": [1, 2, 3]}\n\n";
	cJSON *doc = NULL;
	ck_assert_int_eq(fl_json_parse("ok.json", text, strlen(text), &doc), FL_OK);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "a")), 3);
	cJSON_Delete(doc);
}
END_TEST

START_TEST(json_parse_error_line)
{
	const char *text = "{\n  \"a\": 1,\n  \"b\": ?\n}\n";
	cJSON *doc = NULL;
	ck_assert_int_eq(fl_json_parse("bad.json", text, strlen(text), &doc), FL_EINPUT);
	assert_msg_has("'bad.json'");
	assert_msg_has("line 3");
	ck_assert_ptr_null(doc);

	const char *trailing = "{}\n\n  x\n";
	ck_assert_int_eq(fl_json_parse("tail.json", trailing, strlen(trailing), &doc), FL_EINPUT);
	assert_msg_has("line 3");
	ck_assert_ptr_null(doc);

	ck_assert_int_eq(fl_json_parse("nul.json", "{}\0", 3, &doc), FL_EINPUT);
	assert_msg_has("NUL");
}
END_TEST

START_TEST(json_load_file)
{
	char path[256];
	cJSON *doc = NULL;
	tmp_path(path, sizeof(path), "doc.json.gz");
	ck_assert_int_eq(fl_write_file_atomic(path, "{\"k\": \"v\"}", 10), FL_OK);
	ck_assert_int_eq(fl_json_load(path, &doc), FL_OK);
	ck_assert_str_eq(cJSON_GetObjectItem(doc, "k")->valuestring, "v");
	cJSON_Delete(doc);
}
END_TEST

static cJSON *parse(const char *text)
{
	cJSON *doc = cJSON_Parse(text);
	ck_assert_ptr_nonnull(doc);
	return doc;
}

START_TEST(json_check_keys)
{
	static const char *const allowed[] = {"alpha", "beta", NULL};
	cJSON *ok = parse("{\"alpha\": 1, \"beta\": 2}");
	ck_assert_int_eq(fl_json_check_keys("f.json", "", ok, allowed), FL_OK);
	cJSON_Delete(ok);

	cJSON *unknown = parse("{\"alpha\": 1, \"gamma\": 2}");
	ck_assert_int_eq(fl_json_check_keys("f.json", "workload", unknown, allowed), FL_EINPUT);
	assert_msg_has("'f.json'");
	assert_msg_has("workload.gamma");
	assert_msg_has("unknown key");
	assert_msg_has("alpha, beta");
	cJSON_Delete(unknown);

	cJSON *dup = parse("{\"beta\": 1, \"alpha\": 2, \"beta\": 3}");
	ck_assert_int_eq(fl_json_check_keys("f.json", "", dup, allowed), FL_EINPUT);
	assert_msg_has("beta");
	assert_msg_has("duplicate key");
	cJSON_Delete(dup);
}
END_TEST

START_TEST(json_get_int)
{
	cJSON *o = parse("{\"n\": 500, \"f\": 1.5, \"s\": \"7\", \"ok\": 42}");
	long v = -1;
	ck_assert_int_eq(fl_json_get_int("f.json", "sched", o, "ok", 1, 0, 100, &v), FL_OK);
	ck_assert_int_eq(v, 42);

	ck_assert_int_eq(fl_json_get_int("f.json", "sched", o, "n", 1, 0, 100, &v), FL_EINPUT);
	assert_msg_has("sched.n");
	assert_msg_has("500 is out of range");
	assert_msg_has("[0, 100]");
	ck_assert_int_eq(v, 42);

	ck_assert_int_eq(fl_json_get_int("f.json", "sched", o, "f", 1, 0, 100, &v), FL_EINPUT);
	assert_msg_has("expected an integer");
	ck_assert_int_eq(fl_json_get_int("f.json", "", o, "s", 1, 0, 100, &v), FL_EINPUT);
	assert_msg_has("s: expected an integer, got a string");

	ck_assert_int_eq(fl_json_get_int("f.json", "", o, "absent", 1, 0, 100, &v), FL_EINPUT);
	assert_msg_has("absent: missing");
	ck_assert_int_eq(fl_json_get_int("f.json", "", o, "absent", 0, 0, 100, &v), FL_OK);
	ck_assert_int_eq(v, 42);
	cJSON_Delete(o);
}
END_TEST

START_TEST(json_get_string_number)
{
	cJSON *o = parse("{\"s\": \"x\", \"n\": 2.5}");
	const char *s = NULL;
	double d = 0;
	ck_assert_int_eq(fl_json_get_string("f.json", "", o, "s", 1, &s), FL_OK);
	ck_assert_str_eq(s, "x");
	ck_assert_int_eq(fl_json_get_string("f.json", "top", o, "n", 1, &s), FL_EINPUT);
	assert_msg_has("top.n: expected a string, got a number");
	ck_assert_int_eq(fl_json_get_number("f.json", "", o, "n", 1, &d), FL_OK);
	ck_assert_double_eq(d, 2.5);
	ck_assert_int_eq(fl_json_get_number("f.json", "", o, "s", 1, &d), FL_EINPUT);
	assert_msg_has("expected a number, got a string");
	cJSON_Delete(o);
}
END_TEST

START_TEST(json_write_round_trip)
{
	char path[256];
	tmp_path(path, sizeof(path), "w.json");
	cJSON *o = parse("{\"name\": \"q\\\"uote\", \"list\": [1, 2]}");
	ck_assert_int_eq(fl_json_write(path, o), FL_OK);
	cJSON *back = NULL;
	ck_assert_int_eq(fl_json_load(path, &back), FL_OK);
	ck_assert(cJSON_Compare(o, back, 1));
	cJSON_Delete(back);
	cJSON_Delete(o);
}
END_TEST

START_TEST(status_messages)
{
	ck_assert_int_eq(fl_error(FL_EINPUT, "cannot open '%s'", "x.json"), FL_EINPUT);
	ck_assert_int_eq(fl_error_prefix(FL_EINPUT, "scenario '%s': ", "r7"), FL_EINPUT);
	ck_assert_str_eq(fl_error_msg(), "scenario 'r7': cannot open 'x.json'");
	fl_error_clear();
	ck_assert_str_eq(fl_error_msg(), "");
	ck_assert_str_eq(fl_status_str(FL_OK), "ok");
	ck_assert_str_eq(fl_status_str(FL_EINPUT), "bad input");
	ck_assert_str_eq(fl_status_str((enum fl_status)99), "unknown status");
}
END_TEST

static Suite *common_suite(void)
{
	Suite *s = suite_create("common");
	TCase *tc = tcase_create("strbuf");
	tcase_add_test(tc, escape_quotes_and_backslash);
	tcase_add_test(tc, escape_control_chars);
	tcase_add_test(tc, escape_invalid_utf8);
	tcase_add_test(tc, escape_keeps_valid_multibyte);
	tcase_add_test(tc, escape_one_megabyte);
	tcase_add_test(tc, strbuf_addf_and_reset);
	tcase_add_test(tc, grow_one_keeps_elements);
	suite_add_tcase(s, tc);

	tc = tcase_create("sha256");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, sha256_vectors);
	tcase_add_test(tc, sha256_million_a);
	tcase_add_test(tc, hmac_sha256_rfc4231);
	tcase_add_test(tc, sha256_of_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("outfile");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, write_read_plain);
	tcase_add_test(tc, write_read_gzip);
	tcase_add_test(tc, write_empty_file);
	tcase_add_test(tc, write_replaces_whole_file);
	tcase_add_test(tc, abort_leaves_nothing);
	tcase_add_test(tc, remove_tree_follows_no_link);
	tcase_add_test(tc, write_into_missing_dir);
	tcase_add_test(tc, read_missing_file);
	tcase_add_test(tc, read_truncated_gzip);
	suite_add_tcase(s, tc);

	tc = tcase_create("json");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, json_parse_ok);
	tcase_add_test(tc, json_parse_error_line);
	tcase_add_test(tc, json_load_file);
	tcase_add_test(tc, json_check_keys);
	tcase_add_test(tc, json_get_int);
	tcase_add_test(tc, json_get_string_number);
	tcase_add_test(tc, json_write_round_trip);
	tcase_add_test(tc, status_messages);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(common_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
