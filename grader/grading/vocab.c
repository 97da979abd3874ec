#include "grader/grading/vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grader/grading/units.h"

/* The families and fixes of docs/catalog.md, with the words learners use for them.
 * An alias should name the term and nothing else: a word shared by two terms of
 * one vocabulary makes answers that use it ambiguous. */

#define A(...) ((const char *const[]){__VA_ARGS__, NULL})

static const struct fl_term family_terms[] = {
	{"healthy", A("no fault", "nothing wrong", "no problem", "fine", "ok", "no issue", "no issues", "all good",
		      "no bottleneck", "balanced steps", "nothing is wrong", "baseline is healthy")},
	{"input_starvation", A("starvation", "starved", "starving", "input starved", "input bound", "data starvation",
			       "dataloader starvation", "data loader starvation", "loader starvation",
			       "data loading bottleneck", "dataloader bottleneck", "input pipeline bottleneck",
			       "slow data loading", "slow dataloader", "slow data loader", "loader bound",
			       "data bound", "io bound", "i o bound", "input pipeline", "slow input pipeline",
			       "data loading", "slow loading", "waiting for data", "waiting on data", "gpu waits for data",
			       "loader stall", "dataloader stall", "data stall", "input stall", "input bottleneck",
			       "data bottleneck", "cpu preprocessing bottleneck", "preprocessing bottleneck")},
	{"op_storm", A("op storm", "operator storm", "small op storm", "eager op storm", "small ops", "tiny ops",
		       "many small ops", "too many ops", "too many small ops", "dispatch overhead", "framework overhead", "operator overhead",
		       "per op overhead", "eager overhead", "eager mode overhead", "too many tiny kernels",
		       "too many small kernels", "many tiny kernels", "many small kernels", "too many kernels",
		       "kernel storm", "small op overhead", "small ops overhead", "tiny op overhead", "eager mode",
		       "eager execution", "python overhead", "op count explosion", "exploded op count",
		       "too many operators", "unfused ops", "unfused elementwise ops")},
	{"periodic_host_stall", A("periodic host stall", "periodic stall", "host stall", "periodic logging",
				  "synchronous logging", "sync logging", "blocking logging", "logging stall",
				  "logging", "lock", "lock contention", "telemetry", "telemetry scrape",
				  "metrics stall", "periodic metrics", "periodic host stalls", "host side stall",
				  "blocking metrics", "metrics logging", "periodic logging stall", "nvml query",
				  "blocking telemetry", "lock held", "periodic lock")},
	{"gc_pause", A("gc", "gc pause", "gc pauses", "gc stall", "garbage collection", "garbage collector",
		       "garbage collection pause", "garbage collector pause", "collector pause",
		       "allocation churn", "gc from allocation churn", "gc pausing", "gc collections",
		       "gen2 collection", "python gc", "garbage collection pauses", "collector pauses",
		       "stop the world pause")},
	{"straggler", A("straggling rank", "slow rank", "slow worker", "load imbalance", "imbalance",
			"throttled rank", "stragglers", "one slow rank", "slow gpu", "slow device", "slow node",
			"imbalanced ranks", "rank imbalance", "work imbalance", "uneven ranks")},
	{"sync_stall", A("sync stall", "synchronization stall", "host sync", "device sync", "forced sync",
			 "item sync", "host read", "cuda sync", "synchronize stall", "item", "item call", "item calls",
			 "tensor item", "cuda synchronize", "device synchronize", "host device sync",
			 "implicit sync", "per step sync", "sync every step", "blocking host read")},
	{"unoverlapped_comm", A("unoverlapped communication", "exposed communication", "exposed comm",
				"no overlap", "not overlapped", "communication not overlapped", "comm not overlapped",
				"unoverlapped comm", "allreduce not overlapped", "all reduce not overlapped",
				"exposed all reduce", "exposed allreduce", "serialized communication",
				"communication after backward", "no compute communication overlap")},
	{"comm_bound", A("communication bound", "network bound", "bandwidth bound", "comm bound",
	                 "interconnect bound", "link bound", "slow link", "slow interconnect", "slow network",
	                 "network bottleneck", "communication bottleneck", "bandwidth limited",
	                 "all reduce bound", "allreduce bound", "limited by the interconnect",
	                 "comm long on every rank")},
	{"alloc_stall", A("allocation stall", "allocator stall", "malloc stall", "cudamalloc",
	                  "cudamalloc stall", "cudamalloc cudafree", "cudafree", "allocator stalls",
	                  "allocation stalls", "memory allocation stall", "device allocation stall",
	                  "uncached allocations", "alloc free churn", "malloc free churn", "allocator churn",
	                  "memory churn")},
	{"blocking_h2d", A("blocking copy", "blocking host to device copy", "synchronous copy", "sync copy",
	                   "pageable copy", "blocking h2d copy", "blocking h2d", "blocking memcpy",
	                   "synchronous memcpy", "sync memcpy", "cudamemcpy", "pageable memcpy",
	                   "synchronous h2d copy", "blocking host to device transfer", "pageable memory copy",
	                   "sync h2d copy")},
	{"recompile", A("recompilation", "recompiles", "recompiling", "jit recompile", "graph recompilation",
	                "shape recompilation", "recompile on new shapes", "new input shapes",
	                "new input shape", "dynamic shapes", "shape change", "changing shapes", "autotuning",
	                "autotune", "jit compilation", "compilation stall", "compile stall",
	                "recompile stall")},
	{"checkpoint_stall", A("checkpoint", "checkpointing", "checkpoint stall", "checkpoint write",
	                       "checkpoint stalls", "checkpoint saves", "saving checkpoints", "checkpoint io",
	                       "synchronous checkpoint", "synchronous checkpointing", "blocking checkpoint",
	                       "checkpoint save", "model saving")},
	{"dvfs_throttle", A("dvfs", "thermal throttling", "power throttling", "clock throttling", "throttling",
			    "clock drop", "clocks dropping", "gpu clock drop", "frequency scaling", "frequency drop",
			    "downclocking", "thermal throttle", "power capping", "clock slowdown")},
	{"optimizer_dominance", A("optimizer bound", "optimizer overhead", "per parameter updates",
				  "per param optimizer", "unfused optimizer", "optimizer storm", "slow optimizer",
				  "for loop optimizer", "per tensor updates", "many small parameter updates",
				  "optimizer step dominates", "optimizer dominance",
				  "optimizer dominated")},
	{"dtype_casts", A("casts", "dtype cast", "type casts", "dtype conversion", "dtype conversions",
	                  "dtype casts around matmuls", "casts around every matmul", "fp16 casts",
	                  "half casts", "precision casts", "cast ops", "to copy ops", "extra casts",
	                  "mixed precision casts", "float16 casts", "redundant casts")},
	{"pipeline_bubble", A("bubble", "pipeline bubbles", "bubbles", "pipeline bubble overhead",
	                      "pipeline idle", "idle pipeline stages", "pipeline warmup and drain",
	                      "fill and drain", "pipeline fill and drain", "gpipe bubble")},
	{"expert_imbalance", A("expert load imbalance", "moe imbalance", "moe load imbalance",
	                       "unbalanced experts", "imbalanced experts", "hot expert", "skewed routing",
	                       "token imbalance", "routing imbalance", "expert skew")},
	/* "launch overhead" alone reads as nothing: both launch_bound and op_storm
	 * pay a cost per launch; the op count decides (docs/grading.md) */
	{"launch_bound", A("launch bound", "launch latency bound", "kernel launch bound", "cpu launch bound",
	                   "host launch bound", "launch bottleneck", "kernels shorter than their launch",
	                   "kernels shorter than their launches", "kernels shorter than the launch",
	                   "kernels shorter than launches", "launch bound inference", "host bound launches",
	                   "cpu bound launches", "host dispatch bound")},
	{NULL, NULL},
};

static const struct fl_term fix_terms[] = {
	{"none", A("nothing", "no fix", "no change", "nothing to fix")},
	{"loader_parallelism", A("more workers", "dataloader workers", "data loader workers", "loader workers",
				 "num workers", "workers", "worker processes", "parallel data loading",
				 "parallelize data loading", "parallelise data loading", "async data loading",
				 "prefetch", "prefetching", "prefetch factor", "pre decode", "predecode", "pinned memory",
				 "pin memory", "cache the data", "cached data", "synthetic data", "increase num workers",
				 "more dataloader workers", "more loader workers", "parallel loading", "faster dataloader",
				 "faster data loading", "persistent workers", "dali")},
	{"fusion", A("fuse", "fuse ops", "fused kernels", "kernel fusion", "op fusion", "operator fusion",
		     "torch compile", "compile", "compile the model", "bigger ops",
		     "larger ops", "jit", "fuse kernels", "fuse the ops", "fuse elementwise ops", "fused ops",
		     "torchscript", "xla", "fewer ops", "fewer bigger ops", "vectorize", "batch the ops")},
	{"async_offload", A("async logging", "asynchronous logging", "log asynchronously", "log less often",
			    "log every n steps", "off thread logging", "background thread", "background logging",
			    "non blocking telemetry", "offload", "async telemetry", "log every few steps",
			    "log less frequently", "logging thread", "move logging off the critical path",
			    "asynchronous telemetry", "non blocking logging")},
	{"gc_control", A("disable gc", "gc disable", "gc freeze", "freeze gc", "manual gc",
			 "collect at step boundary", "collect at the step boundary", "tune gc", "gc thresholds",
			 "gc threshold", "reduce allocation churn", "cut churn", "reduce churn", "cut allocation churn",
			 "object pooling", "reuse buffers", "gc collect at step boundary", "gc freeze",
			 "disable automatic gc", "disable automatic collection", "fewer allocations")},
	{"rebalance", A("balance load", "load balancing", "balance data", "balance work", "rebalance work",
			"rebalance data", "fix the slow rank", "replace the slow gpu", "even out the work",
			"balance the ranks", "find the slow device")},
	{"defer_host_reads", A("avoid item", "remove item", "keep metrics on device", "defer item",
			       "read every n steps", "fewer syncs", "non blocking reads", "drop item", "no item",
			       "stop calling item", "avoid host reads", "avoid sync", "avoid syncs", "remove the sync",
			       "accumulate on device", "read metrics less often")},
	{"overlap_comm", A("overlap communication", "bucketing", "ddp buckets", "comm hooks",
			   "overlap the all reduce", "overlap allreduce", "overlap comm", "overlap communication with compute",
			   "gradient bucketing", "bucket gradients", "ddp bucketing", "backward prefetch",
			   "overlap all reduce with backward")},
	{"change_ratio", A("bigger batch", "larger batch", "fewer bytes", "better topology",
	                   "larger per device batch", "bigger per device batch", "gradient compression",
	                   "compress gradients", "faster interconnect", "faster link", "faster network",
	                   "more compute per byte", "gradient accumulation", "accumulate gradients")},
	{"preallocate", A("preallocation", "caching allocator", "memory pool", "preallocate buffers",
	                  "preallocate the workspace", "reuse the workspace", "allocate once",
	                  "use the caching allocator", "enable the caching allocator", "pool allocations",
	                  "static buffers")},
	{"pinned_async_copy", A("pinned async copy", "async h2d copy", "non blocking copy", "async copy",
	                        "pinned memory async copy", "pin memory and non blocking",
	                        "non blocking true", "cudamemcpyasync", "async memcpy", "pinned host memory",
	                        "page locked memory", "pinned async", "non blocking h2d copy")},
	{"static_shapes", A("pad shapes", "bucket shapes", "shape bucketing", "padding", "static shapes",
	                    "fixed shapes", "pad to a fixed shape", "pad inputs", "pad the batch",
	                    "mark dynamic", "dynamic true", "fixed input shapes", "drop last",
	                    "warm up all shapes")},
	{"async_checkpoint", A("asynchronous checkpointing", "async checkpointing", "async checkpoint",
	                       "background checkpoint", "background checkpointing",
	                       "save checkpoints in the background", "checkpoint in the background",
	                       "checkpoint asynchronously", "non blocking checkpoint",
	                       "checkpoint less often", "checkpoint less frequently", "fewer checkpoints",
	                       "asynchronous checkpoint", "save in background", "save in the background",
	                       "background save")},
	{"power_thermal", A("cooling", "power limit", "thermal", "improve cooling", "fix cooling",
	                    "check cooling", "raise the power limit", "raise power limit", "lock clocks",
	                    "set application clocks", "power and cooling")},
	{"fused_optimizer", A("foreach", "fused adam", "multi tensor apply", "foreach optimizer",
	                      "fused optimizer", "fused sgd", "foreach sgd", "foreach true", "fused true",
	                      "multi tensor", "fuse the optimizer", "flatten parameters",
	                      "apex fused optimizer")},
	{"autocast_scope", A("autocast", "fix autocast", "avoid casts", "widen the autocast region",
	                     "one autocast region", "autocast the whole forward", "keep one dtype",
	                     "cast once", "cast the weights once", "remove the casts", "use autocast",
	                     "consistent dtypes")},
	{"more_microbatches", A("more micro batches", "increase microbatches", "more microbatch",
	                        "increase micro batches", "raise the number of microbatches",
	                        "smaller microbatches", "interleaved schedule", "1f1b",
	                        "one forward one backward")},
	{"load_balance", A("balance experts", "balance the experts", "load balancing loss", "auxiliary loss",
	                   "aux loss", "capacity factor", "expert capacity", "balance the routing",
	                   "router balancing", "token dropping")},
	{"cuda_graphs", A("cuda graph", "cudagraphs", "cuda graph capture", "graph capture",
	                  "capture a cuda graph", "replay a cuda graph", "torch cuda graphs",
	                  "cuda graph replay", "graph replay", "batch the launches", "fewer launches")},
	{NULL, NULL},
};

static const struct fl_term yesno_terms[] = {
	{"yes", A("y", "true", "yep", "yeah")},
	{"no", A("n", "false", "nope", "none", "no gaps", "no idle gaps")},
	{NULL, NULL},
};

static const struct fl_vocabulary families = {"families", "catalog family", family_terms};
static const struct fl_vocabulary fixes = {"fixes", "catalog fix", fix_terms};
static const struct fl_vocabulary yesno = {"yesno", "yes or no", yesno_terms};

const struct fl_vocabulary *const fl_vocabularies[] = {&families, &fixes, &yesno, NULL};

const struct fl_vocabulary *fl_vocabulary_find(const char *name)
{
	for (size_t i = 0; fl_vocabularies[i]; i++)
		if (strcmp(fl_vocabularies[i]->name, name) == 0)
			return fl_vocabularies[i];
	return NULL;
}

/* ---- matcher ---- */

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		abort();
	return p;
}

long fl_matcher_find(const struct fl_matcher *m, const char *id)
{
	char *n = fl_norm(id, 1);
	long r = -1;
	for (size_t i = 0; i < m->n && r < 0; i++)
		if (strcmp(m->terms[i].phrases[0], n) == 0)
			r = (long)i;
	free(n);
	return r;
}

static struct fl_matcher_term *term_get(struct fl_matcher *m, const char *id)
{
	long i = fl_matcher_find(m, id);
	if (i >= 0)
		return &m->terms[i];
	m->terms = xrealloc(m->terms, (m->n + 1) * sizeof(*m->terms));
	struct fl_matcher_term *t = &m->terms[m->n++];
	memset(t, 0, sizeof(*t));
	t->id = strdup(id);
	t->phrases = xrealloc(NULL, sizeof(char *));
	t->phrases[t->n_phrases++] = fl_norm(id, 1);
	if (!t->id)
		abort();
	return t;
}

void fl_matcher_add(struct fl_matcher *m, const char *id, const char *alias)
{
	struct fl_matcher_term *t = term_get(m, id);
	if (!alias)
		return;
	char *n = fl_norm(alias, 1);
	if (!*n) {
		free(n);
		return;
	}
	t->phrases = xrealloc(t->phrases, (t->n_phrases + 1) * sizeof(char *));
	t->phrases[t->n_phrases++] = n;
}

/* Bounds on a rubric's regular expression before regcomp, whose time and
 * memory grow with the product of nested repetition counts (glibc expands
 * {m,n} into copies: ((a{1,100}){1,100}){1,100} takes seconds and GBs).
 * Allowed: at most FL_REGEX_MAX_LEN characters, counts up to
 * FL_REGEX_MAX_COUNT, and no repetition (*, +, {m,n}) of a group that already
 * holds a repetition ('?' may wrap anything). */
int fl_regex_check(const char *re, char *err, size_t errsz)
{
	size_t n = strlen(re);
	if (n > FL_REGEX_MAX_LEN) {
		snprintf(err, errsz, "too long (%zu characters, at most %d)", n, FL_REGEX_MAX_LEN);
		return -1;
	}
	int has[FL_REGEX_MAX_LEN + 1]; /* per open group: a repetition inside */
	int depth = 0, last_rep = 0;    /* the atom just read holds a repetition */
	has[0] = 0;
	for (size_t i = 0; i < n; i++) {
		char c = re[i];
		if (c == '\\') {
			if (i + 1 < n)
				i++;
			last_rep = 0;
		} else if (c == '[') {
			size_t j = i + 1;
			if (j < n && re[j] == '^')
				j++;
			if (j < n && re[j] == ']')
				j++;
			for (; j < n && re[j] != ']'; j++)
				if (re[j] == '[' && j + 1 < n && (re[j + 1] == ':' || re[j + 1] == '.' || re[j + 1] == '=')) {
					const char *e = strstr(re + j + 2, (char[]){re[j + 1], ']', 0});
					if (e)
						j = (size_t)(e - re) + 1;
				}
			i = j < n ? j : n;
			last_rep = 0;
		} else if (c == '(') {
			has[++depth] = 0;
			last_rep = 0;
		} else if (c == ')') {
			if (depth == 0) { /* it would close the anchoring group around the pattern */
				snprintf(err, errsz, "unbalanced ')' at character %zu", i + 1);
				return -1;
			}
			last_rep = has[depth--];
			has[depth] |= last_rep;
		} else if (c == '*' || c == '+' || c == '{' || c == '?') {
			if (c == '{') {
				char *end;
				unsigned long lo = strtoul(re + i + 1, &end, 10), hi = lo;
				if (*end == ',')
					hi = end[1] == '}' ? FL_REGEX_MAX_COUNT + 1 : strtoul(end + 1, &end, 10);
				if (lo > FL_REGEX_MAX_COUNT || hi > FL_REGEX_MAX_COUNT) {
					snprintf(err, errsz, "a repetition count above %d (or an open-ended {m,})", FL_REGEX_MAX_COUNT);
					return -1;
				}
				const char *close = strchr(re + i, '}');
				i = close ? (size_t)(close - re) : n;
			}
			if (c != '?' && last_rep) {
				snprintf(err, errsz, "nested repetition: %s on a group that holds a repetition (too costly to compile)",
					 c == '{' ? "{m,n}" : c == '*' ? "'*'" : "'+'");
				return -1;
			}
			has[depth] = 1;
			last_rep = 1;
		} else {
			last_rep = 0;
		}
	}
	if (depth) {
		snprintf(err, errsz, "unbalanced '(': %d group(s) not closed", depth);
		return -1;
	}
	return 0;
}

int fl_matcher_add_regex(struct fl_matcher *m, const char *id, const char *re, char *err, size_t errsz)
{
	if (fl_regex_check(re, err, errsz))
		return -1;
	size_t l = strlen(re) + 5;
	char *anchored = xrealloc(NULL, l);
	snprintf(anchored, l, "^(%s)$", re);
	regex_t rx;
	int rc = regcomp(&rx, anchored, REG_EXTENDED | REG_ICASE | REG_NOSUB);
	free(anchored);
	if (rc) {
		regerror(rc, &rx, err, errsz);
		return -1;
	}
	struct fl_matcher_term *t = term_get(m, id);
	t->res = xrealloc(t->res, (t->n_res + 1) * sizeof(regex_t));
	t->res[t->n_res++] = rx;
	return 0;
}

void fl_matcher_add_vocabulary(struct fl_matcher *m, const struct fl_vocabulary *v)
{
	for (const struct fl_term *t = v->terms; t->id; t++) {
		fl_matcher_add(m, t->id, NULL);
		for (const char *const *a = t->aliases; a && *a; a++)
			fl_matcher_add(m, t->id, *a);
	}
}

static char *trim_dup(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	char *r = xrealloc(NULL, n + 1);
	memcpy(r, s, n);
	r[n] = '\0';
	return r;
}

struct hit {
	size_t term;
	size_t start, len;
};

static void add_distinct(struct fl_match *r, size_t term)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->term[i] == term)
			return;
	if (r->n < FL_MATCH_MAX)
		r->term[r->n++] = term;
}

void fl_matcher_match(const struct fl_matcher *m, const char *text, struct fl_match *r)
{
	memset(r, 0, sizeof(*r));
	char *norm = fl_norm(text, 1);
	/* 1. exact */
	char *trimmed = trim_dup(text); /* regexes see the answer as written, trimmed */
	for (size_t i = 0; i < m->n; i++) {
		const struct fl_matcher_term *t = &m->terms[i];
		int hit = 0;
		for (size_t k = 0; k < t->n_phrases && !hit; k++)
			hit = strcmp(norm, t->phrases[k]) == 0;
		for (size_t k = 0; k < t->n_res && !hit; k++)
			hit = regexec(&t->res[k], trimmed, 0, NULL, 0) == 0;
		if (hit)
			add_distinct(r, i);
	}
	free(trimmed);
	if (r->n) {
		r->exact = r->n == 1;
		free(norm);
		return;
	}
	/* 2. phrases inside the answer */
	struct hit *hits = NULL;
	size_t n_hits = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct fl_matcher_term *t = &m->terms[i];
		for (size_t k = 0; k < t->n_phrases; k++) {
			size_t len = strlen(t->phrases[k]);
			for (long at = fl_find_phrase(norm, t->phrases[k], 0); at >= 0;
			     at = fl_find_phrase(norm, t->phrases[k], (size_t)at + 1)) {
				hits = xrealloc(hits, (n_hits + 1) * sizeof(*hits));
				hits[n_hits++] = (struct hit){i, (size_t)at, len};
			}
		}
	}
	/* order of appearance; drop hits inside a longer hit of another term */
	for (size_t a = 1; a < n_hits; a++)
		for (size_t b = a; b > 0 && hits[b - 1].start > hits[b].start; b--) {
			struct hit tmp = hits[b];
			hits[b] = hits[b - 1];
			hits[b - 1] = tmp;
		}
	for (size_t a = 0; a < n_hits; a++) {
		int inside = 0;
		for (size_t b = 0; b < n_hits && !inside; b++)
			inside = b != a && hits[b].term != hits[a].term && hits[b].len > hits[a].len &&
				 hits[b].start <= hits[a].start &&
				 hits[a].start + hits[a].len <= hits[b].start + hits[b].len;
		if (!inside)
			add_distinct(r, hits[a].term);
	}
	free(hits);
	free(norm);
}

void fl_matcher_release(struct fl_matcher *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct fl_matcher_term *t = &m->terms[i];
		for (size_t k = 0; k < t->n_phrases; k++)
			free(t->phrases[k]);
		for (size_t k = 0; k < t->n_res; k++)
			regfree(&t->res[k]);
		free(t->phrases);
		free(t->res);
		free(t->id);
	}
	free(m->terms);
	m->terms = NULL;
	m->n = 0;
}
