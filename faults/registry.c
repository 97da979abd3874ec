/* registry.c — every fault module, in one explicit list.
 *
 * One line per module: X(NAME) names the module faults/NAME.c, which defines
 * `const struct fl_fault_ops fl_fault_NAME`. The order is the order of
 * `faultline faults`. scripts/new-fault.sh adds the line of a new module.
 */
#include <string.h>

#include "faults/fault.h"

#define FL_FAULT_MODULES(X)          \
	X(loader_sleep)              \
	X(op_storm)                  \
	X(periodic_stall)            \
	X(gc_pause)                  \
	X(throttled_rank)            \
	X(sync_injection)            \
	X(unoverlapped_allreduce)    \
	X(checkpoint_stall)          \
	X(slow_link)                 \
	X(recompile)                 \
	X(dvfs_ramp)                 \
	X(per_param_optimizer)       \
	X(launch_overhead)           \
	X(alloc_churn)               \
	X(pageable_copy)             \
	X(dtype_casts)               \
	X(too_few_microbatches)      \
	X(expert_imbalance)          \
	/* a new module's line goes above this one */

#define FL_FAULT_DECLARE(n) extern const struct fl_fault_ops fl_fault_##n;
FL_FAULT_MODULES(FL_FAULT_DECLARE)

#define FL_FAULT_ENTRY(n) &fl_fault_##n,
const struct fl_fault_ops *const fl_faults[] = {FL_FAULT_MODULES(FL_FAULT_ENTRY) NULL};

const struct fl_fault_ops *fl_fault_find(const char *name)
{
	for (size_t i = 0; fl_faults[i]; i++)
		if (strcmp(fl_faults[i]->name, name) == 0)
			return fl_faults[i];
	return NULL;
}
