#include "generator/scenario.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/outfile.h"
#include "common/sha256.h"

static const char *const top_keys[] = {"schema", "name", "description", "backend", "ranks", "seed",
				       "schedule", "workload", "faults", "output", "rubric", "baseline", NULL};
static const char *const schedule_keys[] = {"wait", "warmup", "active", NULL};
static const char *const workload_keys[] = {"kind", "mode", "batch", "dim", "min_dim", "layers", "target_step_ms",
					    "allocator", "phases", "microbatches", NULL};
static const char *const fault_keys[] = {"fault", "params", "vary", NULL};
static const char *const output_keys[] = {"trace", "truth", NULL};
static const char *const known_phases[] = {"data_loading", "forward", "backward", "optimizer", "metrics", NULL};
static const char *const default_phases[] = {"data_loading", "forward", "metrics", NULL};
static const char *const default_train_phases[] = {"data_loading", "forward", "backward", "optimizer", "metrics", NULL};

static void steps_free(struct fl_steps *s)
{
	free(s->list);
	s->list = NULL;
	s->n = 0;
}

static enum fl_status parse_steps(const char *file, const char *place, const cJSON *v, struct fl_steps *s)
{
	memset(s, 0, sizeof(*s));
	if (cJSON_IsString(v)) {
		if (strcmp(v->valuestring, "all") == 0) {
			s->all = 1;
			return FL_OK;
		}
		return fl_error(FL_EINPUT, "'%s': %s: expected \"all\", a list of step numbers or {\"every\": N, \"offset\": K}, got \"%s\"",
				file, place, v->valuestring);
	}
	if (cJSON_IsArray(v)) {
		size_t n = (size_t)cJSON_GetArraySize(v);
		s->list = calloc(n ? n : 1, sizeof(long));
		if (!s->list)
			return fl_error(FL_ERUNTIME, "out of memory");
		const cJSON *it;
		cJSON_ArrayForEach(it, v) {
			if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || it->valuedouble < 0 ||
			    it->valuedouble > 1e9) {
				size_t bad = s->n; /* steps_free() zeroes n */
				steps_free(s);
				return fl_error(FL_EINPUT, "'%s': %s[%zu]: expected a step number (an integer >= 0), got %s",
						file, place, bad, fl_json_type_name(it));
			}
			s->list[s->n++] = (long)it->valuedouble;
		}
		return FL_OK;
	}
	if (cJSON_IsObject(v)) {
		static const char *const keys[] = {"every", "offset", NULL};
		enum fl_status st = fl_json_check_keys(file, place, v, keys);
		if (!st)
			st = fl_json_get_int(file, place, v, "every", 1, 1, 1000000, &s->every);
		if (!st)
			st = fl_json_get_int(file, place, v, "offset", 0, 0, 999999, &s->offset);
		if (!st && s->offset >= s->every)
			st = fl_error(FL_EINPUT, "'%s': %s.offset: %ld must be below every (%ld)", file, place, s->offset, s->every);
		return st;
	}
	return fl_error(FL_EINPUT, "'%s': %s: expected \"all\", a list of step numbers or {\"every\": N, \"offset\": K}, got %s",
			file, place, fl_json_type_name(v));
}

enum fl_status fl_param_parse(const char *file, const char *place, const struct fl_param_spec *spec,
			      const cJSON *v, struct fl_param_value *out)
{
	switch (spec->type) {
	case FL_PARAM_NUMBER:
	case FL_PARAM_INT: {
		const char *what = spec->type == FL_PARAM_INT ? "an integer" : "a number";
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
		    (spec->type == FL_PARAM_INT && v->valuedouble != floor(v->valuedouble)))
			return fl_error(FL_EINPUT, "'%s': %s: expected %s in [%g, %g]%s%s, got %s", file, place, what,
					spec->min, spec->max, spec->unit ? " " : "", spec->unit ? spec->unit : "",
					cJSON_IsNumber(v) ? "a fraction" : fl_json_type_name(v));
		if (v->valuedouble < spec->min || v->valuedouble > spec->max)
			return fl_error(FL_EINPUT, "'%s': %s: %g is out of range, expected %s in [%g, %g]%s%s", file, place,
					v->valuedouble, what, spec->min, spec->max, spec->unit ? " " : "",
					spec->unit ? spec->unit : "");
		out->num = v->valuedouble;
		return FL_OK;
	}
	case FL_PARAM_STRING:
		if (!cJSON_IsString(v) || !v->valuestring[0])
			return fl_error(FL_EINPUT, "'%s': %s: expected a non-empty string, got %s", file, place,
					fl_json_type_name(v));
		out->str = v->valuestring;
		return FL_OK;
	case FL_PARAM_STEPS:
		return parse_steps(file, place, v, &out->steps);
	}
	return fl_error(FL_EINTERNAL, "unknown parameter type");
}

cJSON *fl_param_json(const struct fl_param_spec *spec, const struct fl_param_value *v)
{
	switch (spec->type) {
	case FL_PARAM_NUMBER:
	case FL_PARAM_INT:
		return cJSON_CreateNumber(v->num);
	case FL_PARAM_STRING:
		return cJSON_CreateString(v->str);
	case FL_PARAM_STEPS:
		if (v->steps.all)
			return cJSON_CreateString("all");
		if (v->steps.every > 0) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "every", (double)v->steps.every);
			cJSON_AddNumberToObject(o, "offset", (double)v->steps.offset);
			return o;
		}
		cJSON *a = cJSON_CreateArray();
		for (size_t i = 0; i < v->steps.n; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v->steps.list[i]));
		return a;
	}
	return cJSON_CreateNull();
}

static enum fl_status parse_fault(struct fl_scenario *sc, size_t idx, const cJSON *fo)
{
	char place[64], pplace[160];
	const char *file = sc->path;
	snprintf(place, sizeof(place), "faults[%zu]", idx);
	if (!cJSON_IsObject(fo))
		return fl_error(FL_EINPUT, "'%s': %s: expected an object {\"fault\": ID, \"params\": {...}}, got %s",
				file, place, fl_json_type_name(fo));
	enum fl_status st = fl_json_check_keys(file, place, fo, fault_keys);
	const char *id = NULL;
	if (!st)
		st = fl_json_get_string(file, place, fo, "fault", 1, &id);
	if (st)
		return st;
	const struct fl_fault_ops *ops = fl_fault_find(id);
	if (!ops) {
		char list[256] = "";
		for (size_t i = 0; fl_faults[i]; i++) {
			if (i)
				strncat(list, ", ", sizeof(list) - strlen(list) - 1);
			strncat(list, fl_faults[i]->name, sizeof(list) - strlen(list) - 1);
		}
		return fl_error(FL_EINPUT, "'%s': %s.fault: unknown fault '%s', expected one of: %s (see 'faultline faults')",
				file, place, id, list);
	}
	struct fl_fault_spec *fs = &sc->faults[idx];
	fs->ops = ops;
	fs->values = calloc(ops->n_params ? ops->n_params : 1, sizeof(*fs->values));
	fs->vary = calloc(ops->n_params ? ops->n_params : 1, sizeof(*fs->vary));
	if (!fs->values || !fs->vary)
		return fl_error(FL_ERUNTIME, "out of memory");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(fo, "params");
	if (params && !cJSON_IsObject(params))
		return fl_error(FL_EINPUT, "'%s': %s.params: expected an object, got %s", file, place,
				fl_json_type_name(params));
	const cJSON *p;
	cJSON_ArrayForEach(p, params) {
		size_t k;
		for (k = 0; k < ops->n_params; k++)
			if (strcmp(ops->params[k].name, p->string) == 0)
				break;
		if (k == ops->n_params) {
			char list[256] = "";
			for (size_t i = 0; i < ops->n_params; i++) {
				if (i)
					strncat(list, ", ", sizeof(list) - strlen(list) - 1);
				strncat(list, ops->params[i].name, sizeof(list) - strlen(list) - 1);
			}
			return fl_error(FL_EINPUT, "'%s': %s.params.%s: unknown parameter of '%s', expected one of: %s",
					file, place, p->string, ops->name, list);
		}
	}
	for (size_t k = 0; k < ops->n_params; k++) {
		const struct fl_param_spec *spec = &ops->params[k];
		snprintf(pplace, sizeof(pplace), "%s.params.%s", place, spec->name);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, spec->name);
		cJSON *defv = NULL;
		if (!v) {
			if (spec->type == FL_PARAM_STEPS)
				v = defv = cJSON_Parse(spec->def_text);
			else if (spec->type == FL_PARAM_STRING)
				v = defv = cJSON_CreateString(spec->def_text);
			else
				v = defv = cJSON_CreateNumber(spec->def);
		}
		st = fl_param_parse(file, pplace, spec, v, &fs->values[k]);
		if (defv) {
			if (spec->type == FL_PARAM_STRING)
				fs->values[k].str = spec->def_text;
			cJSON_Delete(defv);
		}
		if (st)
			return st;
	}
	const cJSON *vary = cJSON_GetObjectItemCaseSensitive(fo, "vary");
	if (vary && !cJSON_IsObject(vary))
		return fl_error(FL_EINPUT, "'%s': %s.vary: expected an object {\"PARAM\": [LOW, HIGH]}, got %s", file, place,
				fl_json_type_name(vary));
	cJSON_ArrayForEach(p, vary) {
		size_t k;
		for (k = 0; k < ops->n_params; k++)
			if (strcmp(ops->params[k].name, p->string) == 0)
				break;
		snprintf(pplace, sizeof(pplace), "%s.vary.%s", place, p->string);
		if (k == ops->n_params)
			return fl_error(FL_EINPUT, "'%s': %s: unknown parameter of '%s'", file, pplace, ops->name);
		const struct fl_param_spec *spec = &ops->params[k];
		if (spec->type != FL_PARAM_NUMBER && spec->type != FL_PARAM_INT)
			return fl_error(FL_EINPUT, "'%s': %s: only numeric parameters can vary", file, pplace);
		const cJSON *lo = cJSON_GetArrayItem(p, 0), *hi = cJSON_GetArrayItem(p, 1);
		if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) ||
		    lo->valuedouble > hi->valuedouble)
			return fl_error(FL_EINPUT, "'%s': %s: expected [LOW, HIGH] with LOW <= HIGH", file, pplace);
		struct fl_param_value tmp;
		if ((st = fl_param_parse(file, pplace, spec, lo, &tmp)) || (st = fl_param_parse(file, pplace, spec, hi, &tmp)))
			return st;
		fs->vary[k].declared = 1;
		fs->vary[k].lo = lo->valuedouble;
		fs->vary[k].hi = hi->valuedouble;
	}
	return FL_OK;
}

static uint64_t vary_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

enum fl_status fl_scenario_vary(struct fl_scenario *sc, uint64_t seed)
{
	uint64_t s = seed * 0x2545F4914F6CDD1Dull + 0x1234567;
	for (size_t i = 0; i < sc->n_faults; i++) {
		struct fl_fault_spec *fs = &sc->faults[i];
		for (int attempt = 0; attempt < 1000; attempt++) {
			for (size_t k = 0; k < fs->ops->n_params; k++) {
				struct fl_vary *v = &fs->vary[k];
				if (!v->declared)
					continue;
				double u = (double)(vary_next(&s) >> 11) * 0x1.0p-53;
				double x;
				if (fs->ops->params[k].type == FL_PARAM_INT) {
					double lo = ceil(v->lo), hi = floor(v->hi);
					x = lo + floor(u * (hi - lo + 1));
					if (x > hi)
						x = hi;
				} else {
					x = v->lo + u * (v->hi - v->lo);
					x = round(x * 1000.0) / 1000.0;
				}
				fs->values[k].num = x;
				v->drawn = 1;
			}
			/* the one cross-parameter rule the faults have: offset < period
			 * (a period named "period" or "every") */
			double period = -1, offset = -1;
			for (size_t k = 0; k < fs->ops->n_params; k++) {
				if (!strcmp(fs->ops->params[k].name, "period") || !strcmp(fs->ops->params[k].name, "every"))
					period = fs->values[k].num;
				if (!strcmp(fs->ops->params[k].name, "offset"))
					offset = fs->values[k].num;
			}
			if (period < 0 || offset < period)
				break;
			if (attempt == 999)
				return fl_error(FL_EINPUT, "'%s': faults[%zu].vary: no drawn values satisfy offset < period",
						sc->path, i);
		}
	}
	return FL_OK;
}

enum fl_status fl_scenario_load(const char *path, struct fl_scenario *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->path = strdup(path);
	enum fl_status st = fl_json_load(path, &sc->doc);
	if (st)
		return st;
	st = fl_sha256_file(path, sc->sha256);
	if (st)
		return st;
	const cJSON *d = sc->doc;
	const char *file = sc->path;
	if (!cJSON_IsObject(d))
		return fl_error(FL_EINPUT, "'%s': top level: expected an object, got %s", file, fl_json_type_name(d));
	if ((st = fl_json_check_keys(file, "", d, top_keys)))
		return st;
	const char *schema = NULL;
	if ((st = fl_json_get_string(file, "", d, "schema", 1, &schema)))
		return st;
	if (strncmp(schema, "faultline.scenario/", 19) != 0)
		return fl_error(FL_EINPUT, "'%s': schema: expected \"faultline.scenario/1\", got \"%s\"", file, schema);
	if (strcmp(schema + 19, "1") != 0)
		return fl_error(FL_EINPUT, "'%s': schema: unsupported version \"%s\", this faultline reads faultline.scenario/1",
				file, schema);
	if ((st = fl_json_get_string(file, "", d, "name", 1, &sc->name)))
		return st;
	for (const char *p = sc->name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_' || *p == '.'))
			return fl_error(FL_EINPUT, "'%s': name: expected letters, digits, '-', '_' or '.', got \"%s\"", file, sc->name);
	sc->description = "";
	sc->backend = "cpu";
	sc->ranks = 1;
	if ((st = fl_json_get_string(file, "", d, "description", 0, &sc->description)) ||
	    (st = fl_json_get_string(file, "", d, "backend", 0, &sc->backend)) ||
	    (st = fl_json_get_int(file, "", d, "ranks", 0, 1, 1024, &sc->ranks)) ||
	    (st = fl_json_get_string(file, "", d, "rubric", 0, &sc->rubric)) ||
	    (st = fl_json_get_string(file, "", d, "baseline", 0, &sc->baseline)))
		return st;
	long seed = 0;
	if ((st = fl_json_get_int(file, "", d, "seed", 0, 0, 2147483647L, &seed)))
		return st;
	sc->seed = (uint64_t)seed;

	sc->wait = 1;
	sc->warmup = 1;
	sc->active = 8;
	const cJSON *sch = cJSON_GetObjectItemCaseSensitive(d, "schedule");
	if (sch) {
		if (!cJSON_IsObject(sch))
			return fl_error(FL_EINPUT, "'%s': schedule: expected an object, got %s", file, fl_json_type_name(sch));
		if ((st = fl_json_check_keys(file, "schedule", sch, schedule_keys)) ||
		    (st = fl_json_get_int(file, "schedule", sch, "wait", 0, 0, 1000000, &sc->wait)) ||
		    (st = fl_json_get_int(file, "schedule", sch, "warmup", 0, 1, 1000000, &sc->warmup)) ||
		    (st = fl_json_get_int(file, "schedule", sch, "active", 0, 1, 1000000, &sc->active)))
			return st;
	}

	const cJSON *w = cJSON_GetObjectItemCaseSensitive(d, "workload");
	sc->workload.kind = "mlp";
	sc->workload.mode = "inference";
	sc->workload.batch = 64;
	sc->workload.dim = 512;
	sc->workload.layers = 4;
	sc->workload.target_step_ms = 0.3;
	sc->workload.alloc = FL_ALLOC_SYSTEM;
	sc->workload.microbatches = 0;
	sc->workload.min_dim = 0;
	if (!w)
		return fl_error(FL_EINPUT, "'%s': workload: missing, expected an object", file);
	if (!cJSON_IsObject(w))
		return fl_error(FL_EINPUT, "'%s': workload: expected an object, got %s", file, fl_json_type_name(w));
	const char *alloc = "system";
	if ((st = fl_json_check_keys(file, "workload", w, workload_keys)) ||
	    (st = fl_json_get_string(file, "workload", w, "kind", 0, &sc->workload.kind)) ||
	    (st = fl_json_get_string(file, "workload", w, "mode", 0, &sc->workload.mode)) ||
	    (st = fl_json_get_int(file, "workload", w, "batch", 0, 1, 65536, &sc->workload.batch)) ||
	    (st = fl_json_get_int(file, "workload", w, "dim", 0, 8, 8192, &sc->workload.dim)) ||
	    (st = fl_json_get_int(file, "workload", w, "min_dim", 0, 0, 8192, &sc->workload.min_dim)) ||
	    (st = fl_json_get_int(file, "workload", w, "layers", 0, 1, 16, &sc->workload.layers)) ||
	    (st = fl_json_get_number(file, "workload", w, "target_step_ms", 0, &sc->workload.target_step_ms)) ||
	    (st = fl_json_get_string(file, "workload", w, "allocator", 0, &alloc)) ||
	    (st = fl_json_get_int(file, "workload", w, "microbatches", 0, 1, 1024, &sc->workload.microbatches)))
		return st;
	if (strcmp(sc->workload.kind, "mlp") != 0 && strcmp(sc->workload.kind, "pipeline") != 0 &&
	    strcmp(sc->workload.kind, "moe") != 0)
		return fl_error(FL_EINPUT, "'%s': workload.kind: expected \"mlp\", \"pipeline\" or \"moe\", got \"%s\"", file,
				sc->workload.kind);
	int pipeline = strcmp(sc->workload.kind, "pipeline") == 0, moe = strcmp(sc->workload.kind, "moe") == 0;
	if ((pipeline || moe) && !cJSON_GetObjectItemCaseSensitive(w, "mode"))
		sc->workload.mode = "train"; /* a pipeline and a mixture of experts train */
	if ((pipeline || moe) && strcmp(sc->workload.mode, "train") != 0)
		return fl_error(FL_EINPUT, "'%s': workload.mode: a \"%s\" workload trains, expected \"train\", got \"%s\"",
				file, sc->workload.kind, sc->workload.mode);
	if (!pipeline && sc->workload.microbatches)
		return fl_error(FL_EINPUT, "'%s': workload.microbatches: only a \"pipeline\" workload has micro-batches", file);
	if (pipeline && !sc->workload.microbatches)
		sc->workload.microbatches = 8;
	if (pipeline && sc->workload.microbatches > sc->workload.batch)
		return fl_error(FL_EINPUT, "'%s': workload.microbatches: %ld is more than the batch (%ld rows)", file,
				sc->workload.microbatches, sc->workload.batch);
	if (sc->workload.min_dim > sc->workload.dim)
		return fl_error(FL_EINPUT, "'%s': workload.min_dim: %ld is above workload.dim (%ld), expected at most the largest dim",
				file, sc->workload.min_dim, sc->workload.dim);
	if (strcmp(sc->workload.mode, "inference") != 0 && strcmp(sc->workload.mode, "train") != 0)
		return fl_error(FL_EINPUT, "'%s': workload.mode: expected \"inference\" or \"train\", got \"%s\"", file,
				sc->workload.mode);
	if (!(sc->workload.target_step_ms > 0.01 && sc->workload.target_step_ms <= 10000))
		return fl_error(FL_EINPUT, "'%s': workload.target_step_ms: %g is out of range, expected a number in [0.01, 10000]",
				file, sc->workload.target_step_ms);
	if (strcmp(alloc, "system") == 0)
		sc->workload.alloc = FL_ALLOC_SYSTEM;
	else if (strcmp(alloc, "heap") == 0)
		sc->workload.alloc = FL_ALLOC_HEAP;
	else
		return fl_error(FL_EINPUT, "'%s': workload.allocator: expected \"system\" or \"heap\", got \"%s\"", file, alloc);
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(w, "phases");
	if (ph) {
		if (!cJSON_IsArray(ph) || cJSON_GetArraySize(ph) < 1 || cJSON_GetArraySize(ph) > FL_MAX_PHASES)
			return fl_error(FL_EINPUT, "'%s': workload.phases: expected an array of 1 to %d phase names",
					file, FL_MAX_PHASES);
		const cJSON *it;
		cJSON_ArrayForEach(it, ph) {
			size_t i = sc->workload.n_phases;
			if (!cJSON_IsString(it))
				return fl_error(FL_EINPUT, "'%s': workload.phases[%zu]: expected a phase name, got %s", file, i,
						fl_json_type_name(it));
			int ok = 0;
			for (const char *const *k = known_phases; *k; k++)
				ok |= strcmp(*k, it->valuestring) == 0;
			if (!ok)
				return fl_error(FL_EINPUT, "'%s': workload.phases[%zu]: unknown phase \"%s\", expected one of: data_loading, forward, backward, optimizer, metrics",
						file, i, it->valuestring);
			sc->workload.phases[sc->workload.n_phases++] = it->valuestring;
		}
	} else {
		const char *const *def = strcmp(sc->workload.mode, "train") == 0 ? default_train_phases : default_phases;
		for (const char *const *k = def; *k; k++)
			sc->workload.phases[sc->workload.n_phases++] = *k;
	}

	const cJSON *faults = cJSON_GetObjectItemCaseSensitive(d, "faults");
	if (faults) {
		if (!cJSON_IsArray(faults))
			return fl_error(FL_EINPUT, "'%s': faults: expected an array, got %s", file, fl_json_type_name(faults));
		if (cJSON_GetArraySize(faults) > FL_MAX_FAULTS)
			return fl_error(FL_EINPUT, "'%s': faults: at most %d faults per scenario", file, FL_MAX_FAULTS);
		const cJSON *fo;
		size_t i = 0;
		cJSON_ArrayForEach(fo, faults) {
			sc->n_faults = i + 1;
			if ((st = parse_fault(sc, i, fo)))
				return st;
			i++;
		}
	}

	const cJSON *out = cJSON_GetObjectItemCaseSensitive(d, "output");
	if (out) {
		if (!cJSON_IsObject(out))
			return fl_error(FL_EINPUT, "'%s': output: expected an object, got %s", file, fl_json_type_name(out));
		if ((st = fl_json_check_keys(file, "output", out, output_keys)) ||
		    (st = fl_json_get_string(file, "output", out, "trace", 0, &sc->out_trace)) ||
		    (st = fl_json_get_string(file, "output", out, "truth", 0, &sc->out_truth)))
			return st;
	}
	return FL_OK;
}

void fl_scenario_release(struct fl_scenario *sc)
{
	for (size_t i = 0; i < sc->n_faults; i++) {
		if (!sc->faults[i].values)
			continue;
		for (size_t k = 0; k < sc->faults[i].ops->n_params; k++)
			steps_free(&sc->faults[i].values[k].steps);
		free(sc->faults[i].values);
		free(sc->faults[i].vary);
	}
	cJSON_Delete(sc->doc);
	free(sc->path);
	memset(sc, 0, sizeof(*sc));
}
