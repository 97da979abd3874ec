#include "grader/grading/grade.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonutil.h"
#include "common/sha256.h"
#include "common/strbuf.h"
#include "grader/analysis/device_metrics.h"
#include "grader/analysis/host_metrics.h"
#include "grader/grading/refs.h"
#include "grader/grading/units.h"
#include "grader/trace/trace_events.h"

#ifndef FL_SOURCE_DIR
#define FL_SOURCE_DIR "."
#endif

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
	g->error = fl_xstrdup(msg);
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
		g->scenario = fl_xstrdup(name->valuestring);
	return FL_OK;
}

/* dir/name, or dir/SUB/name for a subdirectory SUB (scenarios/emu/...); NULL
 * when none is readable. */
static char *in_scenarios(const char *dir, const char *name)
{
	char *p = join(dir, name);
	if (access(p, R_OK) == 0)
		return p;
	free(p);
	p = NULL;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && !p && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *sub = join(dir, e->d_name);
		struct stat sb;
		if (stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			p = join(sub, name);
			if (access(p, R_OK) != 0) {
				free(p);
				p = NULL;
			}
		}
		free(sub);
	}
	if (d)
		closedir(d);
	return p;
}

static enum fl_status find_rubric(struct fl_grade *g, const struct fl_grade_opts *o, char **out)
{
	if (o->rubric_path) {
		*out = fl_xstrdup(o->rubric_path);
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
	*out = beside(o->truth_path, name);
	if (access(*out, R_OK) == 0)
		return FL_OK;
	free(*out);
	*out = NULL;
	const char *bases[2] = {o->scenarios_dir ? o->scenarios_dir : "scenarios",
				o->scenarios_dir ? NULL : FL_SOURCE_DIR "/scenarios"};
	for (int i = 0; i < 2 && !*out; i++)
		if (bases[i])
			*out = in_scenarios(bases[i], name);
	if (!*out)
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': scenario.rubric: rubric '%s' not found beside the truth or "
				"in the scenarios directory or a folder of it (give --rubric)", g->truth_name, name);
	return FL_OK;
}

/* A trace the truth lists does not match its hash: the message names it. */
static enum fl_status not_the_trace(const struct fl_grade *g, const char *file, size_t i)
{
	return fl_error(FL_GRADE_ECONFIG, "trace '%s' does not match truth '%s' (traces[%zu].sha256 differs%s)", file,
			g->truth_name, i, i ? " or the file cannot be read" : "");
}

/* trace: references read the metrics of the truth's traces, computed now, in
 * one pass over each trace: the pass hashes it (checked against the truth),
 * collects rank 0's events for the host metrics and feeds the device
 * analyses (HTA's definitions) over every rank: trace:steps.p50_ms,
 * trace:temporal.idle_pct, trace:overlap.comm_comp_pct, trace:straggler.rank,
 * trace:ranks.1.temporal.compute_us ... */
static enum fl_status trace_metrics(void *arg, const cJSON **metrics)
{
	struct fl_grade *g = arg;
	if (g->trace_metrics) {
		*metrics = g->trace_metrics;
		return FL_OK;
	}
	const cJSON *traces = cJSON_GetObjectItemCaseSensitive(g->truth, "traces");
	size_t n = (size_t)cJSON_GetArraySize(traces);
	if (!n)
		return fl_error(FL_GRADE_ECONFIG, "truth '%s': traces[0].file: expected the trace's file name",
				g->truth_name);
	char **paths = calloc(n, sizeof(char *));
	const char **files = calloc(n, sizeof(char *));
	if (!paths || !files)
		abort();
	enum fl_status st = FL_OK;
	struct fl_trace host;
	struct fl_dm_job *job = NULL;
	cJSON *dm = NULL;
	memset(&host, 0, sizeof(host));
	for (size_t i = 0; i < n; i++) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(traces, (int)i), "file");
		if (!cJSON_IsString(f) || strchr(f->valuestring, '/')) {
			st = fl_error(FL_GRADE_ECONFIG, "truth '%s': traces[%zu].file: expected the trace's file name",
				      g->truth_name, i);
			goto out;
		}
		files[i] = f->valuestring;
		paths[i] = g->traces_dir ? join(g->traces_dir, f->valuestring) : beside(g->truth_path, f->valuestring);
	}
	struct fl_dm_opts o = FL_DM_OPTS_INIT;
	o.sha256 = 1;
	o.host0 = &host;
	if ((st = fl_dm_load((const char *const *)paths, n, &o, &job))) {
		/* unreadable: say first whether it is the truth's trace at all, as a
		 * check of the hash before reading would have */
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", fl_error_msg());
		for (size_t i = 0; i < n; i++) {
			const cJSON *sha = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(traces, (int)i), "sha256");
			char hash[65];
			if (!cJSON_IsString(sha))
				continue;
			if (fl_sha256_file(paths[i], hash)) {
				st = i ? not_the_trace(g, files[i], i)
				       : fl_error(FL_GRADE_ECONFIG, "trace '%s' (traces[0].file of truth '%s'): %s", files[i],
						  g->truth_name, fl_error_msg());
				goto out;
			}
			if (strcmp(hash, sha->valuestring) != 0) {
				st = not_the_trace(g, files[i], i);
				goto out;
			}
		}
		st = fl_error(FL_GRADE_ECONFIG, "trace%s of truth '%s': %s", n > 1 ? "s" : "", g->truth_name, msg);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const cJSON *sha = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(traces, (int)i), "sha256");
		const char *got = fl_dm_sha256(job, i);
		if (cJSON_IsString(sha) && (!got || strcmp(got, sha->valuestring) != 0)) {
			st = not_the_trace(g, files[i], i);
			goto out;
		}
	}
	struct fl_host_metrics m;
	fl_host_metrics_compute(&host, &m);
	g->trace_metrics = fl_host_metrics_json(&m);
	fl_host_metrics_release(&m);
	dm = fl_device_metrics_json(job);
	for (cJSON *it = dm->child; it;) {
		cJSON *next = it->next;
		if (!cJSON_GetObjectItemCaseSensitive(g->trace_metrics, it->string))
			cJSON_AddItemToObject(g->trace_metrics, it->string, cJSON_DetachItemViaPointer(dm, it));
		it = next;
	}
	*metrics = g->trace_metrics;
out:
	cJSON_Delete(dm);
	fl_dm_free(job);
	fl_trace_release(&host);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(files);
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
				 .fleet_metrics = fl_grade_fleet_metrics, .diagnosis = fl_grade_diagnosis};
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
				push(&g->format_errors, &g->n_format_errors, fl_xstrdup(msg));
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
			it->answer_key = fl_xstrdup(a->key);
			struct fl_judge_ctx c = {.q = q, .expected = expected[i], .truth = g->truth, .strict = g->strict};
			q->kind->judge(&c, a, &it->v);
			it->unreadable = it->v.outcome == FL_OUT_FORMAT ||
					 (it->v.notes.buf && !strncmp(it->v.notes.buf, "unreadable value", 16));
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

/* Truth, rubric and every expected value: everything that does not depend on
 * the answer. On an error g is in the config-error state. */
static enum fl_status prepare(const struct fl_grade_opts *o, struct fl_grade *g, cJSON ***expected_out)
{
	memset(g, 0, sizeof(*g));
	g->reveal = o->reveal;
	g->strict = o->strict;
	g->truth_name = fl_xstrdup(fl_base_name(o->truth_path));
	g->answer_name = fl_xstrdup(o->answer_path ? fl_base_name(o->answer_path) : "");
	g->truth_path = fl_xstrdup(o->truth_path);
	g->traces_dir = o->traces_dir ? fl_xstrdup(o->traces_dir) : NULL;
	char *rubric_path = NULL;
	cJSON **expected = NULL;
	enum fl_status st;
	*expected_out = NULL;
	if ((st = load_truth(g, o->truth_path)) || (st = find_rubric(g, o, &rubric_path))) {
		st = config_error(g, st);
		goto out;
	}
	g->rubric_name = fl_xstrdup(fl_base_name(rubric_path));
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
	expected = calloc(g->rubric.n ? g->rubric.n : 1, sizeof(*expected));
	if (!expected)
		abort();
	for (size_t i = 0; i < g->rubric.n; i++)
		if ((st = resolve_expected(g, &g->rubric.q[i], &expected[i]))) {
			st = config_error(g, st);
			goto out;
		}
out:
	*expected_out = expected;
	free(rubric_path);
	return st;
}

static void free_expected(cJSON **expected, size_t n)
{
	for (size_t i = 0; expected && i < n; i++)
		cJSON_Delete(expected[i]);
	free(expected);
}

static enum fl_status grade_answer(struct fl_grade *g, cJSON **expected, const char *answer_path)
{
	struct fl_answer ans = {0};
	enum fl_status st;
	if ((st = fl_answer_load(answer_path, &ans))) {
		g->state = FL_GRADE_UNPARSEABLE;
		push(&g->format_errors, &g->n_format_errors, fl_xstrdup(fl_error_msg()));
		st = FL_GRADE_EANSWER;
	} else {
		st = judge_all(g, &ans, expected);
	}
	fl_answer_release(&ans);
	return st;
}

enum fl_status fl_grade_run(const struct fl_grade_opts *o, struct fl_grade *g)
{
	double t0 = now_s();
	cJSON **expected = NULL;
	enum fl_status st = prepare(o, g, &expected);
	if (!st)
		st = grade_answer(g, expected, o->answer_path);
	free_expected(expected, g->rubric.n);
	g->elapsed_s = now_s() - t0;
	return st;
}

/* ---- a truth prepared once, many answers ---- */

struct fl_grade_key {
	struct fl_grade base; /* the prepared truth and rubric, or the config error */
	cJSON **expected;
	enum fl_status st;
};

enum fl_status fl_grade_key_load(const struct fl_grade_opts *o, struct fl_grade_key **out)
{
	struct fl_grade_key *k = calloc(1, sizeof(*k));
	if (!k)
		abort();
	k->st = prepare(o, &k->base, &k->expected);
	if (k->st && !k->base.error)
		fl_grade_fail(&k->base, FL_GRADE_CONFIG_ERROR, fl_error_msg());
	*out = k;
	return k->st;
}

enum fl_status fl_grade_key_status(const struct fl_grade_key *k, const char **msg)
{
	if (msg)
		*msg = k->base.error;
	return k->st;
}

enum fl_status fl_grade_with(const struct fl_grade_key *k, const char *answer_path, struct fl_grade *g)
{
	double t0 = now_s();
	const struct fl_grade *b = &k->base;
	memset(g, 0, sizeof(*g));
	g->shared = 1;
	g->reveal = b->reveal;
	g->strict = b->strict;
	g->truth_name = fl_xstrdup(b->truth_name);
	g->answer_name = fl_xstrdup(fl_base_name(answer_path));
	g->truth_path = fl_xstrdup(b->truth_path);
	g->traces_dir = b->traces_dir ? fl_xstrdup(b->traces_dir) : NULL;
	g->scenario = b->scenario ? fl_xstrdup(b->scenario) : NULL;
	g->rubric_name = b->rubric_name ? fl_xstrdup(b->rubric_name) : NULL;
	g->truth = b->truth;
	g->trace_metrics = b->trace_metrics;
	g->fleet_metrics = b->fleet_metrics;
	g->diagnosis = b->diagnosis;
	g->rubric = b->rubric;
	g->have_rubric = b->have_rubric;
	g->max_score = b->max_score;
	enum fl_status st;
	if (k->st) {
		fl_grade_fail(g, FL_GRADE_CONFIG_ERROR, b->error ? b->error : "truth or rubric error");
		st = fl_error(k->st, "%s", g->error);
	} else {
		st = grade_answer(g, k->expected, answer_path);
	}
	g->elapsed_s = now_s() - t0;
	return st;
}

void fl_grade_key_free(struct fl_grade_key *k)
{
	if (!k)
		return;
	free_expected(k->expected, k->base.rubric.n);
	fl_grade_release(&k->base);
	free(k);
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
	if (!g->shared) { /* else the key's (fl_grade_with) */
		if (g->have_rubric)
			fl_rubric_release(&g->rubric);
		cJSON_Delete(g->truth);
		cJSON_Delete(g->trace_metrics);
		cJSON_Delete(g->fleet_metrics);
		cJSON_Delete(g->diagnosis);
	}
	free(g->truth_name);
	free(g->answer_name);
	free(g->rubric_name);
	free(g->truth_path);
	free(g->traces_dir);
	free(g->scenario);
	free(g->error);
	memset(g, 0, sizeof(*g));
}
