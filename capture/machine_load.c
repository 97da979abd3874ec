#include "capture/machine_load.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

void fl_machine_sample(struct fl_machine_sample *s)
{
	memset(s, 0, sizeof(*s));
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	if (f) {
		unsigned long long v[10] = {0};
		/* cpu  user nice system idle iowait irq softirq steal guest guest_nice */
		int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
			       &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
		fclose(f);
		if (n >= 8 && hz > 0) {
			unsigned long long all = 0;
			for (int k = 0; k < 8; k++) /* guest time is already inside user */
				all += v[k];
			s->have_stat = 1;
			s->steal_ms = (double)v[7] * 1000.0 / (double)hz;
			s->all_ms = (double)all * 1000.0 / (double)hz;
			/* at work: not idle (v[3]), not waiting on I/O (v[4]); nice'd
			 * time counts (the ranks may run nice'd themselves) */
			s->busy_ms = (double)(all - v[3] - v[4]) * 1000.0 / (double)hz;
			s->tick_ms = 1000.0 / (double)hz;
		}
	}
	f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &s->loadavg_1m) == 1)
			s->have_loadavg = 1;
		fclose(f);
	}
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		s->involuntary = ru.ru_nivcsw;
		s->voluntary = ru.ru_nvcsw;
		s->self_cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
				 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
	}
}

void fl_machine_load_between(const struct fl_machine_sample *a, const struct fl_machine_sample *b, double wall_ms,
			     struct fl_machine_load *out)
{
	memset(out, 0, sizeof(*out));
	out->wall_ms = wall_ms;
	if (a->have_stat && b->have_stat && b->all_ms >= a->all_ms) {
		out->have_stat = 1;
		out->steal_ms = b->steal_ms - a->steal_ms;
		double all = b->all_ms - a->all_ms;
		out->steal_share = all > 0 ? out->steal_ms / all : 0;
		out->busy_ms = b->busy_ms - a->busy_ms;
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		out->busy_resolution_ms = 2 * b->tick_ms * (double)(ncpu > 0 ? ncpu : 1);
	}
	out->have_loadavg = a->have_loadavg;
	out->loadavg_1m = a->loadavg_1m;
	out->involuntary_switches = b->involuntary - a->involuntary;
	out->self_cpu_ms = b->self_cpu_ms - a->self_cpu_ms;
}

int fl_machine_load_busy(const struct fl_machine_load *l)
{
	return l->have_stat && l->steal_share > 0.05;
}

/* Per-CPU busy and total ticks from /proc/stat's "cpuN" lines. */
static int read_cpus(unsigned long long *busy, unsigned long long *all, int ncpu)
{
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	for (int c = 0; c < ncpu; c++)
		all[c] = busy[c] = 0;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		int c;
		unsigned long long v[8] = {0};
		/* cpuN user nice system idle iowait irq softirq steal */
		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &c, &v[0], &v[1], &v[2], &v[3], &v[4],
			   &v[5], &v[6], &v[7]) < 5 || c < 0 || c >= ncpu)
			continue;
		for (int k = 0; k < 8; k++)
			all[c] += v[k];
		busy[c] = all[c] - v[1] - v[3] - v[4]; /* nice'd work yields to ours: not busy */
	}
	fclose(f);
	return 0;
}

int fl_cpu_busy(double window_ms, double *busy, int ncpu)
{
	if (ncpu <= 0)
		return -1;
	unsigned long long *b0 = calloc((size_t)ncpu * 4, sizeof(*b0));
	if (!b0)
		return -1;
	unsigned long long *a0 = b0 + ncpu, *b1 = a0 + ncpu, *a1 = b1 + ncpu;
	int rc = read_cpus(b0, a0, ncpu);
	if (rc == 0) {
		struct timespec ts = {(time_t)(window_ms / 1000), (long)((window_ms - 1000 * (double)(long)(window_ms / 1000)) * 1e6)};
		nanosleep(&ts, NULL);
		rc = read_cpus(b1, a1, ncpu);
	}
	for (int c = 0; rc == 0 && c < ncpu; c++)
		busy[c] = a1[c] > a0[c] ? (double)(b1[c] - b0[c]) / (double)(a1[c] - a0[c]) : -1;
	free(b0);
	return rc;
}
