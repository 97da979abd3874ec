/* fleet.c — faultline fleet generate: load, vary, simulate, write, report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/outfile.h"

#include "generator/fleet.h"
#include "generator/fleet_internal.h"

/* The rubric the scenario names, from beside the scenario to beside the
 * truth, where grade looks first. */
static enum fl_status copy_rubric(const char *scenario_path, const struct fl_fleet_scenario *sc, const char *dir)
{
	if (!sc->rubric || strchr(sc->rubric, '/'))
		return FL_OK;
	struct strbuf from = STRBUF_INIT, to = STRBUF_INIT;
	const char *slash = strrchr(scenario_path, '/');
	if (slash)
		strbuf_add(&from, scenario_path, (size_t)(slash - scenario_path + 1));
	strbuf_adds(&from, sc->rubric);
	strbuf_addf(&to, "%s/%s", dir, sc->rubric);
	char *buf = NULL;
	size_t len = 0;
	enum fl_status st = FL_OK;
	if (access(from.buf, R_OK) == 0 && !(st = fl_read_file(from.buf, &buf, &len)))
		st = fl_write_file_atomic(to.buf, buf, len);
	free(buf);
	strbuf_release(&from);
	strbuf_release(&to);
	return st;
}

enum fl_status fl_fleet_generate(const char *path, const struct fl_fleet_gen_opts *o, struct strbuf *report)
{
	struct fl_fleet_scenario sc;
	struct fl_fleet_sim sim = {0};
	cJSON *truth = NULL;
	enum fl_status st = fl_fleet_scenario_load(path, &sc);
	if (st)
		goto out;
	if (o->have_seed)
		sc.seed = o->seed;
	if (o->vary)
		fl_fleet_scenario_vary(&sc, sc.seed);
	const char *dir = o->out_dir ? o->out_dir : sc.out_dir ? sc.out_dir : "out";
	if ((st = fl_fleet_simulate(&sc, &sim)) || (st = fl_fleet_write(&sc, &sim, dir, &truth)) ||
	    (st = copy_rubric(path, &sc, dir)))
		goto out;
	if (o->json) {
		char *s = cJSON_Print(truth);
		if (!s)
			abort();
		strbuf_addf(report, "%s\n", s);
		free(s);
		goto out;
	}
	const cJSON *re = cJSON_GetObjectItem(truth, "realised"), *ar = cJSON_GetObjectItem(re, "at_risk");
	const cJSON *inj = cJSON_GetObjectItem(truth, "injected");
	strbuf_addf(report, "SIMULATED fleet '%s' (seed %llu): %d nodes x %d GPUs, %zu jobs\n", sc.name,
		    (unsigned long long)sc.seed, sc.nodes, sc.gpus_per_node, sim.njobs);
	const cJSON *mt = cJSON_GetObjectItem(inj, "mtbf_years_per_gpu");
	if (cJSON_IsNumber(mt))
		strbuf_addf(report, "injected per-GPU MTBF %.3g years; node failures %ld (%ld killed jobs), NODE_FAIL in "
			    "the population (>= %ld GPUs, >= %g h) %.0f over %.1f GPU-hours at risk (expected %.2f)\n",
			    mt->valuedouble, sim.failures, sim.failures_busy, sc.min_gpus, sc.min_hours,
			    cJSON_GetObjectItem(ar, "failures")->valuedouble,
			    cJSON_GetObjectItem(ar, "gpu_hours_at_risk")->valuedouble,
			    cJSON_GetObjectItem(ar, "expected_failures")->valuedouble);
	else
		strbuf_addf(report, "no node failures injected\n");
	strbuf_addf(report, "wrote %s/%s, %s/%s, %s/README.txt and the truth %s/%s%s\n", dir, sc.jobs_file, dir,
		    sc.xid_file, dir, dir, sc.truth_file ? sc.truth_file : sc.name, sc.truth_file ? "" : ".truth.json");
out:
	cJSON_Delete(truth);
	fl_fleet_sim_release(&sim);
	fl_fleet_scenario_release(&sc);
	return st;
}
