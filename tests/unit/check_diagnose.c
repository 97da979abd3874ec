/* check_diagnose — `faultline diagnose`'s rules (grader/analysis/diagnose.h)
 * on small hand-made Kineto traces: each family from its signature alone,
 * healthy steps as healthy, the lookalike pairs told apart (checkpoint vs
 * gc, blocking copy vs sync, optimizer vs op storm, compile vs stall), and
 * what a trace lacks said under limits; and two faults in one trace, each
 * found beside the other. */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grader/analysis/diagnose.h"

/* ------------------------------------------------------------- helpers */

struct tr {
	char path[64];
	FILE *f;
	int n;
};

static void tr_open(struct tr *t, int rank)
{
	snprintf(t->path, sizeof t->path, "/tmp/fl-check-diag.XXXXXX");
	int fd = mkstemp(t->path);
	ck_assert_int_ge(fd, 0);
	t->f = fdopen(fd, "w");
	t->n = 0;
	fprintf(t->f, "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": %d, \"world_size\": 2},\n\"traceEvents\": [\n",
		rank);
}

static void ev(struct tr *t, const char *cat, const char *name, double ts, double dur, int tid, const char *args)
{
	fprintf(t->f, "%s{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
		      "\"dur\": %.3f%s%s}\n",
		t->n++ ? "," : "", cat, name, tid < 100 ? 0 : 1, tid, ts, dur, args ? ", \"args\": " : "", args ? args : "");
}

static void tr_close(struct tr *t)
{
	fprintf(t->f, "], \"traceName\": \"lab-healthy.json\"}\n");
	fclose(t->f);
}

static cJSON *diagnose(struct tr *t, int n)
{
	const char *p[4];
	for (int i = 0; i < n; i++)
		p[i] = t[i].path;
	cJSON *d = NULL;
	ck_assert_int_eq(fl_diagnose(p, (size_t)n, NULL, 0, &d), FL_OK);
	for (int i = 0; i < n; i++)
		unlink(t[i].path);
	return d;
}

static const cJSON *finding(const cJSON *d, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(d, "findings"), i); }
static double evn(const cJSON *f, const char *k) { return cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), k)->valuedouble; }

/* a host step: data_loading (an op of `load_op` µs, then `wait` µs of nothing),
 * forward (two ops), metrics (`stall` µs of nothing); returns its end */
static double step(struct tr *t, int no, double ts, double wait, double stall, const char *extra, double extra_us)
{
	char name[32];
	double dl = 50 + wait, fw = 200, me = 10 + stall, ex = extra ? extra_us : 0;
	double dur = dl + fw + me + ex + 4;
	snprintf(name, sizeof name, "ProfilerStep#%d", no);
	ev(t, "user_annotation", name, ts, dur, 100, NULL);
	ev(t, "user_annotation", "data_loading", ts + 1, dl, 100, NULL);
	ev(t, "cpu_op", "fl::randn", ts + 1 + wait, 50, 100, NULL);
	ev(t, "user_annotation", "forward", ts + 2 + dl, fw, 100, NULL);
	ev(t, "cpu_op", "fl::mm", ts + 2 + dl, 120, 100, NULL);
	ev(t, "cpu_op", "fl::relu", ts + 2 + dl + 120, 80, 100, NULL);
	ev(t, "user_annotation", "metrics", ts + 3 + dl + fw, me, 100, NULL);
	ev(t, "cpu_op", "fl::item", ts + 3 + dl + fw, 10, 100, NULL);
	if (extra)
		ev(t, "user_annotation", extra, ts + 3 + dl + fw + me, ex, 100, NULL);
	return ts + dur + 1;
}


/* A device step: data_loading (an op), forward (`fw_ops` ops, each with a
 * launch of `launch_us` and a kernel of `kern_us` x `scale`), backward (4
 * ops, launches, kernels), an optional `opt` span with `opt_ops` tiny ops and
 * launches, an optional `extra` span (with a device-to-host copy under it when
 * `extra_copy`), then metrics; the step row is written last; returns the
 * step's end. */
struct dopt {
	int fw_ops, opt_ops, casts, allocs;
	double launch_us, kern_us, scale;
	int h2d_block;
	double first_x; /* the step's first forward kernel takes this many times as long (0: as the others) */
};
static int corr = 1;
static double launch(struct tr *t, double ts, double lus, double kts, double kus, const char *kname)
{
	char a[64];
	snprintf(a, sizeof a, "{\"stream\": 7, \"correlation\": %d}", corr);
	char b[64];
	snprintf(b, sizeof b, "{\"correlation\": %d}", corr++);
	ev(t, "cuda_runtime", "cudaLaunchKernel", ts, lus, 100, b);
	ev(t, "kernel", kname, kts, kus, 7, a);
	return ts + lus;
}
static double dstep(struct tr *t, int no, double ts, const struct dopt *o, const char *extra, double extra_us,
		    int extra_copy)
{
	char name[32];
	double t0 = ts, k = ts; /* host time, device time */
	snprintf(name, sizeof name, "ProfilerStep#%d", no);
	double lus = o->launch_us > 0 ? o->launch_us : 5, kus = (o->kern_us > 0 ? o->kern_us : 100) * (o->scale > 0 ? o->scale : 1);
	ts += 1;
	ev(t, "user_annotation", "data_loading", ts, 60, 100, NULL);
	ev(t, "cpu_op", "fl::randn", ts, 50, 100, NULL);
	if (o->h2d_block) {
		ev(t, "cpu_op", "fl::copy_", ts + 50, 9, 100, NULL);
		ev(t, "cuda_runtime", "cudaMemcpy", ts + 51, 8, 100, NULL);
		ev(t, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", ts + 52, 6, 7, "{\"stream\": 7, \"correlation\": 0}");
	}
	ts += 61;
	int nf = o->fw_ops > 0 ? o->fw_ops : 4;
	double fw0 = ts;
	double fwl = nf * (lus + 10) + 2 + (o->casts ? o->casts * 20 : 0) + o->allocs * 600;
	ev(t, "user_annotation", "forward", fw0, fwl, 100, NULL);
	ts += 1;
	for (int i = 0; i < nf; i++) {
		ev(t, "cpu_op", i % 2 ? "fl::relu" : "fl::mm", ts, lus + 8, 100, NULL);
		if (k < ts + 1)
			k = ts + 1;
		double ku = i == 0 && o->first_x > 0 ? kus * o->first_x : kus;
		launch(t, ts + 1, lus, k, ku, i % 2 ? "relu_kernel" : "gemm_kernel");
		k += ku;
		ts += lus + 10;
	}
	for (int i = 0; i < o->casts; i++) {
		ev(t, "cpu_op", "fl::to", ts, 18, 100, NULL);
		if (k < ts + 1)
			k = ts + 1;
		launch(t, ts + 1, 5, k, 3, i % 2 ? "cast_half_to_float_kernel" : "cast_float_to_half_kernel");
		k += 3;
		ts += 20;
	}
	for (int i = 0; i < o->allocs; i++) {
		ev(t, "cpu_op", "fl::empty", ts, 590, 100, NULL);
		ev(t, "cuda_runtime", i % 2 ? "cudaFree" : "cudaMalloc", ts + 1, 580, 100, NULL);
		ts += 600;
	}
	ts = fw0 + fwl + 1;
	ev(t, "user_annotation", "backward", ts, 4 * (lus + 10) + 2, 100, NULL);
	ts += 1;
	for (int i = 0; i < 4; i++) {
		ev(t, "cpu_op", "fl::mm_backward", ts, lus + 8, 100, NULL);
		if (k < ts + 1)
			k = ts + 1;
		launch(t, ts + 1, lus, k, kus, "gemm_tn_kernel");
		k += kus;
		ts += lus + 10;
	}
	ts += 2;
	if (o->opt_ops) {
		double ol = o->opt_ops * 12.0 + 2;
		ev(t, "user_annotation", "optimizer", ts, ol, 100, NULL);
		for (int i = 0; i < o->opt_ops; i++) {
			ev(t, "cpu_op", "fl::add_", ts + 1 + 12 * i, 10, 100, NULL);
			if (k < ts + 2 + 12 * i)
				k = ts + 2 + 12 * i;
			launch(t, ts + 2 + 12 * i, 1, k, 1, "add_kernel");
			k += 1;
		}
		ts += ol + 1;
	}
	if (extra) {
		ev(t, "user_annotation", extra, ts, extra_us, 100, NULL);
		if (extra_copy) {
			ev(t, "cpu_op", "fl::copy_", ts + 1, 30, 100, NULL);
			ev(t, "cuda_runtime", "cudaMemcpyAsync", ts + 2, 2, 100, NULL);
			ev(t, "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", (k > ts + 3 ? k : ts + 3), 20, 7,
			   "{\"stream\": 7, \"correlation\": 0}");
			ev(t, "cuda_runtime", "cudaStreamSynchronize", ts + 4, 26, 100, NULL);
		}
		ts += extra_us + 1;
	}
	ev(t, "user_annotation", "metrics", ts, 20, 100, NULL);
	ev(t, "cpu_op", "fl::item", ts, 19, 100, NULL);
	ts += 21;
	if (k > ts)
		ts = k + 1;
	ev(t, "user_annotation", name, t0, ts - t0, 100, NULL);
	return ts + 1;
}

static char found[512]; /* every family top_of found, space-separated */
static const char *top_of(const struct dopt *o, int steps, const char *extra, int every, int off, double extra_us,
			  int copy, char *buf, size_t cap)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	for (int s = 2; s < 2 + steps; s++) {
		struct dopt q = *o;
		if (q.scale > 0)
			q.scale = 1 + (o->scale - 1) * (s - 2) / (steps - 1);
		int on = extra && (every ? s % every == off : s == off);
		ts = dstep(&t, s, ts, &q, on ? extra : NULL, extra_us, copy);
	}
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	snprintf(buf, cap, "%s", fl_diagnose_top(d));
	found[0] = 0;
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(d, "findings"))
	{
		strncat(found, cJSON_GetObjectItem(f, "family")->valuestring, sizeof found - strlen(found) - 2);
		strcat(found, " ");
	}
	cJSON_Delete(d);
	return buf;
}

/* ------------------------------------------------------------- tests */

START_TEST(healthy_steps)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	for (int s = 2; s < 10; s++)
		ts = step(&t, s, ts, 0, 0, NULL, 0);
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "healthy")));
	ck_assert_str_eq(fl_diagnose_top(d), "healthy");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d, "narration")), 5);
	cJSON_Delete(d);
}
END_TEST

/* the same healthy step with a forward of fw us (the model got slower) */
static double step_fw(struct tr *t, int no, double ts, double fw)
{
	char name[32];
	double dur = 50 + fw + 10 + 4;
	snprintf(name, sizeof name, "ProfilerStep#%d", no);
	ev(t, "user_annotation", name, ts, dur, 100, NULL);
	ev(t, "user_annotation", "data_loading", ts + 1, 50, 100, NULL);
	ev(t, "cpu_op", "fl::randn", ts + 1, 50, 100, NULL);
	ev(t, "user_annotation", "forward", ts + 52, fw, 100, NULL);
	ev(t, "cpu_op", "fl::mm", ts + 52, fw * 0.6, 100, NULL);
	ev(t, "cpu_op", "fl::relu", ts + 52 + fw * 0.6, fw * 0.4, 100, NULL);
	ev(t, "user_annotation", "metrics", ts + 53 + fw, 10, 100, NULL);
	ev(t, "cpu_op", "fl::item", ts + 53 + fw, 10, 100, NULL);
	return ts + dur + 1;
}

/* Slower than the baseline with no rule firing: "unexplained", not healthy;
 * the same run against itself stays healthy. */
START_TEST(unexplained_against_baseline)
{
	struct tr run, base;
	tr_open(&run, 0);
	tr_open(&base, 0);
	double ts = 1000, tb = 1000;
	for (int s = 2; s < 10; s++) {
		ts = step_fw(&run, s, ts, 600);
		tb = step_fw(&base, s, tb, 200);
	}
	tr_close(&run);
	tr_close(&base);
	const char *p[] = {run.path}, *b[] = {base.path};
	cJSON *d = NULL;
	ck_assert_int_eq(fl_diagnose(p, 1, b, 1, &d), FL_OK);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(d, "healthy")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(d, "findings")), 0);
	ck_assert_str_eq(fl_diagnose_top(d), "unexplained");
	ck_assert(fabs(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "unexplained"), "slower_by")->valuedouble - 664.0 / 264.0) <
		  0.01);
	cJSON_Delete(d);
	ck_assert_int_eq(fl_diagnose(b, 1, b, 1, &d), FL_OK);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(d, "healthy")));
	ck_assert_ptr_null(cJSON_GetObjectItem(d, "unexplained"));
	cJSON_Delete(d);
	unlink(run.path);
	unlink(base.path);
}
END_TEST

START_TEST(starvation)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	for (int s = 2; s < 10; s++)
		ts = step(&t, s, ts, 9000, 0, NULL, 0);
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert_str_eq(fl_diagnose_top(d), "input_starvation");
	const cJSON *f = finding(d, 0);
	ck_assert_str_eq(cJSON_GetObjectItem(f, "fix")->valuestring, "loader_parallelism");
	ck_assert(evn(f, "waiting_share_of_step") > 0.9);
	ck_assert(fabs(evn(f, "waiting_ms_per_step") - 9.0) < 0.01);
	cJSON_Delete(d);
}
END_TEST

START_TEST(periodic_stall_and_gc)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	/* metrics sleeps 5 ms in steps 2, 5, 8; a `mystery` pause in odd steps */
	for (int s = 2; s < 10; s++)
		ts = step(&t, s, ts, 0, s % 3 == 2 ? 5000 : 0, s % 2 ? "mystery" : NULL, 3000 + 300 * s);
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert(fl_diagnose_has(d, "periodic_host_stall"));
	ck_assert(fl_diagnose_has(d, "gc_pause"));
	for (int i = 0; i < 2; i++) {
		const cJSON *f = finding(d, i);
		const char *fam = cJSON_GetObjectItem(f, "family")->valuestring;
		const char *span = cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), "span")->valuestring;
		if (!strcmp(fam, "periodic_host_stall")) {
			ck_assert_str_eq(span, "metrics");
			ck_assert_int_eq((int)evn(f, "period"), 3);
			ck_assert_int_eq((int)evn(f, "offset"), 2);
			ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "steps")), 3);
		} else {
			ck_assert_str_eq(span, "mystery");
			ck_assert_int_eq((int)evn(f, "period"), 2);
			ck_assert_int_eq((int)evn(f, "offset"), 1);
		}
	}
	cJSON_Delete(d);
}
END_TEST

START_TEST(straggler_two_ranks)
{
	struct tr t[2];
	for (int r = 0; r < 2; r++) {
		tr_open(&t[r], r);
		double ts = 1000;
		for (int s = 2; s < 10; s++) {
			char name[32];
			snprintf(name, sizeof name, "ProfilerStep#%d", s);
			ev(&t[r], "user_annotation", name, ts, 4000, 100, NULL);
			ev(&t[r], "cpu_op", "fl::mm", ts, 3000, 100, NULL);
			double k = r == 1 ? 3000 : 1000; /* rank 1 computes 3x */
			ev(&t[r], "kernel", "gemm_kernel", ts + 10, k, 7, "{\"stream\": 7, \"correlation\": 1}");
			/* both end the all-reduce together: rank 0 waits longer in it */
			ev(&t[r], "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", ts + 10 + k, 3200 - k, 13,
			   "{\"stream\": 13, \"correlation\": 2}");
			ts += 4001;
		}
		tr_close(&t[r]);
	}
	cJSON *d = diagnose(t, 2);
	ck_assert_str_eq(fl_diagnose_top(d), "straggler");
	const cJSON *f = finding(d, 0);
	ck_assert_int_eq((int)evn(f, "rank"), 1);
	ck_assert(fabs(evn(f, "compute_ratio_to_median") - 3.0) < 0.01);
	cJSON_Delete(d);
}
END_TEST


START_TEST(device_healthy)
{
	char b[64];
	struct dopt o = {0};
	ck_assert_str_eq(top_of(&o, 8, NULL, 0, 0, 0, 0, b, sizeof b), "healthy");
}
END_TEST

/* the lookalikes: a checkpoint copies to the host under its span, a collector does not */
START_TEST(checkpoint_vs_gc)
{
	char b[64];
	struct dopt o = {0};
	ck_assert_str_eq(top_of(&o, 8, "ckpt", 4, 3, 8000, 1, b, sizeof b), "checkpoint_stall");
	ck_assert_msg(!strstr(found, "gc_pause"), "found %s", found);
	ck_assert_str_eq(top_of(&o, 8, "ckpt", 4, 3, 8000, 0, b, sizeof b), "gc_pause");
}
END_TEST

/* a blocking host-to-device copy at the step's start is a feed, not a sync stall */
START_TEST(blocking_h2d_vs_sync)
{
	char b[64];
	struct dopt o = {.h2d_block = 1, .kern_us = 300};
	ck_assert_str_eq(top_of(&o, 8, NULL, 0, 0, 0, 0, b, sizeof b), "blocking_h2d");
	ck_assert_msg(!strstr(found, "sync_stall"), "found %s", found);
}
END_TEST

/* thousands of tiny update ops after backward vs the same ops in the forward */
START_TEST(optimizer_vs_opstorm)
{
	char b[64];
	struct dopt o = {.opt_ops = 400};
	ck_assert_str_eq(top_of(&o, 8, NULL, 0, 0, 0, 0, b, sizeof b), "optimizer_dominance");
	ck_assert_msg(!strstr(found, "op_storm"), "found %s", found);
	struct dopt s = {.fw_ops = 400, .kern_us = 1};
	ck_assert_str_eq(top_of(&s, 8, NULL, 0, 0, 0, 0, b, sizeof b), "op_storm");
}
END_TEST

/* kernels shorter than their launches, the op count normal */
START_TEST(launch_bound)
{
	char b[64];
	struct dopt o = {.launch_us = 40, .kern_us = 3};
	ck_assert_str_eq(top_of(&o, 8, NULL, 0, 0, 0, 0, b, sizeof b), "launch_bound");
}
END_TEST

/* one long step with nested timings under a span: a compile, not a stall */
START_TEST(recompile_step)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	struct dopt o = {0};
	for (int s = 2; s < 10; s++) {
		if (s == 5) {
			ev(&t, "user_annotation", "compile_graph", ts + 1, 30000, 100, NULL);
			for (int c = 0; c < 6; c++)
				ev(&t, "user_annotation", "benchmark_kernel", ts + 2 + 5000 * c, 4990, 100, NULL);
		}
		/* step 5: the compile, then the step's own rows (its step row
		 * starts later; the outer one, written here, is the one kept) */
		double t0 = ts;
		ts = dstep(&t, s, s == 5 ? ts + 30002 : ts, &o, NULL, 0, 0);
		if (s == 5)
			ev(&t, "user_annotation", "ProfilerStep#5", t0, ts - t0 - 1, 100, NULL);
	}
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert_str_eq(fl_diagnose_top(d), "recompile");
	const cJSON *f = finding(d, 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "steps")), 1);
	ck_assert_int_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(f, "steps"), 0)->valueint, 5);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), "span")->valuestring, "compile_graph");
	ck_assert(!fl_diagnose_has(d, "gc_pause") && !fl_diagnose_has(d, "periodic_host_stall"));
	cJSON_Delete(d);
}
END_TEST

START_TEST(alloc_casts_dvfs)
{
	char b[64];
	struct dopt a = {.allocs = 2};
	ck_assert_str_eq(top_of(&a, 8, NULL, 0, 0, 0, 0, b, sizeof b), "alloc_stall");
	struct dopt c = {.casts = 8};
	ck_assert_str_eq(top_of(&c, 8, NULL, 0, 0, 0, 0, b, sizeof b), "dtype_casts");
	struct dopt v = {.scale = 3, .kern_us = 400};
	ck_assert_str_eq(top_of(&v, 8, NULL, 0, 0, 0, 0, b, sizeof b), "dvfs_throttle");
}
END_TEST

/* Two faults in one trace: one fault's time must not hide the other. */

/* a clock ramp beside a recompile's extra ops in two steps: the steps with
 * the median op count still show the drift */
START_TEST(dvfs_beside_extra_ops)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	for (int s = 2; s < 10; s++) {
		struct dopt q = {.kern_us = 400, .scale = 1 + 2.0 * (s - 2) / 7, .opt_ops = s == 4 || s == 7 ? 30 : 0};
		ts = dstep(&t, s, ts, &q, NULL, 0, 0);
	}
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert_msg(fl_diagnose_has(d, "dvfs_throttle"), "dvfs_throttle not found beside extra ops");
	const cJSON *f = finding(d, 0);
	ck_assert_str_eq(cJSON_GetObjectItem(f, "family")->valuestring, "dvfs_throttle");
	ck_assert_int_eq((int)evn(f, "steps_compared"), 6);
	cJSON_Delete(d);
}
END_TEST

/* a clock ramp over 5 steps (1x to 3x) in which one GEMM of each middle step
 * overran 4x (on the emulated device: a late wake from the pause's sleep):
 * the middle third's median compute rose to the last step's, yet each
 * kernel name at its fastest in the step still ramps (a 5-step e2e run read
 * healthy this way) */
START_TEST(dvfs_with_overrun_kernels)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	for (int s = 2; s < 7; s++) {
		struct dopt q = {.kern_us = 400, .scale = 1 + 0.5 * (s - 2), .first_x = s == 4 || s == 5 ? 4 : 0};
		ts = dstep(&t, s, ts, &q, NULL, 0, 0);
	}
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert_msg(fl_diagnose_has(d, "dvfs_throttle"), "dvfs_throttle not found beside overrun kernels");
	cJSON_Delete(d);
}
END_TEST

/* short kernels behind long launches, in steps that also allocate for 2.4 ms:
 * the launches' share is of the step less its allocator time */
START_TEST(launch_beside_allocs)
{
	char b[64];
	struct dopt o = {.launch_us = 15, .kern_us = 3, .fw_ops = 12, .allocs = 4};
	top_of(&o, 8, NULL, 0, 0, 0, 0, b, sizeof b);
	ck_assert_msg(strstr(found, "launch_bound") && strstr(found, "alloc_stall"), "found: %s", found);
}
END_TEST

/* a collector pausing 60 ms in the compile steps themselves: longer than the
 * compile span, so not the compile's own timings */
START_TEST(gc_in_compile_steps)
{
	struct tr t;
	tr_open(&t, 0);
	double ts = 1000;
	struct dopt o = {0};
	for (int s = 2; s < 10; s++) {
		int on = s == 3 || s == 7;
		double t0 = ts, pre = 0;
		if (on) {
			ev(&t, "user_annotation", "compile_graph", ts + 1, 6000, 100, NULL);
			for (int c = 0; c < 6; c++)
				ev(&t, "user_annotation", "benchmark_kernel", ts + 2 + 1000 * c, 990, 100, NULL);
			ev(&t, "cpu_op", "fl::mm", ts + 3, 900, 100, NULL);
			ev(&t, "user_annotation", "mystery", ts + 6003, 60000 + 4000 * s, 100, NULL);
			pre = 66003 + 4000 * s;
		}
		ts = dstep(&t, s, ts + pre, &o, NULL, 0, 0);
		if (on)
			ev(&t, "user_annotation", s == 3 ? "ProfilerStep#3" : "ProfilerStep#7", t0, ts - t0 - 1, 100, NULL);
	}
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	ck_assert(fl_diagnose_has(d, "recompile"));
	ck_assert_msg(fl_diagnose_has(d, "gc_pause") || fl_diagnose_has(d, "periodic_host_stall"),
		      "the pause in the compile steps was dropped");
	cJSON_Delete(d);
}
END_TEST

START_TEST(limits_without_steps)
{
	struct tr t;
	tr_open(&t, 0);
	ev(&t, "cpu_op", "aten::mm", 10, 100, 100, NULL);
	tr_close(&t);
	cJSON *d = diagnose(&t, 1);
	char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(d, "limits"));
	ck_assert_ptr_nonnull(strstr(s, "no ProfilerStep"));
	ck_assert_ptr_nonnull(strstr(s, "no device rows"));
	free(s);
	cJSON_Delete(d);

	tr_open(&t, 0);
	tr_close(&t);
	d = diagnose(&t, 1);
	ck_assert(!cJSON_IsTrue(cJSON_GetObjectItem(d, "healthy")));
	ck_assert_str_eq(fl_diagnose_top(d), "none");
	cJSON_Delete(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diagnose");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, healthy_steps);
	tcase_add_test(tc, starvation);
	tcase_add_test(tc, periodic_stall_and_gc);
	tcase_add_test(tc, straggler_two_ranks);
	tcase_add_test(tc, limits_without_steps);
	tcase_add_test(tc, device_healthy);
	tcase_add_test(tc, checkpoint_vs_gc);
	tcase_add_test(tc, blocking_h2d_vs_sync);
	tcase_add_test(tc, optimizer_vs_opstorm);
	tcase_add_test(tc, launch_bound);
	tcase_add_test(tc, recompile_step);
	tcase_add_test(tc, alloc_casts_dvfs);
	tcase_add_test(tc, unexplained_against_baseline);
	tcase_add_test(tc, dvfs_beside_extra_ops);
	tcase_add_test(tc, dvfs_with_overrun_kernels);
	tcase_add_test(tc, launch_beside_allocs);
	tcase_add_test(tc, gc_in_compile_steps);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
