/* scratch.h — a rank's scratch folder: files a fault keeps from the learner
 * (a checkpoint), made under $TMPDIR (else /tmp) before the faults' init and
 * removed after the run.
 *
 * A run killed outright (kill -9, Ctrl-C, an MPI job ended by the watchdog)
 * cannot remove its folder, so each run holds an exclusive flock on its folder
 * for its whole life; the kernel drops the lock with the process. A folder
 * named faultline-scratch.XXXXXX, owned by this user, whose lock can be taken
 * has no run: the next run removes it, as the next writer removes a killed
 * writer's temporaries in an output folder (common/outfile.c). Where the file
 * system takes no locks, nothing is removed but this run's own folder.
 */
#ifndef FL_SCRATCH_H
#define FL_SCRATCH_H

#include <limits.h>

#include "common/status.h"

struct fl_scratch {
	char path[PATH_MAX]; /* "" when none */
	int fd;              /* the folder, locked; -1 when none */
	int removed_stale;   /* stale folders of killed runs this run removed */
};

/* Remove the stale folders of killed runs, then make and lock this run's. */
enum fl_status fl_scratch_create(struct fl_scratch *s);
/* Remove this run's folder and everything in it (no-op when none). */
void fl_scratch_remove(struct fl_scratch *s);

#endif
