/* tracer.h — per-thread, pre-allocated event buffers for host and device activity.
 *
 * Hot path: fl_span_begin()/fl_span_end() read one clock tick each and write a
 * 40-byte record into the calling thread's buffer. No lock, no allocation, no
 * I/O. A full buffer never grows inside the recorded window: the event is counted
 * as dropped (and the count is written to the trace metadata and the truth).
 *
 * Names are interned before the window (fl_tracer_intern, locked, may allocate);
 * an event stores the 32-bit id. Categories are Kineto's.
 *
 * An op with inputs (fl_op_begin) also stores their shapes and types in a
 * fixed-size record of a pre-allocated side array of its host buffer (as
 * torch.profiler's record_shapes=True): the writer prints them as the op's
 * "Input Dims" and "Input type".
 *
 * Lifecycle: fl_tracer_init() → fl_tracer_thread_attach() on every thread that
 * records → fl_tracer_set_recording(1) … (0) → fl_tracer_reserve() between
 * windows → the writer walks fl_tracer_threads() → fl_tracer_release().
 */
#ifndef FL_TRACER_H
#define FL_TRACER_H

#include <stdint.h>

#include "capture/clock.h"
#include "common/status.h"

enum fl_event_kind {
	FL_EV_CPU_OP = 0,
	FL_EV_USER_ANNOTATION,
	FL_EV_CUDA_RUNTIME,
	FL_EV_KERNEL,
	FL_EV_GPU_MEMCPY,
	FL_EV_GPU_MEMSET,
	FL_EV_GPU_USER_ANNOTATION,
	FL_EV_CUDA_SYNC,
	FL_EV_CUDA_DRIVER,         /* a CUDA driver API call (CUPTI) */
	FL_EV_OVERHEAD,            /* time the capture itself took on a thread (CUPTI) */
	FL_EV_KIND_COUNT
};

/* Kineto's category string for a kind ("cpu_op", "user_annotation", ...). */
const char *fl_event_kind_cat(enum fl_event_kind k);

struct fl_event {
	uint64_t t0, t1;   /* clock ticks (capture/clock.h) */
	uint32_t name;     /* interned name id */
	uint16_t kind;     /* enum fl_event_kind */
	uint16_t depth;    /* nesting depth on its thread when it began */
	uint32_t corr;     /* correlation id linking a launch to device work; 0 = none */
	int32_t stream;    /* device stream for device rows; -1 on host rows */
	uint64_t value;    /* kind-specific: bytes of a copy or memset; in a buffer
			      with a side table (args != NULL): 1 + index of the
			      event's fl_event_args, 0 = none; a cpu_op: 1 + index
			      of its fl_op_inputs in the buffer's shapes, 0 = none */
};

/* One input of an op, as torch.profiler records it: a tensor's sizes and
 * dtype, or a non-tensor argument (dims [], type "Scalar", "ScalarList", ""). */
enum fl_input_type {
	FL_IN_NONE = 0,     /* ""           any other argument (None, a dtype, ...) */
	FL_IN_FLOAT,        /* "float"      a float32 tensor */
	FL_IN_HALF,         /* "c10::Half"  a float16 tensor */
	FL_IN_SCALAR,       /* "Scalar"     a number */
	FL_IN_SCALAR_LIST,  /* "ScalarList" a list of numbers (sizes, strides) */
	FL_IN_TYPE_COUNT
};
/* torch.profiler's "Input type" string of a type. */
const char *fl_input_type_name(enum fl_input_type t);

#define FL_OP_MAX_INPUTS 4
#define FL_INPUT_MAX_DIMS 3

struct fl_input {
	int32_t dim[FL_INPUT_MAX_DIMS]; /* sizes, outermost first; ndim of them are set */
	uint8_t ndim;                    /* 0 for a 0-dim tensor and for non-tensors */
	uint8_t type;                    /* enum fl_input_type */
};

/* The inputs of one op (n ≤ FL_OP_MAX_INPUTS), in its buffer's shapes array. */
struct fl_op_inputs {
	uint32_t n;
	struct fl_input in[FL_OP_MAX_INPUTS];
};

/* Arguments of a captured event that the 40-byte event has no room for (what
 * CUPTI reports about a kernel, a copy, a sync, an API call). They live in a
 * side table of the event's buffer, filled after the window; the hot path of
 * cpu/emu never touches them. */
struct fl_event_args {
	uint64_t bytes;             /* copies and memsets */
	int32_t grid[3], block[3];  /* kernels */
	uint32_t registers;         /* registers per thread */
	uint32_t shared_mem;        /* static + dynamic shared memory per block, bytes */
	float blocks_per_sm, warps_per_sm;
	float occupancy_pct;        /* estimated achieved occupancy, % */
	uint32_t context;           /* CUDA context id */
	uint32_t cbid;              /* API calls: CUPTI callback id */
	const char *sync_kind;      /* cuda_sync: "Stream Sync", ... (static string) */
};

#define FL_SLOT_NONE UINT32_MAX

struct fl_tbuf {
	struct fl_event *ev;
	uint32_t cap, n;
	uint32_t depth;
	uint64_t dropped;
	int pid, tid;        /* row of host events */
	int device;          /* device ordinal for device rows, -1 for a host thread */
	char label[48];      /* thread name shown in the trace */
	struct fl_tbuf *next;
	struct fl_event_args *args; /* side table (NULL unless a capture filled one) */
	uint32_t n_args, cap_args;
	/* ops' inputs (host threads only; NULL elsewhere): as many records as
	 * events fit, pre-faulted, so an op that fits its event fits its record */
	struct fl_op_inputs *shapes;
	uint32_t n_shapes, cap_shapes;
};

extern _Thread_local struct fl_tbuf *fl_tls_tbuf;
extern volatile int fl_tracer_recording;

enum fl_status fl_tracer_init(uint32_t initial_cap);
/* Give the calling thread a buffer (label: "main", "device 0 worker", ...). */
enum fl_status fl_tracer_thread_attach(const char *label, int device);
uint32_t fl_tracer_intern(const char *name);
const char *fl_tracer_name(uint32_t id);
void fl_tracer_set_recording(int on);
/* Clear all buffers and make sure each holds at least cap events, touching the
 * pages now so the window takes no page faults. Call outside the window. */
enum fl_status fl_tracer_reserve(uint32_t cap);
/* Largest event count of any thread buffer since the last reserve/clear. */
uint32_t fl_tracer_max_count(void);
uint64_t fl_tracer_dropped(void);
struct fl_tbuf *fl_tracer_threads(void);
void fl_tracer_release(void);

/* ---- device activity captured outside the tracer's buffers (CUPTI) ----
 *
 * A capture source is told when the recorded window begins (fl_tracer_reserve
 * calls window_begin: drop what was captured before) and is asked to move the
 * window's activity into tracer buffers before the writer reads them
 * (fl_kineto_write calls fl_tracer_collect with the window's bounds in ticks).
 * collect may fail (a device error met during the run): the trace is then not
 * written. At most one source; NULL removes it. */
struct fl_capture_source {
	void (*window_begin)(void *ctx);
	enum fl_status (*collect)(void *ctx, uint64_t t0, uint64_t t1);
	void *ctx;
};
void fl_tracer_set_source(const struct fl_capture_source *src);
/* Run the source's collect (FL_OK when there is none). */
enum fl_status fl_tracer_collect(uint64_t t0, uint64_t t1);

/* A buffer not bound to a thread, for events converted after the window:
 * host rows (device < 0) show pid/tid, device rows show device/stream. */
struct fl_tbuf *fl_tracer_buffer_new(const char *label, int pid, int tid, int device, uint32_t cap);
/* Store args in b's side table; returns the event's value (1 + index), or 0
 * when out of memory (the event then shows default args). Outside the window. */
uint64_t fl_tracer_add_args(struct fl_tbuf *b, const struct fl_event_args *a);
/* The args of an event of b, or NULL. Not for a cpu_op: its value indexes
 * the shapes array (fl_event_inputs_of). */
static inline const struct fl_event_args *fl_event_args_of(const struct fl_tbuf *b, const struct fl_event *e)
{
	return b->args && e->value && e->value <= b->n_args ? &b->args[e->value - 1] : NULL;
}
/* The inputs an op recorded (fl_op_begin), or NULL. */
static inline const struct fl_op_inputs *fl_event_inputs_of(const struct fl_tbuf *b, const struct fl_event *e)
{
	return b->shapes && e->kind == FL_EV_CPU_OP && e->value && e->value <= b->n_shapes ? &b->shapes[e->value - 1]
											     : NULL;
}

/* Claim the calling thread's next event slot for an open span (its start
 * time not yet taken): the slot, or FL_SLOT_NONE when not recording or full. */
static inline uint32_t fl_slot_open(uint32_t name, enum fl_event_kind kind)
{
	struct fl_tbuf *b = fl_tls_tbuf;
	if (!fl_tracer_recording || !b)
		return FL_SLOT_NONE;
	uint32_t i = b->n;
	if (__builtin_expect(i >= b->cap, 0)) {
		b->dropped++;
		return FL_SLOT_NONE;
	}
	b->n = i + 1;
	struct fl_event *e = &b->ev[i];
	e->name = name;
	e->kind = (uint16_t)kind;
	e->depth = (uint16_t)b->depth++;
	e->corr = 0;
	e->stream = -1;
	e->value = 0;
	e->t1 = 0;
	return i;
}

static inline uint32_t fl_span_begin(uint32_t name, enum fl_event_kind kind)
{
	uint32_t i = fl_slot_open(name, kind);
	if (i != FL_SLOT_NONE)
		fl_tls_tbuf->ev[i].t0 = fl_clock_ticks();
	return i;
}

/* A cpu_op span with its n inputs (in[0..n)): fl_span_begin plus one
 * fixed-size record in the buffer's shapes array, copied before the op's
 * first timestamp. n == 0 records no inputs; n is capped at FL_OP_MAX_INPUTS. */
static inline uint32_t fl_op_begin(uint32_t name, const struct fl_input *in, uint32_t n)
{
	uint32_t i = fl_slot_open(name, FL_EV_CPU_OP);
	if (i == FL_SLOT_NONE)
		return i;
	struct fl_tbuf *b = fl_tls_tbuf;
	struct fl_event *e = &b->ev[i];
	uint32_t k = b->n_shapes;
	if (n && __builtin_expect(k < b->cap_shapes, 1)) {
		struct fl_op_inputs *s = &b->shapes[k];
		if (n > FL_OP_MAX_INPUTS)
			n = FL_OP_MAX_INPUTS;
		s->n = n;
		for (uint32_t j = 0; j < n; j++)
			s->in[j] = in[j];
		b->n_shapes = k + 1;
		e->value = (uint64_t)k + 1;
	}
	e->t0 = fl_clock_ticks();
	return i;
}

static inline void fl_span_end(uint32_t slot)
{
	if (slot == FL_SLOT_NONE)
		return;
	uint64_t t = fl_clock_ticks();
	struct fl_tbuf *b = fl_tls_tbuf;
	b->ev[slot].t1 = t;
	b->depth--;
}

/* The innermost span still open on the calling thread (the op a device call
 * belongs to), or FL_SLOT_NONE. Looks back at most 256 events: the spans
 * closed since that op began. Not recording: FL_SLOT_NONE. */
static inline uint32_t fl_span_innermost(void)
{
	struct fl_tbuf *b = fl_tls_tbuf;
	if (!fl_tracer_recording || !b)
		return FL_SLOT_NONE;
	uint32_t stop = b->n > 256 ? b->n - 256 : 0;
	for (uint32_t i = b->n; i > stop; i--)
		if (b->ev[i - 1].t1 == 0)
			return i - 1;
	return FL_SLOT_NONE;
}

/* Attach a correlation id to an open span (a runtime call that launched work). */
static inline void fl_span_set_corr(uint32_t slot, uint32_t corr)
{
	if (slot != FL_SLOT_NONE)
		fl_tls_tbuf->ev[slot].corr = corr;
}

/* Record an already-measured interval (device work, a CUPTI record). */
static inline void fl_trace_complete(uint32_t name, enum fl_event_kind kind, uint64_t t0,
				     uint64_t t1, uint32_t corr, int32_t stream, uint64_t value)
{
	struct fl_tbuf *b = fl_tls_tbuf;
	if (!fl_tracer_recording || !b)
		return;
	uint32_t i = b->n;
	if (__builtin_expect(i >= b->cap, 0)) {
		b->dropped++;
		return;
	}
	b->n = i + 1;
	struct fl_event *e = &b->ev[i];
	e->t0 = t0;
	e->t1 = t1;
	e->name = name;
	e->kind = (uint16_t)kind;
	e->depth = (uint16_t)b->depth;
	e->corr = corr;
	e->stream = stream;
	e->value = value;
}

#endif
