/* backend_cpu.c — kernels run inline on the host thread.
 *
 * A clock factor (set_clock_factor) stretches every kernel by duty cycle: the
 * kernel runs at full speed, then the thread pauses until factor × its real
 * time has passed (sleeping the bulk, spinning the last stretch, so short
 * kernels are stretched as exactly as long ones), as a clock-throttled CPU
 * takes longer for the same work. The statistics count kernels, their real
 * time and the time added; each step's fastest metered GEMM per multiply-add
 * is kept (gemm_speed), as on emu, to tell a machine that changed speed. The
 * state is the process's own (a cpu run is one rank per process): open resets
 * it, so nothing is allocated. */
#include <string.h>

#include "capture/clock.h"
#include "runtime/device.h"

/* Below this much extra time the pause spins instead of sleeping. */
#define CPU_SPIN_NS 200000.0

struct cpu_dev {
	double clock_factor;
	struct fl_device_stats st;
	long step; /* the host's step (mark_step); -1 before the first */
	struct fl_gemm_meter gemm;
};

static struct cpu_dev cpu_state;

static enum fl_status cpu_open(struct fl_backend *be, const struct fl_backend_config *cfg)
{
	be->cfg = *cfg;
	memset(&cpu_state, 0, sizeof(cpu_state));
	cpu_state.clock_factor = 1.0;
	cpu_state.step = -1;
	be->state = &cpu_state;
	return FL_OK;
}

static void cpu_launch(struct fl_backend *be, const struct fl_kernel *k, const struct fl_kernel_args *a, int stream)
{
	(void)stream;
	struct cpu_dev *d = be->state;
	int kind = FL_GEMM_MAIN;
	double macs = d ? fl_gemm_macs(k, a, &kind) : 0;
	if (!d || d->clock_factor <= 1.0) {
		if (macs > 0) {
			uint64_t t0 = fl_clock_ticks();
			k->run(a);
			fl_gemm_meter_note(&d->gemm, kind, d->step, (double)fl_clock_delta_ns(t0, fl_clock_ticks()), macs);
		} else {
			k->run(a);
		}
		if (d)
			d->st.kernels++;
		return;
	}
	uint64_t t0 = fl_clock_ticks();
	k->run(a);
	uint64_t t1 = fl_clock_ticks();
	double real_ns = (double)fl_clock_delta_ns(t0, t1);
	fl_gemm_meter_note(&d->gemm, kind, d->step, real_ns, macs);
	double extra_ns = real_ns * (d->clock_factor - 1.0);
	if (extra_ns > CPU_SPIN_NS)
		fl_sleep_ms((extra_ns - CPU_SPIN_NS / 2) / 1e6);
	uint64_t t2 = fl_clock_ticks();
	while ((double)fl_clock_delta_ns(t1, t2) < extra_ns)
		t2 = fl_clock_ticks();
	d->st.kernel_ms += real_ns / 1e6;
	d->st.stretched_ms += (double)fl_clock_delta_ns(t1, t2) / 1e6;
	d->st.kernels++;
}

static void cpu_copy(struct fl_backend *be, void *dst, const void *src, size_t bytes, enum fl_copy_kind kind,
		     int stream)
{
	(void)kind;
	(void)stream;
	memmove(dst, src, bytes);
	struct cpu_dev *d = be->state;
	if (d)
		d->st.copies++;
}

static void cpu_mark_step(struct fl_backend *be, long step)
{
	struct cpu_dev *d = be->state;
	if (d)
		d->step = step;
}

static double cpu_gemm_speed(const struct fl_backend *be, int kind, long step)
{
	const struct cpu_dev *d = be->state;
	return d ? fl_gemm_meter_get(&d->gemm, kind, step) : 0;
}

static enum fl_status cpu_set_clock_factor(struct fl_backend *be, double factor)
{
	struct cpu_dev *d = be->state;
	if (!d)
		return fl_error(FL_EINTERNAL, "cpu: clock factor set on a backend that was never opened");
	if (!(factor >= 1.0))
		return fl_error(FL_EINPUT, "cpu: clock factor %g must be >= 1", factor);
	d->clock_factor = factor;
	return FL_OK;
}

static void cpu_stats(struct fl_backend *be, struct fl_device_stats *out, int reset)
{
	struct cpu_dev *d = be->state;
	if (!d) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = d->st;
	if (reset)
		memset(&d->st, 0, sizeof(d->st));
}

static const char *cpu_device_properties(struct fl_backend *be)
{
	(void)be;
	return "[]";
}

static void cpu_close(struct fl_backend *be)
{
	be->state = NULL;
}

const struct fl_backend_ops fl_backend_cpu = {
	.name = "cpu",
	.summary = "ops run inline on the host thread (a CPU-only profiler capture)",
	.asynchronous = 0,
	.open = cpu_open,
	.mark_step = cpu_mark_step,
	.gemm_speed = cpu_gemm_speed,
	.launch = cpu_launch,
	.copy = cpu_copy,
	.set_clock_factor = cpu_set_clock_factor,
	.stats = cpu_stats,
	.device_properties = cpu_device_properties,
	.close = cpu_close,
};
