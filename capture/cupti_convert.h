/* cupti_convert.h — CUPTI activity records → tracer events (backend cuda).
 *
 * Records arrive in several buffers in no useful order (an API call in one, its
 * kernel and the external-correlation record that names its op in others), so
 * the conversion runs in two passes: the first reads every record of every
 * buffer into maps (API calls by correlation id, external ids by correlation
 * id, device work, overheads); the second keeps what belongs to the recorded
 * window and emits it as the same tracer events the emu backend records:
 *
 *  - device work (kernel / gpu_memcpy / gpu_memset / cuda_sync) goes to one new
 *    device buffer per device (pid = device, tid = stream in the trace), with
 *    the fields CUPTI reported (grid, block, registers, shared memory,
 *    estimated occupancy, bytes, context, sync kind) in the buffer's side table;
 *  - runtime and driver API calls (cuda_runtime / cuda_driver) and CUPTI's own
 *    overhead go into the host buffer of the thread that made them, nested
 *    under the op that was open when they ran. The op is named by the external
 *    correlation id the backend pushed around the call:
 *    fl_cupti_external_id(tid, slot of the innermost open span). Calls without
 *    one are placed by time. The writer then gives the call, and the kernels
 *    that share its correlation id, the op's External id and draws the
 *    launch → kernel flow arrows, exactly as for emu.
 *
 * Correlation ids are renumbered densely (1, 2, …) in the order calls began.
 * Device work whose launching call is not in the window gets correlation 0
 * ("no launch"), so no flow arrow ends on it without one starting. A driver
 * kernel launch made outside any public API call (CUPTI's INTERNAL_LAUNCH_API
 * record) is a cuda_driver call like the others, so its kernel stays linked.
 *
 * A buffer is read until CUPTI says it has no more records; any other answer
 * (a record CUPTI cannot parse) ends that buffer early: the first is reported
 * on stderr, every one is counted (read_errors) and added to the dropped count
 * the trace reports, since records were lost.
 * Timestamps are used as they are: under backend cuda a tracer tick is a
 * CLOCK_REALTIME nanosecond, the clock CUPTI stamps with (capture/clock.h).
 *
 * A clock-stretch pair (fold_begin, fold_end kernel names; the cuda backend's
 * throttled-device emulation) is folded into the kernel it brackets: that
 * kernel ends when the stretch ends, and the pair and its launches are not
 * emitted — as the emu backend stretches the kernel itself.
 *
 * Built only with CUDA (it reads CUpti_Activity* records); needs no GPU.
 */
#ifndef FL_CUPTI_CONVERT_H
#define FL_CUPTI_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#include <cupti.h>

/* The activity record types of the CUPTI this is built with. CUPTI writes
 * each record in the newest layout its own version knows, so the struct must
 * be the one of the headers beside the linked library, whose name changes
 * with the toolkit: CUpti_ActivityKernel9 up to 12.9, Kernel10 in 13.0-13.1,
 * Kernel11 in 13.2, Kernel12 from 13.3; Memcpy6 and Synchronization2 from 12.8
 * (API version 26). Every field read here has the same name in all of them. The
 * overhead record only grew at its end: its first version's fields suffice.
 * (CUPTI_API_VERSION is 19-28 for 12.x and xxyyzz from 13.0: 130000.) */
#if CUPTI_API_VERSION >= 130300
typedef CUpti_ActivityKernel12 fl_cupti_kernel_rec;
#elif CUPTI_API_VERSION >= 130200
typedef CUpti_ActivityKernel11 fl_cupti_kernel_rec;
#elif CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 fl_cupti_kernel_rec;
#else
typedef CUpti_ActivityKernel9 fl_cupti_kernel_rec;
#endif
#if CUPTI_API_VERSION >= 26
typedef CUpti_ActivityMemcpy6 fl_cupti_memcpy_rec;
typedef CUpti_ActivitySynchronization2 fl_cupti_sync_rec;
#else
typedef CUpti_ActivityMemcpy5 fl_cupti_memcpy_rec;
typedef CUpti_ActivitySynchronization fl_cupti_sync_rec;
#endif
typedef CUpti_ActivityMemset4 fl_cupti_memset_rec;
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityOverhead3 fl_cupti_overhead_rec;
#else
typedef CUpti_ActivityOverhead fl_cupti_overhead_rec;
#endif

/* What occupancy estimates need to know about a device. */
struct fl_cupti_device {
	int id;
	int sms;                     /* multiProcessorCount */
	int warp_size;
	int max_threads_per_sm;
	int max_blocks_per_sm;
	int regs_per_sm;
	int smem_per_sm;             /* bytes */
	int reserved_smem_per_block; /* bytes the driver keeps per block */
};

struct fl_cupti_input {
	uint8_t *const *buffers;     /* completed CUPTI buffers */
	const size_t *valid;         /* valid bytes of each */
	size_t n_buffers;
	uint64_t t0, t1;             /* the recorded window (tracer ticks = ns) */
	uint64_t dropped;            /* records CUPTI dropped (reported, never hidden) */
	const struct fl_cupti_device *devices;
	size_t n_devices;
	int default_device;          /* for records that name only a context */
	int pid;                     /* process id of the host rows */
	const char *fold_begin, *fold_end; /* clock-stretch kernel names, or NULL */
};

struct fl_cupti_summary {
	uint64_t api_calls, kernels, copies, memsets, syncs, overheads;
	uint64_t linked_calls;       /* API calls placed under the op named by their external id */
	uint64_t unlaunched;         /* device work whose launching call is not in the window */
	uint64_t folded;             /* clock-stretch kernels folded into the kernel they stretch */
	uint64_t read_errors;        /* buffers whose reading stopped early (CUPTI rejected a record) */
	uint64_t dropped;            /* in->dropped + read_errors: what the trace reports as dropped */
	double kernel_ms;            /* total time of compute kernels (not nccl*) */
};

/* The name of a CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API record (a driver
 * kernel launch made outside any public API call), a cuda_driver event. */
#define FL_CUPTI_INTERNAL_LAUNCH_NAME "cuLaunchKernel (internal)"

/* The external correlation id the backend pushes around a device call: the
 * thread's id and the slot of the op open on it (fl_span_innermost). */
static inline uint64_t fl_cupti_external_id(int tid, uint32_t slot)
{
	return ((uint64_t)(uint32_t)tid << 32) | slot;
}

/* Convert the records of in into tracer buffers (appending new device buffers
 * and merging host events into the threads' buffers). Outside the window. */
enum fl_status fl_cupti_convert(const struct fl_cupti_input *in, struct fl_cupti_summary *out);

/* Kineto's names: "Memcpy HtoD (Pageable -> Device)", "Memset (Device)",
 * "Stream Sync"; API names without CUPTI's version suffix ("cudaLaunchKernel"). */
const char *fl_cupti_memcpy_kind(unsigned kind);
const char *fl_cupti_memory_kind(unsigned kind);
const char *fl_cupti_sync_kind(unsigned kind);

#endif
