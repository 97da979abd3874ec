/* cmd_regen.c — faultline regen: every scenario of a directory (default: the
 * R7-R9 set), calibrated once and re-checked before each, baselines first. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "generator/harness.h"

#ifndef FL_SOURCE_DIR
#define FL_SOURCE_DIR "."
#endif

const char fl_regen_usage[] =
	"usage: faultline regen [SCENARIO_DIR] [-o DIR]\n"
	"\n"
	"Runs every scenario in SCENARIO_DIR (default: the R7-R9 set r7-healthy,\n"
	"r7-starved, r8-opstorm, r9-hoststall from scenarios/), writing each trace and\n"
	"truth into DIR (default: out). The machine is calibrated once for all of them\n"
	"(one model width, so their step times compare) and the calibration is\n"
	"re-checked right before each scenario: when the healthy step at that width is\n"
	"now more than 25% off, it is calibrated again (stderr and the truth say so).\n"
	"When that changes the width, the whole set is recorded again at the new width,\n"
	"up to 3 rounds in all, so that a step ratio between two of them compares one\n"
	"model; each truth lists the rounds discarded (calibration.set_restarts).\n"
	"A scenario with nothing injected whose recorded step p50 is over 1.5x off the\n"
	"healthy step measured right before it (the machine changed under its window)\n"
	"is recorded again, up to 3 times in all; its truth lists the windows discarded.\n"
	"A scenario's baseline runs first and its metrics go into the other's truth.\n"
	"\n"
	"  -o, --out DIR   output directory (default: out)\n";

const struct fl_opt fl_regen_opts[] = {
	{.name = "--out", .alias = "-o", .kind = FL_OPT_TEXT, .expects = "a directory"},
	{.name = NULL},
};

/* A faultless scenario's window is recorded again when its step p50 is more
 * than this factor off the healthy step measured right before it (the
 * calibration or its re-check), up to FL_REGEN_TRIES windows in all: the lab's
 * baseline is the step its keys quote, and a machine that changed speed under
 * the window (measured once: 0.85 ms against 0.30 ms calibrated, while the
 * core probes agreed) would make every ratio against it wrong. */
#ifndef FL_REGEN_WINDOW_TOL
#define FL_REGEN_WINDOW_TOL 1.5
#endif
#define FL_REGEN_TRIES 3
/* rounds of the whole set when a re-check changes the width (the last is kept) */
#define FL_REGEN_ROUNDS 3

static const char *const r7_r9[] = {"r7-healthy.json", "r7-starved.json", "r8-opstorm.json", "r9-hoststall.json", NULL};

static int is_dir(const char *p)
{
	struct stat s;
	return stat(p, &s) == 0 && S_ISDIR(s.st_mode);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Scenario files of a directory: *.json whose schema is faultline.scenario/1. */
static enum fl_status list_scenarios(const char *dir, char ***out, size_t *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return fl_error(FL_EINPUT, "regen: cannot open scenario directory '%s': %s", dir, strerror(errno));
	char **v = NULL;
	size_t k = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0 || strstr(e->d_name, ".rubric.") ||
		    strstr(e->d_name, ".truth."))
			continue;
		char **nv = realloc(v, (k + 1) * sizeof(*v));
		if (!nv)
			abort();
		v = nv;
		size_t pl = strlen(dir) + l + 2;
		v[k] = malloc(pl);
		snprintf(v[k], pl, "%s/%s", dir, e->d_name);
		k++;
	}
	closedir(d);
	qsort(v, k, sizeof(*v), cmp_str);
	*out = v;
	*n = k;
	return FL_OK;
}

/* Whether calibration c measured the model scenario s runs: regen reuses it
 * (re-checked) and keeps every such scenario at one width. */
static int calibrates(const struct fl_calibration *c, const struct fl_scenario *s)
{
	return c->target_ms == s->workload.target_step_ms && c->batch == s->workload.batch &&
	       c->max_dim == s->workload.dim && c->min_dim == s->workload.min_dim && c->alloc == s->workload.alloc;
}

/* One scenario's window; a faultless one is recorded again (up to
 * FL_REGEN_TRIES windows) while its step p50 is over FL_REGEN_WINDOW_TOL off
 * the healthy step measured right before it. */
static enum fl_status run_window(const struct fl_scenario *sc, struct fl_run_opts *oi, struct fl_run_result *r)
{
	enum fl_status st = FL_OK;
	cJSON *discarded = cJSON_CreateArray();
	for (int attempt = 1;; attempt++) {
		oi->rerecorded = discarded;
		if ((st = fl_run_scenario(sc, oi, r)))
			break;
		const struct fl_calibration *c = &r->calibration;
		double before = c->rechecked && !c->recalibrated ? c->recheck_ms : c->measured_ms;
		const cJSON *p50 =
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r->metrics, "steps"), "p50_ms");
		double got = cJSON_IsNumber(p50) ? p50->valuedouble : 0;
		if (sc->n_faults > 0 || !(before > 0) || !(got > 0) || fabs(log(got / before)) <= log(FL_REGEN_WINDOW_TOL))
			break;
		if (attempt == FL_REGEN_TRIES) {
			fprintf(stderr,
				"faultline: regen: %s: warning: the last of %d windows still ran its step p50 %.3f ms at "
				"%.2fx the healthy step measured right before it (%.3f ms); kept, its truth lists the "
				"windows discarded\n",
				sc->name, FL_REGEN_TRIES, got, got / before, before);
			break;
		}
		fprintf(stderr,
			"faultline: regen: %s: the window's step p50 %.3f ms is %.2fx the healthy step measured right "
			"before it (%.3f ms): the machine changed under the window; recording it again (%d of %d)\n",
			sc->name, got, got / before, before, attempt + 1, FL_REGEN_TRIES);
		cJSON *d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "step_p50_ms", got);
		cJSON_AddNumberToObject(d, "measured_before_ms", before);
		cJSON_AddNumberToObject(d, "tolerance", FL_REGEN_WINDOW_TOL);
		cJSON_AddItemToArray(discarded, d);
		cJSON_Delete(r->metrics);
	}
	oi->rerecorded = NULL;
	cJSON_Delete(discarded);
	return st;
}

enum fl_status fl_cmd_regen(int argc, char **argv)
{
	struct fl_args a;
	enum fl_status st = fl_command_args("regen", argc, argv, &a);
	if (st || a.help) {
		fl_args_release(&a);
		return st;
	}
	struct fl_run_opts o = {0};
	o.out_dir = fl_args_text(&a, "--out", NULL);
	const char *dir = a.nargs ? a.args[0] : NULL;
	fl_args_release(&a);
	char **files = NULL;
	size_t n = 0;
	if (dir) {
		if ((st = list_scenarios(dir, &files, &n)))
			return st;
	} else {
		const char *base = is_dir("scenarios") && !access("scenarios/r7-healthy.json", R_OK) ? "scenarios"
												     : FL_SOURCE_DIR "/scenarios";
		for (n = 0; r7_r9[n]; n++)
			;
		files = calloc(n, sizeof(*files));
		for (size_t i = 0; i < n; i++) {
			size_t l = strlen(base) + strlen(r7_r9[i]) + 2;
			files[i] = malloc(l);
			snprintf(files[i], l, "%s/%s", base, r7_r9[i]);
		}
	}
	if (n == 0) {
		st = fl_error(FL_EINPUT, "regen: no scenario files (*.json) in '%s'", dir);
		goto out;
	}
	struct fl_scenario *sc = calloc(n, sizeof(*sc));
	cJSON **metrics = calloc(n, sizeof(*metrics));
	int *done = calloc(n, sizeof(*done));
	struct fl_run_result *res = calloc(n, sizeof(*res)); /* this round's windows (metrics NULL: none, or mpirun) */
	cJSON *restarts = cJSON_CreateArray();
	/* load everything first: a bad file fails before minutes of running */
	for (size_t i = 0; i < n; i++)
		if ((st = fl_scenario_load(files[i], &sc[i])))
			goto out_sc;
	struct fl_calibration cal;
	int have_cal = 0;
	for (int round = 1;; round++) {
		int restart = 0;
		/* baselines first, so later truths can carry their metrics */
		for (int pass = 0; pass < 2 && !restart; pass++) {
			for (size_t i = 0; i < n && !restart; i++) {
				if (done[i] || (pass == 0 && sc[i].baseline))
					continue;
				struct fl_run_opts oi = o;
				oi.restarts = restarts;
				if (have_cal && calibrates(&cal, &sc[i]))
					oi.calibration = &cal; /* the same model: reuse (re-checked) */
				for (size_t b = 0; sc[i].baseline && b < n; b++)
					if (done[b] && strcmp(sc[b].name, sc[i].baseline) == 0) {
						oi.baseline_metrics = metrics[b];
						oi.baseline_name = sc[b].name;
					}
				if (sc[i].ranks > 1) {
					char *args[] = {"run", files[i], "-o", (char *)(o.out_dir ? o.out_dir : "out")};
					if ((st = fl_mpirun((int)sc[i].ranks, args, 4, 0)))
						goto out_sc;
					done[i] = 1;
					continue;
				}
				struct fl_run_result r;
				if ((st = run_window(&sc[i], &oi, &r)))
					goto out_sc;
				/* one width for the set: a re-check that calibrated again at another
				 * width than an earlier scenario ran at records the set again */
				size_t other = n;
				for (size_t b = 0; b < n && other == n; b++)
					if (done[b] && res[b].metrics && res[b].calibration.dim != r.calibration.dim &&
					    oi.calibration && calibrates(&r.calibration, &sc[b]))
						other = b;
				if (other < n && round < FL_REGEN_ROUNDS) {
					fprintf(stderr,
						"faultline: regen: %s: calibrated again at width %d, where %s ran at %d: "
						"recording the set again at width %d (round %d of %d), so that its step "
						"times compare one model\n",
						sc[i].name, r.calibration.dim, sc[other].name, res[other].calibration.dim,
						r.calibration.dim, round + 1, FL_REGEN_ROUNDS);
					cJSON *d = cJSON_CreateObject();
					cJSON_AddNumberToObject(d, "round", round);
					cJSON_AddStringToObject(d, "recalibrated_by", sc[i].name);
					cJSON_AddNumberToObject(d, "from_dim", res[other].calibration.dim);
					cJSON_AddNumberToObject(d, "to_dim", r.calibration.dim);
					cJSON_AddItemToArray(restarts, d);
					cal = r.calibration;
					cal.rechecked = cal.recalibrated = 0;
					have_cal = 1;
					cJSON_Delete(r.metrics);
					for (size_t b = 0; b < n; b++) {
						cJSON_Delete(metrics[b]);
						metrics[b] = NULL;
						done[b] = 0;
					}
					memset(res, 0, n * sizeof(*res));
					restart = 1;
					continue;
				}
				if (other < n)
					fprintf(stderr,
						"faultline: regen: warning: %s ran at width %d and %s at %d after %d rounds "
						"(the machine kept changing speed): a step ratio between them compares two "
						"models\n",
						sc[i].name, r.calibration.dim, sc[other].name, res[other].calibration.dim, FL_REGEN_ROUNDS);
				if (!oi.calibration || r.calibration.recalibrated) { /* the later scenarios reuse the newest */
					cal = r.calibration;
					cal.rechecked = cal.recalibrated = 0;
					have_cal = 1;
				}
				metrics[i] = r.metrics;
				res[i] = r;
				done[i] = 1;
			}
		}
		if (!restart)
			break;
	}
	for (size_t i = 0; i < n; i++) /* the windows kept */
		if (done[i] && res[i].metrics)
			fl_print_run_result(&sc[i], &res[i]);
out_sc:
	for (size_t i = 0; i < n; i++) {
		fl_scenario_release(&sc[i]);
		cJSON_Delete(metrics[i]);
	}
	free(sc);
	free(metrics);
	free(done);
	free(res);
	cJSON_Delete(restarts);
out:
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	return st;
}
