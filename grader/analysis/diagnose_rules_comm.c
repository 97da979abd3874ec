/* diagnose_rules_comm.c — comm_bound: a data-parallel run whose gradient
 * all-reduces are limited by the link, on every rank alike.
 *
 * What the trace gives: the bytes of each step's all-reduces (the Input Dims
 * of the all-reduce ops: elements, 4 bytes each — float32 gradients), the
 * link's bandwidth (deviceProperties[0].interconnect."bandwidth (Gbit/s)",
 * which faultline's emulated device names), and per rank and step the time
 * the device spent in communication kernels.
 *
 * The transfer time of a collective is its least length over the ranks (the
 * k-th collective of every rank is the same one): every rank waits in it until
 * the last one joins, so the rank that joined last spent only the transfer in
 * it (a straggler's waits are long on the others, short on itself). Bus bytes (a ring all-reduce sends 2(p−1)/p
 * of the buffer per rank, NCCL's convention) over that time is the bandwidth
 * the link delivered. The run is comm-bound when that is a large share of
 * what the link can do (the link, not the machine, is the limit), the
 * transfer fills a good part of the step, and the ranks are alike in compute
 * and in comm (symmetric: no straggler). Without the link's bandwidth or the
 * bytes, the rule is not assessed and `limits` says so.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grader/analysis/diagnose_internal.h"

#define COMM_LINK_SHARE 0.15 /* delivered bandwidth over the link's, at least (a healthy run: ~1%) */
#define COMM_STEP_SHARE 0.20 /* the transfer's share of the step, at least (score 0.5 -> 1 up to 0.6) */
#define COMM_SPREAD 0.35     /* per-rank median-step compute and comm: (max - min) / max at most (a straggler: 0.43+) */

static double spread(const double *v, size_t n)
{
	double lo = INFINITY, hi = 0;
	for (size_t i = 0; i < n; i++) {
		lo = fmin(lo, v[i]);
		hi = fmax(hi, v[i]);
	}
	return hi > 0 ? (hi - lo) / hi : 0;
}

void dg_rule_comm(const struct dg_trace *t, size_t n, struct dg_findings *fs)
{
	if (n < 2)
		return;
	int steps = t[0].n_steps;
	int have_bytes = 1, have_link = 1, have_comm = 1;
	for (size_t r = 0; r < n; r++) {
		if (t[r].n_steps < steps)
			steps = t[r].n_steps;
		have_bytes &= t[r].n_allreduce_ops > 0 && t[r].allreduce_elems > 0;
		have_link &= t[r].info.has_link_gbps;
		have_comm &= t[r].n_comm > 0 && t[r].has_device;
	}
	if (!have_comm || steps < 1)
		return;
	if (!have_bytes || !have_link) {
		cJSON_AddItemToArray(fs->limits,
				     cJSON_CreateString(!have_bytes ? "no bytes per all-reduce (Input Dims of the all-reduce "
								      "ops): comm_bound was not assessed"
								    : "no link bandwidth in deviceProperties[0].interconnect: "
								      "comm_bound was not assessed"));
		return;
	}
	double link = t[0].info.link_gbps;
	double p = (double)n;
	double bus_bytes = 2.0 * (p - 1) / p * 4.0 * t[0].allreduce_elems / t[0].n_steps;
	double *comp = calloc(n, sizeof(double)), *comm = calloc(n, sizeof(double));
	if (!comp || !comm)
		abort();
	/* per rank, its median step's compute and comm: a stall in some steps
	 * of one rank (a collector, a loader) makes the others wait in those
	 * steps' collectives only, a straggler in every step */
	double step_sum = 0, *col = malloc(sizeof(double) * (size_t)steps);
	if (!col)
		abort();
	for (size_t r = 0; r < n; r++) {
		for (int k = 0; k < steps; k++)
			col[k] = t[r].steps[k].comp_us;
		comp[r] = dg_median(col, steps);
		for (int k = 0; k < steps; k++)
			col[k] = t[r].steps[k].comm_us;
		comm[r] = dg_median(col, steps);
	}
	free(col);
	for (int k = 0; k < steps; k++)
		step_sum += dg_step_less_waits(&t[0], k); /* a stall elsewhere must not hide the transfer */
	/* the k-th collective is the same one on every rank (they run in order):
	 * its least length over the ranks is its transfer; summed, per step (step
	 * by step would split a collective that ends in the next step's window on
	 * one rank and not on another) */
	long nk = t[0].n_comm;
	for (size_t r = 1; r < n; r++)
		if (t[r].n_comm < nk)
			nk = t[r].n_comm;
	double floor_us = 0;
	for (long k = 0; k < nk; k++) {
		double lo = INFINITY;
		for (size_t r = 0; r < n; r++)
			lo = fmin(lo, t[r].comm_dur[k]);
		floor_us += lo;
	}
	/* the collectives of the analysed steps (device events may trail the last) */
	if (nk > 0 && t[0].n_allreduce_ops > 0)
		floor_us *= fmin(1.0, (double)t[0].n_allreduce_ops / (double)nk);
	floor_us /= steps;
	double got = floor_us > 0 ? bus_bytes * 8.0 / (floor_us * 1000.0) : 0; /* bits per ns = Gbit/s */
	double fill = step_sum > 0 ? floor_us * steps / step_sum : 0;
	double sp_comp = spread(comp, n), sp_comm = spread(comm, n);
	free(comp);
	free(comm);
	if (!(floor_us > 0) || got < COMM_LINK_SHARE * link || fill < COMM_STEP_SHARE || sp_comp > COMM_SPREAD ||
	    sp_comm > COMM_SPREAD)
		return;
	double p50 = dg_step_p50(&t[0]);
	struct dg_finding *f = dg_add(fs, "comm_bound", "change_ratio", dg_ramp(fill, COMM_STEP_SHARE, 0.6));
	f->lost_us = fill * p50;
	snprintf(f->summary, sizeof f->summary,
		 "the all-reduces move %.2f MB per step per rank (bus bytes) at %.2f Gbit/s, %.0f%% of the %.3g Gbit/s "
		 "link, taking %.0f%% of the step on every rank alike (per-rank comm within %.0f%%, compute within %.0f%%)",
		 bus_bytes / 1e6, got, 100 * got / link, link, 100 * fill, 100 * sp_comm, 100 * sp_comp);
	snprintf(f->confirm, sizeof f->confirm,
		 "bytes over comm time: %.2f Gbit/s against the link's %.3g, symmetric across the %zu ranks: the link is "
		 "the limit, not a rank",
		 got, link, n);
	snprintf(f->fix_how, sizeof f->fix_how,
		 "change the compute-to-communication ratio: a larger batch per rank, gradient accumulation, "
		 "compressed or lower-precision gradients, or a faster link");
	dg_addn(f->evidence, "link_gbps", link);
	dg_addn(f->evidence, "achieved_gbps", got);
	dg_addn(f->evidence, "share_of_link", got / link);
	dg_addn(f->evidence, "bus_mb_per_step", bus_bytes / 1e6);
	dg_addn(f->evidence, "transfer_share_of_step", fill);
	dg_addn(f->evidence, "comm_spread", sp_comm);
	dg_addn(f->evidence, "compute_spread", sp_comp);
	cJSON *ra = cJSON_CreateArray();
	for (size_t r = 0; r < n; r++)
		cJSON_AddItemToArray(ra, cJSON_CreateNumber((double)t[r].rank));
	f->ranks = ra;
}
