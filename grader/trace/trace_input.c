/* trace_input.c — reading a trace's bytes: file or memory, SHA-256 on the
 * way, gzip inflated inline or on a second thread (trace_input.h). */
#include "grader/trace/trace_input.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------ raw input */


/* Read up to n bytes; 0 at the end. -1 on a read error (errno set). */
static ssize_t raw_read(struct rawsrc *r, uint8_t *dst, size_t n)
{
	if (r->fd < 0) {
		size_t k = r->mem_len - r->mem_pos;
		if (k > n)
			k = n;
		if (k)
			memcpy(dst, r->mem + r->mem_pos, k);
		if (k && r->sha)
			fl_sha256_update(r->sha, dst, k);
		r->mem_pos += k;
		r->total += k;
		return (ssize_t)k;
	}
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(r->fd, dst + got, n - got);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	if (got && r->sha)
		fl_sha256_update(r->sha, dst, got);
	r->total += got;
	return (ssize_t)got;
}


static int gz_fill(struct gz *g)
{
	if (g->z.avail_in || g->in_eof)
		return 0;
	ssize_t k = raw_read(g->raw, g->in, g->in_cap);
	if (k < 0) {
		g->st = FL_ERUNTIME;
		snprintf(g->msg, sizeof(g->msg), "read error: %s", strerror(errno));
		return -1;
	}
	if (k == 0)
		g->in_eof = 1;
	g->z.next_in = g->in;
	g->z.avail_in = (uInt)k;
	return 0;
}

static uint64_t gz_in_pos(const struct gz *g) { return g->raw->total - g->z.avail_in; }

/* Inflate up to n bytes into dst; returns the count, 0 at the end of the
 * data, and sets g->st on errors (then returns what was produced). */
static size_t gz_read(struct gz *g, uint8_t *dst, size_t n)
{
	g->z.next_out = dst;
	g->z.avail_out = (uInt)n;
	while (g->z.avail_out && !g->st) {
		if (gz_fill(g))
			break;
		if (g->member_end) {
			/* between members: skip zero padding, then a new member or the end */
			while (g->z.avail_in && g->z.next_in[0] == 0) {
				g->z.next_in++;
				g->z.avail_in--;
			}
			if (!g->z.avail_in) {
				if (g->in_eof)
					break;
				continue;
			}
			if (g->z.next_in[0] != 0x1f) {
				g->st = FL_EINPUT;
				snprintf(g->msg, sizeof(g->msg), "trailing garbage after the gzip data at compressed byte %llu",
					 (unsigned long long)gz_in_pos(g));
				break;
			}
			inflateReset(&g->z);
			g->member_end = 0;
		}
		if (!g->z.avail_in && g->in_eof) {
			g->st = FL_EINPUT;
			snprintf(g->msg, sizeof(g->msg),
				 "truncated gzip data: the file ends (at compressed byte %llu) before the end of the gzip stream",
				 (unsigned long long)gz_in_pos(g));
			break;
		}
		int r = inflate(&g->z, Z_NO_FLUSH);
		if (r == Z_STREAM_END) {
			g->member_end = 1;
		} else if (r == Z_BUF_ERROR) {
			if (g->z.avail_in) /* no progress with input left: cannot happen with avail_out > 0 */
				break;
		} else if (r != Z_OK) {
			g->st = FL_EINPUT;
			snprintf(g->msg, sizeof(g->msg), "corrupt gzip data at compressed byte %llu: %s",
				 (unsigned long long)gz_in_pos(g), g->z.msg ? g->z.msg : zError(r));
			break;
		}
	}
	return n - g->z.avail_out;
}

/* A second thread reads (and inflates) and hands chunks to the parsing
 * thread through NSLOT slots. */
struct src;
static size_t src_fill(struct src *s, uint8_t *dst, size_t n);


static void *pipe_main(void *arg)
{
	struct pipe *pp = arg;
	for (;;) {
		pthread_mutex_lock(&pp->mu);
		while (pp->produced - pp->consumed == NSLOT && !pp->stop)
			pthread_cond_wait(&pp->cv, &pp->mu);
		int stop = pp->stop;
		unsigned i = pp->produced % NSLOT;
		pthread_mutex_unlock(&pp->mu);
		if (stop)
			break;
		size_t k = src_fill(pp->src, pp->slot[i], pp->chunk);
		pthread_mutex_lock(&pp->mu);
		pp->len[i] = k;
		pp->produced++;
		if (k < pp->chunk)
			pp->done = 1; /* the end, or an error in g->st */
		pthread_cond_broadcast(&pp->cv);
		pthread_mutex_unlock(&pp->mu);
		if (k < pp->chunk)
			break;
	}
	return NULL;
}

/* ----------------------------------------------------------- JSON source */



/* Up to n bytes of JSON text (n unless at the end or on an error, which
 * sets s->g.st and s->g.msg). */
static size_t src_fill(struct src *s, uint8_t *dst, size_t n)
{
	if (s->gzip)
		return gz_read(&s->g, dst, n);
	size_t got = 0;
	while (s->head_pos < s->head_len && got < n)
		dst[got++] = s->head[s->head_pos++];
	ssize_t k = raw_read(&s->raw, dst + got, n - got);
	if (k < 0) {
		s->g.st = FL_ERUNTIME;
		snprintf(s->g.msg, sizeof(s->g.msg), "read error: %s", strerror(errno));
		return got;
	}
	return got + (size_t)k;
}

/* Read up to n bytes of JSON text; 0 at the end; errors: returns 0 with *st set
 * and the message in s->g.msg. */
size_t src_read(struct src *s, uint8_t *dst, size_t n, enum fl_status *st)
{
	if (s->kind == SRC_INLINE) {
		size_t k = s->g.st ? 0 : src_fill(s, dst, n);
		if (s->g.st && !k)
			*st = s->g.st;
		return k;
	}
	struct pipe *pp = &s->pipe;
	size_t got = 0;
	while (got < n) {
		/* block only for the first bytes: then go back to parsing what came */
		pthread_mutex_lock(&pp->mu);
		while (pp->produced == pp->consumed && !pp->done && !got)
			pthread_cond_wait(&pp->cv, &pp->mu);
		if (pp->produced == pp->consumed) { /* nothing ready (or the end) */
			pthread_mutex_unlock(&pp->mu);
			break;
		}
		unsigned i = pp->consumed % NSLOT;
		size_t len = pp->len[i];
		pthread_mutex_unlock(&pp->mu);
		size_t k = len - pp->cpos;
		if (k > n - got)
			k = n - got;
		memcpy(dst + got, pp->slot[i] + pp->cpos, k);
		got += k;
		pp->cpos += k;
		if (pp->cpos == len) {
			pthread_mutex_lock(&pp->mu);
			pp->consumed++;
			pp->cpos = 0;
			pthread_cond_broadcast(&pp->cv);
			pthread_mutex_unlock(&pp->mu);
			if (len < pp->chunk)
				break; /* the producer's last chunk */
		}
	}
	if (!got && s->g.st)
		*st = s->g.st;
	return got;
}

enum fl_status src_open(struct src *s, int thread, size_t chunk)
{
	/* peek the magic */
	while (s->head_len < 2) {
		ssize_t k = raw_read(&s->raw, s->head + s->head_len, 2 - s->head_len);
		if (k < 0)
			return fl_error(FL_ERUNTIME, "read error: %s", strerror(errno));
		if (k == 0)
			break;
		s->head_len += (size_t)k;
	}
	s->gzip = s->head_len == 2 && s->head[0] == 0x1f && s->head[1] == 0x8b;
	s->kind = thread && s->gzip ? SRC_THREAD : SRC_INLINE; /* reading plain files on a thread gains nothing: it only moves the copy */
	if (s->gzip) {
		s->g.raw = &s->raw;
		s->g.in_cap = chunk;
		s->g.in = malloc(chunk);
		if (!s->g.in)
			return fl_error(FL_ERUNTIME, "out of memory");
		memcpy(s->g.in, s->head, 2);
		s->g.z.next_in = s->g.in;
		s->g.z.avail_in = 2;
		if (inflateInit2(&s->g.z, 15 + 16) != Z_OK)
			return fl_error(FL_ERUNTIME, "cannot start zlib's inflate");
		s->g.z_live = 1;
	}
	if (s->kind == SRC_INLINE)
		return FL_OK;
	struct pipe *pp = &s->pipe;
	pp->chunk = chunk;
	pp->src = s;
	for (int i = 0; i < NSLOT; i++) {
		pp->slot[i] = malloc(chunk);
		if (!pp->slot[i])
			return fl_error(FL_ERUNTIME, "out of memory");
	}
	pthread_mutex_init(&pp->mu, NULL);
	pthread_cond_init(&pp->cv, NULL);
	if (pthread_create(&pp->th, NULL, pipe_main, pp)) {
		pthread_mutex_destroy(&pp->mu);
		pthread_cond_destroy(&pp->cv);
		s->kind = SRC_INLINE; /* no thread: read on this one */
		return FL_OK;
	}
	s->pipe_live = 1;
	return FL_OK;
}

void src_close(struct src *s)
{
	if (s->pipe_live) {
		struct pipe *pp = &s->pipe;
		pthread_mutex_lock(&pp->mu);
		pp->stop = 1;
		pthread_cond_broadcast(&pp->cv);
		pthread_mutex_unlock(&pp->mu);
		pthread_join(pp->th, NULL);
		pthread_mutex_destroy(&pp->mu);
		pthread_cond_destroy(&pp->cv);
	}
	for (int i = 0; i < NSLOT; i++)
		free(s->pipe.slot[i]);
	if (s->g.z_live)
		inflateEnd(&s->g.z);
	free(s->g.in);
}
