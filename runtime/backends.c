#include <string.h>

#include "runtime/device.h"

extern const struct fl_backend_ops fl_backend_cpu;
extern const struct fl_backend_ops fl_backend_emu;
extern const struct fl_backend_ops fl_backend_cuda;

/* The backend registry. `cuda` is built only with the CUDA toolkit
 * (FAULTLINE_CUDA); without a usable GPU its open fails with the reason. */
const struct fl_backend_ops *const fl_backends[] = {
	&fl_backend_cpu,
	&fl_backend_emu,
#ifdef FL_HAVE_CUDA
	&fl_backend_cuda,
#endif
	NULL,
};

const struct fl_backend_ops *fl_backend_find(const char *name)
{
	for (size_t i = 0; fl_backends[i]; i++)
		if (strcmp(fl_backends[i]->name, name) == 0)
			return fl_backends[i];
	return NULL;
}

void fl_dev_release(struct fl_backend *be, void (*fn)(void *ctx), void *ctx, int stream)
{
	if (be->ops->release)
		be->ops->release(be, fn, ctx, stream);
	else
		fn(ctx);
}

void fl_dev_stream_wait(struct fl_backend *be, int wait_stream, int on_stream)
{
	if (be->ops->stream_wait)
		be->ops->stream_wait(be, wait_stream, on_stream);
}

void fl_dev_stream_synchronize(struct fl_backend *be, int stream)
{
	if (be->ops->stream_synchronize)
		be->ops->stream_synchronize(be, stream);
}

void fl_dev_synchronize(struct fl_backend *be)
{
	if (be->ops->synchronize)
		be->ops->synchronize(be);
}

int fl_dev_compute_core(const struct fl_backend *be, int *busy_left_out, int *quiet_cores)
{
	if (busy_left_out)
		*busy_left_out = 0;
	if (quiet_cores)
		*quiet_cores = 0;
	return be->ops && be->ops->compute_core && be->state ? be->ops->compute_core(be, busy_left_out, quiet_cores)
							      : -1;
}

/* The GEMMs that measure the core, one per workload, each of one shape in
 * every step (and, but for a skewed mixture of experts, on every rank): the data-parallel and single-device workloads'
 * gemm_kernel, a pipeline stage's forward gemm_relu_kernel (a micro-batch's
 * rows; the stages run the same shape), a mixture of experts' first expert
 * GEMM (the rows its expert received: with the routing skewed the hot
 * expert's GEMM of 4-12x the rows ran ~1.25x faster per multiply-add than the
 * others' on this project's VM, so its ranks compare only in a balanced run;
 * the router's GEMV, the one shape every rank shares, did not show the core's
 * speed at all) */
/* And the backward GEMMs of data-parallel and pipeline training, each its own
 * meter: in one comm-bound round a rank's forward GEMM ran at its fast speed
 * in 4 steps of 12, while its backward GEMMs did in 2 of them (the core
 * changed speed inside the step) and cost 1.2-1.4x its peer's. */
static const struct {
	const char *name;
	int kind;
} metered_gemms[] = {
	{"gemm_kernel", FL_GEMM_MAIN},
	{"gemm_relu_kernel", FL_GEMM_MAIN},
	{"expert_gemm_relu_kernel", FL_GEMM_MAIN},
	{"gemm_tn_kernel", FL_GEMM_TN},
	{"gemm_nt_kernel", FL_GEMM_NT},
};

double fl_gemm_macs(const struct fl_kernel *k, const struct fl_kernel_args *a, int *kind)
{
	if (a->m <= 0 || a->n <= 0 || a->k <= 0)
		return 0;
	for (size_t i = 0; i < sizeof(metered_gemms) / sizeof(metered_gemms[0]); i++)
		if (strcmp(k->name, metered_gemms[i].name) == 0) {
			*kind = metered_gemms[i].kind;
			return (double)a->m * a->n * a->k;
		}
	return 0;
}

const char *fl_gemm_kind_name(int kind)
{
	for (size_t i = 0; i < sizeof(metered_gemms) / sizeof(metered_gemms[0]); i++)
		if (metered_gemms[i].kind == kind)
			return metered_gemms[i].name;
	return "?";
}

void fl_gemm_meter_note(struct fl_gemm_meter *m, int kind, long step, double real_ns, double macs)
{
	if (kind < 0 || kind >= FL_GEMM_KINDS || step < 0 || step >= FL_GEMM_METER_STEPS || !(macs > 0))
		return;
	double v = real_ns / macs, *best = &m->ns_per_mac[kind][step];
	if (*best <= 0 || v < *best)
		*best = v;
}

double fl_gemm_meter_get(const struct fl_gemm_meter *m, int kind, long step)
{
	if (kind < 0 || kind >= FL_GEMM_KINDS || step < 0 || step >= FL_GEMM_METER_STEPS)
		return 0;
	return m->ns_per_mac[kind][step];
}
