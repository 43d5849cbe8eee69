/* core/stats.h - order statistics of measured and predicted times.
 *
 * Reports, fits and imports summarise samples by their median and by a
 * percentile; one definition of each keeps every table herd prints on
 * the same convention. The functions sort in place (the caller's array),
 * as qsort does, and allocate nothing. */
#ifndef HERD_CORE_STATS_H
#define HERD_CORE_STATS_H

#include <stddef.h>

/* qsort comparator: doubles in ascending order. */
int core_cmp_double(const void *a, const void *b);

/* Median of v[0..n): sorts v; the mean of the two middle values when n
 * is even; 0 when n is 0. */
double core_median(double *v, size_t n);

/* The upper median v[n / 2] after sorting v (one of the samples, never
 * a mean of two); 0 when n is 0. */
double core_median_upper(double *v, size_t n);

/* Quantile q (0 < q <= 1) of sorted v[0..n) by nearest rank: the
 * ceil(q n)-th smallest; 0 when n is 0. */
double core_quantile_sorted(const double *v, size_t n, double q);

#endif
