#include "generator/truth.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "capture/clock.h"
#include "common/jsonutil.h"
#include "common/sha256.h"

static cJSON *fault_json(const struct fl_fault *f, const struct fl_scenario *sc, size_t idx)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "fault", f->ops->name);
	cJSON_AddStringToObject(o, "family", f->ops->family);
	cJSON_AddStringToObject(o, "fix", f->ops->fix);
	cJSON *p = cJSON_AddObjectToObject(o, "params");
	for (size_t k = 0; k < f->ops->n_params; k++)
		cJSON_AddItemToObject(p, f->ops->params[k].name,
				      fl_param_json(&f->ops->params[k], &sc->faults[idx].values[k]));
	cJSON *varied = NULL;
	for (size_t k = 0; k < f->ops->n_params; k++) {
		const struct fl_vary *v = &sc->faults[idx].vary[k];
		if (!v->drawn)
			continue;
		if (!varied)
			varied = cJSON_AddObjectToObject(o, "varied");
		cJSON *vj = cJSON_AddObjectToObject(varied, f->ops->params[k].name);
		cJSON *rg = cJSON_AddArrayToObject(vj, "range");
		cJSON_AddItemToArray(rg, cJSON_CreateNumber(v->lo));
		cJSON_AddItemToArray(rg, cJSON_CreateNumber(v->hi));
		cJSON_AddNumberToObject(vj, "drawn", sc->faults[idx].values[k].num);
	}
	cJSON *steps = cJSON_AddArrayToObject(o, "affected_steps");
	cJSON *rsteps = cJSON_AddArrayToObject(o, "affected_recorded_steps");
	cJSON *phases = cJSON_AddArrayToObject(o, "affected_phases");
	size_t stored = f->n_inst < f->cap_inst ? f->n_inst : f->cap_inst;
	long last = -1;
	for (size_t i = 0; i < stored; i++) {
		const struct fl_instance *in = &f->inst[i];
		if (in->step != last) {
			cJSON_AddItemToArray(steps, cJSON_CreateNumber((double)in->step));
			if (in->recorded)
				cJSON_AddItemToArray(rsteps, cJSON_CreateNumber((double)in->step));
			last = in->step;
		}
		int seen = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, phases) seen |= strcmp(it->valuestring, in->phase) == 0;
		if (!seen)
			cJSON_AddItemToArray(phases, cJSON_CreateString(in->phase));
	}
	cJSON *insts = cJSON_AddArrayToObject(o, "instances");
	for (size_t i = 0; i < stored; i++) {
		const struct fl_instance *in = &f->inst[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "step", (double)in->step);
		cJSON_AddBoolToObject(j, "recorded", in->recorded);
		cJSON_AddStringToObject(j, "phase", in->phase);
		cJSON_AddNumberToObject(j, "requested", in->requested);
		cJSON_AddNumberToObject(j, "measured", in->measured);
		cJSON_AddStringToObject(j, "unit", in->unit ? in->unit : "");
		for (int k = 0; k < 2; k++)
			if (in->extra_name[k])
				cJSON_AddNumberToObject(j, in->extra_name[k], in->extra[k]);
		cJSON_AddItemToArray(insts, j);
	}
	cJSON_AddNumberToObject(o, "instances_lost", (double)(f->n_inst - stored));
	return o;
}

enum fl_status fl_truth_write(const char *path, const struct fl_truth_input *in)
{
	const struct fl_scenario *sc = in->sc;
	char hash[65];
	enum fl_status st = fl_sha256_file(in->trace_path, hash);
	if (st)
		return st;
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "schema", "faultline.truth/1");

	cJSON *s = cJSON_AddObjectToObject(root, "scenario");
	cJSON_AddStringToObject(s, "name", sc->name);
	const char *base = strrchr(sc->path, '/');
	cJSON_AddStringToObject(s, "file", base ? base + 1 : sc->path);
	cJSON_AddStringToObject(s, "sha256", sc->sha256);
	cJSON_AddStringToObject(s, "description", sc->description);
	if (sc->rubric)
		cJSON_AddStringToObject(s, "rubric", sc->rubric);
	cJSON_AddNumberToObject(s, "seed", (double)in->seed);
	cJSON *sch = cJSON_AddObjectToObject(s, "schedule");
	cJSON_AddNumberToObject(sch, "wait", (double)sc->wait);
	cJSON_AddNumberToObject(sch, "warmup", (double)sc->warmup);
	cJSON_AddNumberToObject(sch, "active", (double)in->active);
	cJSON *rec = cJSON_AddArrayToObject(sch, "recorded_steps");
	for (long k = sc->wait + sc->warmup; k < sc->wait + sc->warmup + in->active; k++)
		cJSON_AddItemToArray(rec, cJSON_CreateNumber((double)k));

	cJSON *traces = cJSON_AddArrayToObject(root, "traces");
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "file", in->trace_name);
	cJSON_AddStringToObject(t, "sha256", hash);
	cJSON_AddNumberToObject(t, "rank", 0);
	cJSON_AddNumberToObject(t, "events", (double)in->trace_stats->events);
	cJSON_AddNumberToObject(t, "dropped_events", (double)in->trace_stats->dropped);
	cJSON_AddItemToArray(traces, t);

	cJSON *env = cJSON_AddObjectToObject(root, "environment");
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	struct utsname u;
	uname(&u);
	cJSON_AddStringToObject(env, "backend", in->backend);
	cJSON_AddStringToObject(env, "host", host);
	cJSON_AddStringToObject(env, "os", u.sysname);
	cJSON_AddStringToObject(env, "machine", u.machine);
	cJSON_AddNumberToObject(env, "cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
	cJSON_AddStringToObject(env, "faultline_version", FL_VERSION);
	cJSON_AddStringToObject(env, "clock", fl_clock_source());
	cJSON_AddNumberToObject(env, "tsc_hz", fl_clock_tsc_hz());
	const struct fl_calibration *c = in->calibration;
	cJSON *cal = cJSON_AddObjectToObject(env, "calibration");
	cJSON_AddNumberToObject(cal, "target_step_ms", c->target_ms);
	cJSON_AddNumberToObject(cal, "batch", c->batch);
	cJSON_AddNumberToObject(cal, "dim", c->dim);
	cJSON_AddNumberToObject(cal, "max_dim", c->max_dim);
	cJSON_AddNumberToObject(cal, "measured_step_ms", c->measured_ms);
	cJSON_AddStringToObject(cal, "allocator", fl_alloc_policy_name(c->alloc));
	cJSON *tries = cJSON_AddArrayToObject(cal, "tried");
	for (int k = 0; k < c->n_tries; k++) {
		cJSON *tr = cJSON_CreateObject();
		cJSON_AddNumberToObject(tr, "dim", c->try_dim[k]);
		cJSON_AddNumberToObject(tr, "step_ms", c->try_ms[k]);
		cJSON_AddItemToArray(tries, tr);
	}
	cJSON_AddNumberToObject(env, "final_loss", in->last_loss);

	cJSON *faults = cJSON_AddArrayToObject(root, "faults");
	for (size_t i = 0; i < in->n_faults; i++)
		cJSON_AddItemToArray(faults, fault_json(&in->faults[i], sc, i));

	cJSON_AddItemToObject(root, "metrics", cJSON_Duplicate(in->metrics, 1));
	if (in->baseline_metrics) {
		cJSON *b = cJSON_AddObjectToObject(root, "baseline");
		cJSON_AddStringToObject(b, "scenario", in->baseline_name ? in->baseline_name : "");
		cJSON_AddItemToObject(b, "metrics", cJSON_Duplicate(in->baseline_metrics, 1));
	}

	/* the answer key: catalog IDs of what was injected */
	cJSON *key = cJSON_AddObjectToObject(root, "answer_key");
	cJSON *fam = cJSON_AddArrayToObject(key, "families");
	cJSON *fix = cJSON_AddArrayToObject(key, "fixes");
	if (in->n_faults == 0) {
		cJSON_AddItemToArray(fam, cJSON_CreateString("healthy"));
		cJSON_AddItemToArray(fix, cJSON_CreateString("none"));
	}
	for (size_t i = 0; i < in->n_faults; i++) {
		cJSON_AddItemToArray(fam, cJSON_CreateString(in->faults[i].ops->family));
		cJSON_AddItemToArray(fix, cJSON_CreateString(in->faults[i].ops->fix));
	}

	st = fl_json_write(path, root);
	cJSON_Delete(root);
	return st;
}
