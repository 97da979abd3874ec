#include "grader/grading/rubric.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "grader/grading/units.h"

static const char *const outcome_names[FL_OUT_COUNT] = {"correct", "partial", "wrong", "missing", "format_error"};

const char *fl_outcome_name(enum fl_outcome o)
{
	return (unsigned)o < FL_OUT_COUNT ? outcome_names[o] : "unknown";
}

void fl_verdict_release(struct fl_verdict *v)
{
	free(v->read_as);
	strbuf_release(&v->feedback);
	strbuf_release(&v->notes);
	strbuf_release(&v->key);
	memset(v, 0, sizeof(*v));
}

/* Messages from jsonutil are FL_EINPUT "'file': place: ..."; a rubric problem
 * is a truth/rubric error (exit 4). */
static enum fl_status as_rubric_error(enum fl_status st)
{
	return st ? fl_error_prefix(FL_EINTERNAL, "rubric ") : FL_OK;
}

static const char *const top_keys[] = {"schema", "name", "title", "description", "scenarios", "questions",
				       "$comment", NULL};
static const char *const common_keys[] = {"id", "prompt", "points", "kind", "keys", "expected", "visibility",
					  "description", "feedback", "$comment", NULL};
static const char *const feedback_keys[] = {"correct", "partial", "wrong", "missing", "format_error", NULL};
static const char *const visibilities[] = {"visible", "hidden", "after_due_date", "after_published", NULL};

static enum fl_status check_question_keys(const char *file, const char *place, const cJSON *j,
					  const struct fl_question_kind *k)
{
	const char *allowed[64];
	size_t n = 0;
	for (const char *const *a = common_keys; *a; a++)
		allowed[n++] = *a;
	for (const char *const *a = k->keys; a && *a && n < 63; a++)
		allowed[n++] = *a;
	allowed[n] = NULL;
	return as_rubric_error(fl_json_check_keys(file, place, j, allowed));
}

static enum fl_status load_keys(struct fl_question *q, const char *file, const char *place, const cJSON *j)
{
	const cJSON *keys = cJSON_GetObjectItemCaseSensitive(j, "keys");
	size_t n = keys ? (size_t)cJSON_GetArraySize(keys) : 0;
	if (keys && !cJSON_IsArray(keys))
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.keys: expected an array of answer keys, got %s", file,
				place, fl_json_type_name(keys));
	q->keys = calloc(n + 1, sizeof(char *));
	if (!q->keys)
		abort();
	q->keys[q->n_keys++] = fl_norm_key(q->id);
	size_t i = 0;
	const cJSON *k;
	cJSON_ArrayForEach(k, keys) {
		if (!cJSON_IsString(k) || !*k->valuestring)
			return fl_error(FL_EINTERNAL, "rubric '%s': %s.keys[%zu]: expected a non-empty string", file, place, i);
		q->keys[q->n_keys++] = fl_norm_key(k->valuestring);
		i++;
	}
	return FL_OK;
}

static enum fl_status load_feedback(struct fl_question *q, const char *file, const char *place, const cJSON *j)
{
	const cJSON *fb = cJSON_GetObjectItemCaseSensitive(j, "feedback");
	if (!fb)
		return FL_OK;
	char pl[64];
	snprintf(pl, sizeof(pl), "%s.feedback", place);
	if (!cJSON_IsObject(fb))
		return fl_error(FL_EINTERNAL, "rubric '%s': %s: expected an object of texts per outcome", file, pl);
	enum fl_status st = as_rubric_error(fl_json_check_keys(file, pl, fb, feedback_keys));
	if (st)
		return st;
	for (int o = 0; o < FL_OUT_COUNT; o++)
		if ((st = as_rubric_error(fl_json_get_string(file, pl, fb, outcome_names[o], 0, &q->feedback[o]))))
			return st;
	return FL_OK;
}

static enum fl_status load_question(struct fl_rubric *r, size_t i, const cJSON *j)
{
	const char *file = r->name_in_messages;
	char place[32];
	snprintf(place, sizeof(place), "questions[%zu]", i);
	struct fl_question *q = &r->q[i];
	q->index = i;
	if (!cJSON_IsObject(j))
		return fl_error(FL_EINTERNAL, "rubric '%s': %s: expected an object, got %s", file, place, fl_json_type_name(j));
	const char *id = NULL, *kind = NULL;
	enum fl_status st;
	if ((st = as_rubric_error(fl_json_get_string(file, place, j, "id", 1, &id))) ||
	    (st = as_rubric_error(fl_json_get_string(file, place, j, "kind", 1, &kind))))
		return st;
	q->kind = fl_question_kind_find(kind);
	if (!q->kind) {
		char list[256] = "";
		for (size_t k = 0; fl_question_kinds[k]; k++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? ", " : "",
				 fl_question_kinds[k]->name);
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.kind: unknown kind '%s', expected one of: %s", file, place,
				kind, list);
	}
	if ((st = check_question_keys(file, place, j, q->kind)))
		return st;
	char *nid = fl_norm_key(id);
	int ok = strcmp(nid, id) == 0 && *nid;
	free(nid);
	if (!ok)
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.id: '%s' is not a plain key, expected lowercase letters, "
				"digits and '_'", file, place, id);
	q->id = strdup(id);
	if (!q->id)
		abort();
	q->visibility = "visible";
	if ((st = as_rubric_error(fl_json_get_string(file, place, j, "prompt", 1, &q->prompt))) ||
	    (st = as_rubric_error(fl_json_get_number(file, place, j, "points", 1, &q->points))) ||
	    (st = as_rubric_error(fl_json_get_string(file, place, j, "description", 0, &q->description))) ||
	    (st = as_rubric_error(fl_json_get_string(file, place, j, "visibility", 0, &q->visibility))))
		return st;
	if (!(q->points > 0 && q->points <= 1000))
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.points: %g is out of range, expected a number in (0, 1000]",
				file, place, q->points);
	ok = 0;
	for (const char *const *v = visibilities; *v; v++)
		ok |= strcmp(*v, q->visibility) == 0;
	if (!ok)
		return fl_error(FL_EINTERNAL, "rubric '%s': %s.visibility: unknown '%s', expected visible, hidden, "
				"after_due_date or after_published", file, place, q->visibility);
	q->expected = cJSON_GetObjectItemCaseSensitive(j, "expected");
	if (q->expected) {
		int good = cJSON_IsString(q->expected) || cJSON_IsNumber(q->expected) || cJSON_IsArray(q->expected);
		const cJSON *e;
		if (cJSON_IsArray(q->expected)) {
			good = cJSON_GetArraySize(q->expected) > 0;
			cJSON_ArrayForEach(e, q->expected) good &= cJSON_IsString(e) || cJSON_IsNumber(e);
		}
		if (!good)
			return fl_error(FL_EINTERNAL, "rubric '%s': %s.expected: expected a reference, a value, or a "
					"non-empty array of them", file, place);
	}
	if ((st = load_keys(q, file, place, j)) || (st = load_feedback(q, file, place, j)))
		return st;
	if (q->kind->load && (st = q->kind->load(q, file, place, j)))
		return st;
	return FL_OK;
}

enum fl_status fl_rubric_load(const char *path, struct fl_rubric *r)
{
	memset(r, 0, sizeof(*r));
	r->path = strdup(path);
	const char *slash = strrchr(path, '/');
	r->name_in_messages = strdup(slash ? slash + 1 : path);
	if (!r->path || !r->name_in_messages)
		abort();
	const char *file = r->name_in_messages;
	enum fl_status st = fl_json_load(path, &r->doc);
	if (st) {
		st = fl_error_prefix(FL_EINTERNAL, "rubric: ");
		goto fail;
	}
	if (!cJSON_IsObject(r->doc)) {
		st = fl_error(FL_EINTERNAL, "rubric '%s': expected an object, got %s", file, fl_json_type_name(r->doc));
		goto fail;
	}
	if ((st = as_rubric_error(fl_json_check_keys(file, "", r->doc, top_keys))))
		goto fail;
	const char *schema = NULL;
	if ((st = as_rubric_error(fl_json_get_string(file, "", r->doc, "schema", 1, &schema))))
		goto fail;
	if (strncmp(schema, "faultline.rubric/", 17) != 0 || atoi(schema + 17) != 1) {
		st = fl_error(FL_EINTERNAL, "rubric '%s': schema: '%s' is not supported, expected faultline.rubric/1", file,
			      schema);
		goto fail;
	}
	if ((st = as_rubric_error(fl_json_get_string(file, "", r->doc, "name", 1, &r->name))) ||
	    (st = as_rubric_error(fl_json_get_string(file, "", r->doc, "title", 0, &r->title))) ||
	    (st = as_rubric_error(fl_json_get_string(file, "", r->doc, "description", 0, &r->description))))
		goto fail;
	if (!r->title)
		r->title = r->name;
	r->scenarios = cJSON_GetObjectItemCaseSensitive(r->doc, "scenarios");
	if (r->scenarios) {
		int good = cJSON_IsArray(r->scenarios);
		const cJSON *s;
		cJSON_ArrayForEach(s, r->scenarios) good &= cJSON_IsString(s);
		if (!good) {
			st = fl_error(FL_EINTERNAL, "rubric '%s': scenarios: expected an array of scenario names", file);
			goto fail;
		}
	}
	const cJSON *qs = cJSON_GetObjectItemCaseSensitive(r->doc, "questions");
	if (!cJSON_IsArray(qs) || cJSON_GetArraySize(qs) == 0) {
		st = fl_error(FL_EINTERNAL, "rubric '%s': questions: expected a non-empty array of questions", file);
		goto fail;
	}
	r->n = (size_t)cJSON_GetArraySize(qs);
	r->q = calloc(r->n, sizeof(*r->q));
	if (!r->q)
		abort();
	size_t i = 0;
	const cJSON *j;
	cJSON_ArrayForEach(j, qs) {
		if ((st = load_question(r, i, j)))
			goto fail;
		r->max_points += r->q[i].points;
		i++;
	}
	/* ids and answer keys must not collide: an answer key selects one question */
	for (size_t a = 0; a < r->n; a++)
		for (size_t b = 0; b <= a; b++)
			for (size_t ka = 0; ka < r->q[a].n_keys; ka++)
				for (size_t kb = 0; kb < r->q[b].n_keys; kb++) {
					if ((a == b && kb >= ka) || strcmp(r->q[a].keys[ka], r->q[b].keys[kb]) != 0)
						continue;
					st = fl_error(FL_EINTERNAL, "rubric '%s': questions[%zu]: answer key '%s' is also a key of "
						      "questions[%zu], expected each key once", file, a, r->q[a].keys[ka], b);
					goto fail;
				}
	return FL_OK;
fail:
	fl_rubric_release(r);
	return st;
}

void fl_rubric_release(struct fl_rubric *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct fl_question *q = &r->q[i];
		if (q->kind && q->kind->release)
			q->kind->release(q);
		for (size_t k = 0; k < q->n_keys; k++)
			free(q->keys[k]);
		free(q->keys);
		free(q->tiers);
		free(q->id);
		fl_matcher_release(&q->concepts);
	}
	free(r->q);
	cJSON_Delete(r->doc);
	free(r->path);
	free(r->name_in_messages);
	memset(r, 0, sizeof(*r));
}
