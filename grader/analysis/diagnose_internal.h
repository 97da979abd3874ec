/* diagnose_internal.h — the model `diagnose` builds of each trace (one per
 * rank) and the rules that read it. diagnose_read.c streams a trace into
 * events and folds them into per-step aggregates; diagnose_rules.c holds one
 * rule per family; diagnose.c runs them, ranks the findings and narrates. */
#ifndef FL_DIAGNOSE_INTERNAL_H
#define FL_DIAGNOSE_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "grader/trace/trace_stream.h"

enum dg_kind {
	DG_STEP,   /* ProfilerStep#N */
	DG_SPAN,   /* user_annotation (host) */
	DG_OP,     /* cpu_op */
	DG_RT,     /* cuda_runtime / cuda_driver */
	DG_KCOMP,  /* device: computation kernel (HTA's kernel type by name) */
	DG_KCOMM,  /* device: communication kernel (^nccl.*Kernel) */
	DG_KMEM,   /* device: memcpy / memset */
	DG_KOTHER, /* device: anything else on a stream */
};

/* runtime call flags */
#define DG_RT_SYNC 1u   /* host waits for the device (…Synchronize, sync cudaMemcpy) */
#define DG_RT_LAUNCH 2u /* a kernel launch */
#define DG_RT_MEMCPY 4u /* a blocking cudaMemcpy (not Async) */
#define DG_RT_ALLOC 8u  /* cudaMalloc / cudaFree and the driver's */
/* device event flags (in rtf) */
#define DG_DEV_D2H 1u  /* Memcpy DtoH */
#define DG_DEV_H2D 2u  /* Memcpy HtoD */
#define DG_DEV_CAST 4u /* a dtype cast kernel (name holds "cast") */
/* cpu_op flags (in rtf) */
#define DG_OP_ALLOC 1u /* ::empty / ::empty_strided */
#define DG_OP_COPY 2u  /* ::copy_ / ::_to_copy */
#define DG_OP_CONV 4u  /* ::_to_copy (a dtype or device conversion) */

struct dg_ev {
	double ts, end; /* µs */
	uint64_t thread; /* pid/tid key (host) or pid/stream (device) */
	uint32_t name;
	uint8_t kind, rtf;
	int32_t step_no; /* DG_STEP: N of ProfilerStep#N */
};

/* Per step: what ran on the step's thread and on the device meanwhile. */
struct dg_step {
	int no;                 /* ProfilerStep#N (or the index without steps) */
	double ts, end, dur;    /* µs */
	int n_ops, n_top, n_tiny; /* cpu_ops; outermost ones; outermost < 50 µs */
	double top_us, tiny_us;   /* time in outermost ops, in tiny ones */
	double covered_us;        /* union of spans and outermost ops */
	int n_sync, n_mid_sync;   /* host syncs; syncs with a launch after them in the step */
	double sync_us, sync_idle_us; /* time in syncs; device idle around mid-step syncs */
	double dev_busy_us, comp_us, comm_us, comm_overlap_us; /* unions in the step window */
	double comp_fast_us;      /* per computation kernel name: its fastest in the window x its count */
	int n_launch;             /* kernel launches on the step's thread */
	double launch_us;         /* time in them */
	int n_alloc;              /* cudaMalloc/cudaFree calls, or allocation ops of 200 us or more */
	double alloc_us;          /* time in them (nested calls counted once) */
	int n_h2d_block;          /* blocking cudaMemcpy with a host-to-device copy under it */
	double h2d_block_us, h2d_first_pos; /* time in them; first one's start, share of the step */
	double launch_first_pos;  /* the step's first launch, share of the step (1 when none) */
	int n_cast;               /* dtype cast kernels in the step's device window */
	int n_conv;               /* conversion ops of 5 us or more (the host's casts) */
	double cast_us, conv_us;  /* time in cast kernels, in those ops */
};

/* A span name's per-step figures (steps in order). */
struct dg_span {
	uint32_t name;
	double *dur;     /* total length per step (outermost occurrences), 0 when absent */
	double *ops_us;  /* time in outermost ops under it */
	double *gap;     /* the longest stretch under it with no op on its thread, less
			  * what ran meanwhile on other threads or the device */
	int *count;
	int *n_ops;      /* outermost ops under it */
	int *n_nested;   /* spans of other names under it */
	int *n_copy;     /* device-to-host copies in its window, and copy ops under it */
	int *launch_before; /* the step's launches before it starts */
	int *launch_in;     /* launches under it */
	int n_present;   /* steps in which it occurs */
	double first_pos; /* mean start within the step, as a fraction of the step */
};

struct dg_trace {
	const char *path;        /* for messages only: never used in the diagnosis */
	struct fl_strtab *st;
	struct fl_trace_info info;
	long long rank;
	struct dg_ev *ev;
	size_t n_ev, cap_ev;
	int has_steps, has_device, has_ops;
	struct dg_step *steps;
	int n_steps;
	struct dg_span *spans;
	int n_spans;
	/* whole-trace device figures */
	double comp_us, comm_us, overlap_us, dev_span_us;
	/* tiny outermost ops: share of them the 3 most frequent names hold */
	double tiny_top3_share;
	int n_comm;
	double launch_med_us, kern_med_us; /* median launch call, median compute kernel */
	/* a mixture of experts: rows in the Input Dims of forward ops named *expert*
	 * (the tokens an expert received), summed, and the number of such ops */
	double expert_rows;
	long n_expert_ops;
	/* data-parallel collectives: elements in the Input Dims of cpu ops named
	 * *all_reduce* / *allreduce* (c10d's and faultline's), summed, and the
	 * number of such ops */
	double allreduce_elems;
	long n_allreduce_ops;
	double *comm_dur; /* each communication kernel's length (µs), in start order: n_comm of them */
	uint64_t main_thread;
	enum fl_status st_read;
	char msg[1024];
};

/* Read paths[i] into t[i] (in parallel) and build the per-step model.
 * Ranks: distributedInfo.rank, else HTA's rank, else the position. */
enum fl_status dg_load(const char *const *paths, size_t n, struct dg_trace **out);
void dg_free(struct dg_trace *t, size_t n);

const char *dg_str(const struct dg_trace *t, uint32_t id);
double dg_median(const double *v, int n); /* the true median; 0 when n = 0 */

/* One finding, while the rules run. */
struct dg_finding {
	const char *family, *fix;
	double score;        /* [0, 1] */
	double lost_us;      /* step time lost to it, per step (for the narration) */
	char summary[512];   /* the evidence in one line, with its numbers */
	char confirm[512];   /* the confirming measurement, one sentence */
	char fix_how[256];
	cJSON *evidence;     /* owned */
	cJSON *steps, *ranks; /* owned, or NULL */
};

struct dg_findings {
	struct dg_finding *f;
	size_t n, cap;
	cJSON *limits; /* array of strings */
};

struct dg_finding *dg_add(struct dg_findings *fs, const char *family, const char *fix, double score);
void dg_findings_free(struct dg_findings *fs);
/* The first finding of a family (NULL: none); drop one (its JSON freed, the
 * rest moved up); drop every finding of a family (a lookalike's). */
struct dg_finding *dg_find(struct dg_findings *fs, const char *family);
void dg_drop(struct dg_findings *fs, struct dg_finding *f);
void dg_drop_family(struct dg_findings *fs, const char *family);

/* The rules of the later families (diagnose_rules_b.c), on one rank:
 * recompile, optimizer_dominance, launch_bound, alloc_stall, blocking_h2d,
 * dtype_casts, dvfs_throttle. */
void dg_rules_b(const struct dg_trace *t, struct dg_findings *fs);
/* shared helpers of the rule files */
double dg_ramp(double x, double lo, double hi);
void dg_addn(cJSON *o, const char *k, double v);
double dg_step_p50(const struct dg_trace *t);
/* Step k's longest wait under any span (the longest stretch with nothing
 * running, diagnose_read.c's gap). */
double dg_longest_wait(const struct dg_trace *t, int k);
/* Step k's time less its longest span wait and its allocator time (what
 * another fault holds it in), so one fault's stall does not hide another's
 * share of the step. */
double dg_step_less_waits(const struct dg_trace *t, int k);

/* expert_imbalance (diagnose_rules_moe.c), over every rank; it drops the
 * findings its lookalikes make on an expert-parallel layer. */
void dg_rule_moe(const struct dg_trace *t, size_t n, struct dg_findings *fs);
/* comm_bound (diagnose_rules_comm.c), over every rank of the run. */
void dg_rule_comm(const struct dg_trace *t, size_t n, struct dg_findings *fs);

/* Run every rule over the run (t[0..n)), with an optional baseline. */
void dg_rules(const struct dg_trace *t, size_t n, const struct dg_trace *b, size_t nb, struct dg_findings *fs);

#endif
