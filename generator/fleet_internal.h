/* fleet_internal.h — what the parts of the fleet generator share: the parsed
 * scenario, the simulated jobs and events, the random numbers. */
#ifndef FL_GEN_FLEET_INTERNAL_H
#define FL_GEN_FLEET_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "faults/fleet_fault.h"

struct fl_fleet_class {
	const char *name, *type;  /* owned by the scenario document */
	double share;             /* of arrivals, normalised */
	long gpus[16];
	double gpu_weight[16];    /* cumulative, normalised */
	size_t ngpus;
	double median_min, sigma; /* lognormal work time */
	double p_cancel;          /* runs its work, then is cancelled (converged, open-ended) */
	double p_fail;            /* fails (user/application) at a uniform point of its work */
	double p_restart;         /* resubmitted after a NODE_FAIL */
};

struct fl_fleet_fault_spec {
	const struct fl_fleet_fault_ops *ops;
	double values[16];
	int vary[16];
	double lo[16], hi[16];
};

struct fl_fleet_scenario {
	cJSON *doc;
	const char *file;
	const char *name, *description, *rubric;
	int kalos;                  /* the CSV form: 1 Kalos, 0 Seren */
	uint64_t seed;
	int nodes, gpus_per_node;
	int64_t start;              /* epoch seconds */
	double days, jobs_per_day, time_limit_h, xid_noise_per_day, restart_delay_min;
	struct fl_fleet_class cls[16];
	size_t ncls;
	struct fl_fleet_fault_spec faults[8];
	size_t nfaults;
	long min_gpus, job_gpus;    /* the analysis the rubric uses */
	double min_hours, ckpt_cost_min;
	const char *out_dir, *jobs_file, *xid_file, *truth_file;
	int varied;                 /* the vary ranges were drawn */
};

enum fl_fleet_state { FJ_COMPLETED, FJ_CANCELLED, FJ_FAILED, FJ_TIMEOUT, FJ_NODE_FAIL };
extern const char *const fl_fleet_state_names[5];

struct fl_fleet_job {
	int64_t submit, start, end;
	long gpus;
	int cls, user, state;
	int restart_of_failure;   /* a resubmission after a NODE_FAIL */
	int *nodes;               /* while running */
	int nnodes;
	double work_s;            /* useful work still to do at start */
	int64_t planned_end;
	double ckpt_interval_s;   /* 0: no checkpoints */
	double ckpt_s, lost_s, restart_s; /* simulated: checkpoint time, work lost, restart time spent */
	uint32_t gen;             /* invalidates a killed job's end event */
};

struct fl_xid_event {
	int64_t t;
	int gpu;                  /* node * gpus_per_node + index */
	int code;
};

/* The simulation's outcome. */
struct fl_fleet_sim {
	struct fl_fleet_job *jobs;
	size_t njobs;
	struct fl_xid_event *xid;
	size_t nxid;
	struct fl_fleet_model model;
	long failures;            /* failure events on a node that was up */
	long failures_busy;       /* ... that killed at least one job */
	long failures_corr;       /* ... of them added by the correlated rack */
	long failures_bad_node;   /* ... on a node whose rate multiplier is above 1 */
	long restarts;
	int64_t end;              /* when the last job ended */
};

enum fl_status fl_fleet_scenario_load(const char *path, struct fl_fleet_scenario *sc);
/* Draw the declared vary ranges from seed. */
void fl_fleet_scenario_vary(struct fl_fleet_scenario *sc, uint64_t seed);
void fl_fleet_scenario_release(struct fl_fleet_scenario *sc);

enum fl_status fl_fleet_simulate(const struct fl_fleet_scenario *sc, struct fl_fleet_sim *sim);
void fl_fleet_sim_release(struct fl_fleet_sim *sim);

/* Write the CSVs, the README and the truth into dir. */
enum fl_status fl_fleet_write(const struct fl_fleet_scenario *sc, const struct fl_fleet_sim *sim, const char *dir,
			      cJSON **truth);

/* xoshiro256** seeded by splitmix64. */
struct fl_rng {
	uint64_t s[4];
};
void fl_rng_seed(struct fl_rng *r, uint64_t seed);
uint64_t fl_rng_next(struct fl_rng *r);
double fl_rng_uniform(struct fl_rng *r);   /* (0, 1) */
double fl_rng_exp(struct fl_rng *r, double mean);
double fl_rng_normal(struct fl_rng *r);

#endif
