/* trace_reader.h — read a Kineto/Chrome trace (.json or .json.gz) into X events.
 *
 * This reader is independent of capture/: it knows the file format only. It
 * holds the whole document (cJSON DOM), which is fine for the small traces the
 * generator writes; a streaming reader for GB-size traces is a separate piece.
 * Accepts the object form ({"traceEvents": [...]}) and the bare array form,
 * numeric or string pid/tid, missing dur (treated as 0) and unknown categories.
 */
#ifndef FL_TRACE_READER_H
#define FL_TRACE_READER_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/status.h"

enum fl_cat {
	FL_CAT_OTHER = 0,
	FL_CAT_CPU_OP,
	FL_CAT_USER_ANNOTATION,
	FL_CAT_CUDA_RUNTIME,
	FL_CAT_KERNEL,
	FL_CAT_GPU_MEMCPY,
	FL_CAT_GPU_MEMSET,
	FL_CAT_GPU_USER_ANNOTATION,
	FL_CAT_CUDA_SYNC,
	FL_CAT_TRACE,
};

struct fl_xevent {
	const char *name;   /* points into the document */
	const char *cat;
	enum fl_cat kind;
	double ts, dur;     /* µs */
	long long pid, tid; /* string ids hash to negative numbers */
};

struct fl_trace {
	char *path;
	cJSON *doc;
	int has_rank;
	int rank, world_size;
	size_t n;
	struct fl_xevent *ev; /* X events, sorted by (ts, -dur) */
};

enum fl_status fl_trace_read(const char *path, struct fl_trace *t);
void fl_trace_release(struct fl_trace *t);
enum fl_cat fl_cat_of(const char *cat);

#endif
