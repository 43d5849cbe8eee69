/* tests/testbed_rates.c - `herd validate --rates`: one validation per link
 * rate on the testbed, then the summary table (per rate and algorithm:
 * rows, median, p95 and max |error|, rows within 10 %), the points file
 * and the plot of predicted against measured. Asserts the files and their
 * structure, not the numbers (no timing bounds). Skips (77) when not root
 * or without network namespaces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real/testbed/testbed.h"
#include "support/testutil.h"

#define herd tu_herd

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

START_TEST(rates_summary)
{
    char *out = NULL, *dir = tu_tmpdir(), args[2048], src[1024], path[1200];
    snprintf(args, sizeof(args),
             "validate %s --hosts 2 --rates 100Mbit,400Mbit -o %s/v "
             "--colls all_reduce --calibrate-bytes 1MiB "
             "--set workload.sweep.min=64KiB --set workload.sweep.max=256KiB "
             "--set workload.sweep.iters=2 --set workload.sweep.warmup=0 "
             "--timeout 120",
             tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml"),
             dir);
    int rc = herd(args, &out);
    if (rc != 0)
        fprintf(stderr, "%s\n", out);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(out, "validate: == 100Mbit"));
    ck_assert_ptr_nonnull(strstr(out, "validate: == 400Mbit"));
    ck_assert_ptr_nonnull(strstr(out, "over 2 rates, median |error|"));
    free(out);
    /* each rate's own validation */
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/v/%s/report.md", dir,
                 i ? "400Mbit" : "100Mbit");
        ck_assert_int_eq(access(path, R_OK), 0);
    }
    snprintf(path, sizeof(path), "%s/v/summary.md", dir);
    char *md = tu_read_file(path);
    ck_assert_ptr_nonnull(md);
    ck_assert_ptr_nonnull(strstr(md, "| rate | algorithm | rows | median "
                                     "|error| | p95 |error| | max |error| "
                                     "| within 10% | within the measured "
                                     "p10 - p90 |"));
    /* every rate x algorithm of the sweep (ring, tree, rhd) */
    static const char *rows[] = {"| 100Mbit | ring |", "| 100Mbit | tree |",
                                 "| 100Mbit | rhd |",  "| 400Mbit | ring |",
                                 "| 400Mbit | tree |", "| 400Mbit | rhd |",
                                 "| all | all |"};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        ck_assert_msg(strstr(md, rows[i]), "summary.md lacks %s", rows[i]);
    free(md);
    snprintf(path, sizeof(path), "%s/v/summary.tsv", dir);
    char *tsv = tu_read_file(path);
    ck_assert_ptr_nonnull(tsv);
    ck_assert_ptr_nonnull(strstr(tsv, "rate\talgorithm\trows\tmedian_err_pct"
                                      "\tp95_err_pct\tmax_err_pct\t"
                                      "within_10pct\twithin_meas_p10_p90\n"));
    ck_assert_int_eq(count(tsv, "\n"), 1 + 6 + 1);
    free(tsv);
    /* --from: each rate predicted again from its own measurements, with
     * no testbed: the same summary, to the digit */
    snprintf(args, sizeof(args),
             "validate %s --hosts 2 --rates 100Mbit,400Mbit -o %s/w "
             "--from %s/v --colls all_reduce "
             "--set workload.sweep.min=64KiB --set workload.sweep.max=256KiB "
             "--set workload.sweep.iters=2 --set workload.sweep.warmup=0",
             src, dir, dir);
    ck_assert_int_eq(herd(args, &out), 0);
    ck_assert_msg(!strstr(out, "calibrating"), "%s", out);
    free(out);
    tsv = tu_read_in(dir, "v/summary.tsv");
    char *again = tu_read_in(dir, "w/summary.tsv");
    ck_assert_ptr_nonnull(again);
    ck_assert_str_eq(tsv, again);
    free(again);
    free(tsv);
    /* points: one block per rate, each with its title line */
    snprintf(path, sizeof(path), "%s/v/points.tsv", dir);
    char *pts = tu_read_file(path);
    ck_assert_ptr_nonnull(pts);
    ck_assert_int_eq(count(pts, "\tpredicted_ms\tmeasured_ms\t"), 2);
    ck_assert_ptr_nonnull(strstr(pts, "\n\n\n400Mbit\tpredicted_ms"));
    ck_assert_ptr_nonnull(strstr(pts, "\n100Mbit\t"));
    free(pts);
    if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
        snprintf(path, sizeof(path), "%s/v/summary.png", dir);
        ck_assert_int_eq(access(path, R_OK), 0);
        snprintf(path, sizeof(path), "%s/v/summary.svg", dir);
        ck_assert_int_eq(access(path, R_OK), 0);
    }
    herd("testbed down", &out);
    free(out);
    free(dir);
}
END_TEST

START_TEST(rates_bad_usage)
{
    char *out = NULL;
    ck_assert_int_eq(
        herd("validate s.yaml -o d --rates 50Mbit --nproc 2", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "not with --nproc"));
    free(out);
    ck_assert_int_eq(herd("validate s.yaml -o d --rates 50Mbit,fast", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "bad rate 'fast'"));
    free(out);
    ck_assert_int_eq(herd("validate s.yaml -o d --rates 50Mbit "
                          "--calibration c.yaml",
                          &out),
                     2);
    free(out);
}
END_TEST

int main(void)
{
    char why[256];
    if (testbed_probe(why, sizeof(why)) != HERD_OK) {
        fprintf(stderr, "skip: %s\n", why);
        return 77;
    }
    char id[32];
    snprintf(id, sizeof(id), "tr%ld", (long)getpid());
    setenv("HERD_TESTBED_ID", id, 1);
    Suite *s = suite_create("testbed_rates");
    TCase *tc = tcase_create("rates");
    tcase_set_timeout(tc, 500);
    tcase_add_test(tc, rates_bad_usage);
    tcase_add_test(tc, rates_summary);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
