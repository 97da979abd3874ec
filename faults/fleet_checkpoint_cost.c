/* fleet_checkpoint_cost — large jobs checkpoint: every interval they stop for
 * the checkpoint cost; a node failure loses the work since the last
 * checkpoint, and a restarted job spends time loading it. The truth's goodput
 * waterfall separates checkpoint overhead, lost work and restart time. */
#include "faults/fleet_fault.h"

static const struct fl_param_spec params[] = {
	{"cost_min", FL_PARAM_NUMBER, 10, 0, 10000, NULL, "min", "the time one checkpoint takes"},
	{"interval_min", FL_PARAM_NUMBER, 0, 0, 1000000, NULL, "min",
	 "checkpoint every interval (0: Young's sqrt(2 C M) for the job's injected MTBF)"},
	{"min_gpus", FL_PARAM_INT, 64, 1, 1000000, NULL, "GPUs", "jobs with at least this many GPUs checkpoint"},
	{"restart_min", FL_PARAM_NUMBER, 15, 0, 100000, NULL, "min", "a restarted job loads its checkpoint this long"},
};

static enum fl_status apply(const struct fl_fleet_fault_ops *ops, const double *v, struct fl_fleet_model *m)
{
	m->ckpt_cost_min = fl_fleet_param(ops, v, "cost_min");
	m->ckpt_interval_min = fl_fleet_param(ops, v, "interval_min");
	m->ckpt_min_gpus = (long)fl_fleet_param(ops, v, "min_gpus");
	m->restart_min = fl_fleet_param(ops, v, "restart_min");
	return FL_OK;
}

const struct fl_fleet_fault_ops fl_fleet_fault_checkpoint_cost = {
	.name = "checkpoint_cost",
	.summary = "checkpointing of large jobs: its cost, the work a failure loses, the restart time",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.apply = apply,
};
