// cuda_kernels.cu — the workload's elementwise, reduction and scalar kernels on
// the GPU, with the same names and math as their CPU versions (tensor.c,
// train.c). See cuda_kernels.h.
#include <cuda_fp16.h>

#include "runtime/cuda_kernels.h"

#define GRID_STRIDE(i, n) \
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

extern "C" {

// relu: out = max(a, scalar)
__global__ void clamp_min_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)b;
	GRID_STRIDE(i, n) out[i] = a[i] > s ? a[i] : s;
}

__global__ void pow_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)b;
	(void)s;
	GRID_STRIDE(i, n) out[i] = a[i] * a[i];
}

// out[0] = sum(a), accumulated in double by one block (deterministic)
__global__ void reduce_sum_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)b;
	(void)s;
	__shared__ double part[FL_CUDA_REDUCE_THREADS];
	double acc = 0;
	for (long long i = threadIdx.x; i < n; i += blockDim.x)
		acc += a[i];
	part[threadIdx.x] = acc;
	__syncthreads();
	for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
		if (threadIdx.x < w)
			part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[0] = (float)part[0];
}

__global__ void div_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)a;
	(void)b;
	(void)n;
	out[0] /= s;
}

__global__ void add_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)s;
	const float v = b[0];
	GRID_STRIDE(i, n) out[i] = a[i] + v;
}

__global__ void mul_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)s;
	const float v = b[0];
	GRID_STRIDE(i, n) out[i] = a[i] * v;
}

__global__ void sub_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)s;
	const float v = b[0];
	GRID_STRIDE(i, n) out[i] = a[i] - v;
}

// the scalar of a type promotion lands in a 1x1 device tensor
__global__ void copy_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)a;
	(void)b;
	(void)n;
	out[0] = s;
}

__global__ void mse_backward_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)b;
	GRID_STRIDE(i, n) out[i] = a[i] * s;
}

// out = a where b > 0, else 0
__global__ void threshold_backward_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)s;
	GRID_STRIDE(i, n) out[i] = b[i] > 0.0f ? a[i] : 0.0f;
}

// out -= scalar * a
__global__ void sgd_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)b;
	GRID_STRIDE(i, n) out[i] -= s * a[i];
}

// dtype casts: float32 -> float16 (round to nearest even) and back; the half
// tensor's storage is n halves in a float buffer
__global__ void cast_float_to_half_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)b;
	(void)s;
	__half *h = (__half *)out;
	GRID_STRIDE(i, n) h[i] = __float2half_rn(a[i]);
}

__global__ void cast_half_to_float_kernel(float *out, const float *a, const float *b, long long n, float s)
{
	(void)b;
	(void)s;
	const __half *h = (const __half *)a;
	GRID_STRIDE(i, n) out[i] = __half2float(h[i]);
}

static __device__ __forceinline__ unsigned long long global_ns(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// Waits (at most FL_CUDA_GATE_MAX_NS) until the host has enqueued the work this
// stamp brackets (gate >= seq), then notes the clock: the work starts right
// after, so the stamp is its start and not the moment the stream ran dry.
__global__ void fl_clock_stamp(unsigned long long *stamp, const struct fl_clock_counters *c, unsigned long long seq)
{
	const volatile struct fl_clock_counters *vc = c;
	unsigned long long t0 = global_ns(), now = t0;
	while (vc->gate < seq && now - t0 < FL_CUDA_GATE_MAX_NS)
		now = global_ns();
	*stamp = global_ns();
}

// Ends the bracketed work at factor x its own device time, as a device whose
// clock runs 1/factor as fast takes for every kernel, its fixed cost included.
// The work began c1_ns after the stamp and ended g2_ns before this kernel began
// (both measured around an empty kernel when the factor is set); it spins until
// then, or not at all when it starts later than that (a kernel too short for a
// second kernel's own cost to stretch it exactly).
__global__ void fl_clock_stretch(const unsigned long long *stamp, float factor, unsigned long long c1_ns,
				 unsigned long long g2_ns, struct fl_clock_counters *c)
{
	unsigned long long start = global_ns(), s = *stamp;
	unsigned long long k0 = s + c1_ns, k1 = start > g2_ns ? start - g2_ns : start;
	if (k1 < k0)
		k1 = k0;
	unsigned long long real = k1 - k0;
	unsigned long long until = k0 + (unsigned long long)((double)real * (double)factor);
	unsigned long long now = start;
	while (now < until)
		now = global_ns();
	// host-mapped: the host reads these without synchronising
	volatile struct fl_clock_counters *vc = c;
	vc->kernel_ns += real;
	vc->extra_ns += now - k1;
	if (factor <= 1.0f) { // only the c1/g2 measurement (factor 1) reads these
		vc->probe[0] = s;
		vc->probe[1] = start;
	}
	__threadfence_system();
}

// Notes its own start and end: what the stamp-to-work and work-to-stretch
// times are measured around.
__global__ void fl_clock_empty(struct fl_clock_counters *c)
{
	volatile struct fl_clock_counters *vc = c;
	vc->probe[2] = global_ns();
	vc->probe[3] = global_ns();
	__threadfence_system();
}

const struct fl_cuda_kernel fl_cuda_kernels[] = {
	{"clamp_min_kernel", (const void *)clamp_min_kernel, FL_CUDA_ELEMENTWISE},
	{"cast_float_to_half_kernel", (const void *)cast_float_to_half_kernel, FL_CUDA_ELEMENTWISE},
	{"cast_half_to_float_kernel", (const void *)cast_half_to_float_kernel, FL_CUDA_ELEMENTWISE},
	{"pow_kernel", (const void *)pow_kernel, FL_CUDA_ELEMENTWISE},
	{"reduce_sum_kernel", (const void *)reduce_sum_kernel, FL_CUDA_REDUCE},
	{"div_kernel", (const void *)div_kernel, FL_CUDA_SCALAR},
	{"add_kernel", (const void *)add_kernel, FL_CUDA_ELEMENTWISE},
	{"mul_kernel", (const void *)mul_kernel, FL_CUDA_ELEMENTWISE},
	{"sub_kernel", (const void *)sub_kernel, FL_CUDA_ELEMENTWISE},
	{"copy_kernel", (const void *)copy_kernel, FL_CUDA_SCALAR},
	{"mse_backward_kernel", (const void *)mse_backward_kernel, FL_CUDA_ELEMENTWISE},
	{"threshold_backward_kernel", (const void *)threshold_backward_kernel, FL_CUDA_ELEMENTWISE},
	{"sgd_kernel", (const void *)sgd_kernel, FL_CUDA_ELEMENTWISE},
	{nullptr, nullptr, FL_CUDA_ELEMENTWISE},
};

const void *const fl_cuda_clock_stamp = (const void *)fl_clock_stamp;
const void *const fl_cuda_clock_stretch = (const void *)fl_clock_stretch;
const void *const fl_cuda_clock_empty = (const void *)fl_clock_empty;

} // extern "C"
