/* utf8.h — strict UTF-8 decoding (no overlongs, surrogates or > U+10FFFF, as
 * Python's strict decoder), shared by the JSON writer, the answer reader and
 * the trace reader. */
#ifndef FL_UTF8_H
#define FL_UTF8_H

#include <stddef.h>

/* Length (1-4) of the valid UTF-8 sequence at s (n bytes left), or 0 when it is
 * invalid or truncated. *cp receives the code point when cp is not NULL. */
size_t fl_utf8_seq(const unsigned char *s, size_t n, unsigned *cp);

#endif
