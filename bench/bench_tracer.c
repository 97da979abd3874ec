/* bench_tracer — what recording costs.
 *
 *  1. ns per recorded event (one span: begin + end) on the hot path, beside the
 *     floor of two timestamp reads with rdtsc and with clock_gettime; and per
 *     recorded op with its inputs' shapes (two tensors, as fl::mm; four inputs,
 *     as fl::as_strided), each input built from the tensor as the runtime does;
 *  2. a healthy workload step traced vs untraced, interleaved in blocks so that
 *     machine noise hits both alike; medians and their ratio.
 * usage: bench_tracer [EVENTS] [STEPS]    (defaults 2000000, 4000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "capture/clock.h"
#include "capture/tracer.h"
#include "runtime/device.h"
#include "generator/workload.h"
#include "grader/analysis/host_metrics.h"

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static volatile uint64_t sink;

static void empty_kernel(const struct fl_kernel_args *a) { (void)a; }

static double best_of(int reps, double (*fn)(long), long n)
{
	double best = 1e30;
	for (int r = 0; r < reps; r++) {
		double v = fn(n);
		if (v < best)
			best = v;
	}
	return best;
}

static double two_rdtsc(long n)
{
#if defined(__x86_64__)
	double t0 = now_ns();
	uint64_t acc = 0;
	for (long i = 0; i < n; i++)
		acc += __rdtsc() ^ __rdtsc();
	sink = acc;
	return (now_ns() - t0) / (double)n;
#else
	(void)n;
	return 0;
#endif
}

static double two_clock_gettime(long n)
{
	double t0 = now_ns();
	uint64_t acc = 0;
	for (long i = 0; i < n; i++)
		acc += fl_clock_realtime_ns() ^ fl_clock_realtime_ns();
	sink = acc;
	return (now_ns() - t0) / (double)n;
}

static uint32_t bench_name;

static double spans(long n)
{
	fl_tracer_reserve((uint32_t)n + 16);
	fl_tracer_set_recording(1);
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		uint32_t s = fl_span_begin(bench_name, FL_EV_CPU_OP);
		fl_span_end(s);
	}
	double t = (now_ns() - t0) / (double)n;
	fl_tracer_set_recording(0);
	return t;
}

static struct fl_tensor bench_x = {.rows = 64, .cols = 96}, bench_w = {.rows = 96, .cols = 96};

static inline struct fl_input bench_in(const struct fl_tensor *t)
{
	return (struct fl_input){.dim = {t->rows, t->cols}, .ndim = 2, .type = t->half ? FL_IN_HALF : FL_IN_FLOAT};
}

static double ops_two_inputs(long n)
{
	fl_tracer_reserve((uint32_t)n + 16);
	fl_tracer_set_recording(1);
	const struct fl_tensor *volatile px = &bench_x, *volatile pw = &bench_w;
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		const struct fl_input in[] = {bench_in(px), bench_in(pw)};
		uint32_t s = fl_op_begin(bench_name, in, 2);
		fl_span_end(s);
	}
	double t = (now_ns() - t0) / (double)n;
	fl_tracer_set_recording(0);
	return t;
}

static double ops_four_inputs(long n)
{
	fl_tracer_reserve((uint32_t)n + 16);
	fl_tracer_set_recording(1);
	const struct fl_tensor *volatile px = &bench_x;
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		const struct fl_input in[] = {bench_in(px), {.type = FL_IN_SCALAR_LIST}, {.type = FL_IN_SCALAR_LIST},
					      {.type = FL_IN_SCALAR}};
		uint32_t s = fl_op_begin(bench_name, in, 4);
		fl_span_end(s);
	}
	double t = (now_ns() - t0) / (double)n;
	fl_tracer_set_recording(0);
	return t;
}

static double spans_off(long n)
{
	fl_tracer_set_recording(0);
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		uint32_t s = fl_span_begin(bench_name, FL_EV_CPU_OP);
		fl_span_end(s);
	}
	return (now_ns() - t0) / (double)n;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n_events = argc > 1 ? atol(argv[1]) : 2000000;
	long n_steps = argc > 2 ? atol(argv[2]) : 4000;
	fl_tracer_init(1u << 16);
	fl_tracer_thread_attach("bench", -1);
	bench_name = fl_tracer_intern("fl::bench");

	printf("clock source: %s (%.3f GHz)\n", fl_clock_source(), fl_clock_tsc_hz() / 1e9);
	printf("| what | ns |\n|---|---|\n");
	printf("| two rdtsc reads (floor) | %.1f |\n", best_of(5, two_rdtsc, n_events));
	printf("| two clock_gettime reads | %.1f |\n", best_of(5, two_clock_gettime, n_events));
	printf("| recorded span, begin + end (faultline) | %.1f |\n", best_of(5, spans, n_events));
	printf("| recorded op with two tensor inputs' shapes (fl::mm) | %.1f |\n", best_of(5, ops_two_inputs, n_events));
	printf("| recorded op with four inputs' shapes (fl::as_strided) | %.1f |\n", best_of(5, ops_four_inputs, n_events));
	printf("| span calls with recording off | %.1f |\n", best_of(5, spans_off, n_events));

	/* a healthy step, traced vs untraced */
	struct fl_backend be = {.ops = fl_backend_find("cpu")};
	struct fl_backend_config cfg = {.world_size = 1};
	be.ops->open(&be, &cfg);
	static const char *const phases[] = {"data_loading", "forward", "metrics"};
	struct fl_workload_shape shape = {.batch = 64, .dim = 512, .alloc = FL_ALLOC_SYSTEM, .world = 1};
	struct fl_calibration cal;
	fl_workload_calibrate(&cal, &be, &shape, phases, 3, 0.3, 0);
	shape.dim = cal.dim;
	struct fl_workload w;
	fl_workload_init(&w, &be, &shape, 0);
	uint32_t step_name = fl_tracer_intern("ProfilerStep#0"), ph[3];
	for (int p = 0; p < 3; p++)
		ph[p] = fl_tracer_intern(phases[p]);
	double *on = calloc((size_t)n_steps, sizeof(double)), *off = calloc((size_t)n_steps, sizeof(double));
	long n_on = 0, n_off = 0;
	uint32_t events_per_step = 0;
	const long block = 50;
	for (long b = 0; b < n_steps / block; b++) {
		int traced = b % 2;
		fl_tracer_reserve((uint32_t)(block * 64));
		fl_tracer_set_recording(traced);
		for (long i = 0; i < block; i++) {
			double t0 = now_ns();
			uint32_t s = fl_span_begin(step_name, FL_EV_USER_ANNOTATION);
			for (int p = 0; p < 3; p++) {
				uint32_t q = fl_span_begin(ph[p], FL_EV_USER_ANNOTATION);
				fl_workload_run_phase(&w, phases[p]);
				fl_span_end(q);
			}
			fl_span_end(s);
			double t = (now_ns() - t0) / 1e3;
			if (traced)
				on[n_on++] = t;
			else
				off[n_off++] = t;
		}
		if (traced)
			events_per_step = fl_tracer_max_count() / (uint32_t)block;
		fl_tracer_set_recording(0);
	}
	qsort(on, (size_t)n_on, sizeof(double), cmp_d);
	qsort(off, (size_t)n_off, sizeof(double), cmp_d);
	double m_on = on[n_on / 2], m_off = off[n_off / 2];
	printf("\nhealthy step (dim %d, %u events/step), %ld steps each, interleaved blocks of %ld:\n", cal.dim,
	       events_per_step, n_on, block);
	printf("| step | median us |\n|---|---|\n| untraced | %.1f |\n| traced | %.1f |\n| traced / untraced | %.3f |\n",
	       m_off, m_on, m_on / m_off);
	fl_workload_release(&w);
	free(on);
	free(off);

	/* launch + kernel pairs on the emulated device: host cost per launch with the
	 * tracer recording (a cuda_runtime span on the host, a kernel record on the
	 * worker) and not recording */
	struct fl_backend emu = {.ops = fl_backend_find("emu")};
	emu.ops->open(&emu, &cfg);
	static const struct fl_kernel k_empty = {"empty_kernel", empty_kernel};
	struct fl_kernel_args ka = {0};
	long n_launch = n_events / 10 > 1000 ? n_events / 10 : 1000;
	double best_on = 1e30, best_off = 1e30;
	for (int rep = 0; rep < 6; rep++) {
		int rec = rep % 2;
		fl_dev_synchronize(&emu);
		fl_tracer_reserve((uint32_t)(2 * n_launch + 64));
		fl_tracer_set_recording(rec);
		double t0 = now_ns();
		for (long i = 0; i < n_launch; i++)
			emu.ops->launch(&emu, &k_empty, &ka, FL_STREAM_COMPUTE);
		fl_dev_synchronize(&emu);
		double per = (now_ns() - t0) / (double)n_launch;
		fl_tracer_set_recording(0);
		if (rec && per < best_on)
			best_on = per;
		if (!rec && per < best_off)
			best_off = per;
	}
	printf("\nemu launch + kernel pairs (%ld launches, queue drained; best of 3 each):\n", n_launch);
	printf("| what | ns per pair |\n|---|---|\n| not recording | %.0f |\n| recording (launch span + kernel record) | %.0f |\n"
	       "| recording cost per pair | %.0f |\n", best_off, best_on, best_on - best_off);
	emu.ops->close(&emu);
	fl_tracer_release();
	return 0;
}
