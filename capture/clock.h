/* clock.h — the capture clock: cheap ticks on the hot path, wall-clock ns on export.
 *
 * On x86-64 with an invariant TSC (cpuid 0x80000007 EDX bit 8) a tick is one
 * rdtsc (~11 ns in a VM guest, vs ~25 ns for clock_gettime). Ticks are mapped to
 * CLOCK_REALTIME nanoseconds — the clock CUPTI stamps device records with — by a
 * line fitted through (tsc, realtime) pairs taken at init and at refine time, so
 * host and device events share one timeline. Elsewhere, or with FL_CLOCK=realtime
 * in the environment, a tick is a CLOCK_REALTIME nanosecond.
 */
#ifndef FL_CLOCK_H
#define FL_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

extern int fl_clock_use_tsc;

static inline uint64_t fl_clock_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One timestamp for the hot path. */
static inline uint64_t fl_clock_ticks(void)
{
#if defined(__x86_64__)
	if (__builtin_expect(fl_clock_use_tsc, 1))
		return __rdtsc();
#endif
	return fl_clock_realtime_ns();
}

/* Choose the source and calibrate (~20 ms when the TSC is used). Idempotent. */
void fl_clock_init(void);
/* Make a tick a CLOCK_REALTIME nanosecond from now on (the cuda backend does,
 * so host spans and CUPTI records share one clock with no fitted mapping).
 * Call before any tick of the recorded window is taken. */
void fl_clock_use_realtime(void);
/* Take another (tsc, realtime) pair and refit the slope over the whole run. */
void fl_clock_refine(void);
/* CLOCK_REALTIME nanoseconds of a tick value. */
uint64_t fl_clock_to_ns(uint64_t ticks);
/* Nanoseconds between two tick values (t1 >= t0). */
uint64_t fl_clock_delta_ns(uint64_t t0, uint64_t t1);
/* "tsc" or "clock_gettime(CLOCK_REALTIME)". */
const char *fl_clock_source(void);
/* Measured TSC frequency in Hz (0 when the TSC is not used). */
double fl_clock_tsc_hz(void);

/* Sleep for ms milliseconds (really: nanosleep, restarted on EINTR). */
void fl_sleep_ms(double ms);

#endif
