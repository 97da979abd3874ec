/* device_events.c — the event model of the device analyses: the sorting and
 * statistics helpers they share, and what a name or a cat tells them (kernel
 * type, step number, launch call, ...). See device_internal.h. */
#include "grader/analysis/device_internal.h"
#include "common/categories.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ small helpers */

void *dm_xalloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort(); /* as strbuf: out of memory is not recoverable here */
	return q;
}

/* qsort, and memcpy, that take n == 0 with a NULL pointer */
void dm_sort_n(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, sz, cmp);
}

void dm_copy_n(void *dst, const void *src, size_t bytes)
{
	if (bytes)
		memcpy(dst, src, bytes);
}

/* Stable LSD radix sort of (key, item) pairs by key: 8-bit digits, digits
 * that all keys share are skipped. Sorting is what the analyses spend their
 * time on; this keeps it linear and cache-friendly. */
void dm_radix_kv(struct kv *a, size_t n)
{
	if (n < 2)
		return;
	if (n < 48) { /* insertion sort: stable too */
		for (size_t i = 1; i < n; i++) {
			struct kv x = a[i];
			size_t q = i;
			for (; q > 0 && a[q - 1].k > x.k; q--)
				a[q] = a[q - 1];
			a[q] = x;
		}
		return;
	}
	/* only the bytes in which some keys differ need a pass */
	uint64_t vary = 0, k0 = a[0].k;
	int sorted = 1;
	for (size_t i = 0; i < n; i++) {
		vary |= a[i].k ^ k0;
		sorted &= i == 0 || a[i - 1].k <= a[i].k;
	}
	if (sorted)
		return;
	int digit[8], nd = 0;
	for (int d = 0; d < 8; d++)
		if ((vary >> (8 * d)) & 255)
			digit[nd++] = d;
	size_t (*cnt)[256] = calloc((size_t)nd, sizeof(*cnt));
	if (!cnt)
		abort();
	for (size_t i = 0; i < n; i++)
		for (int q = 0; q < nd; q++)
			cnt[q][(a[i].k >> (8 * digit[q])) & 255]++;
	struct kv *tmp = dm_xalloc(NULL, n * sizeof(*tmp)), *src = a, *dst = tmp;
	for (int q = 0; q < nd; q++) {
		int d = digit[q];
		size_t *c = cnt[q];
		size_t off = 0;
		for (int b = 0; b < 256; b++) {
			size_t t = c[b];
			c[b] = off;
			off += t;
		}
		for (size_t i = 0; i < n; i++)
			dst[c[(src[i].k >> (8 * d)) & 255]++] = src[i];
		struct kv *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(tmp);
	free(cnt);
}

/* order-preserving keys */
static uint64_t dkey(double d)
{
	if (d == 0)
		d = 0; /* -0.0 sorts with 0.0 */
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u >> 63 ? ~u : u | (1ull << 63);
}

/* Keys for times: when all are whole numbers (HTA's rounding) they sort as
 * small integers, which take fewer radix passes than double keys. */
void dm_time_keys(struct kv *a, size_t n, const double *v, size_t stride)
{
	double lo = INFINITY, hi = -INFINITY;
	int whole = 1;
	for (size_t i = 0; i < n; i++) {
		double x = *(const double *)(const void *)((const char *)v + i * stride);
		whole &= x == floor(x);
		if (x < lo) lo = x;
		if (x > hi) hi = x;
	}
	whole &= n == 0 || hi - lo < 9007199254740992.0;
	for (size_t i = 0; i < n; i++) {
		double x = *(const double *)(const void *)((const char *)v + i * stride);
		a[i] = (struct kv){whole ? (uint64_t)(x - lo) : dkey(x), (uint32_t)i};
	}
}

/* Reorder items (of size sz) by a permutation: out[k] = in[perm[k].i]. */
void dm_apply_perm(void *items, size_t sz, const struct kv *perm, size_t n)
{
	char *tmp = dm_xalloc(NULL, (n ? n : 1) * sz);
	for (size_t k = 0; k < n; k++)
		memcpy(tmp + k * sz, (char *)items + (size_t)perm[k].i * sz, sz);
	dm_copy_n(items, tmp, n * sz);
	free(tmp);
}

/* ------------------------------------------------------------- statistics
 * (to be replaced by common/stats.h) */

/* Sort doubles ascending (no NaN). */
void dm_sort_doubles(double *v, size_t n)
{
	struct kv *a = dm_xalloc(NULL, (n ? n : 1) * sizeof(*a));
	if (n)
		dm_time_keys(a, n, v, sizeof(*v));
	dm_radix_kv(a, n);
	double *o = dm_xalloc(NULL, (n ? n : 1) * sizeof(*o));
	for (size_t i = 0; i < n; i++)
		o[i] = v[a[i].i];
	dm_copy_n(v, o, n * sizeof(*v));
	free(o);
	free(a);
}

/* sample standard deviation (ddof 1); NaN for fewer than two values */
double dm_std_of(const double *v, size_t n)
{
	if (n < 2)
		return NAN;
	double m = fl_mean(v, n), s = 0;
	for (size_t i = 0; i < n; i++)
		s += (v[i] - m) * (v[i] - m);
	return sqrt(s / (double)(n - 1));
}

int dm_cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

/* position of x in sorted v, -1 if absent */
long dm_find_i32(const int32_t *v, size_t n, int32_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (v[m] < x)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < n && v[lo] == x ? (long)lo : -1;
}


/* --------------------------------------------------------- names and cats */

static int eq(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);
	return n == l && !memcmp(s, lit, l);
}

static int one_of(const char *s, size_t n, const char *const *list)
{
	for (; *list; list++)
		if (eq(s, n, *list))
			return 1;
	return 0;
}

static const char *find_mem(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);
	for (size_t i = 0; i + l <= n; i++)
		if (s[i] == lit[0] && !memcmp(s + i, lit, l))
			return s + i;
	return NULL;
}

static size_t first_line(const char *s, size_t n)
{
	const char *nl = memchr(s, '\n', n);
	return nl ? (size_t)(nl - s) : n;
}

/* HTA's get_kernel_type (hta/utils/utils.py), regexes read literally: `.`
 * does not match a newline. */
static int kernel_type(const char *s, size_t n)
{
	size_t l1 = first_line(s, n);
	int comm = n >= 4 && !memcmp(s, "nccl", 4) && l1 >= 4 && find_mem(s + 4, l1 - 4, "Kernel");
	if (comm)
		return KT_COMM;
	if ((n >= 6 && (!memcmp(s, "Memcpy", 6) || !memcmp(s, "Memset", 6))) || (n >= 3 && !memcmp(s, "dma", 3)))
		return KT_MEM;
	if (find_mem(s, l1, "Memcpy") || (n >= 6 && !memcmp(s, "Memset", 6)) || find_mem(s, l1, "Sync"))
		return KT_OTHER;
	return KT_COMP;
}

static int py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* ProfilerStep\s*#\s*(\d+) at the start of s; -1 when it does not match */
static long long step_number(const char *s, size_t n)
{
	if (n < 12 || memcmp(s, "ProfilerStep", 12))
		return -1;
	size_t i = 12;
	while (i < n && py_space((unsigned char)s[i]))
		i++;
	if (i >= n || s[i] != '#')
		return -1;
	i++;
	while (i < n && py_space((unsigned char)s[i]))
		i++;
	if (i >= n || !(s[i] >= '0' && s[i] <= '9'))
		return -1;
	long long v = 0;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		if (v < 100000000000000000ll)
			v = v * 10 + (s[i] - '0');
	return v;
}

static const char *const sync_names[] = {"Event Sync", "Context Sync", NULL};
static const char *const launch_names[] = {"cudaLaunchKernel", "cudaLaunchKernelExC",
					   "runFunction - job_prep_and_submit_for_execution", NULL};
static const char *const memlaunch_names[] = {"cudaMemsetAsync", "cudaMemcpyAsync", NULL};
static const char *const queue_names[] = {"cudaMemsetAsync", "cudaMemcpyAsync", "cudaLaunchKernel",
					  "cudaLaunchKernelExC", "cuLaunchKernel",
					  "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
					  "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
					  "hipMemcpyWithStream", NULL};
/* HTA's kernel categories: faultline's own (common/categories.h) and other writers' */
static const char *const kernel_cats[] = {FL_CATEGORY_KERNEL, "Kernel", FL_CATEGORY_GPU_MEMSET, "Memset",
					  FL_CATEGORY_GPU_MEMCPY, "Memcpy", "mtia_ccp_events", NULL};

uint16_t dm_name_flags(struct names *m, uint32_t id)
{
	if (id >= m->nnf) {
		size_t n = fl_strtab_count(m->strings) + 256;
		m->nf = dm_xalloc(m->nf, n * sizeof(*m->nf));
		m->stepnum = dm_xalloc(m->stepnum, n * sizeof(*m->stepnum));
		memset(m->nf + m->nnf, 0, (n - m->nnf) * sizeof(*m->nf));
		m->nnf = n;
	}
	uint16_t f = m->nf[id];
	if (f & NF_DONE)
		return f;
	const char *s = fl_strtab_str(m->strings, id);
	size_t n = fl_strtab_len(m->strings, id);
	f = NF_DONE;
	if (find_mem(s, n, "ProfilerStep"))
		f |= NF_HAS_PS;
	if (n >= 12 && !memcmp(s, "ProfilerStep", 12))
		f |= NF_STARTS_PS;
	m->stepnum[id] = step_number(s, n);
	if (m->stepnum[id] >= 0)
		f |= NF_STEP;
	if (one_of(s, n, sync_names))
		f |= NF_SYNC;
	if (one_of(s, n, launch_names))
		f |= NF_LAUNCH;
	if (one_of(s, n, memlaunch_names))
		f |= NF_MEMLAUNCH;
	if (one_of(s, n, queue_names))
		f |= NF_QUEUE;
	if (one_of(s, n, kernel_cats))
		f |= NF_KCAT;
	if (eq(s, n, "Trace"))
		f |= NF_TRACE;
	f |= (uint16_t)(kernel_type(s, n) << NF_KT_SHIFT);
	m->nf[id] = f;
	return f;
}


double fl_dm_json_bytes(const struct fl_dm_job *job) { return (double)job->json_bytes; }
uint64_t fl_dm_events(const struct fl_dm_job *job) { return job->events; }
