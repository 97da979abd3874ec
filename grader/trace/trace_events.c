#include "grader/trace/trace_events.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/categories.h"

enum fl_cat fl_cat_of(const char *cat)
{
	static const struct { const char *s; enum fl_cat c; } map[] = {
		{FL_CATEGORY_CPU_OP, FL_CAT_CPU_OP},
		{FL_CATEGORY_USER_ANNOTATION, FL_CAT_USER_ANNOTATION},
		{FL_CATEGORY_CUDA_RUNTIME, FL_CAT_CUDA_RUNTIME},
		{FL_CATEGORY_CUDA_DRIVER, FL_CAT_CUDA_RUNTIME},
		{FL_CATEGORY_KERNEL, FL_CAT_KERNEL},
		{FL_CATEGORY_GPU_MEMCPY, FL_CAT_GPU_MEMCPY},
		{FL_CATEGORY_GPU_MEMSET, FL_CAT_GPU_MEMSET},
		{FL_CATEGORY_GPU_USER_ANNOTATION, FL_CAT_GPU_USER_ANNOTATION},
		{FL_CATEGORY_CUDA_SYNC, FL_CAT_CUDA_SYNC},
		{FL_CATEGORY_TRACE, FL_CAT_TRACE},
	};
	if (!cat)
		return FL_CAT_OTHER;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(cat, map[i].s) == 0)
			return map[i].c;
	return FL_CAT_OTHER;
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort(); /* as strbuf: out of memory is not recoverable here */
	return q;
}

/* A string pid/tid as a negative number (FNV-1a), so rows compare as ids. */
static long long string_id(const char *s)
{
	unsigned long long h = 1469598103934665603ull;
	for (const char *p = s; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return -(long long)(h >> 2) - 1;
}

static long long id_of(const struct fl_trace *t, const struct fl_tev *e, int64_t v, uint32_t fnum, uint32_t fstr)
{
	if (e->has & fstr)
		return string_id(fl_strtab_str(t->strings, (uint32_t)v));
	return e->has & fnum ? (long long)v : 0;
}

static enum fl_cat kind_of(struct fl_trace *t, uint32_t cat)
{
	if (cat >= t->n_cat_kind) {
		size_t n = (size_t)fl_strtab_count(t->strings) + 64;
		t->cat_kind = xrealloc(t->cat_kind, n);
		memset(t->cat_kind + t->n_cat_kind, 0, n - t->n_cat_kind);
		t->n_cat_kind = n;
	}
	if (!t->cat_kind[cat])
		t->cat_kind[cat] = (uint8_t)(fl_cat_of(fl_strtab_str(t->strings, cat)) + 1);
	return (enum fl_cat)(t->cat_kind[cat] - 1);
}

void fl_trace_begin(struct fl_trace *t, const char *path, struct fl_strtab *strings)
{
	memset(t, 0, sizeof(*t));
	t->path = strdup(path);
	if (!t->path)
		abort();
	t->own_strings = !strings;
	t->strings = strings ? strings : fl_strtab_new();
}

int fl_trace_time_ok(double us, double max_us) { return isfinite(us) && us >= 0 && us <= max_us; }

static void count_bad(struct fl_trace *t, int kind, const struct fl_tev *e)
{
	if (!t->bad[kind].n++)
		t->bad[kind].first_at = e->at;
}

int fl_trace_note_bad(struct fl_trace *t, const struct fl_tev *e)
{
	if (e->bad & FL_TEVB_UTF8)
		count_bad(t, FL_BAD_UTF8, e);
	if (e->bad & FL_TEVB_CONTROL)
		count_bad(t, FL_BAD_CONTROL, e);
	if (e->bad & FL_TEVB_DUP_KEY)
		count_bad(t, FL_BAD_DUP_KEY, e);
	if (e->bad & FL_TEVB_ID_RANGE)
		count_bad(t, FL_BAD_ID_RANGE, e);
	if (!(e->has & FL_TEV_PH) || e->ph != 'X' || fl_strtab_len(t->strings, e->ph_str) != 1)
		return 0;
	if ((e->has & FL_TEV_TS) && !fl_trace_time_ok(e->ts, FL_TRACE_MAX_TS_US)) {
		count_bad(t, FL_BAD_TS, e);
		return 1;
	}
	if ((e->has & FL_TEV_DUR) && !fl_trace_time_ok(e->dur, FL_TRACE_MAX_DUR_US)) {
		count_bad(t, FL_BAD_DUR, e);
		return 1;
	}
	return 0;
}

int fl_trace_warn(const struct fl_trace *t, void *file)
{
	static const char *what[FL_BAD_KINDS] = {
		[FL_BAD_TS] = "X event(s) with a ts that is not finite, negative or beyond 2^53 us: skipped",
		[FL_BAD_DUR] = "X event(s) with a dur that is not finite, negative or beyond 2^53 ns: skipped",
		[FL_BAD_UTF8] = "event(s) whose name or cat is not valid UTF-8: read with U+FFFD for the bad bytes",
		[FL_BAD_CONTROL] = "event(s) whose name or cat holds control characters: printed escaped",
		[FL_BAD_DUP_KEY] = "event(s) with a key given twice: the last value counts",
		[FL_BAD_ID_RANGE] = "event(s) whose pid or tid is a number no integer holds: read as absent",
	};
	FILE *f = file;
	int lines = 0;
	for (int k = 0; k < FL_BAD_KINDS; k++) {
		if (!t->bad[k].n)
			continue;
		fprintf(f, "warning: '%s': %llu %s (the first at byte %llu%s); 'faultline validate' lists them\n",
			t->path, (unsigned long long)t->bad[k].n, what[k], (unsigned long long)t->bad[k].first_at,
			t->info.gzip ? " of the decompressed stream" : "");
		lines++;
	}
	return lines;
}

enum fl_status fl_trace_on_event(void *arg, const struct fl_tev *e)
{
	struct fl_trace *t = arg;
	if (fl_trace_note_bad(t, e))
		return FL_OK;
	if (!(e->has & FL_TEV_PH) || e->ph != 'X' || fl_strtab_len(t->strings, e->ph_str) != 1)
		return FL_OK;
	if (!(e->has & FL_TEV_TS))
		return fl_error(FL_EINPUT, "'%s': traceEvents[%llu].ts: expected a number", t->path,
				(unsigned long long)e->index);
	if (t->n >= UINT32_MAX)
		return fl_error(FL_EINPUT, "'%s': more than 2^32 complete events", t->path);
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 4096;
		t->ev = xrealloc(t->ev, t->cap * sizeof(*t->ev));
	}
	struct fl_xevent *x = &t->ev[t->n];
	x->name = fl_strtab_str(t->strings, e->has & FL_TEV_NAME ? e->name : 0);
	x->kind = e->has & FL_TEV_CAT ? kind_of(t, e->cat) : FL_CAT_OTHER;
	x->ts = e->ts;
	x->dur = e->has & FL_TEV_DUR ? e->dur : 0.0;
	x->pid = id_of(t, e, e->pid, FL_TEV_PID, FL_TEV_PID_STR);
	x->tid = id_of(t, e, e->tid, FL_TEV_TID, FL_TEV_TID_STR);
	x->pos = (uint32_t)t->n++;
	return FL_OK;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct fl_xevent *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

enum fl_status fl_trace_end(struct fl_trace *t, const struct fl_trace_info *info)
{
	t->info = *info;
	if (!info->has_events)
		return fl_error(FL_EINPUT, "'%s': traceEvents: expected an array of events", t->path);
	/* checked before narrowing: a hostile file may say anything */
	if (info->has_dist_rank && (info->dist_rank < 0 || info->dist_rank > INT_MAX))
		return fl_error(FL_EINPUT, "'%s': distributedInfo.rank: %lld is out of range (expected 0..%d)", t->path,
				info->dist_rank, INT_MAX);
	if (info->has_world_size && (info->world_size < 1 || info->world_size > INT_MAX))
		return fl_error(FL_EINPUT, "'%s': distributedInfo.world_size: %lld is out of range (expected 1..%d)",
				t->path, info->world_size, INT_MAX);
	t->has_rank = info->has_dist_rank;
	t->rank = (int)info->dist_rank;
	t->world_size = info->array_form ? 0 : info->has_world_size ? (int)info->world_size : 1;
	if (t->n > 1)
		qsort(t->ev, t->n, sizeof(*t->ev), cmp_ev);
	free(t->cat_kind);
	t->cat_kind = NULL;
	t->n_cat_kind = 0;
	return FL_OK;
}

static enum fl_status read_trace(const char *path, int sha256, struct fl_trace *t)
{
	fl_trace_begin(t, path, NULL);
	struct fl_trace_stream_opts so = {.strings = t->strings, .on_event = fl_trace_on_event, .arg = t,
					  .sha256 = sha256};
	struct fl_trace_info info;
	enum fl_status st = fl_trace_stream_file(path, &so, &info);
	if (!st)
		st = fl_trace_end(t, &info);
	if (st)
		fl_trace_release(t);
	return st;
}

enum fl_status fl_trace_read(const char *path, struct fl_trace *t) { return read_trace(path, 0, t); }

enum fl_status fl_trace_read_hashed(const char *path, struct fl_trace *t) { return read_trace(path, 1, t); }

void fl_trace_release(struct fl_trace *t)
{
	if (t->own_strings)
		fl_strtab_free(t->strings);
	free(t->ev);
	free(t->cat_kind);
	free(t->path);
	memset(t, 0, sizeof(*t));
}
