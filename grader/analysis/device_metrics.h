/* device_metrics.h — HTA's device analyses of Kineto traces, in C.
 *
 * The definitions, thresholds and data preparation of HolisticTraceAnalysis
 * 0.5.0 (HTA), reproduced so that `faultline analyze` and HTA agree to the µs
 * on the same traces (docs/analyze.md lists every deliberate difference):
 *
 *  - Reading: an event counts when it has `dur` and `cat` and its cat is not
 *    "Trace". When some ts is a float (or missing), ts is rounded up and
 *    ts + dur down to whole µs (HTA's ns rounding). args.stream (int() of it,
 *    -1 when absent) and args.correlation (-1 when absent) classify events: a
 *    device event has stream >= 0 and correlation >= 0 (or is named
 *    "Event Sync"/"Context Sync"); host↔device links use the correlation.
 *  - Steps: `ProfilerStep#N`. With two or more step names in the job, each
 *    rank keeps its host events that start before its last step starts, and
 *    the device events whose correlation matches a kept host event: the last
 *    step and the kernels it launched are dropped.
 *  - temporal: over the device rows (stream != -1), span = end of the last
 *    merged interval − start of the first; idle = span − |union|; compute =
 *    |union of COMPUTATION kernels|; non-compute = span − compute − idle.
 *  - kernel type by name: COMMUNICATION `^nccl.*Kernel`; MEMORY `^Memcpy`,
 *    `^Memset`, `^dma`; COMPUTATION unless the first line of the name holds
 *    `Memcpy` or `Sync`, or it starts with `Memset`; else OTHER.
 *  - idle (per stream): kernels, copies and sets in time order; the gap before
 *    a kernel is host wait when its launch started after the previous kernel
 *    ended, else kernel wait when shorter than 30 µs, else other.
 *  - overlap: time comm and compute kernels run together / comm time.
 *  - kernels: time per type, overlaps named "A overlapping B" (all ranks);
 *    per name sum/max/min/mean/std with HTA's top-N + "others" rule.
 *  - launch: launch delay = kernel.ts − (launch.ts + launch.dur), clipped at
 *    0; short kernels (launch ≤ 50 µs and kernel shorter than its launch),
 *    runtime outliers (> 50 µs), launch-delay outliers (> 100 µs).
 *  - queue: per stream, +1 at each launch, −1 at each kernel start; summary
 *    of the samples (count, mean, std, min, quartiles, max).
 *  - straggler: HTA's late-start rule on the last long (≥ 1% of the mean
 *    iteration) collective of each rank/stream/iteration; plus the spread of
 *    that collective's start across ranks.
 *  - diff: op/kernel counts and total durations per name, test − control
 *    (HTA's TraceDiff: first rank, first iteration unless told otherwise).
 *
 * Memory: per event HTA keeps (device events, events with a correlation,
 * steps) 56 bytes; other host events are counted, and kept (24 bytes) only
 * for the straggler rule (several ranks) and diffs. The files of a job are
 * read in parallel, one per core (opts.jobs), or split between processes
 * (fl_device_metrics_split). Jobs share no state: separate jobs may be
 * analysed on separate threads.
 */
#ifndef FL_DEVICE_METRICS_H
#define FL_DEVICE_METRICS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

struct fl_dm_opts {
	int include_last_step;         /* HTA's include_last_profiler_step */
	double kernel_wait_us;         /* idle: kernel wait below this gap (30) */
	size_t top_kernels;            /* kernels by name: keep this many (10) */
	double duration_ratio;         /* ... and those within this share (0.8) */
	double runtime_cutoff_us;      /* launch: runtime outliers above (50) */
	double launch_delay_cutoff_us; /* launch: delay outliers above (100) */
	int straggler_candidates;      /* straggler.candidates: top k (2) */
	int keep_host;                 /* keep every host op (diffs need them) */
	int no_thread;                 /* read gzip without a second thread, one file at a time */
	int jobs;                      /* files read at a time (threads); 0: one per online core */
	int sha256;                    /* hash every file in its one pass (fl_dm_sha256) */
	struct fl_trace *host0;        /* non-NULL: file 0's events are also collected here
	                                * for the host metrics, in the same pass; the
	                                * caller releases it (fl_trace_release), even on error */
};
#define FL_DM_OPTS_INIT { 0, 30.0, 10, 0.8, 50.0, 100.0, 2, 0, 0, 0, 0, NULL }

struct fl_trace; /* grader/trace/trace_events.h */

/* The traces of one job, one per rank, as the analyses keep them. */
struct fl_dm_job;

/* Read traces (.json or .json.gz, one per rank). The rank of a file is found
 * as HTA finds it (first `"rank": N` in the text, else 0); two files with the
 * same rank are an error. Errors: FL_EINPUT (unreadable, truncated or corrupt
 * file, named with the byte offset), FL_ERUNTIME. */
enum fl_status fl_dm_load(const char *const *paths, size_t n, const struct fl_dm_opts *o,
			  struct fl_dm_job **out);
void fl_dm_free(struct fl_dm_job *job);
/* SHA-256 (hex) of the i-th file given to fl_dm_load, read with opts.sha256. */
const char *fl_dm_sha256(const struct fl_dm_job *job, size_t i);

/* The analyses as JSON (caller owns). Keys, all times in µs, shares in %:
 *   schema "faultline.device_metrics/1", rank_ids [..], files [..],
 *   steps {recorded, analyzed, dropped_last, rounded_us},
 *   temporal {idle_us, compute_us, non_compute_us, span_us, idle_pct,
 *             compute_pct, non_compute_pct}                 (sums over ranks)
 *   overlap {comm_us, overlap_us, comm_comp_pct}             (pooled)
 *   idle {STREAM: {host_wait_us, kernel_wait_us, other_us, total_us,
 *                  host_wait_pct, kernel_wait_pct, other_pct, gaps}}
 *   kernels {types {TYPE: {us, pct}}, by_name {TYPE: [{name, sum_us, max_us,
 *            min_us, mean_us, std_us}]}}
 *   launch {pairs, cpu_us {sum, mean, max}, gpu_us {...}, delay_us {sum,
 *           mean, p50, p95, max}, short_kernels, runtime_outliers,
 *           launch_delay_outliers}
 *   queue {STREAM: {count, mean, std, min, p25, p50, p75, max}}
 *   straggler {rank, candidates [..], counts {RANK: n}, stream, kernel,
 *              iterations, spread_us {mean, max}, late_us {RANK: mean}}
 *              (null with a `why` when it cannot be computed)
 *   ranks {RANK: {temporal, overlap, idle, kernels, launch, queue}}
 * A value that cannot be computed (no kernels, no comm) is null. */
cJSON *fl_device_metrics_json(const struct fl_dm_job *job);

/* Load + analyse + JSON in one call. */
enum fl_status fl_device_metrics(const char *const *paths, size_t n, const struct fl_dm_opts *o, cJSON **out);

/* A job split between processes (the nodes of a cluster, under mpirun): the
 * collectives the processes share, given by the caller (cli/ over MPI), so
 * that this layer needs no MPI. Buffers in process order, back to back. */
struct fl_dm_comm {
	int rank, size; /* this process, and how many there are */
	void *arg;
	/* every process's bytes to every process: *all (caller frees) holds
	 * them, lens[p] (size entries, the caller's) the count of process p's */
	enum fl_status (*allgather)(void *arg, const void *mine, size_t n, char **all, size_t *lens);
	/* the same, to process 0 only (*all is NULL elsewhere) */
	enum fl_status (*gather)(void *arg, const void *mine, size_t n, char **all, size_t *lens);
};

/* fl_device_metrics() over the processes of comm, each reading the files i
 * with i % size == rank, and holding only their events; process 0 pools the
 * ranks' states (never the events) and gets *out: the same document as
 * fl_device_metrics() of all files in one process. Every process returns the
 * same status. comm NULL or of size 1: fl_device_metrics(). */
enum fl_status fl_device_metrics_split(const char *const *paths, size_t n, const struct fl_dm_opts *o,
				       const struct fl_dm_comm *comm, cJSON **out);

/* Bytes of JSON text read and events seen (for benchmarks). */
double fl_dm_json_bytes(const struct fl_dm_job *job);
uint64_t fl_dm_events(const struct fl_dm_job *job);

#define FL_DIFF_FIRST (-1) /* HTA's default: the first iteration (step) */
#define FL_DIFF_ALL (-2)   /* every event, whatever its step */

struct fl_diff_opts {
	long long control_rank, test_rank; /* -1: the first rank of each */
	long long control_iter, test_iter; /* a step number, FL_DIFF_FIRST or FL_DIFF_ALL */
};
#define FL_DIFF_OPTS_INIT { -1, -1, FL_DIFF_FIRST, FL_DIFF_FIRST }

/* HTA's trace diff of two jobs (load both with keep_host = 1):
 *   {schema "faultline.trace_diff/1", control {rank, iteration},
 *    test {rank, iteration}, ops {NAME: {control_count, test_count,
 *    diff_count, control_us, test_us, diff_us, change "+"|"-"|"="}},
 *    added [..], deleted [..], increased [..], decreased [..], unchanged [..]}
 * FL_EINPUT when a requested rank or step does not exist. */
enum fl_status fl_trace_diff_json(const struct fl_dm_job *control, const struct fl_dm_job *test,
				  const struct fl_diff_opts *o, cJSON **out);

#endif
