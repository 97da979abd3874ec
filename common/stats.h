/* stats.h — small statistics on arrays of doubles, shared by the analyses and
 * the generator's calibration.
 *
 * Conventions: "p50 upper" is sorted[n / 2] (the track's step p50); the median
 * is the true median (mean of the two middle values for even n); quantiles are
 * numpy's linear interpolation on sorted values. Empty inputs: the median and
 * the p50 read 0 (as the metrics report an empty trace), the mean and quantiles
 * NaN (a value that cannot be computed).
 */
#ifndef FL_STATS_H
#define FL_STATS_H

#include <stddef.h>

/* qsort comparator for doubles, ascending. */
int fl_cmp_double(const void *a, const void *b);
/* Sort v ascending in place (n may be 0 with v NULL). */
void fl_sort_doubles(double *v, size_t n);
/* A sorted copy of v (malloc'd, at least one element; the caller frees it). */
double *fl_sorted_copy(const double *v, size_t n);

double fl_p50_upper(const double *v, size_t n);
double fl_median(const double *v, size_t n);
double fl_mean(const double *v, size_t n);
/* numpy's linear quantile (q in [0, 1]) of sorted values. */
double fl_quantile_sorted(const double *sorted, size_t n, double q);

#endif
