/* backend_cpu.c — kernels run inline on the host thread. */
#include <string.h>

#include "runtime/device.h"

static enum fl_status cpu_open(struct fl_backend *be, const struct fl_backend_config *cfg)
{
	be->cfg = *cfg;
	return FL_OK;
}

static void cpu_launch(struct fl_backend *be, const struct fl_kernel *k, const struct fl_kernel_args *a, int stream)
{
	(void)be;
	(void)stream;
	k->run(a);
}

static void cpu_copy(struct fl_backend *be, void *dst, const void *src, size_t bytes, enum fl_copy_kind kind,
		     int stream)
{
	(void)be;
	(void)kind;
	(void)stream;
	memmove(dst, src, bytes);
}

static const char *cpu_device_properties(struct fl_backend *be)
{
	(void)be;
	return "[]";
}

const struct fl_backend_ops fl_backend_cpu = {
	.name = "cpu",
	.summary = "ops run inline on the host thread (a CPU-only profiler capture)",
	.asynchronous = 0,
	.open = cpu_open,
	.launch = cpu_launch,
	.copy = cpu_copy,
	.device_properties = cpu_device_properties,
};
