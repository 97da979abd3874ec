/* strbuf.h — a growable byte buffer, and JSON string escaping of any length. */
#ifndef FL_STRBUF_H
#define FL_STRBUF_H

#include <stddef.h>

struct strbuf {
	char *buf;   /* always NUL-terminated when alloc > 0 */
	size_t len;
	size_t alloc;
};
#define STRBUF_INIT { NULL, 0, 0 }

void strbuf_grow(struct strbuf *sb, size_t extra); /* aborts on out-of-memory */
void strbuf_add(struct strbuf *sb, const void *p, size_t n);
void strbuf_adds(struct strbuf *sb, const char *s);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as a JSON string literal, quotes included. Control characters,
 * quotes and backslashes are escaped; invalid UTF-8 bytes become U+FFFD, so the
 * output is always valid JSON whatever s holds. */
void strbuf_add_json_str(struct strbuf *sb, const char *s);
void strbuf_add_json_strn(struct strbuf *sb, const char *s, size_t n);
void strbuf_reset(struct strbuf *sb);
/* strdup that aborts on out-of-memory; NULL reads as "". */
char *fl_xstrdup(const char *s);
/* Room for element n of an array of n elements of `size` bytes that grows
 * one at a time: the array's capacity is n rounded up to a power of two, so it
 * is reallocated (doubled) only when n is 0 or a power of two — amortised
 * O(1) per element, never a copy per element. Aborts on out-of-memory. */
void *fl_grow_one(void *p, size_t n, size_t size);
/* The part of a path after its last '/' (a pointer into path). */
const char *fl_base_name(const char *path);
void strbuf_release(struct strbuf *sb);

#endif
