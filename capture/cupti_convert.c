/* cupti_convert.c — CUPTI activity records → tracer events (see cupti_convert.h). */
#include "capture/cupti_convert.h"

#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/tracer.h"

/* libstdc++'s demangler (CUDA builds link libstdc++) for C++ kernel names, as Kineto shows them. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct api_rec {
	uint64_t t0, t1, ext;
	uint32_t corr, cbid, tid, dense;
	uint8_t driver, internal, keep, has_ext;
};

struct dev_rec {
	uint64_t t0, t1;
	uint32_t corr, name, device, stream;
	int32_t stream_signed;
	uint16_t kind;
	uint8_t drop, is_compute;
	struct fl_event_args args;
};

struct host_ins {
	uint64_t t0, t1, value;
	uint32_t name, corr, tid, anchor, pos;
	uint16_t kind, depth;
};

struct ext_pair {
	uint32_t corr;
	uint64_t ext;
};

#define VEC(T) struct { T *v; size_t n, cap; }
#define VEC_PUSH(vec, item)                                                                      \
	(((vec).n == (vec).cap && !grow((void **)&(vec).v, &(vec).cap, sizeof(*(vec).v))) ? 0 :   \
	 ((vec).v[(vec).n++] = (item), 1))

static int grow(void **v, size_t *cap, size_t size)
{
	size_t nc = *cap ? *cap * 2 : 256;
	void *nv = realloc(*v, nc * size);
	if (!nv)
		return 0;
	*v = nv;
	*cap = nc;
	return 1;
}

/* ---- names ---- */

const char *fl_cupti_memcpy_kind(unsigned kind)
{
	static const char *const s[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					"AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
	return kind < sizeof(s) / sizeof(s[0]) ? s[kind] : "Unknown";
}

const char *fl_cupti_memory_kind(unsigned kind)
{
	static const char *const s[] = {"Unknown", "Pageable", "Pinned", "Device",
					"Array", "Managed", "Device Static", "Managed Static"};
	return kind < sizeof(s) / sizeof(s[0]) ? s[kind] : "Unknown";
}

const char *fl_cupti_sync_kind(unsigned kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
	default: return "Unknown";
	}
}

static const char *overhead_name(unsigned kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Driver Compiler";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI Buffer Flush";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI Instrumentation";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI Resource";
	case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Module Loading";
	case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy Function Loading";
	case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command Buffer Full";
	case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "CUPTI Buffer Request";
	default: return "CUPTI Overhead";
	}
}

#define API_NAMES 2048
struct names {
	uint32_t api[2][API_NAMES]; /* [driver][cbid] → 1 + interned id */
	uint32_t copy[11][8][8];    /* 1 + interned id */
	uint32_t set[8];
	const char *kname[64];      /* CUPTI's kernel name pointers are shared per kernel */
	uint32_t kid[64];
	size_t nk;
};

/* "cudaLaunchKernel_v7000" → "cudaLaunchKernel" */
static uint32_t api_name(struct names *nm, int driver, uint32_t cbid)
{
	uint32_t *slot = cbid < API_NAMES ? &nm->api[driver][cbid] : NULL;
	if (slot && *slot)
		return *slot - 1;
	const char *s = NULL;
	char buf[128];
	if (cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &s) !=
		    CUPTI_SUCCESS || !s) {
		snprintf(buf, sizeof(buf), "%s API %u", driver ? "driver" : "runtime", cbid);
	} else {
		snprintf(buf, sizeof(buf), "%s", s);
		char *v = strrchr(buf, '_');
		if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' && strspn(v + 2, "0123456789") == strlen(v + 2))
			*v = '\0';
	}
	uint32_t id = fl_tracer_intern(buf);
	if (slot)
		*slot = id + 1;
	return id;
}

static uint32_t kernel_name(struct names *nm, const char *name)
{
	for (size_t i = 0; i < nm->nk; i++)
		if (nm->kname[i] == name)
			return nm->kid[i];
	uint32_t id;
	char *dem = NULL;
	int status = -1;
	if (name && strncmp(name, "_Z", 2) == 0)
		dem = __cxa_demangle(name, NULL, NULL, &status);
	id = fl_tracer_intern(dem && status == 0 ? dem : name ? name : "(unnamed kernel)");
	free(dem);
	if (nm->nk < sizeof(nm->kname) / sizeof(nm->kname[0])) {
		nm->kname[nm->nk] = name;
		nm->kid[nm->nk++] = id;
	}
	return id;
}

static uint32_t copy_name(struct names *nm, unsigned kind, unsigned src, unsigned dst)
{
	uint32_t *slot = kind < 11 && src < 8 && dst < 8 ? &nm->copy[kind][src][dst] : NULL;
	if (slot && *slot)
		return *slot - 1;
	char buf[96];
	snprintf(buf, sizeof(buf), "Memcpy %s (%s -> %s)", fl_cupti_memcpy_kind(kind), fl_cupti_memory_kind(src),
		 fl_cupti_memory_kind(dst));
	uint32_t id = fl_tracer_intern(buf);
	if (slot)
		*slot = id + 1;
	return id;
}

static uint32_t set_name(struct names *nm, unsigned kind)
{
	uint32_t *slot = kind < 8 ? &nm->set[kind] : NULL;
	if (slot && *slot)
		return *slot - 1;
	char buf[64];
	snprintf(buf, sizeof(buf), "Memset (%s)", fl_cupti_memory_kind(kind));
	uint32_t id = fl_tracer_intern(buf);
	if (slot)
		*slot = id + 1;
	return id;
}

/* ---- occupancy (an estimate from the launch shape and the device's limits) ---- */

static const struct fl_cupti_device *device_of(const struct fl_cupti_input *in, uint32_t id)
{
	for (size_t i = 0; i < in->n_devices; i++)
		if ((uint32_t)in->devices[i].id == id)
			return &in->devices[i];
	return NULL;
}

static void kernel_occupancy(const struct fl_cupti_device *d, struct fl_event_args *a)
{
	if (!d || d->sms <= 0 || d->warp_size <= 0 || d->max_threads_per_sm <= 0)
		return;
	double blocks = (double)a->grid[0] * a->grid[1] * a->grid[2];
	long threads = (long)a->block[0] * a->block[1] * a->block[2];
	long warps_per_block = (threads + d->warp_size - 1) / d->warp_size;
	long max_warps = d->max_threads_per_sm / d->warp_size;
	if (warps_per_block <= 0 || max_warps <= 0)
		return;
	a->blocks_per_sm = (float)(blocks / d->sms);
	a->warps_per_sm = a->blocks_per_sm * (float)warps_per_block;
	long active = max_warps / warps_per_block;
	if (d->max_blocks_per_sm > 0 && d->max_blocks_per_sm < active)
		active = d->max_blocks_per_sm;
	if (a->registers > 0 && d->regs_per_sm > 0) {
		long per_warp = ((long)a->registers * d->warp_size + 255) / 256 * 256; /* allocated per warp, 256 at a time */
		long by_regs = d->regs_per_sm / (per_warp * warps_per_block);
		if (by_regs < active)
			active = by_regs;
	}
	long smem = (long)a->shared_mem + d->reserved_smem_per_block;
	if (a->shared_mem > 0 && d->smem_per_sm > 0 && smem > 0) {
		long by_smem = d->smem_per_sm / ((smem + 127) / 128 * 128);
		if (by_smem < active)
			active = by_smem;
	}
	double resident = blocks / d->sms < (double)active ? blocks / d->sms : (double)active;
	a->occupancy_pct = (float)(100.0 * resident * (double)warps_per_block / (double)max_warps);
	if (a->occupancy_pct > 100.0f)
		a->occupancy_pct = 100.0f;
}

/* ---- pass 1 ---- */

struct maps {
	uint64_t read_errors;    /* buffers whose reading stopped at a bad record */
	VEC(struct api_rec) api;
	VEC(struct dev_rec) dev;
	VEC(struct host_ins) ovh;
	VEC(struct ext_pair) ext;
	uint32_t ctx_device[64]; /* context id → 1 + device, learned from device records */
};

static void learn_context(struct maps *mp, uint32_t ctx, uint32_t device)
{
	if (ctx < 64)
		mp->ctx_device[ctx] = device + 1;
}

/* A read error is reported on stderr once per process (each is counted). */
static void read_error(struct maps *mp, size_t buffer, const uint8_t *buf, const CUpti_Activity *last, size_t valid,
		       CUptiResult r)
{
	static int warned;
	mp->read_errors++;
	if (warned)
		return;
	warned = 1;
	const char *s = NULL;
	if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
		s = "unknown CUPTI error";
	char where[64] = "at its first record";
	if (last)
		snprintf(where, sizeof(where), "after the record at byte %zu", (size_t)((const uint8_t *)last - buf));
	fprintf(stderr, "faultline: warning: cupti: reading activity buffer %zu (%zu bytes) stopped %s: %s (%d); the "
		"rest of that buffer is lost and counted as dropped (further read errors are only counted)\n", buffer,
		valid, where, s, (int)r);
}

/* Every record of one buffer into the maps: 1, or 0 when out of memory.
 * CUPTI_ERROR_MAX_LIMIT_REACHED is the normal end of a buffer; any other
 * result stops the buffer (the next record cannot be found) and is counted. */
static int read_buffer(struct maps *mp, struct names *nm, const struct fl_cupti_input *in, size_t index)
{
	uint8_t *buf = in->buffers[index];
	size_t valid = in->valid[index];
	CUpti_Activity *r = NULL;
	CUptiResult res;
	while ((res = cuptiActivityGetNextRecord(buf, valid, &r)) == CUPTI_SUCCESS) {
		switch (r->kind) {
		case CUPTI_ACTIVITY_KIND_RUNTIME:
		case CUPTI_ACTIVITY_KIND_DRIVER:
		case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: {
			/* an internal launch is a driver kernel launch outside any public
			 * API call (its cbid is unused): shown as a driver call, so the
			 * kernel it launched keeps its launch and its op */
			const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
			struct api_rec x = {.t0 = a->start, .t1 = a->end, .corr = a->correlationId, .cbid = a->cbid,
					    .tid = a->threadId, .driver = r->kind != CUPTI_ACTIVITY_KIND_RUNTIME,
					    .internal = r->kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API};
			if (x.internal)
				x.cbid = 0;
			if (!VEC_PUSH(mp->api, x))
				return 0;
			break;
		}
		case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
			const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)r;
			if (x->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
				break;
			struct ext_pair p = {.corr = x->correlationId, .ext = x->externalId};
			if (!VEC_PUSH(mp->ext, p))
				return 0;
			break;
		}
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
			const fl_cupti_kernel_rec *k = (const fl_cupti_kernel_rec *)r;
			struct dev_rec d = {.t0 = k->start, .t1 = k->end, .corr = k->correlationId, .device = k->deviceId,
					    .stream_signed = (int32_t)k->streamId, .kind = FL_EV_KERNEL};
			d.name = kernel_name(nm, k->name);
			d.is_compute = !(k->name && strncmp(k->name, "nccl", 4) == 0);
			d.args.grid[0] = k->gridX, d.args.grid[1] = k->gridY, d.args.grid[2] = k->gridZ;
			d.args.block[0] = k->blockX, d.args.block[1] = k->blockY, d.args.block[2] = k->blockZ;
			d.args.registers = k->registersPerThread;
			d.args.shared_mem = (uint32_t)(k->staticSharedMemory + k->dynamicSharedMemory);
			d.args.context = k->contextId;
			kernel_occupancy(device_of(in, k->deviceId), &d.args);
			learn_context(mp, k->contextId, k->deviceId);
			if (!VEC_PUSH(mp->dev, d))
				return 0;
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMCPY: {
			const fl_cupti_memcpy_rec *c = (const fl_cupti_memcpy_rec *)r;
			struct dev_rec d = {.t0 = c->start, .t1 = c->end, .corr = c->correlationId, .device = c->deviceId,
					    .stream_signed = (int32_t)c->streamId, .kind = FL_EV_GPU_MEMCPY};
			d.name = copy_name(nm, c->copyKind, c->srcKind, c->dstKind);
			d.args.bytes = c->bytes;
			d.args.context = c->contextId;
			learn_context(mp, c->contextId, c->deviceId);
			if (!VEC_PUSH(mp->dev, d))
				return 0;
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMSET: {
			const fl_cupti_memset_rec *s = (const fl_cupti_memset_rec *)r;
			struct dev_rec d = {.t0 = s->start, .t1 = s->end, .corr = s->correlationId, .device = s->deviceId,
					    .stream_signed = (int32_t)s->streamId, .kind = FL_EV_GPU_MEMSET};
			d.name = set_name(nm, s->memoryKind);
			d.args.bytes = s->bytes;
			d.args.context = s->contextId;
			learn_context(mp, s->contextId, s->deviceId);
			if (!VEC_PUSH(mp->dev, d))
				return 0;
			break;
		}
		case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
			const fl_cupti_sync_rec *s = (const fl_cupti_sync_rec *)r;
			struct dev_rec d = {.t0 = s->start, .t1 = s->end, .corr = s->correlationId,
					    .device = UINT32_MAX, /* resolved from the context in pass 2 */
					    .stream_signed = (int32_t)s->streamId, .kind = FL_EV_CUDA_SYNC};
			d.args.context = s->contextId;
			d.args.sync_kind = fl_cupti_sync_kind(s->type);
			d.name = fl_tracer_intern(d.args.sync_kind);
			if (!VEC_PUSH(mp->dev, d))
				return 0;
			break;
		}
		case CUPTI_ACTIVITY_KIND_OVERHEAD: {
			const fl_cupti_overhead_rec *o = (const fl_cupti_overhead_rec *)r;
			if (o->objectKind != CUPTI_ACTIVITY_OBJECT_THREAD)
				break; /* device and context overheads have no host row to sit on */
			struct host_ins h = {.t0 = o->start, .t1 = o->end, .tid = o->objectId.pt.threadId,
					     .kind = FL_EV_OVERHEAD, .anchor = FL_SLOT_NONE,
					     .name = fl_tracer_intern(overhead_name(o->overheadKind))};
			if (!VEC_PUSH(mp->ovh, h))
				return 0;
			break;
		}
		default:
			break;
		}
	}
	if (res != CUPTI_ERROR_MAX_LIMIT_REACHED)
		read_error(mp, index, buf, r, valid, res);
	return 1;
}

/* ---- pass 2 ---- */

static int cmp_api_corr(const void *a, const void *b)
{
	const struct api_rec *x = a, *y = b;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int cmp_ext_corr(const void *a, const void *b)
{
	const struct ext_pair *x = a, *y = b;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int cmp_dev_stream_t0(const void *a, const void *b)
{
	const struct dev_rec *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream_signed != y->stream_signed)
		return x->stream_signed < y->stream_signed ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int cmp_dev_t0(const void *a, const void *b)
{
	const struct dev_rec *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	return x->stream_signed < y->stream_signed ? -1 : x->stream_signed > y->stream_signed;
}

static int cmp_ins(const void *a, const void *b)
{
	const struct host_ins *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	return x->t1 > y->t1 ? -1 : x->t1 < y->t1; /* an enclosing call first */
}

static struct api_rec *api_by_corr(struct api_rec *v, size_t n, uint32_t corr)
{
	struct api_rec key = {.corr = corr};
	return n ? bsearch(&key, v, n, sizeof(*v), cmp_api_corr) : NULL;
}

static const struct ext_pair *ext_by_corr(const struct ext_pair *v, size_t n, uint32_t corr)
{
	struct ext_pair key = {.corr = corr};
	return n ? bsearch(&key, v, n, sizeof(*v), cmp_ext_corr) : NULL;
}

struct start_idx {
	uint64_t t0;
	uint32_t idx;
};

static int cmp_start(const void *a, const void *b)
{
	const struct start_idx *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static struct fl_tbuf *host_buffer(int pid, int tid)
{
	for (struct fl_tbuf *b = fl_tracer_threads(); b; b = b->next)
		if (b->device < 0 && b->pid == pid && b->tid == tid)
			return b;
	return NULL;
}

/* Where an inserted host event goes in b (before ev[pos]) and its nesting depth
 * below the events already there. */
static void place(const struct fl_tbuf *b, struct host_ins *h, uint16_t *base_depth)
{
	const struct fl_event *ev = b->ev;
	uint32_t n = b->n;
	if (h->anchor != FL_SLOT_NONE && h->anchor < n) {
		/* under the op named by the external id: among its children, by time */
		uint32_t s = h->anchor, end = s + 1;
		while (end < n && ev[end].depth > ev[s].depth)
			end++;
		uint32_t pos = s + 1;
		while (pos < end && ev[pos].t0 <= h->t0)
			pos++;
		h->pos = pos;
		*base_depth = (uint16_t)(ev[s].depth + 1);
		return;
	}
	uint32_t lo = 0, hi = n; /* first event that began after it */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (ev[mid].t0 <= h->t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	h->pos = lo;
	*base_depth = 0;
	uint32_t stop = lo > 4096 ? lo - 4096 : 0;
	for (uint32_t j = lo; j > stop; j--) { /* the innermost span around it */
		const struct fl_event *e = &ev[j - 1];
		if (e->t0 <= h->t0 && (e->t1 == 0 || e->t1 >= h->t1)) {
			*base_depth = (uint16_t)(e->depth + 1);
			break;
		}
	}
}

/* Merge the host events hs[0..k) (one thread, sorted by pos) into b. Each
 * sits one level below the op (or span) it belongs to — a driver call made
 * inside a runtime call too — so the writer gives it, and the device work it
 * launched, that op's External id. */
static int merge_host(struct fl_tbuf *b, const struct host_ins *hs, size_t k)
{
	uint32_t n = b->n;
	size_t need = (size_t)n + k;
	if (need > UINT32_MAX)
		return 0;
	struct fl_event *nv = malloc((need > b->cap ? need : b->cap) * sizeof(*nv));
	if (!nv)
		return 0;
	size_t out = 0;
	uint32_t src = 0;
	for (size_t i = 0; i < k; i++) {
		while (src < hs[i].pos)
			nv[out++] = b->ev[src++];
		struct fl_event *e = &nv[out++];
		e->t0 = hs[i].t0;
		e->t1 = hs[i].t1 >= hs[i].t0 ? hs[i].t1 : hs[i].t0;
		e->name = hs[i].name;
		e->kind = hs[i].kind;
		e->depth = hs[i].depth;
		e->corr = hs[i].corr;
		e->stream = -1;
		e->value = hs[i].value;
	}
	while (src < n)
		nv[out++] = b->ev[src++];
	free(b->ev);
	b->ev = nv;
	b->n = (uint32_t)out;
	if (need > b->cap)
		b->cap = (uint32_t)need;
	return 1;
}

static struct fl_tbuf *device_buffer(struct fl_tbuf **bufs, size_t nbufs, int pid, uint32_t device, uint32_t cap)
{
	size_t slot = device < nbufs ? device : nbufs - 1;
	if (!bufs[slot]) {
		char label[32];
		snprintf(label, sizeof(label), "GPU %u", device);
		bufs[slot] = fl_tracer_buffer_new(label, pid, 0, (int)device, cap);
	}
	return bufs[slot];
}

enum fl_status fl_cupti_convert(const struct fl_cupti_input *in, struct fl_cupti_summary *out)
{
	enum fl_status st = FL_OK;
	struct maps mp;
	struct names *nm = calloc(1, sizeof(*nm));
	VEC(struct host_ins) ins = {0};
	struct fl_tbuf *dev_bufs[16] = {0};
	memset(&mp, 0, sizeof(mp));
	memset(out, 0, sizeof(*out));
	if (!nm)
		return fl_error(FL_ERUNTIME, "cupti: out of memory converting the capture");

	/* pass 1: every record of every buffer into maps */
	for (size_t i = 0; i < in->n_buffers; i++)
		if (!read_buffer(&mp, nm, in, i)) {
			st = fl_error(FL_ERUNTIME, "cupti: out of memory reading the capture");
			goto out;
		}
	if (mp.api.n)
		qsort(mp.api.v, mp.api.n, sizeof(*mp.api.v), cmp_api_corr);
	if (mp.ext.n)
		qsort(mp.ext.v, mp.ext.n, sizeof(*mp.ext.v), cmp_ext_corr);

	/* pass 2: what belongs to the window */
	for (size_t i = 0; i < mp.api.n; i++) {
		struct api_rec *a = &mp.api.v[i];
		a->keep = a->t0 >= in->t0 && a->t0 <= in->t1;
		const struct ext_pair *x = ext_by_corr(mp.ext.v, mp.ext.n, a->corr);
		if (x) {
			a->ext = x->ext;
			a->has_ext = 1;
		}
	}
	for (size_t i = 0; i < mp.dev.n; i++) {
		struct dev_rec *d = &mp.dev.v[i];
		struct api_rec *a = api_by_corr(mp.api.v, mp.api.n, d->corr);
		d->drop = a ? !a->keep : !(d->t0 >= in->t0 && d->t0 <= in->t1);
		if (d->kind == FL_EV_CUDA_SYNC)
			d->device = d->args.context < 64 && mp.ctx_device[d->args.context]
					    ? mp.ctx_device[d->args.context] - 1
					    : (uint32_t)in->default_device;
	}

	/* fold clock-stretch pairs into the kernel they bracket */
	if (in->fold_begin && in->fold_end) {
		uint32_t nb = fl_tracer_intern(in->fold_begin), ne = fl_tracer_intern(in->fold_end);
		if (mp.dev.n)
			qsort(mp.dev.v, mp.dev.n, sizeof(*mp.dev.v), cmp_dev_stream_t0);
		for (size_t i = 0; i < mp.dev.n; i++) {
			struct dev_rec *d = &mp.dev.v[i];
			if (d->kind != FL_EV_KERNEL || (d->name != nb && d->name != ne))
				continue;
			if (d->name == ne) {
				for (size_t j = i; j > 0; j--) {
					struct dev_rec *p = &mp.dev.v[j - 1];
					if (p->device != d->device || p->stream_signed != d->stream_signed)
						break;
					if (p->kind == FL_EV_KERNEL && p->name != nb && p->name != ne) {
						if (d->t1 > p->t1)
							p->t1 = d->t1;
						break;
					}
				}
				if (!d->drop)
					out->folded++;
			}
			d->drop = 1;
			struct api_rec *a = api_by_corr(mp.api.v, mp.api.n, d->corr);
			if (a)
				a->keep = 0;
		}
	}

	/* dense correlation ids, in the order the calls began */
	{
		size_t nk = 0;
		for (size_t i = 0; i < mp.api.n; i++)
			nk += mp.api.v[i].keep;
		struct start_idx *order = malloc((nk ? nk : 1) * sizeof(*order));
		if (!order) {
			st = fl_error(FL_ERUNTIME, "cupti: out of memory converting the capture");
			goto out;
		}
		size_t k = 0;
		for (size_t i = 0; i < mp.api.n; i++)
			if (mp.api.v[i].keep)
				order[k++] = (struct start_idx){mp.api.v[i].t0, (uint32_t)i};
		if (k)
			qsort(order, k, sizeof(*order), cmp_start);
		for (size_t i = 0; i < k; i++)
			mp.api.v[order[i].idx].dense = (uint32_t)(i + 1);
		free(order);
	}

	/* device work: one buffer per device, by start time */
	if (mp.dev.n)
		qsort(mp.dev.v, mp.dev.n, sizeof(*mp.dev.v), cmp_dev_t0);
	{
		size_t per_dev[16] = {0};
		for (size_t i = 0; i < mp.dev.n; i++)
			if (!mp.dev.v[i].drop)
				per_dev[mp.dev.v[i].device < 16 ? mp.dev.v[i].device : 15]++;
		for (size_t i = 0; i < mp.dev.n; i++) {
			struct dev_rec *d = &mp.dev.v[i];
			if (d->drop)
				continue;
			size_t slot = d->device < 16 ? d->device : 15;
			struct fl_tbuf *b = device_buffer(dev_bufs, 16, in->pid, d->device, (uint32_t)per_dev[slot]);
			if (!b || b->n >= b->cap) {
				st = fl_error(FL_ERUNTIME, "cupti: out of memory converting the capture");
				goto out;
			}
			/* device work whose launch is not in the trace gets correlation 0,
			 * "no launch": no flow arrow ends on it (none could start) */
			struct api_rec *a = api_by_corr(mp.api.v, mp.api.n, d->corr);
			uint32_t corr = a && a->keep ? a->dense : 0;
			if (!(a && a->keep))
				out->unlaunched++;
			struct fl_event *e = &b->ev[b->n++];
			e->t0 = d->t0;
			e->t1 = d->t1 >= d->t0 ? d->t1 : d->t0;
			e->name = d->name;
			e->kind = d->kind;
			e->depth = 0;
			e->corr = corr;
			e->stream = d->stream_signed;
			e->value = fl_tracer_add_args(b, &d->args);
			switch (d->kind) {
			case FL_EV_KERNEL:
				out->kernels++;
				if (d->is_compute)
					out->kernel_ms += (double)(e->t1 - e->t0) / 1e6;
				break;
			case FL_EV_GPU_MEMCPY: out->copies++; break;
			case FL_EV_GPU_MEMSET: out->memsets++; break;
			default: out->syncs++; break;
			}
		}
	}

	/* host events: API calls (under their op) and overheads, into their threads' buffers */
	for (size_t i = 0; i < mp.api.n; i++) {
		const struct api_rec *a = &mp.api.v[i];
		if (!a->keep)
			continue;
		struct host_ins h = {.t0 = a->t0, .t1 = a->t1, .tid = a->tid, .corr = a->dense, .anchor = FL_SLOT_NONE,
				     .kind = a->driver ? FL_EV_CUDA_DRIVER : FL_EV_CUDA_RUNTIME,
				     .name = a->internal ? fl_tracer_intern(FL_CUPTI_INTERNAL_LAUNCH_NAME)
							 : api_name(nm, a->driver, a->cbid),
				     .value = a->cbid};
		if (a->has_ext) {
			h.tid = (uint32_t)(a->ext >> 32);
			h.anchor = (uint32_t)a->ext;
		}
		if (!VEC_PUSH(ins, h)) {
			st = fl_error(FL_ERUNTIME, "cupti: out of memory converting the capture");
			goto out;
		}
		out->api_calls++;
	}
	for (size_t i = 0; i < mp.ovh.n; i++) {
		if (mp.ovh.v[i].t0 < in->t0 || mp.ovh.v[i].t0 > in->t1)
			continue;
		if (!VEC_PUSH(ins, mp.ovh.v[i])) {
			st = fl_error(FL_ERUNTIME, "cupti: out of memory converting the capture");
			goto out;
		}
		out->overheads++;
	}
	/* place each against its thread's buffer as it is now, then merge per thread */
	for (size_t i = 0; i < ins.n; i++) {
		struct host_ins *h = &ins.v[i];
		struct fl_tbuf *b = host_buffer(in->pid, (int)h->tid);
		if (!b) {
			char label[48];
			snprintf(label, sizeof(label), "cuda thread %u", h->tid);
			b = fl_tracer_buffer_new(label, in->pid, (int)h->tid, -1, 1);
			if (!b) {
				st = fl_error(FL_ERUNTIME, "cupti: out of memory converting the capture");
				goto out;
			}
		}
		if (h->anchor != FL_SLOT_NONE && h->anchor < b->n)
			out->linked_calls++;
		place(b, h, &h->depth);
		if (h->kind != FL_EV_OVERHEAD) {
			struct fl_event_args args = {.cbid = (uint32_t)h->value};
			h->value = fl_tracer_add_args(b, &args);
		} else {
			h->value = 0;
		}
	}
	if (ins.n)
		qsort(ins.v, ins.n, sizeof(*ins.v), cmp_ins);
	for (size_t i = 0; i < ins.n;) {
		size_t j = i;
		while (j < ins.n && ins.v[j].tid == ins.v[i].tid)
			j++;
		if (!merge_host(host_buffer(in->pid, (int)ins.v[i].tid), ins.v + i, j - i)) {
			st = fl_error(FL_ERUNTIME, "cupti: out of memory converting the capture");
			goto out;
		}
		i = j;
	}

	/* records CUPTI could not store, and buffers that could not be read to
	 * their end (each counted as one record lost: at least that many were):
	 * reported in the trace and the truth */
	out->read_errors = mp.read_errors;
	out->dropped = in->dropped + mp.read_errors;
	if (out->dropped) {
		struct fl_tbuf *b = NULL;
		for (size_t i = 0; i < 16 && !b; i++)
			b = dev_bufs[i];
		if (!b)
			b = fl_tracer_threads();
		if (b)
			b->dropped += out->dropped;
	}
out:
	free(mp.api.v);
	free(mp.dev.v);
	free(mp.ovh.v);
	free(mp.ext.v);
	free(ins.v);
	free(nm);
	return st;
}
