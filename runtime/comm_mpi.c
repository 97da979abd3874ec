/* comm_mpi.c — ranks and collectives over MPI, without spinning waits. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_* */
#include "runtime/comm.h"

#include "capture/machine_load.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <mpi.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int inited, rank, size = 1;
static int pinned_core = -1, pinned_avoided;
static volatile unsigned long *board;
static size_t board_bytes;

/* Doors for waits on peers, on the same shared segment after the board.
 * posted[a * size + b] counts the sends rank a has posted to b (sends_to) and
 * the receives b has posted from a (recvs_from), arrived[r] the collectives
 * rank r has reached (all-reduce, all-to-all), each written only by its
 * owner; bell[r] is the futex word rank r sleeps on and every counter change
 * that r may wait for rings. NULL unless every rank mapped the segment. */
struct doors {
	uint32_t *bell;       /* size words */
	uint32_t *arrived;    /* size words: [r], written by r */
	uint32_t *sends_to;   /* size × size: [a * size + b], written by a */
	uint32_t *recvs_from; /* size × size: [b * size + a], written by b */
};
static struct doors doors;
static uint32_t *my_sends, *my_recvs; /* this rank's counts per peer */
static uint32_t my_arrivals;          /* the collectives this rank has reached */

static size_t doors_bytes(void) { return (size_t)size * (2 + 2 * (size_t)size) * sizeof(uint32_t); }

/* Rank 0 creates a POSIX shared-memory segment named after its pid and tells the
 * others; every rank maps it; rank 0 unlinks the name once all have mapped it. */
static void board_open(void)
{
	long pid0 = (long)getpid();
	if (fl_comm_bcast(&pid0, sizeof(pid0), 0))
		return;
	char name[64];
	snprintf(name, sizeof(name), "/faultline-board-%ld", pid0);
	board_bytes = (size_t)size * FL_BOARD_SLOTS * sizeof(unsigned long) + doors_bytes();
	int fd = rank == 0 ? shm_open(name, O_CREAT | O_RDWR | O_EXCL, 0600) : -1;
	if (rank == 0 && fd >= 0 && ftruncate(fd, (off_t)board_bytes) != 0) {
		close(fd);
		fd = -1;
	}
	int ok0 = fd >= 0;
	if (fl_comm_bcast(&ok0, sizeof(ok0), 0) || !ok0)
		return;
	if (rank != 0)
		fd = shm_open(name, O_RDWR, 0600);
	if (fd >= 0) {
		void *p = mmap(NULL, board_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (p != MAP_FAILED)
			board = p;
	}
	fl_comm_barrier();
	if (rank == 0)
		shm_unlink(name);
	/* the doors serve only when every rank can ring every other */
	int mapped = board != NULL, all = 0;
	if (MPI_Allreduce(&mapped, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS || !all)
		return;
	my_sends = calloc(2 * (size_t)size, sizeof(uint32_t));
	if (!my_sends)
		return;
	my_recvs = my_sends + size;
	uint32_t *w = (uint32_t *)(void *)((char *)board + (size_t)size * FL_BOARD_SLOTS * sizeof(unsigned long));
	doors = (struct doors){.bell = w,
			       .arrived = w + size,
			       .sends_to = w + 2 * (size_t)size,
			       .recvs_from = w + 2 * (size_t)size + (size_t)size * size};
}

volatile unsigned long *fl_comm_board(void) { return board; }

int fl_comm_launched(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

static enum fl_status mpi_err(int rc, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(rc, msg, &len);
	return fl_error(FL_ERUNTIME, "rank %d: %s failed: %s", rank, what, msg);
}

enum fl_status fl_comm_init(void) { return fl_comm_init_flags(0); }

/* A core that other processes keep over half busy (FL_CPU_BUSY_SHARE) while
 * faultline's ranks sleep is left out of the round robin, when a quieter one
 * remains. */
#define PIN_WINDOW_MS 100

/* Pin each rank (and the threads it starts) to one core, round robin over the
 * cores of its node: every rank then shares its core with the same number of
 * threads, so ranks run at the same pace and differ only by the faults
 * injected into them. A core another process keeps busy (a build, a busy loop,
 * a noisy neighbour) would slow only the ranks placed on it and pose as a
 * straggler, so the node's first rank measures each core's use over
 * PIN_WINDOW_MS while all the node's ranks sleep, and the busy ones are left
 * out when the quiet ones can hold the ranks evenly (a core each, or the same
 * number each): two ranks then share the quiet core evenly instead of one
 * running at half speed beside the busy loop. */
static void pin_rank(void)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2)
		return;
	MPI_Comm node;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
		return;
	int lrank = 0, lsize = 1;
	MPI_Comm_rank(node, &lrank);
	MPI_Comm_size(node, &lsize);
	int use[CPU_SETSIZE], nuse = 0, nall = 0, all[CPU_SETSIZE];
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			all[nall++] = c;
	/* the barrier's last arrival releases everyone within a moment: the
	 * measuring rank waits a little more before its window opens */
	MPI_Barrier(node);
	struct timespec settle = {0, 10 * 1000000L}, rest = {0, (PIN_WINDOW_MS + 40) * 1000000L};
	if (lrank == 0) {
		static double busy[CPU_SETSIZE];
		nanosleep(&settle, NULL);
		if (fl_cpu_busy(PIN_WINDOW_MS, busy, CPU_SETSIZE) == 0)
			for (int i = 0; i < nall; i++)
				if (busy[all[i]] >= 0 && busy[all[i]] < FL_CPU_BUSY_SHARE)
					use[nuse++] = all[i];
		/* the quiet cores serve when every rank gets one, or when the
		 * ranks share them evenly; else no placement keeps the ranks
		 * alike, and every core is used as before */
		if (nuse > 0 && nuse < lsize && lsize % nuse != 0)
			nuse = 0;
		if (nuse == 0)
			for (int i = 0; i < nall; i++)
				use[nuse++] = all[i];
	} else {
		nanosleep(&rest, NULL);
	}
	MPI_Bcast(&nuse, 1, MPI_INT, 0, node);
	if (nuse > 0 && nuse <= CPU_SETSIZE)
		MPI_Bcast(use, nuse, MPI_INT, 0, node);
	MPI_Comm_free(&node);
	if (nuse <= 0 || nuse > CPU_SETSIZE)
		return;
	pinned_core = use[lrank % nuse];
	pinned_avoided = nall - nuse;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(pinned_core, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

enum fl_status fl_comm_init_flags(int flags)
{
	if (inited || !fl_comm_launched())
		return FL_OK;
	int provided = 0;
	int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
	if (rc != MPI_SUCCESS)
		return mpi_err(rc, "MPI_Init_thread");
	if (provided < MPI_THREAD_MULTIPLE) {
		MPI_Finalize();
		return fl_error(FL_ERUNTIME, "MPI does not provide MPI_THREAD_MULTIPLE (the comm stream runs on its own thread)");
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	inited = 1;
	if (!(flags & FL_COMM_NO_PIN) && !getenv("FL_NO_PIN"))
		pin_rank();
	board_open();
	return FL_OK;
}

int fl_comm_rank(void) { return rank; }
int fl_comm_size(void) { return size; }
void fl_comm_pinning(int *core, int *busy_left_out)
{
	*core = pinned_core;
	*busy_left_out = pinned_avoided;
}

/* Poll a request to completion, sleeping between tests instead of spinning.
 * MPI moves a large message only while it is being tested (each MPI_Test
 * advances the shared-memory transfer by a fragment or so), so a few tests
 * back to back make a bucket's transfer take its time, not its number of
 * fragments times the nap; the naps stay short (5 µs doubling to 40 µs) and a
 * rank whose peers are late still costs its core next to nothing. Before: one
 * test per nap of up to 100 µs made a 1 MB all-reduce take ~6 ms on its own. */
static enum fl_status wait_req(MPI_Request *req, const char *what)
{
	long nap_ns = 5000;
	for (;;) {
		for (int burst = 0; burst < 8; burst++) {
			int done = 0;
			int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS)
				return mpi_err(rc, what);
			if (done)
				return FL_OK;
		}
		struct timespec nap = {0, nap_ns};
		nanosleep(&nap, NULL);
		if (nap_ns < 40000)
			nap_ns *= 2;
	}
}

/* Wake rank `peer` if it sleeps on its bell. */
static void ring(int peer)
{
	__atomic_add_fetch(&doors.bell[peer], 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &doors.bell[peer], FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Sleep on this rank's bell until it rings past seq, 2 ms at most (a missed
 * ring costs that, never a hang). */
static void doze(uint32_t *bell, uint32_t seq)
{
	struct timespec limit = {0, 2 * 1000000L};
	syscall(SYS_futex, bell, FUTEX_WAIT, seq, &limit, NULL, 0);
}

/* Publish this rank's k-th send to (recv from) `peer` and ring it. */
static void post(uint32_t *counter, uint32_t k, int peer)
{
	__atomic_store_n(counter, k, __ATOMIC_RELEASE);
	ring(peer);
}

/* Complete a point-to-point request whose peer must first post its k-th
 * matching call (*theirs reaches k): until it has, there is nothing to move,
 * and the thread sleeps on its bell instead of testing, so a stage waiting
 * for its neighbour does not take the core from its own compute (the naps of
 * wait_req woke a polling thread some 20,000 times a second, on the same core
 * as the rank's compute worker: a waiting stage's GEMMs ran 1.4–1.7x slower).
 * Once the peer has posted, both sides test as wait_req does. The sleep is
 * bounded (FUTEX_WAIT's timeout), so a missed ring costs 2 ms, never a hang. */
static enum fl_status wait_p2p(MPI_Request *req, const char *what, const uint32_t *theirs, uint32_t k)
{
	uint32_t *bell = &doors.bell[rank];
	for (;;) {
		uint32_t seq = __atomic_load_n(bell, __ATOMIC_ACQUIRE);
		if ((int32_t)(__atomic_load_n(theirs, __ATOMIC_ACQUIRE) - k) >= 0)
			break;
		int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS)
			return mpi_err(rc, what);
		if (done)
			return FL_OK;
		doze(bell, seq);
	}
	return wait_req(req, what);
}

/* Reach the next collective: publish it, ring every peer, and sleep on this
 * rank's bell until every peer has reached it too. Until then there is
 * nothing to move, and a rank that came first would otherwise test MPI in
 * wait_req's naps, some 20,000 wake-ups a second on the core its compute
 * worker runs on: in a comm-bound run, the first rank's backward GEMMs that
 * overlap the all-reduce ran up to 1.6x slower than its peer's, every step.
 * The sleep is bounded (FUTEX_WAIT's timeout): a missed ring costs 2 ms. */
static void arrive(void)
{
	if (!doors.bell)
		return;
	uint32_t k = ++my_arrivals, *bell = &doors.bell[rank];
	__atomic_store_n(&doors.arrived[rank], k, __ATOMIC_RELEASE);
	for (int p = 0; p < size; p++)
		if (p != rank)
			ring(p);
	for (;;) {
		uint32_t seq = __atomic_load_n(bell, __ATOMIC_ACQUIRE);
		int p = 0;
		while (p < size && (int32_t)(__atomic_load_n(&doors.arrived[p], __ATOMIC_ACQUIRE) - k) >= 0)
			p++;
		if (p == size)
			return;
		doze(bell, seq);
	}
}

enum fl_status fl_comm_allreduce_sum(float *buf, size_t n)
{
	if (!inited || size == 1)
		return FL_OK;
	arrive();
	MPI_Request req;
	int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
	if (rc != MPI_SUCCESS)
		return mpi_err(rc, "MPI_Iallreduce");
	return wait_req(&req, "MPI_Iallreduce");
}

enum fl_status fl_comm_send(const float *buf, size_t n, int peer, int tag)
{
	if (!inited || peer < 0 || peer >= size || peer == rank)
		return fl_error(FL_ERUNTIME, "rank %d: send to rank %d of %d: no such peer", rank, peer, size);
	MPI_Request req;
	int rc = MPI_Isend(buf, (int)n, MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &req);
	if (rc != MPI_SUCCESS)
		return mpi_err(rc, "MPI_Isend");
	if (!doors.bell)
		return wait_req(&req, "MPI_Isend");
	uint32_t k = ++my_sends[peer];
	post(&doors.sends_to[(size_t)rank * size + peer], k, peer);
	return wait_p2p(&req, "MPI_Isend", &doors.recvs_from[(size_t)peer * size + rank], k);
}

enum fl_status fl_comm_recv(float *buf, size_t n, int peer, int tag)
{
	if (!inited || peer < 0 || peer >= size || peer == rank)
		return fl_error(FL_ERUNTIME, "rank %d: receive from rank %d of %d: no such peer", rank, peer, size);
	MPI_Request req;
	int rc = MPI_Irecv(buf, (int)n, MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &req);
	if (rc != MPI_SUCCESS)
		return mpi_err(rc, "MPI_Irecv");
	if (!doors.bell)
		return wait_req(&req, "MPI_Irecv");
	uint32_t k = ++my_recvs[peer];
	post(&doors.recvs_from[(size_t)rank * size + peer], k, peer);
	return wait_p2p(&req, "MPI_Irecv", &doors.sends_to[(size_t)peer * size + rank], k);
}

enum fl_status fl_comm_barrier(void)
{
	if (!inited)
		return FL_OK;
	MPI_Request req;
	int rc = MPI_Ibarrier(MPI_COMM_WORLD, &req);
	if (rc != MPI_SUCCESS)
		return mpi_err(rc, "MPI_Ibarrier");
	return wait_req(&req, "MPI_Ibarrier");
}

enum fl_status fl_comm_bcast(void *buf, size_t bytes, int root)
{
	if (!inited)
		return FL_OK;
	MPI_Request req;
	int rc = MPI_Ibcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD, &req);
	if (rc != MPI_SUCCESS)
		return mpi_err(rc, "MPI_Ibcast");
	return wait_req(&req, "MPI_Ibcast");
}

enum fl_status fl_comm_alltoallv(const float *send, const size_t *send_counts, float *recv, const size_t *recv_counts)
{
	if (!inited || size == 1) {
		if (send_counts[0] != recv_counts[0])
			return fl_error(FL_ERUNTIME, "rank %d: all-to-all on one rank: %zu floats sent to itself, %zu expected",
					rank, send_counts[0], recv_counts[0]);
		memmove(recv, send, send_counts[0] * sizeof(float));
		return FL_OK;
	}
	int *v = malloc(4 * (size_t)size * sizeof(int)); /* MPI counts and displacements are ints */
	if (!v)
		return fl_error(FL_ERUNTIME, "rank %d: all-to-all: out of memory", rank);
	int *sc = v, *sd = v + size, *rc = v + 2 * size, *rd = v + 3 * size;
	size_t so = 0, ro = 0;
	for (int p = 0; p < size; p++) {
		sc[p] = (int)send_counts[p];
		sd[p] = (int)so;
		rc[p] = (int)recv_counts[p];
		rd[p] = (int)ro;
		so += send_counts[p];
		ro += recv_counts[p];
	}
	arrive();
	MPI_Request req;
	int mrc = MPI_Ialltoallv(send, sc, sd, MPI_FLOAT, recv, rc, rd, MPI_FLOAT, MPI_COMM_WORLD, &req);
	enum fl_status st = mrc == MPI_SUCCESS ? wait_req(&req, "MPI_Ialltoallv") : mpi_err(mrc, "MPI_Ialltoallv");
	free(v);
	return st;
}

enum fl_status fl_comm_gather_strings(const char *mine, char ***all)
{
	*all = NULL;
	int len = (int)strlen(mine) + 1;
	if (!inited) {
		*all = malloc(sizeof(char *));
		if (!*all)
			return fl_error(FL_ERUNTIME, "out of memory");
		(*all)[0] = strdup(mine);
		return FL_OK;
	}
	int *lens = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
	MPI_Request req;
	int rc = MPI_Igather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
	enum fl_status st = rc == MPI_SUCCESS ? wait_req(&req, "MPI_Igather") : mpi_err(rc, "MPI_Igather");
	if (st) {
		free(lens);
		return st;
	}
	int *displs = NULL;
	char *buf = NULL;
	if (rank == 0) {
		displs = calloc((size_t)size, sizeof(int));
		int total = 0;
		for (int i = 0; i < size; i++) {
			displs[i] = total;
			total += lens[i];
		}
		buf = malloc((size_t)total);
	}
	rc = MPI_Igatherv(mine, len, MPI_CHAR, buf, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
	st = rc == MPI_SUCCESS ? wait_req(&req, "MPI_Igatherv") : mpi_err(rc, "MPI_Igatherv");
	if (!st && rank == 0) {
		*all = calloc((size_t)size, sizeof(char *));
		for (int i = 0; i < size; i++)
			(*all)[i] = strdup(buf + displs[i]);
	}
	free(lens);
	free(displs);
	free(buf);
	return st;
}

/* Bytes of any size between two ranks: chunks of at most 1 GiB (MPI counts
 * are ints), tag 7 (not one the run's comm stream uses). */
#define CHUNK ((size_t)1 << 30)

static enum fl_status move_bytes(void *buf, size_t n, int peer, int send)
{
	for (size_t off = 0; off < n || (n == 0 && off == 0); off += CHUNK) {
		int len = (int)(n - off < CHUNK ? n - off : CHUNK);
		MPI_Request req;
		int rc = send ? MPI_Isend((char *)buf + off, len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req)
			      : MPI_Irecv((char *)buf + off, len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req);
		if (rc != MPI_SUCCESS)
			return mpi_err(rc, send ? "MPI_Isend" : "MPI_Irecv");
		enum fl_status st = wait_req(&req, send ? "MPI_Isend" : "MPI_Irecv");
		if (st || n == 0)
			return st;
	}
	return FL_OK;
}

enum fl_status fl_comm_gather_bytes(const void *mine, size_t n, char **all, size_t *lens)
{
	*all = NULL;
	if (!inited || size == 1) {
		if (!(*all = malloc(n ? n : 1)))
			return fl_error(FL_ERUNTIME, "out of memory");
		if (n)
			memcpy(*all, mine, n);
		lens[0] = n;
		return FL_OK;
	}
	uint64_t len = n, *ls = rank == 0 ? calloc((size_t)size, sizeof(*ls)) : NULL;
	MPI_Request req;
	int rc = MPI_Igather(&len, 1, MPI_UINT64_T, ls, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &req);
	enum fl_status st = rc == MPI_SUCCESS ? wait_req(&req, "MPI_Igather") : mpi_err(rc, "MPI_Igather");
	if (st || rank != 0) {
		free(ls);
		return st ? st : move_bytes((void *)mine, n, 0, 1);
	}
	size_t total = 0;
	for (int r = 0; r < size; r++)
		total += (lens[r] = (size_t)ls[r]);
	free(ls);
	char *buf = malloc(total ? total : 1);
	if (!buf)
		return fl_error(FL_ERUNTIME, "rank 0: out of memory for %zu bytes gathered", total);
	size_t off = 0;
	for (int r = 0; r < size && !st; r++) {
		if (r == 0)
			memcpy(buf, mine, n);
		else
			st = move_bytes(buf + off, lens[r], r, 0);
		off += lens[r];
	}
	if (st) {
		free(buf);
		return st;
	}
	*all = buf;
	return FL_OK;
}

enum fl_status fl_comm_allgather_bytes(const void *mine, size_t n, char **all, size_t *lens)
{
	enum fl_status st = fl_comm_gather_bytes(mine, n, all, lens);
	if (st || !inited || size == 1)
		return st;
	uint64_t *ls = calloc((size_t)size, sizeof(*ls));
	if (!ls)
		return fl_error(FL_ERUNTIME, "out of memory");
	for (int r = 0; rank == 0 && r < size; r++)
		ls[r] = lens[r];
	if ((st = fl_comm_bcast(ls, (size_t)size * sizeof(*ls), 0))) {
		free(ls);
		return st;
	}
	size_t total = 0;
	for (int r = 0; r < size; r++)
		total += (lens[r] = (size_t)ls[r]);
	free(ls);
	if (rank != 0 && !(*all = malloc(total ? total : 1)))
		return fl_error(FL_ERUNTIME, "rank %d: out of memory for %zu bytes gathered", rank, total);
	for (size_t off = 0; off < total || (total == 0 && off == 0); off += CHUNK) {
		size_t len = total - off < CHUNK ? total - off : CHUNK;
		if ((st = fl_comm_bcast(*all + off, len, 0)) || total == 0)
			break;
	}
	if (st && rank != 0) {
		free(*all);
		*all = NULL;
	}
	return st;
}

void fl_comm_abort(int code)
{
	if (inited)
		MPI_Abort(MPI_COMM_WORLD, code);
	_Exit(code);
}

void fl_comm_finalize(void)
{
	if (board) {
		doors = (struct doors){0};
		free(my_sends);
		my_sends = my_recvs = NULL;
		munmap((void *)board, board_bytes);
		board = NULL;
	}
	if (inited) {
		MPI_Finalize();
		inited = 0;
	}
}
