/* kineto_writer.h — write the tracer's buffers as a Kineto-layout Chrome trace.
 *
 * Layout (docs/trace-format.md): schemaVersion, deviceProperties, trace_id, host_name,
 * distributedInfo ("rank": K with the space), displayTimeUnit, baseTimeNanoseconds,
 * then traceEvents, then traceName. ts/dur are µs with exactly three decimals,
 * relative to baseTimeNanoseconds. Every row is named with M events. The file is
 * gzipped when its name ends in ".gz" and is written whole or not at all.
 */
#ifndef FL_KINETO_WRITER_H
#define FL_KINETO_WRITER_H

#include <stdint.h>

#include "common/status.h"

struct fl_trace_meta {
	const char *trace_name;        /* traceName (NULL: "trace"); a neutral id, not the file name */
	const char *process_name;      /* name of the host process row */
	const char *device_properties; /* JSON array text; NULL → [] */
	int rank, world_size;
	const char *dist_backend;      /* distributedInfo.backend */
	uint64_t window_t0, window_t1; /* clock ticks bounding the recorded window */
	uint64_t seed;                 /* feeds trace_id */
};

struct fl_trace_stats {
	uint64_t events;      /* X events written (ops, annotations, device work) */
	uint64_t dropped;     /* events the tracer could not record */
};

enum fl_status fl_kineto_write(const char *path, const struct fl_trace_meta *m,
			       struct fl_trace_stats *stats);

#endif
