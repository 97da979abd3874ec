/* backend_cuda.c — the workload on a real GPU, captured by CUPTI.
 *
 * Streams: compute is the legacy default stream (the one PyTorch launches on,
 * "stream 7" in its traces); comm is a non-blocking stream, so collectives
 * overlap compute as NCCL's do. Kernels are found by name in a table of CUDA
 * implementations (cuda_kernels.cu); the three GEMMs run through cuBLAS; an
 * unknown kernel is refused (the run then fails with its name). Copies are
 * cudaMemcpyAsync (pageable or pinned host memory, as given); stream_wait
 * records an event on one stream and makes the other wait for it. Device
 * memory comes from a caching allocator (exact sizes, reused in stream order),
 * because cudaMalloc/cudaFree would synchronise the device on every op.
 * Collectives use NCCL and need one GPU per rank.
 *
 * Capture: CUPTI starts before the first CUDA call (capture/cupti_capture.h);
 * each device call is bracketed by the external correlation id of the op open
 * on the calling thread, so every kernel links to its op. From a successful
 * open on, a tracer tick is a CLOCK_REALTIME nanosecond — the clock CUPTI is
 * told to stamp with — so host spans and device records share one clock with
 * no mapping between them. FL_CUPTI=0 runs without any capture (to measure
 * what capture costs); the trace then has host rows only.
 * FL_CUDA_CLOCK_FACTOR=F (> 1) throttles the device from the start, as the
 * throttled_rank fault does one rank's, and reports the recorded window's
 * real and added kernel time on stderr: a check of the throttle emulation on
 * one GPU (tests/gpu-check.sh).
 *
 * A clock factor f > 1 emulates a throttled device: a stamp kernel before each
 * compute kernel notes the device clock once the host has enqueued the kernel
 * and the stretch after it (a gate in host-mapped memory, so launch gaps of a
 * starved stream are not counted, before the kernel or between it and its
 * stretch), and a stretch kernel after it spins until the kernel has taken f ×
 * its own device time, fixed cost included (from its start, the stamp plus
 * c1, to its end, the stretch's start less g2: both measured around an empty
 * kernel that notes its own start and end); the capture folds both into the
 * stretched kernel.
 *
 * cuBLAS and NCCL are loaded with dlopen when the backend opens (cuda_libs.c).
 *
 * Device errors are sticky: the first is reported once on stderr, later device
 * calls are skipped, and the run fails when the trace is collected.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/clock.h"
#include "capture/tracer.h"
#include "runtime/backend_cuda_internal.h"
#include "runtime/comm.h"

enum { IMPL_GEMM_NN = -1, IMPL_GEMM_TN = -2, IMPL_GEMM_NT = -3, IMPL_UNKNOWN = -100 };

/* ---- errors ---- */

void fl_cuda_error(struct cuda_dev *d, enum fl_status st, const char *fmt, ...)
{
	if (d->error)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->error_msg, sizeof(d->error_msg), fmt, ap);
	va_end(ap);
	d->error = st;
	fprintf(stderr, "faultline: %s\n", d->error_msg);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* A CUDA runtime error, converted at the boundary with the call and file:line. */
static int cuda_check(struct cuda_dev *d, cudaError_t e, const char *call, const char *file, int line)
{
	if (e == cudaSuccess)
		return 1;
	fl_cuda_error(d, FL_ERUNTIME, "cuda: %s failed (%s:%d): %s (%s)", call, base_name(file), line,
		     cudaGetErrorString(e), cudaGetErrorName(e));
	return 0;
}
#define CUDA_OK(d, call) cuda_check((d), (call), #call, __FILE__, __LINE__)

/* ---- helpers ---- */

static cudaStream_t stream_of(struct cuda_dev *d, int stream)
{
	return stream == FL_STREAM_COMM ? d->comm : d->compute;
}

/* Bracket a device call with the external id of the op open on this thread. */
static inline int ext_push(const struct cuda_dev *d)
{
	if (!d->capture)
		return 0;
	uint32_t slot = fl_span_innermost();
	if (slot == FL_SLOT_NONE)
		return 0;
	fl_cupti_push(fl_cupti_external_id(fl_tls_tbuf->tid, slot));
	return 1;
}

static inline void ext_pop(int pushed)
{
	if (pushed)
		fl_cupti_pop();
}

static int impl_of(struct cuda_dev *d, const struct fl_kernel *k)
{
	for (size_t i = 0; i < d->n_cache; i++)
		if (d->cache[i].k == k)
			return d->cache[i].impl;
	int impl = IMPL_UNKNOWN;
	if (strcmp(k->name, "gemm_kernel") == 0)
		impl = IMPL_GEMM_NN;
	else if (strcmp(k->name, "gemm_tn_kernel") == 0)
		impl = IMPL_GEMM_TN;
	else if (strcmp(k->name, "gemm_nt_kernel") == 0)
		impl = IMPL_GEMM_NT;
	for (int i = 0; impl == IMPL_UNKNOWN && fl_cuda_kernels[i].name; i++)
		if (strcmp(fl_cuda_kernels[i].name, k->name) == 0)
			impl = i;
	if (d->n_cache < sizeof(d->cache) / sizeof(d->cache[0]))
		d->cache[d->n_cache++] = (struct kernel_cache){k, impl};
	return impl;
}

static void gemm(struct cuda_dev *d, int impl, const struct fl_kernel_args *a)
{
	/* row-major tensors are column-major transposes: out^T = op(b)^T · op(a)^T */
	const float one = 1.0f, zero = 0.0f;
	const int M = a->m, N = a->n, K = a->k;
	cublasStatus_t s;
	switch (impl) {
	case IMPL_GEMM_NN: /* out (M×N) = a (M×K) · b (K×N) */
		s = d->blas.sgemm(d->blas.handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, a->b, N, a->a, K, &zero, a->out, N);
		break;
	case IMPL_GEMM_TN: /* out (K×N) = aᵀ · b, a M×K, b M×N */
		s = d->blas.sgemm(d->blas.handle, CUBLAS_OP_N, CUBLAS_OP_T, N, K, M, &one, a->b, N, a->a, K, &zero, a->out, N);
		break;
	default: /* out (M×N) = a · bᵀ, a M×K, b N×K */
		s = d->blas.sgemm(d->blas.handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, a->b, K, a->a, K, &zero, a->out, N);
		break;
	}
	if (s != CUBLAS_STATUS_SUCCESS)
		fl_cuda_error(d, FL_ERUNTIME, "cuda: cublasSgemm failed: %s", d->blas.status_string(s));
}

static void run_kernel(struct cuda_dev *d, int impl, const struct fl_kernel_args *a, cudaStream_t s)
{
	const struct fl_cuda_kernel *k = &fl_cuda_kernels[impl];
	float *out = a->out;
	const float *x = a->a, *y = a->b;
	long long n = (long long)a->m * (long long)a->n;
	float scalar = a->scalar;
	void *args[] = {&out, &x, &y, &n, &scalar};
	dim3 grid = {1, 1, 1}, block = {1, 1, 1};
	if (k->shape == FL_CUDA_ELEMENTWISE) {
		long long g = (n + 255) / 256;
		grid.x = (unsigned)(g < 1 ? 1 : g > 8192 ? 8192 : g);
		block.x = 256;
	} else if (k->shape == FL_CUDA_REDUCE) {
		block.x = FL_CUDA_REDUCE_THREADS;
	}
	CUDA_OK(d, cudaLaunchKernel(k->fn, grid, block, args, 0, s));
}

/* ---- throttled device: stamp, gate, stretch (cuda_kernels.h) ---- */

static void stamp_launch(struct cuda_dev *d, cudaStream_t s)
{
	unsigned long long seq = ++d->stamp_seq;
	const struct fl_clock_counters *c = d->counters;
	void *sa[] = {&d->stamp, &c, &seq};
	CUDA_OK(d, cudaLaunchKernel(fl_cuda_clock_stamp, (dim3){1, 1, 1}, (dim3){1, 1, 1}, sa, 0, s));
}

/* The kernels after the last stamp are enqueued: it may note the clock. */
static void gate_open(struct cuda_dev *d)
{
	__atomic_store_n(&d->counters->gate, d->stamp_seq, __ATOMIC_RELEASE);
}

static void stretch_launch(struct cuda_dev *d, float factor, cudaStream_t s)
{
	const unsigned long long *stamp = d->stamp;
	struct fl_clock_counters *c = d->counters;
	void *ta[] = {&stamp, &factor, &d->c1_ns, &d->g2_ns, &c};
	CUDA_OK(d, cudaLaunchKernel(fl_cuda_clock_stretch, (dim3){1, 1, 1}, (dim3){1, 1, 1}, ta, 0, s));
}

/* Where work starts after its stamp (c1) and how long after its end the
 * stretch starts (g2), around an empty kernel that notes its own start and
 * end: the try with the shortest stamp-to-stretch time of a few. Runs when
 * the fault is set up, outside any op and before the recorded window. */
static int measure_baseline(struct cuda_dev *d)
{
	unsigned long long best = ~0ull;
	struct fl_clock_counters *c = d->counters;
	d->c1_ns = d->g2_ns = 0;
	for (int i = 0; i < 16 && !d->error; i++) {
		void *ea[] = {&c};
		stamp_launch(d, d->compute);
		CUDA_OK(d, cudaLaunchKernel(fl_cuda_clock_empty, (dim3){1, 1, 1}, (dim3){1, 1, 1}, ea, 0, d->compute));
		stretch_launch(d, 1.0f, d->compute);
		gate_open(d);
		if (!CUDA_OK(d, cudaStreamSynchronize(d->compute)))
			break;
		volatile struct fl_clock_counters *vc = c;
		unsigned long long st = vc->probe[0], s1 = vc->probe[1], e0 = vc->probe[2], e1 = vc->probe[3];
		if (!(st <= e0 && e0 <= e1 && e1 <= s1))
			continue; /* a clock that went backwards: not a reading */
		if (s1 - st < best) {
			best = s1 - st;
			d->c1_ns = e0 - st;
			d->g2_ns = s1 - e1;
		}
	}
	if (d->error)
		return 0;
	d->counters->kernel_ns = d->counters->extra_ns = 0;
	d->base = (struct fl_clock_counters){0};
	return 1;
}

/* ---- the interface ---- */

static void cuda_launch(struct fl_backend *be, const struct fl_kernel *k, const struct fl_kernel_args *a, int stream)
{
	struct cuda_dev *d = be->state;
	if (d->error)
		return;
	int impl = impl_of(d, k);
	if (impl == IMPL_UNKNOWN) {
		fl_cuda_error(d, FL_EINTERNAL, "cuda: kernel '%s' has no CUDA implementation (see runtime/cuda_kernels.cu)",
			     k->name);
		return;
	}
	if (be->launch_work) /* host work before the launch: checks, descriptor */
		be->launch_work(be->launch_work_arg, k, a);
	cudaStream_t s = stream_of(d, stream);
	int stretch = d->clock_factor > 1.0f && stream != FL_STREAM_COMM;
	int pushed = ext_push(d);
	if (stretch)
		stamp_launch(d, s);
	if (impl < 0)
		gemm(d, impl, a);
	else
		run_kernel(d, impl, a, s);
	if (stretch) {
		/* the gate opens once the stretch is enqueued too: kernel and stretch
		 * then run back to back, and the host's time to launch the stretch
		 * (which a tiny kernel finishes well inside) is not a gap in the
		 * folded kernel */
		stretch_launch(d, d->clock_factor, s);
		gate_open(d);
	}
	ext_pop(pushed);
	d->st.kernels++;
}

static void cuda_copy(struct fl_backend *be, void *dst, const void *src, size_t bytes, enum fl_copy_kind kind,
		      int stream)
{
	struct cuda_dev *d = be->state;
	if (d->error)
		return;
	static const enum cudaMemcpyKind kinds[] = {
		[FL_COPY_H2D] = cudaMemcpyHostToDevice, [FL_COPY_D2H] = cudaMemcpyDeviceToHost,
		[FL_COPY_D2D] = cudaMemcpyDeviceToDevice};
	int pushed = ext_push(d);
	CUDA_OK(d, cudaMemcpyAsync(dst, src, bytes, kinds[kind], stream_of(d, stream)));
	ext_pop(pushed);
	d->st.copies++;
}

/* cudaMemcpy: synchronous, on the legacy default stream (the compute stream),
 * so it runs after the work queued there and the host waits for it; from
 * pageable memory the driver stages the bytes through its own pinned buffer. */
static void cuda_copy_sync(struct fl_backend *be, void *dst, const void *src, size_t bytes, enum fl_copy_kind kind,
			   int stream)
{
	struct cuda_dev *d = be->state;
	(void)stream;
	if (d->error)
		return;
	static const enum cudaMemcpyKind kinds[] = {
		[FL_COPY_H2D] = cudaMemcpyHostToDevice, [FL_COPY_D2H] = cudaMemcpyDeviceToHost,
		[FL_COPY_D2D] = cudaMemcpyDeviceToDevice};
	int pushed = ext_push(d);
	CUDA_OK(d, cudaMemcpy(dst, src, bytes, kinds[kind]));
	ext_pop(pushed);
	d->st.copies++;
	d->st.syncs++;
}

/* cudaMalloc and cudaFree outside the caching allocator (cudaFree waits for
 * the device). */
static void *cuda_alloc_uncached(struct fl_backend *be, size_t bytes)
{
	struct cuda_dev *d = be->state;
	void *p = NULL;
	if (d->error)
		return NULL;
	int pushed = ext_push(d);
	int ok = CUDA_OK(d, cudaMalloc(&p, bytes ? bytes : 1));
	ext_pop(pushed);
	return ok ? p : NULL;
}

static void cuda_free_uncached(struct fl_backend *be, void *ptr, size_t bytes)
{
	struct cuda_dev *d = be->state;
	(void)bytes;
	if (!ptr)
		return;
	int pushed = ext_push(d);
	CUDA_OK(d, cudaFree(ptr));
	ext_pop(pushed);
	d->st.syncs++;
}

static void cuda_stream_wait(struct fl_backend *be, int wait_stream, int on_stream)
{
	struct cuda_dev *d = be->state;
	if (d->error || wait_stream == on_stream)
		return;
	cudaEvent_t ev = d->events[d->next_event++ % N_EVENTS];
	int pushed = ext_push(d);
	if (CUDA_OK(d, cudaEventRecord(ev, stream_of(d, on_stream))))
		CUDA_OK(d, cudaStreamWaitEvent(stream_of(d, wait_stream), ev, 0));
	ext_pop(pushed);
}

static void cuda_stream_synchronize(struct fl_backend *be, int stream)
{
	struct cuda_dev *d = be->state;
	if (d->error)
		return;
	int pushed = ext_push(d);
	CUDA_OK(d, cudaStreamSynchronize(stream_of(d, stream)));
	ext_pop(pushed);
	d->st.syncs++;
}

static void cuda_synchronize(struct fl_backend *be)
{
	struct cuda_dev *d = be->state;
	if (d->error)
		return;
	int pushed = ext_push(d);
	CUDA_OK(d, cudaDeviceSynchronize());
	ext_pop(pushed);
}

static void cuda_allreduce(struct fl_backend *be, float *buf, size_t n, int stream)
{
	struct cuda_dev *d = be->state;
	(void)stream; /* NCCL runs on the comm stream */
	if (d->error)
		return;
	if (!d->nccl) {
		fl_cuda_error(d, FL_ERUNTIME, "cuda: a collective needs several ranks with one GPU each (NCCL); this run has one rank");
		return;
	}
	int pushed = ext_push(d);
	fl_cuda_nccl_allreduce(d, buf, n);
	ext_pop(pushed);
	d->st.collectives++;
}

/* Point to point on the comm stream (NCCL's send/recv): the pipeline's
 * activations and gradients between neighbouring stages. */
static void cuda_sendrecv(struct fl_backend *be, float *buf, size_t n, int peer, int send, int tag, int stream)
{
	struct cuda_dev *d = be->state;
	(void)tag;    /* NCCL orders each direction by issue order */
	(void)stream; /* NCCL runs on the comm stream */
	if (d->error)
		return;
	if (!d->nccl) {
		fl_cuda_error(d, FL_ERUNTIME, "cuda: a transfer to another rank needs several ranks with one GPU each (NCCL); "
					     "this run has one rank");
		return;
	}
	int pushed = ext_push(d);
	fl_cuda_nccl_sendrecv(d, buf, n, peer, send);
	ext_pop(pushed);
	d->st.collectives++;
}

/* Device memory returns to the caching allocator, which reuses it in the
 * compute stream's order; host memory handed to an asynchronous copy was
 * staged before the copy returned (pageable) — so freeing now is safe. */
static void cuda_release(struct fl_backend *be, void (*fn)(void *ctx), void *ctx, int stream)
{
	(void)be;
	(void)stream;
	fn(ctx);
}

static enum fl_status cuda_set_clock_factor(struct fl_backend *be, double factor)
{
	struct cuda_dev *d = be->state;
	if (!(factor >= 1.0))
		return fl_error(FL_EINPUT, "cuda: clock factor %g must be >= 1", factor);
	if (factor > 1.0 && !d->stamp) {
		void *host = NULL;
		if (!CUDA_OK(d, cudaMalloc((void **)&d->stamp, sizeof(*d->stamp))) ||
		    !CUDA_OK(d, cudaHostAlloc(&host, sizeof(*d->counters), cudaHostAllocMapped)))
			return fl_error(d->error, "%s", d->error_msg);
		d->counters = host;
		memset(d->counters, 0, sizeof(*d->counters));
		if (!measure_baseline(d))
			return fl_error(d->error, "%s", d->error_msg);
	}
	d->clock_factor = (float)factor;
	return FL_OK;
}

static void cuda_stats(struct fl_backend *be, struct fl_device_stats *out, int reset)
{
	struct cuda_dev *d = be->state;
	*out = d->st;
	if (d->counters) { /* throttled: the device's own account of real and added time */
		volatile struct fl_clock_counters *c = d->counters;
		struct fl_clock_counters now = {.kernel_ns = c->kernel_ns, .extra_ns = c->extra_ns};
		out->kernel_ms = (double)(now.kernel_ns - d->base.kernel_ns) / 1e6;
		out->stretched_ms = (double)(now.extra_ns - d->base.extra_ns) / 1e6;
		if (reset)
			d->base = now;
	} else {
		out->kernel_ms = d->last.kernel_ms; /* from the capture, once collected */
		out->stretched_ms = 0;
	}
	if (reset) {
		memset(&d->st, 0, sizeof(d->st));
		memset(&d->last, 0, sizeof(d->last));
	}
}

static void *cuda_alloc(struct fl_backend *be, size_t bytes)
{
	struct cuda_dev *d = be->state;
	struct size_class *c = NULL;
	for (size_t i = 0; i < d->n_classes && !c; i++)
		if (d->classes[i].bytes == bytes)
			c = &d->classes[i];
	if (c && c->n)
		return c->free[--c->n];
	if (!c && d->n_classes < sizeof(d->classes) / sizeof(d->classes[0])) {
		c = &d->classes[d->n_classes++];
		c->bytes = bytes;
	}
	if (d->n_allocs == d->cap_allocs) {
		size_t nc = d->cap_allocs ? d->cap_allocs * 2 : 256;
		void **na = realloc(d->allocs, nc * sizeof(*na));
		if (!na)
			return NULL;
		d->allocs = na;
		d->cap_allocs = nc;
	}
	void *p = NULL;
	int pushed = ext_push(d);
	int ok = CUDA_OK(d, cudaMalloc(&p, bytes ? bytes : 1));
	ext_pop(pushed);
	if (!ok)
		return NULL;
	d->allocs[d->n_allocs++] = p;
	return p;
}

static void cuda_free(struct fl_backend *be, void *ptr, size_t bytes)
{
	struct cuda_dev *d = be->state;
	for (size_t i = 0; i < d->n_classes; i++) {
		struct size_class *c = &d->classes[i];
		if (c->bytes != bytes)
			continue;
		if (c->n == c->cap) {
			size_t nc = c->cap ? c->cap * 2 : 16;
			void **nf = realloc(c->free, nc * sizeof(*nf));
			if (!nf)
				return; /* kept until close */
			c->free = nf;
			c->cap = nc;
		}
		c->free[c->n++] = ptr;
		return;
	}
	/* a size class that did not fit the table: the block stays allocated until close */
}

static void cuda_zero(struct fl_backend *be, void *ptr, size_t bytes, int stream)
{
	struct cuda_dev *d = be->state;
	if (d->error)
		return;
	int pushed = ext_push(d);
	CUDA_OK(d, cudaMemsetAsync(ptr, 0, bytes, stream_of(d, stream)));
	ext_pop(pushed);
}

static const char *cuda_device_properties(struct fl_backend *be)
{
	struct cuda_dev *d = be->state;
	return d->props;
}

/* ---- capture source: the window's CUPTI records join the tracer's buffers ---- */

static void source_window_begin(void *ctx)
{
	struct cuda_dev *d = ctx;
	if (d->counters && !d->error && CUDA_OK(d, cudaDeviceSynchronize())) {
		volatile struct fl_clock_counters *c = d->counters;
		d->win = (struct fl_clock_counters){.kernel_ns = c->kernel_ns, .extra_ns = c->extra_ns};
	}
	if (d->capture)
		fl_cupti_window_begin();
}

static enum fl_status source_collect(void *ctx, uint64_t t0, uint64_t t1)
{
	struct cuda_dev *d = ctx;
	if (!d->error)
		CUDA_OK(d, cudaDeviceSynchronize()); /* errors of asynchronous work surface here */
	if (d->error)
		return fl_error(d->error, "%s", d->error_msg);
	if (d->env_factor) { /* what tests/gpu-check.sh compares with the trace's kernels */
		volatile struct fl_clock_counters *c = d->counters;
		fprintf(stderr, "faultline: cuda: FL_CUDA_CLOCK_FACTOR %.3f, recorded window: kernels %.3f ms, stretched by %.3f ms "
			"(stamp to kernel %.3f us, kernel to stretch %.3f us)\n", d->clock_factor,
			(double)(c->kernel_ns - d->win.kernel_ns) / 1e6, (double)(c->extra_ns - d->win.extra_ns) / 1e6,
			(double)d->c1_ns / 1e3, (double)d->g2_ns / 1e3);
	}
	if (!d->capture)
		return FL_OK;
	return fl_cupti_collect(t0, t1, &d->last);
}

/* ---- open / close ---- */

static void json_name(char *out, size_t n, const char *s)
{
	size_t k = 0;
	for (; *s && k + 2 < n; s++) {
		if (*s == '"' || *s == '\\')
			out[k++] = '\\';
		out[k++] = (*s >= 0x20) ? *s : ' ';
	}
	out[k] = '\0';
}

/* Why this machine has no usable GPU, in words (called when CUPTI or CUDA refused). */
static enum fl_status no_device(const char *cupti_why)
{
	int driver = 0, n = 0;
	cudaDriverGetVersion(&driver);
	cudaError_t e = cudaGetDeviceCount(&n);
	if (driver == 0)
		return fl_error(FL_ERUNTIME, "cuda: no usable GPU: no NVIDIA driver is installed (libcuda.so.1 cannot be "
				"loaded); cudaGetDeviceCount: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
	if (e != cudaSuccess)
		return fl_error(FL_ERUNTIME, "cuda: no usable GPU: cudaGetDeviceCount: %s (%s; driver %d.%d)",
				cudaGetErrorString(e), cudaGetErrorName(e), driver / 1000, driver % 1000 / 10);
	if (n == 0)
		return fl_error(FL_ERUNTIME, "cuda: no usable GPU: the driver reports no CUDA device");
	return fl_error(FL_ERUNTIME, "cuda: the GPU cannot be traced: %s (another profiler, such as nsys, may hold "
			"CUPTI; FL_CUPTI=0 runs without capture)", cupti_why ? cupti_why : "CUPTI refused");
}

static void cuda_close(struct fl_backend *be);

static enum fl_status cuda_open(struct fl_backend *be, const struct fl_backend_config *cfg)
{
	enum fl_status st = FL_OK;
	struct cuda_dev *d = calloc(1, sizeof(*d));
	if (!d)
		return fl_error(FL_ERUNTIME, "cuda: out of memory");
	be->cfg = *cfg;
	be->state = d;
	d->clock_factor = 1.0f;
	const char *env = getenv("FL_CUPTI");
	int want_capture = !(env && strcmp(env, "0") == 0);
	int local_ok = 1;

	/* CUPTI first: kinds are enabled before the first CUDA call */
	if (want_capture) {
		struct fl_cupti_options o = {.fold_begin = FL_CUDA_CLOCK_STAMP_NAME, .fold_end = FL_CUDA_CLOCK_STRETCH_NAME};
		if ((st = fl_cupti_start(&o))) {
			char why[512];
			snprintf(why, sizeof(why), "%s", fl_error_msg());
			st = no_device(why);
			local_ok = 0;
		} else {
			d->capture = 1;
		}
	}
	int n = 0;
	if (local_ok) {
		cudaError_t e = cudaGetDeviceCount(&n);
		if (e != cudaSuccess || n == 0) {
			st = no_device(NULL);
			local_ok = 0;
		}
	}
	if (local_ok) {
		/* one GPU per rank (the node-local rank under Open MPI) */
		const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
		d->device = cfg->world_size > 1 ? (lr ? atoi(lr) : cfg->rank) : cfg->device;
		if (d->device >= n) {
			st = fl_error(FL_ERUNTIME, "cuda: rank %d needs GPU %d, but this machine has %d GPU%s (NCCL needs one GPU per rank)",
				      cfg->rank, d->device, n, n == 1 ? "" : "s");
			local_ok = 0;
		}
	}
	if (cfg->world_size > 1) {
		/* every rank votes, so a rank without a GPU cannot leave the others waiting */
		float ok = local_ok ? 1.0f : 0.0f;
		char saved[512];
		snprintf(saved, sizeof(saved), "%s", fl_error_msg());
		enum fl_status cst = fl_comm_allreduce_sum(&ok, 1);
		if (cst) {
			st = cst;
			goto fail;
		}
		if (local_ok && ok < (float)cfg->world_size) {
			st = fl_error(FL_ERUNTIME, "cuda: only %d of %d ranks have a usable GPU", (int)ok, cfg->world_size);
			goto fail;
		}
		if (!local_ok)
			fl_error(st, "%s", saved);
	}
	if (!local_ok)
		goto fail;

	struct cudaDeviceProp p;
	if (!CUDA_OK(d, cudaSetDevice(d->device)) || !CUDA_OK(d, cudaFree(NULL)) ||
	    !CUDA_OK(d, cudaGetDeviceProperties(&p, d->device)) ||
	    !CUDA_OK(d, cudaStreamCreateWithFlags(&d->comm, cudaStreamNonBlocking))) {
		st = fl_error(d->error, "%s", d->error_msg);
		goto fail;
	}
	d->compute = 0; /* the legacy default stream */
	for (; d->n_events < N_EVENTS; d->n_events++)
		if (!CUDA_OK(d, cudaEventCreateWithFlags(&d->events[d->n_events], cudaEventDisableTiming))) {
			st = fl_error(d->error, "%s", d->error_msg);
			goto fail;
		}
	d->cdev = (struct fl_cupti_device){
		.id = d->device,
		.sms = p.multiProcessorCount,
		.warp_size = p.warpSize,
		.max_threads_per_sm = p.maxThreadsPerMultiProcessor,
		.max_blocks_per_sm = p.maxBlocksPerMultiProcessor,
		.regs_per_sm = p.regsPerMultiprocessor,
		.smem_per_sm = (int)p.sharedMemPerMultiprocessor,
		.reserved_smem_per_block = (int)p.reservedSharedMemPerBlock,
	};
	if (d->capture)
		fl_cupti_set_device(&d->cdev);
	char name[512];
	json_name(name, sizeof(name), p.name);
	snprintf(d->props, sizeof(d->props),
		 "[{\"id\": %d, \"name\": \"%s\", \"totalGlobalMem\": %zu, \"computeMajor\": %d, \"computeMinor\": %d, "
		 "\"maxThreadsPerBlock\": %d, \"maxThreadsPerMultiprocessor\": %d, \"regsPerBlock\": %d, "
		 "\"regsPerMultiprocessor\": %d, \"warpSize\": %d, \"sharedMemPerBlock\": %zu, "
		 "\"sharedMemPerMultiprocessor\": %zu, \"numSms\": %d, \"sharedMemPerBlockOptin\": %zu}]",
		 d->device, name, p.totalGlobalMem, p.major, p.minor, p.maxThreadsPerBlock, p.maxThreadsPerMultiProcessor,
		 p.regsPerBlock, p.regsPerMultiprocessor, p.warpSize, p.sharedMemPerBlock, p.sharedMemPerMultiprocessor,
		 p.multiProcessorCount, p.sharedMemPerBlockOptin);
	if ((st = fl_cuda_blas_open(d)))
		goto fail;
	if (cfg->world_size > 1 && (st = fl_cuda_nccl_open(d, cfg->rank, cfg->world_size)))
		goto fail;

	/* FL_CUDA_CLOCK_FACTOR=F throttles this process's device as the
	 * throttled_rank fault does, so the emulation can be checked on one GPU */
	const char *cf = getenv("FL_CUDA_CLOCK_FACTOR");
	if (cf && cf[0]) {
		char *end = NULL;
		double f = strtod(cf, &end);
		if (!end || *end || !(f >= 1.0)) {
			st = fl_error(FL_EINPUT, "cuda: FL_CUDA_CLOCK_FACTOR '%s' is not a number >= 1", cf);
			goto fail;
		}
		if ((st = cuda_set_clock_factor(be, f)))
			goto fail;
		d->env_factor = f > 1.0;
	}

	struct fl_capture_source src = {.window_begin = source_window_begin, .collect = source_collect, .ctx = d};
	fl_tracer_set_source(&src);
	fl_clock_use_realtime(); /* a tick is now the nanosecond CUPTI stamps with */
	return FL_OK;
fail: {
	char saved[512];
	snprintf(saved, sizeof(saved), "%s", fl_error_msg());
	cuda_close(be);
	return fl_error(st ? st : FL_ERUNTIME, "%s", saved);
}
}

static void cuda_close(struct fl_backend *be)
{
	struct cuda_dev *d = be->state;
	if (!d)
		return;
	fl_tracer_set_source(NULL);
	if (d->compute || d->comm || d->blas.handle)
		cudaDeviceSynchronize();
	fl_cuda_nccl_close(d);
	fl_cuda_blas_close(d);
	for (size_t i = 0; i < d->n_allocs; i++)
		cudaFree(d->allocs[i]);
	free(d->allocs);
	for (size_t i = 0; i < d->n_classes; i++)
		free(d->classes[i].free);
	if (d->stamp)
		cudaFree(d->stamp);
	if (d->counters)
		cudaFreeHost(d->counters);
	for (int i = 0; i < d->n_events; i++)
		cudaEventDestroy(d->events[i]);
	if (d->comm)
		cudaStreamDestroy(d->comm);
	if (d->capture)
		fl_cupti_stop();
	free(d);
	be->state = NULL;
}

const struct fl_backend_ops fl_backend_cuda = {
	.name = "cuda",
	.summary = "a real GPU: CUDA kernels, cuBLAS GEMMs, NCCL collectives, captured by CUPTI",
	.asynchronous = 1,
	.open = cuda_open,
	.launch = cuda_launch,
	.copy = cuda_copy,
	.copy_sync = cuda_copy_sync,
	.alloc_uncached = cuda_alloc_uncached,
	.free_uncached = cuda_free_uncached,
	.stream_wait = cuda_stream_wait,
	.stream_synchronize = cuda_stream_synchronize,
	.synchronize = cuda_synchronize,
	.allreduce = cuda_allreduce,
	.sendrecv = cuda_sendrecv,
	.release = cuda_release,
	.set_clock_factor = cuda_set_clock_factor,
	.stats = cuda_stats,
	.alloc = cuda_alloc,
	.free = cuda_free,
	.zero = cuda_zero,
	.device_properties = cuda_device_properties,
	.close = cuda_close,
};
