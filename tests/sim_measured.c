/* tests/sim_measured.c - the simulator against recorded real runs: the
 * measurements of full `herd validate --rates` runs on the testbed (four
 * hosts, 1 Gbit/s to 50 Mbit/s, ring, tree and rhd all_reduces of 1 to
 * 64 MiB; tests/data/validate/) predicted again with `herd validate
 * --from`, which needs no root and no testbed. The model must stay about
 * as close to them as it was when they were recorded (median |error|
 * 0.6 and 0.4 %, where issue 17 asks for 3 %): a median within 1 %, a
 * p95 within a point of the recorded one, as many rows within 10 % as
 * then (47 and 45 of 48; the misses are rhd exchanges that TCP slowed in those
 * runs, BENCHMARKS.md "A quiet VM, idle restarts, and FIFO sending tried"). A
 * change that moves predictions away from the measurements fails here, wherever
 * it is built. */
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"

#define herd tu_herd

/* The "all\tall" line of summary.tsv: median and p95 |error| (%), the
 * rows within 10 % and how many rows. */
static void summary_all(const char *tsv, double *median, double *p95,
                        int *within, int *rows)
{
    const char *p = strstr(tsv, "\nall\tall\t");
    ck_assert_msg(p, "no 'all' line in %s", tsv);
    double max;
    int n = sscanf(p, "\nall\tall\t%d\t%lf\t%lf\t%lf\t%d", rows, median, p95,
                   &max, within);
    ck_assert_int_eq(n, 5);
}

/* Predict capture `name` again: its median and p95 |error| (%) at most
 * `median_max` and `p95_max`, at least `min_within` rows within 10 %. */
static void predict_again(const char *name, double median_max, double p95_max,
                          int min_within)
{
    char *out = NULL, *dir = tu_tmpdir(), args[2048], src[1024], rec[1024],
         rel[256];
    snprintf(rel, sizeof(rel), "validate/%s", name);
    snprintf(args, sizeof(args),
             "validate %s --rates 1Gbit,400Mbit,200Mbit,50Mbit --from %s "
             "-o %s/v",
             tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml"),
             tu_data_path(rec, sizeof(rec), rel), dir);
    int rc = herd(args, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(!strstr(out, "calibrating the links"), "%s", out);
    free(out);
    char *tsv = tu_read_in(dir, "v/summary.tsv");
    double median, p95;
    int within, rows;
    summary_all(tsv, &median, &p95, &within, &rows);
    ck_assert_int_eq(rows, 48);
    ck_assert_msg(median <= median_max, "median |error| %.2f %% > %.1f %%:\n%s",
                  median, median_max, tsv);
    ck_assert_msg(p95 <= p95_max, "p95 |error| %.2f %% > %.1f %%:\n%s", p95,
                  p95_max, tsv);
    ck_assert_msg(within >= min_within,
                  "%d of 48 rows within 10 %% (recorded: %d):\n%s", within,
                  min_within, tsv);
    free(tsv);
    tu_tmpdir_free(dir);
}

START_TEST(recorded_quiet_vm_run1)
{
    /* recorded: median 0.63 %, p95 4.65 %, 47 */
    predict_again("s11-run1", 1.0, 5.5, 47);
}
END_TEST

START_TEST(recorded_quiet_vm_run2)
{
    /* recorded: median 0.45 %, p95 10.42 %, 45 */
    predict_again("s11-run2", 1.0, 11.0, 45);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_measured");
    TCase *tc = tcase_create("recorded");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, recorded_quiet_vm_run1);
    tcase_add_test(tc, recorded_quiet_vm_run2);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
