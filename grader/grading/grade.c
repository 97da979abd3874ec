#include "grader/grading/grade.h"
#include "grader/analysis/device_metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonutil.h"
#include "common/sha256.h"
#include "grader/analysis/host_metrics.h"
#include "grader/grading/refs.h"
#include "grader/trace/trace_reader.h"
#include "grader/grading/units.h"

#ifndef FL_SOURCE_DIR
#define FL_SOURCE_DIR "."
#endif

static char *xstrdup(const char *s)
{
	char *r = strdup(s ? s : "");
	if (!r)
		abort();
	return r;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* dir of path joined with name (malloc'd) */
static char *beside(const char *path, const char *name)
{
	const char *s = strrchr(path, '/');
	size_t dl = s ? (size_t)(s - path + 1) : 0, l = dl + strlen(name) + 1;
	char *r = malloc(l);
	if (!r)
		abort();
	snprintf(r, l, "%.*s%s", (int)dl, path, name);
	return r;
}

static char *join(const char *dir, const char *name)
{
	size_t l = strlen(dir) + strlen(name) + 2;
	char *r = malloc(l);
	if (!r)
		abort();
	snprintf(r, l, "%s/%s", dir, name);
	return r;
}

static void push(char ***arr, size_t *n, char *s)
{
	char **a = realloc(*arr, (*n + 1) * sizeof(char *));
	if (!a)
		abort();
	*arr = a;
	a[(*n)++] = s;
}

void fl_grade_fail(struct fl_grade *g, enum fl_grade_state state, const char *msg)
{
	g->state = state;
	free(g->error);
	g->error = xstrdup(msg);
}

double fl_grade_fraction(const struct fl_grade *g)
{
	if (g->state != FL_GRADE_GRADED || !(g->max_score > 0))
		return 0;
	double f = g->score / g->max_score;
	return f < 0 ? 0 : f > 1 ? 1 : f;
}

static enum fl_status config_error(struct fl_grade *g, enum fl_status st)
{
	fl_grade_fail(g, FL_GRADE_CONFIG_ERROR, fl_error_msg());
	return st ? FL_GRADE_ECONFIG : st;
}

/* ---- truth, rubric, trace ---- */

static enum fl_status load_truth(struct fl_grade *g, const char *path)
{
	enum fl_status st = fl_json_load(path, &g->truth);
	if (st)
		return fl_error_prefix(FL_GRADE_ECONFIG, "truth: ");
	const char *file = g->truth_name, *schema = NULL;
	if (!cJSON_IsObject(g->truth))
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': expected an object", file);
	if ((st = fl_json_get_string(file, "", g->truth, "schema", 1, &schema)))
		return fl_error_prefix(FL_GRADE_ECONFIG, "truth ");
	if (strncmp(schema, "faultline.truth/", 16) != 0 || atoi(schema + 16) != 1)
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': schema: '%s' is not supported, expected faultline.truth/1",
				file, schema);
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(g->truth, "scenario");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(sc, "name");
	if (cJSON_IsString(name))
		g->scenario = xstrdup(name->valuestring);
	return FL_OK;
}

static enum fl_status find_rubric(struct fl_grade *g, const struct fl_grade_opts *o, char **out)
{
	if (o->rubric_path) {
		*out = xstrdup(o->rubric_path);
		return FL_OK;
	}
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(g->truth, "scenario");
	const cJSON *rn = cJSON_GetObjectItemCaseSensitive(sc, "rubric");
	if (!cJSON_IsString(rn) || !*rn->valuestring)
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': scenario.rubric: missing, expected a rubric name (or give --rubric)",
				g->truth_name);
	const char *name = rn->valuestring;
	if (strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, "."))
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': scenario.rubric: '%s' is not a file name, expected a name "
				"such as r7-starved.rubric.json", g->truth_name, name);
	char *cand[3] = {beside(o->truth_path, name),
			 o->scenarios_dir ? join(o->scenarios_dir, name) : join("scenarios", name),
			 o->scenarios_dir ? NULL : join(FL_SOURCE_DIR "/scenarios", name)};
	*out = NULL;
	for (int i = 0; i < 3; i++) {
		if (!*out && cand[i] && access(cand[i], R_OK) == 0)
			*out = cand[i];
		else
			free(cand[i]);
	}
	if (!*out)
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': scenario.rubric: rubric '%s' not found beside the truth or "
				"in the scenarios directory (give --rubric)", g->truth_name, name);
	return FL_OK;
}

/* Device analyses (HTA's definitions) over every trace the truth lists, one per
 * rank, merged into the trace metrics: trace:temporal.idle_pct, trace:overlap.
 * comm_comp_pct, trace:straggler.rank, trace:ranks.1.temporal.compute_us ... */
static enum fl_status add_device_metrics(struct fl_grade *g)
{
	const cJSON *traces = cJSON_GetObjectItemCaseSensitive(g->truth, "traces");
	size_t n = (size_t)cJSON_GetArraySize(traces);
	char **paths = calloc(n ? n : 1, sizeof(char *));
	enum fl_status st = FL_OK;
	cJSON *dm = NULL;
	if (!paths)
		abort();
	for (size_t i = 0; i < n; i++) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(traces, (int)i), "file");
		if (!cJSON_IsString(f) || strchr(f->valuestring, '/')) {
			st = fl_error(FL_GRADE_ECONFIG, "truth '%s': traces[%zu].file: expected the trace's file name",
				      g->truth_name, i);
			goto out;
		}
		paths[i] = beside(g->truth_path, f->valuestring);
		const cJSON *sha = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(traces, (int)i), "sha256");
		char hash[65];
		if (cJSON_IsString(sha) && (fl_sha256_file(paths[i], hash) || strcmp(hash, sha->valuestring) != 0)) {
			st = fl_error(FL_GRADE_ECONFIG, "trace '%s' does not match truth '%s' (traces[%zu].sha256 differs "
				      "or the file cannot be read)", f->valuestring, g->truth_name, i);
			goto out;
		}
	}
	struct fl_dm_opts o = FL_DM_OPTS_INIT;
	if ((st = fl_device_metrics((const char *const *)paths, n, &o, &dm))) {
		st = fl_error_prefix(FL_GRADE_ECONFIG, "traces of truth '%s': ", g->truth_name);
		goto out;
	}
	for (cJSON *it = dm->child; it;) {
		cJSON *next = it->next;
		if (!cJSON_GetObjectItemCaseSensitive(g->trace_metrics, it->string))
			cJSON_AddItemToObject(g->trace_metrics, it->string, cJSON_DetachItemViaPointer(dm, it));
		it = next;
	}
out:
	cJSON_Delete(dm);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return st;
}

/* trace: references read the metrics of the truth's traces, computed now. */
static enum fl_status trace_metrics(void *arg, const cJSON **metrics)
{
	struct fl_grade *g = arg;
	if (g->trace_metrics) {
		*metrics = g->trace_metrics;
		return FL_OK;
	}
	const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g->truth, "traces"), 0);
	const cJSON *file = cJSON_GetObjectItemCaseSensitive(t0, "file");
	const cJSON *sha = cJSON_GetObjectItemCaseSensitive(t0, "sha256");
	if (!cJSON_IsString(file) || strchr(file->valuestring, '/'))
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': traces[0].file: expected the trace's file name",
				g->truth_name);
	char *path = beside(g->truth_path, file->valuestring);
	enum fl_status st;
	if (cJSON_IsString(sha)) {
		char hash[65];
		if ((st = fl_sha256_file(path, hash))) {
			st = fl_error_prefix(FL_GRADE_ECONFIG, "trace '%s' (traces[0].file of truth '%s'): ",
					     file->valuestring, g->truth_name);
			goto out;
		}
		if (strcmp(hash, sha->valuestring) != 0) {
			st = fl_error(FL_GRADE_ECONFIG, "trace '%s' does not match truth '%s' (traces[0].sha256 differs)",
				      file->valuestring, g->truth_name);
			goto out;
		}
	}
	struct fl_trace t;
	if ((st = fl_trace_read(path, &t))) {
		st = fl_error_prefix(FL_GRADE_ECONFIG, "trace of truth '%s': ", g->truth_name);
		goto out;
	}
	struct fl_host_metrics m;
	fl_host_metrics_compute(&t, &m);
	g->trace_metrics = fl_host_metrics_json(&m);
	fl_host_metrics_release(&m);
	fl_trace_release(&t);
	if ((st = add_device_metrics(g)))
		goto out;
	*metrics = g->trace_metrics;
out:
	free(path);
	return st;
}

static const char *shape_of(const cJSON *v)
{
	return cJSON_IsNumber(v) ? "a number" : cJSON_IsString(v) ? "text" : fl_json_type_name(v);
}

/* Resolve one spec element: an expression, or a literal. */
static enum fl_status resolve_one(struct fl_ref_ctx *ctx, const cJSON *spec, cJSON **out)
{
	if (cJSON_IsString(spec) && fl_ref_is_expression(spec->valuestring))
		return fl_ref_eval(spec->valuestring, ctx, out);
	*out = cJSON_Duplicate(spec, 1);
	if (!*out)
		abort();
	return FL_OK;
}

/* Expected values: an array spec resolves element-wise, arrays among the
 * results are flattened one level. */
static enum fl_status resolve_expected(struct fl_grade *g, const struct fl_question *q, cJSON **out)
{
	struct fl_ref_ctx ctx = {.truth = g->truth, .truth_name = g->truth_name, .trace_metrics = trace_metrics, .arg = g,
				 .fleet_metrics = fl_grade_fleet_metrics};
	const char *file = g->rubric.name_in_messages;
	enum fl_status st = FL_OK;
	*out = NULL;
	if (!q->expected)
		return FL_OK;
	if (!cJSON_IsArray(q->expected)) {
		st = resolve_one(&ctx, q->expected, out);
	} else {
		cJSON *arr = cJSON_CreateArray();
		const cJSON *e;
		cJSON_ArrayForEach(e, q->expected) {
			cJSON *v = NULL;
			if ((st = resolve_one(&ctx, e, &v)))
				break;
			if (cJSON_IsArray(v)) {
				cJSON *x;
				while ((x = cJSON_DetachItemFromArray(v, 0)))
					cJSON_AddItemToArray(arr, x);
				cJSON_Delete(v);
			} else {
				cJSON_AddItemToArray(arr, v);
			}
		}
		*out = arr;
	}
	if (st) {
		cJSON_Delete(*out);
		*out = NULL;
		return fl_error_prefix(FL_GRADE_ECONFIG, "rubric '%s': questions[%zu].expected: ", file, q->index);
	}
	const char *why = q->kind->check_expected ? q->kind->check_expected(q, *out) : NULL;
	if (why) {
		const char *spec = cJSON_IsString(q->expected) ? q->expected->valuestring : "(array)";
		st = fl_error(FL_GRADE_ECONFIG, "rubric '%s': questions[%zu].expected: '%s' gives %s in truth '%s', expected %s "
			      "for a %s question", file, q->index, spec, shape_of(*out), g->truth_name, why, q->kind->name);
		cJSON_Delete(*out);
		*out = NULL;
	}
	return st;
}

/* ---- grading ---- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static enum fl_status judge_all(struct fl_grade *g, struct fl_answer *ans, cJSON **expected)
{
	g->items = calloc(g->rubric.n, sizeof(*g->items));
	if (!g->items)
		abort();
	g->n = g->rubric.n;
	size_t answered = 0;
	for (size_t i = 0; i < g->rubric.n; i++) {
		const struct fl_question *q = &g->rubric.q[i];
		struct fl_grade_item *it = &g->items[i];
		it->q = q;
		struct fl_answer_item *a = NULL;
		for (size_t k = 0; k < q->n_keys; k++) {
			struct fl_answer_item *x = fl_answer_find(ans, q->keys[k]);
			if (!x)
				continue;
			if (a) {
				char msg[512];
				snprintf(msg, sizeof(msg), "%s: the answer gives both '%s' and '%s'; give one", q->id, a->key,
					 x->key);
				push(&g->format_errors, &g->n_format_errors, xstrdup(msg));
				x->used = 1;
				continue;
			}
			a = x;
		}
		if (!a) {
			it->v.outcome = FL_OUT_MISSING;
			strbuf_addf(&it->v.feedback, "no answer (expected the key '%s').", q->id);
		} else {
			a->used = 1;
			answered++;
			it->answer_key = xstrdup(a->key);
			struct fl_judge_ctx c = {.q = q, .expected = expected[i], .truth = g->truth};
			q->kind->judge(&c, a, &it->v);
			if (it->v.outcome == FL_OUT_FORMAT) {
				struct strbuf m = STRBUF_INIT;
				strbuf_addf(&m, "%s: %s", q->id, it->v.feedback.buf ? it->v.feedback.buf : "cannot be read");
				push(&g->format_errors, &g->n_format_errors, m.buf);
			}
		}
		const char *extra = q->feedback[it->v.outcome];
		if (extra)
			strbuf_addf(&it->v.feedback, " %s", extra);
		it->score = round(q->points * it->v.credit * 1e6) / 1e6;
	}
	for (size_t i = 0; i < ans->n; i++)
		if (!ans->items[i].used)
			push(&g->ignored_keys, &g->n_ignored, fl_clean_text(ans->items[i].key, 40));
	if (!answered && !g->n_format_errors) {
		struct strbuf m = STRBUF_INIT;
		strbuf_addf(&m, "answer '%s': none of its keys answers a question of this exercise; expected keys: ",
			    ans->name);
		for (size_t i = 0; i < g->rubric.n; i++)
			strbuf_addf(&m, "%s%s", i ? ", " : "", g->rubric.q[i].id);
		push(&g->format_errors, &g->n_format_errors, m.buf);
	}
	if (g->n_format_errors) {
		g->state = FL_GRADE_UNPARSEABLE;
		return fl_error(FL_GRADE_EANSWER, "answer '%s' could not be read: %s%s", ans->name, g->format_errors[0],
				g->n_format_errors > 1 ? " (and more)" : "");
	}
	for (size_t i = 0; i < g->n; i++)
		g->score += g->items[i].score;
	g->score = round(g->score * 1e6) / 1e6;
	g->state = FL_GRADE_GRADED;
	return FL_OK;
}

enum fl_status fl_grade_run(const struct fl_grade_opts *o, struct fl_grade *g)
{
	double t0 = now_s();
	memset(g, 0, sizeof(*g));
	g->reveal = o->reveal;
	g->truth_name = xstrdup(base_name(o->truth_path));
	g->answer_name = xstrdup(base_name(o->answer_path));
	g->truth_path = xstrdup(o->truth_path);
	char *rubric_path = NULL;
	cJSON **expected = NULL;
	struct fl_answer ans = {0};
	enum fl_status st;
	if ((st = load_truth(g, o->truth_path)) || (st = find_rubric(g, o, &rubric_path))) {
		st = config_error(g, st);
		goto out;
	}
	g->rubric_name = xstrdup(base_name(rubric_path));
	if ((st = fl_rubric_load(rubric_path, &g->rubric))) {
		st = config_error(g, st);
		goto out;
	}
	g->have_rubric = 1;
	g->max_score = g->rubric.max_points;
	if (g->rubric.scenarios && g->scenario) {
		int ok = 0;
		const cJSON *s;
		cJSON_ArrayForEach(s, g->rubric.scenarios) ok |= !strcmp(s->valuestring, g->scenario);
		if (!ok) {
			st = config_error(g, fl_error(FL_GRADE_ECONFIG, "rubric '%s': scenarios: does not list '%s', the "
						     "scenario of truth '%s'", g->rubric_name, g->scenario, g->truth_name));
			goto out;
		}
	}
	expected = calloc(g->rubric.n, sizeof(*expected));
	if (!expected)
		abort();
	for (size_t i = 0; i < g->rubric.n; i++)
		if ((st = resolve_expected(g, &g->rubric.q[i], &expected[i]))) {
			st = config_error(g, st);
			goto out;
		}
	if ((st = fl_answer_load(o->answer_path, &ans))) {
		g->state = FL_GRADE_UNPARSEABLE;
		push(&g->format_errors, &g->n_format_errors, xstrdup(fl_error_msg()));
		st = FL_GRADE_EANSWER;
		goto out;
	}
	st = judge_all(g, &ans, expected);
out:
	for (size_t i = 0; expected && i < g->rubric.n; i++)
		cJSON_Delete(expected[i]);
	free(expected);
	fl_answer_release(&ans);
	free(rubric_path);
	g->elapsed_s = now_s() - t0;
	return st;
}

void fl_grade_release(struct fl_grade *g)
{
	for (size_t i = 0; i < g->n; i++) {
		fl_verdict_release(&g->items[i].v);
		free(g->items[i].answer_key);
	}
	free(g->items);
	for (size_t i = 0; i < g->n_format_errors; i++)
		free(g->format_errors[i]);
	free(g->format_errors);
	for (size_t i = 0; i < g->n_ignored; i++)
		free(g->ignored_keys[i]);
	free(g->ignored_keys);
	if (g->have_rubric)
		fl_rubric_release(&g->rubric);
	cJSON_Delete(g->truth);
	cJSON_Delete(g->trace_metrics);
	cJSON_Delete(g->fleet_metrics);
	free(g->truth_name);
	free(g->answer_name);
	free(g->rubric_name);
	free(g->truth_path);
	free(g->scenario);
	free(g->error);
	memset(g, 0, sizeof(*g));
}
