#include "generator/harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/kineto_writer.h"
#include "capture/tracer.h"
#include "generator/truth.h"
#include "grader/host_metrics.h"
#include "grader/trace_reader.h"

#define MAX_SPANS 16

struct fl_harness {
	struct fl_workload wl;
	struct fl_fault faults[FL_MAX_FAULTS];
	size_t n_faults;
	struct fl_step_ctx ctx;
	const char *span_names[MAX_SPANS];
	uint32_t span_ids[MAX_SPANS];
	size_t n_spans;
};

void fl_harness_declare_span(struct fl_harness *h, const char *span)
{
	for (size_t i = 0; i < h->n_spans; i++)
		if (strcmp(h->span_names[i], span) == 0)
			return;
	if (h->n_spans == MAX_SPANS)
		return;
	h->span_names[h->n_spans] = span;
	h->span_ids[h->n_spans] = fl_tracer_intern(span);
	h->n_spans++;
}

static uint32_t span_id(struct fl_harness *h, const char *span)
{
	for (size_t i = 0; i < h->n_spans; i++)
		if (strcmp(h->span_names[i], span) == 0)
			return h->span_ids[i];
	return FL_SLOT_NONE;
}

void fl_harness_run_span(struct fl_harness *h, const char *span, void (*fn)(void *), void *arg)
{
	uint32_t id = span_id(h, span);
	uint32_t slot = id == FL_SLOT_NONE ? FL_SLOT_NONE : fl_span_begin(id, FL_EV_USER_ANNOTATION);
	fn(arg);
	fl_span_end(slot);
}

static void run_sites(void *arg, enum fl_site s, struct fl_tensor **t)
{
	struct fl_harness *h = arg;
	for (size_t i = 0; i < h->n_faults; i++)
		if (h->faults[i].ops->site)
			h->faults[i].ops->site(&h->faults[i], &h->ctx, s, t);
}

#define EACH_FAULT(h, hook)                                                   \
	for (size_t fi_ = 0; fi_ < (h)->n_faults; fi_++)                      \
		if ((h)->faults[fi_].ops->hook)                               \
			(h)->faults[fi_].ops->hook(&(h)->faults[fi_], &(h)->ctx)

enum fl_status fl_prepare_out_dir(const char *dir)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return fl_error(FL_EINPUT, "output directory '%s': path too long", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return fl_error(FL_ERUNTIME, "cannot create output directory '%s': %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return fl_error(FL_ERUNTIME, "cannot create output directory '%s': %s", buf, strerror(errno));
	struct stat stt;
	if (stat(buf, &stt) != 0 || !S_ISDIR(stt.st_mode))
		return fl_error(FL_ERUNTIME, "output directory '%s': not a directory", dir);
	if (access(buf, W_OK | X_OK) != 0)
		return fl_error(FL_ERUNTIME, "cannot write to output directory '%s': %s", dir, strerror(errno));
	return FL_OK;
}

static void join(char *out, size_t n, const char *dir, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

enum fl_status fl_run_scenario(const struct fl_scenario *sc, const struct fl_run_opts *o, struct fl_run_result *r)
{
	enum fl_status st;
	struct fl_harness *h = NULL;
	struct fl_backend be = {0};
	int be_open = 0, wl_init = 0;
	const char *out_dir = o->out_dir ? o->out_dir : "out";
	const char *backend = o->backend ? o->backend : sc->backend;
	uint64_t seed = o->seed_set ? o->seed : sc->seed;
	long active = o->active_steps > 0 ? o->active_steps : sc->active;
	long total = sc->wait + sc->warmup + active;
	uint64_t t_start = fl_clock_realtime_ns();

	memset(r, 0, sizeof(*r));
	if (sc->ranks > 1)
		return fl_error(FL_EINPUT, "scenario '%s' asks for %ld ranks; multi-rank runs need the emu backend, which this build does not have yet",
				sc->name, sc->ranks);
	if (strcmp(backend, "auto") == 0)
		backend = "cpu"; /* the only backend built so far */
	be.ops = fl_backend_find(backend);
	if (!be.ops) {
		return fl_error(FL_EINPUT, "scenario '%s': backend '%s' is not available, expected one of: cpu",
				sc->name, backend);
	}
	if ((st = fl_prepare_out_dir(out_dir)))
		return st;
	char trace_name[256], truth_name[256];
	snprintf(trace_name, sizeof(trace_name), "%s", sc->out_trace ? sc->out_trace : "");
	if (!sc->out_trace)
		snprintf(trace_name, sizeof(trace_name), "%s.json.gz", sc->name);
	snprintf(truth_name, sizeof(truth_name), "%s", sc->out_truth ? sc->out_truth : "");
	if (!sc->out_truth)
		snprintf(truth_name, sizeof(truth_name), "%s.truth.json", sc->name);
	join(r->trace_path, sizeof(r->trace_path), out_dir, trace_name);
	join(r->truth_path, sizeof(r->truth_path), out_dir, truth_name);

	if ((st = fl_tracer_init(1u << 16)))
		return st;
	if ((st = be.ops->open(&be)))
		goto out;
	be_open = 1;

	/* calibration: once per machine and workload shape */
	if (o->calibration)
		r->calibration = *o->calibration;
	else
		fl_workload_calibrate(&r->calibration, &be, sc->workload.alloc, (int)sc->workload.batch,
				      (int)sc->workload.dim, sc->workload.target_step_ms, seed);
	if (!o->quiet)
		fprintf(stderr, "faultline: %s: calibrated dim %d (healthy step %.3f ms, target %.3f ms)\n", sc->name,
			r->calibration.dim, r->calibration.measured_ms, r->calibration.target_ms);

	h = calloc(1, sizeof(*h));
	if (!h) {
		st = fl_error(FL_ERUNTIME, "out of memory");
		goto out;
	}
	if ((st = fl_tracer_thread_attach("main", -1)))
		goto out;
	fl_workload_init(&h->wl, &be, sc->workload.alloc, r->calibration.batch, r->calibration.dim, seed);
	wl_init = 1;
	h->wl.site = run_sites;
	h->wl.site_arg = h;
	h->ctx.rt = &h->wl.rt;
	h->ctx.harness = h;

	uint32_t phase_id[FL_MAX_PHASES];
	for (size_t p = 0; p < sc->workload.n_phases; p++)
		phase_id[p] = fl_tracer_intern(sc->workload.phases[p]);
	uint32_t *step_id = calloc((size_t)total, sizeof(*step_id));
	if (!step_id) {
		st = fl_error(FL_ERUNTIME, "out of memory");
		goto out;
	}
	for (long s = 0; s < total; s++) {
		char nm[48];
		snprintf(nm, sizeof(nm), "ProfilerStep#%ld", s);
		step_id[s] = fl_tracer_intern(nm);
	}

	struct fl_fault_env env = {
		.backend = be.ops->name,
		.phases = sc->workload.phases,
		.n_phases = sc->workload.n_phases,
		.total_steps = total,
		.harness = h,
	};
	for (size_t i = 0; i < sc->n_faults; i++) {
		struct fl_fault *f = &h->faults[i];
		f->ops = sc->faults[i].ops;
		f->params = sc->faults[i].values;
		f->seed = seed * 1000003u + i;
		f->cap_inst = (size_t)total * 4 + 16;
		f->inst = calloc(f->cap_inst, sizeof(*f->inst));
		h->n_faults = i + 1;
		if (!f->inst) {
			st = fl_error(FL_ERUNTIME, "out of memory");
			goto out_steps;
		}
		if (f->ops->init && (st = f->ops->init(f, &env))) {
			fl_error_prefix(st, "'%s': faults[%zu]: ", sc->path, i);
			goto out_steps;
		}
	}

	uint64_t window_t0 = 0, window_t1 = 0;
	long first_active = sc->wait + sc->warmup;
	for (long s = 0; s < total; s++) {
		if (s == sc->wait)
			fl_tracer_set_recording(1); /* warmup: recorded, then discarded */
		if (s == first_active) {
			fl_tracer_set_recording(0);
			uint32_t per_step = fl_tracer_max_count() / (uint32_t)(sc->warmup ? sc->warmup : 1);
			uint64_t need = (uint64_t)per_step * (uint64_t)active * 2 + 4096;
			if (need > (1u << 28))
				need = 1u << 28;
			if ((st = fl_tracer_reserve((uint32_t)need)))
				goto out_steps;
			window_t0 = fl_clock_ticks();
			fl_tracer_set_recording(1);
		}
		h->ctx.step = s;
		h->ctx.recorded = s >= first_active;
		h->ctx.phase = NULL;
		uint32_t step_slot = fl_span_begin(step_id[s], FL_EV_USER_ANNOTATION);
		EACH_FAULT(h, step_begin);
		for (size_t p = 0; p < sc->workload.n_phases; p++) {
			h->ctx.phase = sc->workload.phases[p];
			uint32_t ps = fl_span_begin(phase_id[p], FL_EV_USER_ANNOTATION);
			EACH_FAULT(h, phase_begin);
			fl_workload_run_phase(&h->wl, sc->workload.phases[p]);
			EACH_FAULT(h, phase_end);
			fl_span_end(ps);
		}
		h->ctx.phase = NULL;
		EACH_FAULT(h, step_end);
		fl_span_end(step_slot);
	}
	window_t1 = fl_clock_ticks();
	fl_tracer_set_recording(0);

	struct fl_trace_meta meta = {
		.trace_name = trace_name,
		.process_name = "faultline",
		.device_properties = be.ops->device_properties ? be.ops->device_properties(&be) : "[]",
		.rank = 0,
		.world_size = 1,
		.dist_backend = "none",
		.window_t0 = window_t0,
		.window_t1 = window_t1,
		.seed = seed,
	};
	struct fl_trace_stats tstats;
	if ((st = fl_kineto_write(r->trace_path, &meta, &tstats)))
		goto out_steps;

	/* metrics recomputed from the written trace, by the reader learners' tools mirror */
	struct fl_trace t;
	if ((st = fl_trace_read(r->trace_path, &t))) {
		fl_error_prefix(FL_EINTERNAL, "reading back the trace just written: ");
		st = FL_EINTERNAL;
		goto out_steps;
	}
	struct fl_host_metrics hm;
	fl_host_metrics_compute(&t, &hm);
	r->metrics = fl_host_metrics_json(&hm);
	fl_host_metrics_release(&hm);
	fl_trace_release(&t);

	struct fl_truth_input ti = {
		.sc = sc,
		.backend = be.ops->name,
		.seed = seed,
		.active = active,
		.trace_path = r->trace_path,
		.trace_name = trace_name,
		.trace_stats = &tstats,
		.calibration = &r->calibration,
		.faults = h->faults,
		.n_faults = h->n_faults,
		.metrics = r->metrics,
		.baseline_metrics = o->baseline_metrics,
		.baseline_name = o->baseline_name,
		.last_loss = h->wl.last_loss,
	};
	st = fl_truth_write(r->truth_path, &ti);
	if (st)
		unlink(r->trace_path); /* a trace without its truth is no use to anyone */

out_steps:
	free(step_id);
out:
	if (h) {
		for (size_t i = 0; i < h->n_faults; i++) {
			if (h->faults[i].ops->release)
				h->faults[i].ops->release(&h->faults[i]);
			free(h->faults[i].inst);
		}
		if (wl_init)
			fl_workload_release(&h->wl);
		free(h);
	}
	if (be_open && be.ops->close)
		be.ops->close(&be);
	fl_tracer_release();
	r->wall_s = (double)(fl_clock_realtime_ns() - t_start) / 1e9;
	if (st && r->metrics) {
		cJSON_Delete(r->metrics);
		r->metrics = NULL;
	}
	return st;
}
