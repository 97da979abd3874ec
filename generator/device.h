/* device.h — the device interface the workload and the faults are written against.
 *
 * A backend runs kernels (plain C functions over host memory on `cpu`; queued to
 * an emulated or a real device on the backends that follow), copies, syncs and
 * allocations. The cpu backend runs each kernel inline on the calling thread,
 * which is what a CPU-only torch.profiler capture shows. Backends are listed in
 * one table (generator/backends.c); a NULL hook means "not supported".
 */
#ifndef FL_DEVICE_H
#define FL_DEVICE_H

#include <stddef.h>

#include "common/status.h"

struct fl_kernel_args {
	float *out;
	const float *a, *b;
	int m, n, k;     /* shapes: out is m×n; a is m×k; b is k×n */
	float scalar;
	double *result;  /* reductions write here */
};

struct fl_kernel {
	const char *name;
	void (*run)(const struct fl_kernel_args *args);
};

struct fl_backend;

struct fl_backend_ops {
	const char *name;
	const char *summary;
	int asynchronous; /* launch returns before the kernel has run */
	/* called once before the first step; may refuse (no device, no driver) */
	enum fl_status (*open)(struct fl_backend *be);
	/* called to run one kernel */
	void (*launch)(struct fl_backend *be, const struct fl_kernel *k, const struct fl_kernel_args *a);
	/* called when the host needs every queued kernel finished */
	void (*synchronize)(struct fl_backend *be);
	/* the deviceProperties array of the trace (JSON text) */
	const char *(*device_properties)(struct fl_backend *be);
	/* called once after the last step */
	void (*close)(struct fl_backend *be);
};

struct fl_backend {
	const struct fl_backend_ops *ops;
	void *state;
};

/* NULL-terminated table of the backends built into this binary. */
extern const struct fl_backend_ops *const fl_backends[];
const struct fl_backend_ops *fl_backend_find(const char *name);

#endif
