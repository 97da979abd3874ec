/* backend_cpu.c — kernels run inline on the host thread. */
#include "generator/device.h"

static enum fl_status cpu_open(struct fl_backend *be)
{
	(void)be;
	return FL_OK;
}

static void cpu_launch(struct fl_backend *be, const struct fl_kernel *k, const struct fl_kernel_args *a)
{
	(void)be;
	k->run(a);
}

static void cpu_synchronize(struct fl_backend *be) { (void)be; }

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
	.synchronize = cpu_synchronize,
	.device_properties = cpu_device_properties,
	.close = NULL,
};
