#include "cli/commands.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "faults/fault.h"
#include "runtime/comm.h"
#include "generator/harness.h"
#include "cli/grader_commands.h"
#include "grader/trace/validate.h"

#ifndef FL_SOURCE_DIR
#define FL_SOURCE_DIR "."
#endif

static int is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

static enum fl_status print_help(const char *name)
{
	const struct fl_command *c = fl_command_find(name);
	fputs(c->usage, stdout);
	return FL_OK;
}

static enum fl_status parse_long(const char *cmd, const char *opt, const char *v, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long x = v ? strtol(v, &end, 10) : 0;
	if (!v || errno || *end || end == v || x < min || x > max)
		return fl_error(FL_EINPUT, "%s: option '%s' expects an integer in [%ld, %ld], got '%s'", cmd, opt, min, max,
				v ? v : "");
	*out = x;
	return FL_OK;
}

static const char *need_value(int argc, char **argv, int *i)
{
	return *i + 1 < argc ? argv[++*i] : NULL;
}

static void print_result(const struct fl_scenario *sc, const struct fl_run_result *r)
{
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(r->metrics, "steps");
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(r->metrics, "ops");
	printf("%-16s trace %s\n%-16s truth %s\n%-16s step p50 %.3f ms, max %.3f ms, %g ops/step (p50), %.1f s\n",
	       sc->name, r->trace_path, "", r->truth_path, "",
	       cJSON_GetObjectItemCaseSensitive(steps, "p50_ms")->valuedouble,
	       cJSON_GetObjectItemCaseSensitive(steps, "max_ms")->valuedouble,
	       cJSON_GetObjectItemCaseSensitive(ops, "per_step_p50")->valuedouble, r->wall_s);
	fflush(stdout);
}

/* ---- run ---- */

static enum fl_status cmd_run(int argc, char **argv)
{
	struct fl_run_opts o = {0};
	const char *path = NULL;
	long ranks = 0;
	int vary = 0;
	enum fl_status st;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (is_help(a))
			return print_help("run");
		if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
			if (!(o.out_dir = need_value(argc, argv, &i)))
				return fl_error(FL_EINPUT, "run: option '%s' expects a directory", a);
		} else if (!strcmp(a, "--backend")) {
			if (!(o.backend = need_value(argc, argv, &i)))
				return fl_error(FL_EINPUT, "run: option '--backend' expects cpu, emu, cuda or auto");
		} else if (!strcmp(a, "--seed")) {
			long s;
			if ((st = parse_long("run", a, need_value(argc, argv, &i), 0, 2147483647L, &s)))
				return st;
			o.seed = (uint64_t)s;
			o.seed_set = 1;
		} else if (!strcmp(a, "--steps")) {
			if ((st = parse_long("run", a, need_value(argc, argv, &i), 1, 1000000, &o.active_steps)))
				return st;
		} else if (!strcmp(a, "--vary")) {
			vary = 1;
		} else if (!strcmp(a, "--ranks")) {
			if ((st = parse_long("run", a, need_value(argc, argv, &i), 1, 1024, &ranks)))
				return st;
		} else if (a[0] == '-' && a[1]) {
			return fl_error(FL_EINPUT, "run: unknown option '%s' (see 'faultline run --help')", a);
		} else if (path) {
			return fl_error(FL_EINPUT, "run: expected one scenario file, got '%s' and '%s'", path, a);
		} else {
			path = a;
		}
	}
	if (!path)
		return fl_error(FL_EINPUT, "run: expected a scenario file (see 'faultline run --help')");
	struct fl_scenario sc;
	if ((st = fl_scenario_load(path, &sc)))
		goto out;
	if (ranks)
		sc.ranks = ranks;
	if (sc.ranks > 1 && !fl_comm_launched()) {
		/* one process per rank: start again under mpirun */
		if (!FL_COMM_BUILT) {
			st = fl_error(FL_ERUNTIME, "run: scenario '%s' asks for %ld ranks, but this faultline was built without MPI",
				      sc.name, sc.ranks);
			goto out;
		}
		st = fl_mpirun((int)sc.ranks, argv, argc, 1);
		goto out;
	}
	if ((st = fl_comm_init()))
		goto out;
	if (vary) {
		if (!o.seed_set) {
			st = fl_error(FL_EINPUT, "run: --vary needs --seed N (the learner's seed makes the variant reproducible)");
			goto out;
		}
		if ((st = fl_scenario_vary(&sc, o.seed)))
			goto out;
	}
	struct fl_run_result r;
	if ((st = fl_run_scenario(&sc, &o, &r))) {
		if (fl_comm_size() > 1) { /* one failed rank must not leave the others waiting */
			fprintf(stderr, "faultline: rank %d: %s\n", fl_comm_rank(), fl_error_msg());
			fl_comm_abort(st);
		}
		goto out;
	}
	if (r.rank == 0)
		print_result(&sc, &r);
	cJSON_Delete(r.metrics);
	fl_comm_finalize();
out:
	fl_scenario_release(&sc);
	return st;
}

/* ---- regen ---- */

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

static enum fl_status cmd_regen(int argc, char **argv)
{
	struct fl_run_opts o = {0};
	const char *dir = NULL;
	enum fl_status st = FL_OK;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (is_help(a))
			return print_help("regen");
		if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
			if (!(o.out_dir = need_value(argc, argv, &i)))
				return fl_error(FL_EINPUT, "regen: option '%s' expects a directory", a);
		} else if (a[0] == '-' && a[1]) {
			return fl_error(FL_EINPUT, "regen: unknown option '%s' (see 'faultline regen --help')", a);
		} else if (dir) {
			return fl_error(FL_EINPUT, "regen: expected one scenario directory, got '%s' and '%s'", dir, a);
		} else {
			dir = a;
		}
	}
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
	/* load everything first: a bad file fails before minutes of running */
	for (size_t i = 0; i < n; i++)
		if ((st = fl_scenario_load(files[i], &sc[i])))
			goto out_sc;
	struct fl_calibration cal;
	int have_cal = 0;
	/* baselines first, so later truths can carry their metrics */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			if (done[i] || (pass == 0 && sc[i].baseline))
				continue;
			struct fl_run_opts oi = o;
			if (have_cal && cal.target_ms == sc[i].workload.target_step_ms && cal.batch == sc[i].workload.batch &&
			    cal.max_dim == sc[i].workload.dim && cal.alloc == sc[i].workload.alloc)
				oi.calibration = &cal;
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
			if ((st = fl_run_scenario(&sc[i], &oi, &r)))
				goto out_sc;
			if (!oi.calibration) {
				cal = r.calibration;
				have_cal = 1;
			}
			metrics[i] = r.metrics;
			done[i] = 1;
			print_result(&sc[i], &r);
		}
	}
out_sc:
	for (size_t i = 0; i < n; i++) {
		fl_scenario_release(&sc[i]);
		cJSON_Delete(metrics[i]);
	}
	free(sc);
	free(metrics);
	free(done);
out:
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	return st;
}

/* ---- faults ---- */

static enum fl_status cmd_faults(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (is_help(argv[i]))
			return print_help("faults");
		return fl_error(FL_EINPUT, "faults: unexpected argument '%s' (see 'faultline faults --help')", argv[i]);
	}
	for (size_t i = 0; fl_faults[i]; i++) {
		const struct fl_fault_ops *f = fl_faults[i];
		printf("%s\n  %s\n  family: %s    fix: %s\n  parameters:\n", f->name, f->summary, f->family, f->fix);
		for (size_t k = 0; k < f->n_params; k++) {
			const struct fl_param_spec *p = &f->params[k];
			char def[64], range[64];
			switch (p->type) {
			case FL_PARAM_NUMBER:
			case FL_PARAM_INT:
				snprintf(def, sizeof(def), "%g", p->def);
				snprintf(range, sizeof(range), "%s in [%g, %g]%s%s", p->type == FL_PARAM_INT ? "integer" : "number",
					 p->min, p->max, p->unit ? " " : "", p->unit ? p->unit : "");
				break;
			case FL_PARAM_STRING:
				snprintf(def, sizeof(def), "\"%s\"", p->def_text);
				snprintf(range, sizeof(range), "name");
				break;
			case FL_PARAM_STEPS:
				snprintf(def, sizeof(def), "%s", p->def_text);
				snprintf(range, sizeof(range), "step selector");
				break;
			}
			printf("    %-11s default %-9s %-28s %s\n", p->name, def, range, p->meaning);
		}
		if (fl_faults[i + 1])
			putchar('\n');
	}
	return FL_OK;
}

/* ---- validate ---- */

static enum fl_status cmd_validate(int argc, char **argv)
{
	int n = 0, bad = 0, unreadable = 0;
	for (int i = 1; i < argc; i++) {
		if (is_help(argv[i]))
			return print_help("validate");
		if (argv[i][0] == '-' && argv[i][1])
			return fl_error(FL_EINPUT, "validate: unknown option '%s'", argv[i]);
	}
	for (int i = 1; i < argc; i++) {
		struct strbuf rep = STRBUF_INIT;
		enum fl_status st = fl_trace_validate(argv[i], &rep);
		n++;
		if (st == FL_OK) {
			printf("%s: ok\n", argv[i]);
		} else if (st == FL_ECHECK) {
			printf("%s: invalid\n%s", argv[i], rep.buf);
			bad++;
		} else {
			fprintf(stderr, "faultline: %s\n", fl_error_msg());
			unreadable++;
		}
		strbuf_release(&rep);
	}
	if (!n)
		return fl_error(FL_EINPUT, "validate: expected one or more trace files (see 'faultline validate --help')");
	if (unreadable)
		return fl_error(FL_EINPUT, "validate: %d of %d traces could not be read", unreadable, n);
	if (bad)
		return fl_error(FL_ECHECK, "validate: %d of %d traces are invalid", bad, n);
	return FL_OK;
}

const struct fl_command fl_commands[] = {
	{"run", "run one scenario: capture its trace and write its truth",
	 "usage: faultline run SCENARIO [-o DIR] [--backend B] [--seed S [--vary]] [--steps N] [--ranks N]\n"
	 "\n"
	 "Runs the scenario's workload for real with its faults injected, captures the\n"
	 "recorded steps as a Kineto-layout Chrome trace and writes the truth beside it.\n"
	 "\n"
	 "  -o, --out DIR   output directory (default: out)\n"
	 "  --backend B     override the scenario's backend: cpu, emu, cuda (when built and a\n"
	 "                  GPU is usable) or auto (cuda when usable, else emu)\n"
	 "  --seed S        override the scenario's seed\n"
	 "  --vary          per-learner variant: draw each parameter the scenario declares\n"
	 "                  in a fault's \"vary\" ranges from --seed; the truth records the draws\n"
	 "  --steps N       number of recorded (active) steps\n"
	 "  --ranks N       number of ranks (more than 1 needs a multi-rank backend)\n"
	 "\n"
	 "Exit: 0 ok; 2 usage or bad scenario; 3 runtime error (I/O, device); 4 internal error.\n",
	 cmd_run},
	{"regen", "regenerate every scenario of a directory (default: the R7-R9 set)",
	 "usage: faultline regen [SCENARIO_DIR] [-o DIR]\n"
	 "\n"
	 "Runs every scenario in SCENARIO_DIR (default: the R7-R9 set r7-healthy,\n"
	 "r7-starved, r8-opstorm, r9-hoststall from scenarios/), writing each trace and\n"
	 "truth into DIR (default: out). The machine is calibrated once for all of them;\n"
	 "a scenario's baseline runs first and its metrics go into the other's truth.\n"
	 "\n"
	 "  -o, --out DIR   output directory (default: out)\n",
	 cmd_regen},
	{"faults", "list the fault modules, their families and parameters",
	 "usage: faultline faults\n"
	 "\n"
	 "Lists every fault module: its catalog family and fix, and each parameter with\n"
	 "its default and allowed range.\n",
	 cmd_faults},
	{"analyze", "metrics of traces: steps, spans, ops, gaps, periods; compare runs", fl_analyze_usage,
	 fl_cmd_analyze},
	{"grade", "grade a learner's answer against the truth with a rubric", fl_grade_usage, fl_cmd_grade},
	{"validate", "structural check of traces",
	 "usage: faultline validate TRACE...\n"
	 "\n"
	 "Checks that each trace has the Kineto layout Perfetto and HTA rely on: metadata\n"
	 "before traceEvents, \"rank\": N with the space, complete X events with dur >= 0,\n"
	 "properly nested rows, ProfilerStep spans, named rows, a final Record Window End.\n"
	 "\n"
	 "Exit: 0 all valid; 1 a trace is invalid; 2 a trace cannot be read.\n",
	 cmd_validate},
	{NULL, NULL, NULL, NULL},
};

const struct fl_command *fl_command_find(const char *name)
{
	for (const struct fl_command *c = fl_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

void fl_print_usage(void)
{
	printf("usage: faultline COMMAND [ARGS]\n\n"
	       "faultline runs a real workload with performance faults injected on purpose,\n"
	       "captures what ran as a Kineto/Chrome trace, and writes the exact truth.\n\n"
	       "commands:\n");
	for (const struct fl_command *c = fl_commands; c->name; c++)
		printf("  %-10s %s\n", c->name, c->summary);
	printf("\n'faultline COMMAND --help' describes a command. 'faultline --version' prints the version.\n"
	       "Exit codes: 0 ok; 1 a check failed; 2 usage or bad input; 3 runtime error; 4 internal error.\n");
}
