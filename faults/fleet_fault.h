/* fleet_fault.h — the fleet fault module interface (fleet scenarios, lab R2).
 *
 * A fleet fault is one ops struct in the fleet registry (faults/fleet_registry.c),
 * separate from the trace faults of fault.h: a name, a summary, a parameter
 * schema (the same fl_param_spec, numbers only) and one hook that sets its
 * part of the fleet model the simulation runs (generator/fleet.h). A fleet
 * fault changes what the simulated fleet does (when nodes fail, what a
 * failure costs); the jobs and XID logs record what happened.
 */
#ifndef FL_FLEET_FAULT_H
#define FL_FLEET_FAULT_H

#include <stddef.h>

#include "common/status.h"
#include "faults/fault.h"

/* What the simulation reads. Defaults: no failures, no checkpointing. */
struct fl_fleet_model {
	int nodes, gpus_per_node;
	double gpu_mtbf_h;      /* per-GPU mean time between failures of a healthy GPU; 0: none */
	double repair_h;        /* a failed node is down this long */
	int xid_code;           /* the code the failing GPU logs */
	double *node_rate;      /* [nodes]: multiplier of each node's failure rate (1 healthy) */
	int nodes_per_rack;
	int corr_rack;          /* -1: none; else a failure there takes each other node of the rack down ... */
	double corr_p;          /* ... with this probability, at the same time */
	long ckpt_min_gpus;     /* jobs with at least this many GPUs checkpoint (0: none do) */
	double ckpt_cost_min;   /* each checkpoint stops the job this long */
	double ckpt_interval_min; /* 0: Young's interval from the job's injected MTBF */
	double restart_min;     /* a restarted job spends this long loading its checkpoint */
};

struct fl_fleet_fault_ops {
	const char *name;
	const char *summary;
	const struct fl_param_spec *params; /* FL_PARAM_NUMBER / FL_PARAM_INT only */
	size_t n_params;
	/* called once, in scenario order, with values aligned with params; may
	 * refuse values that do not fit the fleet (a node index beyond it) */
	enum fl_status (*apply)(const struct fl_fleet_fault_ops *ops, const double *values, struct fl_fleet_model *m);
};

/* The value of the parameter named name (aborts on a name the schema lacks). */
double fl_fleet_param(const struct fl_fleet_fault_ops *ops, const double *values, const char *name);

extern const struct fl_fleet_fault_ops *const fl_fleet_faults[];
const struct fl_fleet_fault_ops *fl_fleet_fault_find(const char *name);

#endif
