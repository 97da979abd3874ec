/* device.h — the device interface the workload and the faults are written against.
 *
 * A backend runs kernels, copies, memsets, stream events, syncs and collectives.
 * `cpu` runs each kernel inline on the calling thread (a CPU-only capture);
 * `emu` queues them on per-stream FIFO queues served by worker threads that
 * really execute them (an emulated asynchronous device); `cuda` runs them on a
 * GPU (runtime/backend_cuda.c). Backends are listed in one table
 * (runtime/backends.c). Optional hooks may be NULL; the fl_dev_* helpers
 * below handle that.
 *
 * Memory: device buffers are host memory on cpu and emu (alloc is NULL); on
 * cuda they are device memory from the backend's alloc. A copy really moves
 * the bytes. On asynchronous backends a buffer may be released only in stream
 * order (fl_dev_release), after the work already queued has used it.
 */
#ifndef FL_DEVICE_H
#define FL_DEVICE_H

#include <stddef.h>

#include "common/status.h"

/* Stream ids as the trace shows them (PyTorch's default stream is 7). */
#define FL_STREAM_COMPUTE 7
#define FL_STREAM_COMM 13

struct fl_kernel_args {
	float *out;
	const float *a, *b;
	int m, n, k;     /* shapes: out is m×n; a is m×k; b is k×n */
	float scalar;
	double *result;  /* reductions write here; normal_ keeps its RNG state here */
};

struct fl_kernel {
	const char *name;
	void (*run)(const struct fl_kernel_args *args);
};

enum fl_copy_kind { FL_COPY_H2D, FL_COPY_D2H, FL_COPY_D2D };

/* What a backend is opened with. */
struct fl_backend_config {
	int rank, world_size;
	int device;             /* device ordinal (0 on emu) */
};

struct fl_device_stats {
	double kernel_ms;       /* real execution time of compute kernels */
	double stretched_ms;    /* extra time added by a clock factor */
	unsigned long kernels, copies, syncs, collectives;
	/* an emulated link (set_link_gbps): the time collectives spent on the wire
	 * once every rank had joined, and the bytes each rank sent over it */
	double link_ms, link_bytes;
	/* real execution time of the compute kernels a clock factor > 1 stretched */
	double slowed_ms;
};

struct fl_backend;

struct fl_backend_ops {
	const char *name;
	const char *summary;
	int asynchronous; /* launch returns before the kernel has run */
	/* called once before the first step; may refuse (no device, no driver) */
	enum fl_status (*open)(struct fl_backend *be, const struct fl_backend_config *cfg);
	/* the core the device computes on, when the backend pinned it there (-1:
	 * wherever the scheduler puts it), how many allowed cores it left out as
	 * busy with other processes, and how many were quiet when it chose (NULL:
	 * the device has no core of its own) */
	int (*compute_core)(const struct fl_backend *be, int *busy_left_out, int *quiet_cores);
	/* called as the host starts step `step` (NULL: the device keeps no steps) */
	void (*mark_step)(struct fl_backend *be, long step);
	/* the fastest metered GEMM of meter `kind` (fl_gemm_macs) in `step`, in ns
	 * of real work per multiply-add, 0 when it ran none (NULL: not
	 * measured); read once the device drained */
	double (*gemm_speed)(const struct fl_backend *be, int kind, long step);
	/* called to run one kernel on a stream */
	void (*launch)(struct fl_backend *be, const struct fl_kernel *k, const struct fl_kernel_args *a, int stream);
	/* called to copy bytes (asynchronously on async backends) */
	void (*copy)(struct fl_backend *be, void *dst, const void *src, size_t bytes, enum fl_copy_kind kind, int stream);
	/* called to make `wait_stream` wait for all work queued so far on `on_stream` */
	void (*stream_wait)(struct fl_backend *be, int wait_stream, int on_stream);
	/* called when the host needs a stream's queued work finished */
	void (*stream_synchronize)(struct fl_backend *be, int stream);
	/* called when the host needs every queued kernel finished */
	void (*synchronize)(struct fl_backend *be);
	/* called to sum a float buffer across ranks on `stream` (NULL: single rank only) */
	void (*allreduce)(struct fl_backend *be, float *buf, size_t n, int stream);
	/* called to send n floats to rank `peer` (send 1) or receive them from it
	 * (send 0) on `stream`, point to point, as NCCL's send/recv (NULL: none);
	 * `tag` keeps two directions between the same ranks apart */
	void (*sendrecv)(struct fl_backend *be, float *buf, size_t n, int peer, int send, int tag, int stream);
	/* called to exchange rows between all ranks on `stream`, as an all-to-all
	 * (NCCL's is ncclSend/ncclRecv to every peer in one group, one SendRecv
	 * kernel): send_counts[p] floats of `send`, packed in rank order, go to rank
	 * p; recv_counts[p] floats from rank p land in `recv`, packed in rank order.
	 * The count arrays (world_size entries each) are read when the stream runs
	 * the call, so they stay unchanged until then (NULL: no all-to-all) */
	void (*alltoallv)(struct fl_backend *be, const float *send, const size_t *send_counts, float *recv,
			  const size_t *recv_counts, int stream);
	/* called to free memory after the work queued on `stream` (NULL: free now) */
	void (*release)(struct fl_backend *be, void (*fn)(void *ctx), void *ctx, int stream);
	/* called to slow every compute kernel by `factor` (a clock-throttled device) */
	enum fl_status (*set_clock_factor)(struct fl_backend *be, double factor);
	/* called to read (and reset) the execution statistics */
	void (*stats)(struct fl_backend *be, struct fl_device_stats *out, int reset);
	/* called to allocate device memory (NULL: device buffers are host memory) */
	void *(*alloc)(struct fl_backend *be, size_t bytes);
	/* called to give back what alloc returned; work queued on the compute
	 * stream may still use it (the memory is reused in that stream's order) */
	void (*free)(struct fl_backend *be, void *ptr, size_t bytes);
	/* called to copy bytes from host memory and wait for the copy (a synchronous
	 * copy from pageable memory, as cudaMemcpy: it runs after the work already
	 * queued on `stream`, and the host waits until it is done). NULL: copy, then
	 * stream_synchronize */
	void (*copy_sync)(struct fl_backend *be, void *dst, const void *src, size_t bytes, enum fl_copy_kind kind,
			  int stream);
	/* called to allocate device memory outside any caching allocator (as
	 * cudaMalloc does with no cache: fresh memory, mapped now); NULL: host mmap */
	void *(*alloc_uncached)(struct fl_backend *be, size_t bytes);
	/* called to give back what alloc_uncached returned, now (as cudaFree: it
	 * waits for the whole device first); NULL: host munmap */
	void (*free_uncached)(struct fl_backend *be, void *ptr, size_t bytes);
	/* called to set device memory to zero bytes on a stream (NULL: host memset) */
	void (*zero)(struct fl_backend *be, void *ptr, size_t bytes, int stream);
	/* called to carry every collective from now on over an emulated link of
	 * `gbps` gigabits per second (NULL: the device has no emulated link) */
	enum fl_status (*set_link_gbps)(struct fl_backend *be, double gbps);
	/* the deviceProperties array of the trace (JSON text) */
	const char *(*device_properties)(struct fl_backend *be);
	/* called once after the last step */
	void (*close)(struct fl_backend *be);
};

struct fl_backend {
	const struct fl_backend_ops *ops;
	void *state;
	struct fl_backend_config cfg;
	/* host work every kernel launch does first (argument checks, building the
	 * launch descriptor), set through fl_rt_set_dispatch; NULL: none. emu runs
	 * it inside its cudaLaunchKernel call, cuda right before cudaLaunchKernel. */
	void (*launch_work)(void *arg, const struct fl_kernel *k, const struct fl_kernel_args *a);
	void *launch_work_arg;
};

/* NULL-terminated table of the backends built into this binary. */
extern const struct fl_backend_ops *const fl_backends[];
const struct fl_backend_ops *fl_backend_find(const char *name);

/* Helpers that tolerate NULL hooks. */
void fl_dev_release(struct fl_backend *be, void (*fn)(void *ctx), void *ctx, int stream);
void fl_dev_stream_wait(struct fl_backend *be, int wait_stream, int on_stream);
void fl_dev_stream_synchronize(struct fl_backend *be, int stream);
void fl_dev_synchronize(struct fl_backend *be);
/* A backend's record of how fast its core ran the same shapes, step by step
 * (ops->gemm_speed): each step's fastest GEMM of each metered kind in ns of
 * real work per multiply-add, the fastest because a thread beside the work
 * only ever lengthens a kernel; steps from FL_GEMM_METER_STEPS on are not
 * kept. The kinds: FL_GEMM_MAIN, the one GEMM of each workload that runs the
 * same shape every step and on every rank (gemm_kernel; a pipeline's
 * gemm_relu_kernel; a mixture of experts' expert_gemm_relu_kernel); and the
 * backward GEMMs of data-parallel and pipeline training, each on its own (a
 * core can change speed between a step's forward and its backward). */
enum { FL_GEMM_MAIN, FL_GEMM_TN, FL_GEMM_NT, FL_GEMM_KINDS };
#define FL_GEMM_METER_STEPS 4096
struct fl_gemm_meter {
	double ns_per_mac[FL_GEMM_KINDS][FL_GEMM_METER_STEPS]; /* 0: the step ran no GEMM of the kind */
};
/* a metered GEMM's multiply-adds (m·n·k) for these arguments, and its kind in
 * *kind; 0 for any other kernel */
double fl_gemm_macs(const struct fl_kernel *k, const struct fl_kernel_args *a, int *kind);
/* the kernel name of a metered kind */
const char *fl_gemm_kind_name(int kind);
/* a GEMM of meter `kind` and `macs` multiply-adds ran real_ns in `step` */
void fl_gemm_meter_note(struct fl_gemm_meter *m, int kind, long step, double real_ns, double macs);
/* `step`'s fastest GEMM of `kind` in ns per multiply-add, 0 when none was noted */
double fl_gemm_meter_get(const struct fl_gemm_meter *m, int kind, long step);

/* The core the device computes on (ops->compute_core), -1 when it has none of
 * its own; busy_left_out and quiet_cores (either may be NULL) get the cores
 * it left out as busy and those it found quiet. */
int fl_dev_compute_core(const struct fl_backend *be, int *busy_left_out, int *quiet_cores);

#endif
