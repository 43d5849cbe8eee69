/* tests/sim_measured.c - the simulator against recorded real runs
 * (tests/data/validate/), predicted again with `herd validate --from`,
 * which needs no root, no testbed and no PyTorch:
 * - two full `herd validate --rates` runs of herd's tcp engine on the
 *   testbed (four hosts, 1 Gbit/s to 50 Mbit/s, ring, tree and rhd
 *   all_reduces of 1 to 64 MiB). Recorded: median |error| 0.6 and 0.4 %
 *   (issue 17 asks for 3 %), 47 and 45 of 48 rows within 10 % (the misses
 *   are rhd exchanges TCP slowed in those runs; BENCHMARKS.md "A quiet
 *   VM, idle restarts, and FIFO sending tried"), and a third with the
 *   hosts' slow start after idle off (48 of 48, every row within 5 %;
 *   "Slow start after idle"). Required: a median within 1 %, a p95 and
 *   every rate's largest error within a point of the run's, as many rows
 *   within 10 %;
 * - 27 real-PyTorch DDP cells (`--torch`: resnet18 and a small
 *   transformer, 3 rates x 3 bucket sizes, resnet18 also with a
 *   one-gradient straggler). Required: every step within 2 %, herd's best
 *   bucket size as fast as PyTorch's best, the bucket rows as close as
 *   recorded.
 * A change that moves predictions away from the measurements fails here,
 * wherever it is built. */
#include <math.h>
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

/* The two numbers `fmt` reads where `at` first occurs in `text`. */
static void scan2(const char *text, const char *at, const char *fmt, double *a,
                  double *b)
{
    const char *p = strstr(text, at);
    ck_assert_msg(p, "no '%s' in:\n%s", at, text);
    ck_assert_int_eq(sscanf(p, fmt, a, b), 2);
}

/* The largest max |error| (%) of summary.tsv's lines for `rate` (the
 * first line is the header). */
static double rate_max(const char *tsv, const char *rate)
{
    double worst = -1;
    size_t n = strlen(rate);
    for (const char *p = tsv; (p = strchr(p, '\n')) != NULL;)
        if (!strncmp(++p, rate, n) && p[n] == '\t') {
            double med, p95, max;
            int rows;
            char algo[16];
            ck_assert_int_eq(sscanf(p + n, "\t%15s\t%d\t%lf\t%lf\t%lf", algo,
                                    &rows, &med, &p95, &max),
                             5);
            worst = max > worst ? max : worst;
        }
    ck_assert_msg(worst >= 0, "no %s lines in:\n%s", rate, tsv);
    return worst;
}

/* Per rate, the largest |error| of `now` within a point of `rec`'s: a
 * change that moves one rate's rows shows even where the totals hold. */
static void rates_as_recorded(const char *now, const char *rec)
{
    static const char *const rates[] = {"1Gbit", "400Mbit", "200Mbit",
                                        "50Mbit"};
    for (int i = 0; i < 4; i++) {
        double a = rate_max(now, rates[i]), b = rate_max(rec, rates[i]);
        ck_assert_msg(a <= b + 1.0,
                      "%s: max |error| %.2f %%, recorded %.2f %%:\n%s",
                      rates[i], a, b, now);
    }
}

/* Predict capture `name` again: its median and p95 |error| (%) at most
 * `median_max` and `p95_max`, at least `min_within` rows within 10 %,
 * every rate's largest error within a point of the recorded. */
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
    snprintf(rel, sizeof(rel), "validate/%s/summary.tsv", name);
    char *recorded = tu_read_file(tu_data_path(rec, sizeof(rec), rel));
    ck_assert_ptr_nonnull(recorded);
    rates_as_recorded(tsv, recorded);
    free(recorded);
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

/* The testbed's hosts without slow start after idle (`herd validate
 * --slow-start-after-idle off`): every row of every rate within 4.7 %,
 * so a model change of a point or two at any rate fails. */
START_TEST(recorded_idle_restart_off)
{
    /* recorded: median 0.13 %, p95 3.10 %, max 4.68 %, 48 */
    predict_again("s12-off-run3", 1.0, 4.2, 48);
}
END_TEST

/* A set of recorded `herd validate --torch` cells (real PyTorch DDP on
 * gloo, 2 testbed hosts; tests/data/validate/): DIR/<rate>/<variant>/
 * b<bucket_cap_mb>, run from bench/torch_validate/SCEN-2h.yaml (and
 * SCEN-2h-straggler.yaml). */
typedef struct torch_set {
    const char *dir, *scen;
    int variants; /* 1: plain only; 2: and with a one-gradient straggler */
    /* the bucket rows (each bucket's all_reduce, medians over steps and
     * ranks) of all cells as recorded: median and p95 |error|, % */
    double rows_median, rows_p95;
} torch_set_t;

/* |error| (%) of every all_reduce row of report `md`, appended. */
static void bucket_rows(const char *md, double *errs, int cap, int *n)
{
    for (const char *p = strstr(md, "\n| all_reduce |"); p;
         p = strstr(p + 1, "\n| all_reduce |")) {
        const char *eol = strchr(p + 1, '\n');
        const char *last = p + 1, *q = p + 1;
        /* the error is the last cell: "| -5.4% |" */
        while ((q = strchr(q + 1, '|')) && (!eol || q < eol - 1))
            last = q;
        ck_assert_int_lt(*n, cap);
        errs[(*n)++] = fabs(strtod(last + 1, NULL));
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One cell predicted again: the step time herd predicts now and the one
 * PyTorch measured, seconds; its bucket rows' |error| appended to errs. */
static void torch_cell(const torch_set_t *ts, const char *rate,
                       const char *variant, int cap, double *pred, double *meas,
                       double *errs, int errs_cap, int *nerrs)
{
    char *out = NULL, *dir = tu_tmpdir(), args[2048], src[1024], rec[1024],
         rel[256], scen[128];
    snprintf(rel, sizeof(rel), "validate/%s/%s/%s/b%d", ts->dir, rate, variant,
             cap);
    snprintf(scen, sizeof(scen), "bench/torch_validate/%s-2h%s.yaml", ts->scen,
             strcmp(variant, "plain") ? "-straggler" : "");
    /* as bench/torch_validate/run.sh ran them (PyTorch 1.13: a first
     * bucket of 1 MiB) */
    snprintf(args, sizeof(args),
             "validate %s --torch --comm-cpu --from %s -o %s/v "
             "--set ddp.bucket_cap_mb=%d --set ddp.first_bucket_mb=1",
             tu_src_path(src, sizeof(src), scen),
             tu_data_path(rec, sizeof(rec), rel), dir, cap);
    int rc = herd(args, &out);
    ck_assert_msg(rc == 0, "%s", out);
    scan2(out, "validate: ddp: step time predicted ",
          "validate: ddp: step time predicted %lf s, measured %lf s", pred,
          meas);
    free(out);
    char *md = tu_read_in(dir, "v/report.md");
    bucket_rows(md, errs, errs_cap, nerrs);
    free(md);
    tu_tmpdir_free(dir);
}

/* Every cell's step within 2 % of PyTorch's (recorded: within 0.7 %),
 * and the bucket_cap_mb herd finds best ran as fast as PyTorch's best,
 * per rate and variant (issue 17's table, BENCHMARKS.md). */
static void torch_set_check(const torch_set_t *ts)
{
    static const char *rates[] = {"50Mbit", "200Mbit", "1Gbit"};
    static const char *variants[] = {"plain", "straggler"};
    static const int caps[] = {1, 5, 25};
    double errs[512];
    int nerrs = 0;
    for (int r = 0; r < 3; r++)
        for (int v = 0; v < ts->variants; v++) {
            double pred[3], meas[3];
            int best_p = 0, best_m = 0;
            for (int c = 0; c < 3; c++) {
                torch_cell(ts, rates[r], variants[v], caps[c], &pred[c],
                           &meas[c], errs, 512, &nerrs);
                double err = (pred[c] - meas[c]) / meas[c] * 100;
                ck_assert_msg(err <= 2.0 && err >= -2.0,
                              "%s %s %s bucket_cap_mb %d: step %.3f s "
                              "predicted, %.3f s measured (%+.1f %%)",
                              ts->dir, rates[r], variants[v], caps[c], pred[c],
                              meas[c], err);
                best_p = pred[c] < pred[best_p] ? c : best_p;
                best_m = meas[c] < meas[best_m] ? c : best_m;
            }
            /* a tie is a tie: the size herd picks ran within 0.5 % of
             * the fastest */
            ck_assert_msg(meas[best_p] <= meas[best_m] * 1.005,
                          "%s %s %s: herd's best bucket_cap_mb %d ran %.3f s, "
                          "PyTorch's best (%d) %.3f s",
                          ts->dir, rates[r], variants[v], caps[best_p],
                          meas[best_p], caps[best_m], meas[best_m]);
        }
    /* each bucket's all_reduce, not only the steps: as close as recorded
     * (half a point on the median, two on the p95) */
    ck_assert_int_gt(nerrs, 20);
    qsort(errs, (size_t)nerrs, sizeof(*errs), cmp_double);
    double med = errs[nerrs / 2], p95 = errs[(int)(0.95 * nerrs)];
    ck_assert_msg(med <= ts->rows_median + 0.5 && p95 <= ts->rows_p95 + 2,
                  "%s: %d bucket rows, median |error| %.2f %%, p95 %.2f %% "
                  "(recorded %.2f, %.2f)",
                  ts->dir, nerrs, med, p95, ts->rows_median, ts->rows_p95);
}

START_TEST(recorded_torch_resnet18)
{
    static const torch_set_t ts = {"torch-s11", "resnet18", 2, 0.3, 15.9};
    torch_set_check(&ts);
}
END_TEST

START_TEST(recorded_torch_transformer)
{
    static const torch_set_t ts = {"torch-s11-transformer", "transformer", 1,
                                   1.0, 23.4};
    torch_set_check(&ts);
}
END_TEST

/* from.md, the earlier prediction beside the new one: the same when the
 * model is the same, apart when a setting moves it. */
static void before_now(const char *extra, double *before, double *now)
{
    char *out = NULL, *dir = tu_tmpdir(), args[2048], src[1024], rec[1024];
    snprintf(args, sizeof(args), "validate %s --from %s -o %s/v %s",
             tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml"),
             tu_data_path(rec, sizeof(rec), "validate/s11-run1/1Gbit"), dir,
             extra);
    ck_assert_int_eq(herd(args, &out), 0);
    free(out);
    char *md = tu_read_in(dir, "v/from.md");
    scan2(md, "12 rows in both: median |error| ",
          "12 rows in both: median |error| %lf%% before, %lf%% now", before,
          now);
    ck_assert_ptr_nonnull(strstr(md, "| all_reduce | rhd | 64 MiB | sweep | "));
    free(md);
    tu_tmpdir_free(dir);
}

/* `--from` on one rate of a recorded run into DIR/v: its report. */
static char *report_from(const char *dir, const char *rel)
{
    char *out = NULL, args[2048], src[1024], rec[1024];
    snprintf(args, sizeof(args), "validate %s --from %s -o %s/v",
             tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml"),
             tu_data_path(rec, sizeof(rec), rel), dir);
    ck_assert_int_eq(herd(args, &out), 0);
    free(out);
    return tu_read_in(dir, "v/report.md");
}

/* A report whose rhd rows ran more than 10 % slow says what slows them on
 * TCP; one without such rows says nothing of it. */
START_TEST(recorded_rhd_note)
{
    char *dir = tu_tmpdir();
    char *md = report_from(dir, "validate/s11-run1/200Mbit");
    ck_assert_msg(strstr(md, "\n1 halving-doubling (rhd) row measured more "
                             "than 10% slower") &&
                      strstr(md, "tcp_slow_start_after_idle"),
                  "%s", md);
    free(md);
    md = report_from(dir, "validate/s12-off-run3/200Mbit");
    ck_assert_msg(!strstr(md, "halving-doubling (rhd) row"), "%s", md);
    free(md);
    tu_tmpdir_free(dir);
}
END_TEST

START_TEST(recorded_before_after)
{
    double before, now;
    before_now("", &before, &now);
    ck_assert_double_eq_tol(before, now, 1e-9);
    ck_assert_double_eq_tol(before, 0.8, 1e-9); /* the run's own report */
    before_now("--set collectives.chunk=1MiB", &before, &now);
    ck_assert_double_eq_tol(before, 0.8, 1e-9);
    ck_assert_msg(now > before + 0.3, "%.1f %% now", now);
}
END_TEST

/* A DIR without calibration.yaml: said, and the scenario's links (400
 * Mbit/s against the 1 Gbit/s measured) predict; a -o whose workload
 * folder is DIR's (a link): refused before a measured file is touched. */
START_TEST(recorded_odd_dirs)
{
    char *out = NULL, *dir = tu_tmpdir(), cmd[4096], rec[1024], src[1024];
    tu_data_path(rec, sizeof(rec), "validate/s11-run1/1Gbit");
    tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml");
    snprintf(cmd, sizeof(cmd),
             "cp -r %s %s/d && rm %s/d/calibration.yaml && mkdir %s/o && "
             "ln -s %s/d/all_reduce %s/o/all_reduce",
             rec, dir, dir, dir, dir, dir);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof(cmd), "validate %s --from %s/d -o %s/v", src, dir,
             dir);
    ck_assert_int_eq(herd(cmd, &out), 0);
    ck_assert_msg(strstr(out, "it has no calibration.yaml; predicting with "
                              "the scenario's links"),
                  "%s", out);
    double before, now;
    scan2(out, "rows in both reports, median |error| ",
          "rows in both reports, median |error| %lf%% before, %lf%% now",
          &before, &now);
    ck_assert_msg(now > 10 * before, "%.1f %% before, %.1f %% now", before,
                  now);
    free(out);
    char *keep = tu_read_in(dir, "d/all_reduce/measured/timeline-rank0.json");
    snprintf(cmd, sizeof(cmd), "validate %s --from %s/d -o %s/o", src, dir,
             dir);
    ck_assert_int_eq(herd(cmd, &out), 1);
    ck_assert_msg(strstr(out, "is where -o writes"), "%s", out);
    free(out);
    char *after = tu_read_in(dir, "d/all_reduce/measured/timeline-rank0.json");
    ck_assert_str_eq(keep, after);
    free(keep);
    free(after);
    tu_tmpdir_free(dir);
}
END_TEST

/* Measurements of 4 ranks predicted as 2 would read every op wrong: an
 * error that says so, not a report. */
START_TEST(recorded_other_world)
{
    char *out = NULL, *dir = tu_tmpdir(), args[2048], src[1024], rec[1024];
    snprintf(args, sizeof(args), "validate %s --hosts 2 --from %s -o %s/v",
             tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml"),
             tu_data_path(rec, sizeof(rec), "validate/s11-run1/1Gbit"), dir);
    ck_assert_int_eq(herd(args, &out), 1);
    ck_assert_msg(strstr(out, "of 4 rank(s); this validation has 2"), "%s",
                  out);
    free(out);
    tu_tmpdir_free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_measured");
    TCase *tc = tcase_create("recorded");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, recorded_quiet_vm_run1);
    tcase_add_test(tc, recorded_quiet_vm_run2);
    tcase_add_test(tc, recorded_idle_restart_off);
    tcase_add_test(tc, recorded_torch_resnet18);
    tcase_add_test(tc, recorded_torch_transformer);
    tcase_add_test(tc, recorded_other_world);
    tcase_add_test(tc, recorded_before_after);
    tcase_add_test(tc, recorded_rhd_note);
    tcase_add_test(tc, recorded_odd_dirs);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
