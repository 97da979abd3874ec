/* fuzz_trace_stream.c — the streaming trace reader (grader/trace/trace_stream.c)
 * on plain and gzip input, with the X-event collector of the host analyses
 * (trace_events.c) and the host metrics on what it kept.
 *
 * Each input is read twice: as it is (gzip too, when it starts with the
 * magic) with the inflating thread in 4 KiB chunks, then gzip-compressed and inflated inline
 * in 64-byte chunks, so that the JSON tokenizer behind the inflater gets
 * structured input and units straddle refills.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "grader/analysis/host_metrics.h"
#include "grader/trace/trace_events.h"
#include "grader/trace/trace_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_one(const uint8_t *p, size_t n, int no_thread, size_t chunk)
{
	struct fl_trace t;
	fl_trace_begin(&t, "fuzz", NULL);
	struct fl_trace_stream_opts so = {.strings = t.strings, .on_event = fl_trace_on_event, .arg = &t,
					  .no_thread = no_thread, .chunk = chunk};
	struct fl_trace_info info;
	enum fl_status st = fl_trace_stream_mem("fuzz", p, n, &so, &info);
	if (!st)
		st = fl_trace_end(&t, &info);
	if (!st) {
		struct fl_host_metrics m;
		fl_host_metrics_compute(&t, &m);
		cJSON_Delete(fl_host_metrics_json(&m));
		fl_host_metrics_release(&m);
	}
	fl_trace_release(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* as it is (gzip too, when it starts with the magic), on the inflating thread */
	read_one(data, size, 0, 4096);
	/* gzip-compressed, inflated inline in small chunks */
	uLongf cap = compressBound(size) + 64;
	uint8_t *gz = malloc(cap);
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)size;
	z.next_out = gz;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	size_t gzn = z.total_out;
	deflateEnd(&z);
	read_one(gz, gzn, 1, 64);
	free(gz);
	return 0;
}
