/* fleet_correlated_rack — failures that are not independent: when a node of
 * one rack fails, each other node of that rack goes down with it with some
 * probability (a shared switch, PDU or cooling loop). Breaks the Poisson
 * assumption behind the MTBF interval, on purpose. */
#include "faults/fleet_fault.h"

static const struct fl_param_spec params[] = {
	{"rack", FL_PARAM_INT, 0, 0, 100000, NULL, NULL, "the rack (nodes rack*nodes_per_rack ...)"},
	{"nodes_per_rack", FL_PARAM_INT, 8, 1, 100000, NULL, "nodes", "nodes in a rack"},
	{"p", FL_PARAM_NUMBER, 0.5, 0, 1, NULL, NULL, "probability each other node of the rack fails with one"},
};

static enum fl_status apply(const struct fl_fleet_fault_ops *ops, const double *v, struct fl_fleet_model *m)
{
	long rack = (long)fl_fleet_param(ops, v, "rack"), npr = (long)fl_fleet_param(ops, v, "nodes_per_rack");
	if (rack * npr >= m->nodes)
		return fl_error(FL_EINPUT, "fleet fault '%s': rack %ld of %ld nodes starts at node %ld, beyond the fleet's "
				"%d nodes", ops->name, rack, npr, rack * npr, m->nodes);
	m->corr_rack = (int)rack;
	m->nodes_per_rack = (int)npr;
	m->corr_p = fl_fleet_param(ops, v, "p");
	return FL_OK;
}

const struct fl_fleet_fault_ops fl_fleet_fault_correlated_rack = {
	.name = "correlated_rack",
	.summary = "a failure-correlated rack: one node's failure takes others of its rack down with it",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.apply = apply,
};
