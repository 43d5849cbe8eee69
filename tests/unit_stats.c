/* tests/unit_stats.c - the order statistics every report shares
 * (core/stats.h): the median's convention for even counts, the upper
 * median, nearest-rank quantiles, and empty input. */
#include <stdlib.h>

#include "core/stats.h"
#include "support/testutil.h"

START_TEST(test_median_odd_even)
{
    double odd[] = {5, 1, 3};
    ck_assert_double_eq(core_median(odd, 3), 3);
    ck_assert_double_eq(odd[0], 1); /* sorted in place */
    ck_assert_double_eq(odd[2], 5);
    double even[] = {4, 1, 3, 2};
    ck_assert_double_eq(core_median(even, 4), 2.5);
    double one[] = {-7};
    ck_assert_double_eq(core_median(one, 1), -7);
    ck_assert_double_eq(core_median(NULL, 0), 0);
}
END_TEST

START_TEST(test_median_upper)
{
    double even[] = {4, 1, 3, 2};
    ck_assert_double_eq(core_median_upper(even, 4), 3); /* a sample */
    double odd[] = {9, -1, 0};
    ck_assert_double_eq(core_median_upper(odd, 3), 0);
    ck_assert_double_eq(core_median_upper(NULL, 0), 0);
}
END_TEST

START_TEST(test_quantile_nearest_rank)
{
    double v[20];
    for (int i = 0; i < 20; i++)
        v[i] = 19 - i;
    qsort(v, 20, sizeof(double), core_cmp_double);
    ck_assert_double_eq(v[0], 0);
    ck_assert_double_eq(core_quantile_sorted(v, 20, 0.95), 18); /* 19th */
    ck_assert_double_eq(core_quantile_sorted(v, 20, 0.5), 9);   /* 10th */
    ck_assert_double_eq(core_quantile_sorted(v, 20, 1.0), 19);
    ck_assert_double_eq(core_quantile_sorted(v, 20, 0.0), 0);
    ck_assert_double_eq(core_quantile_sorted(v, 1, 0.95), 0);
    ck_assert_double_eq(core_quantile_sorted(NULL, 0, 0.95), 0);
}
END_TEST

START_TEST(test_cmp_double)
{
    double a = 1, b = 2;
    ck_assert_int_lt(core_cmp_double(&a, &b), 0);
    ck_assert_int_gt(core_cmp_double(&b, &a), 0);
    ck_assert_int_eq(core_cmp_double(&a, &a), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tcase_create("stats");
    tcase_add_test(tc, test_median_odd_even);
    tcase_add_test(tc, test_median_upper);
    tcase_add_test(tc, test_quantile_nearest_rank);
    tcase_add_test(tc, test_cmp_double);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
