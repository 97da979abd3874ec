/* diagnose_rules_b.c — the rules of the families that landed after the first
 * seven: recompile, optimizer_dominance, launch_bound, alloc_stall,
 * blocking_h2d, dtype_casts and dvfs_throttle, one rank at a time, over the
 * per-step model of diagnose_read.c (checkpoint_stall is told apart from
 * gc_pause inside rule_periodic, diagnose_rules.c). docs/diagnose.md gives
 * every rule's inputs, thresholds and where they come from. */
#include "grader/analysis/diagnose_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECOMP_LONG 4.0       /* a compile step: this many times the median step */
#define RECOMP_NESTED 2       /* ... with a span holding this many nested spans (candidate timings) */
#define RECOMP_FILL 0.5       /* ... that fills this share of the step's excess */
#define OPT_OPS 64.0          /* outermost ops per step under one late span (STORM_TINY's count) */
#define OPT_SHARE 0.5         /* ... at least this share of the step's outermost ops */
#define OPT_AFTER 0.6         /* ... with this share of the other launches before it (after backward) */
#define LAUNCH_RATIO 2.0      /* median launch call against the median compute kernel */
#define LAUNCH_SHARE 0.3      /* time in launch calls, share of the step */
#define LAUNCH_SLOW_US 20.0   /* or a launch call this long (CUDA's own: 2-5 us) */
#define LAUNCH_SLOW_SHARE 0.02 /* ... taking this share of the step */
#define ALLOC_SHARE 0.05      /* time in allocation calls, share of the step */
#define EVERY_STEP 0.9        /* "every step": this share of the steps at least */
#define H2D_START 0.5         /* the blocking copy starts in the first half of the step */
#define CAST_MIN 2.0          /* cast kernels per step */
#define CAST_SHARE 0.025      /* of the step in casts: a cast pattern costing less ranks lower */
#define DVFS_RATIO 1.3        /* compute per step, fitted last step against the fitted first */
#define DVFS_TAU 0.5          /* Kendall's tau of compute over the steps at least */
#define DVFS_THIRDS 1.15      /* each third's mean compute over the one before */
#define DVFS_OPS 1.15         /* op count per step stays within this ratio */
#define DVFS_STEP_RATIO 1.1   /* the step time rises with it, last third against the first */
#define DVFS_COMP_SHARE 0.2   /* compute at least this share of the run's step time */
#define STORM_TINY_B 64.0     /* = STORM_TINY (diagnose_rules.c) */

static double med_i(const int *v, int n)
{
	double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
	if (!d)
		abort();
	for (int k = 0; k < n; k++)
		d[k] = v[k];
	double m = dg_median(d, n);
	free(d);
	return m;
}

static double med_step(const struct dg_trace *t, double (*f)(const struct dg_step *))
{
	int n = t->n_steps;
	double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
	if (!d)
		abort();
	for (int k = 0; k < n; k++)
		d[k] = f(&t->steps[k]);
	double m = dg_median(d, n);
	free(d);
	return m;
}

static double f_alloc_share(const struct dg_step *s) { return s->dur > 0 ? s->alloc_us / s->dur : 0; }
static double f_alloc_n(const struct dg_step *s) { return s->n_alloc; }
static double f_alloc_us(const struct dg_step *s) { return s->alloc_us; }
static double f_h2d_share(const struct dg_step *s) { return s->dur > 0 ? s->h2d_block_us / s->dur : 0; }
static double f_h2d_n(const struct dg_step *s) { return s->n_h2d_block; }
static double f_h2d_us(const struct dg_step *s) { return s->h2d_block_us; }
static double f_h2d_pos(const struct dg_step *s) { return s->n_h2d_block ? s->h2d_first_pos : 1; }
static double f_cast(const struct dg_step *s) { return s->n_cast; }
static double f_launch_pos(const struct dg_step *s) { return s->launch_first_pos; }
static double f_conv(const struct dg_step *s) { return s->n_conv; }
static double f_cast_us(const struct dg_step *s) { return s->cast_us; }
static double f_conv_us(const struct dg_step *s) { return s->conv_us; }
static double f_launch_n(const struct dg_step *s) { return s->n_launch; }
static double f_ops(const struct dg_step *s) { return s->n_ops; }
static double f_dur(const struct dg_step *s) { return s->dur; }

static int steps_with(const struct dg_trace *t, double (*f)(const struct dg_step *), double min)
{
	int c = 0;
	for (int k = 0; k < t->n_steps; k++)
		c += f(&t->steps[k]) >= min;
	return c;
}

/* recompile: a few steps many times the median, each with one span holding
 * nested spans (the candidate timings) that fills the excess */
static void rule_recompile(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (n < 3)
		return;
	double p50 = dg_step_p50(t);
	if (p50 <= 0)
		return;
	int *L = malloc(sizeof(int) * (size_t)n);
	double *w = malloc(sizeof(double) * (size_t)n);
	if (!L || !w)
		abort();
	/* a step's work: its length less the longest wait under any span (a
	 * starving loader's sleep is no work); "long" is measured against the
	 * median step's work, so a compile beside a loader that waits 30 ms in
	 * every step still stands out (a step of 60 ms is 2x the median but its
	 * excess is 100x the work) */
	for (int k = 0; k < n; k++) {
		double wait = 0;
		for (int q = 0; q < t->n_spans; q++) /* a span holding nested timings is busy, not waiting */
			if (t->spans[q].gap[k] > wait && t->spans[q].n_nested[k] < RECOMP_NESTED)
				wait = t->spans[q].gap[k];
		w[k] = t->steps[k].dur - wait > 0 ? t->steps[k].dur - wait : 0;
	}
	double work = dg_median(w, n);
	if (work <= 0 || work > p50)
		work = p50;
	/* a step's excess is its work over the median step's work: a periodic
	 * stall in half the steps lifts the median step, not the work */
	double *ex = malloc(sizeof(double) * (size_t)n);
	if (!ex)
		abort();
	for (int k = 0; k < n; k++)
		ex[k] = w[k] - work;
	free(w);
	int nl = 0;
	for (int k = 0; k < n; k++)
		if (ex[k] >= (RECOMP_LONG - 1) * work)
			L[nl++] = k;
	if (nl < 1 || 2 * nl >= n) {
		free(L);
		free(ex);
		return;
	}
	/* the span that fills the excess of the long steps with nested timings
	 * (a long step without it is load, not a compile); the innermost of
	 * those that explain the most steps */
	const struct dg_span *best = NULL;
	int bestn = 0;
	int *K = malloc(sizeof(int) * (size_t)n);
	if (!K)
		abort();
	for (int q = 0; q < t->n_spans; q++) {
		const struct dg_span *sp = &t->spans[q];
		int c = 0;
		for (int i = 0; i < nl; i++) {
			int k = L[i];
			double excess = ex[k];
			c += sp->n_nested[k] >= RECOMP_NESTED && sp->dur[k] >= RECOMP_FILL * excess;
		}
		if (c > bestn || (c == bestn && c > 0 && sp->dur[L[0]] < best->dur[L[0]])) {
			best = sp;
			bestn = c;
		}
	}
	if (!best) {
		free(L);
		free(K);
		free(ex);
		return;
	}
	{
		int m = 0;
		for (int i = 0; i < nl; i++) {
			int k = L[i];
			if (best->n_nested[k] >= RECOMP_NESTED && best->dur[k] >= RECOMP_FILL * ex[k])
				K[m++] = k;
		}
		memcpy(L, K, sizeof(int) * (size_t)m);
		nl = m;
	}
	free(K);
	double longest = 0, span_ms = 0, most = 0;
	int nested = 0;
	for (int i = 0; i < nl; i++) {
		if (t->steps[L[i]].dur > longest)
			longest = t->steps[L[i]].dur;
		if (ex[L[i]] > most)
			most = ex[L[i]];
		span_ms += best->dur[L[i]] / 1000;
		nested += best->n_nested[L[i]];
	}
	const char *name = dg_str(t, best->name);
	free(ex);
	double times = 1 + most / work; /* longest / p50 when no span waits */
	struct dg_finding *f = dg_add(fs, "recompile", "static_shapes", dg_ramp(times, RECOMP_LONG, 20));
	char st[256] = "";
	size_t o = 0;
	cJSON *sa = cJSON_CreateArray();
	for (int i = 0; i < nl; i++) {
		cJSON_AddItemToArray(sa, cJSON_CreateNumber(t->steps[L[i]].no));
		if (o + 16 < sizeof st)
			o += (size_t)snprintf(st + o, sizeof st - o, "%s%d", i ? ", " : "", t->steps[L[i]].no);
	}
	f->steps = sa;
	f->lost_us = span_ms * 1000 / n;
	snprintf(f->summary, sizeof f->summary,
		 "step%s %s take%s up to %.1fx the median step (%.3f ms vs %.3f ms); `%s` holds %.3f ms of it with %d "
		 "nested spans (candidate timings), the host busy in them, in %d of %d steps",
		 nl > 1 ? "s" : "", st, nl > 1 ? "" : "s", longest / p50, longest / 1000, p50 / 1000, name, span_ms,
		 nested, nl, n);
	snprintf(f->confirm, sizeof f->confirm,
		 "only step%s %s are long, and `%s` (%.3f ms, %d nested timings) fills them: the host compiles for a new "
		 "shape, intermittently, not a wait in every step",
		 nl > 1 ? "s" : "", st, name, span_ms, nested);
	snprintf(f->fix_how, sizeof f->fix_how,
		 "static shapes: pad or bucket the batch, mark the dimension dynamic, or warm every shape up first");
	cJSON_AddStringToObject(f->evidence, "span", name);
	dg_addn(f->evidence, "longest_step_to_median", longest / p50);
	dg_addn(f->evidence, "excess_to_median_work", most / work);
	dg_addn(f->evidence, "median_work_ms", work / 1000);
	dg_addn(f->evidence, "span_ms_in_long_steps", span_ms);
	cJSON_AddNumberToObject(f->evidence, "nested_spans", nested);
	cJSON_AddNumberToObject(f->evidence, "long_steps", nl);
	cJSON_AddNumberToObject(f->evidence, "steps", n);
	dg_addn(f->evidence, "step_p50_ms", p50 / 1000);
	/* a periodic finding in the compile steps only is the compile's nested
	 * timings, not a pause of its own; unless it waits longer than the
	 * compile span lasts (then it cannot lie inside it: a collector pausing
	 * in the same steps) */
	for (size_t x = 0; x < fs->n;) {
		struct dg_finding *g = &fs->f[x];
		int inside = (!strcmp(g->family, "gc_pause") || !strcmp(g->family, "periodic_host_stall")) && g->steps;
		const cJSON *gx = cJSON_GetObjectItem(g->evidence, "excess_ms_mean");
		if (inside && cJSON_IsNumber(gx) && nl > 0 && gx->valuedouble > span_ms / nl)
			inside = 0;
		cJSON *it;
		cJSON_ArrayForEach(it, g->steps)
		{
			int hit = 0;
			for (int i = 0; i < nl; i++)
				hit |= t->steps[L[i]].no == (int)it->valuedouble;
			inside &= hit;
		}
		if (inside && cJSON_GetArraySize(g->steps) > 0)
			dg_drop(fs, g);
		else
			x++;
	}
	free(L);
}

/* optimizer_dominance: one span late in the step (most launches of the step
 * before it: after backward) holds most of the step's outermost ops */
static void rule_optimizer(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (n < 1 || !t->has_device || !t->has_ops)
		return;
	int *a = malloc(sizeof(int) * (size_t)n), *top = malloc(sizeof(int) * (size_t)n);
	int *bef = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
	int *rest = malloc(sizeof(int) * (size_t)n);
	if (!a || !top || !bef || !out || !rest)
		abort();
	for (int q = 0; q < t->n_spans; q++) {
		const struct dg_span *sp = &t->spans[q];
		if (sp->n_present < EVERY_STEP * n)
			continue;
		for (int k = 0; k < n; k++) {
			a[k] = sp->n_ops[k];
			top[k] = t->steps[k].n_top;
			bef[k] = sp->launch_before[k];
			out[k] = t->steps[k].n_launch - sp->launch_in[k];
			rest[k] = t->steps[k].n_tiny - sp->n_ops[k];
		}
		double ops = med_i(a, n), tops = med_i(top, n), before = med_i(bef, n), outside = med_i(out, n);
		if (ops < OPT_OPS || ops < OPT_SHARE * tops || outside <= 0 || before < OPT_AFTER * outside)
			continue;
		const char *name = dg_str(t, sp->name);
		double share = 0, ms = 0;
		{
			double *d = malloc(sizeof(double) * (size_t)n), *m = malloc(sizeof(double) * (size_t)n);
			if (!d || !m)
				abort();
			for (int k = 0; k < n; k++) {
				d[k] = t->steps[k].dur > 0 ? sp->dur[k] / t->steps[k].dur : 0;
				m[k] = sp->dur[k];
			}
			share = dg_median(d, n);
			ms = dg_median(m, n);
			free(d);
			free(m);
		}
		struct dg_finding *f = dg_add(fs, "optimizer_dominance", "fused_optimizer", dg_ramp(ops, OPT_OPS, 1000));
		f->lost_us = ms;
		snprintf(f->summary, sizeof f->summary,
			 "`%s` runs %.0f ops per step (%.0f%% of the step's %.0f outermost ops) after %.0f of the step's "
			 "%.0f other launches (after backward), %.0f%% of step time (%.3f ms)",
			 name, ops, tops > 0 ? 100 * ops / tops : 0, tops, before, outside, 100 * share, ms / 1000);
		snprintf(f->confirm, sizeof f->confirm,
			 "the update ops per step: %.0f tiny ops in `%s`, the phase after backward, one or two per parameter "
			 "tensor, taking %.0f%% of the step",
			 ops, name, 100 * share);
		snprintf(f->fix_how, sizeof f->fix_how,
			 "a fused or foreach optimizer (multi-tensor apply, flattened parameters)");
		cJSON_AddStringToObject(f->evidence, "span", name);
		dg_addn(f->evidence, "ops_per_step_in_span", ops);
		dg_addn(f->evidence, "outermost_ops_per_step", tops);
		dg_addn(f->evidence, "launches_before_span", before);
		dg_addn(f->evidence, "launches_outside_span", outside);
		dg_addn(f->evidence, "share_of_step", share);
		dg_addn(f->evidence, "span_ms_per_step", ms / 1000);
		/* the tiny ops are the optimizer's: no op storm unless enough remain outside it */
		struct dg_finding *s = dg_find(fs, "op_storm");
		if (s && med_i(rest, n) < STORM_TINY_B)
			dg_drop(fs, s);
		break;
	}
	free(a);
	free(top);
	free(bef);
	free(out);
	free(rest);
}

double dg_longest_wait(const struct dg_trace *t, int k)
{
	double w = 0;
	for (int q = 0; q < t->n_spans; q++)
		if (t->spans[q].gap[k] > w)
			w = t->spans[q].gap[k];
	return w;
}

/* Step k's time less what another fault holds it in: its longest span wait
 * (a stall, a starving loader) and its allocator time. The two can overlap
 * (an allocator call outside any op is a wait under its span too): when they
 * add up to more than the step, the larger of them only. */
double dg_step_less_waits(const struct dg_trace *t, int k)
{
	const struct dg_step *st = &t->steps[k];
	double w = dg_longest_wait(t, k);
	double d = st->dur - w - st->alloc_us;
	if (d <= 0)
		d = st->dur - fmax(w, st->alloc_us);
	return d > 0 ? d : st->dur;
}

/* launch_bound: kernels shorter than their launches, the step spent in launch
 * calls, with the op count normal (no op storm) */
static void rule_launch(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (!t->has_device || n < 1 || t->kern_med_us <= 0)
		return;
	/* the share of the step less its longest span wait and its allocator
	 * time (a stall, a starving loader or an allocation storm elsewhere must
	 * not hide the launches) */
	double *sh = malloc(sizeof(double) * (size_t)n);
	if (!sh)
		abort();
	for (int k = 0; k < n; k++) {
		double d = dg_step_less_waits(t, k);
		sh[k] = d > 0 ? t->steps[k].launch_us / d : 0;
	}
	double share = dg_median(sh, n), nl = med_step(t, f_launch_n);
	free(sh);
	double ratio = t->launch_med_us / t->kern_med_us;
	/* kernels shorter than their launches, bounding the step; or a launch
	 * call many times its normal cost (a few us) costing a real share */
	int shorter = ratio >= LAUNCH_RATIO && share >= LAUNCH_SHARE && !dg_find(fs, "op_storm");
	int slow = t->launch_med_us >= LAUNCH_SLOW_US && share >= LAUNCH_SLOW_SHARE;
	if (nl < 1 || (!shorter && !slow))
		return;
	double score = shorter ? dg_ramp(share, LAUNCH_SHARE, 0.8) : dg_ramp(share, LAUNCH_SLOW_SHARE, LAUNCH_SHARE);
	struct dg_finding *f = dg_add(fs, "launch_bound", "cuda_graphs", score);
	double p50 = dg_step_p50(t);
	f->lost_us = share * p50;
	snprintf(f->summary, sizeof f->summary,
		 "%.0f launches per step take %.0f%% of step time; a launch call takes %.1f us (median), the kernel it "
		 "launches %.1f us (launch / kernel %.1fx); the op count is normal (%.0f ops per step)",
		 nl, 100 * share, t->launch_med_us, t->kern_med_us, ratio, med_step(t, f_ops));
	snprintf(f->confirm, sizeof f->confirm,
		 "%s (kernel %.1f us, launch %.1f us) with a normal op count: the host's launch path, not the number of "
		 "ops, costs %.0f%% of the step",
		 shorter ? "kernels are shorter than their launches" : "each launch costs many times a normal launch",
		 t->kern_med_us, t->launch_med_us, 100 * share);
	snprintf(f->fix_how, sizeof f->fix_how, "CUDA graphs: capture the step once and replay it with one launch");
	dg_addn(f->evidence, "launches_per_step", nl);
	dg_addn(f->evidence, "launch_share_of_step", share);
	dg_addn(f->evidence, "launch_us_median", t->launch_med_us);
	dg_addn(f->evidence, "kernel_us_median", t->kern_med_us);
	dg_addn(f->evidence, "launch_to_kernel", ratio);
	dg_addn(f->evidence, "ops_per_step", med_step(t, f_ops));
	dg_addn(f->evidence, "step_p50_ms", p50 / 1000);
}

/* alloc_stall: allocator calls (or long allocation ops) in every step */
static void rule_alloc(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (n < 1)
		return;
	int with = steps_with(t, f_alloc_n, 1);
	double share = med_step(t, f_alloc_share);
	if (with < EVERY_STEP * n || share < ALLOC_SHARE)
		return;
	double k = med_step(t, f_alloc_n), us = med_step(t, f_alloc_us);
	struct dg_finding *f = dg_add(fs, "alloc_stall", "preallocate", dg_ramp(share, ALLOC_SHARE, 0.4));
	f->lost_us = us;
	snprintf(f->summary, sizeof f->summary,
		 "%.0f allocator calls per step (cudaMalloc/cudaFree, or allocation ops mapping fresh memory) in %d of %d "
		 "steps, %.3f ms per step (%.0f%% of step time)",
		 k, with, n, us / 1000, 100 * share);
	snprintf(f->confirm, sizeof f->confirm,
		 "allocations per step: %.0f, taking %.3f ms (%.0f%% of the step) in the allocator every step", k,
		 us / 1000, 100 * share);
	snprintf(f->fix_how, sizeof f->fix_how, "preallocate the workspace once, or keep it in the caching allocator");
	dg_addn(f->evidence, "allocations_per_step", k);
	dg_addn(f->evidence, "allocator_ms_per_step", us / 1000);
	dg_addn(f->evidence, "share_of_step", share);
	cJSON_AddNumberToObject(f->evidence, "steps_with_allocations", with);
	cJSON_AddNumberToObject(f->evidence, "steps", n);
}

/* blocking_h2d: a blocking cudaMemcpy with a host-to-device copy under it at
 * the step's start, every step */
static void rule_h2d(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (n < 1 || !t->has_device)
		return;
	int with = steps_with(t, f_h2d_n, 1);
	/* at the step's start: before its first launch, or in its first half
	 * (a loader waiting before it moves the copy later in the step) */
	double pos = med_step(t, f_h2d_pos), first_launch = med_step(t, f_launch_pos);
	if (with < EVERY_STEP * n || (pos > H2D_START && pos > first_launch))
		return;
	double k = med_step(t, f_h2d_n), us = med_step(t, f_h2d_us), share = med_step(t, f_h2d_share);
	struct dg_finding *f = dg_add(fs, "blocking_h2d", "pinned_async_copy", dg_ramp(share, 0, 0.1));
	f->lost_us = us;
	snprintf(f->summary, sizeof f->summary,
		 "%.0f blocking cudaMemcpy host-to-device per step (0 async) at %.0f%% into the step, in %d of %d steps; "
		 "the host waits %.3f ms per step in it (%.0f%% of step time)",
		 k, 100 * pos, with, n, us / 1000, 100 * share);
	snprintf(f->confirm, sizeof f->confirm,
		 "the batch copy is a blocking cudaMemcpy (%.0f per step, its host-to-device copy inside the call), not "
		 "cudaMemcpyAsync: the host waits %.3f ms behind the queue before the step's first launch",
		 k, us / 1000);
	snprintf(f->fix_how, sizeof f->fix_how, "pinned memory and an asynchronous copy (pin_memory, non_blocking)");
	dg_addn(f->evidence, "blocking_copies_per_step", k);
	dg_addn(f->evidence, "blocking_ms_per_step", us / 1000);
	dg_addn(f->evidence, "share_of_step", share);
	dg_addn(f->evidence, "start_in_step", pos);
	cJSON_AddNumberToObject(f->evidence, "steps_with_blocking_copy", with);
	cJSON_AddNumberToObject(f->evidence, "steps", n);
}

/* dtype_casts: cast kernels in every step (without device rows: conversion
 * ops that convert a tensor, 5 us or more) */
static void rule_casts(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (n < 1)
		return;
	/* without device rows casts are counted as conversion ops (_to_copy), and
	 * an op storm's scalar promotions are conversion ops too (slow enough to
	 * count under a sanitizer or a loaded host): beside an op storm the cpu
	 * count says nothing of casts */
	if (!t->has_device && dg_find(fs, "op_storm"))
		return;
	double (*f)(const struct dg_step *) = t->has_device ? f_cast : f_conv;
	int with = steps_with(t, f, CAST_MIN);
	if (with < EVERY_STEP * n)
		return;
	double k = med_step(t, f), us = med_step(t, t->has_device ? f_cast_us : f_conv_us);
	double share = dg_step_p50(t) > 0 ? us / dg_step_p50(t) : 0;
	const char *what = t->has_device ? "dtype cast kernels" : "tensor conversion ops (_to_copy, 5 us or more)";
	/* the count finds it; the time it costs ranks it: casts that cost under
	 * CAST_SHARE of the step score half of what their count says, so a cheap
	 * cast pattern ranks below any finding that costs real time */
	double score = dg_ramp(k, CAST_MIN, 8) * (0.5 + 0.5 * fmin(1, share / CAST_SHARE));
	struct dg_finding *fd = dg_add(fs, "dtype_casts", "autocast_scope", score);
	fd->lost_us = us;
	snprintf(fd->summary, sizeof fd->summary, "%.0f %s per step, in %d of %d steps, %.3f ms per step", k, what,
		 with, n, us / 1000);
	snprintf(fd->confirm, sizeof fd->confirm,
		 "casts per step: %.0f %s (to half and back) bracketing the matmuls in every step", k, what);
	snprintf(fd->fix_how, sizeof fd->fix_how, "one autocast region over the forward, or one dtype throughout");
	dg_addn(fd->evidence, "casts_per_step", k);
	dg_addn(fd->evidence, "cast_ms_per_step", us / 1000);
	dg_addn(fd->evidence, "share_of_step", share);
	cJSON_AddStringToObject(fd->evidence, "counted", t->has_device ? "cast kernels" : "conversion ops");
	cJSON_AddNumberToObject(fd->evidence, "steps_with_casts", with);
	cJSON_AddNumberToObject(fd->evidence, "steps", n);
}

/* A robust trend over the steps: Theil-Sen (the median of the pairwise
 * slopes, then the median intercept), as the fitted last step over the
 * fitted first; and Kendall's tau (concordant minus discordant pairs, over
 * the pairs). A spike in one or two steps moves neither. */
static void trend(const double *v, int n, double *ratio, double *tau)
{
	int np = n * (n - 1) / 2, m = 0, c = 0;
	*ratio = *tau = 0;
	if (n < 2)
		return;
	double *sl = calloc((size_t)np + 1, sizeof(double)), *r = malloc(sizeof(double) * (size_t)n);
	if (!sl || !r)
		abort();
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++) {
			sl[m++] = (v[b] - v[a]) / (b - a);
			c += v[b] > v[a] ? 1 : v[b] < v[a] ? -1 : 0;
		}
	double slope = dg_median(sl, m);
	for (int k = 0; k < n; k++)
		r[k] = v[k] - slope * k;
	double b0 = dg_median(r, n), b1 = b0 + slope * (n - 1), lo = v[0];
	for (int k = 1; k < n; k++)
		lo = v[k] < lo ? v[k] : lo;
	if (b0 < lo) /* a fit below every step: the smallest step instead */
		b0 = lo;
	*ratio = b0 > 0 ? b1 / b0 : (b1 > 0 ? INFINITY : 0);
	*tau = np ? (double)c / np : 0;
	free(sl);
	free(r);
}

/* dvfs_throttle: the same ops, steadily slower: compute per step (device
 * kernels, each name at its fastest in the step times its count; else
 * outermost ops less allocation ops) trending up over the run,
 * over the steps that run the same ops (another fault's extra ops in a few
 * steps, a recompile's or a storm's, leave those steps out) */
static void rule_dvfs(const struct dg_trace *t, struct dg_findings *fs)
{
	int all = t->n_steps;
	if (all < 4)
		return;
	double *v = malloc(sizeof(double) * (size_t)all), *sd = malloc(sizeof(double) * (size_t)all);
	if (!v || !sd)
		abort();
	for (int k = 0; k < all; k++)
		v[k] = t->steps[k].n_ops;
	double med_ops = dg_median(v, all);
	int n = 0, mn = -1, mx = -1;
	double dur = 0, comp = 0;
	for (int k = 0; k < all; k++) {
		const struct dg_step *st = &t->steps[k];
		if (med_ops > 0 && (st->n_ops > DVFS_OPS * med_ops || st->n_ops * DVFS_OPS < med_ops))
			continue;
		/* an allocation op's time is the allocator's, not the clock's */
		double top = st->top_us - st->alloc_us > 0 ? st->top_us - st->alloc_us : st->top_us;
		/* device compute at its fastest per kernel name: a kernel that one
		 * late wake or a descheduled worker stretched is no drift (on 5
		 * steps one such kernel in the middle third hid a 3x ramp) */
		v[n] = t->has_device ? st->comp_fast_us : top;
		/* a sleeping loader, a stall or an allocation storm must not
		 * hide the drift */
		sd[n] = dg_step_less_waits(t, k);
		dur += sd[n];
		comp += v[n];
		if (mn < 0 || st->n_ops < mn)
			mn = st->n_ops;
		if (st->n_ops > mx)
			mx = st->n_ops;
		n++;
	}
	if (n < 4 || 3 * n < 2 * all) {
		free(v);
		free(sd);
		return;
	}
	double ratio, tau, sratio, stau;
	trend(v, n, &ratio, &tau);
	trend(sd, n, &sratio, &stau);
	double first = v[0], last = v[n - 1];
	/* a ramp rises through the run: the middle third above the first and
	 * the last above the middle, by their medians (a load that doubles once
	 * is a step, not a ramp) */
	int third = n / 3 > 0 ? n / 3 : 1;
	double m1 = dg_median(v, third), m2 = dg_median(v + third, n - 2 * third), m3 = dg_median(v + n - third, third);
	double rise1 = m1 > 0 ? m2 / m1 : 0, rise2 = m2 > 0 ? m3 / m2 : 0;
	free(v);
	free(sd);
	double cshare = dur > 0 ? comp / dur : 0;
	if (!isfinite(ratio) || ratio < DVFS_RATIO || tau < DVFS_TAU || sratio < DVFS_STEP_RATIO || cshare < DVFS_COMP_SHARE || rise1 < DVFS_THIRDS || rise2 < DVFS_THIRDS)
		return;
	struct dg_finding *f = dg_add(fs, "dvfs_throttle", "power_thermal", dg_ramp(ratio, DVFS_RATIO, 2.5));
	f->lost_us = m2 > m1 ? m2 - m1 : 0; /* the median step's compute over the first third's */
	const char *what = t->has_device ? "compute kernel time" : "op time";
	snprintf(f->summary, sizeof f->summary,
		 "%s per step trends up %.2fx from the first to the last step (robust fit; Kendall's tau %.2f), with "
		 "the same ops (%d-%d per step); %.3f ms -> %.3f ms measured",
		 what, ratio, tau, mn, mx, first / 1000, last / 1000);
	snprintf(f->confirm, sizeof f->confirm,
		 "per-step %s drifts up %.2fx, last vs first step, with no new ops and no new gaps: the device clock drops",
		 what, ratio);
	snprintf(f->fix_how, sizeof f->fix_how,
		 "power and cooling: check throttle reasons, the power limit and cooling; lock clocks");
	dg_addn(f->evidence, "drift_last_to_first", ratio);
	dg_addn(f->evidence, "kendall_tau", tau);
	dg_addn(f->evidence, "middle_to_first_third", rise1);
	dg_addn(f->evidence, "last_to_middle_third", rise2);
	dg_addn(f->evidence, "first_step_ms", first / 1000);
	dg_addn(f->evidence, "last_step_ms", last / 1000);
	dg_addn(f->evidence, "step_time_last_to_first", sratio);
	dg_addn(f->evidence, "compute_share_of_steps", cshare);
	cJSON_AddNumberToObject(f->evidence, "ops_min", mn);
	cJSON_AddNumberToObject(f->evidence, "ops_max", mx);
	cJSON_AddNumberToObject(f->evidence, "steps_compared", n);
	cJSON_AddNumberToObject(f->evidence, "steps", all);
}

/* pipeline_bubble: a pipeline stage — point-to-point transfers (NCCL's
 * SendRecv kernels) on the comm stream and no all-reduce — whose schedule
 * leaves the device idle (p-1)/(m+p-1) of the step: p stages (the world
 * size), m micro-batches (an end stage sends or receives once per micro-batch
 * each way: 2m SendRecv kernels per step). Read from the trace: the SendRecv
 * count per step, the world size, the device's compute time per step. A
 * pipeline's stage also waits for activations inside its phases and updates
 * gradients accumulated over m micro-batches at once, which are not
 * input_starvation or optimizer_dominance: on a pipeline stage those findings
 * are dropped. */
#define PIPE_SHARE 0.20 /* the schedule's bubble at which a pipeline is bubble-bound */
static void rule_pipeline(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (n < 1 || !t->has_device)
		return;
	/* the names the trace holds (the per-event list keeps host rows only) */
	int has_sendrecv = 0, has_allreduce = 0;
	for (uint32_t id = 0; id < fl_strtab_count(t->st); id++) {
		const char *nm = fl_strtab_str(t->st, id);
		if (strncmp(nm, "nccl", 4) || !strstr(nm, "Kernel"))
			continue;
		has_sendrecv |= strstr(nm, "SendRecv") != NULL;
		has_allreduce |= strstr(nm, "AllReduce") != NULL;
	}
	long sendrecv = has_sendrecv && !has_allreduce ? t->n_comm : 0, allreduce = has_allreduce;
	long p = t->info.has_world_size ? t->info.world_size : 0;
	if (!sendrecv || allreduce || p < 2)
		return;
	/* a stage of a regular schedule moves the same whole number of transfers
	 * each way in every step (2m at an end stage, 4m in the middle): an odd
	 * count per step (HTA's 128-rank timeline sample: 5) is some other
	 * point-to-point traffic, not a pipeline to read a bubble from */
	if (sendrecv % (2L * n) != 0) {
		cJSON_AddItemToArray(fs->limits,
				     cJSON_CreateString("point-to-point transfers, but not a whole number each way per step: "
							"pipeline_bubble was not assessed"));
		return;
	}
	/* the transfers of the analysed steps (device events may trail the last step) */
	double m = (double)sendrecv / (2.0 * n);
	if (m < 1)
		m = 1;
	double formula = (double)(p - 1) / (m + (double)(p - 1));
	double idle = 0;
	int k = 0;
	for (int i = 0; i < n; i++)
		if (t->steps[i].dur > 0) {
			idle += 1 - t->steps[i].comp_us / t->steps[i].dur;
			k++;
		}
	idle = k ? idle / k : 0;
	dg_drop_family(fs, "input_starvation");
	dg_drop_family(fs, "optimizer_dominance");
	/* it runs every op once per micro-batch: many small ops per step are the
	 * schedule (m of them), not a storm */
	dg_drop_family(fs, "op_storm");
	/* and its waits for a neighbour fall in whatever span is open (the loss
	 * read in metrics), long in some steps, short in others: a near-period
	 * there is the schedule's jitter; an exact period stays a finding */
	for (size_t i = 0; i < fs->n;) {
		const cJSON *pm = cJSON_GetObjectItemCaseSensitive(fs->f[i].evidence, "period_match");
		if (!strcmp(fs->f[i].family, "periodic_host_stall") && cJSON_IsNumber(pm) && pm->valuedouble < 0.999)
			dg_drop(fs, &fs->f[i]);
		else
			i++;
	}
	if (formula < PIPE_SHARE || idle < 0.8 * formula)
		return;
	struct dg_finding *f = dg_add(fs, "pipeline_bubble", "more_microbatches", dg_ramp(formula, PIPE_SHARE, 0.5));
	f->lost_us = idle * med_step(t, f_dur);
	snprintf(f->summary, sizeof f->summary,
		 "a pipeline stage (%.0f point-to-point transfers per step, no all-reduce) of %ld: about %.0f "
		 "micro-batches, so the schedule idles (p-1)/(m+p-1) = %.0f%% of the step; measured %.0f%% device idle",
		 2 * m, p, m, 100 * formula, 100 * idle);
	snprintf(f->confirm, sizeof f->confirm,
		 "device idle share %.0f%% per step against the bubble formula's %.0f%% for p = %ld, m = %.0f", 100 * idle,
		 100 * formula, p, m);
	snprintf(f->fix_how, sizeof f->fix_how,
		 "more micro-batches per step (m = %.0f -> %.0f halves the bubble), or an interleaved 1F1B schedule", m,
		 2 * m + (double)(p - 1));
	dg_addn(f->evidence, "stages", (double)p);
	dg_addn(f->evidence, "microbatches", m);
	dg_addn(f->evidence, "bubble_formula", formula);
	dg_addn(f->evidence, "device_idle_share", idle);
}

void dg_rules_b(const struct dg_trace *t, struct dg_findings *fs)
{
	rule_recompile(t, fs);
	rule_optimizer(t, fs);
	rule_launch(t, fs);
	rule_alloc(t, fs);
	rule_h2d(t, fs);
	rule_casts(t, fs);
	rule_dvfs(t, fs);
	rule_pipeline(t, fs); /* last: it drops its lookalikes' findings */
}
