/* tests/testbed_validate.c - the prediction-against-measurement loop on
 * the testbed: calibrate writes a cluster section with a fit, and
 * validate runs sim + tcp + compare and writes its report with numbers.
 * Asserts that the loop runs and reports, not timing bounds. Skips (77)
 * when not root or without network namespaces. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real/testbed/testbed.h"
#include "support/testutil.h"

/* `herd ARGS`, output captured. */
#define herd tu_herd

/* `herd validate` of the shipped testbed scenario on 2 hosts at 200
 * Mbit/s into DIR/v, with `extra` options and one 64 KiB .. max sweep of
 * `iters` (no warm-up); returns the exit code, output in *out. */
static int validate_small(const char *dir, const char *extra, const char *max,
                          int iters, char **out)
{
    char args[2048], src[1024];
    snprintf(args, sizeof(args),
             "validate %s --hosts 2 --bandwidth 200Mbit -o %s/v %s "
             "--set workload.sweep.min=64KiB --set workload.sweep.max=%s "
             "--set workload.sweep.iters=%d --set workload.sweep.warmup=0 "
             "--timeout 120",
             tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml"),
             dir, extra, max, iters);
    return herd(args, out);
}

/* Field `col` (1: the collective) of the report row that starts with
 * `row`, into buf; 0 when found. */
static int report_field(const char *md, const char *row, int col, char *buf,
                        size_t len)
{
    const char *p = strstr(md, row);
    for (int k = 0; p && k < col; k++)
        p = strchr(p + 1, '|');
    const char *end = p ? strchr(p + 1, '|') : NULL;
    if (!end || (size_t)(end - p) > len)
        return 1;
    snprintf(buf, len, "%.*s", (int)(end - p - 1), p + 1);
    return 0;
}

START_TEST(calibrate_writes_cluster)
{
    char *out = NULL, *dir = tu_tmpdir(), args[1024];
    ck_assert_int_eq(herd("testbed up --hosts 2 --bandwidth 200Mbit", &out), 0);
    free(out);
    snprintf(args, sizeof(args),
             "testbed run --timeout 60 -- %s calibrate -e 1MiB -n 3 -o "
             "%s/cal.yaml",
             tu_herd_binary(), dir);
    ck_assert_int_eq(herd(args, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "max residual"));
    free(out);
    snprintf(args, sizeof(args), "%s/cal.yaml", dir);
    char *yaml = tu_read_file(args);
    ck_assert_ptr_nonnull(yaml);
    ck_assert_ptr_nonnull(strstr(yaml, "nodes: 2"));
    ck_assert_ptr_nonnull(strstr(yaml, "inter: {bandwidth:"));
    /* the testbed's tbf passes a burst (128 KiB at 200 Mbit/s): the fit
     * finds a token bucket of about that size */
    const char *b = strstr(yaml, "burst: ");
    ck_assert_msg(b, "%s", yaml);
    double burst = strtod(b + 7, NULL);
    ck_assert_msg(burst >= 32768 && burst <= 524288, "%s", yaml);
    free(yaml);
    snprintf(args, sizeof(args), "check %s/cal.yaml", dir);
    ck_assert_int_eq(herd(args, &out), 0); /* a valid scenario */
    free(out);
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);
    free(dir);
}
END_TEST

/* --from: the same measurements predicted again, with no testbed up.
 * Unchanged, the report's rows are the first run's; predicted with the
 * scenario's links instead of the calibrated ones (400 against 200
 * Mbit/s), every row's measured column stays and its prediction moves. */
static void validate_again(const char *dir)
{
    char *out = NULL, args[2048], src[1024], a[64], b[64];
    const char *row = "| all_reduce | ring | 64 KiB |";
    tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml");
    const char *opts = "--colls all_reduce,broadcast --hosts 2 "
                       "--set workload.sweep.min=64KiB --set "
                       "workload.sweep.max=256KiB --set "
                       "workload.sweep.iters=2 --set workload.sweep.warmup=0";
    snprintf(args, sizeof(args), "validate %s %s --from %s/v -o %s/w", src,
             opts, dir, dir);
    ck_assert_int_eq(herd(args, &out), 0);
    ck_assert_msg(strstr(out, "taking the earlier measurements"), "%s", out);
    ck_assert_msg(!strstr(out, "calibrating the links"), "%s", out);
    free(out);
    char *v = tu_read_in(dir, "v/report.md"),
         *w = tu_read_in(dir, "w/report.md");
    ck_assert_ptr_nonnull(strstr(w, "Measured earlier (`--from "));
    const char *rows_v = strstr(v, "| collective"),
               *rows_w = strstr(w, "| collective");
    ck_assert_ptr_nonnull(rows_v);
    ck_assert_ptr_nonnull(rows_w);
    ck_assert_str_eq(rows_v, rows_w); /* every row, and the footer */
    free(w);
    snprintf(args, sizeof(args),
             "validate %s %s --from %s/v -o %s/x --no-calibrate", src, opts,
             dir, dir);
    ck_assert_int_eq(herd(args, &out), 0);
    free(out);
    w = tu_read_in(dir, "x/report.md");
    ck_assert_int_eq(report_field(v, row, 6, a, sizeof(a)), 0);
    ck_assert_int_eq(report_field(w, row, 6, b, sizeof(b)), 0);
    ck_assert_str_eq(a, b); /* measured (ms) */
    ck_assert_int_eq(report_field(v, row, 5, a, sizeof(a)), 0);
    ck_assert_int_eq(report_field(w, row, 5, b, sizeof(b)), 0);
    ck_assert_str_ne(a, b); /* predicted (ms) */
    free(w);
    free(v);
}

START_TEST(validate_loop_reports)
{
    char *out = NULL, *dir = tu_tmpdir(), args[2048];
    ck_assert_int_eq(
        validate_small(dir,
                       "--colls all_reduce,broadcast --calibrate-bytes 1MiB",
                       "256KiB", 2, &out),
        0);
    ck_assert_ptr_nonnull(strstr(out, "median |error|"));
    ck_assert_ptr_nonnull(strstr(out, "calibrated inter link"));
    /* tbf's bucket, fitted, goes into the prediction */
    ck_assert_msg(strstr(out, ", burst "), "%s", out);
    /* what compute costs the links only with --comm-cpu */
    ck_assert_msg(!strstr(out, "slower beside compute"), "%s", out);
    free(out);
    snprintf(args, sizeof(args), "%s/v/report.md", dir);
    char *md = tu_read_file(args);
    ck_assert_ptr_nonnull(md);
    ck_assert_ptr_nonnull(strstr(md, "| all_reduce | ring | 64 KiB |"));
    ck_assert_ptr_nonnull(strstr(md, "| broadcast |"));
    ck_assert_ptr_nonnull(strstr(md, "median |error|"));
    /* and the hosts' TCP: Linux's slow start after idle unless asked */
    ck_assert_msg(strstr(md, ", slow start after idle on)"), "%s", md);
    /* the report names every calibrated setting the prediction got */
    ck_assert_msg(strstr(md, ", cluster.inter.latency=") &&
                      strstr(md, ", cluster.inter.burst="),
                  "%s", md);
    /* both sides' step records, compared per step */
    ck_assert_msg(strstr(md, "steps: [all_reduce/steps.md]") &&
                      strstr(md, "steps: [broadcast/steps.md]"),
                  "%s", md);
    free(md);
    md = tu_read_in(dir, "v/all_reduce/steps.md");
    ck_assert_ptr_nonnull(md);
    ck_assert_msg(strstr(md, "| all_reduce | ring | 65536 | ") &&
                      strstr(md, "| all_reduce | rhd | 262144 | "),
                  "%s", md);
    free(md);
    snprintf(args, sizeof(args), "%s/v/all_reduce/compare/compare.tsv", dir);
    FILE *f = fopen(args, "r");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    herd("testbed down", &out); /* validate took it down; stays idempotent */
    free(out);
    validate_again(dir);
    free(dir);
}
END_TEST

/* A calibration whose bandwidth is far from what TCP gets on the shaped
 * link is measured again, then kept with a warning: a sweep up to 64 KiB
 * stays inside tbf's 128 KiB burst and cannot see the 200 Mbit/s. With
 * --comm-cpu, its all_reduces are too short to tell what compute costs
 * them: not measured, and the log says so. The hosts keep their windows
 * through idle periods when asked, and the report says so: a testbed of
 * the same links with Linux's restarts, up before, is not reused. */
START_TEST(validate_calibration_disturbed)
{
    char *out = NULL, *dir = tu_tmpdir();
    ck_assert_int_eq(herd("testbed up --hosts 2 --bandwidth 200Mbit", &out), 0);
    ck_assert_msg(strstr(out, "slow start after idle on"), "%s", out);
    free(out);
    ck_assert_int_eq(
        validate_small(dir,
                       "--colls all_reduce --calibrate-bytes 64KiB --comm-cpu "
                       "--slow-start-after-idle off",
                       "64KiB", 1, &out),
        0);
    const char *again = strstr(out, "on the shaped link");
    ck_assert_msg(again && strstr(again, ": calibrating again"), "%s", out);
    ck_assert_msg(strstr(out, "validate: warning: the calibrated bandwidth"),
                  "%s", out);
    ck_assert_msg(!strstr(out, "slower beside compute"), "%s", out);
    free(out);
    char *log = tu_read_in(dir, "v/calibration.log");
    ck_assert_msg(strstr(log, "compute_comm_slowdown not measured"), "%s", log);
    free(log);
    char *md = tu_read_in(dir, "v/report.md");
    ck_assert_msg(md && strstr(md, ", slow start after idle off)"), "%s", md);
    free(md);
    herd("testbed down", &out);
    free(out);
    tu_tmpdir_free(dir);
}
END_TEST

START_TEST(validate_bad_input)
{
    char *out = NULL;
    ck_assert_int_eq(herd("validate", &out), 2);
    free(out);
    ck_assert_int_eq(herd("validate /nonexistent.yaml -o /tmp/x", &out), 2);
    free(out);
    ck_assert_int_eq(herd("calibrate --engine sim", &out), 2);
    free(out);
    ck_assert_int_eq(herd("validate x.yaml -o /tmp/x --slow-start-after-idle "
                          "sometimes",
                          &out),
                     2);
    ck_assert_msg(strstr(out, "takes on or off, not 'sometimes'"), "%s", out);
    free(out);
    /* --from a directory that holds no validation: says what is missing */
    char *dir = tu_tmpdir(), args[2048], src[1024];
    snprintf(args, sizeof(args), "validate %s --from %s -o %s/o",
             tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml"),
             dir, dir);
    ck_assert_int_eq(herd(args, &out), 1);
    ck_assert_msg(strstr(out, "no all_reduce/trace.json"), "%s", out);
    free(out);
    /* --torch needs a DDP scenario, from DIR or not */
    snprintf(args, sizeof(args), "validate %s --from %s -o %s/o --torch", src,
             dir, dir);
    ck_assert_int_eq(herd(args, &out), 2);
    ck_assert_msg(strstr(out, "runs a DDP job"), "%s", out);
    free(out);
    /* never into the directory it reads */
    snprintf(args, sizeof(args), "validate %s --from %s -o %s/.", src, dir,
             dir);
    ck_assert_int_eq(herd(args, &out), 2);
    ck_assert_msg(strstr(out, "is the -o directory"), "%s", out);
    free(out);
    tu_tmpdir_free(dir);
}
END_TEST

int main(void)
{
    char why[256];
    if (testbed_probe(why, sizeof(why)) != HERD_OK) {
        fprintf(stderr, "skip: %s\n", why);
        return 77;
    }
    /* This suite's own testbed instance: one someone else brought up on
     * this machine is never touched. */
    char id[32];
    snprintf(id, sizeof(id), "tv%ld", (long)getpid());
    setenv("HERD_TESTBED_ID", id, 1);
    Suite *s = suite_create("testbed_validate");
    TCase *tc = tcase_create("loop");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, validate_bad_input);
    tcase_add_test(tc, calibrate_writes_cluster);
    tcase_add_test(tc, validate_loop_reports);
    tcase_add_test(tc, validate_calibration_disturbed);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
