/* text.h — the grader's text handling: normalising learners' words for
 * matching, finding phrases, checking UTF-8, cleaning text for reports and
 * formatting numbers as feedback shows them (grader/grading/text.c). */
#ifndef FL_GRADING_TEXT_H
#define FL_GRADING_TEXT_H

#include <stddef.h>


/* Normalise for matching: trim, ASCII lowercase, '-', '_' and whitespace runs
 * become one space; with `loose`, punctuation too (. , ; : ! ? ( ) [ ] { } " '
 * ` / \ | * + = < >). Non-ASCII bytes are kept (no Unicode folding beyond
 * mapping the micro sign U+00B5 to U+03BC). Returns a malloc'd string. */
char *fl_norm(const char *s, int loose);
/* Normalise an answer or rubric key: lowercase, every run of characters other
 * than [a-z0-9] becomes one '_', no leading/trailing '_'. malloc'd. */
char *fl_norm_key(const char *s);
/* Offset of needle in hay as whole words (bounded by start/end or a space),
 * searching from `from`; -1 if absent. Both normalised. */
long fl_find_phrase(const char *hay, const char *needle, size_t from);

/* 1 if s[0..n) is valid UTF-8; else 0 and *bad_at (may be NULL) = offset. */
int fl_utf8_valid(const char *s, size_t n, size_t *bad_at);
/* A display copy of untrusted text: at most `max` bytes of it (cut at a
 * character boundary, "..." appended when cut), invalid UTF-8 as U+FFFD,
 * control characters as spaces. malloc'd; never NULL. */
char *fl_clean_text(const char *s, size_t max);

/* Shortest "%g"-like text of v that reads back within 1e-9 relative: at most
 * 10 significant digits ("36.9", "0.000301", "7504"). */
void fl_fmt_num(char *buf, size_t n, double v);

#endif
