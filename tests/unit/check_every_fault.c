/* check_every_fault.c — every fault of the registry, none named here.
 *
 * For each registered fault: its family and fix are IDs of the grader's
 * vocabulary; its numeric defaults lie in their ranges; what it says it needs
 * (backends, training, ranks) makes sense; and a small smoke scenario at its
 * defaults runs on each backend it supports (cuda only where a GPU opens,
 * multi-rank runs under mpirun), reports at least one recorded instance in the
 * truth, shows the spans it declared in the trace, and leaves no fault name,
 * family, fix or parameter name in the trace. On a backend of this build it
 * does not support, init refuses the run (exit 2).
 *
 * The runs go through the faultline binary beside this test, as a user's do.
 */
#define _GNU_SOURCE
#include <check.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/outfile.h"
#include "faults/fault.h"
#include "generator/harness.h"
#include "generator/scenario.h"
#include "grader/grading/vocab.h"
#include "runtime/comm.h"
#include "runtime/device.h"
#include "scratch.h"

extern char **environ;

static char faultline_bin[PATH_MAX];

static int n_faults(void)
{
	int n = 0;
	while (fl_faults[n])
		n++;
	return n;
}

static int is_vocabulary_id(const char *vocabulary, const char *id)
{
	const struct fl_vocabulary *v = fl_vocabulary_find(vocabulary);
	ck_assert_msg(v != NULL, "no vocabulary '%s'", vocabulary);
	for (const struct fl_term *t = v->terms; t->id; t++)
		if (strcmp(t->id, id) == 0)
			return 1;
	return 0;
}

/* The i-th space-separated word of list into buf; 0 when there is none. */
static int word(const char *list, int i, char *buf, size_t n)
{
	const char *p = list ? list : "";
	for (int k = 0;; k++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return 0;
		size_t w = strcspn(p, " ");
		if (k == i) {
			snprintf(buf, n, "%.*s", (int)w, p);
			return 1;
		}
		p += w;
	}
}

/* ---- static checks ---- */

START_TEST(family_and_fix_are_vocabulary_ids)
{
	for (size_t i = 0; fl_faults[i]; i++) {
		const struct fl_fault_ops *f = fl_faults[i];
		ck_assert_msg(is_vocabulary_id("families", f->family),
			      "%s: family '%s' is not an ID of the families vocabulary (grader/grading/vocab.c)", f->name,
			      f->family);
		ck_assert_msg(is_vocabulary_id("fixes", f->fix),
			      "%s: fix '%s' is not an ID of the fixes vocabulary (grader/grading/vocab.c)", f->name, f->fix);
		/* the template's placeholders: a fault is never healthy, and it has a fix */
		ck_assert_msg(strcmp(f->family, "healthy") != 0, "%s: family 'healthy' (choose the fault's family)", f->name);
		ck_assert_msg(strcmp(f->fix, "none") != 0, "%s: fix 'none' (choose the fault's fix)", f->name);
	}
}
END_TEST

START_TEST(numeric_defaults_in_range)
{
	for (size_t i = 0; fl_faults[i]; i++) {
		const struct fl_fault_ops *f = fl_faults[i];
		for (size_t k = 0; k < f->n_params; k++) {
			const struct fl_param_spec *p = &f->params[k];
			if (p->type != FL_PARAM_NUMBER && p->type != FL_PARAM_INT)
				continue;
			ck_assert_msg(p->min <= p->max, "%s.%s: empty range [%g, %g]", f->name, p->name, p->min, p->max);
			ck_assert_msg(p->min <= p->def && p->def <= p->max, "%s.%s: default %g outside [%g, %g]", f->name,
				      p->name, p->def, p->min, p->max);
		}
	}
}
END_TEST

START_TEST(needs_make_sense)
{
	for (size_t i = 0; fl_faults[i]; i++) {
		const struct fl_fault_ops *f = fl_faults[i];
		char b[32];
		ck_assert_msg(word(f->backends, 0, b, sizeof(b)), "%s: no backends listed (ops.backends)", f->name);
		ck_assert_msg(f->min_ranks >= 0 && f->min_ranks <= 1024, "%s: min_ranks %d", f->name, f->min_ranks);
		for (int k = 0; word(f->backends, k, b, sizeof(b)); k++) {
			ck_assert(fl_fault_supports(f, b));
			const struct fl_backend_ops *be = fl_backend_find(b);
			/* cuda is built only with the toolkit; any other name must be a backend */
			ck_assert_msg(be || strcmp(b, "cuda") == 0, "%s: backend '%s' does not exist", f->name, b);
			if (!be)
				continue;
			ck_assert_msg(!f->needs_train || be->asynchronous, "%s: needs training, which '%s' cannot run",
				      f->name, b);
			ck_assert_msg(f->min_ranks < 2 || be->allreduce, "%s: needs %d ranks, which '%s' cannot join",
				      f->name, f->min_ranks, b);
		}
		ck_assert(!fl_fault_supports(f, "no-such-backend"));
	}
}
END_TEST

/* ---- smoke runs ---- */

struct shape {
	const char *backend;
	int train, ranks;
	const char *kind; /* workload.kind; NULL: "mlp" */
};

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_msg(f != NULL, "cannot write '%s'", path);
	fputs(text, f);
	fclose(f);
}

/* A small scenario of this shape with `fault` at its defaults (NULL: healthy). */
static void write_scenario(const char *path, const struct shape *sh, const char *fault)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "schema", "faultline.scenario/1");
	cJSON_AddStringToObject(d, "name", "smoke");
	cJSON_AddStringToObject(d, "backend", sh->backend);
	cJSON_AddNumberToObject(d, "ranks", sh->ranks);
	cJSON_AddNumberToObject(d, "seed", 0);
	cJSON *s = cJSON_AddObjectToObject(d, "schedule");
	cJSON_AddNumberToObject(s, "wait", 1);
	cJSON_AddNumberToObject(s, "warmup", 1);
	cJSON_AddNumberToObject(s, "active", 4);
	cJSON *w = cJSON_AddObjectToObject(d, "workload");
	cJSON_AddStringToObject(w, "kind", sh->kind ? sh->kind : "mlp");
	cJSON_AddStringToObject(w, "mode", sh->train ? "train" : "inference");
	cJSON_AddNumberToObject(w, "batch", 8);
	cJSON_AddNumberToObject(w, "dim", 32);
	cJSON_AddNumberToObject(w, "layers", 2);
	cJSON_AddNumberToObject(w, "target_step_ms", 1);
	cJSON_AddStringToObject(w, "allocator", "heap");
	cJSON *fs = cJSON_AddArrayToObject(d, "faults");
	if (fault) {
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "fault", fault);
		cJSON_AddItemToArray(fs, f);
	}
	cJSON *o = cJSON_AddObjectToObject(d, "output");
	cJSON_AddStringToObject(o, "trace", "smoke.json.gz");
	cJSON_AddStringToObject(o, "truth", "smoke.truth.json");
	char *text = cJSON_Print(d);
	write_text(path, text);
	free(text);
	cJSON_Delete(d);
}

/* `faultline run SCENARIO -o OUT` (it starts mpirun itself for several ranks),
 * output to LOG; returns its exit status. */
static int run_faultline(const char *scenario, const char *out, const char *log, const char *spans_file)
{
	setenv("FL_TEST_DECLARED_SPANS", spans_file ? spans_file : "", 1);
	setenv("FL_WATCHDOG_S", "30", 1); /* a hung rank ends the run well inside the test's timeout */
	char *argv[] = {faultline_bin, "run", (char *)scenario, "-o", (char *)out, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	pid_t pid;
	int rc = posix_spawn(&pid, faultline_bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	ck_assert_msg(rc == 0, "cannot start '%s': %s", faultline_bin, strerror(rc));
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len;
	ck_assert_msg(fl_read_file(path, &buf, &len) == FL_OK, "cannot read '%s': %s", path, fl_error_msg());
	return buf;
}

/* The last lines of a log, for a failure message. */
static const char *log_tail(const char *path)
{
	static char tail[600];
	char *text = NULL;
	size_t len = 0;
	tail[0] = '\0';
	if (fl_read_file(path, &text, &len) == FL_OK) {
		snprintf(tail, sizeof(tail), "%s", len > 590 ? text + len - 590 : text);
		free(text);
	}
	return tail;
}

/* Lowercase without spaces, '_' and '-' (as tests/tools/tracecheck.py compares). */
static void norm(const char *s, char *out, size_t n)
{
	size_t k = 0;
	for (; *s && k + 1 < n; s++)
		if (!isspace((unsigned char)*s) && *s != '_' && *s != '-')
			out[k++] = (char)tolower((unsigned char)*s);
	out[k] = '\0';
}

/* ---- what a trace holds ---- */

#define MAX_KEYS 256

struct keyset {
	char *key[MAX_KEYS];
	size_t n;
};

static int keyset_has(const struct keyset *k, const char *key)
{
	for (size_t i = 0; i < k->n; i++)
		if (strcmp(k->key[i], key) == 0)
			return 1;
	return 0;
}

static void keyset_add(struct keyset *k, const char *key)
{
	if (!keyset_has(k, key) && k->n < MAX_KEYS)
		k->key[k->n++] = strdup(key);
}

static void keyset_free(struct keyset *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->key[i]);
	k->n = 0;
}

struct leak_check {
	char forbidden[3][128]; /* normalised name, family, fix */
	const char *trace;
	int leaks;
};

/* Every key into keys; every string value checked against the forbidden words. */
static void walk(const cJSON *j, struct keyset *keys, struct leak_check *lc)
{
	for (const cJSON *c = j ? j->child : NULL; c; c = c->next) {
		if (c->string) {
			keyset_add(keys, c->string);
			if (lc) {
				char nk[256];
				norm(c->string, nk, sizeof(nk));
				for (int w = 0; w < 3; w++)
					if (strstr(nk, lc->forbidden[w]) && lc->leaks++ < 3)
						fprintf(stderr, "%s: key '%s' names the fault\n", lc->trace, c->string);
			}
		}
		if (cJSON_IsString(c) && lc) {
			char nv[512];
			norm(c->valuestring, nv, sizeof(nv));
			for (int w = 0; w < 3; w++)
				if (strstr(nv, lc->forbidden[w]) && lc->leaks++ < 3)
					fprintf(stderr, "%s: value '%s' names the fault\n", lc->trace, c->valuestring);
		}
		walk(c, keys, lc);
	}
}

/* The trace files (*.json.gz) of an output folder: each parsed, in order of name. */
static size_t load_traces(const char *out, cJSON **docs, char names[][PATH_MAX], size_t max)
{
	DIR *d = opendir(out);
	ck_assert_msg(d != NULL, "cannot open '%s'", out);
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		size_t l = strlen(e->d_name);
		if (l < 9 || strcmp(e->d_name + l - 8, ".json.gz") != 0)
			continue;
		snprintf(names[n], PATH_MAX, "%s/%s", out, e->d_name);
		char *text = slurp(names[n]);
		docs[n] = cJSON_Parse(text);
		free(text);
		ck_assert_msg(docs[n] != NULL, "'%s' is not JSON", names[n]);
		n++;
	}
	closedir(d);
	return n;
}

static int has_user_span(const cJSON *doc, const char *name)
{
	const cJSON *ev;
	cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents")) {
		const cJSON *cat = cJSON_GetObjectItemCaseSensitive(ev, "cat"), *nm = cJSON_GetObjectItemCaseSensitive(ev, "name");
		if (cJSON_IsString(cat) && cJSON_IsString(nm) && strcmp(cat->valuestring, "user_annotation") == 0 &&
		    strcmp(nm->valuestring, name) == 0)
			return 1;
	}
	return 0;
}

static void shape_name(const struct shape *sh, char *buf, size_t n)
{
	snprintf(buf, n, "%s-%s-%dr%s%s", sh->backend, sh->train ? "train" : "infer", sh->ranks, sh->kind ? "-" : "",
		 sh->kind ? sh->kind : "");
}

/* The keys of a healthy trace of this shape: what the trace format itself uses.
 * Measured once per shape and kept in the suite's base folder. */
static void baseline_keys(const struct shape *sh, struct keyset *keys)
{
	char nm[64], path[PATH_MAX];
	shape_name(sh, nm, sizeof(nm));
	snprintf(path, sizeof(path), "%s/healthy-%s.keys", base_dir, nm);
	if (access(path, R_OK) != 0) {
		char sc[PATH_MAX], out[PATH_MAX], log[PATH_MAX];
		snprintf(sc, sizeof(sc), "%s/healthy-%s.json", base_dir, nm);
		snprintf(out, sizeof(out), "%s/healthy-%s", base_dir, nm);
		snprintf(log, sizeof(log), "%s/healthy-%s.log", base_dir, nm);
		write_scenario(sc, sh, NULL);
		int rc = run_faultline(sc, out, log, NULL);
		ck_assert_msg(rc == 0, "healthy %s run: exit %d: %s", nm, rc, log_tail(log));
		cJSON *docs[16];
		char names[16][PATH_MAX];
		size_t n = load_traces(out, docs, names, 16);
		ck_assert_uint_ge(n, 1);
		struct keyset all = {0};
		for (size_t i = 0; i < n; i++) {
			walk(docs[i], &all, NULL);
			cJSON_Delete(docs[i]);
		}
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		for (size_t i = 0; i < all.n; i++)
			fprintf(f, "%s\n", all.key[i]);
		fclose(f);
		keyset_free(&all);
	}
	char *text = slurp(path);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		keyset_add(keys, line);
	free(text);
}

static int on_path(const char *prog)
{
	const char *path = getenv("PATH");
	char dir[PATH_MAX], full[PATH_MAX + 64];
	for (const char *p = path ? path : ""; *p;) {
		size_t w = strcspn(p, ":");
		snprintf(dir, sizeof(dir), "%.*s", (int)w, p);
		snprintf(full, sizeof(full), "%s/%s", dir[0] ? dir : ".", prog);
		if (access(full, X_OK) == 0)
			return 1;
		p += w;
		if (*p == ':')
			p++;
	}
	return 0;
}

/* Why a run of this shape cannot happen here (NULL: it can). */
static const char *cannot_run(const struct shape *sh)
{
	static char why[256];
	const struct fl_backend_ops *be = fl_backend_find(sh->backend);
	if (!be) {
		snprintf(why, sizeof(why), "backend '%s' is not built into this faultline", sh->backend);
		return why;
	}
	if (strcmp(sh->backend, "cuda") == 0) {
		struct fl_backend dev = {.ops = be};
		const struct fl_backend_config cfg = {.rank = 0, .world_size = 1, .device = 0};
		if (be->open(&dev, &cfg) != FL_OK) {
			snprintf(why, sizeof(why), "no usable GPU (%s)", fl_error_msg());
			fl_error_clear();
			return why;
		}
		if (be->close)
			be->close(&dev);
	}
	if (sh->ranks > 1 && !FL_COMM_BUILT)
		return "faultline was built without MPI";
	if (sh->ranks > 1 && !on_path("mpirun"))
		return "mpirun is not on PATH";
	return NULL;
}

static struct shape smoke_shape(const struct fl_fault_ops *f, const char *backend)
{
	struct shape sh = {.backend = backend, .train = f->needs_train, .ranks = f->min_ranks > 1 ? f->min_ranks : 1,
			   .kind = f->workload};
	return sh;
}

/* Run the fault at its defaults on `backend` and check the truth and the trace. */
static void smoke_on(const struct fl_fault_ops *f, const char *backend)
{
	struct shape sh = smoke_shape(f, backend);
	char nm[64];
	shape_name(&sh, nm, sizeof(nm));
	const char *why = cannot_run(&sh);
	if (why) {
		fprintf(stderr, "skip  %s on %s: %s\n", f->name, nm, why);
		return;
	}
	char sc[PATH_MAX], out[PATH_MAX], log[PATH_MAX], spans[PATH_MAX];
	tmp_path(sc, sizeof(sc), "smoke.json");
	snprintf(out, sizeof(out), "%s/out-%s", tmpdir, nm);
	snprintf(log, sizeof(log), "%s/out-%s.log", tmpdir, nm);
	snprintf(spans, sizeof(spans), "%s/spans-%s", tmpdir, nm);
	write_scenario(sc, &sh, f->name);
	int rc = run_faultline(sc, out, log, spans);
	ck_assert_msg(rc == 0, "%s on %s at its defaults: exit %d: %s", f->name, nm, rc, log_tail(log));

	/* the truth: at least one instance inside the recorded window */
	char truth_path[PATH_MAX + 32];
	snprintf(truth_path, sizeof(truth_path), "%s/smoke.truth.json", out);
	char *text = slurp(truth_path);
	cJSON *truth = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(truth);
	const cJSON *fa = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(truth, "faults"), 0);
	const cJSON *in;
	int recorded = 0, all = 0;
	cJSON_ArrayForEach(in, cJSON_GetObjectItemCaseSensitive(fa, "instances")) {
		all++;
		recorded += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "recorded"));
	}
	ck_assert_msg(recorded >= 1, "%s on %s: %d instances in the truth, none recorded", f->name, nm, all);
	cJSON_Delete(truth);

	/* the traces: declared spans shown, nothing names the fault */
	cJSON *docs[16];
	char names[16][PATH_MAX];
	size_t n = load_traces(out, docs, names, 16);
	ck_assert_msg(n == (size_t)sh.ranks, "%s on %s: %zu traces for %d ranks", f->name, nm, n, sh.ranks);
	struct keyset base = {0}, keys = {0};
	baseline_keys(&sh, &base);
	struct leak_check lc = {.leaks = 0};
	norm(f->name, lc.forbidden[0], sizeof(lc.forbidden[0]));
	norm(f->family, lc.forbidden[1], sizeof(lc.forbidden[1]));
	norm(f->fix, lc.forbidden[2], sizeof(lc.forbidden[2]));
	for (size_t i = 0; i < n; i++) {
		lc.trace = names[i];
		walk(docs[i], &keys, &lc);
	}
	ck_assert_msg(lc.leaks == 0, "%s on %s: its name, family or fix appears in the trace %d times", f->name, nm,
		      lc.leaks);
	for (size_t k = 0; k < f->n_params; k++)
		ck_assert_msg(!keyset_has(&keys, f->params[k].name) || keyset_has(&base, f->params[k].name),
			      "%s on %s: parameter name '%s' is a key of the trace", f->name, nm, f->params[k].name);
	int n_spans = 0;
	if (access(spans, R_OK) == 0) {
		char *declared = slurp(spans);
		for (char *sp = strtok(declared, "\n"); sp; sp = strtok(NULL, "\n"), n_spans++) {
			int seen = 0;
			for (size_t i = 0; i < n && !seen; i++)
				seen = has_user_span(docs[i], sp);
			ck_assert_msg(seen, "%s on %s: declared span '%s' is not in the trace", f->name, nm, sp);
		}
		free(declared);
	}
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(docs[i]);
	keyset_free(&base);
	keyset_free(&keys);
	fprintf(stderr, "ok    %s on %s: %d recorded instances, %d declared span(s) shown, %zu trace(s) clean\n", f->name,
		nm, recorded, n_spans, n);
}

/* On a backend it does not list, the run is refused at init (exit 2), never run wrong. */
static void refused_on(const struct fl_fault_ops *f, const char *backend)
{
	struct shape sh = smoke_shape(f, backend);
	char nm[64];
	shape_name(&sh, nm, sizeof(nm));
	const char *why = cannot_run(&sh);
	if (why) {
		fprintf(stderr, "skip  %s refused on %s: %s\n", f->name, nm, why);
		return;
	}
	char sc[PATH_MAX], out[PATH_MAX], log[PATH_MAX];
	tmp_path(sc, sizeof(sc), "refused.json");
	snprintf(out, sizeof(out), "%s/refused-%s", tmpdir, nm);
	snprintf(log, sizeof(log), "%s/refused-%s.log", tmpdir, nm);
	write_scenario(sc, &sh, f->name);
	int rc = run_faultline(sc, out, log, NULL);
	ck_assert_msg(rc == 2, "%s on %s, a backend it does not list: exit %d, expected 2 (refused): %s", f->name, nm, rc,
		      log_tail(log));
	fprintf(stderr, "ok    %s refused on %s (exit 2)\n", f->name, nm);
}

START_TEST(smoke_at_defaults)
{
	const struct fl_fault_ops *f = fl_faults[_i];
	char b[32];
	for (int k = 0; word(f->backends, k, b, sizeof(b)); k++)
		smoke_on(f, b);
	for (size_t k = 0; fl_backends[k]; k++)
		if (!fl_fault_supports(f, fl_backends[k]->name) && strcmp(fl_backends[k]->name, "cuda") != 0)
			refused_on(f, fl_backends[k]->name);
}
END_TEST

/* ---- the span rules, enforced by the harness on a fault that breaks them ---- */

static int span_fn_ran;
static void span_fn(void *arg)
{
	(void)arg;
	span_fn_ran = 1;
}

static void runs_undeclared(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	(void)f;
	fl_svc_run_span(ctx->svc, "never-declared", span_fn, NULL);
}

static enum fl_status declares_too_many(struct fl_fault *f, const struct fl_fault_env *env)
{
	(void)f;
	static char names[64][16];
	for (int i = 0; i < 64; i++) {
		snprintf(names[i], sizeof(names[i]), "span-%d", i);
		enum fl_status st = fl_svc_declare_span(env->svc, names[i]);
		if (st)
			return st;
	}
	return FL_OK;
}

static void declares_late(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	(void)f;
	if (fl_svc_declare_span(ctx->svc, "late") == FL_OK)
		fl_svc_run_span(ctx->svc, "late", span_fn, NULL);
}

/* Run a cpu smoke scenario whose one fault has `ops` (with the schema of the
 * first registered fault, so the scenario loads); returns the run's status. */
static enum fl_status run_with_ops(struct fl_fault_ops *ops, char *out, size_t n)
{
	char sc_path[PATH_MAX];
	tmp_path(sc_path, sizeof(sc_path), "rules.json");
	tmp_path(out, n, "rules-out");
	const struct shape sh = {.backend = "cpu", .train = 0, .ranks = 1};
	write_scenario(sc_path, &sh, fl_faults[0]->name);
	struct fl_scenario sc;
	ck_assert_msg(fl_scenario_load(sc_path, &sc) == FL_OK, "%s", fl_error_msg());
	ops->params = fl_faults[0]->params;
	ops->n_params = fl_faults[0]->n_params;
	sc.faults[0].ops = ops;
	struct fl_run_opts o = {.out_dir = out, .quiet = 1};
	struct fl_run_result r;
	span_fn_ran = 0;
	enum fl_status st = fl_run_scenario(&sc, &o, &r);
	if (!st)
		cJSON_Delete(r.metrics);
	fl_scenario_release(&sc);
	return st;
}

#define assert_msg_has(needle)                                                                  \
	ck_assert_msg(strstr(fl_error_msg(), (needle)) != NULL, "error message '%s' lacks '%s'", \
		      fl_error_msg(), (needle))

START_TEST(undeclared_span_fails_the_run)
{
	struct fl_fault_ops ops = {.name = "rule_breaker", .summary = "runs a span it never declared",
				   .family = "healthy", .fix = "none", .backends = "cpu", .step_begin = runs_undeclared};
	char out[PATH_MAX];
	ck_assert_int_eq(run_with_ops(&ops, out, sizeof(out)), FL_EINPUT); /* exit 2 */
	assert_msg_has("rule_breaker");
	assert_msg_has("'never-declared'");
	assert_msg_has("did not declare");
	ck_assert_int_eq(span_fn_ran, 0);
	/* it failed in the first (unrecorded) step: no trace, no truth */
	char trace[PATH_MAX + 32];
	snprintf(trace, sizeof(trace), "%s/smoke.json.gz", out);
	ck_assert_int_ne(access(trace, F_OK), 0);
}
END_TEST

START_TEST(full_span_table_fails_init)
{
	struct fl_fault_ops ops = {.name = "rule_breaker", .summary = "declares more spans than fit",
				   .family = "healthy", .fix = "none", .backends = "cpu", .init = declares_too_many};
	char out[PATH_MAX];
	ck_assert_int_eq(run_with_ops(&ops, out, sizeof(out)), FL_EINPUT);
	assert_msg_has("rule_breaker");
	assert_msg_has("span table is full");
	assert_msg_has("faults[0]");
}
END_TEST

START_TEST(declaring_after_init_fails_the_run)
{
	struct fl_fault_ops ops = {.name = "rule_breaker", .summary = "declares in a step",
				   .family = "healthy", .fix = "none", .backends = "cpu", .step_end = declares_late};
	char out[PATH_MAX];
	ck_assert_int_eq(run_with_ops(&ops, out, sizeof(out)), FL_EINPUT);
	assert_msg_has("rule_breaker");
	assert_msg_has("'late'");
	assert_msg_has("at init");
	ck_assert_int_eq(span_fn_ran, 0);
}
END_TEST

static void base_setup(void) { scratch_base_setup("every-fault"); }

static Suite *every_fault_suite(void)
{
	Suite *s = suite_create("every_fault");
	TCase *tc = tcase_create("registry");
	tcase_add_test(tc, family_and_fix_are_vocabulary_ids);
	tcase_add_test(tc, numeric_defaults_in_range);
	tcase_add_test(tc, needs_make_sense);
	suite_add_tcase(s, tc);

	tc = tcase_create("smoke");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, NULL);
	tcase_add_loop_test(tc, smoke_at_defaults, 0, n_faults());
	suite_add_tcase(s, tc);

	tc = tcase_create("span_rules");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, tmp_setup, NULL);
	tcase_add_test(tc, undeclared_span_fails_the_run);
	tcase_add_test(tc, full_span_table_fails_init);
	tcase_add_test(tc, declaring_after_init_fails_the_run);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* the faultline binary is built beside this test */
	ssize_t n = readlink("/proc/self/exe", faultline_bin, sizeof(faultline_bin) - 16);
	if (n <= 0) {
		perror("check_every_fault: /proc/self/exe");
		return EXIT_FAILURE;
	}
	faultline_bin[n] = '\0';
	char *slash = strrchr(faultline_bin, '/');
	strcpy(slash ? slash + 1 : faultline_bin, "faultline");
	SRunner *sr = srunner_create(every_fault_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
