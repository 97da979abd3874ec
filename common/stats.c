#include "common/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int fl_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void fl_sort_doubles(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), fl_cmp_double);
}

double *fl_sorted_copy(const double *v, size_t n)
{
	double *s = calloc(n ? n : 1, sizeof(*s));
	if (!s)
		abort(); /* as strbuf: out of memory is not recoverable here */
	if (n)
		memcpy(s, v, n * sizeof(*s));
	fl_sort_doubles(s, n);
	return s;
}

double fl_p50_upper(const double *v, size_t n)
{
	if (!n)
		return 0;
	double *s = fl_sorted_copy(v, n);
	double r = s[n / 2];
	free(s);
	return r;
}

double fl_median(const double *v, size_t n)
{
	if (!n)
		return 0;
	double *s = fl_sorted_copy(v, n);
	double r = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return r;
}

double fl_mean(const double *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : NAN;
}

double fl_quantile_sorted(const double *v, size_t n, double q)
{
	if (!n)
		return NAN;
	double pos = q * (double)(n - 1);
	size_t lo = (size_t)floor(pos);
	size_t hi = lo + 1 < n ? lo + 1 : lo;
	double t = pos - (double)lo, a = v[lo], b = v[hi], d = b - a;
	return t >= 0.5 ? b - d * (1 - t) : a + d * t;
}
