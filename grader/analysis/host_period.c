/* host_period.c — which steps a span is long in, and the period of those steps,
 * robust to the noise of real runs.
 *
 * Split. The per-step lengths are sorted and every gap between neighbours that
 * could separate "short" from "long" is a candidate: the jump is at least
 * max(0.1 ms, 25% of the median step) and the long side at least twice the
 * short side. Candidates are ranked by the ratio across the gap (long side ÷
 * short side), not by its absolute size, so one instance three times the others
 * (a cold first call) stays with the other long steps instead of standing alone.
 *
 * Fit. For a split, the period is the smallest p >= 2 whose residue class (step
 * number mod p == phase) is exactly the set of long steps (confidence 1). When
 * no p fits exactly, a load spike may have stretched a clean step or shrunk a
 * long one: the best p among the divisors of the gaps between consecutive long
 * steps is taken if it leaves at most max(1, n/10) steps off the pattern, keeps
 * at least 3 long steps on it and fewer off it than half of those; its
 * confidence is the overlap of the pattern's steps and the long steps
 * (|both| ÷ |either|). The first split (by ratio) with an exact fit wins, then
 * the split with the most confident approximate fit, then the top split with no
 * period at all.
 */
#include "grader/analysis/host_metrics.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"

#define MAX_SPLITS 4        /* candidate splits tried */
#define MAX_GAPS 32         /* distinct gaps between long steps whose divisors are tried */
#define MAX_CANDIDATES 512  /* approximate-fit periods tried per split */
#define WORK_BUDGET 20000000.0 /* candidates x steps per split */

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		abort();
	return p;
}

static long mod_pos(long a, long p) { return ((a % p) + p) % p; }

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

struct fit {
	int period, phase;
	double confidence;
	int exact;
};

/* the steps that disagree with (period, phase) when "long" means > low_max */
static size_t off_pattern(const double *values, const int *step_num, size_t n, double low_max, int per, int phase,
			  int *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if ((mod_pos(step_num[i], per) == phase) != (values[i] > low_max)) {
			if (out)
				out[k] = step_num[i];
			k++;
		}
	return k;
}

/* the divisors >= 2 of d, appended to c (up to cap) */
static size_t add_divisors(uint64_t d, uint64_t *c, size_t k, size_t cap)
{
	for (uint64_t x = 1; d && x * x <= d && k < cap; x++)
		if (d % x == 0) {
			if (x >= 2)
				c[k++] = x;
			if (x * x != d && k < cap)
				c[k++] = d / x;
		}
	return k;
}

static struct fit fit_period(const double *values, const int *step_num, size_t n, double low_max, const int *L,
			     size_t nl)
{
	struct fit best = {0, 0, 0, 0};
	if (nl < 2)
		return best;
	/* exact: p divides g, the gcd of the long steps' differences; the divisors
	 * of g in increasing order (at most 1344 for a number below 2^32) */
	uint64_t g = 0;
	for (size_t i = 1; i < nl; i++) {
		uint64_t d = (uint64_t)((int64_t)L[i] - L[0]);
		while (d) {
			uint64_t t = g % d;
			g = d;
			d = t;
		}
	}
	uint64_t small[2048], large_rev[2048];
	size_t ns = 0, nlg = 0;
	for (uint64_t d = 1; g && d * d <= g && ns < 2048; d++)
		if (g % d == 0) {
			small[ns++] = d;
			if (d * d != g)
				large_rev[nlg++] = g / d;
		}
	for (size_t k = 0; k < ns + nlg; k++) {
		uint64_t per = k < ns ? small[k] : large_rev[nlg - 1 - (k - ns)];
		if (per < 2 || per > INT_MAX)
			continue;
		int phase = (int)mod_pos(L[0], (long)per);
		if (off_pattern(values, step_num, n, low_max, (int)per, phase, NULL) == 0) {
			best = (struct fit){(int)per, phase, 1.0, 1};
			return best;
		}
	}
	if (nl < 3)
		return best;
	/* approximate: the divisors of the gaps between consecutive long steps */
	uint64_t *gaps = xcalloc(nl, sizeof(uint64_t)), *cand = xcalloc(MAX_CANDIDATES, sizeof(uint64_t));
	size_t ng = 0, nc = 0;
	for (size_t i = 1; i < nl; i++)
		if (L[i] != L[i - 1])
			gaps[ng++] = (uint64_t)((int64_t)L[i] - L[i - 1]);
	qsort(gaps, ng, sizeof(uint64_t), cmp_u64);
	size_t distinct = 0;
	for (size_t i = 0; i < ng && distinct < MAX_GAPS; i++) {
		if (i && gaps[i] == gaps[i - 1])
			continue;
		distinct++;
		nc = add_divisors(gaps[i], cand, nc, MAX_CANDIDATES);
	}
	qsort(cand, nc, sizeof(uint64_t), cmp_u64);
	size_t budget = (size_t)fmin((double)MAX_CANDIDATES, WORK_BUDGET / (double)(n + nl));
	long *res = xcalloc(nl, sizeof(long));
	size_t allowed = n / 10 > 1 ? n / 10 : 1, tried = 0;
	for (size_t k = 0; k < nc && tried < budget; k++) {
		if ((k && cand[k] == cand[k - 1]) || cand[k] > INT_MAX)
			continue;
		tried++;
		long per = (long)cand[k];
		/* the phase most long steps share */
		for (size_t i = 0; i < nl; i++)
			res[i] = mod_pos(L[i], per);
		qsort(res, nl, sizeof(long), cmp_long);
		long phase = res[0];
		size_t run = 0, best_run = 0;
		for (size_t i = 0; i < nl; i++) {
			run = (i && res[i] == res[i - 1]) ? run + 1 : 1;
			if (run > best_run) {
				best_run = run;
				phase = res[i];
			}
		}
		size_t on = 0, predicted = 0;
		for (size_t i = 0; i < n; i++) {
			int in = mod_pos(step_num[i], per) == phase;
			predicted += (size_t)in;
			on += (size_t)(in && values[i] > low_max);
		}
		size_t extra = nl - on, missing = predicted - on;
		if (on < 3 || extra + missing > allowed || 2 * (extra + missing) >= on)
			continue;
		double conf = (double)on / (double)(nl + missing);
		if (conf > best.confidence + 1e-12)
			best = (struct fit){(int)per, (int)phase, conf, 0};
	}
	free(res);
	free(gaps);
	free(cand);
	return best;
}

int fl_detect_period(const double *values, const int *step_num, size_t n, double median_step_ms,
		     struct fl_span_period *p)
{
	memset(p, 0, sizeof(*p));
	if (n < 3)
		return 0;
	double *s = fl_sorted_copy(values, n);
	double floor_ms = fmax(0.1, 0.25 * median_step_ms);
	/* the candidate splits, best ratio first */
	size_t split[MAX_SPLITS];
	double ratio[MAX_SPLITS];
	size_t nsplit = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		double lo = s[i], hi = s[i + 1];
		if (!(hi - lo >= floor_ms) || !(hi >= 2 * lo))
			continue;
		double r = lo > 0 ? hi / lo : INFINITY;
		size_t at = nsplit < MAX_SPLITS ? nsplit++ : MAX_SPLITS;
		if (at == MAX_SPLITS) {
			if (!(r > ratio[MAX_SPLITS - 1]))
				continue;
			at = MAX_SPLITS - 1;
		}
		while (at > 0 && r > ratio[at - 1]) {
			split[at] = split[at - 1];
			ratio[at] = ratio[at - 1];
			at--;
		}
		split[at] = i;
		ratio[at] = r;
	}
	if (!nsplit) {
		free(s);
		return 0;
	}
	int *L = xcalloc(n, sizeof(int));
	size_t chosen = 0;
	struct fit best = {0, 0, 0, 0};
	for (size_t c = 0; c < nsplit; c++) {
		double low_max = s[split[c]];
		size_t nl = 0;
		for (size_t i = 0; i < n; i++)
			if (values[i] > low_max)
				L[nl++] = step_num[i];
		qsort(L, nl, sizeof(int), cmp_int);
		struct fit f = fit_period(values, step_num, n, low_max, L, nl);
		if (f.exact) {
			best = f;
			chosen = c;
			break;
		}
		if (f.period && f.confidence > best.confidence + 1e-12) {
			best = f;
			chosen = c;
		}
	}
	free(L);
	double low_max = s[split[chosen]], high_min = s[split[chosen] + 1];
	free(s);
	p->threshold_ms = (low_max + high_min) / 2;
	p->period = best.period;
	p->phase = best.phase;
	p->confidence = best.confidence;
	p->long_steps = xcalloc(n, sizeof(int));
	double *lo = xcalloc(n, sizeof(double)), *hi = xcalloc(n, sizeof(double));
	size_t n_lo = 0, n_hi = 0;
	for (size_t i = 0; i < n; i++) {
		if (values[i] > low_max) {
			hi[n_hi++] = values[i];
			p->long_steps[p->n_long++] = step_num[i];
		} else {
			lo[n_lo++] = values[i];
		}
	}
	qsort(p->long_steps, p->n_long, sizeof(int), cmp_int);
	p->long_p50_ms = fl_p50_upper(hi, n_hi);
	p->short_p50_ms = fl_p50_upper(lo, n_lo);
	for (size_t i = 0; i < n_hi; i++)
		p->excess_ms += hi[i] - p->short_p50_ms;
	free(lo);
	free(hi);
	if (p->period) {
		p->n_off = off_pattern(values, step_num, n, low_max, p->period, p->phase, NULL);
		p->off_steps = p->n_off ? xcalloc(p->n_off, sizeof(int)) : NULL;
		if (p->n_off)
			off_pattern(values, step_num, n, low_max, p->period, p->phase, p->off_steps);
		if (p->n_off)
			qsort(p->off_steps, p->n_off, sizeof(int), cmp_int);
	}
	return 1;
}

void fl_free_period(struct fl_span_period *p)
{
	free(p->long_steps);
	free(p->off_steps);
	p->long_steps = p->off_steps = NULL;
}
