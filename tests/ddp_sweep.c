/* tests/ddp_sweep.c - `herd sweep`: a bucket_cap_mb sweep of gpt2_small
 * on 4 x 8 GPUs prints a table with the best row marked, a
 * recommendation (the scenario's own value when it is within the
 * tolerance of the best), a TSV and a plot, and shows the trade-off (the
 * smallest and the largest buckets are both slower than the best); any scenario
 * key can be swept, several keys give their cross product; a validation's
 * points give the model's uncertainty (--uncertainty); bad input fails
 * cleanly. */
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"

static char *sweep(const char *args, int want_rc, char *dir_out)
{
    char scn[1024], cmd[4096], *out = NULL;
    char *dir = tu_tmpdir();
    snprintf(cmd, sizeof(cmd),
             "cd %s && HERD_PROGRESS=1 %s sweep %s %s --out %s/out 2>&1", dir,
             tu_herd_binary(),
             tu_src_path(scn, sizeof(scn), "scenarios/ddp-gpt2-4n.yaml"), args,
             dir);
    int rc = tu_run(cmd, &out);
    ck_assert_msg(rc == want_rc, "rc %d (want %d): %s", rc, want_rc, out);
    if (dir_out)
        snprintf(dir_out, 1024, "%s", dir);
    free(dir);
    return out;
}

/* Column `col` (0-based, whitespace separated) of the TSV row whose first
 * field is `value`. */
static double tsv_value(const char *dir, const char *value, int col)
{
    char path[1200], line[512];
    snprintf(path, sizeof(path), "%s/out/sweep.tsv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no %s", path);
    double v = -1;
    while (fgets(line, sizeof(line), f)) {
        char *save = NULL, *tok = strtok_r(line, "\t\n", &save);
        if (!tok || strcmp(tok, value))
            continue;
        for (int c = 0; c < col && tok; c++)
            tok = strtok_r(NULL, "\t\n", &save);
        v = tok ? atof(tok) : -1;
    }
    fclose(f);
    return v;
}

START_TEST(test_bucket_cap_tradeoff)
{
    char dir[1024];
    char *out =
        sweep("--set ddp.bucket_cap_mb=1,2,5,10,25,50,100 --jobs 2", 0, dir);
    ck_assert_ptr_nonnull(strstr(out, "sweep of"));
    ck_assert_ptr_nonnull(strstr(out, "\n* "));
    ck_assert_ptr_nonnull(strstr(out, "recommendation: "));
    ck_assert_ptr_nonnull(strstr(out, "[####"));
    /* read the best value from the row marked * */
    const char *row = strstr(out, "\n* ");
    char best[32];
    ck_assert_int_eq(sscanf(row, "\n* %31s", best), 1);
    double s_best = tsv_value(dir, best, 1);
    double s1 = tsv_value(dir, "1", 1), s100 = tsv_value(dir, "100", 1);
    double e_best = tsv_value(dir, best, 2), e100 = tsv_value(dir, "100", 2);
    ck_assert_double_gt(s_best, 0);
    /* small buckets pay per-bucket latency, very large ones lose overlap */
    ck_assert_double_gt(s1, s_best);
    ck_assert_double_gt(s100, s_best);
    ck_assert_double_gt(e100, e_best);
    ck_assert_double_gt(tsv_value(dir, "1", 5), tsv_value(dir, "100", 5));
    free(out);
}
END_TEST

/* The values within the tolerance of the best are marked (table, TSV)
 * and, as the scenario's own value (25) is among them by default, the
 * recommendation keeps it; with no tolerance it names the best. */
START_TEST(test_tolerance)
{
    static const char *const vals[] = {"1", "5", "25", "100"};
    const double tols[] = {2, 0};
    for (int k = 0; k < 2; k++) {
        char dir[1024], args[128];
        snprintf(args, sizeof(args),
                 "--set ddp.bucket_cap_mb=1,5,25,100 %s --jobs 1",
                 k ? "--tolerance 0" : "");
        char *out = sweep(args, 0, dir);
        double best = 1e300, step[4];
        for (int i = 0; i < 4; i++) {
            step[i] = tsv_value(dir, vals[i], 1);
            best = step[i] < best ? step[i] : best;
        }
        int best_i = 0, cur_in = 0;
        for (int i = 0; i < 4; i++) {
            int in = step[i] <= best * (1 + tols[k] / 100);
            ck_assert_msg((int)tsv_value(dir, vals[i], 6) == in,
                          "%s: within %d\n%s", vals[i], in, out);
            best_i = step[i] == best ? i : best_i;
            cur_in |= in && i == 2;
        }
        ck_assert_msg(strstr(out, " ok (the scenario's value)\n"), "%s", out);
        char want[256];
        snprintf(want, sizeof(want), "* best, = within %g%% of the best",
                 tols[k]);
        ck_assert_msg(strstr(out, want), "%s", out);
        if (k == 0) /* the 4-node case: 25 MiB is within 2 % */
            ck_assert_msg(cur_in, "%s", out);
        if (cur_in)
            snprintf(want, sizeof(want),
                     "recommendation: keep ddp.bucket_cap_mb=25 (the "
                     "scenario's value)");
        else
            snprintf(want, sizeof(want),
                     "recommendation: ddp.bucket_cap_mb=%s: step %.3f ms",
                     vals[best_i], best);
        ck_assert_msg(strstr(out, want), "want '%s' in\n%s", want, out);
        free(out);
    }
    char *out = sweep("--set ddp.bucket_cap_mb=1,5 --tolerance -1", 2, NULL);
    ck_assert_msg(strstr(out, "--tolerance '-1'"), "%s", out);
    free(out);
}
END_TEST

/* --uncertainty: a validation's points (here 5, with errors of 1, 2, 30,
 * 4 and 50 %: median 4 %, p95 50 %) are summed up in the report, and the
 * values within the median of the best are marked ~. */
START_TEST(test_uncertainty)
{
    char *dir = tu_tmpdir(), path[1100], args[1400];
    snprintf(path, sizeof(path), "%s/points.tsv", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("rate\tpredicted_ms\tmeasured_ms\tcollective\n"
          "50Mbit\t101\t100\tall_reduce\n50Mbit\t98\t100\tall_reduce\n"
          "50Mbit\t130\t100\tall_reduce\n50Mbit\t104\t100\tall_reduce\n"
          "50Mbit\t50\t100\tall_reduce\n",
          f);
    fclose(f);
    snprintf(args, sizeof(args),
             "--set ddp.bucket_cap_mb=1,5,25,100 --jobs 1 --tolerance 0 "
             "--uncertainty %s",
             dir); /* the directory: its points.tsv */
    char sd[1024];
    char *out = sweep(args, 0, sd);
    ck_assert_msg(strstr(out, "model uncertainty: 5 validation points in ") &&
                      strstr(out, "median |error| 4.0%, p95 50.0%"),
                  "%s", out);
    ck_assert_msg(strstr(out, "~ within the model's median |error| (4.0%)"),
                  "%s", out);
    /* every row within 4 % of the best, and no other, is marked ~ */
    static const char *const vals[] = {"1", "5", "25", "100"};
    double best = 1e300, step[4];
    for (int i = 0; i < 4; i++) {
        step[i] = tsv_value(sd, vals[i], 1);
        best = step[i] < best ? step[i] : best;
    }
    for (int i = 0; i < 4; i++) {
        char row[64];
        snprintf(row, sizeof(row), "\n~ %16s", vals[i]);
        int marked = strstr(out, row) != NULL;
        int want = step[i] > best && step[i] <= best * 1.04;
        ck_assert_msg(marked == want, "%s: ~ %d, want %d\n%s", vals[i], marked,
                      want, out);
    }
    free(out);
    /* a bad point: file, line and column */
    f = fopen(path, "w");
    fputs("predicted_ms\tmeasured_ms\n1\t2\n3\tlots\n", f);
    fclose(f);
    snprintf(args, sizeof(args), "--set ddp.bucket_cap_mb=1,5 --uncertainty %s",
             path);
    out = sweep(args, 2, NULL);
    ck_assert_msg(strstr(out, "points.tsv:3:3: expected a predicted and a "
                              "measured time"),
                  "%s", out);
    free(out);
    f = fopen(path, "w");
    fputs("a\tb\n1\t2\n", f);
    fclose(f);
    out = sweep(args, 2, NULL);
    ck_assert_msg(strstr(out, "points.tsv:1:1: no predicted and measured"),
                  "%s", out);
    free(out);
    free(dir);
}
END_TEST

START_TEST(test_any_key_cross_product)
{
    char *out = sweep("--set cluster.inter.bandwidth=50Gbps,400Gbps "
                      "--set ddp.bucket_cap_mb=5,25 --set ddp.steps=2 "
                      "--jobs 1 --no-plot",
                      0, NULL);
    ck_assert_ptr_nonnull(strstr(out, "4 runs"));
    ck_assert_ptr_nonnull(
        strstr(out, "recommendation: cluster.inter.bandwidth=400Gbps"));
    free(out);
}
END_TEST

START_TEST(test_bad_input)
{
    char *out = sweep("", 2, NULL);
    ck_assert_ptr_nonnull(strstr(out, "nothing to sweep"));
    free(out);
    out = sweep("--set ddp.bucket_cap_mb=1,,2", 2, NULL);
    ck_assert_ptr_nonnull(strstr(out, "bad value list"));
    free(out);
    out = sweep("--set ddp.bucket_cap_mb=1,x --jobs 1", 2, NULL);
    ck_assert_ptr_nonnull(strstr(out, "bucket_cap_mb"));
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_sweep");
    TCase *tc = tcase_create("sweep");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_bucket_cap_tradeoff);
    tcase_add_test(tc, test_tolerance);
    tcase_add_test(tc, test_uncertainty);
    tcase_add_test(tc, test_any_key_cross_product);
    tcase_add_test(tc, test_bad_input);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
