/* trace_stream.h — a streaming reader for Kineto/Chrome trace files of any size.
 *
 * Reads `.json` and `.json.gz` (gzip is recognised by its magic bytes, not by
 * the name; concatenated gzip members are read in turn) in bounded memory: the
 * file goes through a fixed set of buffers and a purpose-built JSON tokenizer
 * hands each event of `traceEvents` to a callback, then forgets it. What a
 * caller keeps is its own business; the reader itself holds the buffers (a few
 * MB, more only when one single event is larger, and never more than about
 * 40 MB: one event or top-level metadata value is at most 8 MiB of JSON, a
 * larger one is an FL_EINPUT error), the interned strings (each distinct
 * string once), and nothing else. Whitespace between events or keys is
 * consumed as it streams by, whatever its amount. gzip input is inflated on a second thread while this one
 * tokenizes.
 *
 * Accepts the object form ({"traceEvents": [...], ...}, metadata keys before or
 * after the events, in any order) and the bare array form ([...]); events in
 * any order; numeric or string pid/tid; float or integer ts/dur; missing or
 * null fields (reported as absent); unknown categories and keys; any nesting
 * in args; NaN/Infinity/-Infinity (as Python's json module accepts them).
 * Strings are decoded fully (all escapes, \u with surrogate pairs; a lone
 * surrogate or invalid UTF-8 becomes U+FFFD in the strings handed out).
 *
 * Everything else is checked as JSON: a truncated or corrupt file is an
 * FL_EINPUT error naming the byte offset (of the file, or of the decompressed
 * stream for gzip input, and the message says which) and what was expected.
 * A duplicate "traceEvents" key is an error (a DOM reader keeps only the last).
 *
 * Metadata: distributedInfo.{rank, world_size} are read as JSON values. The
 * rank HTA uses is found the way HTA finds it: the first text in the file
 * matching the regular expression `"rank":\s+(\d+)` within one line (so
 * `"rank":3`, without the space, is no rank for HTA) — reported separately.
 */
#ifndef FL_TRACE_STREAM_H
#define FL_TRACE_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

/* Interned strings: each distinct string gets a small id; id 0 is "" (also
 * used for "absent"). Pointers returned stay valid until fl_strtab_free. One
 * table can be shared by several reads (ids are then comparable across
 * traces, like HTA's symbol table). Not thread-safe. */
struct fl_strtab;
struct fl_strtab *fl_strtab_new(void);
void fl_strtab_free(struct fl_strtab *t);
uint32_t fl_strtab_intern(struct fl_strtab *t, const char *s, size_t n);
/* Lookup only: UINT32_MAX when s was never interned. */
uint32_t fl_strtab_find(const struct fl_strtab *t, const char *s, size_t n);
const char *fl_strtab_str(const struct fl_strtab *t, uint32_t id);
size_t fl_strtab_len(const struct fl_strtab *t, uint32_t id);
uint32_t fl_strtab_count(const struct fl_strtab *t);

/* Which fields an event had (fl_tev.has). */
enum {
	FL_TEV_PH = 1u << 0,
	FL_TEV_NAME = 1u << 1,    /* a string */
	FL_TEV_CAT = 1u << 2,     /* a string */
	FL_TEV_TS = 1u << 3,      /* a number */
	FL_TEV_DUR = 1u << 4,     /* a number */
	FL_TEV_PID = 1u << 5,
	FL_TEV_TID = 1u << 6,
	FL_TEV_PID_STR = 1u << 7, /* pid was a string: pid holds its string id */
	FL_TEV_TID_STR = 1u << 8,
	FL_TEV_CORRELATION = 1u << 9,
	FL_TEV_EXTERNAL_ID = 1u << 10,
	FL_TEV_STREAM = 1u << 11,
	FL_TEV_DEVICE = 1u << 12,
	FL_TEV_BYTES = 1u << 13,
	FL_TEV_TS_FLOAT = 1u << 14, /* ts was written as a float (fraction, exponent, NaN/Infinity) */
	FL_TEV_ARGS = 1u << 15,     /* args was an object */
};

/* Which keys an event had, whatever their values (fl_tev.keys). */
enum {
	FL_TEVK_PH = 1u << 1,
	FL_TEVK_CAT = 1u << 2,
	FL_TEVK_NAME = 1u << 3,
	FL_TEVK_PID = 1u << 4,
	FL_TEVK_TID = 1u << 5,
	FL_TEVK_TS = 1u << 6,
	FL_TEVK_DUR = 1u << 7,
	FL_TEVK_ARGS = 1u << 8,
};

/* What was wrong with an event that still read (fl_tev.bad), for validate
 * and the warnings of the analyses. */
enum {
	FL_TEVB_DUP_KEY = 1u << 0, /* one of ph, cat, name, pid, tid, ts, dur, args given twice (the last counts) */
	FL_TEVB_UTF8 = 1u << 1,    /* name or cat was not valid UTF-8 (U+FFFD in its place) */
	FL_TEVB_CONTROL = 1u << 2, /* name or cat holds control characters: C0 but tab and newline, DEL, C1 */
	FL_TEVB_ID_RANGE = 1u << 3, /* pid or tid a number no integer holds (NaN, Infinity, beyond ±9.2e18): absent */
};

/* Metadata keys of the top-level object (fl_trace_info.meta_*). */
enum {
	FL_META_SCHEMA_VERSION = 1u << 0,
	FL_META_DEVICE_PROPERTIES = 1u << 1,
	FL_META_DISTRIBUTED_INFO = 1u << 2,
	FL_META_DISPLAY_TIME_UNIT = 1u << 3,
	FL_META_BASE_TIME = 1u << 4,
};

/* One event as read. Numbers from args are integers (a fractional value is
 * truncated toward zero; a non-numeric value counts as absent). `stream`
 * follows HTA's reading: a number or a string holding an integer ("7"), else
 * absent. Absent integers read -1, absent ts/dur read 0. */
struct fl_tev {
	uint64_t index;     /* position in traceEvents, counting every item */
	uint64_t at;        /* byte offset of its '{' in the JSON text (decompressed, for gzip) */
	uint32_t bad;       /* FL_TEVB_* */
	uint32_t dup_keys;  /* FL_TEVK_* given more than once */
	uint32_t has;       /* FL_TEV_* */
	uint32_t keys;      /* FL_TEVK_*: keys present, even when null or of another type */
	char ph;            /* first character of "ph", 0 when absent */
	uint32_t ph_str;    /* all of "ph" (string id), 0 when absent */
	uint32_t name, cat; /* string ids, 0 when absent */
	double ts, dur;     /* µs, as written */
	int64_t pid, tid;   /* numbers, or string ids (FL_TEV_PID_STR / TID_STR) */
	int64_t correlation, external_id, stream, device, bytes; /* args */
	int64_t in_rows;    /* args "Input Dims": the first size of the first input (an op's rows), -1 when absent */
};

/* Called for each item of traceEvents, in file order. A non-zero status stops
 * the read and is returned (with the callback's message). */
typedef enum fl_status (*fl_tev_fn)(void *arg, const struct fl_tev *ev);

struct fl_trace_info {
	int gzip;             /* the input was gzip */
	int array_form;       /* a bare [...] of events */
	int has_events;       /* a traceEvents array was read (always, in the array form) */
	uint64_t n_events;    /* items of traceEvents */
	uint64_t bytes_in;    /* bytes read from the file */
	uint64_t bytes_json;  /* bytes of JSON text (decompressed) */
	/* HTA's rank: first `"rank":\s+\d+` in the text (see above) */
	int has_hta_rank;
	long long hta_rank;
	/* distributedInfo (the last one when repeated) */
	int has_dist_rank, has_world_size;
	long long dist_rank, world_size;
	int has_base_time;
	double base_time_ns;  /* baseTimeNanoseconds */
	/* deviceProperties[0].interconnect."bandwidth (Gbit/s)" (faultline's
	 * emulated link; the last deviceProperties when repeated) */
	int has_link_gbps;
	double link_gbps;
	/* How ts was written across all events (HTA rounds ts and ts+dur to whole
	 * µs when pandas reads the ts column as floats: some ts has a fraction or
	 * some event has no ts). */
	uint64_t n_ts_float, n_ts_missing, n_ts_other;
	/* The layout, for validate: metadata keys seen, those after traceEvents,
	 * whether schemaVersion was a number; byte offsets (in the JSON text) of
	 * the first key written exactly as `"rank": ` (one space: HTA's regex
	 * needs it) and of the traceEvents key, -1 when absent. */
	uint32_t meta_seen, meta_after_events, meta_dup; /* meta_dup: given more than once (the last counts) */
	uint32_t meta_after_order[8]; /* the FL_META_* after traceEvents, in file order (the first 8) */
	int n_meta_after;
	int schema_version_number;
	long long rank_text_at, events_at;
	/* SHA-256 of the file's bytes as read (fl_trace_stream_opts.sha256) */
	int has_sha256;
	char sha256[65];
};

struct fl_trace_stream_opts {
	struct fl_strtab *strings; /* required: names, cats, string pids intern here */
	fl_tev_fn on_event;        /* may be NULL (validate and count only) */
	void *arg;
	int no_thread;             /* 1: inflate on the calling thread (for tests) */
	size_t chunk;              /* bytes per read/inflate chunk; 0: default (256 KiB) */
	int sha256;                /* 1: hash the raw bytes on the way (info.sha256), so that a
	                            * file checked against a recorded hash is read once */
};

/* Read a trace file. `info` may be NULL. Errors: FL_EINPUT (cannot open,
 * truncated, corrupt; message names the file and the byte offset),
 * FL_ERUNTIME (out of memory, read error), or the callback's status. */
enum fl_status fl_trace_stream_file(const char *path, const struct fl_trace_stream_opts *o,
				    struct fl_trace_info *info);
/* The same for bytes in memory (gzip or not); `what` names them in messages. */
enum fl_status fl_trace_stream_mem(const char *what, const void *buf, size_t len,
				   const struct fl_trace_stream_opts *o, struct fl_trace_info *info);

#endif
