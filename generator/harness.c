#include "generator/harness.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "capture/machine_load.h"
#include "capture/kineto_writer.h"
#include "capture/nvtx.h"
#include "capture/tracer.h"
#include "common/sha256.h"
#include "runtime/comm.h"
#include "generator/scratch.h"
#include "generator/truth.h"

#define MAX_SPANS 16

struct fl_harness {
	struct fl_workload wl;
	struct fl_backend *be;
	struct fl_fault faults[FL_MAX_FAULTS];
	size_t n_faults;
	struct fl_step_ctx ctx;
	struct fl_services svc;
	const char *sc_path;
	/* the fault whose init or hook is running (services name it in errors) */
	size_t cur;
	int in_init;
	/* a fault misused a service inside a hook: the run fails after the step */
	enum fl_status fatal;
	char fatal_msg[512];
	/* span names the faults declared; owners: bit i = faults[i] declared it */
	char *span_names[MAX_SPANS];
	uint32_t span_ids[MAX_SPANS];
	uint32_t span_owners[MAX_SPANS];
	size_t n_spans;
	struct fl_scratch scratch; /* this rank's, removed after the run */
	/* watchdog */
	pthread_t wd;
	int wd_running;
	pthread_mutex_t wd_mu;
	pthread_cond_t wd_cv;
	int wd_stop;
	unsigned wd_seconds;
	volatile unsigned long progress;
	volatile long wd_step;
	const char *volatile wd_where;
	int rank, world;
	const char *const *phase_names;
	size_t n_phase_names;
};

/* ---- services to the faults (struct fl_services in faults/fault.h) ---- */

static const char *cur_name(const struct fl_harness *h)
{
	return h->cur < h->n_faults ? h->faults[h->cur].ops->name : "?";
}

/* A misuse inside a hook: remembered, and the run fails at the end of the step. */
static void fatal(struct fl_harness *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fatal(struct fl_harness *h, const char *fmt, ...)
{
	if (h->fatal)
		return; /* the first one is the one to fix */
	int n = snprintf(h->fatal_msg, sizeof(h->fatal_msg), "'%s': faults[%zu]: ", h->sc_path, h->cur);
	if (n < 0 || (size_t)n >= sizeof(h->fatal_msg))
		n = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(h->fatal_msg + n, sizeof(h->fatal_msg) - (size_t)n, fmt, ap);
	va_end(ap);
	h->fatal = FL_EINPUT;
}

static enum fl_status svc_declare_span(void *host, const char *span)
{
	struct fl_harness *h = host;
	if (!h->in_init) {
		fatal(h, "fault '%s' declares span '%s' after init: spans are declared at init, before any step",
		      cur_name(h), span ? span : "(null)");
		return FL_EINPUT;
	}
	if (!span || !span[0])
		return fl_error(FL_EINPUT, "fault '%s' declares a span with an empty name", cur_name(h));
	for (size_t i = 0; i < h->n_spans; i++)
		if (strcmp(h->span_names[i], span) == 0) {
			h->span_owners[i] |= 1u << h->cur;
			return FL_OK;
		}
	if (h->n_spans == MAX_SPANS)
		return fl_error(FL_EINPUT, "fault '%s' cannot declare span '%s': the span table is full (%d names)",
				cur_name(h), span, MAX_SPANS);
	char *copy = strdup(span);
	if (!copy)
		return fl_error(FL_ERUNTIME, "out of memory");
	h->span_names[h->n_spans] = copy;
	h->span_ids[h->n_spans] = fl_tracer_intern(copy);
	h->span_owners[h->n_spans] = 1u << h->cur;
	h->n_spans++;
	return FL_OK;
}

static void svc_run_span(void *host, const char *span, void (*fn)(void *), void *arg)
{
	struct fl_harness *h = host;
	for (size_t i = 0; i < h->n_spans; i++)
		if (strcmp(h->span_names[i], span) == 0 && (h->span_owners[i] >> h->cur & 1u)) {
			uint32_t slot = fl_span_begin(h->span_ids[i], FL_EV_USER_ANNOTATION);
			fn(arg);
			fl_span_end(slot);
			return;
		}
	/* never silent: a span that would not appear in the trace fails the run */
	fatal(h, "fault '%s' runs code in span '%s', which it did not declare at init", cur_name(h), span);
}

static void svc_to_host(void *host, void *dst, const struct fl_tensor *t)
{
	struct fl_harness *h = host;
	struct fl_rt *rt = &h->wl.rt;
	/* dst.copy_(t): a device-to-host copy the host waits for */
	uint32_t cp = fl_span_begin(rt->op_name[FL_OP_COPY], FL_EV_CPU_OP);
	h->be->ops->copy(h->be, dst, t->data, t->bytes, FL_COPY_D2H, FL_STREAM_COMPUTE);
	fl_dev_stream_synchronize(h->be, FL_STREAM_COMPUTE);
	fl_span_end(cp);
}

static struct fl_tensor *const *svc_weights(void *host, size_t *n)
{
	struct fl_harness *h = host;
	*n = (size_t)h->wl.layers;
	return h->wl.w;
}

static enum fl_status svc_set_clock_factor(void *host, double factor)
{
	struct fl_harness *h = host;
	if (!h->be->ops->set_clock_factor)
		return fl_error(FL_EINPUT, "fault '%s': the '%s' device has no clock to slow", cur_name(h),
				h->be->ops->name);
	return h->be->ops->set_clock_factor(h->be, factor);
}

static int svc_device_stats(void *host, struct fl_device_stats *out)
{
	struct fl_harness *h = host;
	if (!h->be->ops->stats)
		return 0;
	h->be->ops->stats(h->be, out, 0);
	return 1;
}

static void svc_set_allreduce_overlap(void *host, int overlapped)
{
	struct fl_harness *h = host;
	h->wl.ddp_overlap = overlapped != 0;
}

static enum fl_status svc_set_link_gbps(void *host, double gbps)
{
	struct fl_harness *h = host;
	if (!h->be->ops->set_link_gbps)
		return fl_error(FL_EINPUT, "fault '%s': the '%s' device has no emulated link to slow", cur_name(h),
				h->be->ops->name);
	return h->be->ops->set_link_gbps(h->be, gbps);
}

static enum fl_status svc_set_microbatches(void *host, int m)
{
	struct fl_harness *h = host;
	enum fl_status st = fl_pipe_set_microbatches(&h->wl, m);
	if (st)
		fl_error_prefix(st, "fault '%s': ", cur_name(h));
	return st;
}

static enum fl_status svc_set_expert_skew(void *host, int hot, double share)
{
	struct fl_harness *h = host;
	enum fl_status st = fl_moe_set_skew(&h->wl, hot, share);
	if (st)
		fl_error_prefix(st, "fault '%s': ", cur_name(h));
	return st;
}

static long svc_expert_tokens(void *host)
{
	struct fl_harness *h = host;
	return fl_moe_received(&h->wl);
}

static void run_sites(void *arg, enum fl_site s, struct fl_tensor **t)
{
	struct fl_harness *h = arg;
	for (size_t i = 0; i < h->n_faults; i++)
		if (h->faults[i].ops->site) {
			h->cur = i;
			h->faults[i].ops->site(&h->faults[i], &h->ctx, s, t);
		}
}

#define EACH_FAULT(h, hook)                                                   \
	for (size_t fi_ = 0; fi_ < (h)->n_faults; fi_++)                      \
		if ((h)->faults[fi_].ops->hook) {                             \
			(h)->cur = fi_;                                       \
			(h)->faults[fi_].ops->hook(&(h)->faults[fi_], &(h)->ctx); \
		}

/* ---- watchdog: a run that stops making progress ends with a message ---- */

/* where codes on the shared board: 0 step begin, 1+p phase p, 90.. the end */
enum { WHERE_BEGIN = 0, WHERE_END = 90, WHERE_WRITE = 91, WHERE_GATHER = 92 };

static const char *where_name(const struct fl_harness *h, unsigned long code)
{
	if (code == WHERE_BEGIN) return "step begin";
	if (code == WHERE_END) return "step end";
	if (code == WHERE_WRITE) return "writing the trace";
	if (code == WHERE_GATHER) return "gathering the truth";
	if (code >= 1 && code - 1 < h->n_phase_names) return h->phase_names[code - 1];
	return "?";
}

static void progress(struct fl_harness *h, long step, unsigned long where)
{
	h->wd_step = step;
	h->wd_where = where_name(h, where);
	unsigned long n = __atomic_add_fetch(&h->progress, 1, __ATOMIC_RELAXED);
	volatile unsigned long *b = fl_comm_board();
	if (b) {
		volatile unsigned long *mine = b + (size_t)h->rank * FL_BOARD_SLOTS;
		mine[1] = (unsigned long)step;
		mine[2] = where;
		mine[0] = n;
	}
}

/* The rank furthest behind on the shared board (-1 if unknown). */
static int rank_behind(const struct fl_harness *h, long *step, unsigned long *where)
{
	volatile unsigned long *b = fl_comm_board();
	int worst = -1;
	if (!b)
		return -1;
	for (int r = 0; r < h->world; r++) {
		volatile unsigned long *s = b + (size_t)r * FL_BOARD_SLOTS;
		long st = (long)s[1];
		unsigned long wh = s[2];
		if (worst < 0 || st < *step || (st == *step && wh < *where)) {
			worst = r;
			*step = st;
			*where = wh;
		}
	}
	return worst;
}

static void *watchdog_main(void *arg)
{
	struct fl_harness *h = arg;
	unsigned long last = (unsigned long)-1;
	unsigned idle = 0;
	pthread_mutex_lock(&h->wd_mu);
	while (!h->wd_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&h->wd_cv, &h->wd_mu, &ts);
		if (h->wd_stop)
			break;
		unsigned long now = __atomic_load_n(&h->progress, __ATOMIC_RELAXED);
		idle = now == last ? idle + 1 : 0;
		last = now;
		if (idle >= h->wd_seconds) {
			long bstep = 0;
			unsigned long bwhere = 0;
			int behind = rank_behind(h, &bstep, &bwhere);
			if (behind >= 0 && behind != h->rank)
				fprintf(stderr,
					"faultline: rank %d: no progress for %u s in step %ld (%s), waiting for rank %d, "
					"which stopped in step %ld (%s); ending the run\n",
					h->rank, h->wd_seconds, h->wd_step, h->wd_where ? h->wd_where : "?", behind, bstep,
					where_name(h, bwhere));
			else
				fprintf(stderr, "faultline: rank %d: no progress for %u s in step %ld (%s); ending the run\n",
					h->rank, h->wd_seconds, h->wd_step, h->wd_where ? h->wd_where : "?");
			fflush(stderr);
			fl_comm_abort(FL_ERUNTIME);
		}
	}
	pthread_mutex_unlock(&h->wd_mu);
	return NULL;
}

static void watchdog_start(struct fl_harness *h)
{
	const char *env = getenv("FL_WATCHDOG_S");
	h->wd_seconds = env && atoi(env) > 0 ? (unsigned)atoi(env) : 120;
	pthread_mutex_init(&h->wd_mu, NULL);
	pthread_cond_init(&h->wd_cv, NULL);
	h->wd_running = pthread_create(&h->wd, NULL, watchdog_main, h) == 0;
}

static void watchdog_stop(struct fl_harness *h)
{
	if (!h->wd_running)
		return;
	pthread_mutex_lock(&h->wd_mu);
	h->wd_stop = 1;
	pthread_cond_signal(&h->wd_cv);
	pthread_mutex_unlock(&h->wd_mu);
	pthread_join(h->wd, NULL);
	h->wd_running = 0;
	pthread_mutex_destroy(&h->wd_mu);
	pthread_cond_destroy(&h->wd_cv);
}

/* Test hook for the watchdog test: FL_TEST_HANG="RANK:STEP" makes that rank stop
 * making progress at that step (it blocks forever, as a deadlocked rank does). */
static void test_hang(int rank, long step)
{
	const char *env = getenv("FL_TEST_HANG");
	int r;
	long s;
	if (!env || sscanf(env, "%d:%ld", &r, &s) != 2 || r != rank || s != step)
		return;
	for (;;)
		pause();
}

/* Test hook for the every-fault test: FL_TEST_DECLARED_SPANS=FILE makes each
 * rank append the span names its faults declared at init, one a line. */
static void declared_spans_hook(const struct fl_harness *h)
{
	const char *path = getenv("FL_TEST_DECLARED_SPANS");
	if (!path || !path[0])
		return;
	FILE *f = fopen(path, "a");
	if (!f)
		return;
	for (size_t i = 0; i < h->n_spans; i++)
		fprintf(f, "%s\n", h->span_names[i]);
	fclose(f);
}

/* ---- output names ---- */

/* "x.json.gz" → "x.rank-3.json.gz" */
static void rank_name(char *out, size_t n, const char *name, int rank)
{
	const char *dot = strstr(name, ".json");
	if (!dot)
		dot = name + strlen(name);
	snprintf(out, n, "%.*s.rank-%d%s", (int)(dot - name), name, rank, dot);
}

/* ---- the run ---- */

/* Open be (already set to the named backend). With auto_pick, try cuda first
 * and keep it when it opens; otherwise say why on stderr and open be. */
static enum fl_status open_backend(struct fl_backend *be, const struct fl_backend_config *cfg, int auto_pick, int quiet)
{
	const struct fl_backend_ops *cuda = auto_pick ? fl_backend_find("cuda") : NULL;
	if (cuda) {
		struct fl_backend trial = {.ops = cuda};
		if (cuda->open(&trial, cfg) == FL_OK) {
			*be = trial;
			return FL_OK;
		}
		if (!quiet)
			fprintf(stderr, "faultline: backend auto: using %s (%s)\n", be->ops->name, fl_error_msg());
		fl_error_clear();
	}
	return be->ops->open(be, cfg);
}

/* The run's neutral name, "trace-" and 12 hex digits of SHA-256 over 16 random
 * bytes, the scenario's name and the seed: it says nothing about the faults and
 * cannot be recomputed from the scenario list. Rank 0 draws it, every rank gets
 * the same. It is the traceName inside every trace, and with --blind (or when
 * the scenario names no outputs) the stem of the file names. */
static enum fl_status run_name(const struct fl_scenario *sc, uint64_t seed, char out[32])
{
	unsigned char nonce[16] = {0};
	if (fl_comm_rank() == 0) {
		if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce)) {
			uint64_t t = fl_clock_realtime_ns(), p = (uint64_t)getpid();
			memcpy(nonce, &t, sizeof(t));
			memcpy(nonce + 8, &p, sizeof(p));
		}
		struct fl_sha256 c;
		unsigned char d[32];
		fl_sha256_init(&c);
		fl_sha256_update(&c, nonce, sizeof(nonce));
		fl_sha256_update(&c, sc->name, strlen(sc->name) + 1);
		fl_sha256_update(&c, &seed, sizeof(seed));
		fl_sha256_final(&c, d);
		memcpy(out, "trace-", 6);
		for (int i = 0; i < 6; i++)
			snprintf(out + 6 + 2 * i, 3, "%02x", d[i]);
	}
	return fl_comm_bcast(out, 32, 0);
}

/* One run on this rank, as its stages see it (fl_run_scenario). */
struct run {
	const struct fl_scenario *sc;
	const struct fl_run_opts *o;
	struct fl_run_result *r;
	struct fl_harness *h;
	struct fl_backend be;
	int be_open, wl_init, auto_backend, train, pipeline, moe;
	double *expert_tokens;      /* moe: the rows this rank's expert received, each recorded step */
	const char *out_dir, *backend;
	uint64_t seed;
	long active, total;
	uint32_t *step_id;
	uint32_t phase_id[FL_MAX_PHASES];
	char trace_name[256], truth_name[256], trace_id[64];
	struct fl_workload_shape shape;
	uint64_t window_t0, window_t1;
	struct fl_machine_sample load0;
	struct fl_machine_load load; /* how busy the machine was during the window */
	double core_ms[2];           /* this rank's core probed as the window opened, closed */
	double *gemm_speed[FL_GEMM_KINDS]; /* each recorded step's fastest GEMM of each kind, ns per multiply-add
					    * (backend gemm_speed) */
	cJSON *report;
	char **reports_text;
};

/* The backend exists in this build and can run this scenario on this many ranks. */
static enum fl_status run_check(struct run *x)
{
	const struct fl_scenario *sc = x->sc;
	int world = x->r->world_size;
	/* "auto": cuda when it opens (a usable device), else emu; the checks below
	 * hold for both, so they run against emu's description */
	x->auto_backend = strcmp(x->backend, "auto") == 0;
	if (x->auto_backend)
		x->backend = "emu";
	x->be.ops = fl_backend_find(x->backend);
	if (!x->be.ops) {
		char list[128] = "";
		for (size_t i = 0; fl_backends[i]; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", fl_backends[i]->name);
		return fl_error(FL_EINPUT, "scenario '%s': backend '%s' is not available in this build, expected one of: %s, auto",
				sc->name, x->backend, list);
	}
	const struct fl_backend_ops *ops = x->be.ops;
	if (world > 1 && !ops->allreduce)
		return fl_error(FL_EINPUT, "scenario '%s': %d ranks need a backend with collectives (emu), not '%s'",
				sc->name, world, ops->name);
	if (x->train && !ops->asynchronous)
		return fl_error(FL_EINPUT, "scenario '%s': workload.mode \"train\" needs a device backend (emu), not '%s'",
				sc->name, ops->name);
	if (x->pipeline && world > 1 && !ops->sendrecv)
		return fl_error(FL_EINPUT, "scenario '%s': a pipeline on %d ranks needs a backend with point-to-point "
				"transfers (emu), not '%s'", sc->name, world, ops->name);
	if (x->moe && !ops->alltoallv)
		return fl_error(FL_EINPUT, "scenario '%s': a mixture of experts needs a backend with all-to-all and its "
				"routing kernels (emu), not '%s'", sc->name, ops->name);
	for (size_t p = 0; p < sc->workload.n_phases; p++)
		if (!fl_workload_has_phase(x->train, sc->workload.phases[p]))
			return fl_error(FL_EINPUT, "'%s': workload.phases[%zu]: phase '%s' needs workload.mode \"train\"",
					sc->path, p, sc->workload.phases[p]);
	return FL_OK;
}

/* The output folder, and this rank's trace and truth names (neutral with
 * --blind or when the scenario names none). */
static enum fl_status run_names(struct run *x)
{
	const struct fl_scenario *sc = x->sc;
	struct fl_run_result *r = x->r;
	enum fl_status st;
	if ((st = fl_prepare_out_dir(x->out_dir)))
		return st;
	char base_trace[256], id[32] = "";
	if ((st = run_name(sc, x->seed, id)))
		return st;
	int blind = x->o->blind || !sc->out_trace;
	if (blind)
		snprintf(base_trace, sizeof(base_trace), "%s.json.gz", id);
	else
		snprintf(base_trace, sizeof(base_trace), "%s", sc->out_trace);
	if (r->world_size > 1) {
		rank_name(x->trace_name, sizeof(x->trace_name), base_trace, r->rank);
		snprintf(x->trace_id, sizeof(x->trace_id), "%s.rank-%d", id, r->rank);
	} else {
		snprintf(x->trace_name, sizeof(x->trace_name), "%s", base_trace);
		snprintf(x->trace_id, sizeof(x->trace_id), "%s", id);
	}
	if (x->o->blind || !sc->out_truth)
		snprintf(x->truth_name, sizeof(x->truth_name), "%s.truth.json", id);
	else
		snprintf(x->truth_name, sizeof(x->truth_name), "%s", sc->out_truth);
	snprintf(r->trace_path, sizeof(r->trace_path), "%s/%s", x->out_dir, x->trace_name);
	snprintf(r->truth_path, sizeof(r->truth_path), "%s/%s", x->out_dir, x->truth_name);
	/* a previous run's truth must not outlive this run's new trace: if this run
	 * fails or is killed after its trace lands, the trace stands without a truth
	 * rather than beside one that describes another trace */
	if (r->rank == 0 && unlink(r->truth_path) != 0 && errno != ENOENT)
		return fl_error(FL_ERUNTIME, "cannot replace '%s': %s", r->truth_path, strerror(errno));
	return FL_OK;
}

/* Open the device and choose the model width: rank 0 calibrates (once per
 * machine and workload shape), every rank uses its choice. */
static enum fl_status run_open(struct run *x)
{
	const struct fl_scenario *sc = x->sc;
	struct fl_run_result *r = x->r;
	enum fl_status st;
	if ((st = fl_tracer_thread_attach("main", -1)))
		return st;
	struct fl_backend_config cfg = {.rank = r->rank, .world_size = r->world_size, .device = 0};
	if ((st = open_backend(&x->be, &cfg, x->auto_backend, x->o->quiet || r->rank != 0)))
		return st;
	x->be_open = 1;
	x->shape = (struct fl_workload_shape){
		.train = x->train,
		.pipeline = x->pipeline,
		.moe = x->moe,
		.rank = r->rank,
		.microbatches = (int)sc->workload.microbatches,
		.batch = (int)sc->workload.batch,
		.dim = (int)sc->workload.dim,
		.min_dim = (int)sc->workload.min_dim,
		.layers = (int)sc->workload.layers,
		.world = r->world_size,
		.alloc = sc->workload.alloc,
	};
	if (x->o->calibration) {
		r->calibration = *x->o->calibration;
		if (r->rank == 0)
			fl_workload_recheck(&r->calibration, &x->be, &x->shape, sc->workload.phases, sc->workload.n_phases,
					    x->seed);
	} else if (r->rank == 0)
		fl_workload_calibrate(&r->calibration, &x->be, &x->shape, sc->workload.phases, sc->workload.n_phases,
				      sc->workload.target_step_ms, x->seed);
	if (r->rank == 0)
		r->calibration.probe_ms = fl_rt_core_probe_ms(fl_dev_compute_core(&x->be, NULL, NULL));
	if ((st = fl_comm_bcast(&r->calibration, sizeof(r->calibration), 0)))
		return st;
	if (!x->o->quiet && r->rank == 0)
		fprintf(stderr, "faultline: %s: calibrated dim %d (healthy step %.3f ms, target %.3f ms)\n", sc->name,
			r->calibration.dim, r->calibration.measured_ms, r->calibration.target_ms);
	if (r->rank == 0 && r->calibration.recalibrated)
		fprintf(stderr,
			"faultline: %s: the reused calibration's healthy step measured %.3f ms now (%.3f ms before, target "
			"%.3f ms): calibrated again\n",
			sc->name, r->calibration.recheck_ms, r->calibration.reused_ms, r->calibration.target_ms);
	x->shape.dim = r->calibration.dim;
	return FL_OK;
}

/* The harness: the workload, the services faults see, the scratch folder,
 * and the span names of phases and steps interned before the window. */
static enum fl_status run_harness(struct run *x)
{
	const struct fl_scenario *sc = x->sc;
	struct fl_harness *h = x->h = calloc(1, sizeof(*h));
	if (!h)
		return fl_error(FL_ERUNTIME, "out of memory");
	h->scratch.fd = -1;
	h->rank = x->r->rank;
	h->world = x->r->world_size;
	h->be = &x->be;
	h->sc_path = sc->path;
	h->phase_names = sc->workload.phases;
	h->n_phase_names = sc->workload.n_phases;
	fl_workload_init(&h->wl, &x->be, &x->shape, x->seed + (uint64_t)x->r->rank * 7919u);
	x->wl_init = 1;
	h->wl.site = run_sites;
	h->wl.site_arg = h;
	h->svc = (struct fl_services){
		.host = h,
		.declare_span = svc_declare_span,
		.run_span = svc_run_span,
		.to_host = svc_to_host,
		.weights = svc_weights,
		.set_clock_factor = svc_set_clock_factor,
		.device_stats = svc_device_stats,
		.set_allreduce_overlap = svc_set_allreduce_overlap,
		.set_link_gbps = svc_set_link_gbps,
		.set_microbatches = svc_set_microbatches,
		.set_expert_skew = svc_set_expert_skew,
		.expert_tokens = svc_expert_tokens,
		.scratch_dir = h->scratch.path,
		.out_dir = x->out_dir,
	};
	h->ctx.rt = &h->wl.rt;
	h->ctx.svc = &h->svc;
	enum fl_status st;
	if ((st = fl_scratch_create(&h->scratch)))
		return st;
	for (size_t p = 0; p < sc->workload.n_phases; p++)
		x->phase_id[p] = fl_tracer_intern(sc->workload.phases[p]);
	x->step_id = calloc((size_t)x->total, sizeof(*x->step_id));
	x->expert_tokens = x->moe ? calloc((size_t)x->total, sizeof(*x->expert_tokens)) : NULL;
	if (!x->step_id || (x->moe && !x->expert_tokens))
		return fl_error(FL_ERUNTIME, "out of memory");
	for (long s = 0; s < x->total; s++) {
		char nm[48];
		snprintf(nm, sizeof(nm), "ProfilerStep#%ld", s);
		x->step_id[s] = fl_tracer_intern(nm);
	}
	return FL_OK;
}

/* Every fault's init, with the facts of the run; a refusal names the fault. */
static enum fl_status run_faults_init(struct run *x)
{
	const struct fl_scenario *sc = x->sc;
	struct fl_harness *h = x->h;
	const struct fl_backend_ops *ops = x->be.ops;
	struct fl_fault_env env = {
		.backend = ops->name,
		.asynchronous = ops->asynchronous,
		.clock_factor = ops->set_clock_factor != NULL,
		.link_emulated = ops->set_link_gbps != NULL,
		.rank = x->r->rank,
		.world_size = x->r->world_size,
		.train = x->train,
		.layers = h->wl.layers,
		.pipeline_stages = x->pipeline ? x->r->world_size : 0,
		.microbatches = x->pipeline ? h->wl.microbatches : 0,
		.experts = x->moe ? x->r->world_size : 0,
		.batch = h->wl.batch,
		.phases = sc->workload.phases,
		.n_phases = sc->workload.n_phases,
		.total_steps = x->total,
		.first_recorded = sc->wait + sc->warmup,
		.svc = &h->svc,
	};
	for (size_t i = 0; i < sc->n_faults; i++) {
		struct fl_fault *f = &h->faults[i];
		f->ops = sc->faults[i].ops;
		f->params = sc->faults[i].values;
		f->seed = x->seed * 1000003u + i;
		f->cap_inst = (size_t)x->total * 8 + 16;
		f->inst = calloc(f->cap_inst, sizeof(*f->inst));
		h->n_faults = i + 1;
		if (!f->inst)
			return fl_error(FL_ERUNTIME, "out of memory");
		if (!fl_fault_supports(f->ops, x->be.ops->name))
			return fl_error(FL_EINPUT, "'%s': faults[%zu]: fault '%s' does not run on backend '%s' (it runs on: %s)",
					sc->path, i, f->ops->name, x->be.ops->name, f->ops->backends ? f->ops->backends : "none");
		h->cur = i;
		h->in_init = 1;
		enum fl_status st = f->ops->init ? f->ops->init(f, &env) : FL_OK;
		h->in_init = 0;
		if (st)
			return fl_error_prefix(st, "'%s': faults[%zu]: ", sc->path, i);
	}
	return FL_OK;
}

/* This rank's core (its device's, when the device has one of its own),
 * probed (fl_rt_core_probe_ms) while every rank waits its turn in rank order,
 * so ranks that share a core do not measure each other: ranks are only
 * comparable in time when their cores run alike. */
static double probe_core(const struct run *x)
{
	double ms = 0;
	for (int r = 0; r < x->r->world_size; r++) {
		if (r == x->r->rank)
			ms = fl_rt_core_probe_ms(fl_dev_compute_core(&x->be, NULL, NULL));
		fl_comm_barrier();
	}
	return ms;
}

/* The recorded window opens at the first active step: the warmup steps sized
 * the event buffers, which are reserved (pre-faulted) now, off the clock. */
static enum fl_status open_window(struct run *x)
{
	const struct fl_scenario *sc = x->sc;
	fl_tracer_set_recording(0);
	fl_dev_synchronize(&x->be); /* device workers idle before their buffers are reset */
	uint32_t per_step = fl_tracer_max_count() / (uint32_t)(sc->warmup ? sc->warmup : 1);
	uint64_t need = (uint64_t)per_step * (uint64_t)x->active * 2 + 4096;
	if (need > (1u << 28))
		need = 1u << 28;
	enum fl_status st;
	if ((st = fl_tracer_reserve((uint32_t)need)))
		return st;
	if (x->be.ops->stats) {
		struct fl_device_stats discard;
		x->be.ops->stats(&x->be, &discard, 1);
	}
	x->core_ms[0] = probe_core(x);
	fl_machine_sample(&x->load0);
	x->window_t0 = fl_clock_ticks();
	fl_tracer_set_recording(1);
	return FL_OK;
}

/* One step: its span, the phases in theirs, the fault hooks between. */
static void run_step(struct run *x, long s)
{
	const struct fl_scenario *sc = x->sc;
	struct fl_harness *h = x->h;
	h->ctx.step = s;
	h->ctx.recorded = s >= sc->wait + sc->warmup;
	h->ctx.phase = NULL;
	progress(h, s, WHERE_BEGIN);
	test_hang(x->r->rank, s);
	if (x->be.ops->mark_step)
		x->be.ops->mark_step(&x->be, s);
	fl_nvtx_push(fl_tracer_name(x->step_id[s])); /* nsys shows our step and phase labels */
	uint32_t step_slot = fl_span_begin(x->step_id[s], FL_EV_USER_ANNOTATION);
	EACH_FAULT(h, step_begin);
	for (size_t p = 0; p < sc->workload.n_phases; p++) {
		h->ctx.phase = sc->workload.phases[p];
		progress(h, s, 1 + p);
		fl_nvtx_push(sc->workload.phases[p]);
		uint32_t ps = fl_span_begin(x->phase_id[p], FL_EV_USER_ANNOTATION);
		EACH_FAULT(h, phase_begin);
		fl_workload_run_phase(&h->wl, sc->workload.phases[p]);
		EACH_FAULT(h, phase_end);
		fl_span_end(ps);
		fl_nvtx_pop();
	}
	h->ctx.phase = NULL;
	if (x->expert_tokens)
		x->expert_tokens[s] = (double)fl_moe_received(&h->wl);
	progress(h, s, WHERE_END);
	EACH_FAULT(h, step_end);
	fl_span_end(step_slot);
	fl_nvtx_pop();
}

/* The step loop, as torch.profiler's schedule: wait (unrecorded), warmup
 * (recorded, discarded), active (the window). */
static enum fl_status run_steps(struct run *x)
{
	const struct fl_scenario *sc = x->sc;
	struct fl_harness *h = x->h;
	enum fl_status st;
	for (long s = 0; s < x->total; s++) {
		if (s == sc->wait)
			fl_tracer_set_recording(1); /* warmup: recorded, then discarded */
		if (s == sc->wait + sc->warmup && (st = open_window(x)))
			return st;
		run_step(x, s);
		if (h->fatal) /* a fault misused a service: fail now, before more of the window */
			return fl_error(h->fatal, "%s", h->fatal_msg);
	}
	x->window_t1 = fl_clock_ticks();
	fl_tracer_set_recording(0);
	struct fl_machine_sample load1;
	fl_machine_sample(&load1);
	fl_machine_load_between(&x->load0, &load1, (double)fl_clock_delta_ns(x->window_t0, x->window_t1) / 1e6,
				&x->load);
	if (!x->o->quiet && x->r->rank == 0 && fl_machine_load_busy(&x->load))
		fprintf(stderr,
			"faultline: %s: the hypervisor took %.1f%% of the CPU time while the window was recorded (steal): "
			"its timings may be stretched; the truth's environment.machine_load says so\n",
			sc->name, 100 * x->load.steal_share);
	int pin_core, pin_left;
	fl_comm_pinning(&pin_core, &pin_left);
	if (!x->o->quiet && x->r->rank == 0 && pin_left > 0)
		fprintf(stderr,
			"faultline: %s: %d core%s busy with other processes when the run started: the ranks share the "
			"quiet ones, so steps are longer, ranks stay alike and stages run less in parallel; the truth's "
			"environment.pinning says so\n",
			sc->name, pin_left, pin_left > 1 ? "s were" : " was");
	progress(h, x->total, WHERE_WRITE);
	fl_dev_synchronize(&x->be);
	x->core_ms[1] = probe_core(x); /* the device idle again: nothing of this rank's beside it */
	for (int g = 0; g < FL_GEMM_KINDS && x->be.ops->gemm_speed; g++)
		if ((x->gemm_speed[g] = calloc((size_t)x->active, sizeof(*x->gemm_speed[g]))))
			for (long k = 0; k < x->active; k++)
				x->gemm_speed[g][k] = x->be.ops->gemm_speed(&x->be, g, x->total - x->active + k);
	return FL_OK;
}

/* This rank's trace, then rank 0 gathers every rank's instances and writes
 * the truth (removing the trace again if the truth cannot be written). */
static enum fl_status run_write(struct run *x)
{
	const struct fl_scenario *sc = x->sc;
	const struct fl_run_opts *o = x->o;
	struct fl_run_result *r = x->r;
	struct fl_harness *h = x->h;
	struct fl_backend *be = &x->be;
	enum fl_status st;
	struct fl_trace_meta meta = {
		.trace_name = x->trace_id,
		.process_name = "faultline",
		.device_properties = be->ops->device_properties ? be->ops->device_properties(be) : "[]",
		.rank = r->rank,
		.world_size = r->world_size,
		/* what carries the collectives: NCCL between GPUs, MPI between emulated devices */
		.dist_backend = r->world_size <= 1 ? "none" : strcmp(be->ops->name, "cuda") == 0 ? "nccl" : "mpi",
		.window_t0 = x->window_t0,
		.window_t1 = x->window_t1,
		.seed = x->seed,
	};
	struct fl_trace_stats tstats;
	if ((st = fl_kineto_write(r->trace_path, &meta, &tstats)))
		return st;

	struct fl_device_stats dstats = {0};
	if (be->ops->stats)
		be->ops->stats(be, &dstats, 0);
	x->report = fl_truth_rank_report(r->rank, x->trace_name, &tstats, h->faults, h->n_faults,
					 be->ops->asynchronous ? &dstats : NULL);
	if ((st = fl_truth_rank_readback(x->report, r->trace_path)))
		return st;
	if (x->expert_tokens && x->report) { /* moe: the rows this rank's expert received, each recorded step */
		long first = sc->wait + sc->warmup;
		cJSON_AddItemToObject(x->report, "expert_tokens",
				      cJSON_CreateDoubleArray(x->expert_tokens + first, (int)(x->total - first)));
	}
	if (x->report) {
		int core, left;
		fl_comm_pinning(&core, &left);
		if (core < 0)
			core = fl_dev_compute_core(be, NULL, NULL);
		fl_truth_add_core_probe(x->report, core, x->core_ms, x->total - x->active, x->active, x->gemm_speed);
		/* this rank's CPU time in the window, by host: rank 0 takes the ranks
		 * on its host out of its host's busy time (machine_load.others) */
		char host[256] = "";
		gethostname(host, sizeof(host) - 1);
		cJSON *wc = cJSON_AddObjectToObject(x->report, "window_cpu");
		cJSON_AddStringToObject(wc, "host", host);
		cJSON_AddNumberToObject(wc, "cpu_ms", x->load.self_cpu_ms);
	}
	char *text = cJSON_PrintUnformatted(x->report);
	progress(h, x->total, WHERE_GATHER);
	st = fl_comm_gather_strings(text, &x->reports_text);
	free(text);
	if (st)
		return st;
	if (r->rank == 0) {
		cJSON *reports[1024] = {0};
		size_t n = (size_t)r->world_size < 1024 ? (size_t)r->world_size : 1024;
		for (size_t k = 0; k < n; k++)
			reports[k] = cJSON_Parse(x->reports_text[k]);
		struct fl_truth_input ti = {
			.sc = sc,
			.backend = be->ops->name,
			.seed = x->seed,
			.active = x->active,
			.world_size = r->world_size,
			.out_dir = x->out_dir,
			.calibration = &r->calibration,
			.faults = h->faults,
			.n_faults = h->n_faults,
			.baseline_metrics = o->baseline_metrics,
			.baseline_name = o->baseline_name,
			.rerecorded = o->rerecorded,
			.restarts = o->restarts,
			.last_loss = h->wl.last_loss,
			.watchdog_s = r->world_size > 1 ? h->wd_seconds : 0,
			.machine_load = &x->load,
		};
		fl_comm_pinning(&ti.pin_core, &ti.pin_busy_left_out);
		ti.device_core = fl_dev_compute_core(be, &ti.device_busy_left_out, &ti.device_quiet_cores);
		struct fl_core_speed cs;
		ti.cores_unequal = fl_truth_core_speed(reports, n, r->calibration.probe_ms, &cs);
		ti.core_speed = &cs;
		st = fl_truth_write(r->truth_path, &ti, reports, n, &r->metrics);
		if (!st && !o->quiet && ti.cores_unequal == 1)
			fprintf(stderr, "faultline: %s: %s: the trace's timings measure the machine's speed as well as "
				"the faults; the truth's environment.core_speed says so\n", sc->name, cs.why);
		for (size_t k = 0; k < n; k++)
			cJSON_Delete(reports[k]);
		if (st)
			unlink(r->trace_path); /* a trace without its truth is no use to anyone */
	}
	return st ? st : fl_comm_barrier();
}

static void run_release(struct run *x)
{
	struct fl_harness *h = x->h;
	if (x->reports_text) {
		for (int k = 0; k < (x->r->rank == 0 ? x->r->world_size : 0); k++)
			free(x->reports_text[k]);
		free(x->reports_text);
	}
	cJSON_Delete(x->report);
	free(x->step_id);
	free(x->expert_tokens);
	for (int g = 0; g < FL_GEMM_KINDS; g++)
		free(x->gemm_speed[g]);
	if (h) {
		for (size_t i = 0; i < h->n_faults; i++) {
			if (h->faults[i].ops->release)
				h->faults[i].ops->release(&h->faults[i]);
			free(h->faults[i].inst);
		}
		if (x->wl_init)
			fl_workload_release(&h->wl);
		fl_scratch_remove(&h->scratch);
		for (size_t i = 0; i < h->n_spans; i++)
			free(h->span_names[i]);
		free(h);
	}
	if (x->be_open && x->be.ops->close)
		x->be.ops->close(&x->be);
	fl_tracer_release();
}

enum fl_status fl_run_scenario(const struct fl_scenario *sc, const struct fl_run_opts *o, struct fl_run_result *r)
{
	uint64_t t_start = fl_clock_realtime_ns();
	memset(r, 0, sizeof(*r));
	r->rank = fl_comm_rank();
	r->world_size = fl_comm_size();
	struct run x = {
		.sc = sc,
		.o = o,
		.r = r,
		.out_dir = o->out_dir ? o->out_dir : "out",
		.backend = o->backend ? o->backend : sc->backend,
		.seed = o->seed_set ? o->seed : sc->seed,
		.active = o->active_steps > 0 ? o->active_steps : sc->active,
		.train = strcmp(sc->workload.mode, "train") == 0,
		.pipeline = strcmp(sc->workload.kind, "pipeline") == 0,
		.moe = strcmp(sc->workload.kind, "moe") == 0,
	};
	x.total = sc->wait + sc->warmup + x.active;
	enum fl_status st;
	if ((st = run_check(&x)) || (st = run_names(&x)) || (st = fl_tracer_init(1u << 16)))
		return st;
	if (!(st = run_open(&x)) && !(st = run_harness(&x)) && !(st = run_faults_init(&x))) {
		declared_spans_hook(x.h);
		watchdog_start(x.h);
		if (!(st = run_steps(&x)))
			st = run_write(&x);
		watchdog_stop(x.h);
	}
	run_release(&x);
	r->wall_s = (double)(fl_clock_realtime_ns() - t_start) / 1e9;
	if (st && r->metrics) {
		cJSON_Delete(r->metrics);
		r->metrics = NULL;
	}
	return st;
}
