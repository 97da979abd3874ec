/* comm.h — ranks and collectives (MPI when built with it).
 *
 * Without MPI this header supplies inline stubs for a single rank, so callers
 * carry no #ifdef. Waits never spin: non-blocking MPI calls are polled with short
 * sleeps, because on a 2-core machine a spinning rank steals the core another
 * rank needs and the ranks would measure each other instead of the fault.
 * Point-to-point calls do not poll at all until the peer has posted the
 * matching call (a futex on the shared board, see comm_mpi.c).
 */
#ifndef FL_COMM_H
#define FL_COMM_H

#include <stddef.h>

#include "common/status.h"

#define FL_COMM_NO_PIN 1 /* fl_comm_init_flags: leave the rank on every core */

#ifdef FL_HAVE_MPI
/* 1 when this process was started by mpirun (or another MPI launcher). */
int fl_comm_launched(void);
/* Initialise MPI (thread level MULTIPLE) if launched; else a single rank.
 * Each rank is pinned to one core (see comm_mpi.c), unless flags has
 * FL_COMM_NO_PIN (a rank that runs threads of its own). */
enum fl_status fl_comm_init(void);
enum fl_status fl_comm_init_flags(int flags);
int fl_comm_rank(void);
int fl_comm_size(void);
/* Where fl_comm_init pinned this rank: *core (-1 when not pinned), and how
 * many of the node's cores it left out as busy with other processes. */
void fl_comm_pinning(int *core, int *busy_left_out);
/* Sum n floats across ranks in place. */
enum fl_status fl_comm_allreduce_sum(float *buf, size_t n);
enum fl_status fl_comm_barrier(void);
/* Point to point: send n floats to rank `peer`, or receive n floats from it,
 * with message tag `tag` (messages between two ranks on one tag keep their order). */
enum fl_status fl_comm_send(const float *buf, size_t n, int peer, int tag);
enum fl_status fl_comm_recv(float *buf, size_t n, int peer, int tag);
enum fl_status fl_comm_bcast(void *buf, size_t bytes, int root);
/* All-to-all: send_counts[p] floats of `send` (packed in rank order) go to rank
 * p, recv_counts[p] floats from rank p land in `recv` (packed in rank order). */
enum fl_status fl_comm_alltoallv(const float *send, const size_t *send_counts, float *recv, const size_t *recv_counts);
/* Gather one NUL-terminated string per rank at rank 0: *all gets size strings
 * (malloc'd, caller frees each and the array); NULL on other ranks. */
enum fl_status fl_comm_gather_strings(const char *mine, char ***all);
/* Gather n bytes per rank (any size) at rank 0: *all (caller frees) holds
 * them in rank order, back to back, lens[r] (size entries, the caller's) the
 * count of rank r's; *all NULL on other ranks. allgather: on every rank. */
enum fl_status fl_comm_gather_bytes(const void *mine, size_t n, char **all, size_t *lens);
enum fl_status fl_comm_allgather_bytes(const void *mine, size_t n, char **all, size_t *lens);
/* A progress board shared by the ranks of one machine: FL_BOARD_SLOTS counters
 * per rank (the point-to-point doorbells live after them, private to comm_mpi.c), written by each rank (plain stores, no syscall) and read by any
 * rank's watchdog to name the rank that stopped. NULL when not available. */
#define FL_BOARD_SLOTS 4
volatile unsigned long *fl_comm_board(void);
/* End every rank now with `code` (used by the watchdog). */
void fl_comm_abort(int code) __attribute__((noreturn));
void fl_comm_finalize(void);
#define FL_COMM_BUILT 1
#else
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static inline int fl_comm_launched(void) { return 0; }
static inline enum fl_status fl_comm_init(void) { return FL_OK; }
static inline enum fl_status fl_comm_init_flags(int flags)
{
	(void)flags;
	return FL_OK;
}
static inline int fl_comm_rank(void) { return 0; }
static inline int fl_comm_size(void) { return 1; }
static inline void fl_comm_pinning(int *core, int *busy_left_out)
{
	*core = -1;
	*busy_left_out = 0;
}
static inline enum fl_status fl_comm_allreduce_sum(float *buf, size_t n)
{
	(void)buf;
	(void)n;
	return FL_OK;
}
static inline enum fl_status fl_comm_barrier(void) { return FL_OK; }
static inline enum fl_status fl_comm_send(const float *buf, size_t n, int peer, int tag)
{
	(void)buf;
	(void)n;
	(void)tag;
	return fl_error(FL_ERUNTIME, "send to rank %d: this faultline was built without MPI (a single rank)", peer);
}
static inline enum fl_status fl_comm_recv(float *buf, size_t n, int peer, int tag)
{
	(void)buf;
	(void)n;
	(void)tag;
	return fl_error(FL_ERUNTIME, "receive from rank %d: this faultline was built without MPI (a single rank)", peer);
}
static inline enum fl_status fl_comm_bcast(void *buf, size_t bytes, int root)
{
	(void)buf;
	(void)bytes;
	(void)root;
	return FL_OK;
}
static inline enum fl_status fl_comm_alltoallv(const float *send, const size_t *send_counts, float *recv,
						const size_t *recv_counts)
{
	if (send_counts[0] != recv_counts[0])
		return fl_error(FL_ERUNTIME, "all-to-all on one rank: %zu floats sent to itself, %zu expected",
				send_counts[0], recv_counts[0]);
	memmove(recv, send, send_counts[0] * sizeof(float));
	return FL_OK;
}
static inline enum fl_status fl_comm_gather_strings(const char *mine, char ***all)
{
	*all = (char **)malloc(sizeof(char *));
	if (!*all)
		return fl_error(FL_ERUNTIME, "out of memory");
	(*all)[0] = strdup(mine);
	return FL_OK;
}
static inline enum fl_status fl_comm_gather_bytes(const void *mine, size_t n, char **all, size_t *lens)
{
	*all = (char *)malloc(n ? n : 1);
	if (!*all)
		return fl_error(FL_ERUNTIME, "out of memory");
	if (n)
		memcpy(*all, mine, n);
	lens[0] = n;
	return FL_OK;
}
static inline enum fl_status fl_comm_allgather_bytes(const void *mine, size_t n, char **all, size_t *lens)
{
	return fl_comm_gather_bytes(mine, n, all, lens);
}
static inline volatile unsigned long *fl_comm_board(void) { return NULL; }
#define FL_BOARD_SLOTS 4
static inline void fl_comm_abort(int code) { _exit(code); }
static inline void fl_comm_finalize(void) {}
#define FL_COMM_BUILT 0
#endif

#endif
