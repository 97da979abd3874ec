/* backend_emu.c — an emulated asynchronous device that really executes work.
 *
 * Each stream is a FIFO queue served by its own worker thread, which runs the
 * queued kernels and copies for real on the CPU and records them as device
 * activity (kernel / gpu_memcpy on the device row: pid = device, tid = stream).
 * Host-side calls are recorded as cuda_runtime spans named after the CUDA calls
 * they emulate (cudaLaunchKernel, cudaMemcpyAsync, cudaStreamSynchronize, ...),
 * each with a correlation id that the device record carries too, so the writer
 * can draw launch → kernel flow arrows. Syncs block on a condition variable until
 * the queue drains; nothing spins. Collectives run on the comm stream's worker
 * as real MPI collectives and are named like NCCL's kernels, so trace tools
 * classify them as communication; so are point-to-point sends and receives
 * (MPI_Isend / MPI_Irecv, named as NCCL's SendRecv kernel) and all-to-alls
 * (MPI_Ialltoallv; NCCL runs an all-to-all as grouped sends and receives, one
 * SendRecv kernel, and is named so).
 *
 * A clock factor f > 1 emulates a throttled device: after each compute kernel
 * the worker pauses (f − 1) × its real duration, so the kernel lasts f times
 * longer, sleeping all but the last EMU_SPIN_NS of the pause (which it spins,
 * so tiny kernels stretch as exactly as long ones) and so taking little CPU
 * from other ranks. The factor changes in the compute
 * stream's order (a kernel runs at the factor in force when it was launched), so
 * a factor set for one phase slows exactly that phase's kernels.
 *
 * An emulated link (set_link_gbps) paces every collective to a set bandwidth:
 * the real MPI transfer runs in chunks, and after each chunk the comm worker
 * waits until the bytes sent so far would have crossed a link of that speed,
 * counted from the moment every rank had joined (the first chunk completes).
 * Each rank sends 2(p−1)/p of the buffer, as in a ring all-reduce (NCCL's
 * "bus bytes"). deviceProperties says the link is emulated and its speed on
 * every multi-rank run: FL_EMU_LINK_GBPS unless a fault set another, and the
 * nominal link caps the all-reduce at that speed (shared memory is mostly
 * slower already), so a healthy trace and a slow-link trace differ in the
 * number, not in whether there is one.
 */
#define _GNU_SOURCE /* sched_setaffinity, pthread_setaffinity_np, CPU_* */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/clock.h"
#include "capture/machine_load.h"

#define FL_EMU_LINK_GBPS 100.0 /* the nominal link between emulated devices */
#include "capture/tracer.h"
#include "runtime/comm.h"
#include "runtime/device.h"

/* How long a single-process run watches the cores before it gives its
 * compute worker one (choose_cores). */
#define EMU_QUIET_WINDOW_MS 30
/* The last stretch of a clock-factor pause is spun, the rest slept. */
#define EMU_SPIN_NS 150000.0
#define QCAP 4096
#define N_STREAMS 2

enum op_kind { OP_KERNEL, OP_COPY, OP_WAIT, OP_ALLREDUCE, OP_SENDRECV, OP_ALLTOALL, OP_RELEASE, OP_SET, OP_STOP };

struct emu_op {
	enum op_kind kind;
	const struct fl_kernel *k;
	struct fl_kernel_args a;
	uint32_t corr, name;
	void *dst;
	const void *src;
	size_t bytes;
	enum fl_copy_kind copy_kind;
	struct emu_stream *wait_on;
	uint64_t wait_seq;
	void (*fn)(void *ctx);
	void *ctx;
	double *target, value; /* OP_SET: *target = value, in stream order */
	long step;             /* OP_KERNEL: the host's step when it launched the kernel */
	double macs;           /* OP_KERNEL: a metered GEMM's multiply-adds (m·n·k), else 0 */
	int gemm_kind;         /* OP_KERNEL: the meter a metered GEMM feeds (fl_gemm_macs) */
	int peer, send, tag;   /* OP_SENDRECV */
	const size_t *send_counts, *recv_counts; /* OP_ALLTOALL: src → dst */
};

struct emu_dev;

struct emu_stream {
	int id;
	struct emu_dev *dev;
	struct emu_op q[QCAP];
	size_t head, tail;            /* q[head % QCAP] is next; tail = submitted */
	uint64_t submitted, completed;
	pthread_mutex_t mu;
	pthread_cond_t nonempty, progress;
	pthread_t worker;
	int started;
};

struct name_cache {
	const struct fl_kernel *k;
	uint32_t id;
};

struct emu_dev {
	struct emu_stream streams[N_STREAMS];
	uint32_t next_corr;
	double clock_factor;           /* read by the compute worker */
	double link_gbps;              /* read by the comm worker; 0: no emulated link */
	double props_gbps;             /* the same, as the host last set it */
	int device;
	struct fl_device_stats st;
	pthread_mutex_t stats_mu;
	uint32_t n_launch, n_memcpy, n_ssync, n_dsync, n_wait, n_allreduce_kernel, n_sendrecv_kernel;
	uint32_t n_memcpy_sync, n_malloc, n_free;
	uint32_t n_memcpy_kind[3];
	struct name_cache names[64];
	size_t n_names;
	char props[512];
	enum fl_status comm_error;
	/* choose_cores: the compute worker's core (-1: it floats), the allowed
	 * cores left out busy, and the host thread's affinity to give back */
	int compute_core, busy_left_out, quiet_cores, host_pinned;
	cpu_set_t host_affinity;
	/* the machine's speed, step by step (emu_gemm_speed): the host's step as
	 * it launches, and each step's fastest GEMM (under stats_mu) */
	long host_step;
	struct fl_gemm_meter gemm;
};

static struct emu_stream *stream_of(struct emu_dev *d, int id)
{
	return id == FL_STREAM_COMM ? &d->streams[1] : &d->streams[0];
}

static uint32_t kernel_name(struct emu_dev *d, const struct fl_kernel *k)
{
	for (size_t i = 0; i < d->n_names; i++)
		if (d->names[i].k == k)
			return d->names[i].id;
	uint32_t id = fl_tracer_intern(k->name); /* first launch of a kernel: warmup, before the window */
	if (d->n_names < sizeof(d->names) / sizeof(d->names[0]))
		d->names[d->n_names++] = (struct name_cache){k, id};
	return id;
}

/* Host side: enqueue, blocking while the queue is full. Returns the op's sequence number. */
static uint64_t enqueue(struct emu_stream *s, const struct emu_op *op)
{
	pthread_mutex_lock(&s->mu);
	while (s->submitted - s->completed >= QCAP)
		pthread_cond_wait(&s->progress, &s->mu);
	s->q[s->tail % QCAP] = *op;
	s->tail++;
	uint64_t seq = ++s->submitted;
	pthread_cond_signal(&s->nonempty);
	pthread_mutex_unlock(&s->mu);
	return seq;
}

static void wait_until(struct emu_stream *s, uint64_t seq)
{
	pthread_mutex_lock(&s->mu);
	while (s->completed < seq)
		pthread_cond_wait(&s->progress, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

static const char *copy_name(enum fl_copy_kind k)
{
	switch (k) {
	case FL_COPY_H2D: return "Memcpy HtoD (Pageable -> Device)";
	case FL_COPY_D2H: return "Memcpy DtoH (Device -> Pageable)";
	case FL_COPY_D2D: return "Memcpy DtoD (Device -> Device)";
	}
	return "Memcpy";
}

/* One collective over the emulated link (see the header comment). A small
 * first chunk is the handshake: when it completes every rank has joined, and
 * the rest of the buffer is paced from then. The other chunks are few and large,
 * so that on a loaded machine a late wake-up of one rank costs little. */
static enum fl_status paced_allreduce(struct emu_dev *d, float *buf, size_t n)
{
	int world = fl_comm_size();
	if (!(d->link_gbps > 0) || world < 2 || n == 0) {
		/* the nominal link: the transfer as MPI does it, never faster than
		 * the speed deviceProperties names (a shared-memory copy can be) */
		uint64_t t0 = fl_clock_ticks();
		enum fl_status st = fl_comm_allreduce_sum(buf, n);
		if (st || world < 2 || !(d->props_gbps > 0))
			return st;
		double due = 2.0 * (world - 1) / world * (double)n * sizeof(float) * 8.0 / d->props_gbps;
		double el = (double)fl_clock_delta_ns(t0, fl_clock_ticks());
		if (due > el)
			fl_sleep_ms((due - el) / 1e6);
		return FL_OK;
	}
	double bus = 2.0 * (world - 1) / world * (double)n * sizeof(float);
	double wire_ns = bus * 8.0 / d->link_gbps; /* bits / (Gbit/s) = ns */
	size_t first = n / 16 < 1024 ? n / 16 : 1024; /* a handshake of at most 4 KB */
	if (first == 0)
		first = 1;
	enum fl_status st = fl_comm_allreduce_sum(buf, first);
	if (st)
		return st;
	uint64_t join = fl_clock_ticks(), now = join;
	size_t rest = n - first, chunks = rest * sizeof(float) / (256u << 10);
	chunks = chunks < 1 ? 1 : chunks > 4 ? 4 : chunks;
	size_t off = first;
	for (size_t c = 0; c < chunks && rest; c++) { /* rest is 0 only for a 1-float buffer */
		size_t len = rest / chunks + (c < rest % chunks);
		if ((st = fl_comm_allreduce_sum(buf + off, len)))
			return st;
		off += len;
		now = fl_clock_ticks();
		double due = wire_ns * (double)off / (double)n, el = (double)fl_clock_delta_ns(join, now);
		if (due > el) {
			fl_sleep_ms((due - el) / 1e6);
			now = fl_clock_ticks();
		}
	}
	pthread_mutex_lock(&d->stats_mu);
	d->st.link_ms += (double)fl_clock_delta_ns(join, now) / 1e6;
	d->st.link_bytes += bus;
	pthread_mutex_unlock(&d->stats_mu);
	return FL_OK;
}

/* A communication op has run (status st): its kernel on the device row, the
 * first error kept for the host to report, the device's count. */
static void comm_done(struct emu_dev *d, const struct emu_stream *s, const struct emu_op *op, uint64_t t0,
		      enum fl_status st)
{
	uint64_t t1 = fl_clock_ticks();
	if (st)
		d->comm_error = st;
	fl_trace_complete(op->name, FL_EV_KERNEL, t0, t1, op->corr, s->id, op->bytes);
	pthread_mutex_lock(&d->stats_mu);
	d->st.collectives++;
	pthread_mutex_unlock(&d->stats_mu);
}

static void *worker_main(void *arg)
{
	struct emu_stream *s = arg;
	struct emu_dev *d = s->dev;
	char label[48];
	snprintf(label, sizeof(label), "device %d stream %d worker", 0, s->id);
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* precise pauses for the clock factor and the link */
	/* A GPU computes without taking the host's cores. On a small machine the
	 * compute workers would starve the host and comm threads of every rank, so
	 * they run at a lower priority (raising niceness needs no privilege). */
	if (s->id == FL_STREAM_COMPUTE)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	if (s->id == FL_STREAM_COMPUTE && d->compute_core >= 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(d->compute_core, &one);
		pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	}
	fl_tracer_thread_attach(label, 0);
	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (s->head == s->tail)
			pthread_cond_wait(&s->nonempty, &s->mu);
		struct emu_op op = s->q[s->head % QCAP];
		pthread_mutex_unlock(&s->mu);
		if (op.kind == OP_STOP)
			break;
		uint64_t t0 = fl_clock_ticks(), t1;
		switch (op.kind) {
		case OP_KERNEL: {
			op.k->run(&op.a);
			t1 = fl_clock_ticks();
			double real_ns = (double)fl_clock_delta_ns(t0, t1), extra = 0;
			if (d->clock_factor > 1.0) {
				/* sleep the bulk, spin the last stretch: a sleep
				 * wakes tens of µs late, which would stretch a
				 * 2 µs kernel many times over whatever the factor */
				extra = real_ns * (d->clock_factor - 1.0);
				if (extra > EMU_SPIN_NS)
					fl_sleep_ms((extra - EMU_SPIN_NS / 2) / 1e6);
				do
					t1 = fl_clock_ticks();
				while ((double)fl_clock_delta_ns(t0, t1) - real_ns < extra);
				extra = (double)fl_clock_delta_ns(t0, t1) - real_ns;
			}
			fl_trace_complete(op.name, FL_EV_KERNEL, t0, t1, op.corr, s->id, 0);
			pthread_mutex_lock(&d->stats_mu);
			d->st.kernel_ms += real_ns / 1e6;
			d->st.stretched_ms += extra / 1e6;
			if (d->clock_factor > 1.0)
				d->st.slowed_ms += real_ns / 1e6;
			d->st.kernels++;
			fl_gemm_meter_note(&d->gemm, op.gemm_kind, op.step, real_ns, op.macs);
			pthread_mutex_unlock(&d->stats_mu);
			break;
		}
		case OP_COPY:
			memmove(op.dst, op.src, op.bytes);
			t1 = fl_clock_ticks();
			fl_trace_complete(op.name, FL_EV_GPU_MEMCPY, t0, t1, op.corr, s->id, op.bytes);
			break;
		case OP_WAIT:
			wait_until(op.wait_on, op.wait_seq);
			break;
		case OP_ALLREDUCE:
			comm_done(d, s, &op, t0, paced_allreduce(d, op.dst, op.bytes / sizeof(float)));
			break;
		case OP_SENDRECV:
			comm_done(d, s, &op, t0,
				  op.send ? fl_comm_send(op.dst, op.bytes / sizeof(float), op.peer, op.tag)
					  : fl_comm_recv(op.dst, op.bytes / sizeof(float), op.peer, op.tag));
			break;
		case OP_ALLTOALL:
			comm_done(d, s, &op, t0, fl_comm_alltoallv(op.src, op.send_counts, op.dst, op.recv_counts));
			break;
		case OP_RELEASE:
			op.fn(op.ctx);
			break;
		case OP_SET:
			*op.target = op.value;
			break;
		case OP_STOP:
			break;
		}
		pthread_mutex_lock(&s->mu);
		s->head++;
		s->completed++;
		pthread_cond_broadcast(&s->progress);
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

/* A host-side runtime call: a cuda_runtime span carrying a correlation id. */
static uint32_t api_begin(struct emu_dev *d, uint32_t name, uint32_t *corr)
{
	uint32_t slot = fl_span_begin(name, FL_EV_CUDA_RUNTIME);
	*corr = ++d->next_corr;
	fl_span_set_corr(slot, *corr);
	return slot;
}

/* deviceProperties: an emulated device; with an emulated link, its speed */
static void write_props(struct emu_dev *d)
{
	char link[96] = "";
	if (d->props_gbps > 0)
		snprintf(link, sizeof(link), ", \"interconnect\": {\"emulated\": true, \"bandwidth (Gbit/s)\": %.6g}", d->props_gbps);
	snprintf(d->props, sizeof(d->props),
		 "[{\"id\": %d, \"name\": \"faultline emulated device (CPU), %d worker threads\", "
		 "\"totalGlobalMem\": 0, \"computeMajor\": 0, \"computeMinor\": 0, \"maxThreadsPerBlock\": 1, "
		 "\"maxThreadsPerMultiprocessor\": 1, \"regsPerBlock\": 0, \"warpSize\": 1, \"sharedMemPerBlock\": 0, "
		 "\"numSms\": %d, \"emulated\": true%s}]",
		 d->device, N_STREAMS, N_STREAMS, link);
}

/* A single process gives its device's compute worker a core of its own, as a
 * GPU computes on silicon of its own. Left to the scheduler, the worker moves
 * between cores, and on a virtual machine the cores can run the same GEMM at
 * speeds up to twice apart (another guest on a core's physical sibling): a
 * kernel's length would then depend on where the worker ran, a speed change
 * nothing injected, inside one run. The quiet cores are those other processes
 * keep under half busy over EMU_QUIET_WINDOW_MS; the worker takes the last
 * quiet one (the last allowed one when none is), the host thread (and the
 * threads it starts from now on) the other quiet ones, or every allowed core
 * when fewer than two are quiet; then the host can run beside the device, and
 * the truth says so (quiet_cores). Ranks of a
 * multi-rank run are pinned whole by the comm layer instead; FL_NO_PIN, one
 * allowed core or no /proc/stat leave the worker to the scheduler. */
static void choose_cores(struct emu_dev *d, int world_size)
{
	d->compute_core = -1;
	if (world_size > 1 || getenv("FL_NO_PIN"))
		return;
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2)
		return;
	static double busy[CPU_SETSIZE];
	if (fl_cpu_busy(EMU_QUIET_WINDOW_MS, busy, CPU_SETSIZE) != 0)
		return;
	cpu_set_t quiet;
	CPU_ZERO(&quiet);
	int last_quiet = -1, last_allowed = -1;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &allowed))
			continue;
		last_allowed = c;
		if (busy[c] >= 0 && busy[c] < FL_CPU_BUSY_SHARE) {
			CPU_SET(c, &quiet);
			last_quiet = c;
		}
	}
	d->compute_core = last_quiet >= 0 ? last_quiet : last_allowed;
	d->busy_left_out = last_quiet >= 0 ? CPU_COUNT(&allowed) - CPU_COUNT(&quiet) : 0;
	d->quiet_cores = CPU_COUNT(&quiet);
	if (last_quiet >= 0 && CPU_COUNT(&quiet) >= 2) {
		CPU_CLR(d->compute_core, &quiet);
		d->host_affinity = allowed;
		d->host_pinned = sched_setaffinity(0, sizeof(quiet), &quiet) == 0;
	}
}

static int emu_compute_core(const struct fl_backend *be, int *busy_left_out, int *quiet_cores)
{
	const struct emu_dev *d = be->state;
	if (busy_left_out)
		*busy_left_out = d ? d->busy_left_out : 0;
	if (quiet_cores)
		*quiet_cores = d ? d->quiet_cores : 0;
	return d ? d->compute_core : -1;
}

/* The host starts step `step`: the kernels it launches from now on are that
 * step's. */
static void emu_mark_step(struct fl_backend *be, long step)
{
	struct emu_dev *d = be->state;
	d->host_step = step;
}

/* How fast the device's core ran `step`'s work: its fastest metered GEMM of
 * `kind` (fl_gemm_macs) in ns of real execution (before any clock factor's pause) per multiply-add; 0
 * when the step ran none. The same shapes run every step, so a step whose
 * fastest GEMM is slower than another's ran on a slower machine; the fastest,
 * because a thread beside the worker only ever lengthens a kernel. Read after
 * the device has drained. */
static double emu_gemm_speed(const struct fl_backend *be, int kind, long step)
{
	struct emu_dev *d = be->state;
	pthread_mutex_lock(&d->stats_mu);
	double v = fl_gemm_meter_get(&d->gemm, kind, step);
	pthread_mutex_unlock(&d->stats_mu);
	return v;
}

static enum fl_status emu_open(struct fl_backend *be, const struct fl_backend_config *cfg)
{
	struct emu_dev *d = calloc(1, sizeof(*d));
	if (!d)
		return fl_error(FL_ERUNTIME, "emu: out of memory");
	be->cfg = *cfg;
	be->state = d;
	d->clock_factor = 1.0;
	d->host_step = -1; /* before the first step: calibration, warm-up of the kernels */
	pthread_mutex_init(&d->stats_mu, NULL);
	d->n_launch = fl_tracer_intern("cudaLaunchKernel");
	d->n_memcpy = fl_tracer_intern("cudaMemcpyAsync");
	d->n_ssync = fl_tracer_intern("cudaStreamSynchronize");
	d->n_dsync = fl_tracer_intern("cudaDeviceSynchronize");
	d->n_wait = fl_tracer_intern("cudaStreamWaitEvent");
	d->n_memcpy_sync = fl_tracer_intern("cudaMemcpy");
	d->n_malloc = fl_tracer_intern("cudaMalloc");
	d->n_free = fl_tracer_intern("cudaFree");
	d->n_allreduce_kernel = fl_tracer_intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	d->n_sendrecv_kernel = fl_tracer_intern("ncclDevKernel_SendRecv");
	for (int k = 0; k < 3; k++)
		d->n_memcpy_kind[k] = fl_tracer_intern(copy_name((enum fl_copy_kind)k));
	d->device = cfg->device;
	/* ranks talk over a link deviceProperties always names, so a run with
	 * a slow link (slow_link) differs from a healthy one in its speed only,
	 * never in the presence of the entry */
	if (cfg->world_size > 1)
		d->props_gbps = FL_EMU_LINK_GBPS;
	write_props(d);
	choose_cores(d, cfg->world_size);
	static const int ids[N_STREAMS] = {FL_STREAM_COMPUTE, FL_STREAM_COMM};
	for (int i = 0; i < N_STREAMS; i++) {
		struct emu_stream *s = &d->streams[i];
		s->id = ids[i];
		s->dev = d;
		pthread_mutex_init(&s->mu, NULL);
		pthread_cond_init(&s->nonempty, NULL);
		pthread_cond_init(&s->progress, NULL);
		if (pthread_create(&s->worker, NULL, worker_main, s) != 0)
			return fl_error(FL_ERUNTIME, "emu: cannot start a device worker thread");
		s->started = 1;
	}
	return FL_OK;
}

static void emu_launch(struct fl_backend *be, const struct fl_kernel *k, const struct fl_kernel_args *a, int stream)
{
	struct emu_dev *d = be->state;
	struct emu_op op = {.kind = OP_KERNEL, .k = k, .a = *a, .name = kernel_name(d, k), .step = d->host_step};
	op.macs = fl_gemm_macs(k, a, &op.gemm_kind);
	uint32_t slot = api_begin(d, d->n_launch, &op.corr);
	if (be->launch_work) /* the host side of the launch: checks, descriptor */
		be->launch_work(be->launch_work_arg, k, a);
	enqueue(stream_of(d, stream), &op);
	fl_span_end(slot);
}

static void emu_copy(struct fl_backend *be, void *dst, const void *src, size_t bytes, enum fl_copy_kind kind,
		     int stream)
{
	struct emu_dev *d = be->state;
	struct emu_op op = {.kind = OP_COPY, .dst = dst, .src = src, .bytes = bytes, .copy_kind = kind,
			    .name = d->n_memcpy_kind[kind]};
	uint32_t slot = api_begin(d, d->n_memcpy, &op.corr);
	enqueue(stream_of(d, stream), &op);
	fl_span_end(slot);
	pthread_mutex_lock(&d->stats_mu);
	d->st.copies++;
	pthread_mutex_unlock(&d->stats_mu);
}

/* cudaMemcpy from pageable memory: the copy waits behind the stream's queued
 * work and the host waits for the copy. */
static void emu_copy_sync(struct fl_backend *be, void *dst, const void *src, size_t bytes, enum fl_copy_kind kind,
			  int stream)
{
	struct emu_dev *d = be->state;
	struct emu_op op = {.kind = OP_COPY, .dst = dst, .src = src, .bytes = bytes, .copy_kind = kind,
			    .name = d->n_memcpy_kind[kind]};
	uint32_t slot = api_begin(d, d->n_memcpy_sync, &op.corr);
	struct emu_stream *s = stream_of(d, stream);
	wait_until(s, enqueue(s, &op));
	fl_span_end(slot);
	pthread_mutex_lock(&d->stats_mu);
	d->st.copies++;
	d->st.syncs++;
	pthread_mutex_unlock(&d->stats_mu);
}

/* Wait until every stream has run what was queued before now. */
static void drain(struct emu_dev *d)
{
	for (int i = 0; i < N_STREAMS; i++) {
		struct emu_stream *s = &d->streams[i];
		pthread_mutex_lock(&s->mu);
		uint64_t seq = s->submitted;
		pthread_mutex_unlock(&s->mu);
		wait_until(s, seq);
	}
}

/* cudaMalloc with no caching allocator: fresh pages from the OS, mapped now
 * (the first touch faults every page in, as the driver maps device memory). */
static void *emu_alloc_uncached(struct fl_backend *be, size_t bytes)
{
	struct emu_dev *d = be->state;
	uint32_t corr;
	uint32_t slot = api_begin(d, d->n_malloc, &corr);
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		p = NULL;
	else
		memset(p, 0, bytes);
	fl_span_end(slot);
	return p;
}

/* cudaFree: the device finishes everything queued first (it synchronizes),
 * then the pages go back to the OS. */
static void emu_free_uncached(struct fl_backend *be, void *ptr, size_t bytes)
{
	struct emu_dev *d = be->state;
	uint32_t corr;
	uint32_t slot = api_begin(d, d->n_free, &corr);
	drain(d);
	if (ptr)
		munmap(ptr, bytes ? bytes : 1);
	fl_span_end(slot);
	pthread_mutex_lock(&d->stats_mu);
	d->st.syncs++;
	pthread_mutex_unlock(&d->stats_mu);
}

static void emu_stream_wait(struct fl_backend *be, int wait_stream, int on_stream)
{
	struct emu_dev *d = be->state;
	struct emu_stream *on = stream_of(d, on_stream);
	uint32_t corr;
	uint32_t slot = api_begin(d, d->n_wait, &corr);
	pthread_mutex_lock(&on->mu);
	uint64_t seq = on->submitted;
	pthread_mutex_unlock(&on->mu);
	struct emu_op op = {.kind = OP_WAIT, .wait_on = on, .wait_seq = seq, .corr = corr};
	enqueue(stream_of(d, wait_stream), &op);
	fl_span_end(slot);
}

static void emu_stream_synchronize(struct fl_backend *be, int stream)
{
	struct emu_dev *d = be->state;
	struct emu_stream *s = stream_of(d, stream);
	uint32_t corr;
	uint32_t slot = api_begin(d, d->n_ssync, &corr);
	pthread_mutex_lock(&s->mu);
	uint64_t seq = s->submitted;
	pthread_mutex_unlock(&s->mu);
	wait_until(s, seq);
	fl_span_end(slot);
	pthread_mutex_lock(&d->stats_mu);
	d->st.syncs++;
	pthread_mutex_unlock(&d->stats_mu);
}

static void emu_synchronize(struct fl_backend *be)
{
	struct emu_dev *d = be->state;
	uint32_t corr;
	uint32_t slot = api_begin(d, d->n_dsync, &corr);
	for (int i = 0; i < N_STREAMS; i++) {
		struct emu_stream *s = &d->streams[i];
		pthread_mutex_lock(&s->mu);
		uint64_t seq = s->submitted;
		pthread_mutex_unlock(&s->mu);
		wait_until(s, seq);
	}
	fl_span_end(slot);
}

static void emu_allreduce(struct fl_backend *be, float *buf, size_t n, int stream)
{
	struct emu_dev *d = be->state;
	struct emu_op op = {.kind = OP_ALLREDUCE, .dst = buf, .bytes = n * sizeof(float), .name = d->n_allreduce_kernel};
	uint32_t slot = api_begin(d, d->n_launch, &op.corr);
	enqueue(stream_of(d, stream), &op);
	fl_span_end(slot);
}

/* A point-to-point transfer on the comm stream's worker (MPI_Isend / MPI_Irecv
 * polled to completion), named like NCCL's send/recv kernel. */
static void emu_sendrecv(struct fl_backend *be, float *buf, size_t n, int peer, int send, int tag, int stream)
{
	struct emu_dev *d = be->state;
	struct emu_op op = {.kind = OP_SENDRECV, .dst = buf, .bytes = n * sizeof(float), .peer = peer, .send = send,
			    .tag = tag, .name = d->n_sendrecv_kernel};
	uint32_t slot = api_begin(d, d->n_launch, &op.corr);
	enqueue(stream_of(d, stream), &op);
	fl_span_end(slot);
}

/* An all-to-all on the comm stream's worker (MPI_Ialltoallv polled to
 * completion), named like the SendRecv kernel NCCL runs it as; the bytes are
 * what this rank sends. */
static void emu_alltoallv(struct fl_backend *be, const float *send, const size_t *send_counts, float *recv,
			  const size_t *recv_counts, int stream)
{
	struct emu_dev *d = be->state;
	size_t n = 0;
	for (int p = 0; p < (be->cfg.world_size > 0 ? be->cfg.world_size : 1); p++)
		n += send_counts[p];
	struct emu_op op = {.kind = OP_ALLTOALL, .src = send, .dst = recv, .bytes = n * sizeof(float),
			    .send_counts = send_counts, .recv_counts = recv_counts, .name = d->n_sendrecv_kernel};
	uint32_t slot = api_begin(d, d->n_launch, &op.corr);
	enqueue(stream_of(d, stream), &op);
	fl_span_end(slot);
}

/* Release ctx in stream order: after the work queued so far has run. When the
 * stream has run all of it, nothing queued can still read ctx and it is
 * released now: enqueueing it would wake an idle worker for nothing, and on a
 * virtual machine that wake-up cost the host 3-14 us with no op under it,
 * which in a 35 us serving step read as the loader waiting (a healthy run
 * diagnosed as input_starvation, one run in ten). */
static void emu_release(struct fl_backend *be, void (*fn)(void *ctx), void *ctx, int stream)
{
	struct emu_dev *d = be->state;
	struct emu_stream *s = stream_of(d, stream);
	pthread_mutex_lock(&s->mu);
	int idle = s->completed == s->submitted;
	pthread_mutex_unlock(&s->mu);
	if (idle) {
		fn(ctx);
		return;
	}
	struct emu_op op = {.kind = OP_RELEASE, .fn = fn, .ctx = ctx};
	enqueue(s, &op);
}

static enum fl_status emu_set_clock_factor(struct fl_backend *be, double factor)
{
	struct emu_dev *d = be->state;
	if (!(factor >= 1.0))
		return fl_error(FL_EINPUT, "emu: clock factor %g must be >= 1", factor);
	struct emu_op op = {.kind = OP_SET, .target = &d->clock_factor, .value = factor};
	enqueue(stream_of(d, FL_STREAM_COMPUTE), &op); /* kernels launched from now on */
	return FL_OK;
}

static enum fl_status emu_set_link_gbps(struct fl_backend *be, double gbps)
{
	struct emu_dev *d = be->state;
	if (!(gbps > 0))
		return fl_error(FL_EINPUT, "emu: link speed %g Gbit/s must be > 0", gbps);
	struct emu_op op = {.kind = OP_SET, .target = &d->link_gbps, .value = gbps};
	enqueue(stream_of(d, FL_STREAM_COMM), &op); /* collectives issued from now on */
	d->props_gbps = gbps; /* host side: deviceProperties names the link */
	write_props(d);
	return FL_OK;
}

static void emu_stats(struct fl_backend *be, struct fl_device_stats *out, int reset)
{
	struct emu_dev *d = be->state;
	pthread_mutex_lock(&d->stats_mu);
	*out = d->st;
	if (reset)
		memset(&d->st, 0, sizeof(d->st));
	pthread_mutex_unlock(&d->stats_mu);
}

static const char *emu_device_properties(struct fl_backend *be)
{
	struct emu_dev *d = be->state;
	return d->props;
}

static void emu_close(struct fl_backend *be)
{
	struct emu_dev *d = be->state;
	if (!d)
		return;
	for (int i = 0; i < N_STREAMS; i++) {
		struct emu_stream *s = &d->streams[i];
		if (!s->started)
			continue;
		struct emu_op stop = {.kind = OP_STOP};
		enqueue(s, &stop);
		pthread_join(s->worker, NULL);
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->nonempty);
		pthread_cond_destroy(&s->progress);
	}
	pthread_mutex_destroy(&d->stats_mu);
	if (d->host_pinned) /* the next run (regen runs many in one process) chooses afresh */
		sched_setaffinity(0, sizeof(d->host_affinity), &d->host_affinity);
	free(d);
	be->state = NULL;
}

/* The last error a collective reported on the comm worker (FL_OK if none). */
enum fl_status fl_emu_comm_status(struct fl_backend *be);
enum fl_status fl_emu_comm_status(struct fl_backend *be)
{
	struct emu_dev *d = be->state;
	return d ? d->comm_error : FL_OK;
}

const struct fl_backend_ops fl_backend_emu = {
	.name = "emu",
	.summary = "an emulated asynchronous device: per-stream queues run for real by worker threads",
	.asynchronous = 1,
	.open = emu_open,
	.compute_core = emu_compute_core,
	.mark_step = emu_mark_step,
	.gemm_speed = emu_gemm_speed,
	.launch = emu_launch,
	.copy = emu_copy,
	.copy_sync = emu_copy_sync,
	.alloc_uncached = emu_alloc_uncached,
	.free_uncached = emu_free_uncached,
	.stream_wait = emu_stream_wait,
	.stream_synchronize = emu_stream_synchronize,
	.synchronize = emu_synchronize,
	.allreduce = emu_allreduce,
	.sendrecv = emu_sendrecv,
	.alltoallv = emu_alltoallv,
	.release = emu_release,
	.set_clock_factor = emu_set_clock_factor,
	.set_link_gbps = emu_set_link_gbps,
	.stats = emu_stats,
	.device_properties = emu_device_properties,
	.close = emu_close,
};
