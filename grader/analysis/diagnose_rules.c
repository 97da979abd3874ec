/* diagnose_rules.c — one rule per fault family, over the per-step model of
 * diagnose_read.c. Each rule measures the catalog's confirming quantity,
 * compares it with a threshold (docs/diagnose.md: the inputs, thresholds and
 * where they come from) and, above it, adds a finding with a score in
 * [0.5, 1] that grows with the size of the effect. */
#include "grader/analysis/diagnose_internal.h"
#include "common/stats.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* thresholds (docs/diagnose.md) */
#define STARVE_WAIT 0.20     /* loader waiting share of step: XProf's "highly input bound" band */
#define STARVE_STEPS 0.90    /* ... in at least this share of the steps */
#define STALL_FILL 0.60      /* a non-loader span waiting every step: the wait fills this much of it */
#define STALL_MIN_US 50.0    /* a long span's excess: at least this, */
#define STALL_REL_STEP 0.10  /* ... this share of the short step, */
#define STALL_SEPARATION 2.0 /* ... and this many times the largest short excess */
#define STALL_WAITING 0.5    /* ... and at least half of the excess is waiting */
#define STALL_MATCH 0.6      /* long steps matching a period (Jaccard) at least */
#define STALL_TWO_REL 0.5    /* only two long steps (any two fit some period): each excess this share of the step */
#define GC_CHURN 0.30        /* unattributed host time in short steps (allocation churn) */
#define GC_GROWTH 0.20       /* pause growth first → last */
#define STORM_TINY 64.0      /* outermost ops < 50 µs per step, without a baseline */
#define STORM_TINY_SHARE 0.25 /* ... taking at least this share of the step, */
#define STORM_REPEAT 0.70     /* ... or this share of them with 3 names (one op shredded) */
#define STORM_RATIO 2.0      /* ops per step against a baseline */
#define SYNC_STEPS 0.75      /* share of steps with a mid-step sync */
#define SYNC_COST 0.05       /* host wait in them + device idle around them, share of step */
#define STRAGGLER_RATIO 1.3  /* compute time against the median of the other ranks */
#define STRAGGLER_CLEAR 1.5  /* a compute ratio this large needs only the shortest wait */
#define STRAGGLER_ALONE 1.25 /* from 3 ranks: this many times the next slowest rank */
#define STRAGGLER_WAIT 0.9   /* its comm time at most this share of the others' median */
#define OVERLAP_LOW 25.0     /* comm/compute overlap %, on every rank */

static double clamp01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }
static double ramp(double x, double lo, double hi) { return 0.5 + 0.5 * clamp01((x - lo) / (hi - lo)); }

struct dg_finding *dg_add(struct dg_findings *fs, const char *family, const char *fix, double score)
{
	if (fs->n == fs->cap) {
		fs->cap = fs->cap ? 2 * fs->cap : 8;
		fs->f = realloc(fs->f, sizeof(*fs->f) * fs->cap);
		if (!fs->f)
			abort();
	}
	struct dg_finding *f = &fs->f[fs->n++];
	*f = (struct dg_finding){.family = family, .fix = fix, .score = score};
	f->evidence = cJSON_CreateObject();
	return f;
}

void dg_findings_free(struct dg_findings *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		cJSON_Delete(fs->f[i].evidence);
		cJSON_Delete(fs->f[i].steps);
		cJSON_Delete(fs->f[i].ranks);
	}
	free(fs->f);
	cJSON_Delete(fs->limits);
	*fs = (struct dg_findings){0};
}

struct dg_finding *dg_find(struct dg_findings *fs, const char *family)
{
	for (size_t i = 0; i < fs->n; i++)
		if (!strcmp(fs->f[i].family, family))
			return &fs->f[i];
	return NULL;
}

void dg_drop(struct dg_findings *fs, struct dg_finding *f)
{
	cJSON_Delete(f->evidence);
	cJSON_Delete(f->steps);
	cJSON_Delete(f->ranks);
	size_t i = (size_t)(f - fs->f);
	memmove(&fs->f[i], &fs->f[i + 1], sizeof(*fs->f) * (fs->n - i - 1));
	fs->n--;
}

void dg_drop_family(struct dg_findings *fs, const char *family)
{
	struct dg_finding *f;
	while ((f = dg_find(fs, family)))
		dg_drop(fs, f);
}

static void limit(struct dg_findings *fs, const char *msg)
{
	cJSON *it;
	cJSON_ArrayForEach(it, fs->limits)
		if (!strcmp(it->valuestring, msg))
			return;
	cJSON_AddItemToArray(fs->limits, cJSON_CreateString(msg));
}

static double num3(double x) { return round(x * 1000.0) / 1000.0; }
static void addn(cJSON *o, const char *k, double v) { cJSON_AddNumberToObject(o, k, num3(v)); }
void dg_addn(cJSON *o, const char *k, double v) { addn(o, k, v); }
double dg_ramp(double x, double lo, double hi) { return ramp(x, lo, hi); }

static double step_p50(const struct dg_trace *t)
{
	double *d = malloc(sizeof(double) * (size_t)(t->n_steps ? t->n_steps : 1));
	if (!d)
		abort();
	for (int k = 0; k < t->n_steps; k++)
		d[k] = t->steps[k].dur;
	double m = dg_median(d, t->n_steps);
	free(d);
	return m;
}
double dg_step_p50(const struct dg_trace *t) { return step_p50(t); }

static double lower_quartile(const double *v, int n)
{
	double *c = malloc(sizeof(double) * (size_t)(n ? n : 1));
	if (!c)
		abort();
	memcpy(c, v, sizeof(double) * (size_t)n);
	for (int i = 1; i < n; i++) /* insertion sort: step counts are small */
		for (int j = i; j > 0 && c[j - 1] > c[j]; j--) {
			double x = c[j];
			c[j] = c[j - 1];
			c[j - 1] = x;
		}
	double q = n ? c[n / 4] : 0;
	free(c);
	return q;
}

static int loader_like(const char *s, double first_pos)
{
	static const char *const words[] = {"data", "load", "input", "batch", "fetch", "next", "prefetch", NULL};
	char low[128];
	size_t n = strlen(s);
	if (n > sizeof low - 1)
		n = sizeof low - 1;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)s[i]);
	low[n] = 0;
	for (int i = 0; words[i]; i++)
		if (strstr(low, words[i]))
			return 1;
	return first_pos < 0.02; /* opens the step */
}

static cJSON *steps_json(const struct dg_trace *t, const int *idx, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(t->steps[idx[i]].no));
	return a;
}

static void steps_text(char *buf, size_t cap, const struct dg_trace *t, const int *idx, int n)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < n && o + 16 < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%d", i ? ", " : "", t->steps[idx[i]].no);
}

/* input_starvation, and a stall in every step (a non-loader span) */
static void rule_starvation(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (n < 1)
		return;
	double *w = malloc(sizeof(double) * (size_t)n), *sh = malloc(sizeof(double) * (size_t)n);
	double *idle = malloc(sizeof(double) * (size_t)n), *ops = malloc(sizeof(double) * (size_t)n);
	if (!w || !sh || !idle || !ops)
		abort();
	for (int q = 0; q < t->n_spans; q++) {
		const struct dg_span *sp = &t->spans[q];
		if (sp->n_present < STARVE_STEPS * n)
			continue;
		for (int k = 0; k < n; k++) {
			/* the step less the other spans' waits: a periodic stall
			 * elsewhere must not hide the loader */
			double other = 0;
			for (int r = 0; r < t->n_spans; r++)
				if (r != q && t->spans[r].gap[k] > other)
					other = t->spans[r].gap[k];
			double d = t->steps[k].dur - other;
			if (d <= 0)
				d = t->steps[k].dur > 0 ? t->steps[k].dur : 1;
			idle[k] = sp->gap[k]; /* one stretch with no op: a wait, not gaps between ops */
			w[k] = idle[k] / d;
			sh[k] = sp->dur[k] / d;
			ops[k] = sp->ops_us[k];
		}
		double mw = dg_median(w, n), mi = dg_median(idle, n);
		/* in every step: the wait is there (half the median wait or more) */
		int over = 0;
		for (int k = 0; k < n; k++)
			over += idle[k] >= 0.5 * mi && idle[k] > 0;
		if (mw < STARVE_WAIT || over < STARVE_STEPS * n)
			continue;
		const char *name = dg_str(t, sp->name);
		int loader = loader_like(name, sp->first_pos);
		/* a stall "in every step" of one or two steps is no pattern; and
		 * it fills its span: gaps between busy ops (a preempted thread on a
		 * loaded host) are no stall */
		if (!loader) {
			double *fill = malloc(sizeof(double) * (size_t)n);
			if (!fill)
				abort();
			for (int k = 0; k < n; k++)
				fill[k] = sp->dur[k] > 0 ? sp->gap[k] / sp->dur[k] : 0;
			double mf = dg_median(fill, n);
			free(fill);
			if (n < 3 || mf < STALL_FILL)
				continue;
		}
		double p50 = step_p50(t), lost = dg_median(idle, n), msh = dg_median(sh, n);
		struct dg_finding *f;
		if (loader) {
			f = dg_add(fs, "input_starvation", "loader_parallelism", ramp(mw, STARVE_WAIT, 0.7));
			snprintf(f->summary, sizeof f->summary,
				 "`%s` takes %.0f%% of step time in %d of %d steps, %.0f%% of the step waiting in one stretch "
				 "with no op under it (%.3f ms of ops in a %.3f ms span)",
				 name, 100 * msh, over, n, 100 * mw, dg_median(ops, n) / 1000, dg_median(sp->dur, n) / 1000);
			snprintf(f->confirm, sizeof f->confirm,
				 "`%s`'s share of step time is %.0f%% (median), and the host runs no op for %.3f ms of it: "
				 "the step waits for its input",
				 name, 100 * msh, lost / 1000);
			snprintf(f->fix_how, sizeof f->fix_how,
				 "more loader workers, prefetching or pinned memory, so the next batch is ready when the step starts");
		} else {
			f = dg_add(fs, "periodic_host_stall", "async_offload", 0.9 * ramp(mw, STARVE_WAIT, 0.7));
			snprintf(f->summary, sizeof f->summary,
				 "`%s` waits %.0f%% of step time with no op under it in %d of %d steps (period 1)", name,
				 100 * mw, over, n);
			snprintf(f->confirm, sizeof f->confirm,
				 "`%s` is long in every step (period 1) with no op under it: %.3f ms per step", name,
				 lost / 1000);
			snprintf(f->fix_how, sizeof f->fix_how,
				 "move the blocking work in `%s` off the training thread or do it every N steps", name);
			addn(f->evidence, "period", 1);
		}
		f->lost_us = lost;
		cJSON_AddStringToObject(f->evidence, "span", name);
		addn(f->evidence, "share_of_step", msh);
		addn(f->evidence, "waiting_share_of_step", mw);
		addn(f->evidence, "waiting_ms_per_step", lost / 1000);
		addn(f->evidence, "ops_ms_per_step", dg_median(ops, n) / 1000);
		cJSON_AddNumberToObject(f->evidence, "steps_over_threshold", over);
		cJSON_AddNumberToObject(f->evidence, "steps", n);
		addn(f->evidence, "step_p50_ms", p50 / 1000);
	}
	free(w);
	free(sh);
	free(idle);
	free(ops);
}

/* periodic_host_stall and gc_pause: a span long in a subset of the steps */
static void rule_periodic(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (n < 4)
		return;
	double *sd = malloc(sizeof(double) * (size_t)n), *ex = malloc(sizeof(double) * (size_t)n);
	int *L = malloc(sizeof(int) * (size_t)n);
	if (!sd || !ex || !L)
		abort();
	for (int k = 0; k < n; k++)
		sd[k] = t->steps[k].dur;
	double sbase = lower_quartile(sd, n), total = 0;
	for (int k = 0; k < n; k++)
		total += sd[k];
	for (int q = 0; q < t->n_spans; q++) {
		const struct dg_span *sp = &t->spans[q];
		/* the signal is the wait under the span (no op on its thread, nothing
		 * on other threads or the device): more work in a step is no stall */
		const double *v = sp->gap;
		double base = lower_quartile(v, n);
		double thr = fmax(STALL_MIN_US, STALL_REL_STEP * sbase);
		int nl = 0;
		double max_short = 0, min_long = INFINITY, lost = 0, ops_long = 0, dur_long = 0, wait_long = 0;
		for (int k = 0; k < n; k++) {
			ex[k] = v[k] - base;
			if (ex[k] >= thr) {
				L[nl++] = k;
				if (ex[k] < min_long)
					min_long = ex[k];
				lost += ex[k];
				ops_long += sp->ops_us[k];
				dur_long += sp->dur[k];
				wait_long += sp->gap[k];
			} else if (ex[k] > max_short)
				max_short = ex[k];
		}
		if (nl < 2 || nl == n || min_long < STALL_SEPARATION * max_short)
			continue;
		/* two long steps always fit a period (their distance): on their own
		 * they are a pattern only when each is a large share of the step or
		 * the span exists in those steps only (a checkpoint), not two hiccups
		 * of a loaded host in a span of every step (a pipeline stage waiting
		 * 8 ms twice in a 45 ms step) */
		if (nl == 2 && min_long < STALL_TWO_REL * sbase && sp->n_present != nl)
			continue;
		/* the extra time is a wait (nothing runs), not more work */
		if (wait_long < STALL_WAITING * lost)
			continue;
		/* period and phase from the step numbers */
		int best_p = 0, best_o = 0;
		double best_j = 0;
		for (int p = 2; p <= n / 2 + 1; p++) {
			int o = ((t->steps[L[0]].no % p) + p) % p, inter = 0, m = 0;
			for (int k = 0; k < n; k++) {
				int in_m = ((t->steps[k].no % p) + p) % p == o;
				m += in_m;
				if (in_m)
					for (int i = 0; i < nl; i++)
						inter += L[i] == k;
			}
			double j = (double)inter / (double)(nl + m - inter);
			if (j > best_j + 1e-9) {
				best_j = j;
				best_p = p;
				best_o = o;
			}
		}
		/* irregular long waits (load, one-off events) are no period */
		if (best_j < STALL_MATCH)
			continue;
		/* nested spans in every long step: candidate timings (recompile's rule) */
		int nested = 1, copies = 1, short_copies = 0;
		for (int i = 0; i < nl; i++) {
			nested &= sp->n_nested[L[i]] >= 2;
			copies &= sp->n_copy[L[i]] >= 1;
		}
		for (int k = 0; k < n; k++) {
			int is_long = 0;
			for (int i = 0; i < nl; i++)
				is_long |= L[i] == k;
			if (!is_long)
				short_copies += sp->n_copy[k];
		}
		if (nested)
			continue;
		/* a checkpoint: device-to-host copies (the weights) under the long
		 * span and none in the short steps, then a wait (the file write) */
		int ckpt = copies && short_copies == 0;
		const char *name = dg_str(t, sp->name);
		double lost_share = total > 0 ? lost / total : 0;
		double score = ramp(lost_share, 0, 0.25) * (best_j >= 0.999 ? 1.0 : 0.85);
		/* a pause that does work vs a sleep in a phase */
		int only_long = sp->n_present == nl;
		double churn = 0;
		{
			double *u = malloc(sizeof(double) * (size_t)n);
			int nu = 0;
			if (!u)
				abort();
			for (int k = 0; k < n; k++) {
				int is_long = 0;
				for (int i = 0; i < nl; i++)
					is_long |= L[i] == k;
				if (!is_long && t->steps[k].dur > 0)
					u[nu++] = 1 - t->steps[k].covered_us / t->steps[k].dur;
			}
			churn = dg_median(u, nu);
			free(u);
		}
		double first = sp->dur[L[0]], last = sp->dur[L[nl - 1]];
		double growth = first > 0 ? last / first - 1 : 0;
		int rising = 0;
		for (int i = 1; i < nl; i++)
			rising += sp->dur[L[i]] > sp->dur[L[i - 1]];
		double gc_votes = (only_long ? 1.0 : 0) + (churn >= GC_CHURN ? 0.5 : 0) +
				  (growth >= GC_GROWTH && rising * 2 >= nl - 1 ? 0.5 : 0);
		int gc = !ckpt && gc_votes >= 1.0;
		char st[256];
		steps_text(st, sizeof st, t, L, nl);
		struct dg_finding *f = ckpt ? dg_add(fs, "checkpoint_stall", "async_checkpoint", score)
				       : gc ? dg_add(fs, "gc_pause", "gc_control", score)
					    : dg_add(fs, "periodic_host_stall", "async_offload", score);
		f->lost_us = lost / n;
		f->steps = steps_json(t, L, nl);
		double mean_ex = lost / nl;
		char per[64];
		if (best_j >= 0.999)
			snprintf(per, sizeof per, "period %d", best_p);
		else
			snprintf(per, sizeof per, "nearest period %d (%.0f%% match)", best_p, 100 * best_j);
		if (ckpt) {
			int ncp = 0;
			for (int i = 0; i < nl; i++)
				ncp += sp->n_copy[L[i]];
			snprintf(f->summary, sizeof f->summary,
				 "`%s` stalls %.3f ms on average in steps %s -> %s, with %d device-to-host copies under it "
				 "(the weights) and then %.3f ms of waiting with no op (the file write); none in the other steps",
				 name, mean_ex / 1000, st, per, ncp, wait_long / nl / 1000);
			snprintf(f->confirm, sizeof f->confirm,
				 "`%s` recurs with %s, %.3f ms each: device-to-host copies then a write with compute idle: %.0f%% "
				 "of run time lost (period x duration / interval)",
				 name, per, mean_ex / 1000, 100 * lost_share);
			snprintf(f->fix_how, sizeof f->fix_how,
				 "asynchronous checkpointing: snapshot the weights, write them in the background");
			cJSON_AddNumberToObject(f->evidence, "d2h_copies_under_long", ncp);
		} else if (gc) {
			snprintf(f->summary, sizeof f->summary,
				 "`%s` pauses %.3f ms on average in steps %s -> %s; %s, pauses %+.0f%% first to last, "
				 "%.0f%% of the other steps' time outside any span or op (allocation churn)",
				 name, mean_ex / 1000, st, per,
				 only_long ? "the span exists only in those steps" : "the span runs in every step",
				 100 * growth, 100 * churn);
			snprintf(f->confirm, sizeof f->confirm,
				 "the pauses in `%s` recur with %s, do no workload op (%.3f ms of ops in %.3f ms), and the "
				 "thread is busy outside any op in every step (%.0f%%): a collector pausing the loop",
				 name, per, ops_long / 1000, dur_long / 1000, 100 * churn);
			snprintf(f->fix_how, sizeof f->fix_how,
				 "disable automatic collection in the loop and collect at a step boundary, or cut the allocation churn");
		} else {
			snprintf(f->summary, sizeof f->summary,
				 "`%s` waits %.3f ms longer in steps %s -> %s, with no op under it (%.3f ms of ops)", name,
				 mean_ex / 1000, st, per, ops_long / 1000);
			snprintf(f->confirm, sizeof f->confirm,
				 "`%s` is long only in steps %s (%s, %.3f ms each) and runs no op meanwhile: the host "
				 "thread is blocked",
				 name, st, per, mean_ex / 1000);
			snprintf(f->fix_how, sizeof f->fix_how,
				 "do the work in `%s` every N steps off the training thread, non-blocking", name);
		}
		cJSON_AddStringToObject(f->evidence, "span", name);
		cJSON_AddNumberToObject(f->evidence, "period", best_p);
		cJSON_AddNumberToObject(f->evidence, "offset", best_o);
		addn(f->evidence, "period_match", best_j);
		addn(f->evidence, "excess_ms_mean", mean_ex / 1000);
		addn(f->evidence, "ops_ms_under_long", ops_long / 1000);
		addn(f->evidence, "waiting_ms_under_long", wait_long / 1000);
		addn(f->evidence, "share_of_run_time", lost_share);
		cJSON_AddBoolToObject(f->evidence, "span_only_in_long_steps", only_long);
		addn(f->evidence, "growth_first_to_last", growth);
		addn(f->evidence, "unattributed_share_short_steps", churn);
		cJSON *pa = cJSON_AddArrayToObject(f->evidence, "long_ms");
		for (int i = 0; i < nl; i++)
			cJSON_AddItemToArray(pa, cJSON_CreateNumber(num3(sp->dur[L[i]] / 1000)));
	}
	free(sd);
	free(ex);
	free(L);
}

static double med_field(const struct dg_trace *t, int which)
{
	int n = t->n_steps;
	double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
	if (!v)
		abort();
	for (int k = 0; k < n; k++) {
		const struct dg_step *s = &t->steps[k];
		v[k] = which == 0 ? s->n_ops : which == 1 ? s->n_top : which == 2 ? s->n_tiny : which == 3 ? s->tiny_us
		     : which == 4 ? s->n_mid_sync : which == 5 ? (s->dur > 0 ? s->sync_idle_us / s->dur : 0)
		     : which == 6 ? s->sync_idle_us : s->sync_us;
	}
	double m = dg_median(v, n);
	free(v);
	return m;
}

static void rule_opstorm(const struct dg_trace *t, const struct dg_trace *b, size_t nb, struct dg_findings *fs)
{
	if (!t->has_ops || t->n_steps < 1)
		return;
	double ops = med_field(t, 0), top = med_field(t, 1), tiny = med_field(t, 2), tiny_us = med_field(t, 3);
	double bops = -1, bp50 = 0;
	if (nb && b[0].n_steps && b[0].has_ops) {
		bops = med_field(&b[0], 0);
		bp50 = step_p50(&b[0]);
	}
	double p50 = step_p50(t), score;
	if (bops > 0) {
		double ratio = ops / bops;
		if (ratio < STORM_RATIO)
			return;
		score = ramp(ratio, STORM_RATIO, 10);
	} else {
		if (tiny < STORM_TINY ||
		    (p50 > 0 && tiny_us / p50 < STORM_TINY_SHARE && t->tiny_top3_share < STORM_REPEAT))
			return;
		score = ramp(tiny, STORM_TINY, 320);
	}
	struct dg_finding *f = dg_add(fs, "op_storm", "fusion", score);
	if (bops > 0) {
		snprintf(f->summary, sizeof f->summary,
			 "%.0f ops per step vs %.0f in the baseline (%.1fx); %.0f outermost ops per step, %.0f of them "
			 "under 50 us",
			 ops, bops, ops / bops, top, tiny);
		f->lost_us = p50 > bp50 ? p50 - bp50 : tiny_us;
	} else {
		snprintf(f->summary, sizeof f->summary,
			 "%.0f ops per step, %.0f outermost, %.0f of them under 50 us (%.3f ms per step in tiny ops)", ops,
			 top, tiny, tiny_us / 1000);
		f->lost_us = tiny_us;
	}
	snprintf(f->confirm, sizeof f->confirm,
		 "the op count per step: %.0f ops (%.0f tiny outermost ones taking %.3f ms) where the math needs a few", ops,
		 tiny, tiny_us / 1000);
	snprintf(f->fix_how, sizeof f->fix_how, "fuse the elementwise ops (a compiled or fused kernel, bigger ops)");
	addn(f->evidence, "ops_per_step", ops);
	addn(f->evidence, "outermost_ops_per_step", top);
	addn(f->evidence, "tiny_ops_per_step", tiny);
	addn(f->evidence, "tiny_ops_ms_per_step", tiny_us / 1000);
	addn(f->evidence, "tiny_ops_share_of_step", p50 > 0 ? tiny_us / p50 : 0);
	addn(f->evidence, "tiny_ops_top3_names_share", t->tiny_top3_share);
	if (bops > 0) {
		addn(f->evidence, "baseline_ops_per_step", bops);
		addn(f->evidence, "ops_ratio", ops / bops);
	}
	addn(f->evidence, "step_p50_ms", p50 / 1000);
}

static void rule_sync(const struct dg_trace *t, struct dg_findings *fs)
{
	int n = t->n_steps;
	if (!t->has_device || n < 1)
		return;
	int with = 0;
	for (int k = 0; k < n; k++)
		with += t->steps[k].n_mid_sync > 0;
	if (with < SYNC_STEPS * n)
		return;
	double mid = med_field(t, 4), idle_share = med_field(t, 5), idle_us = med_field(t, 6);
	double sync_us = med_field(t, 7);
	/* their cost against the step's time outside its longest wait (a
	 * starving loader must not hide the syncs) */
	double *c = malloc(sizeof(double) * (size_t)n);
	if (!c)
		abort();
	for (int k = 0; k < n; k++) {
		double d = t->steps[k].dur - dg_longest_wait(t, k);
		c[k] = d > 0 ? (t->steps[k].sync_us + t->steps[k].sync_idle_us) / d : 0;
	}
	double cost = dg_median(c, n);
	free(c);
	if (cost < SYNC_COST)
		return;
	double sc = ramp(idle_share, 0, 0.3), sc2 = ramp(mid, 0.5, 6);
	struct dg_finding *f = dg_add(fs, "sync_stall", "defer_host_reads", sc > sc2 ? sc : sc2);
	f->lost_us = idle_us;
	snprintf(f->summary, sizeof f->summary,
		 "%.0f host syncs per step with launches after them (in %d of %d steps); the host waits %.3f ms per "
		 "step in them and the device idles %.3f ms (%.0f%% of the step) around them",
		 mid, with, n, sync_us / 1000, idle_us / 1000, 100 * idle_share);
	snprintf(f->confirm, sizeof f->confirm,
		 "%.0f mid-step device-to-host waits per step, each draining the device, which then idles %.0f%% of "
		 "the step while the host catches up",
		 mid, 100 * idle_share);
	snprintf(f->fix_how, sizeof f->fix_how,
		 "keep the values on the device and read them every N steps, with non-blocking copies");
	addn(f->evidence, "mid_step_syncs_per_step", mid);
	cJSON_AddNumberToObject(f->evidence, "steps_with_mid_step_syncs", with);
	addn(f->evidence, "sync_ms_per_step", sync_us / 1000);
	addn(f->evidence, "device_idle_ms_per_step", idle_us / 1000);
	addn(f->evidence, "device_idle_share_of_step", idle_share);
	addn(f->evidence, "cost_share_of_busy_step", cost);
}

static void rule_straggler(const struct dg_trace *t, size_t n, struct dg_findings *fs)
{
	if (n < 2)
		return;
	size_t c = 0;
	for (size_t i = 1; i < n; i++)
		if (t[i].comp_us > t[c].comp_us)
			c = i;
	double *o = malloc(sizeof(double) * n);
	if (!o)
		abort();
	/* against the other rank (2 ranks) or the median rank (3 or more: two
	 * slow ranks and one fast are no straggler) */
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (i != c || n >= 3)
			o[m++] = t[i].comp_us;
	fl_sort_doubles(o, m);
	double med = dg_median(o, (int)m);
	free(o);
	if (med <= 0)
		return;
	double ratio = t[c].comp_us / med;
	/* it waits least: its communication is the shortest */
	int least_wait = 1;
	double *w = malloc(sizeof(double) * n);
	if (!w)
		abort();
	m = 0;
	for (size_t i = 0; i < n; i++)
		if (i != c) {
			w[m++] = t[i].comm_us;
			if (t[i].comm_us < t[c].comm_us)
				least_wait = 0;
		}
	/* a clear compute gap needs only the shortest wait; a small one a clearly shorter wait */
	if (ratio < STRAGGLER_CLEAR && t[c].comm_us > STRAGGLER_WAIT * dg_median(w, (int)m))
		least_wait = 0;
	free(w);
	/* one rank stands out: from 3 ranks, clearly above the next slowest */
	double second = 0;
	for (size_t i = 0; i < n; i++)
		if (i != c && t[i].comp_us > second)
			second = t[i].comp_us;
	if (n >= 3 && second > 0 && t[c].comp_us < STRAGGLER_ALONE * second)
		return;
	if (ratio < STRAGGLER_RATIO || (t[c].n_comm && !least_wait))
		return;
	/* slow in most steps, not in one: the median over steps of its compute
	 * against the other ranks' (a load spike on one core is no straggler) */
	int ns = t[c].n_steps;
	for (size_t i = 0; i < n; i++)
		if (t[i].n_steps < ns)
			ns = t[i].n_steps;
	double step_ratio = ratio;
	if (ns >= 3) {
		double *sr = malloc(sizeof(double) * (size_t)ns), *ot = malloc(sizeof(double) * n);
		if (!sr || !ot)
			abort();
		for (int k = 0; k < ns; k++) {
			size_t q = 0;
			for (size_t i = 0; i < n; i++)
				if (i != c || n >= 3)
					ot[q++] = t[i].steps[k].comp_us;
			double mk = dg_median(ot, (int)q);
			sr[k] = mk > 0 ? t[c].steps[k].comp_us / mk : 0;
		}
		step_ratio = dg_median(sr, ns);
		free(sr);
		free(ot);
		if (step_ratio < STRAGGLER_RATIO)
			return;
	}
	struct dg_finding *f = dg_add(fs, "straggler", "rebalance", ramp(ratio, STRAGGLER_RATIO, 2.5));
	int steps = t[c].n_steps > 0 ? t[c].n_steps : 1;
	f->lost_us = (t[c].comp_us - med) / steps;
	snprintf(f->summary, sizeof f->summary,
		 "rank %lld computes %.1fx the median rank (%.3f ms vs %.3f ms of compute kernels)%s", t[c].rank, ratio,
		 t[c].comp_us / 1000, med / 1000, t[c].n_comm ? " and waits least in the all-reduce" : "");
	snprintf(f->confirm, sizeof f->confirm,
		 "per-rank compute vs wait: rank %lld has the longest compute (%.1fx the median) and the shortest "
		 "communication (%.3f ms), the other ranks wait for it inside the collective",
		 t[c].rank, ratio, t[c].comm_us / 1000);
	snprintf(f->fix_how, sizeof f->fix_how,
		 "find what slows rank %lld (a throttled or shared device, more data) and balance the work", t[c].rank);
	f->ranks = cJSON_CreateArray();
	cJSON_AddItemToArray(f->ranks, cJSON_CreateNumber((double)t[c].rank));
	cJSON_AddNumberToObject(f->evidence, "rank", (double)t[c].rank);
	addn(f->evidence, "compute_ratio_to_median", ratio);
	addn(f->evidence, "per_step_ratio_median", step_ratio);
	cJSON *cr = cJSON_AddObjectToObject(f->evidence, "compute_ms");
	cJSON *wr = cJSON_AddObjectToObject(f->evidence, "comm_ms");
	for (size_t i = 0; i < n; i++) {
		char k[32];
		snprintf(k, sizeof k, "%lld", t[i].rank);
		addn(cr, k, t[i].comp_us / 1000);
		addn(wr, k, t[i].comm_us / 1000);
	}
}

/* Overlap as a share of what could overlap: comm time under compute over
 * min(comm, compute) per rank. HTA divides by comm time only, which reads low
 * whenever comm is longer than compute (slow links, oversubscribed hosts)
 * even when every bucket is issued during backward. */
static void rule_overlap(const struct dg_trace *t, size_t n, struct dg_findings *fs)
{
	double maxp = -1, exposed = 0, comm = 0, comp = 0, hta_max = 0;
	int steps = 0, ranks = 0;
	for (size_t i = 0; i < n; i++) {
		if (t[i].comm_us <= 0 || t[i].comp_us <= 0)
			continue;
		double room = t[i].comm_us < t[i].comp_us ? t[i].comm_us : t[i].comp_us;
		double p = 100 * t[i].overlap_us / room;
		if (p > maxp)
			maxp = p;
		if (100 * t[i].overlap_us / t[i].comm_us > hta_max)
			hta_max = 100 * t[i].overlap_us / t[i].comm_us;
		exposed += t[i].comm_us - t[i].overlap_us;
		comm += t[i].comm_us;
		comp += t[i].comp_us;
		steps += t[i].n_steps;
		ranks++;
	}
	if (maxp < 0 || maxp >= OVERLAP_LOW)
		return;
	struct dg_finding *f = dg_add(fs, "unoverlapped_comm", "overlap_comm", ramp(OVERLAP_LOW - maxp, 0, 20));
	if (steps < 1)
		steps = 1;
	double per = exposed / steps, comp_per = comp / steps;
	f->lost_us = per < comp_per ? per : comp_per;
	snprintf(f->summary, sizeof f->summary,
		 "communication kernels overlap compute %.0f%% of what could overlap at most (on %d rank%s; HTA's "
		 "comm/compute overlap %.0f%%): %.3f ms of exposed communication per step per rank",
		 maxp, ranks, ranks > 1 ? "s" : "", hta_max, per / 1000);
	snprintf(f->confirm, sizeof f->confirm,
		 "comm/compute overlap is %.0f%% on the best rank (HTA's figure %.0f%%): the all-reduce runs after the "
		 "backward pass with the compute stream idle",
		 maxp, hta_max);
	snprintf(f->fix_how, sizeof f->fix_how,
		 "all-reduce gradient buckets during backward (bucketing, communication hooks)");
	f->ranks = cJSON_CreateArray();
	cJSON *pr = cJSON_AddObjectToObject(f->evidence, "overlap_pct");
	cJSON *hr = cJSON_AddObjectToObject(f->evidence, "hta_comm_comp_pct");
	for (size_t i = 0; i < n; i++) {
		if (t[i].comm_us <= 0 || t[i].comp_us <= 0)
			continue;
		char k[32];
		snprintf(k, sizeof k, "%lld", t[i].rank);
		double room = t[i].comm_us < t[i].comp_us ? t[i].comm_us : t[i].comp_us;
		addn(pr, k, 100 * t[i].overlap_us / room);
		addn(hr, k, 100 * t[i].overlap_us / t[i].comm_us);
		cJSON_AddItemToArray(f->ranks, cJSON_CreateNumber((double)t[i].rank));
	}
	addn(f->evidence, "max_overlap_pct", maxp);
	addn(f->evidence, "exposed_comm_ms_per_step", per / 1000);
	addn(f->evidence, "comm_ms", comm / 1000);
}

/* Merge same-family findings of several ranks: keep the best, list the ranks. */
static void merge_rank(struct dg_findings *all, struct dg_findings *one, long long rank)
{
	for (size_t i = 0; i < one->n; i++) {
		struct dg_finding *f = &one->f[i];
		struct dg_finding *g = NULL;
		for (size_t j = 0; j < all->n; j++)
			if (!strcmp(all->f[j].family, f->family))
				g = &all->f[j];
		if (!g) {
			struct dg_finding *h = dg_add(all, f->family, f->fix, f->score);
			cJSON_Delete(h->evidence);
			*h = *f;
			h->ranks = cJSON_CreateArray();
			cJSON_AddItemToArray(h->ranks, cJSON_CreateNumber((double)rank));
			f->evidence = f->steps = NULL;
			f->ranks = NULL;
			continue;
		}
		cJSON_AddItemToArray(g->ranks, cJSON_CreateNumber((double)rank));
		if (f->score > g->score) {
			cJSON *r = g->ranks;
			cJSON_Delete(g->evidence);
			cJSON_Delete(g->steps);
			*g = *f;
			g->ranks = r;
			f->evidence = f->steps = NULL;
		}
	}
	/* within one rank two spans may give the same family: handled above */
	dg_findings_free(one);
}

void dg_rules(const struct dg_trace *t, size_t n, const struct dg_trace *b, size_t nb, struct dg_findings *fs)
{
	if (!fs->limits)
		fs->limits = cJSON_CreateArray();
	int any_steps = 0, any_dev = 0, any_ops = 0, any_comm = 0, few = 0;
	for (size_t i = 0; i < n; i++) {
		any_steps |= t[i].has_steps;
		any_dev |= t[i].has_device;
		any_ops |= t[i].has_ops;
		any_comm |= t[i].n_comm > 0;
		few |= t[i].has_steps && t[i].n_steps < 4;
	}
	if (!any_steps)
		limit(fs, "no ProfilerStep#N: the trace is read as one step; periodic_host_stall and gc_pause (which "
			  "need steps) were not assessed, per-step figures are whole-trace figures");
	if (few)
		limit(fs, "fewer than 4 steps: periodic_host_stall and gc_pause were not assessed");
	if (!any_dev)
		limit(fs, "no device rows (no kernels or copies): sync_stall, straggler and unoverlapped_comm were "
			  "not assessed");
	else if (!any_comm)
		limit(fs, "no communication kernels: unoverlapped_comm was not assessed");
	if (!any_ops)
		limit(fs, "no cpu_op events: op_storm was not assessed, and waiting time under spans is the whole span");
	if (n < 2 && any_dev)
		limit(fs, "one rank given: straggler needs every rank of the run");
	for (size_t i = 0; i < n; i++) {
		struct dg_findings one = {0};
		one.limits = cJSON_CreateArray();
		rule_starvation(&t[i], &one);
		rule_periodic(&t[i], &one);
		rule_opstorm(&t[i], b, nb, &one);
		rule_sync(&t[i], &one);
		dg_rules_b(&t[i], &one);
		/* one finding per family per rank: the highest score */
		struct dg_findings best = {0};
		best.limits = cJSON_CreateArray();
		for (size_t k = 0; k < one.n; k++) {
			size_t j;
			for (j = 0; j < best.n; j++)
				if (!strcmp(best.f[j].family, one.f[k].family))
					break;
			if (j == best.n) {
				struct dg_finding *h = dg_add(&best, one.f[k].family, one.f[k].fix, 0);
				cJSON_Delete(h->evidence);
				*h = one.f[k];
			} else if (one.f[k].score > best.f[j].score) {
				cJSON_Delete(best.f[j].evidence);
				cJSON_Delete(best.f[j].steps);
				cJSON_Delete(best.f[j].ranks);
				best.f[j] = one.f[k];
			} else {
				cJSON_Delete(one.f[k].evidence);
				cJSON_Delete(one.f[k].steps);
				cJSON_Delete(one.f[k].ranks);
			}
			one.f[k].evidence = one.f[k].steps = one.f[k].ranks = NULL;
		}
		dg_findings_free(&one);
		merge_rank(fs, &best, t[i].rank);
	}
	rule_straggler(t, n, fs);
	rule_overlap(t, n, fs);
	dg_rule_comm(t, n, fs);
	dg_rule_moe(t, n, fs); /* last: it drops its lookalikes' findings */
}
