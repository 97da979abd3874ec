/* fleet_bad_node — one node that fails repeatedly: its failure rate is a
 * multiple of a healthy node's (a flaky board, a bad PSU). The fleet MTBF a
 * learner measures then mixes one bad node with healthy ones. */
#include "faults/fleet_fault.h"

static const struct fl_param_spec params[] = {
	{"node", FL_PARAM_INT, 0, 0, 1000000, NULL, NULL, "the bad node's index"},
	{"factor", FL_PARAM_NUMBER, 50, 1, 100000, NULL, "x", "its failure rate, as a multiple of a healthy node's"},
};

static enum fl_status apply(const struct fl_fleet_fault_ops *ops, const double *v, struct fl_fleet_model *m)
{
	long node = (long)fl_fleet_param(ops, v, "node");
	if (node >= m->nodes)
		return fl_error(FL_EINPUT, "fleet fault '%s': node %ld is not in a fleet of %d nodes", ops->name, node,
				m->nodes);
	m->node_rate[node] *= fl_fleet_param(ops, v, "factor");
	return FL_OK;
}

const struct fl_fleet_fault_ops fl_fleet_fault_bad_node = {
	.name = "bad_node",
	.summary = "a bad node that fails repeatedly (its failure rate a multiple of a healthy node's)",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.apply = apply,
};
