/* cupti_capture.c — CUPTI activity capture for the cuda backend (see cupti_capture.h). */
#include "capture/cupti_capture.h"

#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/clock.h"
#include "capture/tracer.h"

#define BUFFER_BYTES (4u << 20)
#define MAX_BUFFERS 1024

static struct {
	pthread_mutex_t mu;
	int started, armed;
	uint8_t *pool;
	size_t n_buffers;
	uint32_t free_stack[MAX_BUFFERS];
	size_t n_free;
	uint32_t kept[MAX_BUFFERS];     /* completed inside the window, in order */
	size_t kept_valid[MAX_BUFFERS];
	size_t n_kept;
	size_t outstanding;             /* buffers CUPTI holds */
	uint64_t dropped;
	struct fl_cupti_device device;
	int have_device;
	const char *fold_begin, *fold_end;
	char version[32];
} cap = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* CUPTI errors become fl_errors naming the call. */
static enum fl_status cupti_fail(const char *what, CUptiResult r)
{
	const char *s = NULL;
	if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
		s = "unknown CUPTI error";
	return fl_error(FL_ERUNTIME, "cupti: %s failed: %s (%d)", what, s, (int)r);
}

static uint64_t CUPTIAPI now_ns(void) { return fl_clock_realtime_ns(); }

static int buffer_index(const uint8_t *b)
{
	if (!cap.pool || b < cap.pool || b >= cap.pool + cap.n_buffers * (size_t)BUFFER_BYTES)
		return -1;
	return (int)((size_t)(b - cap.pool) / BUFFER_BYTES);
}

/* CUPTI wants an empty buffer: hand one from the pool, never allocate. An
 * empty pool makes CUPTI drop records, which it counts. */
static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*max_records = 0;
	pthread_mutex_lock(&cap.mu);
	if (cap.started && cap.n_free) {
		uint32_t i = cap.free_stack[--cap.n_free];
		*buffer = cap.pool + (size_t)i * BUFFER_BYTES;
		*size = BUFFER_BYTES;
		cap.outstanding++;
	} else {
		*buffer = NULL;
		*size = 0;
	}
	pthread_mutex_unlock(&cap.mu);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	(void)size;
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS)
		dropped = 0;
	pthread_mutex_lock(&cap.mu);
	int i = buffer_index(buffer);
	if (i >= 0) {
		cap.outstanding--;
		if (cap.armed && valid > 0 && cap.n_kept < MAX_BUFFERS) {
			cap.kept[cap.n_kept] = (uint32_t)i;
			cap.kept_valid[cap.n_kept++] = valid;
		} else {
			cap.free_stack[cap.n_free++] = (uint32_t)i;
		}
	}
	if (cap.armed)
		cap.dropped += dropped;
	pthread_mutex_unlock(&cap.mu);
}

static void recycle_kept_locked(void)
{
	for (size_t k = 0; k < cap.n_kept; k++)
		cap.free_stack[cap.n_free++] = cap.kept[k];
	cap.n_kept = 0;
}

static const CUpti_ActivityKind kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
	CUPTI_ACTIVITY_KIND_OVERHEAD,
};
static const char *const kind_names[] = {
	"CONCURRENT_KERNEL", "MEMCPY", "MEMSET", "RUNTIME", "SYNCHRONIZATION", "EXTERNAL_CORRELATION", "OVERHEAD",
};

/* Per-call control of API records (cuptiActivityEnableDriverApi / RuntimeApi)
 * came with CUDA 12.5 (CUPTI API version 23); an older CUPTI records every
 * driver call (the DRIVER kind) and every runtime query. */
#if CUPTI_API_VERSION >= 23
#define FL_CUPTI_PER_CALL 1
#else
#define FL_CUPTI_PER_CALL 0
#endif

/* Driver kernel launches made outside any public API call: asked for when this
 * CUPTI knows the kind (not required; cupti_convert.h shows them as driver calls). */
static const CUpti_ActivityKind optional_kinds[] = {CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API};

#if FL_CUPTI_PER_CALL
/* Runtime calls not recorded at all: cheap queries a library makes around
 * every launch (cuBLAS asks cudaGetDevice and cudaGetLastError on each GEMM),
 * which would cost a record each and show nothing a reader uses. Kineto drops
 * cudaGetDevice, cudaSetDevice, cudaGetLastError and the event create/destroy
 * calls from its traces after recording them (its isBlockListedRuntimeCbid);
 * here they, and the other pure queries below, are switched off at the source
 * (cuptiActivityEnableRuntimeApi), so the op storm's ~360 launches a step pay
 * for the launches only. Every call that launches, copies, sets, synchronises
 * or waits is still recorded. */
static const CUpti_CallbackId quiet_runtime[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceFlags_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
	CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetStreamPriorityRange_v5050,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetPriority_v5050,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetPriority_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetFlags_v5050,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetFlags_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v10010,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_v11030,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_ptsz_v11030,
	CUPTI_RUNTIME_TRACE_CBID_cudaThreadExchangeStreamCaptureMode_v10010,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPoint_v11030,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPoint_ptsz_v11030,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetFuncBySymbol_v11000,
	CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020,
};

/* Driver calls that launch kernels (libraries such as cuBLAS launch through the
 * driver): recorded so their kernels have a launching call too. */
static const CUpti_CallbackId driver_launches[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};
#endif

const char *fl_cupti_version(void)
{
	uint32_t v = 0;
	if (!cap.version[0]) {
		if (cuptiGetVersion(&v) == CUPTI_SUCCESS)
			snprintf(cap.version, sizeof(cap.version), "CUPTI %u", v);
		else
			snprintf(cap.version, sizeof(cap.version), "CUPTI (unknown version)");
	}
	return cap.version;
}

void fl_cupti_stop(void)
{
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		cuptiActivityDisable(kinds[k]);
	for (size_t k = 0; k < sizeof(optional_kinds) / sizeof(optional_kinds[0]); k++)
		cuptiActivityDisable(optional_kinds[k]);
#if FL_CUPTI_PER_CALL
	for (size_t k = 0; k < sizeof(driver_launches) / sizeof(driver_launches[0]); k++)
		cuptiActivityEnableDriverApi(driver_launches[k], 0);
#else
	cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
#endif
	pthread_mutex_lock(&cap.mu);
	cap.armed = 0;
	pthread_mutex_unlock(&cap.mu);
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_lock(&cap.mu);
	cap.started = 0;
	recycle_kept_locked();
	/* memory CUPTI may still write to is never freed */
	if (cap.outstanding == 0)
		free(cap.pool);
	cap.pool = NULL;
	cap.n_buffers = cap.n_free = 0;
	cap.outstanding = 0;
	cap.dropped = 0;
	pthread_mutex_unlock(&cap.mu);
}

enum fl_status fl_cupti_start(const struct fl_cupti_options *o)
{
	enum fl_status st;
	CUptiResult r;
	uint32_t version;
	if ((r = cuptiGetVersion(&version)) != CUPTI_SUCCESS)
		return cupti_fail("cuptiGetVersion", r);
	size_t pool = o && o->pool_bytes ? o->pool_bytes : 0;
	const char *env = getenv("FL_CUPTI_BUFFER_MB");
	if (!pool)
		pool = (size_t)(env && atol(env) > 0 ? atol(env) : 64) << 20;
	size_t n = pool / BUFFER_BYTES;
	if (n < 4)
		n = 4;
	if (n > MAX_BUFFERS)
		n = MAX_BUFFERS;

	pthread_mutex_lock(&cap.mu);
	if (cap.started) {
		pthread_mutex_unlock(&cap.mu);
		return fl_error(FL_EINTERNAL, "cupti: capture started twice");
	}
	/* allocated and touched now: the recorded window never allocates or faults on it */
	cap.pool = aligned_alloc(8, n * (size_t)BUFFER_BYTES);
	if (!cap.pool) {
		pthread_mutex_unlock(&cap.mu);
		return fl_error(FL_ERUNTIME, "cupti: cannot allocate %zu MB of activity buffers", n * (BUFFER_BYTES >> 20));
	}
	memset(cap.pool, 0, n * (size_t)BUFFER_BYTES);
	cap.n_buffers = n;
	for (size_t i = 0; i < n; i++)
		cap.free_stack[i] = (uint32_t)(n - 1 - i);
	cap.n_free = n;
	cap.n_kept = 0;
	cap.outstanding = 0;
	cap.dropped = 0;
	cap.armed = 0;
	cap.started = 1;
	cap.fold_begin = o ? o->fold_begin : NULL;
	cap.fold_end = o ? o->fold_end : NULL;
	pthread_mutex_unlock(&cap.mu);

	/* one clock for host spans and CUPTI records: the tracer's CLOCK_REALTIME ns */
	if ((r = cuptiActivityRegisterTimestampCallback(now_ns)) != CUPTI_SUCCESS) {
		st = cupti_fail("cuptiActivityRegisterTimestampCallback", r);
		goto fail;
	}
	/* API records carry the thread id the tracer's rows show */
	if ((r = cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)) != CUPTI_SUCCESS) {
		st = cupti_fail("cuptiSetThreadIdType", r);
		goto fail;
	}
	if ((r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
		st = cupti_fail("cuptiActivityRegisterCallbacks", r);
		goto fail;
	}
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		if ((r = cuptiActivityEnable(kinds[k])) != CUPTI_SUCCESS) {
			char what[96];
			snprintf(what, sizeof(what), "enabling %s activity", kind_names[k]);
			st = cupti_fail(what, r);
			goto fail;
		}
	}
	for (size_t k = 0; k < sizeof(optional_kinds) / sizeof(optional_kinds[0]); k++)
		(void)cuptiActivityEnable(optional_kinds[k]); /* an older CUPTI may not know it */
#if FL_CUPTI_PER_CALL
	for (size_t k = 0; k < sizeof(driver_launches) / sizeof(driver_launches[0]); k++) {
		if ((r = cuptiActivityEnableDriverApi(driver_launches[k], 1)) != CUPTI_SUCCESS) {
			st = cupti_fail("enabling driver kernel-launch activity", r);
			goto fail;
		}
	}
	/* after the RUNTIME kind, which would otherwise turn them back on */
	/* (a saving, not a need: a CUPTI that refuses one still records it) */
	for (size_t k = 0; k < sizeof(quiet_runtime) / sizeof(quiet_runtime[0]); k++)
		(void)cuptiActivityEnableRuntimeApi(quiet_runtime[k], 0);
#else
	if ((r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER)) != CUPTI_SUCCESS) {
		st = cupti_fail("enabling DRIVER activity", r);
		goto fail;
	}
#endif
	return FL_OK;
fail:
	{
		char saved[512];
		snprintf(saved, sizeof(saved), "%s", fl_error_msg());
		fl_cupti_stop();
		fl_error(st, "%s", saved);
	}
	return st;
}

void fl_cupti_set_device(const struct fl_cupti_device *dev)
{
	cap.device = *dev;
	cap.have_device = 1;
}

void fl_cupti_push(uint64_t id)
{
	cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void fl_cupti_pop(void)
{
	cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL);
}

void fl_cupti_window_begin(void)
{
	size_t dropped = 0;
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped); /* resets the count */
	pthread_mutex_lock(&cap.mu);
	recycle_kept_locked();
	cap.dropped = 0;
	cap.armed = cap.started;
	pthread_mutex_unlock(&cap.mu);
}

enum fl_status fl_cupti_collect(uint64_t t0, uint64_t t1, struct fl_cupti_summary *sum)
{
	size_t dropped = 0;
	CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (r != CUPTI_SUCCESS)
		return cupti_fail("cuptiActivityFlushAll", r);
	if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS)
		dropped = 0;
	pthread_mutex_lock(&cap.mu);
	cap.armed = 0;
	size_t nk = cap.n_kept;
	uint8_t *bufs[MAX_BUFFERS];
	size_t valid[MAX_BUFFERS];
	for (size_t k = 0; k < nk; k++) {
		bufs[k] = cap.pool + (size_t)cap.kept[k] * BUFFER_BYTES;
		valid[k] = cap.kept_valid[k];
	}
	uint64_t total_dropped = cap.dropped + dropped;
	pthread_mutex_unlock(&cap.mu);

	struct fl_cupti_input in = {
		.buffers = bufs,
		.valid = valid,
		.n_buffers = nk,
		.t0 = t0,
		.t1 = t1,
		.dropped = total_dropped,
		.devices = cap.have_device ? &cap.device : NULL,
		.n_devices = cap.have_device ? 1 : 0,
		.default_device = cap.have_device ? cap.device.id : 0,
		.pid = (int)getpid(),
		.fold_begin = cap.fold_begin,
		.fold_end = cap.fold_end,
	};
	enum fl_status st = fl_cupti_convert(&in, sum);
	pthread_mutex_lock(&cap.mu);
	recycle_kept_locked();
	cap.dropped = 0;
	pthread_mutex_unlock(&cap.mu);
	return st;
}
