/* answer.h — a learner's answer file (untrusted input).
 *
 * Two forms, told apart by the first non-blank character:
 *   JSON   an object: {"step_p50_ms": "36.9 ms", "family": "input starvation",
 *          "mechanisms": ["gc_pause", "periodic_host_stall"]}; values may be
 *          text, numbers, booleans or arrays of text/numbers.
 *   lines  `key: value` (or `key = value`), one per line; a line whose first
 *          non-blank character is '#' is a comment, and so is the rest of a
 *          line after " #" (a '#' preceded by whitespace). A value may be
 *          quoted ("..." or '...'). Lists are written in one value:
 *          `mechanisms: gc_pause, periodic_host_stall`.
 * Keys are matched after fl_norm_key ("Step p50 (ms)" -> "step_p50_ms").
 *
 * The file must be at most FL_ANSWER_MAX_BYTES of UTF-8 text without NUL
 * bytes; a key may appear once. Anything else makes the answer unparseable
 * (FL_ERUNTIME, exit 3, "not gradable"), with a message that is safe to show
 * the learner: it quotes at most a short, cleaned piece of the input and names
 * the file by its base name only.
 */
#ifndef FL_ANSWER_H
#define FL_ANSWER_H

#include <stddef.h>

#include "common/status.h"

#define FL_ANSWER_MAX_BYTES (1u << 20)
#define FL_ANSWER_MAX_VALUE 4096 /* longest value a question reads */
#define FL_ANSWER_MAX_ITEMS 256  /* longest list value */

enum fl_answer_type {
	FL_ANS_TEXT = 0,
	FL_ANS_NUMBER, /* JSON number; `text` holds it as printed */
	FL_ANS_BOOL,   /* `text` is "yes" or "no" */
	FL_ANS_LIST,   /* JSON array; `list` holds the elements as text */
	FL_ANS_NULL,
	FL_ANS_OTHER,  /* a JSON object or nested arrays: never a valid value */
};

struct fl_answer_item {
	char *key;       /* as written, cleaned for display */
	char *norm_key;
	enum fl_answer_type type;
	char *text;      /* the value (lists: elements joined with ", ") */
	double number;
	char **list;
	size_t n_list;
	long line;       /* line-form answers: 1-based line; 0 for JSON */
	int too_long;    /* the value is longer than FL_ANSWER_MAX_VALUE (text not kept) */
	int used;        /* set by the grader when a question read it */
};

struct fl_answer {
	char *name;      /* base name of the file, for messages */
	int is_json;
	struct fl_answer_item *items;
	size_t n;
};

/* Read and parse. FL_ERUNTIME (answer unusable) with a learner-safe message. */
enum fl_status fl_answer_load(const char *path, struct fl_answer *a);
/* Parse text (len bytes) named `name`. */
enum fl_status fl_answer_parse(const char *name, const char *text, size_t len, struct fl_answer *a);
/* The item for a normalised key, or NULL. */
struct fl_answer_item *fl_answer_find(const struct fl_answer *a, const char *norm_key);
void fl_answer_release(struct fl_answer *a);

#endif
