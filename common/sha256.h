/* sha256.h — SHA-256 (FIPS 180-4), for the file hashes the truth records, and
 * HMAC-SHA256 over it. */
#ifndef FL_SHA256_H
#define FL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

struct fl_sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char block[64];
	size_t used;
};

void fl_sha256_init(struct fl_sha256 *c);
void fl_sha256_update(struct fl_sha256 *c, const void *p, size_t n);
void fl_sha256_final(struct fl_sha256 *c, unsigned char out[32]);
/* Hex digest (65 bytes with the NUL) of a buffer / of a file's raw bytes. */
void fl_sha256_hex(const void *p, size_t n, char hex[65]);
enum fl_status fl_sha256_file(const char *path, char hex[65]);
/* HMAC-SHA256 (RFC 2104; test vectors of RFC 4231): a keyed hash, so that who
 * lacks the key cannot compute (or invert) it — the per-learner variant seeds
 * of `faultline assign`. */
void fl_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen, unsigned char out[32]);

#endif
