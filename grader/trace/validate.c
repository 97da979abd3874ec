#include "grader/trace/validate.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "common/outfile.h"
#include "grader/trace/trace_reader.h"

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

static void check_top(struct check *c, const char *text, const cJSON *doc)
{
	if (!cJSON_IsObject(doc)) {
		problem(c, "top level: expected an object with traceEvents (Kineto layout), got %s",
			fl_json_type_name(doc));
		return;
	}
	static const char *const before[] = {"schemaVersion", "deviceProperties", "distributedInfo",
					     "displayTimeUnit", "baseTimeNanoseconds"};
	int seen_events = 0;
	for (const cJSON *it = doc->child; it; it = it->next) {
		if (strcmp(it->string, "traceEvents") == 0) {
			seen_events = 1;
			continue;
		}
		for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++)
			if (seen_events && strcmp(it->string, before[i]) == 0)
				problem(c, "top level: '%s' comes after traceEvents; expected metadata before it", before[i]);
	}
	if (!seen_events)
		problem(c, "top level: missing traceEvents");
	for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++)
		if (!cJSON_GetObjectItemCaseSensitive(doc, before[i]))
			problem(c, "top level: missing '%s'", before[i]);
	const cJSON *sv = cJSON_GetObjectItemCaseSensitive(doc, "schemaVersion");
	if (sv && !cJSON_IsNumber(sv))
		problem(c, "schemaVersion: expected a number");
	const cJSON *di = cJSON_GetObjectItemCaseSensitive(doc, "distributedInfo");
	if (di) {
		if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(di, "rank")))
			problem(c, "distributedInfo.rank: expected a number");
		const char *ev = strstr(text, "\"traceEvents\"");
		const char *rk = strstr(text, "\"rank\": ");
		if (!rk || (ev && rk > ev))
			problem(c, "distributedInfo: expected the rank written as \"rank\": N (with a space; HTA reads it with a regex)");
	}
}

static void check_events(struct check *c, const cJSON *events)
{
	size_t i = 0, steps = 0, names = 0;
	int window_end_last = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, events) {
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
		window_end_last = 0;
		if (!cJSON_IsString(ph)) {
			problem(c, "traceEvents[%zu].ph: expected a string", i);
		} else if (strcmp(ph->valuestring, "X") == 0) {
			static const char *const req[] = {"name", "cat", "ts", "dur", "pid", "tid"};
			for (size_t k = 0; k < 6; k++)
				if (!cJSON_GetObjectItemCaseSensitive(e, req[k]))
					problem(c, "traceEvents[%zu].%s: missing on an X event", i, req[k]);
			const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
			if (cJSON_IsNumber(dur) && dur->valuedouble < 0)
				problem(c, "traceEvents[%zu].dur: negative (%g)", i, dur->valuedouble);
			if (cJSON_IsString(name) && strncmp(name->valuestring, "ProfilerStep#", 13) == 0)
				steps++;
		} else if (strcmp(ph->valuestring, "M") == 0) {
			if (cJSON_IsString(name) && strcmp(name->valuestring, "thread_name") == 0)
				names++;
		} else if (strcmp(ph->valuestring, "i") == 0) {
			window_end_last = cJSON_IsString(name) && strcmp(name->valuestring, "Record Window End") == 0;
		}
		i++;
	}
	if (steps == 0)
		problem(c, "traceEvents: no ProfilerStep#N span; expected one per recorded step");
	if (names == 0)
		problem(c, "traceEvents: no thread_name metadata; expected every row named");
	if (!window_end_last)
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
	char *text;
	size_t len;
	enum fl_status st = fl_read_file(path, &text, &len);
	if (st)
		return st;
	struct fl_trace t;
	st = fl_trace_read(path, &t);
	if (st) {
		free(text);
		return st;
	}
	struct check c = {report, 0};
	check_top(&c, text, t.doc);
	const cJSON *events = cJSON_IsObject(t.doc) ? cJSON_GetObjectItemCaseSensitive(t.doc, "traceEvents") : t.doc;
	check_events(&c, events);
	check_nesting(&c, &t);
	if (c.problems > MAX_PROBLEMS)
		strbuf_addf(report, "  ... and %d more problems\n", c.problems - MAX_PROBLEMS);
	fl_trace_release(&t);
	free(text);
	return c.problems ? FL_ECHECK : FL_OK;
}
