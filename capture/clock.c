#include "capture/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

int fl_clock_use_tsc;
static int inited;
static uint64_t tsc0, rt0;   /* anchor pair */
static double ns_per_tick = 1.0;

static int tsc_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

/* A (tsc, realtime) pair with the realtime read bracketed as tightly as we can. */
static void sample_pair(uint64_t *tsc, uint64_t *rt)
{
#if defined(__x86_64__)
	uint64_t best = UINT64_MAX;
	*tsc = __rdtsc(); /* the first pass below always replaces these */
	*rt = fl_clock_realtime_ns();
	for (int i = 0; i < 16; i++) {
		uint64_t a = __rdtsc();
		uint64_t r = fl_clock_realtime_ns();
		uint64_t b = __rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*rt = r;
		}
	}
#else
	*tsc = *rt = fl_clock_realtime_ns();
#endif
}

void fl_sleep_ms(double ms)
{
	if (ms <= 0)
		return;
	struct timespec ts;
	ts.tv_sec = (time_t)(ms / 1000.0);
	ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void fl_clock_init(void)
{
	if (inited)
		return;
	inited = 1;
	const char *env = getenv("FL_CLOCK");
	fl_clock_use_tsc = tsc_invariant() && !(env && strcmp(env, "realtime") == 0);
	if (!fl_clock_use_tsc) {
		ns_per_tick = 1.0;
		return;
	}
	uint64_t t1, r1;
	sample_pair(&tsc0, &rt0);
	fl_sleep_ms(20);
	sample_pair(&t1, &r1);
	ns_per_tick = (double)(r1 - rt0) / (double)(t1 - tsc0);
}

void fl_clock_use_realtime(void)
{
	inited = 1;
	fl_clock_use_tsc = 0;
	ns_per_tick = 1.0;
}

void fl_clock_refine(void)
{
	if (!fl_clock_use_tsc)
		return;
	uint64_t t1, r1;
	sample_pair(&t1, &r1);
	if (t1 > tsc0 + 1000000 && r1 > rt0)
		ns_per_tick = (double)(r1 - rt0) / (double)(t1 - tsc0);
}

uint64_t fl_clock_to_ns(uint64_t ticks)
{
	if (!fl_clock_use_tsc)
		return ticks;
	double d = ((double)(int64_t)(ticks - tsc0)) * ns_per_tick;
	return rt0 + (uint64_t)(int64_t)d;
}

uint64_t fl_clock_delta_ns(uint64_t t0, uint64_t t1)
{
	if (t1 <= t0)
		return 0;
	return fl_clock_use_tsc ? (uint64_t)((double)(t1 - t0) * ns_per_tick) : t1 - t0;
}

const char *fl_clock_source(void)
{
	return fl_clock_use_tsc ? "tsc" : "clock_gettime(CLOCK_REALTIME)";
}

double fl_clock_tsc_hz(void) { return fl_clock_use_tsc ? 1e9 / ns_per_tick : 0.0; }
