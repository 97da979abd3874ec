#include "capture/machine_load.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
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
	}
	out->have_loadavg = a->have_loadavg;
	out->loadavg_1m = a->loadavg_1m;
	out->involuntary_switches = b->involuntary - a->involuntary;
}

int fl_machine_load_busy(const struct fl_machine_load *l)
{
	return l->have_stat && l->steal_share > 0.05;
}
