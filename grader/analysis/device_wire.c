/* device_wire.c — the bytes a rank's states travel as between the processes
 * of a split job (device_split.c): plain values in the sender's byte order
 * (the processes of one run share it), counts as 64-bit, strings as a
 * length and their bytes. Reads never go past the end: a short read sets
 * `bad` and yields zeros. See device_internal.h. */
#include "grader/analysis/device_internal.h"

#include <stdlib.h>
#include <string.h>

void dm_put(struct strbuf *out, const void *p, size_t n) { strbuf_add(out, p, n); }

void dm_put_u64(struct strbuf *out, uint64_t v) { strbuf_add(out, &v, sizeof(v)); }

void dm_put_str(struct strbuf *out, const char *s, size_t n)
{
	dm_put_u64(out, n);
	strbuf_add(out, s, n);
}

int dm_get(struct dm_rd *in, void *p, size_t n)
{
	if (in->bad || (size_t)(in->end - in->p) < n) {
		in->bad = 1;
		memset(p, 0, n);
		return -1;
	}
	dm_copy_n(p, in->p, n);
	in->p += n;
	return 0;
}

uint64_t dm_get_u64(struct dm_rd *in)
{
	uint64_t v;
	dm_get(in, &v, sizeof(v));
	return v;
}

const char *dm_get_str(struct dm_rd *in, size_t *n)
{
	uint64_t len = dm_get_u64(in);
	if (in->bad || (uint64_t)(in->end - in->p) < len) {
		in->bad = 1;
		*n = 0;
		return "";
	}
	const char *s = in->p;
	in->p += len;
	*n = (size_t)len;
	return s;
}

int dm_get_array(struct dm_rd *in, void **out, size_t n, size_t sz)
{
	*out = NULL;
	if (in->bad || (sz && n > (size_t)(in->end - in->p) / sz)) {
		in->bad = 1;
		return -1;
	}
	*out = dm_xalloc(NULL, n * sz);
	return dm_get(in, *out, n * sz);
}

int dm_map_id(const uint32_t *map, uint32_t nmap, uint32_t *id)
{
	if (*id >= nmap)
		return -1;
	*id = map[*id];
	return 0;
}
