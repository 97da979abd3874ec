/* cmd_fleet.c — faultline fleet: job logs of GPU fleets (lab R2).
 *   fleet analyze JOBS.csv   the AcmeTrace analyses (grader/analysis/fleet.h)
 *   fleet generate SCENARIO  a simulated fleet with failures at a known MTBF
 *                            (generator/fleet.h)
 * Each subcommand parses its own options through a table entry of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "faults/fleet_fault.h"
#include "common/strbuf.h"
#include "generator/fleet.h"
#include "grader/analysis/fleet.h"

const char fl_fleet_usage[] =
	"usage: faultline fleet analyze JOBS.csv [--xid XID.csv] [--json] [--min-gpus N]\n"
	"                               [--min-hours H] [--ckpt-cost MIN] [--job-gpus N] [--strict]\n"
	"       faultline fleet generate SCENARIO [-o DIR] [--seed S [--vary]] [--json]\n"
	"       faultline fleet faults      (the fleet fault modules and their parameters)\n"
	"\n"
	"Fleet reliability from job logs in AcmeTrace's schema (lab R2). See docs/fleet.md.\n"
	"\n"
	"analyze streams a jobs CSV (Kalos or Seren header) in bounded memory: the job\n"
	"mix by GPU count (share of jobs vs share of GPU-hours), terminal states by\n"
	"scale, queue-delay percentiles by scale, the per-GPU MTBF from NODE_FAIL\n"
	"(GPU-hours at risk / failures, exact Poisson 95% interval) over jobs with at\n"
	"least --min-gpus GPUs that ran at least --min-hours, the goodput waterfall and\n"
	"Young's checkpoint interval sqrt(2 C M). Bad rows are counted and the first\n"
	"few reported with their line numbers.\n"
	"  --xid FILE      XID telemetry (Time + one column per GPU): NODE_FAILs with an\n"
	"                  XID event near their fail time, and the MTBF from those\n"
	"  --json          JSON (faultline.fleet/1) instead of text\n"
	"  --min-gpus N    the MTBF population's smallest job (default 256)\n"
	"  --min-hours H   the MTBF population's shortest run, hours (default 0)\n"
	"  --ckpt-cost MIN checkpoint cost C for Young's interval, minutes (default 10)\n"
	"  --job-gpus N    Young's interval for a job of N GPUs (default --min-gpus)\n"
	"  --xid-window S  seconds either side of a fail time an XID event counts (default 300)\n"
	"  --strict        the first bad row is an error (exit 2)\n"
	"\n"
	"generate runs a seeded discrete-event simulation of a fleet (nodes x 8 GPUs,\n"
	"a job mix, cancellations, user failures, node failures as a Poisson process\n"
	"per GPU at a known MTBF) and writes, in DIR (default: the scenario's output),\n"
	"the jobs CSV and XID CSV in AcmeTrace's schema, a README.txt saying it is a\n"
	"simulation, and the truth file (injected MTBF, realised failures, GPU-hours\n"
	"at risk, the simulated goodput waterfall, and the analysis of the CSV).\n"
	"  -o, --out DIR   where to write\n"
	"  --seed S        the simulation's seed (default: the scenario's)\n"
	"  --vary          draw each parameter a fault declares in \"vary\" from the seed\n"
	"  --json          print the truth instead of the summary\n"
	"\n"
	"Exit: 0 ok; 2 usage, unreadable input, or a bad row with --strict.\n";

const struct fl_opt fl_fleet_opts[] = {
	{.name = NULL},
};

static const struct fl_opt analyze_opts[] = {
	{.name = "--xid", .kind = FL_OPT_TEXT, .expects = "an XID CSV file", .flags = FL_OPT_NONEMPTY},
	{.name = "--json"},
	{.name = "--min-gpus", .kind = FL_OPT_INT, .min = 1, .max = 1000000},
	{.name = "--min-hours", .kind = FL_OPT_NUMBER, .expects = "hours", .min = 0, .max = 1e6},
	{.name = "--ckpt-cost", .kind = FL_OPT_NUMBER, .expects = "minutes", .min = 1e-6, .max = 1e6},
	{.name = "--job-gpus", .kind = FL_OPT_INT, .min = 1, .max = 1000000},
	{.name = "--xid-window", .kind = FL_OPT_NUMBER, .expects = "seconds", .min = 0, .max = 1e7},
	{.name = "--strict"},
	{.name = NULL},
};

static const struct fl_opt generate_opts[] = {
	{.name = "--out", .alias = "-o", .kind = FL_OPT_TEXT, .expects = "a directory", .flags = FL_OPT_NONEMPTY},
	{.name = "--seed", .kind = FL_OPT_INT, .min = 0, .max = 9007199254740991.0},
	{.name = "--vary"},
	{.name = "--json"},
	{.name = NULL},
};

static const struct fl_command sub_analyze = {
	"fleet analyze", NULL, fl_fleet_usage, {.opts = analyze_opts, .arg = "jobs CSV file", .min_args = 1, .max_args = 1},
	NULL};
static const struct fl_command sub_generate = {
	"fleet generate", NULL, fl_fleet_usage, {.opts = generate_opts, .arg = "scenario file", .min_args = 1, .max_args = 1},
	NULL};

static enum fl_status need_one(const struct fl_args *a, const char *cmd, const char *what)
{
	if (a->nargs != 1)
		return fl_error(FL_EINPUT, "%s: expected one %s (see 'faultline fleet --help')", cmd, what);
	return FL_OK;
}

static enum fl_status fleet_analyze(int argc, char **argv)
{
	struct fl_args a;
	struct strbuf out = STRBUF_INIT;
	cJSON *j = NULL;
	enum fl_status st = fl_opts_parse(&sub_analyze, argc, argv, &a);
	if (st || a.help || (st = need_one(&a, "fleet analyze", "jobs CSV file")))
		goto out;
	struct fl_fleet_opts o = FL_FLEET_OPTS_INIT;
	const struct fl_optval *v;
	o.xid_path = fl_args_text(&a, "--xid", NULL);
	if ((v = fl_args_get(&a, "--min-gpus")))
		o.min_gpus = v->l;
	if ((v = fl_args_get(&a, "--min-hours")))
		o.min_hours = v->d;
	if ((v = fl_args_get(&a, "--ckpt-cost")))
		o.ckpt_cost_min = v->d;
	if ((v = fl_args_get(&a, "--job-gpus")))
		o.job_gpus = v->l;
	if ((v = fl_args_get(&a, "--xid-window")))
		o.xid_window_s = v->d;
	o.strict = fl_args_has(&a, "--strict");
	if ((st = fl_fleet_analyze(a.args[0], &o, &j))) {
		st = fl_error_prefix(st == FL_ERUNTIME ? FL_ERUNTIME : FL_EINPUT, "fleet analyze: ");
		goto out;
	}
	if (fl_args_has(&a, "--json")) {
		char *s = cJSON_Print(j);
		if (!s)
			abort();
		strbuf_adds(&out, s);
		strbuf_adds(&out, "\n");
		free(s);
	} else {
		fl_fleet_text(j, &out);
	}
	fwrite(out.buf, 1, out.len, stdout);
out:
	cJSON_Delete(j);
	strbuf_release(&out);
	fl_args_release(&a);
	return st;
}

static enum fl_status fleet_generate(int argc, char **argv)
{
	struct fl_args a;
	struct strbuf out = STRBUF_INIT;
	enum fl_status st = fl_opts_parse(&sub_generate, argc, argv, &a);
	if (st || a.help || (st = need_one(&a, "fleet generate", "scenario file")))
		goto out;
	struct fl_fleet_gen_opts o = {0};
	const struct fl_optval *v;
	o.out_dir = fl_args_text(&a, "--out", NULL);
	if ((v = fl_args_get(&a, "--seed"))) {
		o.have_seed = 1;
		o.seed = (uint64_t)v->d;
	}
	o.vary = fl_args_has(&a, "--vary");
	o.json = fl_args_has(&a, "--json");
	if (o.vary && !o.have_seed) {
		st = fl_error(FL_EINPUT, "fleet generate: --vary needs --seed S");
		goto out;
	}
	if ((st = fl_fleet_generate(a.args[0], &o, &out)))
		goto out;
	fwrite(out.buf, 1, out.len, stdout);
out:
	strbuf_release(&out);
	fl_args_release(&a);
	return st;
}

static const struct fl_opt faults_opts[] = {
	{.name = NULL},
};
static const struct fl_command sub_faults = {
	"fleet faults", NULL, fl_fleet_usage, {.opts = faults_opts, .max_args = 0}, NULL};

static enum fl_status fleet_faults(int argc, char **argv)
{
	struct fl_args a;
	enum fl_status st = fl_opts_parse(&sub_faults, argc, argv, &a);
	int help = a.help;
	fl_args_release(&a);
	if (st || help)
		return st;
	for (size_t i = 0; fl_fleet_faults[i]; i++) {
		const struct fl_fleet_fault_ops *f = fl_fleet_faults[i];
		printf("%s%s\n  %s\n  parameters:\n", i ? "\n" : "", f->name, f->summary);
		for (size_t k = 0; k < f->n_params; k++) {
			const struct fl_param_spec *p = &f->params[k];
			char def[32], range[64];
			snprintf(def, sizeof(def), "%g", p->def);
			snprintf(range, sizeof(range), "%s in [%g, %g]%s%s", p->type == FL_PARAM_INT ? "integer" : "number",
				 p->min, p->max, p->unit ? " " : "", p->unit ? p->unit : "");
			printf("    %-15s default %-7s %-30s %s\n", p->name, def, range, p->meaning);
		}
	}
	return FL_OK;
}

enum fl_status fl_cmd_fleet(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "faults"))
		return fleet_faults(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "analyze"))
		return fleet_analyze(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "generate"))
		return fleet_generate(argc - 1, argv + 1);
	struct fl_args a;
	enum fl_status st = fl_command_args("fleet", argc, argv, &a);
	if (!st && !a.help)
		st = fl_error(FL_EINPUT, a.nargs ? "fleet: unknown subcommand '%s', expected analyze, generate or faults"
					       : "fleet: expected a subcommand, analyze, generate or faults%s",
			      a.nargs ? a.args[0] : "");
	fl_args_release(&a);
	return st;
}
