/* cmd_assign.c — faultline assign: one variant of a scenario per learner of a
 * roster. Each learner's seed is HMAC-SHA256(course secret, learner id), so a
 * learner who knows their own id (and even their seed) cannot compute
 * another's. Each variant is a `faultline run SCENARIO --seed S --vary` in a
 * child process (which starts itself under mpirun for a multi-rank scenario,
 * as run does), into a staging folder; then the traces move to
 * DIR/learners/ID/ under neutral names, the truth (which lists them by those
 * names) to DIR/truths/ID.truth.json, and DIR/roster.csv tells grade --batch
 * where each learner's truth and traces are. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/jsonutil.h"
#include "common/outfile.h"
#include "common/sha256.h"
#include "common/strbuf.h"
#include "generator/scenario.h"
#include "grader/grading/batch.h"

extern char **environ;

const char fl_assign_usage[] =
	"usage: faultline assign SCENARIO --roster ROSTER.csv -o DIR (--secret S | --secret-file F)\n"
	"                        [--steps N] [--backend B] [--ranks N]\n"
	"\n"
	"Runs one variant of the scenario per learner of the roster (a CSV whose\n"
	"header names a learner column, or one id per line). A learner's variant seed\n"
	"is HMAC-SHA256 of the learner id keyed by the course secret: without the\n"
	"secret no one can derive another learner's variant. Writes\n"
	"  DIR/learners/ID/   the learner's traces, neutrally named (trace-HASH.json.gz,\n"
	"                     trace-HASH.rank-K.json.gz; baseline.json.gz when the\n"
	"                     scenario names a baseline): what the learner is given\n"
	"  DIR/truths/        ID.truth.json per learner and the rubric: keep these\n"
	"                     from learners\n"
	"  DIR/roster.csv     learner,answer,truth,traces for 'faultline grade --batch'\n"
	"                     (answers expected at DIR/answers/ID.txt; edit as needed)\n"
	"Progress (learner k of N, ETA) goes to standard error.\n"
	"\n"
	"  --roster FILE      the learners (ids: letters, digits and . _ - + @)\n"
	"  -o, --out DIR      the output directory\n"
	"  --secret S         the course secret (visible in the process list: prefer\n"
	"                     --secret-file)\n"
	"  --secret-file F    a file holding the secret (trailing line breaks ignored)\n"
	"  --steps N          recorded steps per run (default: the scenario's)\n"
	"  --backend B        as for run\n"
	"  --ranks N          as for run\n"
	"\n"
	"Exit: 0 ok; 2 usage, a bad roster (every unusable row named with its line)\n"
	"or scenario; 3 a learner's run failed (its output is shown).\n";

const struct fl_opt fl_assign_opts[] = {
	{.name = "--roster", .kind = FL_OPT_TEXT, .expects = "a CSV file", .flags = FL_OPT_NONEMPTY},
	{.name = "--out", .alias = "-o", .kind = FL_OPT_TEXT, .expects = "a directory", .flags = FL_OPT_NONEMPTY},
	{.name = "--secret", .kind = FL_OPT_TEXT, .expects = "the course secret", .flags = FL_OPT_NONEMPTY},
	{.name = "--secret-file", .kind = FL_OPT_TEXT, .expects = "a file", .flags = FL_OPT_NONEMPTY},
	{.name = "--steps", .kind = FL_OPT_INT, .min = 1, .max = 1000000},
	{.name = "--backend", .kind = FL_OPT_TEXT, .expects = "cpu, emu, cuda or auto"},
	{.name = "--ranks", .kind = FL_OPT_INT, .min = 1, .max = 1024},
	{.name = NULL},
};

#define SEED_MSG "seed\n"  /* HMAC messages: a learner id holds no line break, */
#define NAME_MSG "trace\n" /* so the seed's and the file name's never collide */

struct assign {
	const char *scenario, *out, *steps, *backend, *ranks;
	char *secret;
	size_t secret_len;
	char self[4096];
	char *staging;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void hmac(const struct assign *a, const char *label, const char *id, unsigned char out[32])
{
	struct strbuf m = STRBUF_INIT;
	strbuf_addf(&m, "%s%s", label, id);
	fl_hmac_sha256(a->secret, a->secret_len, m.buf, m.len, out);
	strbuf_release(&m);
}

/* The learner's variant seed: 31 bits of the HMAC (run --seed takes 0..2^31-1). */
static unsigned long learner_seed(const struct assign *a, const char *id)
{
	unsigned char d[32];
	hmac(a, SEED_MSG, id, d);
	return ((unsigned long)d[0] << 24 | (unsigned long)d[1] << 16 | (unsigned long)d[2] << 8 | d[3]) & 0x7fffffffUL;
}

/* 12 hex digits of another HMAC: a neutral file name that says nothing of the seed. */
static void learner_tag(const struct assign *a, const char *id, char tag[13])
{
	unsigned char d[32];
	hmac(a, NAME_MSG, id, d);
	for (int i = 0; i < 6; i++)
		snprintf(tag + 2 * i, 3, "%02x", d[i]);
}

static char *path2(const char *a, const char *b)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s/%s", a, b);
	return sb.buf;
}

static enum fl_status make_dir(const char *p)
{
	if (mkdir(p, 0777) && errno != EEXIST)
		return fl_error(FL_EINPUT, "assign: cannot create directory '%s': %s", p, strerror(errno));
	struct stat s;
	if (stat(p, &s) || !S_ISDIR(s.st_mode))
		return fl_error(FL_EINPUT, "assign: '%s' is not a directory", p);
	return FL_OK;
}

static enum fl_status copy_file(const char *from, const char *to)
{
	char *buf = NULL;
	size_t n = 0;
	enum fl_status st = fl_read_file(from, &buf, &n);
	if (!st && (st = fl_write_file_atomic(to, buf, n)))
		st = fl_error_prefix(FL_ERUNTIME, "assign: ");
	free(buf);
	return st;
}

/* Move a file; a copy when it crosses file systems. */
static enum fl_status move_file(const char *from, const char *to)
{
	if (!rename(from, to))
		return FL_OK;
	if (errno != EXDEV)
		return fl_error(FL_ERUNTIME, "assign: cannot move '%s' to '%s': %s", from, to, strerror(errno));
	enum fl_status st = copy_file(from, to);
	if (!st)
		unlink(from);
	return st;
}

/* The last line of a child's log, for the error message. */
static void log_tail(const char *log, char *out, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	out[0] = '\0';
	if (fl_read_file(log, &buf, &len) || !len) {
		free(buf);
		return;
	}
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	size_t s = len;
	while (s && buf[s - 1] != '\n')
		s--;
	snprintf(out, n, "%.*s", (int)(len - s), buf + s);
	free(buf);
}

/* `faultline run SCENARIO -o OUT [--seed S --vary] [--steps/--backend/--ranks]`,
 * its output in LOG; waits for it. */
static enum fl_status run_child(const struct assign *a, const char *scenario, const char *out, const char *seed,
				const char *log, const char *who)
{
	char *argv[16];
	int k = 0;
	argv[k++] = (char *)"faultline";
	argv[k++] = (char *)"run";
	argv[k++] = (char *)scenario;
	argv[k++] = (char *)"-o";
	argv[k++] = (char *)out;
	if (seed) {
		argv[k++] = (char *)"--seed";
		argv[k++] = (char *)seed;
		argv[k++] = (char *)"--vary";
	}
	const char *pass[3][2] = {{"--steps", a->steps}, {"--backend", a->backend}, {"--ranks", a->ranks}};
	for (int i = 0; i < 3; i++)
		if (pass[i][1]) {
			argv[k++] = (char *)pass[i][0];
			argv[k++] = (char *)pass[i][1];
		}
	argv[k] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_addclose(&fa, 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid;
	int rc = posix_spawn(&pid, a->self, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return fl_error(FL_ERUNTIME, "assign: %s: cannot start '%s run': %s", who, a->self, strerror(rc));
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return FL_OK;
	char tail[1024];
	log_tail(log, tail, sizeof(tail));
	if (WIFEXITED(status))
		return fl_error(FL_ERUNTIME, "assign: %s: the run failed (exit %d): %s", who, WEXITSTATUS(status),
				*tail ? tail : "(no output)");
	return fl_error(FL_ERUNTIME, "assign: %s: the run was killed by signal %d", who, WTERMSIG(status));
}

/* The one truth a run wrote into dir (its name is the scenario's). */
static enum fl_status find_truth(const char *dir, const char *who, char **out)
{
	DIR *d = opendir(dir);
	*out = NULL;
	if (!d)
		return fl_error(FL_ERUNTIME, "assign: %s: cannot open '%s': %s", who, dir, strerror(errno));
	struct dirent *e;
	while ((e = readdir(d)) && !*out) {
		size_t l = strlen(e->d_name);
		if (l > 11 && !strcmp(e->d_name + l - 11, ".truth.json"))
			*out = path2(dir, e->d_name);
	}
	closedir(d);
	return *out ? FL_OK : fl_error(FL_ERUNTIME, "assign: %s: the run wrote no truth into '%s'", who, dir);
}

/* traces[i].file: the file name the run gave it, checked (no '/'). */
static enum fl_status trace_file(const cJSON *truth, int i, const char *who, const char **file, int *rank)
{
	const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(truth, "traces"), i);
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "file");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(t, "rank");
	if (!cJSON_IsString(f) || !*f->valuestring || strchr(f->valuestring, '/') || !strcmp(f->valuestring, ".."))
		return fl_error(FL_EINTERNAL, "assign: %s: the run's truth: traces[%d].file: expected a file name", who, i);
	*file = f->valuestring;
	*rank = cJSON_IsNumber(r) ? r->valueint : i;
	return FL_OK;
}

static const char *trace_ext(const char *file)
{
	size_t l = strlen(file);
	return l > 8 && !strcmp(file + l - 8, ".json.gz") ? ".json.gz" : ".json";
}

struct baseline {
	cJSON *metrics;    /* the baseline run's truth metrics */
	const char *name;  /* its scenario name */
	char **files;      /* its traces, in the staging folder */
	int *ranks;
	size_t n;
	int multi;
};

/* A baseline named by the scenario: its file beside the scenario (NAME.json),
 * run once; its metrics go into every truth (truth:baseline.metrics.…) and its
 * traces to every learner (the healthy run to compare with). */
static enum fl_status run_baseline(const struct assign *a, const struct fl_scenario *sc, struct baseline *b)
{
	const char *slash = strrchr(a->scenario, '/');
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%.*s%s.json", slash ? (int)(slash - a->scenario + 1) : 0, a->scenario, sc->baseline);
	struct fl_scenario bs;
	enum fl_status st;
	if (access(p.buf, R_OK)) {
		st = fl_error(FL_EINPUT, "assign: scenario '%s' names the baseline '%s', expected its file '%s' beside it",
			      sc->name, sc->baseline, p.buf);
		strbuf_release(&p);
		return st;
	}
	if ((st = fl_scenario_load(p.buf, &bs))) {
		strbuf_release(&p);
		return st;
	}
	char *out = path2(a->staging, "baseline"), *log = path2(a->staging, "baseline.log"), *truth_path = NULL;
	cJSON *truth = NULL;
	fprintf(stderr, "faultline: assign: the baseline '%s' first\n", bs.name);
	if ((st = run_child(a, p.buf, out, NULL, log, "the baseline")) || (st = find_truth(out, "the baseline", &truth_path)) ||
	    (st = fl_json_load(truth_path, &truth)))
		goto out;
	b->name = fl_xstrdup(bs.name);
	b->metrics = cJSON_DetachItemFromObjectCaseSensitive(truth, "metrics");
	b->n = (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(truth, "traces"));
	b->files = calloc(b->n ? b->n : 1, sizeof(char *));
	b->ranks = calloc(b->n ? b->n : 1, sizeof(int));
	b->multi = b->n > 1;
	for (size_t i = 0; i < b->n; i++) {
		const char *f;
		if ((st = trace_file(truth, (int)i, "the baseline", &f, &b->ranks[i])))
			goto out;
		b->files[i] = path2(out, f);
	}
out:
	cJSON_Delete(truth);
	free(truth_path);
	free(out);
	free(log);
	fl_scenario_release(&bs);
	strbuf_release(&p);
	return st;
}

static void baseline_release(struct baseline *b)
{
	cJSON_Delete(b->metrics);
	free((char *)b->name);
	for (size_t i = 0; i < b->n; i++)
		free(b->files[i]);
	free(b->files);
	free(b->ranks);
}

/* Clear what an earlier assign left in a learner's folder (our names only). */
static void clear_learner_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "trace-", 6) || !strncmp(e->d_name, "baseline.", 9)) {
			char *p = path2(dir, e->d_name);
			unlink(p);
			free(p);
		}
	closedir(d);
}

/* One learner: run, then traces to learners/ID/ under neutral names and the
 * truth, naming them, to truths/ID.truth.json. */
static enum fl_status assign_one(const struct assign *a, const char *id, const struct baseline *b)
{
	char seed[24], tag[13];
	snprintf(seed, sizeof(seed), "%lu", learner_seed(a, id));
	learner_tag(a, id, tag);
	struct strbuf who = STRBUF_INIT, sb = STRBUF_INIT;
	strbuf_addf(&who, "learner '%s'", id);
	char *stage = path2(a->staging, id), *learners = path2(a->out, "learners"), *dest = path2(learners, id);
	strbuf_addf(&sb, "%s.log", stage);
	char *log = fl_xstrdup(sb.buf), *truth_path = NULL;
	strbuf_reset(&sb);
	cJSON *truth = NULL;
	enum fl_status st;
	if ((st = run_child(a, a->scenario, stage, seed, log, who.buf)) || (st = find_truth(stage, who.buf, &truth_path)) ||
	    (st = fl_json_load(truth_path, &truth)) || (st = make_dir(dest)))
		goto out;
	clear_learner_dir(dest);
	cJSON *traces = cJSON_GetObjectItemCaseSensitive(truth, "traces");
	int n = cJSON_GetArraySize(traces), multi = n > 1;
	for (int i = 0; i < n; i++) {
		const char *f;
		int rank;
		if ((st = trace_file(truth, i, who.buf, &f, &rank)))
			goto out;
		char name[64];
		if (multi)
			snprintf(name, sizeof(name), "trace-%s.rank-%d%s", tag, rank, trace_ext(f));
		else
			snprintf(name, sizeof(name), "trace-%s%s", tag, trace_ext(f));
		char *from = path2(stage, f), *to = path2(dest, name);
		st = move_file(from, to);
		free(from);
		free(to);
		if (st)
			goto out;
		cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetArrayItem(traces, i), "file", cJSON_CreateString(name));
	}
	for (size_t i = 0; b && i < b->n; i++) {
		char name[64];
		if (b->multi)
			snprintf(name, sizeof(name), "baseline.rank-%d%s", b->ranks[i], trace_ext(b->files[i]));
		else
			snprintf(name, sizeof(name), "baseline%s", trace_ext(b->files[i]));
		char *to = path2(dest, name);
		st = copy_file(b->files[i], to);
		free(to);
		if (st)
			goto out;
	}
	if (b && b->metrics) {
		cJSON *bo = cJSON_CreateObject();
		cJSON_AddStringToObject(bo, "scenario", b->name);
		cJSON_AddItemToObject(bo, "metrics", cJSON_Duplicate(b->metrics, 1));
		cJSON_DeleteItemFromObjectCaseSensitive(truth, "baseline");
		cJSON_AddItemToObject(truth, "baseline", bo);
	}
	strbuf_addf(&sb, "%s/truths/%s.truth.json", a->out, id);
	st = fl_json_write(sb.buf, truth);
	strbuf_release(&sb);
out:
	cJSON_Delete(truth);
	free(truth_path);
	if (!st) {
		fl_remove_tree(stage);
		unlink(log);
	}
	free(log);
	free(stage);
	free(learners);
	free(dest);
	strbuf_release(&who);
	return st;
}

static enum fl_status read_secret(struct assign *a, const char *secret, const char *file)
{
	if (!!secret == !!file)
		return fl_error(FL_EINPUT, "assign: expected the course secret: --secret S or --secret-file F (one of them)");
	if (secret) {
		a->secret = fl_xstrdup(secret);
		a->secret_len = strlen(secret);
	} else {
		if (fl_read_file(file, &a->secret, &a->secret_len))
			return fl_error_prefix(FL_EINPUT, "assign: --secret-file: ");
		while (a->secret_len && (a->secret[a->secret_len - 1] == '\n' || a->secret[a->secret_len - 1] == '\r'))
			a->secret_len--;
	}
	if (!a->secret_len)
		return fl_error(FL_EINPUT, "assign: the course secret is empty");
	if (a->secret_len < 16)
		fprintf(stderr, "faultline: assign: the course secret has %zu bytes; 16 or more random bytes keep "
			"variants from being guessed\n", a->secret_len);
	return FL_OK;
}

static enum fl_status write_roster(const struct assign *a, const struct fl_roster *r)
{
	struct strbuf sb = STRBUF_INIT, cell = STRBUF_INIT;
	strbuf_adds(&sb, "learner,answer,truth,traces\r\n");
	for (size_t i = 0; i < r->n; i++) {
		const char *id = r->rows[i].learner; /* a safe file name: no quoting needed, but quoted if so */
		fl_csv_field(&sb, id);
		strbuf_addf(&cell, "answers/%s.txt", id);
		strbuf_adds(&sb, ",");
		fl_csv_field(&sb, cell.buf);
		strbuf_reset(&cell);
		strbuf_addf(&cell, "truths/%s.truth.json", id);
		strbuf_adds(&sb, ",");
		fl_csv_field(&sb, cell.buf);
		strbuf_reset(&cell);
		strbuf_addf(&cell, "learners/%s", id);
		strbuf_adds(&sb, ",");
		fl_csv_field(&sb, cell.buf);
		strbuf_reset(&cell);
		strbuf_adds(&sb, "\r\n");
	}
	char *p = path2(a->out, "roster.csv");
	enum fl_status st = fl_write_file_atomic(p, sb.buf, sb.len);
	if (st)
		st = fl_error_prefix(FL_EINPUT, "assign: ");
	free(p);
	strbuf_release(&sb);
	strbuf_release(&cell);
	return st;
}

/* The rubric the scenario names, beside it, into truths/ (grade finds it beside the truth). */
static enum fl_status copy_rubric(const struct assign *a, const struct fl_scenario *sc)
{
	if (!sc->rubric || strchr(sc->rubric, '/'))
		return FL_OK;
	const char *slash = strrchr(a->scenario, '/');
	struct strbuf from = STRBUF_INIT, to = STRBUF_INIT;
	strbuf_addf(&from, "%.*s%s", slash ? (int)(slash - a->scenario + 1) : 0, a->scenario, sc->rubric);
	strbuf_addf(&to, "%s/truths/%s", a->out, sc->rubric);
	enum fl_status st = access(from.buf, R_OK) ? FL_OK : copy_file(from.buf, to.buf);
	strbuf_release(&from);
	strbuf_release(&to);
	return st;
}

static void fmt_time(double s, char *out, size_t n)
{
	long t = (long)(s + 0.5);
	if (t < 60)
		snprintf(out, n, "%.1f s", s);
	else
		snprintf(out, n, "%ld min %02ld s", t / 60, t % 60);
}

enum fl_status fl_cmd_assign(int argc, char **argv)
{
	struct fl_args args;
	enum fl_status st = fl_command_args("assign", argc, argv, &args);
	if (st || args.help) {
		fl_args_release(&args);
		return st;
	}
	struct assign a = {0};
	char nbuf[3][24];
	const struct fl_optval *v;
	const char *pass[3] = {"--steps", "--backend", "--ranks"};
	const char **dst[3] = {&a.steps, &a.backend, &a.ranks};
	for (int i = 0; i < 3; i++) {
		if (!(v = fl_args_get(&args, pass[i])))
			continue;
		if (i == 1) {
			*dst[i] = v->value;
		} else {
			snprintf(nbuf[i], sizeof(nbuf[i]), "%ld", v->l);
			*dst[i] = nbuf[i];
		}
	}
	a.scenario = args.args[0];
	a.out = fl_args_text(&args, "--out", NULL);
	const char *roster_path = fl_args_text(&args, "--roster", NULL);
	st = read_secret(&a, fl_args_text(&args, "--secret", NULL), fl_args_text(&args, "--secret-file", NULL));
	if (!st && !roster_path)
		st = fl_error(FL_EINPUT, "assign: expected --roster ROSTER.csv (the learners)");
	if (!st && !a.out)
		st = fl_error(FL_EINPUT, "assign: expected -o DIR (where the learners' traces and the truths go)");
	struct fl_roster r = {0};
	struct fl_scenario sc = {0};
	struct baseline b = {0};
	int have_sc = 0;
	if (st)
		goto out;
	if ((st = fl_roster_learners_load(roster_path, &r)))
		goto out;
	if (r.n_bad) { /* before minutes of running: every bad row at once */
		for (size_t i = 0; i < r.n_bad; i++)
			fprintf(stderr, "faultline: %s\n", r.bad[i]);
		st = fl_error(FL_EINPUT, "assign: %zu roster row%s cannot be used (above); nothing was run", r.n_bad,
			      r.n_bad == 1 ? "" : "s");
		goto out;
	}
	if ((st = fl_scenario_load(a.scenario, &sc)))
		goto out;
	have_sc = 1;
	int varies = 0;
	for (size_t i = 0; i < sc.n_faults; i++)
		for (size_t p = 0; sc.faults[i].vary && p < sc.faults[i].ops->n_params; p++)
			varies |= sc.faults[i].vary[p].declared;
	if (!varies)
		fprintf(stderr, "faultline: assign: scenario '%s' declares no \"vary\" range: every learner gets the same "
			"faults (only the seed differs)\n", sc.name);
	ssize_t sl = readlink("/proc/self/exe", a.self, sizeof(a.self) - 1);
	if (sl <= 0) {
		st = fl_error(FL_ERUNTIME, "assign: cannot find the faultline binary to run each variant: %s", strerror(errno));
		goto out;
	}
	a.self[sl] = '\0';
	char *learners = path2(a.out, "learners"), *truths = path2(a.out, "truths");
	st = make_dir(a.out);
	if (!st)
		st = make_dir(learners);
	if (!st)
		st = make_dir(truths);
	free(learners);
	free(truths);
	if (st)
		goto out;
	a.staging = path2(a.out, ".staging.XXXXXX");
	if (!mkdtemp(a.staging)) {
		st = fl_error(FL_EINPUT, "assign: cannot create a staging folder in '%s': %s", a.out, strerror(errno));
		free(a.staging);
		a.staging = NULL;
		goto out;
	}
	if ((st = copy_rubric(&a, &sc)))
		goto out;
	if (sc.baseline && (st = run_baseline(&a, &sc, &b)))
		goto out;
	double t0 = now_s();
	for (size_t i = 0; i < r.n; i++) {
		double t = now_s();
		if ((st = assign_one(&a, r.rows[i].learner, sc.baseline ? &b : NULL)))
			goto out;
		double per = (now_s() - t0) / (double)(i + 1);
		char took[32], eta[32];
		fmt_time(now_s() - t, took, sizeof(took));
		fmt_time(per * (double)(r.n - i - 1), eta, sizeof(eta));
		fprintf(stderr, "faultline: assign: learner %zu of %zu (%s) in %s, ETA %s\n", i + 1, r.n, r.rows[i].learner,
			took, eta);
	}
	if ((st = write_roster(&a, &r)))
		goto out;
	printf("assigned %zu learners of scenario '%s': traces in %s/learners/ID/, truths in %s/truths/ (keep them from "
	       "learners), roster for grade --batch: %s/roster.csv\n", r.n, sc.name, a.out, a.out, a.out);
out:
	if (a.staging && !st)
		fl_remove_tree(a.staging);
	else if (a.staging)
		fprintf(stderr, "faultline: assign: the failed run's files are kept in '%s'\n", a.staging);
	free(a.staging);
	baseline_release(&b);
	if (have_sc)
		fl_scenario_release(&sc);
	fl_roster_release(&r);
	if (a.secret) {
		memset(a.secret, 0, a.secret_len);
		free(a.secret);
	}
	fl_args_release(&args);
	return st;
}
