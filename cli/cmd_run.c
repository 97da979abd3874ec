/* cmd_run.c — faultline run: one scenario, its trace and its truth; with more
 * than one rank, starts itself again under mpirun with the same arguments. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "generator/harness.h"
#include "runtime/comm.h"

const char fl_run_usage[] =
	"usage: faultline run SCENARIO [-o DIR] [--backend B] [--seed S [--vary]] [--steps N] [--ranks N]\n"
	"                     [--blind] [--check]\n"
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
	"  --check         then diagnose the trace (faultline diagnose) and warn on stderr\n"
	"                  when the injected family is not the top finding (exit still 0)\n"
	"  --blind         neutral file names whatever the scenario's \"output\" says:\n"
	"                  trace-HASH.json.gz (trace-HASH.rank-K.json.gz per rank) and\n"
	"                  trace-HASH.truth.json, HASH fresh and random for every run\n"
	"\n"
	"Exit: 0 ok; 2 usage or bad scenario; 3 runtime error (I/O, device); 4 internal error.\n";

const struct fl_opt fl_run_opts[] = {
	{.name = "--out", .alias = "-o", .kind = FL_OPT_TEXT, .expects = "a directory"},
	{.name = "--backend", .kind = FL_OPT_TEXT, .expects = "cpu, emu, cuda or auto"},
	{.name = "--seed", .kind = FL_OPT_INT, .min = 0, .max = 2147483647L},
	{.name = "--steps", .kind = FL_OPT_INT, .min = 1, .max = 1000000},
	{.name = "--vary"},
	{.name = "--ranks", .kind = FL_OPT_INT, .min = 1, .max = 1024},
	{.name = "--check"},
	{.name = "--blind"},
	{.name = NULL},
};

void fl_print_run_result(const struct fl_scenario *sc, const struct fl_run_result *r)
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

enum fl_status fl_cmd_run(int argc, char **argv)
{
	struct fl_args a;
	enum fl_status st = fl_command_args("run", argc, argv, &a);
	if (st || a.help) {
		fl_args_release(&a);
		return st;
	}
	struct fl_run_opts o = {0};
	const struct fl_optval *v;
	o.out_dir = fl_args_text(&a, "--out", NULL);
	o.backend = fl_args_text(&a, "--backend", NULL);
	if ((v = fl_args_get(&a, "--seed"))) {
		o.seed = (uint64_t)v->l;
		o.seed_set = 1;
	}
	if ((v = fl_args_get(&a, "--steps")))
		o.active_steps = v->l;
	long ranks = (v = fl_args_get(&a, "--ranks")) ? v->l : 0;
	int vary = fl_args_has(&a, "--vary");
	int check = fl_args_has(&a, "--check");
	o.blind = fl_args_has(&a, "--blind");
	const char *path = a.args[0];
	fl_args_release(&a);

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
		/* wait rather than exec: a rank killed outright makes mpirun exit 137,
		 * which must still end as exit 3 with a message */
		st = fl_mpirun((int)sc.ranks, argv, argc, 0);
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
		fl_print_run_result(&sc, &r);
	if (check) { /* every rank's trace is written: gather their names at rank 0 */
		char **all = NULL;
		if (fl_comm_gather_strings(r.trace_path, &all) == FL_OK && all) {
			size_t n = (size_t)fl_comm_size();
			fl_diagnose_check(r.truth_path, (const char *const *)all, n);
			for (size_t i = 0; i < n; i++)
				free(all[i]);
			free(all);
		}
	}
	cJSON_Delete(r.metrics);
	fl_comm_finalize();
out:
	fl_scenario_release(&sc);
	return st;
}
