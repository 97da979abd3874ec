#include "grader/trace/validate.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/categories.h"
#include "grader/trace/trace_events.h"
#include "grader/trace/trace_stream.h"

#define MAX_PROBLEMS 20

struct check {
	struct strbuf *report;
	int problems;
};

__attribute__((format(printf, 2, 3))) static void problem(struct check *c, const char *fmt, ...);

static void problem(struct check *c, const char *fmt, ...)
{
	c->problems++;
	if (c->problems > MAX_PROBLEMS)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	strbuf_addf(c->report, "  %s\n", msg);
}

/* Problems of the events, kept until the top level (read last: metadata may
 * follow traceEvents) has been reported before them. */
struct event_check {
	struct fl_trace *t;
	char *msg[MAX_PROBLEMS];
	int n_msg, n;
	size_t steps, names;
	int window_end_last;
};

__attribute__((format(printf, 2, 3))) static void event_problem(struct event_check *c, const char *fmt, ...);

static void event_problem(struct event_check *c, const char *fmt, ...)
{
	c->n++;
	if (c->n_msg == MAX_PROBLEMS)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->msg[c->n_msg++] = fl_xstrdup(msg);
}

static int ph_is(const struct fl_strtab *st, const struct fl_tev *e, const char *ph)
{
	return (e->has & FL_TEV_PH) && strcmp(fl_strtab_str(st, e->ph_str), ph) == 0;
}

static int name_is(const struct fl_strtab *st, const struct fl_tev *e, const char *name, size_t prefix)
{
	if (!(e->has & FL_TEV_NAME))
		return 0;
	const char *s = fl_strtab_str(st, e->name);
	return prefix ? strncmp(s, name, prefix) == 0 : strcmp(s, name) == 0;
}

/* A time value's problem, or NULL. */
static const char *time_problem(double us, double max_us, char *buf, size_t n)
{
	if (!isfinite(us))
		snprintf(buf, n, "not a finite number (%g)", us);
	else if (us < 0)
		snprintf(buf, n, "negative (%g)", us);
	else if (us > max_us)
		snprintf(buf, n, "%g is beyond %s", us, max_us == FL_TRACE_MAX_DUR_US ? "2^53 ns" : "2^53 us");
	else
		return NULL;
	return buf;
}

static const struct { const char *key; uint32_t flag; } event_keys[] = {
	{"ph", FL_TEVK_PH}, {"name", FL_TEVK_NAME}, {"cat", FL_TEVK_CAT}, {"ts", FL_TEVK_TS},
	{"dur", FL_TEVK_DUR}, {"pid", FL_TEVK_PID}, {"tid", FL_TEVK_TID}, {"args", FL_TEVK_ARGS},
};

static enum fl_status on_event(void *arg, const struct fl_tev *e)
{
	struct event_check *c = arg;
	const struct fl_strtab *st = c->t->strings;
	unsigned long long i = (unsigned long long)e->index, at = (unsigned long long)e->at;
	char why[96];
	int skip = 0; /* not for the collector: it would refuse the whole file */
	c->window_end_last = 0;
	for (size_t k = 0; k < sizeof(event_keys) / sizeof(event_keys[0]); k++)
		if (e->dup_keys & event_keys[k].flag)
			event_problem(c, "traceEvents[%llu].%s at byte %llu: given twice (a reader keeps one of them)", i,
				      event_keys[k].key, at);
	if (e->bad & FL_TEVB_UTF8)
		event_problem(c, "traceEvents[%llu] at byte %llu: name or cat is not valid UTF-8", i, at);
	if (e->bad & FL_TEVB_ID_RANGE)
		event_problem(c, "traceEvents[%llu] at byte %llu: pid or tid is a number no integer holds (NaN, Infinity "
			      "or beyond 9.2e18)", i, at);
	if (e->bad & FL_TEVB_CONTROL)
		event_problem(c, "traceEvents[%llu] at byte %llu: name or cat holds control characters", i, at);
	if (!(e->has & FL_TEV_PH)) {
		event_problem(c, "traceEvents[%llu].ph at byte %llu: expected a string", i, at);
	} else if (ph_is(st, e, "X")) {
		for (size_t k = 1; k < 7; k++)
			if (!(e->keys & event_keys[k].flag))
				event_problem(c, "traceEvents[%llu].%s at byte %llu: missing on an X event", i,
					      event_keys[k].key, at);
		if ((e->keys & FL_TEVK_TS) && !(e->has & FL_TEV_TS))
			event_problem(c, "traceEvents[%llu].ts at byte %llu: expected a number", i, at);
		if (!(e->has & FL_TEV_TS))
			skip = 1;
		else if (time_problem(e->ts, FL_TRACE_MAX_TS_US, why, sizeof(why)))
			event_problem(c, "traceEvents[%llu].ts at byte %llu: %s", i, at, why);
		if ((e->has & FL_TEV_DUR) && time_problem(e->dur, FL_TRACE_MAX_DUR_US, why, sizeof(why)))
			event_problem(c, "traceEvents[%llu].dur at byte %llu: %s", i, at, why);
		if (name_is(st, e, FL_STEP_PREFIX, FL_STEP_PREFIX_LEN))
			c->steps++;
	} else if (ph_is(st, e, "M")) {
		if (name_is(st, e, "thread_name", 0))
			c->names++;
	} else if (ph_is(st, e, "i")) {
		c->window_end_last = name_is(st, e, "Record Window End", 0);
	}
	return skip ? FL_OK : fl_trace_on_event(c->t, e);
}

static void check_top(struct check *c, const struct fl_trace_info *info)
{
	if (info->array_form) {
		problem(c, "top level: expected an object with traceEvents (Kineto layout), got an array");
		return;
	}
	static const struct { const char *key; uint32_t flag; } before[] = {
		{"schemaVersion", FL_META_SCHEMA_VERSION}, {"deviceProperties", FL_META_DEVICE_PROPERTIES},
		{"distributedInfo", FL_META_DISTRIBUTED_INFO}, {"displayTimeUnit", FL_META_DISPLAY_TIME_UNIT},
		{"baseTimeNanoseconds", FL_META_BASE_TIME},
	};
	enum { N_BEFORE = sizeof(before) / sizeof(before[0]) };
	for (int k = 0; k < info->n_meta_after; k++)
		for (size_t i = 0; i < N_BEFORE; i++)
			if (info->meta_after_order[k] == before[i].flag)
				problem(c, "top level: '%s' comes after traceEvents; expected metadata before it", before[i].key);
	for (size_t i = 0; i < N_BEFORE; i++)
		if (info->meta_dup & before[i].flag)
			problem(c, "top level: '%s' given twice (a reader keeps one of them)", before[i].key);
	if (!info->has_events)
		problem(c, "top level: missing traceEvents");
	for (size_t i = 0; i < N_BEFORE; i++)
		if (!(info->meta_seen & before[i].flag))
			problem(c, "top level: missing '%s'", before[i].key);
	if ((info->meta_seen & FL_META_SCHEMA_VERSION) && !info->schema_version_number)
		problem(c, "schemaVersion: expected a number");
	if (info->meta_seen & FL_META_DISTRIBUTED_INFO) {
		if (!info->has_dist_rank)
			problem(c, "distributedInfo.rank: expected a number");
		if (info->rank_text_at < 0 || (info->events_at >= 0 && info->rank_text_at > info->events_at))
			problem(c, "distributedInfo: expected the rank written as \"rank\": N (with a space; HTA reads it with a regex)");
	}
}

static void check_events(struct check *c, const struct event_check *e)
{
	for (int i = 0; i < e->n_msg; i++)
		problem(c, "%s", e->msg[i]);
	c->problems += e->n - e->n_msg;
	if (e->steps == 0)
		problem(c, "traceEvents: no ProfilerStep#N span; expected one per recorded step");
	if (e->names == 0)
		problem(c, "traceEvents: no thread_name metadata; expected every row named");
	if (!e->window_end_last)
		problem(c, "traceEvents: expected a 'Record Window End' instant as the last event");
}

/* Whole nanoseconds of a µs value with three decimals, as every reader
 * should see it: comparing `ts + dur` in floating point makes an event that
 * starts exactly where its sibling ends look like an overlap. */
static int64_t ns_of(double us)
{
	return (int64_t)llround(us * 1000.0);
}

/* Within one row, intervals must nest: a child ends before its parent ends
 * (1 ns of slack for a foreign writer's rounding). Perfetto's importer drops
 * a partially overlapping slice. */
static void check_nesting(struct check *c, const struct fl_trace *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct fl_xevent *p = &t->ev[i];
		if (p->kind != FL_CAT_CPU_OP && p->kind != FL_CAT_USER_ANNOTATION)
			continue;
		int64_t end = ns_of(p->ts) + ns_of(p->dur);
		for (size_t j = i + 1; j < t->n && ns_of(t->ev[j].ts) < end; j++) {
			const struct fl_xevent *q = &t->ev[j];
			if (q->pid != p->pid || q->tid != p->tid ||
			    (q->kind != FL_CAT_CPU_OP && q->kind != FL_CAT_USER_ANNOTATION))
				continue;
			if (ns_of(q->ts) + ns_of(q->dur) > end + 1) {
				problem(c, "'%s' at ts %.3f overlaps '%s' at ts %.3f without nesting in it",
					q->name, q->ts, p->name, p->ts);
				break;
			}
		}
	}
}

enum fl_status fl_trace_validate(const char *path, struct strbuf *report)
{
	struct fl_trace t;
	struct event_check ec = {.t = &t};
	fl_trace_begin(&t, path, NULL);
	struct fl_trace_stream_opts so = {.strings = t.strings, .on_event = on_event, .arg = &ec};
	struct fl_trace_info info;
	enum fl_status st = fl_trace_stream_file(path, &so, &info);
	struct check c = {report, 0};
	if (!st) {
		/* reported as problems, then left out so that the collector accepts the rest */
		struct fl_trace_info ti = info;
		if (info.has_dist_rank && (info.dist_rank < 0 || info.dist_rank > INT_MAX)) {
			problem(&c, "distributedInfo.rank: %lld is out of range (expected 0..%d)", info.dist_rank, INT_MAX);
			ti.has_dist_rank = 0;
		}
		if (info.has_world_size && (info.world_size < 1 || info.world_size > INT_MAX)) {
			problem(&c, "distributedInfo.world_size: %lld is out of range (expected 1..%d)", info.world_size,
				INT_MAX);
			ti.has_world_size = 0;
		}
		st = fl_trace_end(&t, &ti);
	}
	if (!st) {
		check_top(&c, &info);
		check_events(&c, &ec);
		check_nesting(&c, &t);
		if (c.problems > MAX_PROBLEMS)
			strbuf_addf(report, "  ... and %d more problems\n", c.problems - MAX_PROBLEMS);
		st = c.problems ? FL_ECHECK : FL_OK;
	}
	for (int i = 0; i < ec.n_msg; i++)
		free(ec.msg[i]);
	fl_trace_release(&t);
	return st;
}
