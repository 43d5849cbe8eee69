/* core/stats.c - order statistics (core/stats.h). */
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>

int core_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double core_median(double *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), core_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double core_median_upper(double *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), core_cmp_double);
    return v[n / 2];
}

double core_quantile_sorted(const double *v, size_t n, double q)
{
    if (!n)
        return 0;
    size_t i = (size_t)ceil(q * (double)n);
    if (i > n)
        i = n;
    return v[i ? i - 1 : 0];
}
