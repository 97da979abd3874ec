#include "capture/kineto_writer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/clock.h"
#include "capture/tracer.h"
#include "common/categories.h"
#include "common/outfile.h"
#include "common/strbuf.h"

/* Append "<int>.<3 digits>" for ns expressed in µs. */
static void add_us(struct strbuf *sb, int64_t ns)
{
	char tmp[32];
	int neg = ns < 0;
	uint64_t a = neg ? (uint64_t)(-ns) : (uint64_t)ns;
	int n = snprintf(tmp, sizeof(tmp), "%s%" PRIu64 ".%03u", neg ? "-" : "", a / 1000, (unsigned)(a % 1000));
	strbuf_add(sb, tmp, (size_t)n);
}

static void flush_if_big(struct strbuf *sb, struct fl_outfile *f)
{
	if (sb->len > (1u << 16)) {
		fl_outfile_write(f, sb->buf, sb->len);
		strbuf_reset(sb);
	}
}

static void meta_event(struct strbuf *sb, const char *name, const char *pid_json, const char *tid_json,
		       int64_t ts_ns, const char *args_json)
{
	strbuf_adds(sb, "  {\"ph\": \"M\", \"name\": ");
	strbuf_add_json_str(sb, name);
	strbuf_adds(sb, ", \"ts\": ");
	add_us(sb, ts_ns);
	strbuf_addf(sb, ", \"pid\": %s, \"tid\": %s, \"args\": %s},\n", pid_json, tid_json, args_json);
}

static void row_names(struct strbuf *sb, const struct fl_tbuf *b, const struct fl_trace_meta *m,
		      int64_t ts_ns, int first_of_pid)
{
	char pid[32], tid[32];
	struct strbuf args = STRBUF_INIT;
	snprintf(pid, sizeof(pid), "%d", b->pid);
	snprintf(tid, sizeof(tid), "%d", b->tid);
	if (first_of_pid) {
		strbuf_adds(&args, "{\"name\": ");
		strbuf_add_json_str(&args, m->process_name ? m->process_name : "faultline");
		strbuf_adds(&args, "}");
		meta_event(sb, "process_name", pid, "0", ts_ns, args.buf);
		strbuf_reset(&args);
		strbuf_addf(&args, "{\"labels\": \"CPU\"}");
		meta_event(sb, "process_labels", pid, "0", ts_ns, args.buf);
		strbuf_reset(&args);
		strbuf_addf(&args, "{\"sort_index\": %d}", b->pid);
		meta_event(sb, "process_sort_index", pid, "0", ts_ns, args.buf);
		strbuf_reset(&args);
	}
	char label[96];
	snprintf(label, sizeof(label), "thread %d (%s)", b->tid, b->label);
	strbuf_adds(&args, "{\"name\": ");
	strbuf_add_json_str(&args, label);
	strbuf_adds(&args, "}");
	meta_event(sb, "thread_name", pid, tid, ts_ns, args.buf);
	strbuf_reset(&args);
	strbuf_addf(&args, "{\"sort_index\": %d}", b->tid);
	meta_event(sb, "thread_sort_index", pid, tid, ts_ns, args.buf);
	strbuf_release(&args);
}

/* Device rows: pid = device ordinal, tid = stream. Named once per (device, stream). */
static void device_row_names(struct strbuf *sb, int device, int stream, int64_t ts_ns, int first_of_device)
{
	char pid[32], tid[32], args[160];
	snprintf(pid, sizeof(pid), "%d", device);
	snprintf(tid, sizeof(tid), "%d", stream);
	if (first_of_device) {
		snprintf(args, sizeof(args), "{\"name\": \"GPU %d\"}", device);
		meta_event(sb, "process_name", pid, "0", ts_ns, args);
		snprintf(args, sizeof(args), "{\"labels\": \"GPU %d\"}", device);
		meta_event(sb, "process_labels", pid, "0", ts_ns, args);
		snprintf(args, sizeof(args), "{\"sort_index\": %d}", 0x1000000 + device);
		meta_event(sb, "process_sort_index", pid, "0", ts_ns, args);
	}
	snprintf(args, sizeof(args), "{\"name\": \"stream %d \"}", stream);
	meta_event(sb, "thread_name", pid, tid, ts_ns, args);
	snprintf(args, sizeof(args), "{\"sort_index\": %d}", stream);
	meta_event(sb, "thread_sort_index", pid, tid, ts_ns, args);
}

static int is_device_kind(uint16_t k)
{
	return k == FL_EV_KERNEL || k == FL_EV_GPU_MEMCPY || k == FL_EV_GPU_MEMSET || k == FL_EV_GPU_USER_ANNOTATION;
}

/* Device rows: device work on a stream; and, in a device buffer, CUPTI's syncs
 * (stream -1 for a device-wide sync, as Kineto writes them). */
static int on_device_row(const struct fl_tbuf *b, const struct fl_event *e)
{
	return (e->stream >= 0 && is_device_kind(e->kind)) || (e->kind == FL_EV_CUDA_SYNC && b->device >= 0);
}

/* Host calls that launch device work: runtime and driver API calls. */
static int is_api_kind(uint16_t k)
{
	return k == FL_EV_CUDA_RUNTIME || k == FL_EV_CUDA_DRIVER;
}

/* Kineto's args of a captured kernel, copy, memset or sync (fields CUPTI reported). */
static void add_device_args(struct strbuf *sb, const struct fl_event *e, const struct fl_event_args *a, int64_t dur)
{
	if (e->kind == FL_EV_KERNEL)
		strbuf_addf(sb, ", \"registers per thread\": %u, \"shared memory\": %u, \"blocks per SM\": %.6g, "
			    "\"warps per SM\": %.6g, \"grid\": [%d, %d, %d], \"block\": [%d, %d, %d], "
			    "\"est. achieved occupancy %%\": %d, \"queued\": 0",
			    a->registers, a->shared_mem, (double)a->blocks_per_sm, (double)a->warps_per_sm, a->grid[0],
			    a->grid[1], a->grid[2], a->block[0], a->block[1], a->block[2], (int)(a->occupancy_pct + 0.5f));
	else if (e->kind == FL_EV_CUDA_SYNC)
		strbuf_addf(sb, ", \"cuda_sync_kind\": \"%s\"", a->sync_kind ? a->sync_kind : "Unknown");
	else
		strbuf_addf(sb, ", \"bytes\": %" PRIu64 ", \"memory bandwidth (GB/s)\": %.3f", a->bytes,
			    dur > 0 ? (double)a->bytes / (double)dur : 0.0);
}

/* torch.profiler's record_shapes args of an op: "Input Dims" (one list of
 * sizes per input, [] for a non-tensor or a 0-dim tensor) and "Input type". */
static void add_input_args(struct strbuf *sb, const struct fl_op_inputs *in)
{
	uint32_t n = in->n < FL_OP_MAX_INPUTS ? in->n : FL_OP_MAX_INPUTS;
	strbuf_adds(sb, ", \"Input Dims\": [");
	for (uint32_t i = 0; i < n; i++) {
		const struct fl_input *x = &in->in[i];
		strbuf_adds(sb, i ? ", [" : "[");
		for (uint32_t d = 0; d < x->ndim && d < FL_INPUT_MAX_DIMS; d++)
			strbuf_addf(sb, d ? ", %d" : "%d", (int)x->dim[d]);
		strbuf_adds(sb, "]");
	}
	strbuf_adds(sb, "], \"Input type\": [");
	for (uint32_t i = 0; i < n; i++) {
		strbuf_adds(sb, i ? ", " : "");
		strbuf_add_json_str(sb, fl_input_type_name((enum fl_input_type)in->in[i].type));
	}
	strbuf_adds(sb, "]");
}

enum fl_status fl_kineto_write(const char *path, const struct fl_trace_meta *m,
			       struct fl_trace_stats *stats)
{
	struct fl_outfile *f = NULL;
	struct strbuf sb = STRBUF_INIT;
	enum fl_status st;
	uint64_t n_events = 0, dropped = 0;
	uint64_t *corr_ext = NULL;   /* correlation → External id of the op that launched it */
	uint8_t *corr_dev = NULL;    /* correlation has device work */
	uint32_t max_corr = 0;

	/* device activity captured outside the tracer (CUPTI) joins the buffers first */
	if ((st = fl_tracer_collect(m->window_t0, m->window_t1)))
		return st;
	fl_clock_refine();
	uint64_t w0 = fl_clock_to_ns(m->window_t0), w1 = fl_clock_to_ns(m->window_t1);
	uint64_t base = w0 / 1000000000ull * 1000000000ull;
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';

	/* pass 1: External ids of host events, and the correlation maps */
	for (struct fl_tbuf *b = fl_tracer_threads(); b; b = b->next)
		for (uint32_t i = 0; i < b->n; i++)
			if (b->ev[i].corr > max_corr)
				max_corr = b->ev[i].corr;
	corr_ext = calloc((size_t)max_corr + 1, sizeof(*corr_ext));
	corr_dev = calloc((size_t)max_corr + 1, 1);
	if (!corr_ext || !corr_dev) {
		free(corr_ext);
		free(corr_dev);
		return fl_error(FL_ERUNTIME, "cannot write '%s': out of memory", path);
	}
	uint64_t ext_id = 1;
	for (struct fl_tbuf *b = fl_tracer_threads(); b; b = b->next) {
		uint64_t open_ext[64] = {0};
		for (uint32_t i = 0; i < b->n; i++) {
			const struct fl_event *e = &b->ev[i];
			if (on_device_row(b, e)) {
				if (e->corr)
					corr_dev[e->corr] = 1;
				continue;
			}
			if (e->t1 < e->t0)
				continue;
			uint64_t id = ext_id++;
			if (is_api_kind(e->kind) && e->corr)
				corr_ext[e->corr] = e->depth > 0 && e->depth <= 64 ? open_ext[e->depth - 1] : 0;
			if (e->depth < 64)
				open_ext[e->depth] = id;
		}
	}

	st = fl_outfile_open(&f, path);
	if (st)
		goto out;

	/* trace_id: 32 upper-case hex digits from the seed, the window and the pid. */
	uint64_t h1 = w0 ^ (m->seed * 0x9E3779B97F4A7C15ull), h2 = (uint64_t)getpid() * 0xC2B2AE3D27D4EB4Full ^ w1;
	strbuf_adds(&sb, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ");
	strbuf_adds(&sb, m->device_properties ? m->device_properties : "[]");
	strbuf_addf(&sb, ",\n  \"trace_id\": \"%016" PRIX64 "%016" PRIX64 "\",\n  \"host_name\": ", h1, h2);
	strbuf_add_json_str(&sb, host);
	strbuf_adds(&sb, ",\n  \"faultline_version\": \"" FL_VERSION "\",\n  \"distributedInfo\": {\"backend\": ");
	strbuf_add_json_str(&sb, m->dist_backend ? m->dist_backend : "none");
	strbuf_addf(&sb, ", \"rank\": %d, \"world_size\": %d},\n", m->rank, m->world_size);
	strbuf_addf(&sb, "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %" PRIu64 ",\n", base);
	/* dropped events are reported, never hidden */
	for (struct fl_tbuf *b = fl_tracer_threads(); b; b = b->next)
		dropped += b->dropped;
	strbuf_addf(&sb, "  \"faultline_dropped_events\": %" PRIu64 ",\n", dropped);
	strbuf_adds(&sb, "  \"traceEvents\": [\n");

	int64_t w0rel = (int64_t)(w0 - base);
	int last_pid = -1, named_device = 0;
	uint64_t stream_named[4] = {0}; /* bitmap of streams 0..255 named on device 0.. */
	ext_id = 1;
	uint64_t ev_idx = 0;
	for (struct fl_tbuf *b = fl_tracer_threads(); b; b = b->next) {
		if (b->device < 0) {
			row_names(&sb, b, m, w0rel, b->pid != last_pid);
			last_pid = b->pid;
		}
		for (uint32_t i = 0; i < b->n; i++) {
			const struct fl_event *e = &b->ev[i];
			if (e->t1 < e->t0)
				continue; /* never ended: the span was open when the window closed */
			int dev_row = on_device_row(b, e);
			int pid = dev_row ? (b->device >= 0 ? b->device : 0) : b->pid;
			int tid = dev_row ? e->stream : b->tid;
			const struct fl_event_args *xa = fl_event_args_of(b, e);
			if (dev_row && e->stream >= 0 && e->stream < 256 &&
			    !(stream_named[e->stream / 64] >> (e->stream % 64) & 1)) {
				device_row_names(&sb, pid, e->stream, w0rel, !named_device);
				named_device = 1;
				stream_named[e->stream / 64] |= 1ull << (e->stream % 64);
			}
			/* both ends through the same mapping: an event that starts on the
			 * tick its sibling ended on starts on the nanosecond it ended on */
			int64_t ts = (int64_t)(fl_clock_to_ns(e->t0) - base);
			int64_t dur = (int64_t)(fl_clock_to_ns(e->t1) - fl_clock_to_ns(e->t0));
			strbuf_adds(&sb, "  {\"ph\": \"X\", \"cat\": \"");
			strbuf_adds(&sb, fl_event_kind_cat((enum fl_event_kind)e->kind));
			strbuf_adds(&sb, "\", \"name\": ");
			strbuf_add_json_str(&sb, fl_tracer_name(e->name));
			strbuf_addf(&sb, ", \"pid\": %d, \"tid\": %d, \"ts\": ", pid, tid);
			add_us(&sb, ts);
			strbuf_adds(&sb, ", \"dur\": ");
			add_us(&sb, dur);
			if (dev_row) {
				uint64_t ext = e->corr <= max_corr ? corr_ext[e->corr] : 0;
				strbuf_addf(&sb, ", \"args\": {\"External id\": %" PRIu64 ", \"device\": %d, \"context\": %u, "
					    "\"stream\": %d, \"correlation\": %u",
					    ext, pid, xa ? xa->context : 1u, e->stream, e->corr);
				if (xa)
					add_device_args(&sb, e, xa, dur);
				else if (e->kind == FL_EV_KERNEL)
					strbuf_adds(&sb, ", \"registers per thread\": 0, \"shared memory\": 0, \"blocks per SM\": 1, "
							 "\"warps per SM\": 1, \"grid\": [1, 1, 1], \"block\": [1, 1, 1], "
							 "\"est. achieved occupancy %\": 0, \"queued\": 0");
				else
					strbuf_addf(&sb, ", \"bytes\": %" PRIu64 ", \"memory bandwidth (GB/s)\": %.3f", e->value,
						    dur > 0 ? (double)e->value / (double)dur : 0.0);
				strbuf_adds(&sb, "}},\n");
			} else {
				uint64_t id = ext_id++;
				if (is_api_kind(e->kind) && xa)
					strbuf_addf(&sb, ", \"args\": {\"External id\": %" PRIu64 ", \"cbid\": %u, \"correlation\": %u}},\n",
						    e->corr <= max_corr ? corr_ext[e->corr] : 0, xa->cbid, e->corr);
				else if (is_api_kind(e->kind))
					strbuf_addf(&sb, ", \"args\": {\"External id\": %" PRIu64 ", \"correlation\": %u}},\n",
						    e->corr <= max_corr ? corr_ext[e->corr] : 0, e->corr);
				else if (e->kind == FL_EV_OVERHEAD)
					strbuf_adds(&sb, ", \"args\": {}},\n");
				else {
					strbuf_addf(&sb, ", \"args\": {\"External id\": %" PRIu64 ", \"Record function id\": 0", id);
					const struct fl_op_inputs *in = fl_event_inputs_of(b, e);
					if (in)
						add_input_args(&sb, in);
					strbuf_addf(&sb, ", \"Ev Idx\": %" PRIu64 "}},\n", ev_idx);
				}
				ev_idx++;
			}
			/* launch → device work flow arrows */
			if (e->corr && e->corr <= max_corr && corr_dev[e->corr] && (dev_row || is_api_kind(e->kind))) {
				strbuf_addf(&sb, "  {\"ph\": \"%s\", \"id\": %u, \"pid\": %d, \"tid\": %d, \"ts\": ", dev_row ? "f" : "s",
					    e->corr, pid, tid);
				add_us(&sb, ts);
				strbuf_addf(&sb, ", \"cat\": \"" FL_CATEGORY_AC2G "\", \"name\": \"ac2g\"%s},\n",
					    dev_row ? ", \"bp\": \"e\"" : "");
			}
			n_events++;
			flush_if_big(&sb, f);
		}
	}
	/* the capture span, like Kineto's, on the "Spans" row */
	strbuf_adds(&sb, "  {\"ph\": \"X\", \"cat\": \"" FL_CATEGORY_TRACE "\", \"name\": \"faultline capture (0)\", \"pid\": \"Spans\", \"tid\": \"faultline\", \"ts\": ");
	add_us(&sb, w0rel);
	strbuf_adds(&sb, ", \"dur\": ");
	add_us(&sb, (int64_t)(w1 - w0));
	strbuf_adds(&sb, ", \"args\": {\"Op count\": 0}},\n");
	meta_event(&sb, "process_sort_index", "\"Spans\"", "0", w0rel, "{\"sort_index\": 536870912}");
	strbuf_adds(&sb, "  {\"ph\": \"i\", \"s\": \"g\", \"name\": \"Iteration Start: faultline\", \"pid\": \"Traces\", \"tid\": \"Trace faultline\", \"ts\": ");
	add_us(&sb, w0rel);
	strbuf_adds(&sb, "},\n  {\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\", \"ts\": ");
	add_us(&sb, (int64_t)(w1 - base));
	strbuf_adds(&sb, "}\n  ],\n  \"traceName\": ");
	strbuf_add_json_str(&sb, m->trace_name ? m->trace_name : "trace"); /* never the file name: it may tell */
	strbuf_adds(&sb, "\n}\n");
	fl_outfile_write(f, sb.buf, sb.len);
	st = fl_outfile_commit(f);
	if (st)
		goto out;
	if (stats) {
		stats->events = n_events;
		stats->dropped = dropped;
	}
out:
	strbuf_release(&sb);
	free(corr_ext);
	free(corr_dev);
	return st;
}
