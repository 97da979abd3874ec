/* nvtx.h — NVTX ranges, so a run under `nsys profile` shows the same step and
 * phase labels as faultline's own trace.
 *
 * NVTX 3 is header-only: with no tool attached a push or pop costs well under a
 * nanosecond. Builds without CUDA get empty inline stubs, so callers carry no
 * #ifdef.
 */
#ifndef FL_NVTX_H
#define FL_NVTX_H

#ifdef FL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

/* Open a range named `name` on the calling thread. */
static inline void fl_nvtx_push(const char *name) { nvtxRangePushA(name); }
/* Close the innermost range of the calling thread. */
static inline void fl_nvtx_pop(void) { nvtxRangePop(); }
#define FL_NVTX_BUILT 1
#else
static inline void fl_nvtx_push(const char *name) { (void)name; }
static inline void fl_nvtx_pop(void) {}
#define FL_NVTX_BUILT 0
#endif

#endif
