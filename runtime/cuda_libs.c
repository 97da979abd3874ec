/* cuda_libs.c — cuBLAS and NCCL for the cuda backend, loaded with dlopen when
 * the backend opens, so a CUDA-enabled faultline starts as fast as any other
 * (libcublasLt alone adds ~0.1 s of relocations to every process start) and
 * runs cpu/emu without them. Without nccl.h at build time the NCCL calls are
 * stubs that fail a multi-rank run with the reason. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/backend_cuda_internal.h"
#include "runtime/comm.h"

#ifdef FL_HAVE_NCCL
#include <nccl.h>
#endif

#ifndef FL_CUBLAS_SONAME
#define FL_CUBLAS_SONAME "libcublas.so"
#endif
#ifndef FL_NCCL_SONAME
#define FL_NCCL_SONAME "libnccl.so.2"
#endif
/* where the build found each library, tried when the soname is not on the
 * loader's path ("": the soname only) */
#ifndef FL_CUBLAS_PATH
#define FL_CUBLAS_PATH ""
#endif
#ifndef FL_NCCL_PATH
#define FL_NCCL_PATH ""
#endif

static void *load_library(const char *soname, const char *path, char *why, size_t n)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h && path && path[0])
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		snprintf(why, n, "%s", dlerror());
	return h;
}

enum fl_status fl_cuda_blas_open(struct cuda_dev *d)
{
	char why[256] = "";
	struct cublas_api *b = &d->blas;
	b->lib = load_library(FL_CUBLAS_SONAME, FL_CUBLAS_PATH, why, sizeof(why));
	if (!b->lib)
		return fl_error(FL_ERUNTIME, "cuda: cannot load cuBLAS (%s): %s", FL_CUBLAS_SONAME, why);
	b->create = (__typeof__(b->create))dlsym(b->lib, "cublasCreate_v2");
	b->destroy = (__typeof__(b->destroy))dlsym(b->lib, "cublasDestroy_v2");
	b->set_stream = (__typeof__(b->set_stream))dlsym(b->lib, "cublasSetStream_v2");
	b->sgemm = (__typeof__(b->sgemm))dlsym(b->lib, "cublasSgemm_v2");
	b->status_string = (__typeof__(b->status_string))dlsym(b->lib, "cublasGetStatusString");
	if (!b->create || !b->destroy || !b->set_stream || !b->sgemm || !b->status_string)
		return fl_error(FL_ERUNTIME, "cuda: %s lacks the cuBLAS calls faultline needs", FL_CUBLAS_SONAME);
	cublasStatus_t s = b->create(&b->handle);
	if (s == CUBLAS_STATUS_SUCCESS)
		s = b->set_stream(b->handle, d->compute);
	if (s != CUBLAS_STATUS_SUCCESS)
		return fl_error(FL_ERUNTIME, "cuda: cuBLAS initialisation failed: %s", b->status_string(s));
	return FL_OK;
}

void fl_cuda_blas_close(struct cuda_dev *d)
{
	if (d->blas.handle)
		d->blas.destroy(d->blas.handle);
	if (d->blas.lib)
		dlclose(d->blas.lib);
	memset(&d->blas, 0, sizeof(d->blas));
}

#ifdef FL_HAVE_NCCL
struct nccl_api {
	void *lib;
	ncclComm_t comm;
	__typeof__(ncclGetUniqueId) *get_unique_id;
	__typeof__(ncclCommInitRank) *init_rank;
	__typeof__(ncclCommDestroy) *destroy;
	__typeof__(ncclAllReduce) *all_reduce;
	__typeof__(ncclGetErrorString) *error_string;
	__typeof__(ncclSend) *send; /* point to point (NCCL 2.7+): NULL when the library lacks it */
	__typeof__(ncclRecv) *recv;
};

enum fl_status fl_cuda_nccl_open(struct cuda_dev *d, int rank, int world)
{
	char why[256] = "";
	struct nccl_api *n = calloc(1, sizeof(*n));
	if (!n)
		return fl_error(FL_ERUNTIME, "cuda: out of memory");
	d->nccl = n;
	n->lib = load_library(FL_NCCL_SONAME, FL_NCCL_PATH, why, sizeof(why));
	/* every rank takes part in the id broadcast, even one that cannot load NCCL */
	if (n->lib) {
		n->get_unique_id = (__typeof__(n->get_unique_id))dlsym(n->lib, "ncclGetUniqueId");
		n->init_rank = (__typeof__(n->init_rank))dlsym(n->lib, "ncclCommInitRank");
		n->destroy = (__typeof__(n->destroy))dlsym(n->lib, "ncclCommDestroy");
		n->all_reduce = (__typeof__(n->all_reduce))dlsym(n->lib, "ncclAllReduce");
		n->error_string = (__typeof__(n->error_string))dlsym(n->lib, "ncclGetErrorString");
		n->send = (__typeof__(n->send))dlsym(n->lib, "ncclSend");
		n->recv = (__typeof__(n->recv))dlsym(n->lib, "ncclRecv");
	}
	int usable = n->lib && n->get_unique_id && n->init_rank && n->destroy && n->all_reduce && n->error_string;
	float ok = usable ? 1.0f : 0.0f;
	enum fl_status st = fl_comm_allreduce_sum(&ok, 1);
	if (st)
		return st;
	if (!usable)
		return fl_error(FL_ERUNTIME, "cuda: cannot load NCCL (%s) for the %d-rank collectives: %s", FL_NCCL_SONAME,
				world, why[0] ? why : "missing symbols");
	if (ok < (float)world)
		return fl_error(FL_ERUNTIME, "cuda: NCCL is not usable on every rank (%d of %d can load it)", (int)ok, world);
	/* rank 0's id goes out with its result, so a failed ncclGetUniqueId fails
	 * every rank at once (instead of the others joining an all-zero id) */
	struct {
		int32_t result;
		ncclUniqueId id;
	} root;
	memset(&root, 0, sizeof(root));
	if (rank == 0)
		root.result = (int32_t)n->get_unique_id(&root.id);
	if ((st = fl_comm_bcast(&root, sizeof(root), 0)))
		return st;
	if (root.result != ncclSuccess)
		return fl_error(FL_ERUNTIME, "cuda: NCCL initialisation failed: ncclGetUniqueId on rank 0: %s",
				n->error_string((ncclResult_t)root.result));
	ncclResult_t r = n->init_rank(&n->comm, world, root.id, rank);
	if (r != ncclSuccess)
		return fl_error(FL_ERUNTIME, "cuda: NCCL initialisation failed on rank %d: %s", rank, n->error_string(r));
	return FL_OK;
}

void fl_cuda_nccl_allreduce(struct cuda_dev *d, float *buf, size_t count)
{
	ncclResult_t r = d->nccl->all_reduce(buf, buf, count, ncclFloat, ncclSum, d->nccl->comm, d->comm);
	if (r != ncclSuccess)
		fl_cuda_error(d, FL_ERUNTIME, "cuda: ncclAllReduce failed: %s", d->nccl->error_string(r));
}

/* One direction between two ranks: NCCL matches a rank's sends to a peer with
 * that peer's receives in issue order, so the pipeline's two directions (its
 * activations forward, its gradients back) need no tag, only the same order
 * on both ranks, which the schedule gives. */
void fl_cuda_nccl_sendrecv(struct cuda_dev *d, float *buf, size_t count, int peer, int send)
{
	struct nccl_api *n = d->nccl;
	if (!n->send || !n->recv) {
		fl_cuda_error(d, FL_ERUNTIME, "cuda: point-to-point transfers need ncclSend/ncclRecv (NCCL 2.7 or later); "
					     "%s lacks them", FL_NCCL_SONAME);
		return;
	}
	ncclResult_t r = send ? n->send(buf, count, ncclFloat, peer, n->comm, d->comm)
			      : n->recv(buf, count, ncclFloat, peer, n->comm, d->comm);
	if (r != ncclSuccess)
		fl_cuda_error(d, FL_ERUNTIME, "cuda: %s rank %d failed: %s", send ? "ncclSend to" : "ncclRecv from", peer,
			     n->error_string(r));
}

void fl_cuda_nccl_close(struct cuda_dev *d)
{
	struct nccl_api *n = d->nccl;
	if (!n)
		return;
	if (n->comm)
		n->destroy(n->comm);
	/* never dlclose'd: NCCL keeps threads (its proxy and watchdog) for the
	 * life of the process, which would run unmapped code after a dlclose */
	free(n);
	d->nccl = NULL;
}
#else
struct nccl_api {
	int unused;
};
enum fl_status fl_cuda_nccl_open(struct cuda_dev *d, int rank, int world)
{
	(void)d;
	(void)rank;
	float ok = 0.0f; /* the other ranks wait for this vote */
	enum fl_status st = fl_comm_allreduce_sum(&ok, 1);
	if (st)
		return st;
	return fl_error(FL_ERUNTIME, "cuda: %d ranks need NCCL, and this faultline was built without it (no nccl.h)", world);
}
void fl_cuda_nccl_allreduce(struct cuda_dev *d, float *buf, size_t count)
{
	(void)buf;
	(void)count;
	fl_cuda_error(d, FL_ERUNTIME, "cuda: collectives need NCCL, which this faultline was built without");
}
void fl_cuda_nccl_sendrecv(struct cuda_dev *d, float *buf, size_t count, int peer, int send)
{
	(void)buf;
	(void)count;
	(void)peer;
	(void)send;
	fl_cuda_error(d, FL_ERUNTIME, "cuda: point-to-point transfers need NCCL, which this faultline was built without");
}
void fl_cuda_nccl_close(struct cuda_dev *d) { (void)d; }
#endif
