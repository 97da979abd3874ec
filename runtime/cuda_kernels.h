/* cuda_kernels.h — the CUDA implementations of the workload's kernels.
 *
 * Each fl_kernel the workload launches (runtime/tensor.c, generator/train.c)
 * has a CUDA kernel of the same name here, found by name by the cuda backend;
 * the GEMMs (gemm_kernel, gemm_tn_kernel, gemm_nt_kernel) run through cuBLAS
 * instead (backend_cuda.c). Every kernel here takes the same parameters, so
 * the backend launches them all with one cudaLaunchKernel call:
 *     (float *out, const float *a, const float *b, long long n, float scalar)
 * with n = m × n elements of fl_kernel_args.
 *
 * The two clock kernels emulate a throttled device (set_clock_factor): the
 * stamp kernel, launched before a compute kernel, waits until the host says
 * that kernel is enqueued (the gate counter reaches the stamp's sequence
 * number) and notes the device clock, so a stream that ran dry while the host
 * was launching adds nothing; the stretch kernel, launched after it, spins for
 * (factor − 1) × the kernel's own time — the time since the stamp less the
 * stamp-to-stretch time around no work (the baseline, measured once) — and
 * accumulates the real and added time in host-mapped counters. The capture
 * folds the pair into the kernel they bracket (cupti_convert.h).
 */
#ifndef FL_CUDA_KERNELS_H
#define FL_CUDA_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

enum fl_cuda_shape {
	FL_CUDA_ELEMENTWISE, /* one thread per element, grid-stride */
	FL_CUDA_REDUCE,      /* one block reduces all n elements into out[0] */
	FL_CUDA_SCALAR,      /* one thread touches out[0] */
};

struct fl_cuda_kernel {
	const char *name;      /* the fl_kernel's name, and the CUDA kernel's */
	const void *fn;        /* host stub for cudaLaunchKernel */
	enum fl_cuda_shape shape;
};

/* Terminated by an entry with name NULL. */
extern const struct fl_cuda_kernel fl_cuda_kernels[];

#define FL_CUDA_REDUCE_THREADS 1024

/* Throttled-device emulation (one thread each), in host-mapped memory. */
struct fl_clock_counters {
	unsigned long long kernel_ns;  /* the bracketed kernels' own time */
	unsigned long long extra_ns;   /* time the stretch spun */
	unsigned long long gate;       /* host: the last stamp whose kernel is enqueued */
	unsigned long long probe[4];   /* the stamp and stretch start (factor 1 only); the empty kernel's start and end */
};
/* the longest a stamp waits for its gate (the host failed between the launches) */
#define FL_CUDA_GATE_MAX_NS 10000000ull
/* (unsigned long long *stamp, const struct fl_clock_counters *c, unsigned long long seq) */
extern const void *const fl_cuda_clock_stamp;
/* (const unsigned long long *stamp, float factor, unsigned long long c1_ns, unsigned long long g2_ns,
 *  struct fl_clock_counters *c) */
extern const void *const fl_cuda_clock_stretch;
/* (struct fl_clock_counters *c): the stamp-to-work and work-to-stretch times are measured around it */
extern const void *const fl_cuda_clock_empty;
#define FL_CUDA_CLOCK_STAMP_NAME "fl_clock_stamp"
#define FL_CUDA_CLOCK_STRETCH_NAME "fl_clock_stretch"

#ifdef __cplusplus
}
#endif

#endif
