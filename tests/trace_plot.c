/* tests/trace_plot.c - the gnuplot runner and scripts: sweep.gp and
 * compare.gp write PNG and SVG; file names with quotes, blanks and ';'
 * reach gnuplot untouched (fork/exec, no shell); a missing gnuplot or
 * script is a clear error. Skipped (77) without gnuplot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/testutil.h"
#include "trace/plot.h"

/* Remove a test's temporary folder (made by tu_tmpdir: safe characters). */
static void rm_dir(char *dir)
{
    char cmd[1100];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

#define PLOTS(buf) tu_src_path(buf, sizeof(buf), "plots")

static int is_png(const char *path)
{
    unsigned char b[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(b, 1, 4, f);
    fclose(f);
    return n == 4 && b[0] == 0x89 && b[1] == 'P' && b[2] == 'N' && b[3] == 'G';
}

START_TEST(test_sweep_odd_names)
{
    char *dir = tu_tmpdir(), data[1024], prefix[1024], png[1100], err[512];
    char pl[1024];
    snprintf(data, sizeof(data), "%s/it's a \"sweep\"; rm -rf x.tsv", dir);
    snprintf(prefix, sizeof(prefix), "%s/out 'q'", dir);
    FILE *f = fopen(data, "w");
    fputs("bucket_cap_mb\tstep_ms\texposed_ms\n1\t12\t3\n5\t10\t1\n25\t11\t2\n",
          f);
    fclose(f);
    const char *args[] = {data, prefix, "title \"x\" ' y", "bucket_cap_mb",
                          "log"};
    ck_assert_msg(
        trace_plot_run(PLOTS(pl), "sweep.gp", args, 5, err, sizeof(err)) == 0,
        "%s", err);
    snprintf(png, sizeof(png), "%s.png", prefix);
    ck_assert(is_png(png));
    snprintf(png, sizeof(png), "%s.svg", prefix);
    ck_assert_int_eq(access(png, R_OK), 0);
    rm_dir(dir);
}
END_TEST

START_TEST(test_compare_plot)
{
    char *dir = tu_tmpdir(), data[1024], prefix[1024], png[1100], err[512];
    char pl[1024];
    snprintf(data, sizeof(data), "%s/pairs.tsv", dir);
    snprintf(prefix, sizeof(prefix), "%s/cmp", dir);
    FILE *f = fopen(data, "w");
    fputs("all_reduce\tpred_us\tmeas_us\nall_reduce\t10\t12\nall_reduce\t100\t"
          "90\n\n\ncompute\tpred_us\tmeas_us\ncompute\t1000\t1010\n",
          f);
    fclose(f);
    const char *args[] = {data, prefix, "cmp"};
    ck_assert_msg(
        trace_plot_run(PLOTS(pl), "compare.gp", args, 3, err, sizeof(err)) == 0,
        "%s", err);
    snprintf(png, sizeof(png), "%s.png", prefix);
    ck_assert(is_png(png));
    rm_dir(dir);
}
END_TEST

START_TEST(test_errors)
{
    char err[512], pl[1024];
    const char *args[] = {"/nonexistent.tsv", "/tmp/x"};
    ck_assert_int_eq(
        trace_plot_run(PLOTS(pl), "nope.gp", args, 2, err, sizeof(err)),
        HERD_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err, "nope.gp"), "%s", err);
    ck_assert_int_eq(
        trace_plot_run(PLOTS(pl), "sweep.gp", args, 2, err, sizeof(err)),
        HERD_ERR_IO); /* gnuplot fails on the missing file */
    ck_assert_msg(strstr(err, "gnuplot sweep.gp failed"), "%s", err);
    setenv("PATH", "/nonexistent", 1);
    ck_assert_int_eq(trace_plot_available(), 0);
    ck_assert_int_eq(
        trace_plot_run(PLOTS(pl), "sweep.gp", args, 2, err, sizeof(err)),
        HERD_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err, "gnuplot not found") &&
                      strstr(err, "gnuplot-nox"),
                  "%s", err);
}
END_TEST

int main(void)
{
    if (!trace_plot_available()) {
        fprintf(stderr, "trace_plot: gnuplot not installed; skipped\n");
        return 77;
    }
    Suite *s = suite_create("trace_plot");
    TCase *tc = tcase_create("plot");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sweep_odd_names);
    tcase_add_test(tc, test_compare_plot);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
