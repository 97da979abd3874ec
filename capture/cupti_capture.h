/* cupti_capture.h — device activity capture with CUPTI for the cuda backend.
 *
 * fl_cupti_start() runs before the backend's first CUDA call: it makes CUPTI
 * stamp records with the tracer's clock (CLOCK_REALTIME ns, see clock.h),
 * registers the buffer callbacks over a pool of buffers allocated (and touched)
 * now, so the recorded window never allocates, and enables CONCURRENT_KERNEL,
 * MEMCPY, MEMSET, RUNTIME, the driver's kernel-launch calls, SYNCHRONIZATION,
 * EXTERNAL_CORRELATION and OVERHEAD (and INTERNAL_LAUNCH_API where CUPTI knows
 * it). Cheap runtime queries (cudaGetDevice, cudaGetLastError, attribute and
 * capture-state queries, event create/destroy; the list is in the source) are
 * not recorded, as Kineto leaves them out of its traces: they launch nothing
 * and would cost a record per call (CUDA 12.5+, which has per-call control;
 * before it every runtime and driver call is recorded). Without a GPU driver CUPTI refuses the
 * kinds; start then fails with that reason (the backend's "no GPU" signal).
 *
 * Around every device call the backend pushes the external correlation id of
 * the op it belongs to (fl_cupti_push / fl_cupti_pop; cupti_convert.h says how
 * the id names the op). Buffers CUPTI completes before the window are
 * recycled; from fl_cupti_window_begin() on they are kept, and
 * fl_cupti_collect() flushes CUPTI and converts the window's records into
 * tracer events (cupti_convert.h). When the pool runs dry CUPTI drops records;
 * the count goes into the trace metadata and the truth.
 *
 * Without CUDA this header supplies stubs that report "not built", so callers
 * need no #ifdef.
 */
#ifndef FL_CUPTI_CAPTURE_H
#define FL_CUPTI_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#ifdef FL_HAVE_CUPTI
#include "capture/cupti_convert.h"

struct fl_cupti_options {
	size_t pool_bytes;           /* total buffer space (0: FL_CUPTI_BUFFER_MB or 64 MB) */
	const char *fold_begin, *fold_end; /* clock-stretch kernel names (cupti_convert.h), or NULL */
};

/* Before the first CUDA call. Fails (FL_ERUNTIME, message set) when CUPTI
 * cannot trace on this machine; everything it set up is undone then. */
enum fl_status fl_cupti_start(const struct fl_cupti_options *o);
/* The device the run uses (occupancy estimates, records naming only a context). */
void fl_cupti_set_device(const struct fl_cupti_device *dev);
/* Enter / leave a device call made for the op named by `id`. */
void fl_cupti_push(uint64_t id);
void fl_cupti_pop(void);
/* The recorded window begins: drop what was captured so far. */
void fl_cupti_window_begin(void);
/* Flush CUPTI (the device must be idle) and convert the records of [t0, t1]. */
enum fl_status fl_cupti_collect(uint64_t t0, uint64_t t1, struct fl_cupti_summary *sum);
/* Disable every kind and free the pool. */
void fl_cupti_stop(void);
/* "CUPTI 130001" (the API version of the loaded library). */
const char *fl_cupti_version(void);
#define FL_CUPTI_BUILT 1

#else

struct fl_cupti_options {
	size_t pool_bytes;
	const char *fold_begin, *fold_end;
};
struct fl_cupti_device;
struct fl_cupti_summary {
	uint64_t api_calls, kernels, copies, memsets, syncs, overheads;
	uint64_t linked_calls, unlaunched, folded, read_errors, dropped;
	double kernel_ms;
};
static inline enum fl_status fl_cupti_start(const struct fl_cupti_options *o)
{
	(void)o;
	return fl_error(FL_ERUNTIME, "CUPTI capture was not built into this faultline (build with FAULTLINE_CUDA=ON)");
}
static inline void fl_cupti_set_device(const struct fl_cupti_device *dev) { (void)dev; }
static inline void fl_cupti_push(uint64_t id) { (void)id; }
static inline void fl_cupti_pop(void) {}
static inline void fl_cupti_window_begin(void) {}
static inline enum fl_status fl_cupti_collect(uint64_t t0, uint64_t t1, struct fl_cupti_summary *sum)
{
	(void)t0;
	(void)t1;
	(void)sum;
	return fl_error(FL_ERUNTIME, "CUPTI capture was not built into this faultline");
}
static inline void fl_cupti_stop(void) {}
static inline const char *fl_cupti_version(void) { return "not built"; }
#define FL_CUPTI_BUILT 0
#endif

#endif
