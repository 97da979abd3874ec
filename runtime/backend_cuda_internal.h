/* backend_cuda_internal.h — private to the cuda backend (backend_cuda.c and
 * cuda_libs.c): the device's state, its sticky error, and the cuBLAS and NCCL
 * entry points that cuda_libs.c loads with dlopen when the backend opens. */
#ifndef FL_BACKEND_CUDA_INTERNAL_H
#define FL_BACKEND_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "capture/cupti_capture.h"
#include "runtime/cuda_kernels.h"
#include "runtime/device.h"

#define N_EVENTS 64

struct size_class {
	size_t bytes;
	void **free;
	size_t n, cap;
};

struct kernel_cache {
	const struct fl_kernel *k;
	int impl;
};

struct cublas_api {
	void *lib;
	cublasHandle_t handle;
	__typeof__(cublasCreate_v2) *create;
	__typeof__(cublasDestroy_v2) *destroy;
	__typeof__(cublasSetStream_v2) *set_stream;
	__typeof__(cublasSgemm_v2) *sgemm;
	__typeof__(cublasGetStatusString) *status_string;
};

struct nccl_api; /* cuda_libs.c: the loaded NCCL, or a stub without nccl.h */

struct cuda_dev {
	int device;
	int capture; /* CUPTI records this run */
	cudaStream_t compute, comm;
	cudaEvent_t events[N_EVENTS];
	int n_events;
	unsigned next_event;
	struct cublas_api blas;
	struct nccl_api *nccl;
	struct kernel_cache cache[64];
	size_t n_cache;
	struct size_class classes[64];
	size_t n_classes;
	void **allocs; /* every cudaMalloc, freed at close */
	size_t n_allocs, cap_allocs;
	float clock_factor;
	unsigned long long *stamp;           /* device: the clock stamp of the compute stream */
	struct fl_clock_counters *counters;  /* host-mapped */
	unsigned long long stamp_seq;        /* sequence number of the last stamp launched */
	unsigned long long c1_ns, g2_ns;     /* stamp → work start, work end → stretch start (an empty kernel) */
	struct fl_clock_counters base;       /* counters at the last stats reset */
	struct fl_clock_counters win;        /* counters when the recorded window began */
	int env_factor;                      /* the factor came from FL_CUDA_CLOCK_FACTOR */
	struct fl_device_stats st;
	struct fl_cupti_summary last;        /* the last collected capture */
	struct fl_cupti_device cdev;
	enum fl_status error;
	char error_msg[512];
	char props[1024];
};

/* The device's first error (later ones are dropped): kept with its message,
 * printed once on stderr; later device calls are skipped. */
void fl_cuda_error(struct cuda_dev *d, enum fl_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* cuBLAS on the compute stream: loaded, its handle made (d->blas) */
enum fl_status fl_cuda_blas_open(struct cuda_dev *d);
void fl_cuda_blas_close(struct cuda_dev *d);
/* NCCL for `world` ranks: every rank votes whether it could load it, then
 * rank 0's unique id goes to all (collective: every rank calls it) */
enum fl_status fl_cuda_nccl_open(struct cuda_dev *d, int rank, int world);
void fl_cuda_nccl_allreduce(struct cuda_dev *d, float *buf, size_t count);
void fl_cuda_nccl_sendrecv(struct cuda_dev *d, float *buf, size_t count, int peer, int send);
void fl_cuda_nccl_close(struct cuda_dev *d);

#endif
