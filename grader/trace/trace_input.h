/* trace_input.h — the bytes a trace is read from (private to grader/trace):
 * a file or memory, hashed on the way when asked, inflated when gzip (on a
 * second thread for files, so inflating and parsing overlap). The parser
 * (trace_stream.c) reads JSON text from a struct src in chunks. */
#ifndef FL_TRACE_INPUT_H
#define FL_TRACE_INPUT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <zlib.h>

#include "common/sha256.h"
#include "common/status.h"

#define PAD 64                     /* zeroed bytes after the data (sentinel + SIMD over-read) */
#define CHUNK_DEFAULT (256u << 10) /* bytes per read / inflate chunk */
#define NSLOT 4                    /* inflated chunks in flight between the threads */

/* Bytes of the file (or of memory), before any decompression. */
struct rawsrc {
	int fd; /* -1: memory */
	const uint8_t *mem;
	size_t mem_len, mem_pos;
	uint64_t total;
	struct fl_sha256 *sha; /* hash what is read (NULL: no) */
};

/* gzip: inflate the raw input, member after member (as gzip and Python do;
 * zero bytes after a member are padding). */
struct gz {
	z_stream z;
	int z_live;
	struct rawsrc *raw;
	uint8_t *in;
	size_t in_cap;
	int in_eof;
	int member_end; /* the last inflate() ended a member */
	enum fl_status st;
	char msg[256];
};

struct pipe {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint8_t *slot[NSLOT];
	size_t len[NSLOT];
	unsigned produced, consumed; /* counters; slot index = counter % NSLOT */
	size_t cpos;                 /* bytes of the current slot already taken */
	int done, stop;
	size_t chunk;
	struct src *src;
};

enum { SRC_INLINE, SRC_THREAD };

struct src {
	int kind;
	int gzip;
	struct rawsrc raw;
	uint8_t head[2];
	size_t head_len, head_pos; /* bytes peeked for the magic, handed out first */
	struct gz g;
	struct pipe pipe;
	int pipe_live;
};

/* Open: the caller has set s->raw (fd or memory, sha); thread: inflate on a
 * second thread; chunk: bytes per read. Errors name the input. */
enum fl_status src_open(struct src *s, int thread, size_t chunk);
/* Up to n bytes of JSON text; fewer only at the end or on an error (*st set). */
size_t src_read(struct src *s, uint8_t *dst, size_t n, enum fl_status *st);
void src_close(struct src *s);

#endif
