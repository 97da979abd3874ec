/* device_internal.h — what the files of the device analyses share; private
 * to grader/analysis/device_*.c (the contract is device_metrics.h).
 *
 *   device_events.c     the event model: sorting and statistics helpers, what
 *                       a name or cat says (kernel type, step, launch, ...)
 *   device_load.c       reading the traces of a job (a file per thread)
 *   device_view.c       HTA's preparation of a rank (rounding, alignment,
 *                       correlation links, steps, the last-step filter) and
 *                       the rows the analyses read (struct actx)
 *   device_temporal.c   temporal breakdown, comm/compute overlap
 *   device_idle.c       idle time per stream
 *   device_kernels.c    kernel time by type and by name
 *   device_launch.c     kernel launch statistics
 *   device_queue.c      queue length per stream
 *   device_straggler.c  the straggler rank (all ranks at once)
 *   device_metrics.c    the driver: runs the table of analyses per rank and
 *                       pools the ranks' results (written once, for all)
 *   device_split.c      a job split between processes: each reads its share
 *                       of the files, process 0 pools the ranks' states
 *   device_wire.c       the bytes those states travel as between processes
 *   device_diff.c       HTA's trace diff of two jobs
 *
 * To add an analysis: write grader/analysis/device_NAME.c with its state,
 * its hooks and a `const struct dm_analysis dm_NAME`; declare it below; add
 * it to the table in device_metrics.c (its place there is its place in the
 * JSON); document its keys in device_metrics.h and docs/analyze.md.
 */
#ifndef FL_DEVICE_INTERNAL_H
#define FL_DEVICE_INTERNAL_H

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "common/stats.h"
#include "common/strbuf.h"
#include "grader/analysis/device_metrics.h"
#include "grader/trace/trace_stream.h"

#define ITER_NAN INT32_MIN /* HTA leaves the iteration of such rows NaN */

/* HTA's merge repeats a device event once per host event of its correlation;
 * correlation ids that repeat thousands of times (a broken trace) would make
 * that quadratic. Past this many rows per event the work is refused. */
#define ROWS_PER_EVENT 4

/* ----------------------------------------------- helpers (device_events.c) */

void *dm_xalloc(void *p, size_t n); /* realloc; aborts when out of memory */

#define GROW(arr, n, cap)                                                      \
	do {                                                                   \
		if ((n) == (cap)) {                                            \
			(cap) = (cap) ? 2 * (cap) : 256;                       \
			(arr) = dm_xalloc((arr), (cap) * sizeof(*(arr)));       \
		}                                                              \
	} while (0)

/* qsort, and memcpy, that take n == 0 with a NULL pointer */
void dm_sort_n(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *));
void dm_copy_n(void *dst, const void *src, size_t bytes);

/* (key, item) pairs, sorted stably by key (dm_radix_kv) */
struct kv {
	uint64_t k;
	uint32_t i;
};

void dm_radix_kv(struct kv *a, size_t n);
static inline uint64_t dm_ikey(int64_t x) { return (uint64_t)x ^ (1ull << 63); } /* order-preserving */
/* keys for the doubles at v, v + stride, ... (items 0 .. n-1) */
void dm_time_keys(struct kv *a, size_t n, const double *v, size_t stride);
/* out[k] = in[perm[k].i], items of size sz */
void dm_apply_perm(void *items, size_t sz, const struct kv *perm, size_t n);

/* Statistics beyond common/stats.h (device_events.c) */
void dm_sort_doubles(double *v, size_t n);                     /* ascending, no NaN; a radix sort */
double dm_std_of(const double *v, size_t n);                    /* ddof 1; NaN below 2 */
int dm_cmp_i32(const void *a, const void *b);
long dm_find_i32(const int32_t *v, size_t n, int32_t x);        /* in sorted v; -1 */

/* ------------------------------------------ names and cats (device_events.c) */

enum {
	NF_DONE = 1 << 0,
	NF_HAS_PS = 1 << 1,    /* contains "ProfilerStep" */
	NF_STEP = 1 << 2,      /* matches ProfilerStep\s*#\s*(\d+) at the start */
	NF_STARTS_PS = 1 << 3, /* starts with "ProfilerStep" */
	NF_SYNC = 1 << 4,      /* "Event Sync", "Context Sync": device events */
	NF_LAUNCH = 1 << 5,    /* launch stats: kernel launches */
	NF_MEMLAUNCH = 1 << 6, /* launch stats: cudaMemcpyAsync, cudaMemsetAsync */
	NF_QUEUE = 1 << 7,     /* queue length: runtime calls that enqueue work */
	NF_KCAT = 1 << 8,      /* as a cat: the idle breakdown's kernel categories */
	NF_TRACE = 1 << 9,     /* as a cat: "Trace" */
	NF_SEEN_PS = 1 << 10,  /* a symbol (name or cat) with "ProfilerStep" was read */
	NF_KT_SHIFT = 12,      /* bits 12-13: kernel type */
};
enum { KT_COMM, KT_MEM, KT_COMP, KT_OTHER };

/* Strings and what the analyses need to know of them, per string id. */
struct names {
	struct fl_strtab *strings;
	uint16_t *nf;       /* NF_* (computed on first use) */
	long long *stepnum; /* the N of ProfilerStep#N, -1 */
	size_t nnf;
};

/* NF_* of a string id, computed on first use */
uint16_t dm_name_flags(struct names *m, uint32_t id);

/* ------------------------------------------------------------------ data */

enum { EF_GPU = 1 << 0, EF_KCAT = 1 << 1 };

/* An event HTA keeps and the device analyses read: device rows, events with a
 * correlation, steps (and the first item of traceEvents, see idle). */
struct dm_ev {
	double ts, dur;  /* µs, rounded as HTA rounds */
	int64_t corr;    /* args.correlation, -1 */
	uint64_t index;  /* position in traceEvents */
	uint32_t name;   /* string id */
	int32_t stream;  /* args.stream as HTA reads it, -1 */
	int32_t iter;    /* HTA's iteration: a step number, -1, or ITER_NAN */
	int32_t link;    /* the event HTA links by correlation (position), -1 */
	int32_t grp;     /* its correlation group (struct dm_rank.gbeg), -1 */
	uint16_t flags;  /* EF_* */
	uint16_t mult;   /* times in the view (HTA's merge repeats rows), 0: filtered out */
};

/* Any other host event: only counted, unless kept for the straggler rule and diffs. */
struct dm_host {
	double ts, dur;
	uint32_t name;
};

struct dm_step {
	double ts, dur;
	long long num;
	size_t pos; /* file order */
};

struct dm_rank {
	char *path;
	size_t file;     /* its position among the files given */
	long long rank;
	struct fl_trace_info info;
	struct dm_ev *ev;
	size_t n, cap;
	struct dm_host *host;
	size_t nh, caph;
	uint64_t n_plain, n_no_ts;
	int rounded;
	struct dm_step *steps;
	size_t nsteps;
	/* iteration of a timestamp: the last step (file order) holding it */
	double *bound;   /* sorted step boundaries */
	int32_t *seg;    /* step index for [bound[i], bound[i+1]), -1 none */
	size_t nbound;
	/* events with a correlation, by correlation (file order within):
	 * group g is gpos[gbeg[g] .. gbeg[g + 1]) */
	uint32_t *gpos, *gbeg;
	size_t ngroups;
	/* the events HTA analyses after its filter: positions in ev (repeated
	 * when several kept host events share a correlation) */
	int32_t *view;
	size_t nview;
	int filtered, cut_incl; /* host events kept: ts < cut (ts <= cut with cut_incl) */
	double cut;
	int32_t ev0;            /* position of traceEvents[0] in ev, -1 */
};

struct fl_dm_job {
	struct fl_dm_opts o;
	struct names nm;
	struct dm_rank *ranks;
	size_t nranks;
	size_t step_symbols;
	uint64_t json_bytes, events;
	char (*sha)[65];       /* per file, in the order given (opts.sha256) */
	size_t nfiles;
};

static inline int ktype(const struct fl_dm_job *j, uint32_t name) { return (j->nm.nf[name] >> NF_KT_SHIFT) & 3; }
static inline const char *str(const struct fl_dm_job *j, uint32_t id) { return fl_strtab_str(j->nm.strings, id); }

/* ------------------------------------------------- reading (device_load.c) */

/* A job with no rank yet; keep_host when the job will have nfiles >= 2. */
struct fl_dm_job *dm_job_new(const struct fl_dm_opts *o, size_t nfiles);
/* Read n files (their positions among the job's files in file[]) into new
 * ranks of j, up to opts.jobs at a time; st[i] and msg[i] say how file i went. */
void dm_read_files(struct fl_dm_job *j, const char *const *paths, const size_t *file, size_t n,
		   enum fl_status *st, char (*msg)[1024]);
/* j->ranks by rank, then file position */
void dm_sort_ranks(struct fl_dm_job *j);
/* the error of two files with one rank */
enum fl_status dm_same_rank(const char *a, const char *b, long long rank);

/* ---------------------------------------------- preparation (device_view.c) */

/* HTA's ns rounding of a rank; returns its earliest ts */
double dm_round_rank(struct dm_rank *r);
/* HTA's _align_all_ranks: t0 (the job's earliest ts) becomes time 0 */
void dm_align_rank(struct dm_rank *r, double t0);
/* links, steps, iterations and the view of a rank, after all are aligned */
enum fl_status dm_prepare_rank(struct fl_dm_job *j, struct dm_rank *r);
/* HTA's iteration of a host timestamp: a step number, -1 */
int32_t dm_iter_of_ts(const struct dm_rank *r, double ts);
/* whether the last-step filter keeps a host event starting at ts */
int dm_host_kept(const struct dm_rank *r, double ts);
/* the step numbers of the step rows in the views, sorted, unique (caller frees) */
size_t dm_analysed_steps(const struct fl_dm_job *j, int32_t **out);

/* A rank's device rows (stream != -1) of the view, sorted by ts (ties in view
 * order), computed once for all the analyses of the rank. */
struct actx {
	const struct fl_dm_job *j;
	const struct dm_rank *r;
	uint32_t *dev; /* view indices */
	size_t ndev;
};

void dm_actx_init(struct actx *c, const struct fl_dm_job *j, const struct dm_rank *r);
void dm_actx_release(struct actx *c);

static inline const struct dm_ev *dev_ev(const struct actx *c, size_t i)
{
	return &c->r->ev[c->r->view[c->dev[i]]];
}

struct ivl {
	double ts, end;
};

/* HTA's merge_kernel_intervals on the device rows of one kernel type (-1:
 * all). Returns the number of groups; *out (caller frees) holds them. */
size_t dm_merged(const struct actx *c, int kt, struct ivl **out);
/* HTA's end.sum() - ts.sum() of merged intervals */
double dm_ivl_sum(const struct ivl *v, size_t n);

struct tick {
	double time;
	int delta;
};

/* +val[t] at starts and -val[t] at ends of the intervals v[t] (of n[t]),
 * t < n_types, by time. Returns the count; *out (caller frees) holds them. */
size_t dm_ticks_of(struct tick **out, size_t n_types, struct ivl *const *v, const size_t *n, const int *val);

/* ------------------------------------------------------------------ JSON */

static inline cJSON *num_or_null(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }
static inline void add_num(cJSON *o, const char *k, double v) { cJSON_AddItemToObject(o, k, num_or_null(v)); }
static inline double pct(double x, double total) { return total != 0 ? 100.0 * x / total : NAN; }

/* -------------------------------------------------------- the analyses */

/* One device analysis, as the driver (device_metrics.c) runs it: for each
 * rank, a zeroed state of `size` bytes is filled by rank(), written by json()
 * under `key` of ranks.RANK, added by pool() into the job's state (zeroed
 * too) and released. The job's figures are json() of the pooled state;
 * with one rank, or when rank() refused some rank, they are a copy of the
 * last rank's figures. An analysis of all ranks at once (top_only) pools
 * what it needs of each rank and appears at the top level only, always as
 * json() of the pooled state. Hooks not used are NULL.
 *
 * A job split between processes (device_split.c) runs rank() where the
 * rank's file was read and the rest on process 0: save() writes a rank's
 * state (as rank() left it) to bytes, load() reads it back there, string ids
 * translated through map (the sender's ids to the receiver's). Without
 * save/load the state is plain data and travels as its bytes. */
struct dm_rd; /* device_wire.c */
struct dm_analysis {
	const char *key; /* its key in the JSON */
	size_t size;     /* bytes of its state */
	int top_only;    /* the job's figures only, no ranks.RANK entry */
	/* called once per rank: 0, or -1 when it cannot be computed (the state
	 * then holds nothing and json() says why) */
	int (*rank)(const struct actx *c, void *state);
	/* called to add one rank's state into the job's, in rank order */
	void (*pool)(void *job_state, const void *rank_state);
	/* called to write a state (a rank's or the pooled one); may sort it */
	cJSON *(*json)(const struct fl_dm_job *j, void *state);
	/* called to free what a state holds (not the state itself) */
	void (*release)(void *state);
	/* a rank's state to bytes, and back (0, or -1 when the bytes are bad) */
	void (*save)(const void *state, struct strbuf *out);
	int (*load)(struct dm_rd *in, const uint32_t *map, uint32_t nmap, void *state);
};

extern const struct dm_analysis dm_temporal, dm_overlap, dm_idle, dm_kernels, dm_launch, dm_queue, dm_straggler;

/* The table the driver runs, in JSON order, NULL-terminated
 * (device_metrics.c). */
extern const struct dm_analysis *const dm_analyses[];
#define DM_MAX_ANALYSES 16

/* ------------------------------------------- ranks and the job (device_metrics.c) */

/* What the job's figures need of one rank: its states, as rank() left them. */
struct dm_result {
	long long rank;
	size_t file;             /* its position among the files given */
	char *path;
	uint64_t events;         /* traceEvents read */
	uint64_t nview;          /* events analysed */
	int rounded;             /* HTA's ns rounding applied */
	int32_t *recorded;       /* step numbers of its steps (file order) */
	size_t nrec;
	int32_t *analysed;       /* step numbers of the step rows in its view */
	size_t nana;
	void *state[DM_MAX_ANALYSES];
	int refused[DM_MAX_ANALYSES];
};

/* Run the analyses on one prepared rank. */
void dm_result_of(const struct fl_dm_job *j, const struct dm_rank *r, size_t file, struct dm_result *out);
void dm_result_release(struct dm_result *res);

/* The job's figures, from its ranks' results added in rank order. j gives
 * the options and the strings the states name (and nothing of its ranks). */
struct dm_pool;
struct dm_pool *dm_pool_begin(const struct fl_dm_job *j);
/* write res under ranks.RANK and pool it; releases res */
void dm_pool_add(struct dm_pool *p, struct dm_result *res);
/* the document (fl_device_metrics_json's); frees p */
cJSON *dm_pool_end(struct dm_pool *p, size_t step_symbols);

/* ------------------------------------------------------ bytes (device_wire.c) */

struct dm_rd {
	const char *p, *end;
	int bad; /* a read went past the end */
};

void dm_put(struct strbuf *out, const void *p, size_t n);
void dm_put_u64(struct strbuf *out, uint64_t v);
void dm_put_str(struct strbuf *out, const char *s, size_t n);
int dm_get(struct dm_rd *in, void *p, size_t n);        /* 0, or -1 (in->bad) */
uint64_t dm_get_u64(struct dm_rd *in);
const char *dm_get_str(struct dm_rd *in, size_t *n);    /* points into the bytes */
/* n items of sz bytes into a new array (*out, caller frees); -1 when short */
int dm_get_array(struct dm_rd *in, void **out, size_t n, size_t sz);
/* a string id of the sender, translated; -1 when out of range */
int dm_map_id(const uint32_t *map, uint32_t nmap, uint32_t *id);

#endif
