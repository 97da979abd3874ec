/* trace_events.h — the complete ("X") events of a trace, collected from the
 * streaming reader (trace_stream.h), for the host analyses and validate.
 *
 * There is one reader: this module is a consumer of its events. Per X event
 * it keeps 48 bytes (name, kind, ts, dur, pid, tid; names are interned once in
 * the string table), nothing of the document itself, so memory grows with the
 * number of X events only. The collector is an fl_tev_fn: a caller that reads
 * a file for other analyses too can hand each event to fl_trace_on_event as
 * well, and the file is read (and hashed) once.
 *
 * As read: the object form ({"traceEvents": [...]}, which must be there) and
 * the bare array form; numeric or string pid/tid (a string id hashes to a
 * negative number, FNV-1a); a missing or non-numeric dur reads 0, a missing
 * name or cat ""; an X event without a numeric ts is an error. Events are
 * sorted by (ts, -dur), file order among equals.
 *
 * Hostile values (docs/trace-format.md, "Bad input"): an X event whose ts or
 * dur is not finite, is negative, or too large (dur beyond 2^53 ns, ts beyond
 * 2^53 µs: see FL_TRACE_MAX_DUR_US) is skipped (no metric
 * ever sees a negative or NaN duration); names with invalid UTF-8 are kept
 * with U+FFFD in place of the bad bytes; names with control characters are
 * kept (printers escape them); a repeated key counts its last value. Each kind
 * is counted (fl_trace.bad, with the byte offset of the first) and
 * fl_trace_warn prints one line per kind. distributedInfo.rank outside
 * 0..2^31-1 or world_size outside 1..2^31-1 is an FL_EINPUT error.
 */
#ifndef FL_TRACE_EVENTS_H
#define FL_TRACE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "grader/trace/trace_stream.h"

enum fl_cat {
	FL_CAT_OTHER = 0,
	FL_CAT_CPU_OP,
	FL_CAT_USER_ANNOTATION,
	FL_CAT_CUDA_RUNTIME, /* cuda_runtime and cuda_driver */
	FL_CAT_KERNEL,
	FL_CAT_GPU_MEMCPY,
	FL_CAT_GPU_MEMSET,
	FL_CAT_GPU_USER_ANNOTATION,
	FL_CAT_CUDA_SYNC,
	FL_CAT_TRACE,
};

struct fl_xevent {
	const char *name;   /* in the trace's string table */
	double ts, dur;     /* µs */
	long long pid, tid; /* string ids hash to negative numbers */
	uint32_t kind;      /* enum fl_cat */
	uint32_t pos;       /* file order among the X events (ties of the sort) */
};

/* Kinds of bad values (fl_trace.bad). */
enum {
	FL_BAD_TS,      /* X event skipped: ts not finite, negative or > 2^53 µs */
	FL_BAD_DUR,     /* X event skipped: dur not finite, negative or > 2^53 ns */
	FL_BAD_UTF8,    /* name/cat with invalid UTF-8, read with U+FFFD */
	FL_BAD_CONTROL, /* name/cat with control characters */
	FL_BAD_DUP_KEY, /* an event key given twice */
	FL_BAD_ID_RANGE, /* pid/tid a number no integer holds: read as absent */
	FL_BAD_KINDS
};

struct fl_bad_count {
	uint64_t n;
	uint64_t first_at; /* byte offset of the first such event */
};

/* The largest dur accepted, in µs: 2^53 ns (104 days; beyond, a double no
 * longer holds whole nanoseconds). ts may be larger: PyTorch traces without
 * baseTimeNanoseconds stamp events in µs since the epoch (~1.7e15 µs, already
 * beyond 2^53 ns), so a ts is refused beyond 2^53 µs (285 years), where even
 * whole microseconds are lost. */
#define FL_TRACE_MAX_DUR_US 9007199254740.992
#define FL_TRACE_MAX_TS_US 9007199254740992.0

struct fl_trace {
	char *path;
	struct fl_strtab *strings;  /* names (owned unless given to fl_trace_begin) */
	struct fl_trace_info info;  /* what the reader saw (fl_trace_end) */
	int has_rank;               /* distributedInfo.rank */
	int rank, world_size;       /* world_size: 1 when absent, 0 in the array form */
	size_t n;
	struct fl_xevent *ev;       /* X events, sorted by (ts, -dur) */
	struct fl_bad_count bad[FL_BAD_KINDS];
	/* while collecting */
	size_t cap;
	uint8_t *cat_kind;          /* per string id: kind + 1, 0 not yet known */
	size_t n_cat_kind;
	int own_strings;
};

/* Read path (.json or .json.gz) into t. With sha256 set the file's hash is
 * computed on the same pass (t->info.sha256). Errors: as fl_trace_stream_file,
 * and FL_EINPUT for a document without traceEvents or an X event without ts. */
enum fl_status fl_trace_read(const char *path, struct fl_trace *t);
enum fl_status fl_trace_read_hashed(const char *path, struct fl_trace *t);

/* Collecting from a read someone else runs: fl_trace_begin (strings: the
 * read's table, or NULL to let fl_trace_read_* make one), then
 * fl_trace_on_event(t, ev) for every event, then fl_trace_end with the read's
 * info. On an error, fl_trace_release still frees everything. */
void fl_trace_begin(struct fl_trace *t, const char *path, struct fl_strtab *strings);
enum fl_status fl_trace_on_event(void *t, const struct fl_tev *ev);
enum fl_status fl_trace_end(struct fl_trace *t, const struct fl_trace_info *info);
void fl_trace_release(struct fl_trace *t);

/* Count the bad values of any event into t->bad (fl_trace_on_event does it for
 * every event it sees; exposed for readers that filter events themselves).
 * Returns 1 when an X event must be skipped (bad ts or dur). */
int fl_trace_note_bad(struct fl_trace *t, const struct fl_tev *ev);
/* One warning line per kind of bad value on f ("warning: 'PATH': ..."); the
 * number of lines written. */
int fl_trace_warn(const struct fl_trace *t, void *file);
/* A time is usable: finite, >= 0 and <= max_us (FL_TRACE_MAX_TS_US or _DUR_US). */
int fl_trace_time_ok(double us, double max_us);

/* The kind of a category string (common/categories.h). */
enum fl_cat fl_cat_of(const char *cat);

#endif
