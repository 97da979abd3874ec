/* fleet_registry.c — every fleet fault module, in one explicit table (the
 * trace faults have theirs in registry.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults/fleet_fault.h"

extern const struct fl_fleet_fault_ops fl_fleet_fault_node_failure;
extern const struct fl_fleet_fault_ops fl_fleet_fault_bad_node;
extern const struct fl_fleet_fault_ops fl_fleet_fault_correlated_rack;
extern const struct fl_fleet_fault_ops fl_fleet_fault_checkpoint_cost;

const struct fl_fleet_fault_ops *const fl_fleet_faults[] = {
	&fl_fleet_fault_node_failure,
	&fl_fleet_fault_bad_node,
	&fl_fleet_fault_correlated_rack,
	&fl_fleet_fault_checkpoint_cost,
	NULL,
};

const struct fl_fleet_fault_ops *fl_fleet_fault_find(const char *name)
{
	for (size_t i = 0; fl_fleet_faults[i]; i++)
		if (strcmp(fl_fleet_faults[i]->name, name) == 0)
			return fl_fleet_faults[i];
	return NULL;
}

double fl_fleet_param(const struct fl_fleet_fault_ops *ops, const double *values, const char *name)
{
	for (size_t i = 0; i < ops->n_params; i++)
		if (strcmp(ops->params[i].name, name) == 0)
			return values[i];
	fprintf(stderr, "faultline: internal error: fleet fault '%s' has no parameter '%s'\n", ops->name, name);
	abort();
}
