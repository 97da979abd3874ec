/* trace_strtab.c — the string table of the trace readers: every distinct
 * name or category interned once, ids stable for the life of the table
 * (trace_stream.h, fl_strtab_*). */
#include "grader/trace/trace_stream.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- strings */

struct strent {
	const char *s;
	uint32_t len;
	uint64_t hash;
};

struct fl_strtab {
	struct strent *ent;
	uint32_t n, cap;
	uint32_t *slots; /* id + 1, 0 = empty */
	uint32_t nslots; /* a power of two */
	char **blocks;
	size_t nblocks, blocks_cap;
	char *cur;
	size_t cur_left;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort(); /* as strbuf: out of memory is not recoverable here */
	return q;
}

static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
		s += 8;
		n -= 8;
	}
	uint64_t w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	return h;
}

static char *strtab_alloc(struct fl_strtab *t, size_t n)
{
	if (n > t->cur_left) {
		size_t bs = n > 65536 ? n : 65536;
		if (t->nblocks == t->blocks_cap) {
			t->blocks_cap = t->blocks_cap ? 2 * t->blocks_cap : 16;
			t->blocks = xrealloc(t->blocks, t->blocks_cap * sizeof(*t->blocks));
		}
		t->cur = xrealloc(NULL, bs);
		t->blocks[t->nblocks++] = t->cur;
		t->cur_left = bs;
	}
	char *r = t->cur;
	t->cur += n;
	t->cur_left -= n;
	return r;
}

static void strtab_rehash(struct fl_strtab *t, uint32_t nslots)
{
	free(t->slots);
	t->slots = calloc(nslots, sizeof(*t->slots));
	if (!t->slots)
		abort();
	t->nslots = nslots;
	for (uint32_t i = 0; i < t->n; i++) {
		uint32_t j = (uint32_t)t->ent[i].hash & (nslots - 1);
		while (t->slots[j])
			j = (j + 1) & (nslots - 1);
		t->slots[j] = i + 1;
	}
}

struct fl_strtab *fl_strtab_new(void)
{
	struct fl_strtab *t = calloc(1, sizeof(*t));
	if (!t)
		abort();
	strtab_rehash(t, 1024);
	fl_strtab_intern(t, "", 0); /* id 0 */
	return t;
}

void fl_strtab_free(struct fl_strtab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nblocks; i++)
		free(t->blocks[i]);
	free(t->blocks);
	free(t->slots);
	free(t->ent);
	free(t);
}

static uint32_t strtab_lookup(const struct fl_strtab *t, const char *s, size_t n, uint64_t h, uint32_t *slot)
{
	uint32_t j = (uint32_t)h & (t->nslots - 1);
	for (;;) {
		uint32_t v = t->slots[j];
		if (!v) {
			*slot = j;
			return UINT32_MAX;
		}
		const struct strent *e = &t->ent[v - 1];
		if (e->hash == h && e->len == n && memcmp(e->s, s, n) == 0)
			return v - 1;
		j = (j + 1) & (t->nslots - 1);
	}
}

uint32_t fl_strtab_intern(struct fl_strtab *t, const char *s, size_t n)
{
	uint64_t h = hash_bytes(s, n);
	uint32_t slot;
	uint32_t id = strtab_lookup(t, s, n, h, &slot);
	if (id != UINT32_MAX)
		return id;
	if (n > UINT32_MAX - 1)
		n = UINT32_MAX - 1; /* cannot happen: a unit is at most MAX_UNIT */
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->ent = xrealloc(t->ent, t->cap * sizeof(*t->ent));
	}
	char *c = strtab_alloc(t, n + 1);
	memcpy(c, s, n);
	c[n] = '\0';
	id = t->n++;
	t->ent[id] = (struct strent){c, (uint32_t)n, h};
	t->slots[slot] = id + 1;
	if ((uint64_t)t->n * 2 > t->nslots)
		strtab_rehash(t, t->nslots * 2);
	return id;
}

uint32_t fl_strtab_find(const struct fl_strtab *t, const char *s, size_t n)
{
	uint32_t slot;
	return strtab_lookup(t, s, n, hash_bytes(s, n), &slot);
}

const char *fl_strtab_str(const struct fl_strtab *t, uint32_t id)
{
	return id < t->n ? t->ent[id].s : "";
}

size_t fl_strtab_len(const struct fl_strtab *t, uint32_t id)
{
	return id < t->n ? t->ent[id].len : 0;
}

uint32_t fl_strtab_count(const struct fl_strtab *t) { return t->n; }
