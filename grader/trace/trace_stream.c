/* trace_stream.c — see trace_stream.h.
 *
 * The tokenizer works on a buffer that always ends in a NUL sentinel followed
 * by padding, so scanning loops need no bounds checks: NUL is invalid
 * everywhere in JSON, so every loop stops at it, and a parser that stops *at*
 * the end of the buffer asks for more input instead of reporting an error.
 * Input is parsed in units (one event, or one top-level key with its value);
 * a unit that runs into the end is parsed again, from its start, once more
 * bytes are in. A unit larger than the buffer grows the buffer.
 *
 * The reader's parts: trace_stream_internal.h, the parser state;
 * trace_lex.h, the JSON lexer (strings, numbers, keys, skipping values);
 * trace_meta.c, the top-level metadata (distributedInfo, deviceProperties);
 * here, the values of an event, the events, the unit loop over the buffer and
 * the entry points. Event parsing and the unit loop stay in one file so that
 * the compiler can keep parse_event inlined into the loop.
 */
#include "grader/trace/trace_stream.h"
#include "grader/trace/trace_stream_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sha256.h"
#include "grader/trace/trace_lex.h"

static inline uint64_t first8(const uint8_t *s, size_t n)
{
	uint64_t w;
	memcpy(&w, s, 8); /* may read past the string: the buffer is padded */
	if (n >= 8)
		return w;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return w & ((1ull << (8 * n)) - 1);
#else
	w = 0;
	memcpy(&w, s, n);
	return w;
#endif
}

/* Control characters that can act on a terminal: C0 (tab and newline
 * excepted: a label may be multi-line), DEL, and C1 (U+0080-U+009F). */
static int has_control(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((s[i] < 0x20 && s[i] != '\t' && s[i] != '\n') || s[i] == 0x7f ||
		    (s[i] == 0xc2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f))
			return 1;
	return 0;
}

/* A string value at *pp (at the opening quote), interned. *bad (may be NULL)
 * gets FL_TEVB_UTF8 when the text was not valid UTF-8 (or held a lone
 * surrogate) and FL_TEVB_CONTROL when it holds control characters. */
static int str_value_bad(struct parser *ps, const uint8_t **pp, uint32_t *id, uint32_t *bad);
static int str_value(struct parser *ps, const uint8_t **pp, uint32_t *id) { return str_value_bad(ps, pp, id, NULL); }

static int str_value_bad(struct parser *ps, const uint8_t **pp, uint32_t *id, uint32_t *bad)
{
	const uint8_t *s = *pp + 1, *p = s;
	int esc = 0, r = scan_str(ps, &p, &esc);
	if (r)
		return r;
	*pp = p + 1;
	size_t n = (size_t)(p - s);
	struct icache *c = NULL;
	uint64_t w = 0;
	if (!esc) {
		w = first8(s, n);
		c = &ps->icache[((w * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)n << 57)) >> 54 & (ICACHE - 1)];
		if (c->s && c->len == n && c->w == w && (n <= 8 || !memcmp(s + 8, c->s + 8, n - 8))) {
			*id = c->id;
			return P_OK;
		}
	}
	const uint8_t *d;
	size_t dn;
	ps->bad_utf8 = 0;
	decode_str(ps, s, p, esc, &d, &dn);
	*id = fl_strtab_intern(ps->st, (const char *)d, dn);
	int ctrl = has_control(d, dn);
	if (bad)
		*bad |= (ps->bad_utf8 ? FL_TEVB_UTF8 : 0) | (ctrl ? FL_TEVB_CONTROL : 0);
	if (c && d == s && !ctrl) { /* the raw bytes are the string */
		c->w = w;
		c->len = (uint32_t)n;
		c->id = *id;
		c->s = fl_strtab_str(ps->st, *id);
	}
	return P_OK;
}

/* Python's int() of a string: optional whitespace, sign, digits (single '_'
 * between digits allowed). */
static int py_int(const uint8_t *s, size_t n, int64_t *out)
{
	size_t i = 0;
	while (i < n && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')))
		i++;
	while (n > i && (s[n - 1] == ' ' || (s[n - 1] >= '\t' && s[n - 1] <= '\r')))
		n--;
	int neg = 0;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (i >= n || !(s[i] >= '0' && s[i] <= '9'))
		return 0;
	int64_t v = 0;
	for (; i < n; i++) {
		if (s[i] == '_' && i + 1 < n && s[i - 1] != '_' && s[i + 1] >= '0' && s[i + 1] <= '9')
			continue;
		if (!(s[i] >= '0' && s[i] <= '9'))
			return 0;
		if (v < INT64_MAX / 10)
			v = v * 10 + (s[i] - '0');
	}
	*out = neg ? -v : v;
	return 1;
}

/* args.stream as HTA reads it: int(value), -1 when that fails. */
static int stream_value(struct parser *ps, const uint8_t **pp, int64_t *out, int *has)
{
	const uint8_t *p = *pp;
	int r;
	if (*p == '"') {
		const uint8_t *s = p + 1, *q = s;
		int esc = 0;
		if ((r = scan_str(ps, &q, &esc)))
			return r;
		*pp = q + 1;
		const uint8_t *d;
		size_t dn;
		decode_str(ps, s, q, esc, &d, &dn);
		*has = py_int(d, dn, out);
		return P_OK;
	}
	if (*p == 't' || *p == 'f') {
		if ((r = skip_value(ps, pp)))
			return r;
		*out = *p == 't';
		*has = 1;
		return P_OK;
	}
	return int_value(ps, pp, out, has);
}

enum { K_OTHER, K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ARGS };

static const uint8_t key_len[] = {0, 2, 3, 4, 3, 3, 2, 3, 4};

/* p: at the opening quote of a key. The usual event keys, recognised by their
 * bytes and the closing quote (reads a few bytes ahead: the buffer is padded,
 * and its NUL sentinel matches no key). 0: anything else. */
static inline int fast_event_key(const uint8_t *p)
{
	if (*p != '"')
		return 0;
	const uint8_t *q = p + 1;
	switch (q[0]) {
	case 'p':
		if (q[1] == 'h' && q[2] == '"') return K_PH;
		if (q[1] == 'i' && q[2] == 'd' && q[3] == '"') return K_PID;
		return 0;
	case 't':
		if (q[1] == 's' && q[2] == '"') return K_TS;
		if (q[1] == 'i' && q[2] == 'd' && q[3] == '"') return K_TID;
		return 0;
	case 'c':
		return q[1] == 'a' && q[2] == 't' && q[3] == '"' ? K_CAT : 0;
	case 'd':
		return q[1] == 'u' && q[2] == 'r' && q[3] == '"' ? K_DUR : 0;
	case 'n':
		return !memcmp(q, "name\"", 5) ? K_NAME : 0;
	case 'a':
		return !memcmp(q, "args\"", 5) ? K_ARGS : 0;
	}
	return 0;
}

static inline int event_key(const uint8_t *k, size_t n)
{
	switch (n) {
	case 2:
		if (k[0] == 'p' && k[1] == 'h') return K_PH;
		if (k[0] == 't' && k[1] == 's') return K_TS;
		return K_OTHER;
	case 3:
		if (!memcmp(k, "cat", 3)) return K_CAT;
		if (!memcmp(k, "pid", 3)) return K_PID;
		if (!memcmp(k, "tid", 3)) return K_TID;
		if (!memcmp(k, "dur", 3)) return K_DUR;
		return K_OTHER;
	case 4:
		if (!memcmp(k, "name", 4)) return K_NAME;
		if (!memcmp(k, "args", 4)) return K_ARGS;
		return K_OTHER;
	}
	return K_OTHER;
}

enum { A_OTHER, A_CORRELATION, A_EXTERNAL_ID, A_STREAM, A_DEVICE, A_BYTES, A_INPUT_DIMS };
static const uint8_t arg_len[] = {0, 11, 11, 6, 6, 5, 10};

static inline int arg_key(const uint8_t *k, size_t n)
{
	if (n == 11 && !memcmp(k, "correlation", 11)) return A_CORRELATION;
	if (n == 11 && !memcmp(k, "External id", 11)) return A_EXTERNAL_ID;
	if (n == 6 && !memcmp(k, "stream", 6)) return A_STREAM;
	if (n == 6 && !memcmp(k, "device", 6)) return A_DEVICE;
	if (n == 5 && !memcmp(k, "bytes", 5)) return A_BYTES;
	if (n == 10 && !memcmp(k, "Input Dims", 10)) return A_INPUT_DIMS;
	return A_OTHER;
}

/* As fast_event_key, for the args the analyses read. */
static inline int fast_arg_key(const uint8_t *p)
{
	if (*p != '"')
		return 0;
	const uint8_t *q = p + 1;
	switch (q[0]) {
	case 'c': return !memcmp(q, "correlation\"", 12) ? A_CORRELATION : 0;
	case 'E': return !memcmp(q, "External id\"", 12) ? A_EXTERNAL_ID : 0;
	case 's': return !memcmp(q, "stream\"", 7) ? A_STREAM : 0;
	case 'd': return !memcmp(q, "device\"", 7) ? A_DEVICE : 0;
	case 'b': return !memcmp(q, "bytes\"", 6) ? A_BYTES : 0;
	case 'I': return !memcmp(q, "Input Dims\"", 11) ? A_INPUT_DIMS : 0;
	}
	return 0;
}

static int parse_args(struct parser *ps, const uint8_t **pp, struct fl_tev *ev)
{
	const uint8_t *p = *pp, *k;
	size_t kl;
	int r, has;
	if (*p != '{')
		return skip_value(ps, pp);
	ev->has |= FL_TEV_ARGS;
	p = skip_ws(p + 1);
	if (*p == '}') {
		*pp = p + 1;
		return P_OK;
	}
	for (;;) {
		int key = fast_arg_key(p);
		if (key) {
			p = skip_ws(p + arg_len[key] + 2);
			if (*p != ':')
				return bad(ps, p, "':' after the key");
			p = skip_ws(p + 1);
		} else {
			if ((r = parse_key(ps, &p, &k, &kl)))
				return r;
			key = arg_key(k, kl);
		}
		has = 0;
		int64_t *dst = NULL;
		uint32_t flag = 0;
		switch (key) {
		case A_CORRELATION: dst = &ev->correlation; flag = FL_TEV_CORRELATION; break;
		case A_EXTERNAL_ID: dst = &ev->external_id; flag = FL_TEV_EXTERNAL_ID; break;
		case A_STREAM: dst = &ev->stream; flag = FL_TEV_STREAM; break;
		case A_DEVICE: dst = &ev->device; flag = FL_TEV_DEVICE; break;
		case A_BYTES: dst = &ev->bytes; flag = FL_TEV_BYTES; break;
		}
		if (key == A_INPUT_DIMS) {
			/* [[rows, ...], ...]: the value is checked whole by skip_value,
			 * then its first number read back from where it starts */
			const uint8_t *v = p;
			if ((r = skip_value(ps, &p)))
				return r;
			ev->in_rows = -1;
			if (*v == '[') {
				v = skip_ws(v + 1);
				if (*v == '[') {
					v = skip_ws(v + 1);
					int64_t rows = 0;
					int nd = 0;
					while (v < p && *v >= '0' && *v <= '9' && nd < 18) {
						rows = rows * 10 + (*v++ - '0');
						nd++;
					}
					if (nd && v < p && (*v == ',' || *v == ']' || *v == ' '))
						ev->in_rows = rows;
				}
			}
		} else if (dst) {
			*dst = -1;
			r = key == A_STREAM ? stream_value(ps, &p, dst, &has) : int_value(ps, &p, dst, &has);
			if (!has)
				*dst = -1;
			ev->has = has ? ev->has | flag : ev->has & ~flag;
		} else {
			r = skip_value(ps, &p);
		}
		if (r)
			return r;
		p = skip_ws(p);
		if (*p == ',') {
			p = skip_ws(p + 1);
			continue;
		}
		if (*p == '}') {
			*pp = p + 1;
			return P_OK;
		}
		return bad(ps, p, "',' or '}' after a value in args");
	}
}

static int id_value(struct parser *ps, const uint8_t **pp, int64_t *v, uint32_t *has, uint32_t fnum, uint32_t fstr,
		    uint32_t *bad)
{
	const uint8_t *p = *pp;
	*has &= ~(fnum | fstr);
	if (*p == '"') {
		uint32_t id;
		int r = str_value(ps, pp, &id);
		if (r)
			return r;
		*v = id;
		*has |= fnum | fstr;
		return P_OK;
	}
	int numeric = *p == '-' || (*p >= '0' && *p <= '9') || *p == 'N' || *p == 'I';
	int h = 0, r = int_value(ps, pp, v, &h);
	if (h)
		*has |= fnum;
	else if (numeric && !r)
		*bad |= FL_TEVB_ID_RANGE; /* NaN, Infinity or beyond ±9.2e18: no integer holds it */
	return r;
}

static int num_value(struct parser *ps, const uint8_t **pp, double *v, int *isf, int *kind)
{
	const uint8_t *p = *pp;
	if (*p == '-' || (*p >= '0' && *p <= '9') || *p == 'N' || *p == 'I') {
		*kind = 1;
		return parse_number(ps, pp, v, isf);
	}
	*kind = *p == 'n' ? 0 : 2; /* null reads as missing; anything else is "other" */
	return skip_value(ps, pp);
}

/* One item of traceEvents at *pp. */
static int parse_event(struct parser *ps, const uint8_t **pp, struct fl_tev *ev)
{
	const uint8_t *p = *pp, *k;
	size_t kl;
	int r, isf, ts_kind = 0, kind;
	memset(ev, 0, sizeof(*ev));
	ev->pid = ev->tid = ev->correlation = ev->external_id = ev->stream = ev->device = ev->bytes = -1;
	ev->in_rows = -1;
	if (*p != '{')
		return bad(ps, p, "an event (a JSON object)");
	p = skip_ws(p + 1);
	if (*p == '}') {
		p++;
		goto done;
	}
	for (;;) {
		int key = fast_event_key(p);
		if (key) { /* a usual key, without escapes: no scan needed */
			p = skip_ws(p + key_len[key] + 2);
			if (*p != ':')
				return bad(ps, p, "':' after the key");
			p = skip_ws(p + 1);
		} else {
			if ((r = parse_key(ps, &p, &k, &kl)))
				return r;
			key = event_key(k, kl);
		}
		if (key) {
			if (ev->keys & (1u << key)) {
				ev->bad |= FL_TEVB_DUP_KEY;
				ev->dup_keys |= 1u << key;
			}
			ev->keys |= 1u << key;
		}
		switch (key) {
		case K_PH:
			ev->has &= ~(uint32_t)FL_TEV_PH;
			ev->ph = 0;
			ev->ph_str = 0;
			if (*p == '"') {
				uint32_t id;
				if ((r = str_value(ps, &p, &id)))
					return r;
				ev->ph = fl_strtab_str(ps->st, id)[0];
				ev->ph_str = id;
				ev->has |= FL_TEV_PH;
			} else {
				r = skip_value(ps, &p);
			}
			break;
		case K_CAT:
		case K_NAME: {
			int is_cat = key == K_CAT;
			uint32_t flag = is_cat ? FL_TEV_CAT : FL_TEV_NAME;
			uint32_t *dst = is_cat ? &ev->cat : &ev->name;
			ev->has &= ~flag;
			*dst = 0;
			if (*p == '"') {
				if ((r = str_value_bad(ps, &p, dst, &ev->bad)))
					return r;
				ev->has |= flag;
			} else {
				r = skip_value(ps, &p);
			}
			break;
		}
		case K_PID:
			r = id_value(ps, &p, &ev->pid, &ev->has, FL_TEV_PID, FL_TEV_PID_STR, &ev->bad);
			break;
		case K_TID:
			r = id_value(ps, &p, &ev->tid, &ev->has, FL_TEV_TID, FL_TEV_TID_STR, &ev->bad);
			break;
		case K_TS:
			ev->has &= ~(uint32_t)(FL_TEV_TS | FL_TEV_TS_FLOAT);
			ev->ts = 0;
			if ((r = num_value(ps, &p, &ev->ts, &isf, &kind)))
				return r;
			ts_kind = kind == 1 ? 1 : kind == 0 ? 0 : 2;
			if (kind == 1)
				ev->has |= FL_TEV_TS | (isf ? FL_TEV_TS_FLOAT : 0);
			else
				ev->ts = 0;
			break;
		case K_DUR:
			ev->has &= ~(uint32_t)FL_TEV_DUR;
			ev->dur = 0;
			if ((r = num_value(ps, &p, &ev->dur, &isf, &kind)))
				return r;
			if (kind == 1)
				ev->has |= FL_TEV_DUR;
			else
				ev->dur = 0;
			break;
		case K_ARGS:
			r = parse_args(ps, &p, ev);
			break;
		default:
			r = skip_value(ps, &p);
		}
		if (r)
			return r;
		p = skip_ws(p);
		if (*p == ',') {
			p = skip_ws(p + 1);
			continue;
		}
		if (*p == '}') {
			p++;
			break;
		}
		return bad(ps, p, "',' or '}' after a value in an event");
	}
done:
	*pp = p;
	if (ts_kind == 2)
		ps->info.n_ts_other++;
	else if (!(ev->has & FL_TEV_TS))
		ps->info.n_ts_missing++;
	else if (ev->has & FL_TEV_TS_FLOAT)
		ps->info.n_ts_float++;
	return P_OK;
}

static const char *state_where(const struct parser *ps)
{
	switch (ps->state) {
	case T_START: return "at the start of the document";
	case T_OBJ_FIRST:
	case T_OBJ_NEXT:
	case T_OBJ_KEY: return "in the top-level object";
	case T_EVENTS_FIRST:
	case T_EVENTS_NEXT:
	case T_EVENTS_ITEM: return "in traceEvents";
	case T_DONE: return "after the end of the document";
	}
	return "";
}

/* Parse whole units from buf[beg, end). P_OK: the document is complete. */
static int parse_units(struct parser *ps)
{
	struct fl_tev ev;
	int r;
	for (;;) {
		const uint8_t *p = ps->buf + ps->beg, *k;
		size_t kl;
		switch (ps->state) {
		case T_START:
			if (ps->base == 0 && ps->beg == 0 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
				p += 3; /* a UTF-8 byte order mark */
			p = skip_ws(p);
			if (p >= ps->buf + ps->end) { /* whitespace only so far: consumed */
				ps->beg = ps->end;
				return P_MORE;
			}
			if (*p == '{') {
				ps->state = T_OBJ_FIRST;
			} else if (*p == '[') {
				ps->state = T_EVENTS_FIRST;
				ps->info.array_form = 1;
				ps->info.has_events = 1;
			} else {
				return bad(ps, p, "'{' or '[' (a trace: an object with traceEvents, or an array of events)");
			}
			p++;
			break;
		case T_OBJ_FIRST:
		case T_OBJ_NEXT:
		case T_OBJ_KEY:
			p = skip_ws(p);
			if (p >= ps->buf + ps->end) {
				ps->beg = ps->end;
				return P_MORE;
			}
			if (*p == '}' && ps->state != T_OBJ_KEY) {
				ps->state = T_DONE;
				p++;
				break;
			}
			if (ps->state == T_OBJ_NEXT) {
				if (*p != ',')
					return bad(ps, p, "',' or '}' in the top-level object");
				ps->state = T_OBJ_KEY;
				p++;
				break;
			}
			const uint8_t *key_at = p;
			if ((r = parse_key(ps, &p, &k, &kl)))
				return r;
			uint32_t meta = meta_key(k, kl);
			if (meta) {
				if (ps->info.meta_seen & meta)
					ps->info.meta_dup |= meta;
				ps->info.meta_seen |= meta;
				if (ps->seen_events)
					ps->info.meta_after_events |= meta;
				if (meta == FL_META_SCHEMA_VERSION)
					ps->info.schema_version_number = *p == '-' || (*p >= '0' && *p <= '9');
			}
			if (kl == 11 && !memcmp(k, "traceEvents", 11)) {
				if (ps->info.events_at < 0)
					ps->info.events_at = (long long)(ps->base + (uint64_t)(key_at - ps->buf));
				if (ps->seen_events) {
					ps->err_at = p;
					ps->err_expected = "a single traceEvents key (a second one would replace the first)";
					return P_ERR;
				}
				if (*p != '[')
					return bad(ps, p, "'[' (traceEvents must be an array)");
				ps->seen_events = 1;
				ps->info.has_events = 1;
				ps->state = T_EVENTS_FIRST;
				p++;
				break;
			}
			if (kl == 15 && !memcmp(k, "distributedInfo", 15)) {
				r = parse_dist_info(ps, &p);
			} else if (kl == 16 && !memcmp(k, "deviceProperties", 16)) {
				r = parse_device_props(ps, &p);
			} else if (kl == 19 && !memcmp(k, "baseTimeNanoseconds", 19) &&
				   (*p == '-' || (*p >= '0' && *p <= '9'))) {
				int isf;
				r = parse_number(ps, &p, &ps->info.base_time_ns, &isf);
				if (!r)
					ps->info.has_base_time = 1;
			} else {
				r = skip_value(ps, &p);
			}
			if (r)
				return r;
			if ((size_t)(p - ps->buf) - ps->beg > MAX_UNIT)
				return P_BIG;
			/* the value is complete: this unit is not parsed again */
			if (meta && ps->seen_events && ps->info.n_meta_after < 8)
				ps->info.meta_after_order[ps->info.n_meta_after++] = meta;
			ps->state = T_OBJ_NEXT;
			break;
		case T_EVENTS_FIRST:
		case T_EVENTS_NEXT:
		case T_EVENTS_ITEM:
			p = skip_ws(p);
			if (p >= ps->buf + ps->end) {
				ps->beg = ps->end;
				return P_MORE;
			}
			if (*p == ']' && ps->state != T_EVENTS_ITEM) {
				ps->state = ps->info.array_form ? T_DONE : T_OBJ_NEXT;
				p++;
				break;
			}
			if (ps->state == T_EVENTS_NEXT) {
				if (*p != ',')
					return bad(ps, p, "',' or ']' after an event");
				ps->state = T_EVENTS_ITEM;
				p++;
				break;
			}
			{
				const uint8_t *ev_at = p;
				if ((r = parse_event(ps, &p, &ev)))
					return r;
				if ((size_t)(p - ps->buf) - ps->beg > MAX_UNIT)
					return P_BIG; /* the same limit whatever was buffered */
				ev.at = ps->base + (uint64_t)(ev_at - ps->buf);
			}
			ev.index = ps->info.n_events++;
			ps->state = T_EVENTS_NEXT;
			ps->beg = (size_t)(p - ps->buf);
			if (ps->o->on_event) {
				enum fl_status st = ps->o->on_event(ps->o->arg, &ev);
				if (st) {
					ps->err_expected = NULL;
					ps->err_at = NULL;
					return -(int)st; /* the callback's status */
				}
			}
			continue;
		case T_DONE:
			p = skip_ws(p);
			if (p < ps->buf + ps->end)
				return bad(ps, p, "nothing more (extra data after the end of the JSON document)");
			ps->beg = ps->end;
			return ps->eof ? P_OK : P_MORE;
		}
		ps->beg = (size_t)(p - ps->buf);
	}
}

static enum fl_status refill(struct parser *ps)
{
	size_t keep = ps->end - ps->beg;
	if (ps->beg) {
		memmove(ps->buf, ps->buf + ps->beg, keep);
		ps->base += ps->beg;
		ps->beg = 0;
		ps->end = keep;
	}
	if (ps->cap - ps->end < ps->chunk || keep > MAX_UNIT) {
		if (keep > MAX_UNIT)
			return fl_error(FL_EINPUT, "'%s': a single value longer than %zu MiB at byte %llu%s", ps->what,
					MAX_UNIT >> 20, (unsigned long long)ps->base,
					ps->info.gzip ? " of the decompressed stream" : "");
		size_t nc = ps->cap * 2 > ps->end + ps->chunk ? ps->cap * 2 : ps->end + ps->chunk;
		ps->buf = xrealloc(ps->buf, nc + PAD);
		ps->cap = nc;
	}
	/* A unit that ran into the end is parsed again from its start: read at
	 * least as many new bytes as it has (or to the end) first, so that a long
	 * unit costs a bounded number of passes, not one per chunk. */
	size_t want = keep < ps->chunk ? 1 : keep;
	if (want > ps->cap - ps->end)
		want = ps->cap - ps->end;
	size_t got = 0;
	while (got < want) {
		enum fl_status st = FL_OK;
		size_t k = src_read(ps->src, ps->buf + ps->end, ps->cap - ps->end, &st);
		/* an input error (corrupt gzip, a read error) after bytes this
		 * refill already has waits: those bytes are parsed first, and
		 * the next refill meets the error again (it persists), so the
		 * error met first in the stream is the one reported */
		if (st && got)
			break;
		if (st)
			return fl_error(st, "'%s': %s (after %llu bytes of JSON)", ps->what, ps->src->g.msg,
					(unsigned long long)(ps->base + ps->end));
		if (k == 0) {
			ps->eof = 1;
			break;
		}
		ps->end += k;
		got += k;
		ps->info.bytes_json += k;
	}
	memset(ps->buf + ps->end, 0, PAD);
	return FL_OK;
}

static void describe_byte(const uint8_t *at, const uint8_t *end, char *out, size_t n)
{
	if (at >= end)
		snprintf(out, n, "the end of the input");
	else if (*at >= 0x20 && *at < 0x7f)
		snprintf(out, n, "'%c'", *at);
	else
		snprintf(out, n, "byte 0x%02x", *at);
}

static enum fl_status run(struct parser *ps)
{
	enum fl_status st;
	for (;;) {
		int r = parse_units(ps);
		if (r == P_OK)
			return FL_OK;
		if (r < 0)
			return (enum fl_status)(-r);
		const char *off_of = ps->info.gzip ? " of the decompressed stream" : "";
		if (r == P_BIG)
			return fl_error(FL_EINPUT, "'%s': a single value longer than %zu MiB at byte %llu%s", ps->what,
					MAX_UNIT >> 20, (unsigned long long)(ps->base + ps->beg), off_of);
		if (r == P_ERR) {
			char got[32];
			describe_byte(ps->err_at, ps->buf + ps->end, got, sizeof(got));
			unsigned long long off = ps->base + (unsigned long long)(ps->err_at - ps->buf);
			if (ps->state == T_EVENTS_FIRST || ps->state == T_EVENTS_NEXT || ps->state == T_EVENTS_ITEM)
				return fl_error(FL_EINPUT, "'%s': invalid JSON at byte %llu%s, in traceEvents[%llu]: expected %s, got %s",
						ps->what, off, off_of, (unsigned long long)ps->info.n_events,
						ps->err_expected, got);
			return fl_error(FL_EINPUT, "'%s': invalid JSON at byte %llu%s, %s: expected %s, got %s", ps->what,
					off, off_of, state_where(ps), ps->err_expected, got);
		}
		if (ps->eof) {
			unsigned long long off = ps->base + ps->end;
			if (ps->state == T_START && ps->base + ps->end == 0)
				return fl_error(FL_EINPUT, "'%s': empty file, expected a trace (JSON)", ps->what);
			if (ps->state == T_EVENTS_FIRST || ps->state == T_EVENTS_NEXT || ps->state == T_EVENTS_ITEM)
				return fl_error(FL_EINPUT,
						"'%s': unexpected end of the input at byte %llu%s (truncated file?), in traceEvents[%llu]",
						ps->what, off, off_of, (unsigned long long)ps->info.n_events);
			return fl_error(FL_EINPUT, "'%s': unexpected end of the input at byte %llu%s (truncated file?), %s",
					ps->what, off, off_of, state_where(ps));
		}
		if ((st = refill(ps)))
			return st;
	}
}

static enum fl_status stream_src(const char *what, struct src *s, const struct fl_trace_stream_opts *o,
				 struct fl_trace_info *info)
{
	struct parser ps;
	memset(&ps, 0, sizeof(ps));
	ps.what = what;
	ps.src = s;
	ps.o = o;
	ps.st = o->strings;
	ps.chunk = o->chunk ? o->chunk : CHUNK_DEFAULT;
	enum fl_status st = FL_OK;
	struct fl_sha256 sha;
	if (o->sha256) {
		fl_sha256_init(&sha);
		s->raw.sha = &sha;
	}
	if (!o->strings) {
		st = fl_error(FL_EINTERNAL, "trace reader: no string table");
		goto out;
	}
	if ((st = src_open(s, !o->no_thread, ps.chunk))) {
		st = fl_error_prefix(st, "'%s': ", what);
		goto out;
	}
	ps.info.gzip = s->gzip;
	ps.info.rank_text_at = ps.info.events_at = -1;
	ps.cap = 4 * ps.chunk;
	ps.buf = xrealloc(NULL, ps.cap + PAD);
	memset(ps.buf, 0, PAD);
	st = run(&ps);
out:
	src_close(s);
	ps.info.bytes_in = s->raw.total;
	if (o->sha256 && !st) { /* the document is complete: every byte was read */
		unsigned char d[32];
		fl_sha256_final(&sha, d);
		for (int i = 0; i < 32; i++)
			snprintf(ps.info.sha256 + 2 * i, 3, "%02x", d[i]);
		ps.info.has_sha256 = 1;
	}
	if (info)
		*info = ps.info;
	free(ps.buf);
	free(ps.s1.p);
	free(ps.s2.p);
	return st;
}

enum fl_status fl_trace_stream_file(const char *path, const struct fl_trace_stream_opts *o,
				    struct fl_trace_info *info)
{
	struct src s;
	memset(&s, 0, sizeof(s));
	s.raw.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s.raw.fd < 0) {
		if (info)
			memset(info, 0, sizeof(*info));
		return fl_error(FL_EINPUT, "cannot open '%s': %s", path, strerror(errno));
	}
#ifdef POSIX_FADV_SEQUENTIAL
	posix_fadvise(s.raw.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
	enum fl_status st = stream_src(path, &s, o, info);
	close(s.raw.fd);
	return st;
}

enum fl_status fl_trace_stream_mem(const char *what, const void *buf, size_t len,
				   const struct fl_trace_stream_opts *o, struct fl_trace_info *info)
{
	struct src s;
	memset(&s, 0, sizeof(s));
	s.raw.fd = -1;
	s.raw.mem = buf;
	s.raw.mem_len = len;
	return stream_src(what, &s, o, info);
}
