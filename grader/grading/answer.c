#include "grader/grading/answer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonutil.h"
#include "common/strbuf.h"
#include "grader/grading/units.h"

#define MAX_KEYS 1000
#define SHOW 40 /* bytes of learner text quoted in a message */

enum fl_status fl_answer_load(const char *path, struct fl_answer *a)
{
	memset(a, 0, sizeof(*a));
	const char *name = fl_base_name(path);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
	if (fd < 0)
		return fl_error(FL_ERUNTIME, "cannot open answer '%s': %s", name, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return fl_error(FL_ERUNTIME, "cannot read answer '%s': not a regular file", name);
	}
	size_t cap = FL_ANSWER_MAX_BYTES + 1, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf)
		abort();
	enum fl_status st = FL_OK;
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			st = fl_error(FL_ERUNTIME, "cannot read answer '%s': %s", name, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > FL_ANSWER_MAX_BYTES) {
		st = fl_error(FL_ERUNTIME, "answer '%s' is larger than %u KiB; expected a short text file", name,
			      FL_ANSWER_MAX_BYTES / 1024);
		goto out;
	}
	buf[n] = '\0';
	st = fl_answer_parse(name, buf, n, a);
out:
	close(fd);
	free(buf);
	return st;
}

static struct fl_answer_item *add_item(struct fl_answer *a, const char *key, long line)
{
	struct fl_answer_item *it = realloc(a->items, (a->n + 1) * sizeof(*a->items));
	if (!it)
		abort();
	a->items = it;
	it = &a->items[a->n++];
	memset(it, 0, sizeof(*it));
	it->key = fl_clean_text(key, 64);
	it->norm_key = fl_norm_key(key);
	it->line = line;
	return it;
}

static enum fl_status check_new_key(const struct fl_answer *a, const char *key, long line)
{
	char *nk = fl_norm_key(key);
	enum fl_status st = FL_OK;
	if (!*nk) {
		char *k = fl_clean_text(key, SHOW);
		st = line ? fl_error(FL_ERUNTIME, "answer '%s', line %ld: '%s' is not a usable key (use letters and digits)",
				     a->name, line, k)
			  : fl_error(FL_ERUNTIME, "answer '%s': '%s' is not a usable key (use letters and digits)", a->name, k);
		free(k);
		goto out;
	}
	for (size_t i = 0; i < a->n; i++) {
		if (strcmp(a->items[i].norm_key, nk) != 0)
			continue;
		if (line)
			st = fl_error(FL_ERUNTIME, "answer '%s', line %ld: key '%s' was already given on line %ld; give each answer once",
				      a->name, line, a->items[i].key, a->items[i].line);
		else
			st = fl_error(FL_ERUNTIME, "answer '%s': key '%s' appears twice; give each answer once", a->name,
				      a->items[i].key);
		goto out;
	}
	if (a->n >= MAX_KEYS)
		st = fl_error(FL_ERUNTIME, "answer '%s': more than %d keys; expected one per question", a->name, MAX_KEYS);
out:
	free(nk);
	return st;
}

static void set_text(struct fl_answer_item *it, const char *s, size_t n)
{
	if (n > FL_ANSWER_MAX_VALUE) {
		it->too_long = 1;
		it->text = fl_xstrdup("");
		return;
	}
	it->text = strndup(s, n);
	if (!it->text)
		abort();
}

static enum fl_status parse_json(struct fl_answer *a, const char *text, size_t len)
{
	cJSON *root = NULL;
	enum fl_status st = fl_json_parse(a->name, text, len, &root);
	if (st)
		return fl_error_prefix(FL_ERUNTIME, "answer ");
	if (!cJSON_IsObject(root)) {
		st = fl_error(FL_ERUNTIME, "answer '%s': expected a JSON object of answers ({\"key\": value, ...}), got %s",
			      a->name, fl_json_type_name(root));
		goto out;
	}
	for (const cJSON *c = root->child; c; c = c->next) {
		const char *key = c->string ? c->string : "";
		if ((st = check_new_key(a, key, 0)))
			goto out;
		struct fl_answer_item *it = add_item(a, key, 0);
		char num[64];
		if (cJSON_IsString(c)) {
			it->type = FL_ANS_TEXT;
			set_text(it, c->valuestring, strlen(c->valuestring));
		} else if (cJSON_IsNumber(c)) {
			it->type = FL_ANS_NUMBER;
			it->number = c->valuedouble;
			fl_fmt_num(num, sizeof(num), c->valuedouble);
			it->text = fl_xstrdup(num);
		} else if (cJSON_IsBool(c)) {
			it->type = FL_ANS_BOOL;
			it->text = fl_xstrdup(cJSON_IsTrue(c) ? "yes" : "no");
		} else if (cJSON_IsNull(c)) {
			it->type = FL_ANS_NULL;
			it->text = fl_xstrdup("");
		} else if (cJSON_IsArray(c)) {
			it->type = FL_ANS_LIST;
			size_t n = (size_t)cJSON_GetArraySize(c);
			if (n > FL_ANSWER_MAX_ITEMS) {
				it->type = FL_ANS_OTHER;
				it->too_long = 1;
				it->text = fl_xstrdup("");
				continue;
			}
			it->list = calloc(n ? n : 1, sizeof(char *));
			if (!it->list)
				abort();
			struct strbuf joined = STRBUF_INIT;
			const cJSON *e;
			cJSON_ArrayForEach(e, c) {
				if (cJSON_IsString(e)) {
					it->list[it->n_list++] = strlen(e->valuestring) > FL_ANSWER_MAX_VALUE
									 ? fl_xstrdup("")
									 : fl_xstrdup(e->valuestring);
				} else if (cJSON_IsNumber(e)) {
					fl_fmt_num(num, sizeof(num), e->valuedouble);
					it->list[it->n_list++] = fl_xstrdup(num);
				} else {
					it->type = FL_ANS_OTHER;
					break;
				}
				strbuf_addf(&joined, "%s%s", it->n_list > 1 ? ", " : "", it->list[it->n_list - 1]);
				if (joined.len > FL_ANSWER_MAX_VALUE)
					it->too_long = 1;
			}
			it->text = joined.buf ? joined.buf : fl_xstrdup("");
		} else {
			it->type = FL_ANS_OTHER;
			it->text = fl_xstrdup("");
		}
	}
out:
	cJSON_Delete(root);
	return st;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static enum fl_status parse_lines(struct fl_answer *a, const char *text, size_t len)
{
	long line = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		line++;
		const char *s = p, *e = eol;
		p = eol < end ? eol + 1 : end;
		while (s < e && is_blank(*s))
			s++;
		if (s == e || *s == '#')
			continue;
		for (const char *h = s + 1; h < e; h++) /* " #" starts a comment */
			if (*h == '#' && is_blank(h[-1])) {
				e = h;
				break;
			}
		while (e > s && is_blank(e[-1]))
			e--;
		const char *sep = s;
		while (sep < e && *sep != ':' && *sep != '=')
			sep++;
		if (sep == e) {
			char *show = strndup(s, (size_t)(e - s) > 200 ? 200 : (size_t)(e - s));
			char *c = fl_clean_text(show ? show : "", SHOW);
			enum fl_status st = fl_error(FL_ERUNTIME, "answer '%s', line %ld: expected 'key: value', got '%s'",
						     a->name, line, c);
			free(show);
			free(c);
			return st;
		}
		const char *ke = sep;
		while (ke > s && is_blank(ke[-1]))
			ke--;
		if (ke == s)
			return fl_error(FL_ERUNTIME, "answer '%s', line %ld: expected a key before '%c'", a->name, line, *sep);
		char *key = strndup(s, (size_t)(ke - s) > 256 ? 256 : (size_t)(ke - s));
		if (!key)
			abort();
		enum fl_status st = check_new_key(a, key, line);
		if (st) {
			free(key);
			return st;
		}
		struct fl_answer_item *it = add_item(a, key, line);
		free(key);
		const char *v = sep + 1;
		while (v < e && is_blank(*v))
			v++;
		if (e - v >= 2 && (*v == '"' || *v == '\'') && e[-1] == *v) {
			v++;
			e--;
		}
		it->type = FL_ANS_TEXT;
		set_text(it, v, (size_t)(e - v));
	}
	return FL_OK;
}

enum fl_status fl_answer_parse(const char *name, const char *text, size_t len, struct fl_answer *a)
{
	memset(a, 0, sizeof(*a));
	a->name = fl_clean_text(name, 200);
	enum fl_status st;
	size_t bad;
	if (memchr(text, '\0', len)) {
		st = fl_error(FL_ERUNTIME, "answer '%s' is not text (it contains a NUL byte)", a->name);
		goto fail;
	}
	if (!fl_utf8_valid(text, len, &bad)) {
		long line = 1;
		for (size_t i = 0; i < bad; i++)
			line += text[i] == '\n';
		st = fl_error(FL_ERUNTIME, "answer '%s', line %ld: not UTF-8 text (invalid byte 0x%02x); save the file as UTF-8",
			      a->name, line, (unsigned char)text[bad]);
		goto fail;
	}
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) { /* byte order mark */
		text += 3;
		len -= 3;
	}
	size_t i = 0;
	while (i < len && (is_blank(text[i]) || text[i] == '\n'))
		i++;
	a->is_json = i < len && (text[i] == '{' || text[i] == '[');
	st = a->is_json ? parse_json(a, text, len) : parse_lines(a, text, len);
	if (st)
		goto fail;
	if (a->n == 0) {
		st = fl_error(FL_ERUNTIME, "answer '%s' holds no answers; expected 'key: value' lines or a JSON object",
			      a->name);
		goto fail;
	}
	return FL_OK;
fail:
	fl_answer_release(a);
	return st;
}

struct fl_answer_item *fl_answer_find(const struct fl_answer *a, const char *norm_key)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->items[i].norm_key, norm_key) == 0)
			return &a->items[i];
	return NULL;
}

void fl_answer_release(struct fl_answer *a)
{
	for (size_t i = 0; i < a->n; i++) {
		struct fl_answer_item *it = &a->items[i];
		for (size_t k = 0; k < it->n_list; k++)
			free(it->list[k]);
		free(it->list);
		free(it->key);
		free(it->norm_key);
		free(it->text);
	}
	free(a->items);
	free(a->name);
	memset(a, 0, sizeof(*a));
}
