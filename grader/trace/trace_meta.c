/* trace_meta.c — the top-level metadata of a trace, for the streaming reader
 * (trace_stream.c): distributedInfo (rank, world_size), deviceProperties (the
 * first device's interconnect bandwidth) and the FL_META_* flags of the keys
 * the reader tracks (trace_stream.h, fl_trace_info). Values are read with the
 * reader's lexer (trace_lex.h); declarations in trace_stream_internal.h. */
#include "grader/trace/trace_stream_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "grader/trace/trace_lex.h"

/* After an object member's value: past a ',' (*end 0, at the next key or,
 * for a trailing comma, the '}') or at the object's '}' (*end 1); anything
 * else is an error expecting `expected`. */
static int next_member(struct parser *ps, const uint8_t **pp, int *end, const char *expected)
{
	const uint8_t *p = skip_ws(*pp);
	*end = *p == '}';
	if (*p == ',')
		p = skip_ws(p + 1);
	else if (!*end)
		return bad(ps, p, expected);
	*pp = p;
	return P_OK;
}

int parse_dist_info(struct parser *ps, const uint8_t **pp)
{
	const uint8_t *p = *pp, *k;
	size_t kl;
	int r;
	if (*p != '{')
		return skip_value(ps, pp);
	long long rank = 0, world = 0;
	int has_rank = 0, has_world = 0;
	p = skip_ws(p + 1);
	if (*p != '}') {
		for (int end = 0; !end;) {
			if ((r = parse_key(ps, &p, &k, &kl)))
				return r;
			int64_t v = 0;
			int has = 0;
			if (kl == 4 && !memcmp(k, "rank", 4)) {
				if ((r = int_value(ps, &p, &v, &has)))
					return r;
				has_rank = has;
				rank = v;
			} else if (kl == 10 && !memcmp(k, "world_size", 10)) {
				if ((r = int_value(ps, &p, &v, &has)))
					return r;
				has_world = has;
				world = v;
			} else if ((r = skip_value(ps, &p))) {
				return r;
			}
			if ((r = next_member(ps, &p, &end, "',' or '}' in distributedInfo")))
				return r;
		}
	}
	*pp = p + 1;
	/* a later distributedInfo replaces an earlier one, as in a dict */
	ps->info.has_dist_rank = has_rank;
	ps->info.dist_rank = rank;
	ps->info.has_world_size = has_world;
	ps->info.world_size = world;
	return P_OK;
}

/* deviceProperties: of the first device, interconnect."bandwidth (Gbit/s)"
 * when it is a number (faultline's emulated link names it; a real trace has
 * none); everything else is checked and skipped. */
int parse_device_props(struct parser *ps, const uint8_t **pp)
{
	const uint8_t *p = *pp, *k;
	size_t kl;
	int r, end;
	if (*p != '[')
		return skip_value(ps, pp);
	p = skip_ws(p + 1);
	double gbps = 0;
	int has = 0;
	if (*p == '{') { /* the first device */
		p = skip_ws(p + 1);
		while (*p != '}') {
			if ((r = parse_key(ps, &p, &k, &kl)))
				return r;
			if (kl == 12 && !memcmp(k, "interconnect", 12) && *p == '{') {
				p = skip_ws(p + 1);
				while (*p != '}') {
					const uint8_t *k2;
					size_t kl2;
					if ((r = parse_key(ps, &p, &k2, &kl2)))
						return r;
					if (kl2 == 18 && !memcmp(k2, "bandwidth (Gbit/s)", 18) &&
					    (*p == '-' || (*p >= '0' && *p <= '9'))) {
						int isf;
						if ((r = parse_number(ps, &p, &gbps, &isf)))
							return r;
						has = isfinite(gbps) && gbps > 0;
					} else if ((r = skip_value(ps, &p))) {
						return r;
					}
					if ((r = next_member(ps, &p, &end, "',' or '}' in deviceProperties[0].interconnect")))
						return r;
				}
				p++;
			} else if ((r = skip_value(ps, &p))) {
				return r;
			}
			if ((r = next_member(ps, &p, &end, "',' or '}' in deviceProperties[0]")))
				return r;
		}
		p = skip_ws(p + 1);
	} else if (*p != ']') {
		if ((r = skip_value(ps, &p)))
			return r;
		p = skip_ws(p);
	}
	/* the other devices */
	while (*p == ',') {
		p = skip_ws(p + 1);
		if ((r = skip_value(ps, &p)))
			return r;
		p = skip_ws(p);
	}
	if (*p != ']')
		return bad(ps, p, "',' or ']' in deviceProperties");
	*pp = p + 1;
	ps->info.has_link_gbps = has;
	ps->info.link_gbps = has ? gbps : 0;
	return P_OK;
}

uint32_t meta_key(const uint8_t *k, size_t n)
{
	static const struct { const char *s; uint32_t f; } keys[] = {
		{"schemaVersion", FL_META_SCHEMA_VERSION}, {"deviceProperties", FL_META_DEVICE_PROPERTIES},
		{"distributedInfo", FL_META_DISTRIBUTED_INFO}, {"displayTimeUnit", FL_META_DISPLAY_TIME_UNIT},
		{"baseTimeNanoseconds", FL_META_BASE_TIME},
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i].s) == n && !memcmp(keys[i].s, k, n))
			return keys[i].f;
	return 0;
}
