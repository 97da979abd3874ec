#include "capture/tracer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/categories.h"

_Thread_local struct fl_tbuf *fl_tls_tbuf;
volatile int fl_tracer_recording;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fl_tbuf *threads;
static uint32_t default_cap = 1u << 16;
static char **names;
static uint32_t n_names, cap_names;

static const char *const kind_cat[FL_EV_KIND_COUNT] = {
	[FL_EV_CPU_OP] = FL_CATEGORY_CPU_OP,
	[FL_EV_USER_ANNOTATION] = FL_CATEGORY_USER_ANNOTATION,
	[FL_EV_CUDA_RUNTIME] = FL_CATEGORY_CUDA_RUNTIME,
	[FL_EV_KERNEL] = FL_CATEGORY_KERNEL,
	[FL_EV_GPU_MEMCPY] = FL_CATEGORY_GPU_MEMCPY,
	[FL_EV_GPU_MEMSET] = FL_CATEGORY_GPU_MEMSET,
	[FL_EV_GPU_USER_ANNOTATION] = FL_CATEGORY_GPU_USER_ANNOTATION,
	[FL_EV_CUDA_SYNC] = FL_CATEGORY_CUDA_SYNC,
	[FL_EV_CUDA_DRIVER] = FL_CATEGORY_CUDA_DRIVER,
	[FL_EV_OVERHEAD] = FL_CATEGORY_OVERHEAD,
};

static struct fl_capture_source source;

const char *fl_event_kind_cat(enum fl_event_kind k)
{
	return (unsigned)k < FL_EV_KIND_COUNT ? kind_cat[k] : "unknown";
}

/* torch.profiler's names: c10's dtype names, "Scalar"/"ScalarList" for numbers */
static const char *const input_type[FL_IN_TYPE_COUNT] = {
	[FL_IN_NONE] = "", [FL_IN_FLOAT] = "float", [FL_IN_HALF] = "c10::Half",
	[FL_IN_SCALAR] = "Scalar", [FL_IN_SCALAR_LIST] = "ScalarList",
};

const char *fl_input_type_name(enum fl_input_type t)
{
	return (unsigned)t < FL_IN_TYPE_COUNT ? input_type[t] : "";
}

/* Allocate and touch every page so the recorded window never faults on it. */
static struct fl_event *alloc_events(uint32_t cap)
{
	struct fl_event *ev = malloc((size_t)cap * sizeof(*ev));
	if (ev)
		memset(ev, 0, (size_t)cap * sizeof(*ev));
	return ev;
}

/* The shapes array of a host buffer: one record per event, touched now. */
static struct fl_op_inputs *alloc_shapes(uint32_t cap)
{
	struct fl_op_inputs *s = malloc((size_t)cap * sizeof(*s));
	if (s)
		memset(s, 0, (size_t)cap * sizeof(*s));
	return s;
}

enum fl_status fl_tracer_init(uint32_t initial_cap)
{
	fl_clock_init();
	if (initial_cap)
		default_cap = initial_cap;
	return FL_OK;
}

enum fl_status fl_tracer_thread_attach(const char *label, int device)
{
	if (fl_tls_tbuf)
		return FL_OK;
	struct fl_tbuf *b = calloc(1, sizeof(*b));
	if (!b)
		return fl_error(FL_ERUNTIME, "cannot allocate a trace buffer: out of memory");
	b->ev = alloc_events(default_cap);
	if (!b->ev) {
		free(b);
		return fl_error(FL_ERUNTIME, "cannot allocate a trace buffer of %u events", default_cap);
	}
	b->cap = default_cap;
	if (device < 0) { /* a host thread: its ops record their inputs */
		b->shapes = alloc_shapes(default_cap);
		if (!b->shapes) {
			free(b->ev);
			free(b);
			return fl_error(FL_ERUNTIME, "cannot allocate the op inputs of a trace buffer of %u events",
					default_cap);
		}
		b->cap_shapes = default_cap;
	}
	b->pid = (int)getpid();
	b->tid = (int)syscall(SYS_gettid);
	b->device = device;
	snprintf(b->label, sizeof(b->label), "%s", label ? label : "");
	pthread_mutex_lock(&lock);
	struct fl_tbuf **pp = &threads;
	while (*pp)
		pp = &(*pp)->next;
	*pp = b;
	pthread_mutex_unlock(&lock);
	fl_tls_tbuf = b;
	return FL_OK;
}

uint32_t fl_tracer_intern(const char *name)
{
	pthread_mutex_lock(&lock);
	for (uint32_t i = 0; i < n_names; i++) {
		if (strcmp(names[i], name) == 0) {
			pthread_mutex_unlock(&lock);
			return i;
		}
	}
	if (n_names == cap_names) {
		uint32_t nc = cap_names ? cap_names * 2 : 64;
		char **nn = realloc(names, nc * sizeof(*nn));
		if (!nn) {
			pthread_mutex_unlock(&lock);
			fputs("faultline: out of memory\n", stderr);
			abort();
		}
		names = nn;
		cap_names = nc;
	}
	names[n_names] = strdup(name);
	if (!names[n_names]) {
		pthread_mutex_unlock(&lock);
		fputs("faultline: out of memory\n", stderr);
		abort();
	}
	uint32_t id = n_names++;
	pthread_mutex_unlock(&lock);
	return id;
}

const char *fl_tracer_name(uint32_t id) { return id < n_names ? names[id] : "?"; }

void fl_tracer_set_recording(int on)
{
	__atomic_store_n(&fl_tracer_recording, on, __ATOMIC_SEQ_CST);
}

enum fl_status fl_tracer_reserve(uint32_t cap)
{
	enum fl_status st = FL_OK;
	if (source.window_begin)
		source.window_begin(source.ctx);
	pthread_mutex_lock(&lock);
	for (struct fl_tbuf *b = threads; b; b = b->next) {
		b->n = 0;
		b->depth = 0;
		b->dropped = 0;
		b->n_args = 0;
		b->n_shapes = 0;
		if (b->shapes && b->cap_shapes < cap) {
			struct fl_op_inputs *sh = alloc_shapes(cap);
			if (!sh) {
				st = fl_error(FL_ERUNTIME, "cannot allocate the op inputs of a trace buffer of %u events", cap);
				break;
			}
			free(b->shapes);
			b->shapes = sh;
			b->cap_shapes = cap;
		}
		if (b->cap >= cap)
			continue;
		struct fl_event *ev = alloc_events(cap);
		if (!ev) {
			st = fl_error(FL_ERUNTIME, "cannot allocate a trace buffer of %u events", cap);
			break;
		}
		free(b->ev);
		b->ev = ev;
		b->cap = cap;
	}
	if (cap > default_cap)
		default_cap = cap;
	pthread_mutex_unlock(&lock);
	return st;
}

uint32_t fl_tracer_max_count(void)
{
	uint32_t m = 0;
	pthread_mutex_lock(&lock);
	for (struct fl_tbuf *b = threads; b; b = b->next)
		if (b->n > m)
			m = b->n;
	pthread_mutex_unlock(&lock);
	return m;
}

uint64_t fl_tracer_dropped(void)
{
	uint64_t d = 0;
	pthread_mutex_lock(&lock);
	for (struct fl_tbuf *b = threads; b; b = b->next)
		d += b->dropped;
	pthread_mutex_unlock(&lock);
	return d;
}

struct fl_tbuf *fl_tracer_threads(void) { return threads; }

void fl_tracer_release(void)
{
	pthread_mutex_lock(&lock);
	struct fl_tbuf *b = threads;
	while (b) {
		struct fl_tbuf *nx = b->next;
		free(b->ev);
		free(b->args);
		free(b->shapes);
		free(b);
		b = nx;
	}
	threads = NULL;
	for (uint32_t i = 0; i < n_names; i++)
		free(names[i]);
	free(names);
	names = NULL;
	n_names = cap_names = 0;
	fl_tracer_recording = 0;
	memset(&source, 0, sizeof(source));
	pthread_mutex_unlock(&lock);
	fl_tls_tbuf = NULL;
}

void fl_tracer_set_source(const struct fl_capture_source *src)
{
	if (src)
		source = *src;
	else
		memset(&source, 0, sizeof(source));
}

enum fl_status fl_tracer_collect(uint64_t t0, uint64_t t1)
{
	return source.collect ? source.collect(source.ctx, t0, t1) : FL_OK;
}

struct fl_tbuf *fl_tracer_buffer_new(const char *label, int pid, int tid, int device, uint32_t cap)
{
	struct fl_tbuf *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->ev = alloc_events(cap ? cap : 1);
	if (!b->ev) {
		free(b);
		return NULL;
	}
	b->cap = cap ? cap : 1;
	b->pid = pid;
	b->tid = tid;
	b->device = device;
	snprintf(b->label, sizeof(b->label), "%s", label ? label : "");
	pthread_mutex_lock(&lock);
	struct fl_tbuf **pp = &threads;
	while (*pp)
		pp = &(*pp)->next;
	*pp = b;
	pthread_mutex_unlock(&lock);
	return b;
}

uint64_t fl_tracer_add_args(struct fl_tbuf *b, const struct fl_event_args *a)
{
	if (b->n_args == b->cap_args) {
		uint32_t nc = b->cap_args ? b->cap_args * 2 : 256;
		struct fl_event_args *na = realloc(b->args, (size_t)nc * sizeof(*na));
		if (!na)
			return 0;
		b->args = na;
		b->cap_args = nc;
	}
	b->args[b->n_args++] = *a;
	return b->n_args;
}
