/* fleet_scenario.c — reading a fleet scenario (faultline.fleet_scenario/1)
 * with errors that name the file, the key and what was expected; vary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "generator/fleet_internal.h"
#include "grader/analysis/fleet.h"

static const char *const top_keys[] = {"schema", "name", "description", "seed", "cluster", "workload", "faults",
				       "analysis", "output", "rubric", NULL};
static const char *const cluster_keys[] = {"nodes", "gpus_per_node", "start", "days", "format", NULL};
static const char *const workload_keys[] = {"jobs_per_day", "time_limit_hours", "xid_noise_per_day",
					    "restart_delay_min", "mix", NULL};
static const char *const class_keys[] = {"name", "type", "share", "gpus", "gpu_weights", "median_min", "sigma",
					 "p_cancel", "p_fail", "p_restart", NULL};
static const char *const fault_keys[] = {"fault", "params", "vary", NULL};
static const char *const analysis_keys[] = {"min_gpus", "min_hours", "ckpt_cost_min", "job_gpus", NULL};
static const char *const output_keys[] = {"dir", "jobs", "xid", "truth", NULL};

static enum fl_status get_range(const char *file, const char *place, const cJSON *o, const char *key, int required,
				double lo, double hi, double *out)
{
	enum fl_status st = fl_json_get_number(file, place, o, key, required, out);
	if (st)
		return st;
	if (!(*out >= lo && *out <= hi))
		return fl_error(FL_EINPUT, "'%s': %s%s%s: %g is out of range, expected a number in [%g, %g]", file, place,
				*place ? "." : "", key, *out, lo, hi);
	return FL_OK;
}

static enum fl_status load_class(const char *file, const char *place, const cJSON *c, struct fl_fleet_class *k)
{
	enum fl_status st;
	if ((st = fl_json_check_keys(file, place, c, class_keys)) ||
	    (st = fl_json_get_string(file, place, c, "name", 1, &k->name)))
		return st;
	k->type = k->name;
	k->sigma = 1;
	if ((st = fl_json_get_string(file, place, c, "type", 0, &k->type)) ||
	    (st = get_range(file, place, c, "share", 1, 0, 1e9, &k->share)) ||
	    (st = get_range(file, place, c, "median_min", 1, 1.0 / 60, 1e7, &k->median_min)) ||
	    (st = get_range(file, place, c, "sigma", 0, 0, 10, &k->sigma)) ||
	    (st = get_range(file, place, c, "p_cancel", 0, 0, 1, &k->p_cancel)) ||
	    (st = get_range(file, place, c, "p_fail", 0, 0, 1, &k->p_fail)) ||
	    (st = get_range(file, place, c, "p_restart", 0, 0, 1, &k->p_restart)))
		return st;
	if (k->p_cancel + k->p_fail > 1)
		return fl_error(FL_EINPUT, "'%s': %s: p_cancel + p_fail is %g, expected at most 1", file, place,
				k->p_cancel + k->p_fail);
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(c, "gpus"), *w = cJSON_GetObjectItemCaseSensitive(c, "gpu_weights");
	int n = cJSON_GetArraySize(g);
	if (!cJSON_IsArray(g) || n < 1 || n > 16)
		return fl_error(FL_EINPUT, "'%s': %s.gpus: expected an array of 1 to 16 GPU counts", file, place);
	if (w && (!cJSON_IsArray(w) || cJSON_GetArraySize(w) != n))
		return fl_error(FL_EINPUT, "'%s': %s.gpu_weights: expected an array of %d weights, one per GPU count", file,
				place, n);
	double sum = 0;
	for (int i = 0; i < n; i++) {
		const cJSON *e = cJSON_GetArrayItem(g, i), *we = w ? cJSON_GetArrayItem(w, i) : NULL;
		if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble != floor(e->valuedouble) || e->valuedouble > 1e6)
			return fl_error(FL_EINPUT, "'%s': %s.gpus[%d]: expected a GPU count (an integer >= 0)", file, place, i);
		if (we && (!cJSON_IsNumber(we) || we->valuedouble < 0))
			return fl_error(FL_EINPUT, "'%s': %s.gpu_weights[%d]: expected a weight >= 0", file, place, i);
		k->gpus[i] = (long)e->valuedouble;
		sum += we ? we->valuedouble : 1;
		k->gpu_weight[i] = sum;
	}
	if (sum <= 0)
		return fl_error(FL_EINPUT, "'%s': %s.gpu_weights: all zero", file, place);
	for (int i = 0; i < n; i++)
		k->gpu_weight[i] /= sum;
	k->ngpus = (size_t)n;
	return FL_OK;
}

static enum fl_status load_fault(const char *file, const char *place, const cJSON *fo, struct fl_fleet_fault_spec *fs)
{
	enum fl_status st;
	const char *name;
	if ((st = fl_json_check_keys(file, place, fo, fault_keys)) ||
	    (st = fl_json_get_string(file, place, fo, "fault", 1, &name)))
		return st;
	fs->ops = fl_fleet_fault_find(name);
	if (!fs->ops) {
		char list[256] = "";
		for (size_t i = 0; fl_fleet_faults[i]; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", fl_fleet_faults[i]->name);
		return fl_error(FL_EINPUT, "'%s': %s.fault: unknown fleet fault '%s', expected one of: %s", file, place, name,
				list);
	}
	const struct fl_fleet_fault_ops *ops = fs->ops;
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(fo, "params"), *vary = cJSON_GetObjectItemCaseSensitive(fo, "vary");
	if (params && !cJSON_IsObject(params))
		return fl_error(FL_EINPUT, "'%s': %s.params: expected an object", file, place);
	if (vary && !cJSON_IsObject(vary))
		return fl_error(FL_EINPUT, "'%s': %s.vary: expected an object {\"PARAM\": [LOW, HIGH]}", file, place);
	const char *names[17];
	for (size_t i = 0; i < ops->n_params; i++)
		names[i] = ops->params[i].name;
	names[ops->n_params] = NULL;
	char pp[160];
	snprintf(pp, sizeof(pp), "%s.params", place);
	if (params && (st = fl_json_check_keys(file, pp, params, names)))
		return st;
	snprintf(pp, sizeof(pp), "%s.vary", place);
	if (vary && (st = fl_json_check_keys(file, pp, vary, names)))
		return st;
	for (size_t i = 0; i < ops->n_params; i++) {
		const struct fl_param_spec *ps = &ops->params[i];
		fs->values[i] = ps->def;
		snprintf(pp, sizeof(pp), "%s.params", place);
		if (params && (st = get_range(file, pp, params, ps->name, 0, ps->min, ps->max, &fs->values[i])))
			return st;
		if (ps->type == FL_PARAM_INT && fs->values[i] != floor(fs->values[i]))
			return fl_error(FL_EINPUT, "'%s': %s.%s: expected an integer, got %g", file, pp, ps->name, fs->values[i]);
		const cJSON *r = vary ? cJSON_GetObjectItemCaseSensitive(vary, ps->name) : NULL;
		if (r) {
			const cJSON *lo = cJSON_GetArrayItem(r, 0), *hi = cJSON_GetArrayItem(r, 1);
			if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 2 || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) ||
			    lo->valuedouble > hi->valuedouble || lo->valuedouble < ps->min || hi->valuedouble > ps->max)
				return fl_error(FL_EINPUT, "'%s': %s.vary.%s: expected [LOW, HIGH] within [%g, %g]", file, place,
						ps->name, ps->min, ps->max);
			fs->vary[i] = 1;
			fs->lo[i] = lo->valuedouble;
			fs->hi[i] = hi->valuedouble;
		}
	}
	return FL_OK;
}

enum fl_status fl_fleet_scenario_load(const char *path, struct fl_fleet_scenario *sc)
{
	memset(sc, 0, sizeof(*sc));
	const char *slash = strrchr(path, '/');
	sc->file = slash ? slash + 1 : path;
	enum fl_status st = fl_json_load(path, &sc->doc);
	if (st)
		return st;
	const char *f = sc->file, *schema, *start = "2023-03-01 00:00:00+00:00", *format = "kalos";
	const cJSON *d = sc->doc;
	if (!cJSON_IsObject(d))
		return fl_error(FL_EINPUT, "'%s': expected an object", f);
	if ((st = fl_json_check_keys(f, "", d, top_keys)) || (st = fl_json_get_string(f, "", d, "schema", 1, &schema)))
		return st;
	if (strcmp(schema, "faultline.fleet_scenario/1"))
		return fl_error(FL_EINPUT, "'%s': schema: '%s' is not a fleet scenario, expected faultline.fleet_scenario/1", f,
				schema);
	double seed = 0, nodes, gpn = 8;
	if ((st = fl_json_get_string(f, "", d, "name", 1, &sc->name)) ||
	    (st = fl_json_get_string(f, "", d, "description", 0, &sc->description)) ||
	    (st = fl_json_get_string(f, "", d, "rubric", 0, &sc->rubric)) ||
	    (st = get_range(f, "", d, "seed", 0, 0, 9007199254740991.0, &seed)))
		return st;
	sc->seed = (uint64_t)seed;
	const cJSON *cl = cJSON_GetObjectItemCaseSensitive(d, "cluster");
	if (!cJSON_IsObject(cl))
		return fl_error(FL_EINPUT, "'%s': cluster: expected an object {nodes, gpus_per_node, start, days, format}", f);
	sc->days = 30;
	if ((st = fl_json_check_keys(f, "cluster", cl, cluster_keys)) ||
	    (st = get_range(f, "cluster", cl, "nodes", 1, 1, 100000, &nodes)) ||
	    (st = get_range(f, "cluster", cl, "gpus_per_node", 0, 1, 64, &gpn)) ||
	    (st = get_range(f, "cluster", cl, "days", 0, 0.01, 3650, &sc->days)) ||
	    (st = fl_json_get_string(f, "cluster", cl, "start", 0, &start)) ||
	    (st = fl_json_get_string(f, "cluster", cl, "format", 0, &format)))
		return st;
	sc->nodes = (int)nodes;
	sc->gpus_per_node = (int)gpn;
	if (fl_fleet_parse_time(start, strlen(start), &sc->start))
		return fl_error(FL_EINPUT, "'%s': cluster.start: '%s' is not a time, expected 'YYYY-MM-DD HH:MM:SS+00:00'", f,
				start);
	if (strcmp(format, "kalos") && strcmp(format, "seren"))
		return fl_error(FL_EINPUT, "'%s': cluster.format: '%s', expected kalos or seren", f, format);
	sc->kalos = !strcmp(format, "kalos");

	const cJSON *w = cJSON_GetObjectItemCaseSensitive(d, "workload");
	if (!cJSON_IsObject(w))
		return fl_error(FL_EINPUT, "'%s': workload: expected an object {jobs_per_day, mix, ...}", f);
	sc->time_limit_h = 720;
	sc->restart_delay_min = 10;
	if ((st = fl_json_check_keys(f, "workload", w, workload_keys)) ||
	    (st = get_range(f, "workload", w, "jobs_per_day", 1, 0.01, 1e7, &sc->jobs_per_day)) ||
	    (st = get_range(f, "workload", w, "time_limit_hours", 0, 0.01, 1e6, &sc->time_limit_h)) ||
	    (st = get_range(f, "workload", w, "xid_noise_per_day", 0, 0, 1e6, &sc->xid_noise_per_day)) ||
	    (st = get_range(f, "workload", w, "restart_delay_min", 0, 0, 1e6, &sc->restart_delay_min)))
		return st;
	const cJSON *mix = cJSON_GetObjectItemCaseSensitive(w, "mix");
	int nm = cJSON_GetArraySize(mix);
	if (!cJSON_IsArray(mix) || nm < 1 || nm > 16)
		return fl_error(FL_EINPUT, "'%s': workload.mix: expected an array of 1 to 16 job classes", f);
	double share = 0;
	for (int i = 0; i < nm; i++) {
		char place[64];
		snprintf(place, sizeof(place), "workload.mix[%d]", i);
		const cJSON *c = cJSON_GetArrayItem(mix, i);
		if (!cJSON_IsObject(c))
			return fl_error(FL_EINPUT, "'%s': %s: expected an object", f, place);
		if ((st = load_class(f, place, c, &sc->cls[i])))
			return st;
		for (size_t k = 0; k < sc->cls[i].ngpus; k++)
			if (sc->cls[i].gpus[k] > (long)sc->nodes * sc->gpus_per_node)
				return fl_error(FL_EINPUT, "'%s': %s.gpus: %ld GPUs do not fit the %d GPUs of the cluster", f, place,
						sc->cls[i].gpus[k], sc->nodes * sc->gpus_per_node);
		share += sc->cls[i].share;
	}
	if (share <= 0)
		return fl_error(FL_EINPUT, "'%s': workload.mix: the shares sum to 0", f);
	sc->ncls = (size_t)nm;
	for (size_t i = 0; i < sc->ncls; i++)
		sc->cls[i].share /= share;

	const cJSON *fa = cJSON_GetObjectItemCaseSensitive(d, "faults");
	int nf = cJSON_GetArraySize(fa);
	if (fa && (!cJSON_IsArray(fa) || nf > 8))
		return fl_error(FL_EINPUT, "'%s': faults: expected an array of at most 8 fleet faults", f);
	for (int i = 0; i < nf; i++) {
		char place[32];
		snprintf(place, sizeof(place), "faults[%d]", i);
		const cJSON *fo = cJSON_GetArrayItem(fa, i);
		if (!cJSON_IsObject(fo))
			return fl_error(FL_EINPUT, "'%s': %s: expected an object {fault, params, vary}", f, place);
		if ((st = load_fault(f, place, fo, &sc->faults[i])))
			return st;
	}
	sc->nfaults = (size_t)nf;

	const cJSON *an = cJSON_GetObjectItemCaseSensitive(d, "analysis");
	double mg = 256, jg = 0;
	sc->ckpt_cost_min = 10;
	if (an && !cJSON_IsObject(an))
		return fl_error(FL_EINPUT, "'%s': analysis: expected an object", f);
	if (an && ((st = fl_json_check_keys(f, "analysis", an, analysis_keys)) ||
		   (st = get_range(f, "analysis", an, "min_gpus", 0, 1, 1e6, &mg)) ||
		   (st = get_range(f, "analysis", an, "min_hours", 0, 0, 1e6, &sc->min_hours)) ||
		   (st = get_range(f, "analysis", an, "ckpt_cost_min", 0, 1e-6, 1e6, &sc->ckpt_cost_min)) ||
		   (st = get_range(f, "analysis", an, "job_gpus", 0, 0, 1e6, &jg))))
		return st;
	sc->min_gpus = (long)mg;
	sc->job_gpus = jg > 0 ? (long)jg : sc->min_gpus;

	const cJSON *out = cJSON_GetObjectItemCaseSensitive(d, "output");
	sc->jobs_file = sc->kalos ? "trace_kalos.csv" : "trace_seren.csv";
	sc->xid_file = "XID_ERRORS.csv";
	sc->truth_file = NULL;
	if (out && !cJSON_IsObject(out))
		return fl_error(FL_EINPUT, "'%s': output: expected an object", f);
	if (out && ((st = fl_json_check_keys(f, "output", out, output_keys)) ||
		    (st = fl_json_get_string(f, "output", out, "dir", 0, &sc->out_dir)) ||
		    (st = fl_json_get_string(f, "output", out, "jobs", 0, &sc->jobs_file)) ||
		    (st = fl_json_get_string(f, "output", out, "xid", 0, &sc->xid_file)) ||
		    (st = fl_json_get_string(f, "output", out, "truth", 0, &sc->truth_file))))
		return st;
	const char *names[3] = {sc->jobs_file, sc->xid_file, sc->truth_file};
	for (int i = 0; i < 3; i++)
		if (names[i] && (!*names[i] || strchr(names[i], '/')))
			return fl_error(FL_EINPUT, "'%s': output: '%s' is not a file name", f, names[i]);
	return FL_OK;
}

void fl_fleet_scenario_vary(struct fl_fleet_scenario *sc, uint64_t seed)
{
	struct fl_rng r;
	fl_rng_seed(&r, seed ^ 0x7661727966656574ull); /* apart from the simulation's stream */
	sc->varied = 1;
	for (size_t i = 0; i < sc->nfaults; i++) {
		struct fl_fleet_fault_spec *fs = &sc->faults[i];
		for (size_t k = 0; k < fs->ops->n_params; k++) {
			if (!fs->vary[k])
				continue;
			double v = fs->lo[k] + fl_rng_uniform(&r) * (fs->hi[k] - fs->lo[k]);
			if (fs->ops->params[k].type == FL_PARAM_INT)
				v = floor(v + 0.5);
			fs->values[k] = v;
		}
	}
}

void fl_fleet_scenario_release(struct fl_fleet_scenario *sc)
{
	cJSON_Delete(sc->doc);
	memset(sc, 0, sizeof(*sc));
}
