/* check_cupti.c — CUPTI records → trace events, without a GPU.
 *
 * The records are built here as CUPTI writes them (in the record types of the
 * CUPTI built against, cupti_convert.h: CUpti_ActivityKernel10, Memcpy6,
 * Memset4, API, Synchronization2, ExternalCorrelation, Overhead3 on 13.0),
 * spread over several buffers, around host spans the tracer really recorded.
 * The conversion's events are written with fl_kineto_write and read back, so
 * the assertions are on what a trace reader sees: names, rows, args, External
 * ids, flows (none dangling), ordering, dropped records, internal launches,
 * records CUPTI cannot read. Also: CUPTI and the cuda backend
 * refuse cleanly on a machine without a GPU (skipped where one is usable).
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/clock.h"
#include "capture/cupti_capture.h"
#include "capture/kineto_writer.h"
#include "capture/tracer.h"
#include "common/status.h"
#include "runtime/device.h"

/* ---- building CUPTI buffers ---- */

#define BUF_BYTES (1u << 16)

struct rbuf {
	uint8_t *p;
	size_t n;
};

static void *rec(struct rbuf *b, size_t size)
{
	ck_assert_uint_le(b->n + size, BUF_BYTES);
	ck_assert_uint_eq(size % 8, 0);
	void *r = b->p + b->n;
	memset(r, 0, size);
	b->n += size;
	return r;
}

static void add_api(struct rbuf *b, int driver, uint32_t cbid, uint64_t t0, uint64_t t1, uint32_t tid, uint32_t corr)
{
	CUpti_ActivityAPI *a = rec(b, sizeof(*a));
	a->kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
	a->cbid = cbid;
	a->start = t0;
	a->end = t1;
	a->processId = (uint32_t)getpid();
	a->threadId = tid;
	a->correlationId = corr;
}

static void add_ext(struct rbuf *b, uint32_t corr, uint64_t ext)
{
	CUpti_ActivityExternalCorrelation *x = rec(b, sizeof(*x));
	x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
	x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
	x->externalId = ext;
	x->correlationId = corr;
}

static void add_kernel(struct rbuf *b, const char *name, uint64_t t0, uint64_t t1, uint32_t corr, uint32_t stream,
		       int grid, int block, uint16_t regs, int smem)
{
	fl_cupti_kernel_rec *k = rec(b, sizeof(*k));
	k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k->name = name;
	k->start = t0;
	k->end = t1;
	k->correlationId = corr;
	k->streamId = stream;
	k->deviceId = 0;
	k->contextId = 1;
	k->gridX = grid, k->gridY = 1, k->gridZ = 1;
	k->blockX = block, k->blockY = 1, k->blockZ = 1;
	k->registersPerThread = regs;
	k->staticSharedMemory = smem;
}

static void add_memcpy(struct rbuf *b, uint8_t kind, uint8_t src, uint8_t dst, uint64_t bytes, uint64_t t0, uint64_t t1,
		       uint32_t corr, uint32_t stream)
{
	fl_cupti_memcpy_rec *c = rec(b, sizeof(*c));
	c->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	c->copyKind = kind;
	c->srcKind = src;
	c->dstKind = dst;
	c->bytes = bytes;
	c->start = t0;
	c->end = t1;
	c->correlationId = corr;
	c->streamId = stream;
	c->contextId = 1;
}

static void add_memset(struct rbuf *b, uint64_t bytes, uint64_t t0, uint64_t t1, uint32_t corr, uint32_t stream)
{
	fl_cupti_memset_rec *s = rec(b, sizeof(*s));
	s->kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s->bytes = bytes;
	s->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	s->start = t0;
	s->end = t1;
	s->correlationId = corr;
	s->streamId = stream;
	s->contextId = 1;
}

static void add_sync(struct rbuf *b, CUpti_ActivitySynchronizationType type, uint64_t t0, uint64_t t1, uint32_t corr,
		     uint32_t stream)
{
	fl_cupti_sync_rec *s = rec(b, sizeof(*s));
	s->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s->type = type;
	s->start = t0;
	s->end = t1;
	s->correlationId = corr;
	s->contextId = 1;
	s->streamId = stream;
}

static void add_overhead(struct rbuf *b, uint64_t t0, uint64_t t1, uint32_t tid)
{
	fl_cupti_overhead_rec *o = rec(b, sizeof(*o));
	o->kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o->overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o->objectId.pt.processId = (uint32_t)getpid();
	o->objectId.pt.threadId = tid;
	o->start = t0;
	o->end = t1;
}

/* ---- host spans the tracer really records ---- */

struct span {
	uint32_t slot;
	uint64_t t0, t1;
};

static uint32_t name_step, name_a, name_b, name_b1;

static void busy_us(unsigned us)
{
	uint64_t t = fl_clock_realtime_ns() + us * 1000ull;
	while (fl_clock_realtime_ns() < t)
		;
}

static void span_times(struct span *s)
{
	s->t0 = fl_tls_tbuf->ev[s->slot].t0;
	s->t1 = fl_tls_tbuf->ev[s->slot].t1;
}

static void setup(void)
{
	ck_assert_int_eq(fl_tracer_init(1u << 12), FL_OK);
	fl_clock_use_realtime(); /* as the cuda backend does: ticks are CUPTI's nanoseconds */
	ck_assert_int_eq(fl_tracer_thread_attach("main", -1), FL_OK);
	name_step = fl_tracer_intern("ProfilerStep#2");
	name_a = fl_tracer_intern("fl::relu");
	name_b = fl_tracer_intern("fl::mm");
	name_b1 = fl_tracer_intern("fl::empty_strided");
}

static void teardown(void) { fl_tracer_release(); }

/* Read a written trace back. */
static cJSON *load_trace(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *text = malloc((size_t)n + 1);
	ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	text[n] = '\0';
	fclose(f);
	cJSON *doc = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(doc);
	return doc;
}

static const cJSON *find_x(const cJSON *events, const char *cat, const char *name, int nth)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, events) {
		const cJSON *ph = cJSON_GetObjectItem(e, "ph"), *c = cJSON_GetObjectItem(e, "cat"), *nm = cJSON_GetObjectItem(e, "name");
		if (cJSON_IsString(ph) && strcmp(ph->valuestring, "X") == 0 && cJSON_IsString(c) &&
		    strcmp(c->valuestring, cat) == 0 && (!name || strcmp(nm->valuestring, name) == 0) && nth-- == 0)
			return e;
	}
	return NULL;
}

static int count_x(const cJSON *events, const char *cat)
{
	int n = 0;
	while (find_x(events, cat, NULL, n))
		n++;
	return n;
}

static double arg_num(const cJSON *e, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), key);
	ck_assert_msg(cJSON_IsNumber(v), "arg '%s' missing", key);
	return v->valuedouble;
}

static double num(const cJSON *e, const char *key) { return cJSON_GetObjectItem(e, key)->valuedouble; }

static int has_flow(const cJSON *events, const char *ph, int id, int pid, int tid)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, events) {
		const cJSON *p = cJSON_GetObjectItem(e, "ph");
		if (cJSON_IsString(p) && strcmp(p->valuestring, ph) == 0 && (int)num(e, "id") == id &&
		    (int)num(e, "pid") == pid && (int)num(e, "tid") == tid)
			return 1;
	}
	return 0;
}

/* Every flow end ("f") has its start ("s"): no arrow comes from nowhere. */
static int dangling_flows(const cJSON *events)
{
	int bad = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, events) {
		const cJSON *p = cJSON_GetObjectItem(e, "ph");
		if (!cJSON_IsString(p) || strcmp(p->valuestring, "f") != 0)
			continue;
		int id = (int)num(e, "id"), found = 0;
		const cJSON *s;
		cJSON_ArrayForEach(s, events) {
			const cJSON *q = cJSON_GetObjectItem(s, "ph");
			if (cJSON_IsString(q) && strcmp(q->valuestring, "s") == 0 && (int)num(s, "id") == id)
				found = 1;
		}
		bad += !found;
	}
	return bad;
}

static void add_internal_launch(struct rbuf *b, uint64_t t0, uint64_t t1, uint32_t tid, uint32_t corr)
{
	add_api(b, 1, 0, t0, t1, tid, corr);
	((CUpti_ActivityAPI *)(b->p + b->n - sizeof(CUpti_ActivityAPI)))->kind = CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API;
}

/* Write the tracer's buffers as a trace and read it back. */
static cJSON *write_and_load(uint64_t w0, uint64_t w1, struct fl_trace_stats *ts)
{
	char path[] = "/tmp/fl-check-cupti-XXXXXX.json";
	int fd = mkstemps(path, 5);
	ck_assert_int_ge(fd, 0);
	close(fd);
	struct fl_trace_meta meta = {.trace_name = "cupti", .process_name = "faultline", .world_size = 1,
				     .window_t0 = w0, .window_t1 = w1};
	ck_assert_int_eq(fl_kineto_write(path, &meta, ts), FL_OK);
	cJSON *doc = load_trace(path);
	unlink(path);
	return doc;
}

static int index_of(const cJSON *events, const cJSON *x)
{
	int i = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, events) {
		if (e == x)
			return i;
		i++;
	}
	return -1;
}

/* An op, its runtime calls, their kernels, copies, memsets and syncs, with the
 * records spread over three buffers as CUPTI delivers them. */
START_TEST(records_become_linked_events)
{
	const int tid = fl_tls_tbuf->tid, pid = (int)getpid();
	const uint32_t stream = 7;
	uint8_t *bufs[3];
	size_t valid[3];
	struct rbuf rb[3];
	for (int i = 0; i < 3; i++) {
		bufs[i] = aligned_alloc(8, BUF_BYTES);
		rb[i] = (struct rbuf){bufs[i], 0};
	}
	/* a warmup call and kernel before the window: never emitted */
	uint64_t before = fl_clock_realtime_ns();
	add_api(&rb[0], 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, before, before + 100, (uint32_t)tid, 90);
	add_kernel(&rb[1], "warmup_kernel", before + 200, before + 300, 90, stream, 1, 32, 8, 0);
	busy_us(20);

	fl_tracer_set_recording(1);
	uint64_t w0 = fl_clock_ticks();
	struct span step = {.slot = fl_span_begin(name_step, FL_EV_USER_ANNOTATION)}, a, b, b1;
	a.slot = fl_span_begin(name_a, FL_EV_CPU_OP);
	ck_assert_uint_eq(fl_span_innermost(), a.slot);
	busy_us(60);
	fl_span_end(a.slot);
	b.slot = fl_span_begin(name_b, FL_EV_CPU_OP);
	b1.slot = fl_span_begin(name_b1, FL_EV_CPU_OP);
	busy_us(10);
	fl_span_end(b1.slot);
	ck_assert_uint_eq(fl_span_innermost(), b.slot);
	busy_us(120);
	fl_span_end(b.slot);
	fl_span_end(step.slot);
	uint64_t w1 = fl_clock_ticks();
	fl_tracer_set_recording(0);
	ck_assert_uint_eq(fl_span_innermost(), FL_SLOT_NONE);
	span_times(&a), span_times(&b), span_times(&b1);

	/* op a: cudaLaunchKernel (corr 11) → clamp_min_kernel; its ExternalCorrelation in buffer 2 */
	add_api(&rb[0], 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, a.t0 + 10000, a.t0 + 14000, (uint32_t)tid, 11);
	add_kernel(&rb[1], "clamp_min_kernel", a.t0 + 20000, a.t0 + 30000, 11, stream, 128, 256, 32, 0);
	add_ext(&rb[2], 11, fl_cupti_external_id(tid, a.slot));
	/* op b, after its child: a runtime call (corr 12) with a driver launch inside it (corr 13) */
	add_api(&rb[2], 0, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, b1.t1 + 20000, b1.t1 + 60000, (uint32_t)tid, 12);
	add_api(&rb[0], 1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, b1.t1 + 30000, b1.t1 + 50000, (uint32_t)tid, 13);
	add_ext(&rb[1], 12, fl_cupti_external_id(tid, b.slot));
	add_ext(&rb[0], 13, fl_cupti_external_id(tid, b.slot));
	add_kernel(&rb[2], "_Z8sgemm_nn6float4", b1.t1 + 70000, b1.t1 + 90000, 13, stream, 264, 128, 96, 16384);
	add_memset(&rb[1], 4096, b1.t1 + 65000, b1.t1 + 66000, 12, stream);
	/* op b: a copy whose call carries no external id (placed by time) and a sync */
	add_api(&rb[1], 0, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, b1.t1 + 95000, b1.t1 + 99000, (uint32_t)tid, 14);
	add_memcpy(&rb[0], CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
		   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 131072, b1.t1 + 100000, b1.t1 + 110000, 14, stream);
	add_api(&rb[2], 0, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, b1.t1 + 100000, b1.t1 + 115000,
		(uint32_t)tid, 15);
	add_ext(&rb[2], 15, fl_cupti_external_id(tid, b.slot));
	add_sync(&rb[0], CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, b1.t1 + 100500, b1.t1 + 114000, 15, stream);
	/* a memset CUPTI saw without its call, and CUPTI's own overhead on the thread */
	add_memset(&rb[2], 64, b1.t1 + 116000, b1.t1 + 117000, 77, stream);
	add_overhead(&rb[1], a.t1 + 100, a.t1 + 900, (uint32_t)tid);
	for (int i = 0; i < 3; i++)
		valid[i] = rb[i].n;

	const struct fl_cupti_device h200 = {.id = 0, .sms = 132, .warp_size = 32, .max_threads_per_sm = 2048,
					     .max_blocks_per_sm = 32, .regs_per_sm = 65536, .smem_per_sm = 233472,
					     .reserved_smem_per_block = 1024};
	struct fl_cupti_input in = {.buffers = bufs, .valid = valid, .n_buffers = 3, .t0 = w0, .t1 = w1 + 1000000,
				    .dropped = 7, .devices = &h200, .n_devices = 1, .pid = pid};
	struct fl_cupti_summary sum;
	ck_assert_int_eq(fl_cupti_convert(&in, &sum), FL_OK);
	ck_assert_uint_eq(sum.api_calls, 5);
	ck_assert_uint_eq(sum.kernels, 2);
	ck_assert_uint_eq(sum.copies, 1);
	ck_assert_uint_eq(sum.memsets, 2);
	ck_assert_uint_eq(sum.syncs, 1);
	ck_assert_uint_eq(sum.overheads, 1);
	ck_assert_uint_eq(sum.linked_calls, 4);
	ck_assert_uint_eq(sum.unlaunched, 1);
	ck_assert_uint_eq(sum.dropped, 7);

	char path[] = "/tmp/fl-check-cupti-XXXXXX.json";
	int fd = mkstemps(path, 5);
	ck_assert_int_ge(fd, 0);
	close(fd);
	struct fl_trace_meta meta = {.trace_name = "cupti", .process_name = "faultline", .world_size = 1,
				     .window_t0 = w0, .window_t1 = w1};
	struct fl_trace_stats ts;
	ck_assert_int_eq(fl_kineto_write(path, &meta, &ts), FL_OK);
	ck_assert_uint_eq(ts.dropped, 7);
	cJSON *doc = load_trace(path);
	unlink(path);
	ck_assert_int_eq((int)cJSON_GetObjectItem(doc, "faultline_dropped_events")->valuedouble, 7);
	const cJSON *ev = cJSON_GetObjectItem(doc, "traceEvents");

	/* nothing from before the window */
	ck_assert_ptr_null(find_x(ev, "kernel", "warmup_kernel", 0));
	ck_assert_int_eq(count_x(ev, "cuda_runtime"), 4);
	ck_assert_int_eq(count_x(ev, "cuda_driver"), 1);
	ck_assert_int_eq(count_x(ev, "kernel"), 2);

	/* op a → cudaLaunchKernel → clamp_min_kernel */
	const cJSON *op_a = find_x(ev, "cpu_op", "fl::relu", 0), *op_b = find_x(ev, "cpu_op", "fl::mm", 0);
	const cJSON *launch = find_x(ev, "cuda_runtime", "cudaLaunchKernel", 0);
	const cJSON *k1 = find_x(ev, "kernel", "clamp_min_kernel", 0);
	ck_assert_ptr_nonnull(op_a);
	ck_assert_ptr_nonnull(launch);
	ck_assert_ptr_nonnull(k1);
	int ext_a = (int)arg_num(op_a, "External id"), ext_b = (int)arg_num(op_b, "External id");
	ck_assert_int_eq((int)arg_num(launch, "External id"), ext_a);
	ck_assert_int_eq((int)arg_num(k1, "External id"), ext_a);
	ck_assert_int_eq((int)arg_num(launch, "cbid"), CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
	int corr1 = (int)arg_num(launch, "correlation");
	ck_assert_int_eq(corr1, 1); /* dense ids, in the order the calls began */
	ck_assert_int_eq((int)arg_num(k1, "correlation"), corr1);
	ck_assert_int_eq((int)num(k1, "pid"), 0);
	ck_assert_int_eq((int)num(k1, "tid"), (int)stream);
	ck_assert_int_eq((int)num(launch, "pid"), pid);
	ck_assert_int_eq((int)num(launch, "tid"), tid);
	ck_assert(has_flow(ev, "s", corr1, pid, tid));
	ck_assert(has_flow(ev, "f", corr1, 0, (int)stream));
	/* the call sits inside its op, after it in the row's order */
	ck_assert(num(launch, "ts") >= num(op_a, "ts") && num(launch, "ts") + num(launch, "dur") <= num(op_a, "ts") + num(op_a, "dur"));
	ck_assert_int_gt(index_of(ev, launch), index_of(ev, op_a));
	ck_assert_int_lt(index_of(ev, launch), index_of(ev, op_b));
	/* kernel args as CUPTI reported them, occupancy estimated for the device */
	const cJSON *grid = cJSON_GetObjectItem(cJSON_GetObjectItem(k1, "args"), "grid");
	ck_assert_int_eq(cJSON_GetArrayItem(grid, 0)->valueint, 128);
	ck_assert_int_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(k1, "args"), "block"), 0)->valueint, 256);
	ck_assert_int_eq((int)arg_num(k1, "registers per thread"), 32);
	ck_assert_int_eq((int)arg_num(k1, "shared memory"), 0);
	ck_assert_int_eq((int)arg_num(k1, "est. achieved occupancy %"), 12); /* 128/132 blocks per SM x 8 warps / 64 */
	ck_assert_double_eq_tol(arg_num(k1, "blocks per SM"), 128.0 / 132.0, 1e-4);
	ck_assert_double_eq_tol(arg_num(k1, "warps per SM"), 8 * 128.0 / 132.0, 1e-4);
	ck_assert_double_eq_tol(num(k1, "dur"), 10.0, 0.0011);

	/* op b: the runtime call, the driver launch inside it, and the kernel it launched: all op b */
	const cJSON *mset_call = find_x(ev, "cuda_runtime", "cudaMemsetAsync", 0);
	const cJSON *drv = find_x(ev, "cuda_driver", "cuLaunchKernelEx", 0);
	const cJSON *k2 = find_x(ev, "kernel", "sgemm_nn(float4)", 0); /* demangled */
	ck_assert_ptr_nonnull(mset_call);
	ck_assert_ptr_nonnull(drv);
	ck_assert_ptr_nonnull(k2);
	ck_assert_int_eq((int)arg_num(mset_call, "External id"), ext_b);
	ck_assert_int_eq((int)arg_num(drv, "External id"), ext_b);
	ck_assert_int_eq((int)arg_num(k2, "External id"), ext_b);
	ck_assert_int_eq((int)arg_num(k2, "correlation"), (int)arg_num(drv, "correlation"));
	ck_assert(has_flow(ev, "s", (int)arg_num(drv, "correlation"), pid, tid));
	ck_assert_int_gt(index_of(ev, mset_call), index_of(ev, find_x(ev, "cpu_op", "fl::empty_strided", 0)));
	ck_assert_int_eq((int)arg_num(k2, "shared memory"), 16384);
	const cJSON *ms = find_x(ev, "gpu_memset", "Memset (Device)", 0);
	ck_assert_ptr_nonnull(ms);
	ck_assert_int_eq((int)arg_num(ms, "bytes"), 4096);
	ck_assert_int_eq((int)arg_num(ms, "External id"), ext_b);
	ck_assert_int_eq((int)arg_num(ms, "correlation"), (int)arg_num(mset_call, "correlation"));

	/* the copy's call had no external id: placed by time, inside op b all the same */
	const cJSON *cp_call = find_x(ev, "cuda_runtime", "cudaMemcpyAsync", 0);
	const cJSON *cp = find_x(ev, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0);
	ck_assert_ptr_nonnull(cp_call);
	ck_assert_ptr_nonnull(cp);
	ck_assert_int_eq((int)arg_num(cp, "External id"), ext_b);
	ck_assert_int_eq((int)arg_num(cp, "bytes"), 131072);
	ck_assert_double_eq_tol(arg_num(cp, "memory bandwidth (GB/s)"), 131072 / 10000.0, 1e-3);
	ck_assert_int_eq((int)num(cp, "tid"), (int)stream);

	/* the sync: Kineto's cuda_sync on the stream's row, linked to cudaStreamSynchronize */
	const cJSON *sync_call = find_x(ev, "cuda_runtime", "cudaStreamSynchronize", 0);
	const cJSON *sync = find_x(ev, "cuda_sync", "Stream Sync", 0);
	ck_assert_ptr_nonnull(sync_call);
	ck_assert_ptr_nonnull(sync);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(sync, "args"), "cuda_sync_kind")->valuestring, "Stream Sync");
	ck_assert_int_eq((int)num(sync, "pid"), 0);
	ck_assert_int_eq((int)num(sync, "tid"), (int)stream);
	ck_assert_int_eq((int)arg_num(sync, "correlation"), (int)arg_num(sync_call, "correlation"));

	/* device work without its call: kept (it ran in the window), with no op,
	 * correlation 0 ("no launch") and no flow arrow ending on it */
	const cJSON *orphan = find_x(ev, "gpu_memset", "Memset (Device)", 1);
	ck_assert_ptr_nonnull(orphan);
	ck_assert_int_eq((int)arg_num(orphan, "External id"), 0);
	ck_assert_int_eq((int)arg_num(orphan, "correlation"), 0);
	ck_assert_int_eq(dangling_flows(ev), 0);
	ck_assert_uint_eq(sum.read_errors, 0);

	/* CUPTI's overhead on the thread, on the thread's row */
	const cJSON *ovh = find_x(ev, "overhead", "CUPTI Buffer Flush", 0);
	ck_assert_ptr_nonnull(ovh);
	ck_assert_int_eq((int)num(ovh, "tid"), tid);

	/* correlation ids follow the calls' start order */
	ck_assert_int_lt((int)arg_num(mset_call, "correlation"), (int)arg_num(drv, "correlation"));
	ck_assert_int_lt((int)arg_num(drv, "correlation"), (int)arg_num(cp_call, "correlation"));
	cJSON_Delete(doc);
	for (int i = 0; i < 3; i++)
		free(bufs[i]);
}
END_TEST

/* A throttled device's stamp/stretch kernels fold into the kernel they bracket. */
START_TEST(clock_stretch_folds_into_its_kernel)
{
	const int tid = fl_tls_tbuf->tid;
	uint8_t *buf = aligned_alloc(8, BUF_BYTES);
	struct rbuf rb = {buf, 0};
	fl_tracer_set_recording(1);
	uint64_t w0 = fl_clock_ticks();
	uint32_t op = fl_span_begin(name_b, FL_EV_CPU_OP);
	busy_us(50);
	fl_span_end(op);
	uint64_t w1 = fl_clock_ticks();
	fl_tracer_set_recording(0);
	uint64_t t = fl_tls_tbuf->ev[op].t0;
	uint64_t ext = fl_cupti_external_id(tid, op);
	for (uint32_t c = 1; c <= 3; c++) {
		add_api(&rb, 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, t + c * 1000, t + c * 1000 + 500,
			(uint32_t)tid, c);
		add_ext(&rb, c, ext);
	}
	add_kernel(&rb, "fl_clock_stamp", t + 5000, t + 6000, 1, 7, 1, 1, 8, 0);
	add_kernel(&rb, "gemm", t + 7000, t + 17000, 2, 7, 64, 256, 64, 0);
	add_kernel(&rb, "fl_clock_stretch", t + 18000, t + 33000, 3, 7, 1, 1, 8, 0);
	size_t valid = rb.n;
	struct fl_cupti_input in = {.buffers = &buf, .valid = &valid, .n_buffers = 1, .t0 = w0, .t1 = w1,
				    .pid = (int)getpid(), .fold_begin = "fl_clock_stamp", .fold_end = "fl_clock_stretch"};
	struct fl_cupti_summary sum;
	ck_assert_int_eq(fl_cupti_convert(&in, &sum), FL_OK);
	ck_assert_uint_eq(sum.kernels, 1);
	ck_assert_uint_eq(sum.api_calls, 1); /* the stamp and stretch launches are not shown */
	ck_assert_uint_eq(sum.folded, 1);
	const struct fl_event *k = NULL;
	for (struct fl_tbuf *b = fl_tracer_threads(); b; b = b->next)
		for (uint32_t i = 0; i < b->n; i++)
			if (b->ev[i].kind == FL_EV_KERNEL)
				k = &b->ev[i];
	ck_assert_ptr_nonnull(k);
	ck_assert_str_eq(fl_tracer_name(k->name), "gemm");
	ck_assert_uint_eq(k->t0, t + 7000);
	ck_assert_uint_eq(k->t1, t + 33000); /* ends when the stretch ends */
	free(buf);
}
END_TEST

/* Side tables and detached buffers keep the 40-byte event and cpu/emu buffers as they were. */
START_TEST(side_table_and_detached_buffers)
{
	ck_assert_uint_eq(sizeof(struct fl_event), 40);
	ck_assert_ptr_null(fl_tls_tbuf->args);
	struct fl_tbuf *d = fl_tracer_buffer_new("GPU 0", (int)getpid(), 0, 0, 4);
	ck_assert_ptr_nonnull(d);
	struct fl_event_args a = {.bytes = 42, .cbid = 3};
	uint64_t v = fl_tracer_add_args(d, &a);
	ck_assert_uint_eq(v, 1);
	struct fl_event e = {.value = v};
	ck_assert_uint_eq(fl_event_args_of(d, &e)->bytes, 42);
	e.value = 0;
	ck_assert_ptr_null(fl_event_args_of(d, &e));
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(fl_tracer_add_args(d, &a), (uint64_t)i + 2);
	int found = 0;
	for (struct fl_tbuf *b = fl_tracer_threads(); b; b = b->next)
		found += b == d;
	ck_assert_int_eq(found, 1);
	ck_assert_int_eq(fl_tracer_reserve(16), FL_OK);
	ck_assert_uint_eq(d->n_args, 0);
}
END_TEST

/* A window in which the device did nothing, and CUPTI lost records: still a trace, with the loss in it. */
START_TEST(empty_capture_reports_drops)
{
	fl_tracer_set_recording(1);
	uint64_t w0 = fl_clock_ticks();
	fl_span_end(fl_span_begin(name_step, FL_EV_USER_ANNOTATION));
	uint64_t w1 = fl_clock_ticks();
	fl_tracer_set_recording(0);
	struct fl_cupti_input in = {.n_buffers = 0, .t0 = w0, .t1 = w1, .dropped = 3, .pid = (int)getpid()};
	struct fl_cupti_summary sum;
	ck_assert_int_eq(fl_cupti_convert(&in, &sum), FL_OK);
	ck_assert_uint_eq(sum.kernels + sum.api_calls + sum.copies, 0);
	ck_assert_uint_eq(fl_tracer_dropped(), 3);
	char path[] = "/tmp/fl-check-cupti-XXXXXX.json";
	int fd = mkstemps(path, 5);
	ck_assert_int_ge(fd, 0);
	close(fd);
	struct fl_trace_meta meta = {.trace_name = "empty", .world_size = 1, .window_t0 = w0, .window_t1 = w1};
	ck_assert_int_eq(fl_kineto_write(path, &meta, NULL), FL_OK);
	cJSON *doc = load_trace(path);
	unlink(path);
	ck_assert_int_eq((int)cJSON_GetObjectItem(doc, "faultline_dropped_events")->valuedouble, 3);
	cJSON_Delete(doc);
}
END_TEST

/* A kernel launched outside any public API call (INTERNAL_LAUNCH_API): the
 * launch is a cuda_driver call under its op, and the kernel is linked to both. */
START_TEST(internal_launch_links_its_kernel)
{
	const int tid = fl_tls_tbuf->tid, pid = (int)getpid();
	uint8_t *bufs[2] = {aligned_alloc(8, BUF_BYTES), aligned_alloc(8, BUF_BYTES)};
	struct rbuf rb[2] = {{bufs[0], 0}, {bufs[1], 0}};
	fl_tracer_set_recording(1);
	uint64_t w0 = fl_clock_ticks();
	uint32_t step = fl_span_begin(name_step, FL_EV_USER_ANNOTATION);
	uint32_t op = fl_span_begin(name_b, FL_EV_CPU_OP);
	busy_us(80);
	fl_span_end(op);
	fl_span_end(step);
	uint64_t w1 = fl_clock_ticks();
	fl_tracer_set_recording(0);
	uint64_t t = fl_tls_tbuf->ev[op].t0;
	add_internal_launch(&rb[0], t + 10000, t + 15000, (uint32_t)tid, 21);
	add_ext(&rb[1], 21, fl_cupti_external_id(tid, op));
	add_kernel(&rb[1], "sm90_xmma_gemm", t + 20000, t + 40000, 21, 7, 132, 128, 168, 0);
	/* and one CUPTI saw without any launch record: no flow, no op */
	add_kernel(&rb[0], "orphan_kernel", t + 45000, t + 46000, 99, 7, 1, 32, 8, 0);
	size_t valid[2] = {rb[0].n, rb[1].n};
	struct fl_cupti_input in = {.buffers = bufs, .valid = valid, .n_buffers = 2, .t0 = w0, .t1 = w1,
				    .pid = pid};
	struct fl_cupti_summary sum;
	ck_assert_int_eq(fl_cupti_convert(&in, &sum), FL_OK);
	ck_assert_uint_eq(sum.api_calls, 1);
	ck_assert_uint_eq(sum.linked_calls, 1);
	ck_assert_uint_eq(sum.kernels, 2);
	ck_assert_uint_eq(sum.unlaunched, 1);
	ck_assert_uint_eq(sum.dropped, 0);
	cJSON *doc = write_and_load(w0, w1, NULL);
	const cJSON *ev = cJSON_GetObjectItem(doc, "traceEvents");
	const cJSON *launch = find_x(ev, "cuda_driver", FL_CUPTI_INTERNAL_LAUNCH_NAME, 0);
	const cJSON *k = find_x(ev, "kernel", "sm90_xmma_gemm", 0);
	const cJSON *o = find_x(ev, "cpu_op", "fl::mm", 0);
	ck_assert_ptr_nonnull(launch);
	ck_assert_ptr_nonnull(k);
	ck_assert_ptr_nonnull(o);
	int ext = (int)arg_num(o, "External id"), corr = (int)arg_num(launch, "correlation");
	ck_assert_int_gt(corr, 0);
	ck_assert_int_eq((int)arg_num(launch, "External id"), ext);
	ck_assert_int_eq((int)arg_num(k, "External id"), ext);
	ck_assert_int_eq((int)arg_num(k, "correlation"), corr);
	ck_assert_int_eq((int)num(launch, "tid"), tid);
	ck_assert(has_flow(ev, "s", corr, pid, tid));
	ck_assert(has_flow(ev, "f", corr, 0, 7));
	const cJSON *orphan = find_x(ev, "kernel", "orphan_kernel", 0);
	ck_assert_ptr_nonnull(orphan);
	ck_assert_int_eq((int)arg_num(orphan, "correlation"), 0);
	ck_assert_int_eq((int)arg_num(orphan, "External id"), 0);
	ck_assert_int_eq(dangling_flows(ev), 0);
	cJSON_Delete(doc);
	free(bufs[0]);
	free(bufs[1]);
}
END_TEST

/* A record CUPTI cannot read ends its buffer: the records before it are kept,
 * the other buffers are read in full, and the loss is counted as dropped. */
START_TEST(read_errors_are_counted)
{
	const int tid = fl_tls_tbuf->tid;
	uint8_t *bufs[2] = {aligned_alloc(8, BUF_BYTES), aligned_alloc(8, BUF_BYTES)};
	struct rbuf rb[2] = {{bufs[0], 0}, {bufs[1], 0}};
	fl_tracer_set_recording(1);
	uint64_t w0 = fl_clock_ticks();
	uint32_t op = fl_span_begin(name_a, FL_EV_CPU_OP);
	busy_us(60);
	fl_span_end(op);
	uint64_t w1 = fl_clock_ticks();
	fl_tracer_set_recording(0);
	uint64_t t = fl_tls_tbuf->ev[op].t0;
	add_api(&rb[0], 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, t + 1000, t + 2000, (uint32_t)tid, 1);
	add_kernel(&rb[0], "before_kernel", t + 3000, t + 4000, 1, 7, 1, 32, 8, 0);
	/* a record of no kind CUPTI knows: reading this buffer stops here */
	CUpti_ActivityAPI *bad = rec(&rb[0], sizeof(*bad));
	bad->kind = CUPTI_ACTIVITY_KIND_INVALID;
	add_kernel(&rb[0], "lost_kernel", t + 5000, t + 6000, 2, 7, 1, 32, 8, 0);
	add_api(&rb[1], 0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, t + 7000, t + 8000, (uint32_t)tid, 3);
	add_kernel(&rb[1], "after_kernel", t + 9000, t + 10000, 3, 7, 1, 32, 8, 0);
	size_t valid[2] = {rb[0].n, rb[1].n};
	struct fl_cupti_input in = {.buffers = bufs, .valid = valid, .n_buffers = 2, .t0 = w0, .t1 = w1,
				    .dropped = 2, .pid = (int)getpid()};
	struct fl_cupti_summary sum;
	ck_assert_int_eq(fl_cupti_convert(&in, &sum), FL_OK);
	ck_assert_uint_eq(sum.read_errors, 1);
	ck_assert_uint_eq(sum.dropped, 3);
	ck_assert_uint_eq(sum.kernels, 2);
	ck_assert_uint_eq(sum.api_calls, 2);
	struct fl_trace_stats ts;
	cJSON *doc = write_and_load(w0, w1, &ts);
	ck_assert_uint_eq(ts.dropped, 3);
	ck_assert_int_eq((int)cJSON_GetObjectItem(doc, "faultline_dropped_events")->valuedouble, 3);
	const cJSON *ev = cJSON_GetObjectItem(doc, "traceEvents");
	ck_assert_ptr_nonnull(find_x(ev, "kernel", "before_kernel", 0));
	ck_assert_ptr_nonnull(find_x(ev, "kernel", "after_kernel", 0));
	ck_assert_ptr_null(find_x(ev, "kernel", "lost_kernel", 0));
	ck_assert_int_eq(dangling_flows(ev), 0);
	cJSON_Delete(doc);
	free(bufs[0]);
	free(bufs[1]);
}
END_TEST

START_TEST(kineto_names)
{
	ck_assert_str_eq(fl_cupti_memcpy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), "DtoH");
	ck_assert_str_eq(fl_cupti_memcpy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), "DtoD");
	ck_assert_str_eq(fl_cupti_memory_kind(CUPTI_ACTIVITY_MEMORY_KIND_PINNED), "Pinned");
	ck_assert_str_eq(fl_cupti_memory_kind(99), "Unknown");
	ck_assert_str_eq(fl_cupti_sync_kind(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE), "Context Sync");
}
END_TEST

/* Without a GPU: CUPTI refuses its kinds, and the cuda backend says why. */
START_TEST(no_gpu_refused_cleanly)
{
	const struct fl_backend_ops *ops = fl_backend_find("cuda");
	ck_assert_ptr_nonnull(ops);
	struct fl_backend be = {.ops = ops};
	const struct fl_backend_config cfg = {.rank = 0, .world_size = 1, .device = 0};
	if (ops->open(&be, &cfg) == FL_OK) { /* a GPU machine: tests/gpu-check.sh covers it */
		ops->close(&be);
		return;
	}
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "cuda: no usable GPU"));
	ck_assert_ptr_null(be.state);
	/* the capture can be tried again and fails the same way, leaving nothing behind */
	struct fl_cupti_options o = {0};
	ck_assert_int_eq(fl_cupti_start(&o), FL_ERUNTIME);
	ck_assert_ptr_nonnull(strstr(fl_error_msg(), "cupti: "));
	ck_assert_int_eq(fl_cupti_start(&o), FL_ERUNTIME);
	ck_assert_ptr_nonnull(strstr(fl_cupti_version(), "CUPTI "));
	/* the emulated device still opens in the same process */
	struct fl_backend emu = {.ops = fl_backend_find("emu")};
	ck_assert_int_eq(emu.ops->open(&emu, &cfg), FL_OK);
	emu.ops->close(&emu);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cupti");
	TCase *tc = tcase_create("convert");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, records_become_linked_events);
	tcase_add_test(tc, clock_stretch_folds_into_its_kernel);
	tcase_add_test(tc, internal_launch_links_its_kernel);
	tcase_add_test(tc, read_errors_are_counted);
	tcase_add_test(tc, side_table_and_detached_buffers);
	tcase_add_test(tc, empty_capture_reports_drops);
	tcase_add_test(tc, kineto_names);
	tcase_add_test(tc, no_gpu_refused_cleanly);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
