/* fleet_node_failure — node failures as a Poisson process per GPU at a known
 * MTBF: each node fails at rate gpus_per_node / MTBF, the failing GPU logs an
 * XID, the jobs on the node end NODE_FAIL, the node is repaired. */
#include "faults/fleet_fault.h"

static const struct fl_param_spec params[] = {
	{"mtbf_years", FL_PARAM_NUMBER, 20, 0.01, 10000, NULL, "years", "per-GPU mean time between failures"},
	{"repair_hours", FL_PARAM_NUMBER, 4, 0, 10000, NULL, "h", "a failed node is down this long"},
	{"xid", FL_PARAM_INT, 79, 1, 1023, NULL, NULL, "the XID code the failing GPU logs (79: fallen off the bus)"},
};

static enum fl_status apply(const struct fl_fleet_fault_ops *ops, const double *v, struct fl_fleet_model *m)
{
	m->gpu_mtbf_h = fl_fleet_param(ops, v, "mtbf_years") * 8766.0;
	m->repair_h = fl_fleet_param(ops, v, "repair_hours");
	m->xid_code = (int)fl_fleet_param(ops, v, "xid");
	return FL_OK;
}

const struct fl_fleet_fault_ops fl_fleet_fault_node_failure = {
	.name = "node_failure",
	.summary = "node failures as a Poisson process per GPU at a known MTBF (NODE_FAIL + an XID)",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.apply = apply,
};
