/* registry.c — every fault module, in one explicit table. */
#include <string.h>

#include "faults/fault.h"

extern const struct fl_fault_ops fl_fault_loader_sleep;
extern const struct fl_fault_ops fl_fault_op_storm;
extern const struct fl_fault_ops fl_fault_periodic_stall;
extern const struct fl_fault_ops fl_fault_gc_pause;
extern const struct fl_fault_ops fl_fault_throttled_rank;
extern const struct fl_fault_ops fl_fault_sync_injection;
extern const struct fl_fault_ops fl_fault_unoverlapped_allreduce;
extern const struct fl_fault_ops fl_fault_checkpoint_stall;

const struct fl_fault_ops *const fl_faults[] = {
	&fl_fault_loader_sleep,
	&fl_fault_op_storm,
	&fl_fault_periodic_stall,
	&fl_fault_gc_pause,
	&fl_fault_throttled_rank,
	&fl_fault_sync_injection,
	&fl_fault_unoverlapped_allreduce,
	&fl_fault_checkpoint_stall,
	NULL,
};

const struct fl_fault_ops *fl_fault_find(const char *name)
{
	for (size_t i = 0; fl_faults[i]; i++)
		if (strcmp(fl_faults[i]->name, name) == 0)
			return fl_faults[i];
	return NULL;
}
