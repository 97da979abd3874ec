#include "grader/trace/trace_reader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"

enum fl_cat fl_cat_of(const char *cat)
{
	static const struct { const char *s; enum fl_cat c; } map[] = {
		{"cpu_op", FL_CAT_CPU_OP}, {"user_annotation", FL_CAT_USER_ANNOTATION},
		{"cuda_runtime", FL_CAT_CUDA_RUNTIME}, {"cuda_driver", FL_CAT_CUDA_RUNTIME}, {"kernel", FL_CAT_KERNEL},
		{"gpu_memcpy", FL_CAT_GPU_MEMCPY}, {"gpu_memset", FL_CAT_GPU_MEMSET},
		{"gpu_user_annotation", FL_CAT_GPU_USER_ANNOTATION}, {"cuda_sync", FL_CAT_CUDA_SYNC},
		{"Trace", FL_CAT_TRACE},
	};
	if (!cat)
		return FL_CAT_OTHER;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(cat, map[i].s) == 0)
			return map[i].c;
	return FL_CAT_OTHER;
}

static long long id_of(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return (long long)v->valuedouble;
	if (cJSON_IsString(v)) {
		unsigned long long h = 1469598103934665603ull;
		for (const char *p = v->valuestring; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		return -(long long)(h >> 2) - 1;
	}
	return 0;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct fl_xevent *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1;
	return 0;
}

enum fl_status fl_trace_read(const char *path, struct fl_trace *t)
{
	memset(t, 0, sizeof(*t));
	enum fl_status st = fl_json_load(path, &t->doc);
	if (st)
		return st;
	t->path = strdup(path);
	const cJSON *events = t->doc;
	if (cJSON_IsObject(t->doc)) {
		events = cJSON_GetObjectItemCaseSensitive(t->doc, "traceEvents");
		const cJSON *di = cJSON_GetObjectItemCaseSensitive(t->doc, "distributedInfo");
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(di, "rank");
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(di, "world_size");
		if (cJSON_IsNumber(r)) {
			t->has_rank = 1;
			t->rank = (int)r->valuedouble;
		}
		t->world_size = cJSON_IsNumber(w) ? (int)w->valuedouble : 1;
	}
	if (!cJSON_IsArray(events)) {
		fl_trace_release(t);
		return fl_error(FL_EINPUT, "'%s': traceEvents: expected an array of events", path);
	}
	size_t cap = (size_t)cJSON_GetArraySize(events);
	t->ev = calloc(cap ? cap : 1, sizeof(*t->ev));
	if (!t->ev) {
		fl_trace_release(t);
		return fl_error(FL_ERUNTIME, "'%s': out of memory", path);
	}
	size_t idx = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, events) {
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		if (!cJSON_IsObject(e)) {
			fl_trace_release(t);
			return fl_error(FL_EINPUT, "'%s': traceEvents[%zu]: expected an object", path, idx);
		}
		idx++;
		if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0)
			continue;
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
		const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
		const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
		const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
		if (!cJSON_IsNumber(ts)) {
			fl_trace_release(t);
			return fl_error(FL_EINPUT, "'%s': traceEvents[%zu].ts: expected a number", path, idx - 1);
		}
		struct fl_xevent *x = &t->ev[t->n++];
		x->name = cJSON_IsString(name) ? name->valuestring : "";
		x->cat = cJSON_IsString(cat) ? cat->valuestring : "";
		x->kind = fl_cat_of(x->cat);
		x->ts = ts->valuedouble;
		x->dur = cJSON_IsNumber(dur) ? dur->valuedouble : 0.0;
		x->pid = id_of(cJSON_GetObjectItemCaseSensitive(e, "pid"));
		x->tid = id_of(cJSON_GetObjectItemCaseSensitive(e, "tid"));
	}
	qsort(t->ev, t->n, sizeof(*t->ev), cmp_ev);
	return FL_OK;
}

void fl_trace_release(struct fl_trace *t)
{
	cJSON_Delete(t->doc);
	free(t->ev);
	free(t->path);
	memset(t, 0, sizeof(*t));
}
