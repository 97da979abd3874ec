#include "common/jsonutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/outfile.h"

enum fl_status fl_json_parse(const char *what, const char *text, size_t len, cJSON **out)
{
	const char *end = NULL;
	if (memchr(text, '\0', len))
		return fl_error(FL_EINPUT, "'%s': not JSON text (contains a NUL byte)", what);
	cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (root && end) { /* only whitespace may follow the value */
		const char *p = end;
		while (p < text + len && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if (p < text + len) {
			cJSON_Delete(root);
			root = NULL;
			end = p;
		}
	}
	if (!root) {
		size_t off = end && end >= text ? (size_t)(end - text) : 0;
		if (off > len)
			off = len;
		size_t line = 1, col = 1;
		for (size_t i = 0; i < off; i++) {
			if (text[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		return fl_error(FL_EINPUT, "'%s': line %zu, column %zu: JSON syntax error, expected a valid value here",
				what, line, col);
	}
	*out = root;
	return FL_OK;
}

enum fl_status fl_json_load(const char *path, cJSON **out)
{
	char *buf;
	size_t len;
	enum fl_status st = fl_read_file(path, &buf, &len);
	if (st)
		return st;
	st = fl_json_parse(path, buf, len, out);
	free(buf);
	return st;
}

const char *fl_json_type_name(const cJSON *item)
{
	if (!item) return "nothing";
	if (cJSON_IsNumber(item)) return "a number";
	if (cJSON_IsString(item)) return "a string";
	if (cJSON_IsBool(item)) return "a boolean";
	if (cJSON_IsNull(item)) return "null";
	if (cJSON_IsArray(item)) return "an array";
	if (cJSON_IsObject(item)) return "an object";
	return "an unknown value";
}

static const char *sep(const char *place) { return place && *place ? "." : ""; }
static const char *pl(const char *place) { return place ? place : ""; }

enum fl_status fl_json_check_keys(const char *file, const char *place, const cJSON *obj,
				  const char *const *allowed)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, obj) {
		int ok = 0;
		for (const char *const *a = allowed; *a; a++)
			if (it->string && strcmp(it->string, *a) == 0)
				ok = 1;
		if (!ok) {
			char list[512] = "";
			for (const char *const *a = allowed; *a; a++) {
				if (a != allowed)
					strncat(list, ", ", sizeof(list) - strlen(list) - 1);
				strncat(list, *a, sizeof(list) - strlen(list) - 1);
			}
			return fl_error(FL_EINPUT, "'%s': %s%s%s: unknown key, expected one of: %s", file,
					pl(place), sep(place), it->string ? it->string : "?", list);
		}
	}
	for (it = obj ? obj->child : NULL; it; it = it->next) {
		for (const cJSON *j = it->next; j; j = j->next)
			if (it->string && j->string && strcmp(it->string, j->string) == 0)
				return fl_error(FL_EINPUT, "'%s': %s%s%s: duplicate key, expected each key once",
						file, pl(place), sep(place), it->string);
	}
	return FL_OK;
}

static enum fl_status missing(const char *file, const char *place, const char *key, const char *what)
{
	return fl_error(FL_EINPUT, "'%s': %s%s%s: missing, expected %s", file, pl(place), sep(place), key, what);
}

static enum fl_status wrong(const char *file, const char *place, const char *key, const char *what,
			    const cJSON *got)
{
	return fl_error(FL_EINPUT, "'%s': %s%s%s: expected %s, got %s", file, pl(place), sep(place), key,
			what, fl_json_type_name(got));
}

enum fl_status fl_json_get_string(const char *file, const char *place, const cJSON *obj,
				  const char *key, int required, const char **out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it)
		return required ? missing(file, place, key, "a string") : FL_OK;
	if (!cJSON_IsString(it))
		return wrong(file, place, key, "a string", it);
	*out = it->valuestring;
	return FL_OK;
}

enum fl_status fl_json_get_number(const char *file, const char *place, const cJSON *obj,
				  const char *key, int required, double *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it)
		return required ? missing(file, place, key, "a number") : FL_OK;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return wrong(file, place, key, "a number", it);
	*out = it->valuedouble;
	return FL_OK;
}

enum fl_status fl_json_get_int(const char *file, const char *place, const cJSON *obj,
			       const char *key, int required, long min, long max, long *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it)
		return required ? missing(file, place, key, "an integer") : FL_OK;
	if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble))
		return wrong(file, place, key, "an integer", it);
	if (it->valuedouble < (double)min || it->valuedouble > (double)max)
		return fl_error(FL_EINPUT, "'%s': %s%s%s: %g is out of range, expected an integer in [%ld, %ld]",
				file, pl(place), sep(place), key, it->valuedouble, min, max);
	*out = (long)it->valuedouble;
	return FL_OK;
}

enum fl_status fl_json_write(const char *path, const cJSON *root)
{
	char *s = cJSON_Print(root);
	if (!s)
		return fl_error(FL_ERUNTIME, "cannot write '%s': out of memory", path);
	size_t n = strlen(s);
	s[n] = '\0';
	struct fl_outfile *f;
	enum fl_status st = fl_outfile_open(&f, path);
	if (!st) {
		fl_outfile_write(f, s, n);
		fl_outfile_write(f, "\n", 1);
		st = fl_outfile_commit(f);
	}
	free(s);
	return st;
}

void fl_json_print(struct strbuf *out, const cJSON *root)
{
	char *s = cJSON_Print(root);
	if (!s)
		abort();
	strbuf_adds(out, s);
	strbuf_adds(out, "\n");
	free(s);
}

/* ---- paths (the syntax of grader/grading/refs.h) ---- */

static int is_name_char(char c) { return c && c != '.' && c != '[' && c != ']'; }

static const cJSON *select_elem(const cJSON *arr, const char *key, const char *val)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, arr) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
		if (cJSON_IsString(v) && strcmp(v->valuestring, val) == 0)
			return e;
		if (cJSON_IsNumber(v)) {
			char *end;
			double d = strtod(val, &end);
			if (!*end && end != val && d == v->valuedouble)
				return e;
		}
	}
	return NULL;
}

const cJSON *fl_json_path(const cJSON *root, const char *path, char *why, size_t whysz)
{
	const cJSON *cur = root;
	const char *p = path;
	char seg[256];
	int first = 1;
	if (!*p) {
		snprintf(why, whysz, "empty path");
		return NULL;
	}
	while (*p) {
		size_t k = 0;
		if (*p == '[') {
			p++;
			if (*p == '"') {
				p++;
				while (*p && *p != '"' && k < sizeof(seg) - 1)
					seg[k++] = *p++;
				seg[k] = '\0';
				if (*p && *p != '"')
					goto too_long;
				if (*p != '"' || p[1] != ']') {
					snprintf(why, whysz, "unterminated [\"...\"]");
					return NULL;
				}
				p += 2;
				goto by_key;
			}
			while (*p && *p != ']' && k < sizeof(seg) - 1)
				seg[k++] = *p++;
			seg[k] = '\0';
			if (*p && *p != ']')
				goto too_long;
			if (*p != ']') {
				snprintf(why, whysz, "unterminated [...]");
				return NULL;
			}
			p++;
			char *eq = strchr(seg, '=');
			if (eq) {
				*eq = '\0';
				if (!cJSON_IsArray(cur)) {
					snprintf(why, whysz, "[%s=%s] needs an array, found %s", seg, eq + 1,
						 cJSON_IsObject(cur) ? "an object" : "a value");
					return NULL;
				}
				const cJSON *e = select_elem(cur, seg, eq + 1);
				if (!e) {
					snprintf(why, whysz, "no element with %s=%s", seg, eq + 1);
					return NULL;
				}
				cur = e;
				continue;
			}
			char *end;
			long idx = strtol(seg, &end, 10);
			if (*end || end == seg)
				goto by_key; /* [name] */
			if (!cJSON_IsArray(cur)) {
				snprintf(why, whysz, "[%ld] needs an array", idx);
				return NULL;
			}
			int n = cJSON_GetArraySize(cur);
			if (idx < 0 || idx >= n) {
				snprintf(why, whysz, "index %ld is out of range (%d elements)", idx, n);
				return NULL;
			}
			cur = cJSON_GetArrayItem(cur, (int)idx);
			continue;
		}
		if (*p == '.') {
			if (first) {
				snprintf(why, whysz, "a path starts with a name");
				return NULL;
			}
			p++;
		}
		while (is_name_char(*p) && k < sizeof(seg) - 1)
			seg[k++] = *p++;
		seg[k] = '\0';
		if (is_name_char(*p))
			goto too_long;
		if (!k) {
			snprintf(why, whysz, "empty name in the path");
			return NULL;
		}
	by_key:
		first = 0;
		if (!cJSON_IsObject(cur)) {
			snprintf(why, whysz, "'%s' needs an object, found %s", seg,
				 cJSON_IsArray(cur) ? "an array" : "a value");
			return NULL;
		}
		const cJSON *next = cJSON_GetObjectItemCaseSensitive(cur, seg);
		if (!next) {
			snprintf(why, whysz, "no '%s'", seg);
			return NULL;
		}
		cur = next;
	}
	return cur;
too_long:
	snprintf(why, whysz, "a name in the path is longer than %zu characters", sizeof(seg) - 1);
	return NULL;
}
