/* trace_stream_internal.h — the state of the streaming trace reader, shared
 * by its parts (private to grader/trace: only the reader's .c files include
 * it — trace_stream.c, the unit loop and event parsing, and trace_meta.c, the
 * top-level metadata; trace_lex.h, the JSON lexer, works on it).
 *
 * The buffer buf[beg, end) always ends in a NUL sentinel followed by PAD
 * zeroed bytes (trace_stream.c), which is what lets the lexer scan without
 * bounds checks. Parsers return P_OK, or P_MORE when they ran into the end of
 * the buffer (the unit is parsed again once more bytes are in), or P_ERR with
 * err_at / err_expected set, or P_BIG.
 */
#ifndef FL_TRACE_STREAM_INTERNAL_H
#define FL_TRACE_STREAM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "grader/trace/trace_input.h"
#include "grader/trace/trace_stream.h"

#define MAX_UNIT ((size_t)8 << 20) /* the largest single event or metadata value: bounds the buffer (and
                                    * so the reader's memory) on any input, whitespace included */

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort(); /* as strbuf: out of memory is not recoverable here */
	return q;
}

enum { P_OK = 0, P_MORE, P_ERR, P_BIG /* a unit over MAX_UNIT, at buf[beg] */ };

/* *_KEY / *_ITEM: after a ',' (a key or an event must follow). Whitespace
 * between units is consumed as it comes (the unit start advances over it), so
 * any amount of it costs one pass and no memory. */
enum top_state { T_START, T_OBJ_FIRST, T_OBJ_NEXT, T_OBJ_KEY, T_EVENTS_FIRST, T_EVENTS_NEXT, T_EVENTS_ITEM, T_DONE };

struct scratch {
	uint8_t *p;
	size_t cap;
};

/* Recently interned strings, direct-mapped by length and first bytes: most
 * names repeat, and a hit costs one compare instead of a hash and a probe. */
#define ICACHE 1024
struct icache {
	uint64_t w; /* the first (up to) 8 bytes */
	uint32_t len, id;
	const char *s;
};

struct parser {
	const char *what;
	struct src *src;
	uint8_t *buf;
	size_t cap, beg, end; /* data is buf[beg, end); buf[end] == 0 */
	uint64_t base;        /* stream offset of buf[0] */
	size_t chunk;
	int eof;
	enum top_state state;
	int seen_events;
	const struct fl_trace_stream_opts *o;
	struct fl_strtab *st;
	struct fl_trace_info info;
	int rank_done;
	int bad_utf8; /* decode_str replaced something */
	/* error */
	const uint8_t *err_at;
	const char *err_expected;
	char err_detail[96];
	struct scratch s1, s2;
	struct icache icache[ICACHE];
};

/* trace_meta.c: the top-level metadata values. Each parses the value at *pp
 * (as the other parsers: P_OK with *pp past it, P_MORE, P_ERR) into ps->info. */
int parse_dist_info(struct parser *ps, const uint8_t **pp);    /* distributedInfo */
int parse_device_props(struct parser *ps, const uint8_t **pp); /* deviceProperties */
/* The FL_META_* flag of a top-level key (its decoded bytes), 0: none. */
uint32_t meta_key(const uint8_t *k, size_t n);

#endif
