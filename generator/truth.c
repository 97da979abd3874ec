#include "generator/truth.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "capture/clock.h"
#include "common/stats.h"
#include "common/jsonutil.h"
#include "runtime/tensor.h"
#include "grader/analysis/host_metrics.h"
#include "grader/trace/trace_events.h"

static cJSON *instance_json(const struct fl_instance *in)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "step", (double)in->step);
	cJSON_AddBoolToObject(j, "recorded", in->recorded);
	cJSON_AddStringToObject(j, "phase", in->phase ? in->phase : "");
	cJSON_AddNumberToObject(j, "requested", in->requested);
	cJSON_AddNumberToObject(j, "measured", in->measured);
	cJSON_AddStringToObject(j, "unit", in->unit ? in->unit : "");
	for (int k = 0; k < 2; k++)
		if (in->extra_name[k])
			cJSON_AddNumberToObject(j, in->extra_name[k], in->extra[k]);
	return j;
}

cJSON *fl_truth_rank_report(int rank, const char *trace_name, const struct fl_trace_stats *ts,
			    const struct fl_fault *faults, size_t n_faults, const struct fl_device_stats *dev)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "rank", rank);
	cJSON *t = cJSON_AddObjectToObject(r, "trace");
	cJSON_AddStringToObject(t, "file", trace_name);
	cJSON_AddNumberToObject(t, "events", (double)ts->events);
	cJSON_AddNumberToObject(t, "dropped_events", (double)ts->dropped);
	cJSON *all = cJSON_AddArrayToObject(r, "instances");
	for (size_t i = 0; i < n_faults; i++) {
		const struct fl_fault *f = &faults[i];
		cJSON *fa = cJSON_CreateObject();
		size_t stored = f->n_inst < f->cap_inst ? f->n_inst : f->cap_inst;
		cJSON_AddNumberToObject(fa, "lost", (double)(f->n_inst - stored));
		cJSON *arr = cJSON_AddArrayToObject(fa, "list");
		for (size_t k = 0; k < stored; k++) {
			cJSON *j = instance_json(&f->inst[k]);
			cJSON_AddNumberToObject(j, "rank", rank);
			cJSON_AddItemToArray(arr, j);
		}
		cJSON_AddItemToArray(all, fa);
	}
	if (dev) {
		cJSON *d = cJSON_AddObjectToObject(r, "device");
		cJSON_AddNumberToObject(d, "kernel_ms", dev->kernel_ms);
		cJSON_AddNumberToObject(d, "stretched_ms", dev->stretched_ms);
		cJSON_AddNumberToObject(d, "kernels", (double)dev->kernels);
		cJSON_AddNumberToObject(d, "copies", (double)dev->copies);
		cJSON_AddNumberToObject(d, "syncs", (double)dev->syncs);
		cJSON_AddNumberToObject(d, "collectives", (double)dev->collectives);
	}
	return r;
}

enum fl_status fl_truth_rank_readback(cJSON *report, const char *trace_path)
{
	/* one pass hashes the file and collects its events */
	struct fl_trace trace;
	enum fl_status st = fl_trace_read_hashed(trace_path, &trace);
	if (st) {
		fl_error_prefix(FL_EINTERNAL, "reading back the trace just written: ");
		return FL_EINTERNAL;
	}
	cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(report, "trace"), "sha256", trace.info.sha256);
	struct fl_host_metrics hm;
	fl_host_metrics_compute(&trace, &hm);
	cJSON_AddItemToObject(report, "metrics", fl_host_metrics_json(&hm));
	fl_host_metrics_release(&hm);
	fl_trace_release(&trace);
	return FL_OK;
}

static cJSON *fault_json(const struct fl_fault *f, const struct fl_scenario *sc, size_t idx, cJSON *const *reports,
			 size_t n_reports)
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
	cJSON *insts = cJSON_CreateArray();
	double lost = 0;
	for (size_t r = 0; r < n_reports; r++) {
		cJSON *fa = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(reports[r], "instances"), (int)idx);
		lost += cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(fa, "lost"));
		const cJSON *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(fa, "list"))
			cJSON_AddItemToArray(insts, cJSON_Duplicate(it, 1));
	}
	cJSON *steps = cJSON_AddArrayToObject(o, "affected_steps");
	cJSON *rsteps = cJSON_AddArrayToObject(o, "affected_recorded_steps");
	cJSON *phases = cJSON_AddArrayToObject(o, "affected_phases");
	cJSON *ranks = cJSON_AddArrayToObject(o, "affected_ranks");
	const cJSON *it;
	cJSON_ArrayForEach(it, insts) {
		struct {
			cJSON *arr;
			cJSON *v;
		} adds[] = {
			{steps, cJSON_GetObjectItemCaseSensitive(it, "step")},
			{cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "recorded")) ? rsteps : NULL,
			 cJSON_GetObjectItemCaseSensitive(it, "step")},
			{phases, cJSON_GetObjectItemCaseSensitive(it, "phase")},
			{ranks, cJSON_GetObjectItemCaseSensitive(it, "rank")},
		};
		for (size_t a = 0; a < sizeof(adds) / sizeof(adds[0]); a++) {
			if (!adds[a].arr || !adds[a].v)
				continue;
			int seen = 0;
			const cJSON *x;
			cJSON_ArrayForEach(x, adds[a].arr) seen |= cJSON_Compare(x, adds[a].v, 1);
			if (!seen)
				cJSON_AddItemToArray(adds[a].arr, cJSON_Duplicate(adds[a].v, 1));
		}
	}
	cJSON_AddItemToObject(o, "instances", insts);
	cJSON_AddNumberToObject(o, "instances_lost", lost);
	return o;
}

/* A mixture of experts: the token rows each expert (rank) received, as its
 * rank measured them in each recorded step's dispatch all-to-all, and their
 * per-step median and share of the step's tokens. */
static void add_moe(cJSON *env, const struct fl_truth_input *in, cJSON *const *reports, size_t n_reports)
{
	cJSON *m = cJSON_AddObjectToObject(env, "moe");
	cJSON_AddNumberToObject(m, "experts", (double)n_reports);
	cJSON_AddNumberToObject(m, "tokens_per_step", (double)in->sc->workload.batch * (double)n_reports);
	cJSON *med = cJSON_AddArrayToObject(m, "tokens_per_expert");
	cJSON *share = cJSON_AddArrayToObject(m, "share_per_expert");
	cJSON *steps = cJSON_AddArrayToObject(m, "tokens_per_expert_per_step");
	const cJSON *tok[1024] = {0};
	int n_steps = -1;
	for (size_t r = 0; r < n_reports && r < 1024; r++) {
		tok[r] = cJSON_GetObjectItemCaseSensitive(reports[r], "expert_tokens");
		int n = cJSON_GetArraySize(tok[r]);
		n_steps = n_steps < 0 || n < n_steps ? n : n_steps;
	}
	for (int k = 0; k < n_steps; k++) {
		cJSON *row = cJSON_CreateArray();
		for (size_t r = 0; r < n_reports && r < 1024; r++)
			cJSON_AddItemToArray(row, cJSON_CreateNumber(cJSON_GetArrayItem(tok[r], k)->valuedouble));
		cJSON_AddItemToArray(steps, row);
	}
	for (size_t r = 0; r < n_reports && r < 1024; r++) {
		double v[4096];
		int n = n_steps < 4096 ? n_steps : 4096;
		for (int k = 0; k < n; k++)
			v[k] = cJSON_GetArrayItem(tok[r], k)->valuedouble;
		double mv = n > 0 ? fl_median(v, (size_t)n) : 0;
		cJSON_AddItemToArray(med, cJSON_CreateNumber(mv));
		cJSON_AddItemToArray(share, cJSON_CreateNumber(mv / ((double)in->sc->workload.batch * (double)n_reports)));
	}
}

/* rank r's core probe as the window opened (e 0) or closed (e 1); 0 if none */
static double probe_of(const cJSON *report, int e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(report, "core_probe"),
							  e ? "end_ms" : "start_ms");
	return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

/* One meter of rank a's device (its steps' fastest GEMM of one kind, ns per
 * multiply-add, from step `first`; kernel NULL: the workload's forward GEMM):
 * its slowest step against its fastest, into out when the largest ratio yet.
 * A core can change speed between a step's forward and its backward, so each
 * backward GEMM is read on its own by the same rule. */
static void step_meter(const cJSON *v, const char *kernel, size_t a, long first, struct fl_core_speed *out)
{
	double lo = 0, hi = 0;
	long at_lo = 0, at_hi = 0, k = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, v)
	{
		if (cJSON_IsNumber(e) && e->valuedouble > 0) {
			if (lo <= 0 || e->valuedouble < lo)
				lo = e->valuedouble, at_lo = k;
			if (e->valuedouble > hi)
				hi = e->valuedouble, at_hi = k;
		}
		k++;
	}
	double q = lo > 0 ? hi / lo : 0;
	if (q > out->spread) {
		out->spread = q;
		snprintf(out->why, sizeof(out->why),
			 "rank %zu's device ran its fastest %s%s of step %ld %.2fx as long per multiply-add as "
			 "that of step %ld (the machine changed speed during the window)",
			 a, kernel ? kernel : "GEMM", kernel ? " (backward GEMM)" : "", first + at_hi, q, first + at_lo);
	}
}

int fl_truth_core_speed(cJSON *const *reports, size_t n_reports, double calib_probe_ms, struct fl_core_speed *out)
{
	static const char *const when[2] = {"opened", "closed"};
	memset(out, 0, sizeof(*out));
	out->spread = 1;
	if (n_reports < 1)
		return -1;
	for (size_t r = 0; r < n_reports; r++)
		if (!(probe_of(reports[r], 0) > 0) || !(probe_of(reports[r], 1) > 0))
			return -1;
	for (int e = 0; e < 2; e++)
		for (size_t a = 0; a < n_reports; a++) {
			double pa = probe_of(reports[a], e);
			for (size_t b = 0; b < n_reports; b++) { /* two ranks at one moment */
				double q = pa / probe_of(reports[b], e);
				if (q > out->spread) {
					out->spread = q;
					snprintf(out->why, sizeof(out->why),
						 "rank %zu's core ran the device's GEMM %.2fx as long as rank %zu's as the "
						 "window %s (on a virtual machine: another guest on the same physical core)",
						 a, q, b, when[e]);
				}
			}
			double p0 = probe_of(reports[a], 0), p1 = probe_of(reports[a], 1);
			double q = p0 > p1 ? p0 / p1 : p1 / p0; /* one rank over the window */
			if (e == 0 && q > out->spread) {
				out->spread = q;
				snprintf(out->why, sizeof(out->why),
					 "rank %zu's core ran the device's GEMM %.2fx %s as the window closed than as it "
					 "opened (the machine changed speed)",
					 a, q, p1 > p0 ? "slower" : "faster");
			}
			if (calib_probe_ms > 0) { /* against the calibration */
				q = pa > calib_probe_ms ? pa / calib_probe_ms : calib_probe_ms / pa;
				if (q > out->spread) {
					out->spread = q;
					snprintf(out->why, sizeof(out->why),
						 "rank %zu's core ran the device's GEMM %.2fx %s as the window %s than rank "
						 "0's when the run was calibrated (the machine changed speed; the faults "
						 "were sized against the calibrated step)",
						 a, q, pa > calib_probe_ms ? "slower" : "faster", when[e]);
				}
			}
		}
	for (size_t a = 0; a < n_reports; a++) { /* one rank's device, step by step, each meter on its own */
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(reports[a], "core_probe");
		const cJSON *from = cJSON_GetObjectItemCaseSensitive(p, "step_gemm_from");
		long first = cJSON_IsNumber(from) ? (long)from->valuedouble : 0;
		step_meter(cJSON_GetObjectItemCaseSensitive(p, "step_gemm_ns_per_mac"), NULL, a, first, out);
		const cJSON *bw;
		cJSON_ArrayForEach(bw, cJSON_GetObjectItemCaseSensitive(p, "step_backward_gemm_ns_per_mac"))
			step_meter(bw, bw->string, a, first, out);
	}
	if (out->spread <= FL_CORES_UNEQUAL)
		out->why[0] = '\0'; /* the largest ratio, but within the rule */
	return out->spread > FL_CORES_UNEQUAL;
}

void fl_truth_add_core_probe(cJSON *report, int core, const double core_ms[2], long from, long active,
			     double *const speed[FL_GEMM_KINDS])
{
	cJSON *p = cJSON_AddObjectToObject(report, "core_probe");
	cJSON_AddNumberToObject(p, "core", core);
	cJSON_AddNumberToObject(p, "start_ms", core_ms[0]);
	cJSON_AddNumberToObject(p, "end_ms", core_ms[1]);
	if (speed[FL_GEMM_MAIN]) {
		cJSON_AddNumberToObject(p, "step_gemm_from", (double)from);
		cJSON_AddItemToObject(p, "step_gemm_ns_per_mac", cJSON_CreateDoubleArray(speed[FL_GEMM_MAIN], (int)active));
	}
	/* the backward GEMMs' own meters, those that ran (data-parallel and pipeline training) */
	cJSON *bw = NULL;
	for (int g = FL_GEMM_MAIN + 1; g < FL_GEMM_KINDS; g++) {
		int ran = 0;
		for (long k = 0; speed[g] && k < active; k++)
			ran |= speed[g][k] > 0;
		if (ran && (bw || (bw = cJSON_AddObjectToObject(p, "step_backward_gemm_ns_per_mac"))))
			cJSON_AddItemToObject(bw, fl_gemm_kind_name(g), cJSON_CreateDoubleArray(speed[g], (int)active));
	}
}

/* environment.core_speed: the core probes, and whether the cores kept one speed */
static void add_core_speed(cJSON *env, const struct fl_truth_input *in, cJSON *const *reports, size_t n_reports)
{
	if (!in->core_speed || in->cores_unequal < 0)
		return;
	const struct fl_core_speed *rs = in->core_speed;
	int unequal = in->cores_unequal;
	double calib_probe_ms = in->calibration ? in->calibration->probe_ms : 0;
	cJSON *o = cJSON_AddObjectToObject(env, "core_speed");
	char text[768];
	snprintf(text, sizeof(text),
		 "the fastest of %d runs of the device's gemm_kernel on %dx%d floats, called directly on the core each "
		 "rank's device computes on, the ranks one at a time, as the window opened and as it closed; rank 0's "
		 "also right after calibrating; and, on a device that measures it (emu, cpu), each recorded step's fastest "
		 "metered GEMM (gemm_kernel; a pipeline's gemm_relu_kernel; a mixture of experts' expert_gemm_relu_kernel) in ns "
		 "of real work per multiply-add (step_gemm_ns_per_mac, from step step_gemm_from), and of each backward "
		 "GEMM of training (step_backward_gemm_ns_per_mac, by kernel)",
		 FL_CORE_PROBE_REPS, FL_CORE_PROBE_N, FL_CORE_PROBE_N);
	cJSON_AddStringToObject(o, "probe", text);
	snprintf(text, sizeof(text),
		 "unequal when one probe is over %.2fx another: two ranks' at one moment, one rank's at the window's "
		 "two ends, or one against the calibration's; or when one rank's slowest step ran its fastest GEMM "
		 "over %.2fx as long per multiply-add as its fastest step (the same shapes every step), in the forward "
		 "meter or in any backward GEMM's own",
		 FL_CORES_UNEQUAL, FL_CORES_UNEQUAL);
	cJSON_AddStringToObject(o, "rule", text);
	if (calib_probe_ms > 0)
		cJSON_AddNumberToObject(o, "calibration_probe_ms", calib_probe_ms);
	cJSON *by = cJSON_AddArrayToObject(o, "by_rank");
	for (size_t r = 0; r < n_reports; r++) {
		cJSON *e = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(reports[r], "core_probe"), 1);
		cJSON_AddNumberToObject(e, "rank", (double)r);
		cJSON_AddItemToArray(by, e);
	}
	cJSON_AddNumberToObject(o, "spread", rs->spread);
	cJSON_AddBoolToObject(o, "unequal", unequal == 1);
	if (unequal == 1)
		cJSON_AddStringToObject(o, "why", rs->why);
}

/* machine_load's CPU time of other processes during the window: this host's
 * busy time less the CPU time of the ranks on this host (each rank's report's
 * window_cpu; the ranks' windows open and close together, at one step). */
static void add_others(cJSON *ml, const struct fl_machine_load *l, const char *host, cJSON *const *reports,
		       size_t n_reports)
{
	double ours = 0;
	int ranks = 0;
	for (size_t r = 0; r < n_reports; r++) {
		const cJSON *wc = cJSON_GetObjectItemCaseSensitive(reports[r], "window_cpu");
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(wc, "host");
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(wc, "cpu_ms");
		if (cJSON_IsString(h) && cJSON_IsNumber(ms) && strcmp(h->valuestring, host) == 0) {
			ours += ms->valuedouble;
			ranks++;
		}
	}
	if (!ranks || l->wall_ms <= 0)
		return;
	double others = l->busy_ms - ours;
	cJSON *o = cJSON_AddObjectToObject(ml, "others");
	cJSON_AddStringToObject(o, "what", "CPU time that other processes (and the hypervisor's steal) took during the "
					   "window: the host's busy CPU time (/proc/stat, every CPU, less idle and I/O "
					   "wait) less the CPU time of this run's ranks on the host");
	cJSON_AddNumberToObject(o, "host_busy_ms", l->busy_ms);
	cJSON_AddNumberToObject(o, "ranks_cpu_ms", ours);
	cJSON_AddNumberToObject(o, "ranks_on_host", ranks);
	cJSON_AddNumberToObject(o, "cpu_ms", others > 0 ? others : 0);
	/* on average, how many cores the others kept busy */
	cJSON_AddNumberToObject(o, "cores", others > 0 ? others / l->wall_ms : 0);
	cJSON_AddNumberToObject(o, "resolution_ms", l->busy_resolution_ms);
}

enum fl_status fl_truth_write(const char *path, const struct fl_truth_input *in, cJSON *const *reports,
			      size_t n_reports, cJSON **metrics_out)
{
	const struct fl_scenario *sc = in->sc;
	enum fl_status st = FL_OK;
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
	cJSON_AddNumberToObject(s, "ranks", in->world_size);
	cJSON *sch = cJSON_AddObjectToObject(s, "schedule");
	cJSON_AddNumberToObject(sch, "wait", (double)sc->wait);
	cJSON_AddNumberToObject(sch, "warmup", (double)sc->warmup);
	cJSON_AddNumberToObject(sch, "active", (double)in->active);
	cJSON *rec = cJSON_AddArrayToObject(sch, "recorded_steps");
	for (long k = sc->wait + sc->warmup; k < sc->wait + sc->warmup + in->active; k++)
		cJSON_AddItemToArray(rec, cJSON_CreateNumber((double)k));

	/* traces: hashes and metrics read back from what was written */
	cJSON *traces = cJSON_AddArrayToObject(root, "traces");
	cJSON *by_rank = n_reports > 1 ? cJSON_CreateArray() : NULL;
	cJSON *metrics0 = NULL;
	for (size_t r = 0; r < n_reports; r++) {
		const cJSON *tr = cJSON_GetObjectItemCaseSensitive(reports[r], "trace");
		/* each rank read its own trace back (fl_truth_rank_readback): rank 0
		 * needs no shared file system to describe the others' */
		const cJSON *sha = cJSON_GetObjectItemCaseSensitive(tr, "sha256");
		const cJSON *rm = cJSON_GetObjectItemCaseSensitive(reports[r], "metrics");
		if (!cJSON_IsString(sha) || !cJSON_IsObject(rm)) {
			st = fl_error(FL_EINTERNAL, "rank %zu's report has no read-back trace hash and metrics", r);
			goto out;
		}
		cJSON *t = cJSON_Duplicate(tr, 1);
		cJSON_AddItemToObject(t, "rank", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(reports[r], "rank"), 1));
		cJSON_AddItemToArray(traces, t);
		cJSON *mj = cJSON_Duplicate(rm, 1);
		if (r == 0)
			metrics0 = mj;
		if (by_rank) {
			cJSON *e = cJSON_CreateObject();
			cJSON_AddNumberToObject(e, "rank", (double)r);
			cJSON_AddItemToObject(e, "metrics", r == 0 ? cJSON_Duplicate(mj, 1) : mj);
			const cJSON *dev = cJSON_GetObjectItemCaseSensitive(reports[r], "device");
			if (dev)
				cJSON_AddItemToObject(e, "device", cJSON_Duplicate(dev, 1));
			cJSON_AddItemToArray(by_rank, e);
		} else if (r != 0) {
			cJSON_Delete(mj);
		}
	}

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
	cJSON_AddNumberToObject(env, "world_size", in->world_size);
	if (in->watchdog_s)
		cJSON_AddNumberToObject(env, "watchdog_s", in->watchdog_s);
	const struct fl_calibration *c = in->calibration;
	cJSON *cal = cJSON_AddObjectToObject(env, "calibration");
	cJSON_AddNumberToObject(cal, "target_step_ms", c->target_ms);
	cJSON_AddStringToObject(cal, "mode", c->train ? "train" : "inference");
	cJSON_AddNumberToObject(cal, "batch", c->batch);
	cJSON_AddNumberToObject(cal, "dim", c->dim);
	if (c->min_dim)
		cJSON_AddNumberToObject(cal, "min_dim", c->min_dim);
	cJSON_AddNumberToObject(cal, "max_dim", c->max_dim);
	if (c->train)
		cJSON_AddNumberToObject(cal, "layers", c->layers);
	if (strcmp(in->sc->workload.kind, "pipeline") == 0) { /* layers per stage; the scenario's micro-batches */
		cJSON_AddStringToObject(cal, "kind", "pipeline");
		cJSON_AddNumberToObject(cal, "microbatches", (double)in->sc->workload.microbatches);
	}
	if (strcmp(in->sc->workload.kind, "moe") == 0)
		cJSON_AddStringToObject(cal, "kind", "moe");
	cJSON_AddNumberToObject(cal, "measured_step_ms", c->measured_ms);
	if (c->rechecked) {
		cJSON *rc = cJSON_AddObjectToObject(cal, "recheck");
		cJSON_AddStringToObject(rc, "what", "the reused calibration's healthy step, measured right before this scenario");
		cJSON_AddNumberToObject(rc, "step_ms", c->recheck_ms);
		cJSON_AddNumberToObject(rc, "reused_step_ms", c->reused_ms);
		cJSON_AddNumberToObject(rc, "tolerance", FL_CALIB_RECHECK_TOL);
		cJSON_AddBoolToObject(rc, "recalibrated", c->recalibrated);
	}
	if (in->rerecorded && cJSON_GetArraySize(in->rerecorded) > 0) /* regen: windows that ran off their calibration */
		cJSON_AddItemToObject(cal, "rerecorded", cJSON_Duplicate(in->rerecorded, 1));
	if (in->restarts && cJSON_GetArraySize(in->restarts) > 0) /* regen: the set recorded again at one width */
		cJSON_AddItemToObject(cal, "set_restarts", cJSON_Duplicate(in->restarts, 1));
	cJSON_AddStringToObject(cal, "allocator", fl_alloc_policy_name(c->alloc));
	cJSON *tries = cJSON_AddArrayToObject(cal, "tried");
	for (int k = 0; k < c->n_tries; k++) {
		cJSON *tr = cJSON_CreateObject();
		cJSON_AddNumberToObject(tr, "dim", c->try_dim[k]);
		cJSON_AddNumberToObject(tr, "step_ms", c->try_ms[k]);
		cJSON_AddItemToArray(tries, tr);
	}
	cJSON_AddNumberToObject(env, "final_loss", in->last_loss);
	if (in->machine_load) {
		const struct fl_machine_load *l = in->machine_load;
		cJSON *ml = cJSON_AddObjectToObject(env, "machine_load");
		cJSON_AddStringToObject(ml, "window", "the recorded window, rank 0");
		cJSON_AddNumberToObject(ml, "wall_ms", l->wall_ms);
		if (l->have_stat) {
			cJSON_AddNumberToObject(ml, "steal_ms", l->steal_ms);
			cJSON_AddNumberToObject(ml, "steal_share", l->steal_share);
		}
		if (l->have_loadavg)
			cJSON_AddNumberToObject(ml, "loadavg_1m_at_start", l->loadavg_1m);
		cJSON_AddNumberToObject(ml, "involuntary_switches", (double)l->involuntary_switches);
		cJSON_AddBoolToObject(ml, "stolen", fl_machine_load_busy(l));
		if (l->have_stat)
			add_others(ml, l, host, reports, n_reports);
	}
	/* how the cores were shared out: ranks each on one (multi-rank), or one
	 * process's emulated device on its own */
	int multi = in->pin_core >= 0, core = multi ? in->pin_core : in->device_core;
	if (core >= 0) {
		cJSON *pin = cJSON_AddObjectToObject(env, "pinning");
		cJSON_AddStringToObject(pin, "rule",
					multi ? "each rank on one core, round robin over its node's cores; a core over half "
						"busy with other processes at the start is left out when the quiet ones hold "
						"the ranks evenly"
					      : "one process: the emulated device's compute worker on a core of its own, the "
						"host's threads on the other quiet cores (every core when fewer than two are "
						"quiet: quiet_cores); a core over half busy with other processes at the start is "
						"left out");
		cJSON_AddNumberToObject(pin, multi ? "rank0_core" : "device_core", core);
		cJSON_AddNumberToObject(pin, "busy_cores_left_out", multi ? in->pin_busy_left_out : in->device_busy_left_out);
		if (!multi) /* under 2: the host's threads and the device took turns on one core */
			cJSON_AddNumberToObject(pin, "quiet_cores", in->device_quiet_cores);
	}
	add_core_speed(env, in, reports, n_reports);
	if (strcmp(in->sc->workload.kind, "moe") == 0)
		add_moe(env, in, reports, n_reports);

	cJSON *faults = cJSON_AddArrayToObject(root, "faults");
	for (size_t i = 0; i < in->n_faults; i++)
		cJSON_AddItemToArray(faults, fault_json(&in->faults[i], sc, i, reports, n_reports));

	cJSON_AddItemToObject(root, "metrics", cJSON_Duplicate(metrics0, 1));
	if (by_rank) {
		cJSON_AddItemToObject(root, "metrics_by_rank", by_rank);
		by_rank = NULL;
	}
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
	if (!st && metrics_out) {
		*metrics_out = metrics0;
		metrics0 = NULL;
	}
out:
	cJSON_Delete(metrics0);
	cJSON_Delete(by_rank);
	cJSON_Delete(root);
	return st;
}
