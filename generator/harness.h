/* harness.h — runs a scenario on one rank: calibration, the step loop with its
 * phases and fault hooks, the recorded window, then the trace and (rank 0) the
 * truth.
 *
 * Schedule as torch.profiler's: `wait` steps unrecorded, `warmup` steps recorded
 * and discarded (they size the event buffers), `active` steps recorded; steps
 * are numbered from 0, so 1/1/8 records ProfilerStep#2..#9.
 *
 * Ranks: under MPI every rank runs this; rank 0 calibrates and broadcasts the
 * choice, each rank writes NAME.rank-K.json.gz, rank 0 gathers every rank's
 * instances and writes the truth. A watchdog ends a run that stops making
 * progress (FL_WATCHDOG_S seconds, default 120) with a message naming the rank.
 *
 * Faults: the harness calls their hooks (faults/fault.h) and offers them its
 * services through a table of function pointers (struct fl_services): spans,
 * host reads of device tensors, the weights, the clock factor, device stats,
 * the all-reduce schedule, and a scratch folder per rank (made under $TMPDIR
 * before init, removed after the run; a killed run's is removed by the next run,
 * generator/scratch.h). A fault that breaks the span rules
 * (a span it did not declare at init, a declaration after init, a full span
 * table) fails the run with FL_EINPUT naming the fault and the span.
 * Test hook: FL_TEST_DECLARED_SPANS=FILE appends each rank's declared span
 * names to FILE (tests/unit/check_every_fault.c).
 */
#ifndef FL_HARNESS_H
#define FL_HARNESS_H

#include <cjson/cJSON.h>
#include <limits.h>

#include "generator/scenario.h"
#include "generator/workload.h"

struct fl_run_opts {
	const char *out_dir;        /* default "out" */
	const char *backend;        /* NULL: the scenario's */
	long active_steps;          /* 0: the scenario's */
	int seed_set;
	uint64_t seed;
	const struct fl_calibration *calibration; /* reuse (regen); NULL: measure */
	const cJSON *baseline_metrics;            /* the baseline scenario's metrics, if known */
	const char *baseline_name;
	const cJSON *rerecorded;    /* regen: the windows of this scenario it discarded (array), or NULL */
	const cJSON *restarts;      /* regen: the set's earlier rounds, ended by a width change (array), or NULL */
	int quiet;
	int blind;                  /* neutral file names: trace-HASH[.rank-K].json.gz, trace-HASH.truth.json */
};

struct fl_run_result {
	char trace_path[PATH_MAX];   /* this rank's trace */
	char truth_path[PATH_MAX];
	int rank, world_size;
	struct fl_calibration calibration;
	cJSON *metrics;             /* rank 0: owned by the caller */
	double wall_s;
};

enum fl_status fl_run_scenario(const struct fl_scenario *sc, const struct fl_run_opts *o, struct fl_run_result *r);

/* Create dir (and parents) if missing and check that it is writable. */
enum fl_status fl_prepare_out_dir(const char *dir);

/* Start `faultline ARGS` with `ranks` processes under mpirun (as root with
 * --allow-run-as-root). exec: replace this process; else wait for it. */
enum fl_status fl_mpirun(int ranks, char **args, int nargs, int exec);

#endif
