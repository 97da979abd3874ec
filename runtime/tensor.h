/* tensor.h — the workload's small eager tensor runtime ("real math").
 *
 * Each call is one eager op, recorded as a cpu_op span with the sub-ops it
 * really runs nested inside, mirroring the anatomy of an eager framework op:
 *   randn   → empty + normal_
 *   matmul  → mm → resolve_conj ×3 (both inputs and the output)
 *   relu    → clamp_min
 *   square  → pow → result_type + to (same dtype: no copy)
 *   mean    → mean → sum → as_strided, fill_, unsqueeze → as_strided, empty,
 *                          copy_, select → as_strided
 *                  → div_ → div_ → to → _to_copy → empty_strided + copy_
 *   item    → _local_scalar_dense
 *   add/mul/sub with a scalar → to → _to_copy → empty_strided + copy_
 * 38 ops per inference step. Every sub-op does its (small) real work: views
 * compute their sizes and strides and check them against the storage, fills
 * and copies move bytes, promotions allocate and write the promoted scalar.
 * Kernels run through the device backend. Op names carry the `fl::` namespace:
 * they are faultline's ops, not PyTorch's.
 *
 * Allocation policy (a workload setting the truth records):
 *  - FL_ALLOC_SYSTEM: every tensor of a page or more gets fresh pages from the
 *    OS (mmap) and gives them back on free (munmap), like an eager runtime
 *    without a caching allocator; page faults and syscalls are part of each
 *    op's real overhead. Smaller tensors (scalars) come from malloc.
 *  - FL_ALLOC_HEAP: malloc/free (glibc reuses the memory).
 * On a backend with device memory (cuda: an alloc hook) device tensors come
 * from the backend, whatever the policy (its caching allocator: cudaMalloc and
 * cudaFree would synchronise the device); the policy then governs host
 * tensors (the data loader's batch). Weights are initialised on the host and
 * copied. Tensors are row-major float32 matrices. Out-of-memory aborts (the
 * workload's sizes are fixed and small).
 */
#ifndef FL_TENSOR_H
#define FL_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/device.h"

enum fl_alloc_policy { FL_ALLOC_SYSTEM = 0, FL_ALLOC_HEAP };

struct fl_tensor {
	int rows, cols;
	float *data;
	size_t bytes;
	int mapped;     /* storage came from mmap (FL_ALLOC_SYSTEM) */
	struct fl_backend *dev; /* storage is device memory from this backend's alloc (NULL: host) */
	int uncached;   /* storage from fl_rt_empty_uncached: freed at once, outside any cache */
	int half;       /* elements are float16 (rows × cols halves; fl_rt_to_half) */
};

enum fl_rt_op {
	FL_OP_RANDN, FL_OP_EMPTY, FL_OP_NORMAL, FL_OP_MATMUL, FL_OP_MM, FL_OP_RELU, FL_OP_CLAMP_MIN,
	FL_OP_SQUARE, FL_OP_POW, FL_OP_MEAN, FL_OP_SUM, FL_OP_DIV, FL_OP_ITEM, FL_OP_LOCAL_SCALAR,
	FL_OP_ADD, FL_OP_MUL, FL_OP_SUB, FL_OP_TO, FL_OP_TO_COPY, FL_OP_EMPTY_STRIDED, FL_OP_COPY,
	/* the small ops an eager framework runs inside the ones above (views, checks, fills) */
	FL_OP_RESOLVE_CONJ, FL_OP_AS_STRIDED, FL_OP_RESULT_TYPE, FL_OP_FILL, FL_OP_UNSQUEEZE, FL_OP_SELECT,
	FL_OP_ADD_INPLACE,
	FL_OP_COUNT
};

enum fl_scalar_op { FL_SCALAR_ADD, FL_SCALAR_MUL, FL_SCALAR_SUB };

/* What the batch's host-to-device copies did (fl_rt_randn). */
struct fl_rt_copy_stats {
	unsigned long async, blocking;  /* copies queued vs copies the host waited for */
	uint64_t blocking_ns;           /* host time inside the blocking copies */
	uint64_t bytes;
};

struct fl_rt {
	struct fl_backend *be;
	enum fl_alloc_policy alloc;
	uint64_t rng[4];
	uint32_t op_name[FL_OP_COUNT]; /* interned trace names */
	/* 1: the batch goes to the device with a synchronous copy (cudaMemcpy)
	 * instead of an asynchronous one */
	int h2d_blocking;
	struct fl_rt_copy_stats h2d;
};

/* Intern the op names (call before the recorded window). */
void fl_rt_init(struct fl_rt *rt, struct fl_backend *be, enum fl_alloc_policy alloc, uint64_t seed);
const char *fl_alloc_policy_name(enum fl_alloc_policy p);

/* A tensor filled from N(0, scale²) without recording anything (weights). */
struct fl_tensor *fl_rt_param(struct fl_rt *rt, int rows, int cols, float scale);
void fl_tensor_free(struct fl_rt *rt, struct fl_tensor *t);

struct fl_tensor *fl_rt_randn(struct fl_rt *rt, int rows, int cols);
struct fl_tensor *fl_rt_matmul(struct fl_rt *rt, const struct fl_tensor *a, const struct fl_tensor *b);
struct fl_tensor *fl_rt_relu(struct fl_rt *rt, const struct fl_tensor *x);
struct fl_tensor *fl_rt_square(struct fl_rt *rt, const struct fl_tensor *x);
struct fl_tensor *fl_rt_mean(struct fl_rt *rt, const struct fl_tensor *x); /* 1×1 */
/* x (op) s with the scalar wrapped into a tensor first, as eager frameworks do. */
struct fl_tensor *fl_rt_scalar(struct fl_rt *rt, const struct fl_tensor *x, enum fl_scalar_op op, double s);
/* x += alpha · y in place (x.add_(y, alpha=alpha): the update of a for-loop
 * SGD step, param.add_(grad, alpha=-lr)); x and y have the same shape. */
void fl_rt_add_(struct fl_rt *rt, struct fl_tensor *x, const struct fl_tensor *y, double alpha);
/* Host read of a 1×1 tensor (on an asynchronous device: a device-to-host copy
 * and a stream synchronize, as .item() does). */
double fl_rt_item(struct fl_rt *rt, const struct fl_tensor *t);

/* Building blocks for ops defined elsewhere (the training workload): an
 * uninitialised tensor (no op recorded) and a kernel launch on the compute stream. */
struct fl_tensor *fl_rt_empty(struct fl_rt *rt, int rows, int cols);
void fl_rt_launch(struct fl_rt *rt, const struct fl_kernel *k, const struct fl_kernel_args *a);
/* Set every element to zero (no op recorded; on the device: a memset on the compute stream). */
void fl_rt_zero(struct fl_rt *rt, struct fl_tensor *t);
/* Make every kernel launch do `fn` first (NULL: nothing): per-launch host work
 * (argument checks, shape inference, building the launch descriptor), run by
 * the backend as part of the launch (struct fl_backend, launch_work). */
void fl_rt_set_dispatch(struct fl_rt *rt, void (*fn)(void *arg, const struct fl_kernel *k,
						   const struct fl_kernel_args *a), void *arg);
/* A tensor outside any caching allocator, recorded as an fl::empty op: on a
 * backend with alloc_uncached its storage is fresh device memory (cudaMalloc),
 * else fresh host pages (mmap, touched now). fl_tensor_free gives it back at
 * once (cudaFree, which waits for the device; else munmap). */
struct fl_tensor *fl_rt_empty_uncached(struct fl_rt *rt, int rows, int cols);
/* How fast a core runs the device's GEMM now: the fastest of
 * FL_CORE_PROBE_REPS runs of gemm_kernel on FL_CORE_PROBE_N-square floats, in
 * ms, called directly (no launch, nothing recorded), on `core` (the calling
 * thread moves there for the probe and back; -1: where it runs). On a virtual
 * machine a core whose physical sibling another tenant keeps busy runs this up
 * to twice as slow as its neighbour with nothing in the guest showing why. */
#define FL_CORE_PROBE_N 128
#define FL_CORE_PROBE_REPS 5
double fl_rt_core_probe_ms(int core);
/* x.to(float16) and h.to(float32): real conversions (round to nearest even),
 * each an fl::to op with its kernel. A half tensor is only for fl_rt_to_float. */
struct fl_tensor *fl_rt_to_half(struct fl_rt *rt, const struct fl_tensor *x);
struct fl_tensor *fl_rt_to_float(struct fl_rt *rt, const struct fl_tensor *h);
/* The float16 value nearest to x (ties to even), as its bit pattern, and back. */
uint16_t fl_float_to_half(float x);
float fl_half_to_float(uint16_t h);
/* Intern an op name for fl_span_begin (before the window). */
uint32_t fl_rt_op_name(const char *name);

#endif
