/* machine_load.h — how busy the machine was while a window was recorded.
 *
 * A slow VM moment (another guest on the host, a noisy neighbour on the same
 * cores) stretches every timing in a trace without anything in the trace
 * saying so. The truth records it: the hypervisor's steal time (Linux
 * /proc/stat, all CPUs), this process's involuntary context switches
 * (getrusage: the scheduler took the core away), the one-minute load
 * average when the window opened, and the CPU time other processes took
 * during the window: every CPU's busy time (/proc/stat) less the run's own
 * processes' (getrusage, summed over the ranks on this host by the truth).
 * Readings that cannot be taken (no /proc) are left out, never guessed.
 */
#ifndef FL_MACHINE_LOAD_H
#define FL_MACHINE_LOAD_H

struct fl_machine_sample {
	int have_stat;            /* /proc/stat was read */
	double steal_ms, all_ms;  /* summed over CPUs since boot */
	double busy_ms;           /* ...of it at work: all_ms less idle and I/O wait */
	double tick_ms;           /* /proc/stat's unit */
	int have_loadavg;
	double loadavg_1m;
	long involuntary, voluntary; /* context switches of this process */
	double self_cpu_ms;          /* this process's CPU time, every thread (getrusage) */
};

struct fl_machine_load {
	int have_stat;
	double steal_ms;          /* steal time of all CPUs during the window */
	double steal_share;       /* of all CPU time during the window, 0..1 */
	double busy_ms;           /* every CPU's busy time during the window, summed */
	double busy_resolution_ms; /* busy_ms's: /proc/stat counts in ticks, and each of the two reads is
	                            * up to one tick behind on each CPU */
	int have_loadavg;
	double loadavg_1m;        /* when the window opened */
	long involuntary_switches;
	double self_cpu_ms;       /* this process's CPU time during the window */
	double wall_ms;
};

void fl_machine_sample(struct fl_machine_sample *s);
/* What happened between two samples (b after a), over wall_ms of wall time. */
void fl_machine_load_between(const struct fl_machine_sample *a, const struct fl_machine_sample *b, double wall_ms,
			     struct fl_machine_load *out);
/* 1 when the hypervisor took over 5% of the CPU time during the window (the
 * load average is recorded, not judged: faultline's own ranks raise it). */
int fl_machine_load_busy(const struct fl_machine_load *l);

/* How busy each CPU is, over a window of window_ms that this call sleeps
 * through: busy[c] (0..1) is the share of CPU c's time that went to work at
 * normal priority or above (user, system, interrupts, steal) rather than to
 * idle, I/O wait or nice'd processes (which yield the core), -1 for a CPU
 * /proc/stat does not list; ncpu entries. Returns 0, or -1 without /proc/stat. */
int fl_cpu_busy(double window_ms, double *busy, int ncpu);
/* A CPU busier than this share over such a window is another process's: the
 * ranks' round robin (comm) and the emulated device's core leave it out. */
#define FL_CPU_BUSY_SHARE 0.5

#endif
