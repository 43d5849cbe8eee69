/* tests/trace_compare.c - predicted against measured: ops are matched by
 * (rank, group, seq) and compute by order; the median / p95 relative
 * errors, the bias and the end-to-end error are what the inputs imply;
 * unmatched and differing ops are counted; the sweep statistics give
 * nccl-tests' algbw and busbw. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/compare.h"
#include "trace/sweep_stats.h"

/* Remove a test's temporary folder (made by tu_tmpdir: safe characters). */
static void rm_dir(char *dir)
{
    char cmd[1100];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

static void add(trace_timeline_t *tl, herd_tl_kind_t kind, int rank,
                uint64_t seq, herd_coll_t coll, uint64_t start, uint64_t dur,
                const char *label)
{
    herd_tl_rec_t r = {.kind = kind,
                       .rank = rank,
                       .seq = seq,
                       .coll = coll,
                       .algo = HERD_ALGO_RING,
                       .dtype = HERD_FLOAT32,
                       .count = 1024,
                       .bytes = 4096,
                       .peer = -1,
                       .start_ns = start,
                       .end_ns = start + dur,
                       .label = label};
    ck_assert_int_eq(trace_timeline_add(tl, &r), 0);
}

/* Measured: 10 all_reduces of 1000 ns per rank (2 ranks) and 2 computes;
 * predicted: all_reduce i takes 1000 + 10 * i ns (0..9% slow), compute
 * 20% fast. */
START_TEST(test_errors)
{
    trace_timeline_t *p, *m;
    ck_assert_int_eq(trace_timeline_create(&p), 0);
    ck_assert_int_eq(trace_timeline_create(&m), 0);
    for (int rank = 0; rank < 2; rank++) {
        uint64_t tp = 0, tm = 0;
        add(m, HERD_TL_COMPUTE, rank, 0, 0, tm, 5000, "fwd");
        add(p, HERD_TL_COMPUTE, rank, 0, 0, tp, 4000, "fwd");
        tm += 5000;
        tp += 4000;
        for (int i = 1; i <= 10; i++) {
            add(m, HERD_TL_COLL, rank, (uint64_t)i, HERD_COLL_ALL_REDUCE, tm,
                1000, NULL);
            add(p, HERD_TL_COLL, rank, (uint64_t)i, HERD_COLL_ALL_REDUCE, tp,
                1000 + 10 * (uint64_t)(i - 1), NULL);
            tm += 1000;
            tp += 1000 + 10 * (uint64_t)(i - 1);
        }
        add(m, HERD_TL_WAIT, rank, 0, 0, tm, 50, NULL); /* not matched */
    }
    add(p, HERD_TL_COLL, 0, 11, HERD_COLL_BROADCAST, 99999, 10, NULL);
    trace_timeline_sort(p);
    trace_timeline_sort(m);
    trace_cmp_t c;
    char err[256];
    ck_assert_int_eq(trace_compare(p, m, &c, NULL, err, sizeof(err)), 0);
    const trace_cmp_kind_t *ar = &c.kinds[HERD_COLL_ALL_REDUCE];
    ck_assert_uint_eq(ar->n, 20);
    ck_assert(fabs(ar->median - 0.04) < 1e-9); /* nearest rank: 10th of 20 */
    ck_assert(fabs(ar->p95 - 0.09) < 1e-9);
    ck_assert(ar->bias > 0);
    const trace_cmp_kind_t *cp = &c.kinds[HERD_COLL_COUNT];
    ck_assert_uint_eq(cp->n, 2);
    ck_assert(fabs(cp->median - 0.2) < 1e-9);
    ck_assert(cp->bias < 0);
    ck_assert_uint_eq(c.matched, 22);
    ck_assert_uint_eq(c.only_pred, 1);
    ck_assert_uint_eq(c.only_meas, 0);
    /* end to end: measured 15050 ns; predicted to 99999 + 10 ns */
    ck_assert(fabs(c.e2e_meas_s - 15050e-9) < 1e-15);
    ck_assert(fabs(c.e2e_pred_s - 100009e-9) < 1e-15);
    trace_timeline_destroy(p);
    trace_timeline_destroy(m);
}
END_TEST

START_TEST(test_differ)
{
    trace_timeline_t *p, *m;
    ck_assert_int_eq(trace_timeline_create(&p), 0);
    ck_assert_int_eq(trace_timeline_create(&m), 0);
    add(p, HERD_TL_COLL, 0, 1, HERD_COLL_ALL_REDUCE, 0, 10, NULL);
    add(m, HERD_TL_COLL, 0, 1, HERD_COLL_BROADCAST, 0, 10, NULL);
    add(m, HERD_TL_COLL, 1, 1, HERD_COLL_BROADCAST, 0, 10, NULL);
    trace_cmp_t c;
    char *dir = tu_tmpdir(), path[512], err[256];
    snprintf(path, sizeof(path), "%s/pairs.tsv", dir);
    ck_assert_int_eq(trace_compare(p, m, &c, path, err, sizeof(err)), 0);
    ck_assert_uint_eq(c.matched, 0);
    ck_assert_uint_eq(c.differ, 1);
    ck_assert_uint_eq(c.only_meas, 1);
    ck_assert_int_ne(
        trace_compare(p, m, &c, "/nonexistent/dir/x.tsv", err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, "/nonexistent/dir/x.tsv"), "%s", err);
    trace_timeline_destroy(p);
    trace_timeline_destroy(m);
    rm_dir(dir);
}
END_TEST

START_TEST(test_sweep_stats)
{
    trace_sweep_t sw = {.coll = HERD_COLL_ALL_REDUCE, .dtype = HERD_FLOAT32};
    trace_timeline_t *tl;
    ck_assert_int_eq(trace_timeline_create(&tl), 0);
    /* 4 ranks, 2 timed calls of 1 MiB taking 99 us and 300 us (first
     * start to last end), after one warm-up call. */
    for (int r = 0; r < 4; r++) {
        add(tl, HERD_TL_COLL, r, 1, HERD_COLL_ALL_REDUCE, 0, 5, "warmup");
        add(tl, HERD_TL_COLL, r, 2, HERD_COLL_ALL_REDUCE, 1000 + r,
            99000 - (uint64_t)r, "sweep");
        add(tl, HERD_TL_COLL, r, 3, HERD_COLL_ALL_REDUCE, 200000,
            300000 - (r == 2 ? 0 : 7), "sweep");
    }
    herd_tl_rec_t *recs = (herd_tl_rec_t *)trace_timeline_recs(tl);
    for (size_t i = 0; i < trace_timeline_count(tl); i++)
        recs[i].count = 262144;
    trace_sweep_row_t *rows = NULL;
    size_t n = 0;
    ck_assert_int_eq(trace_sweep_stats(tl, &sw, 4, &rows, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].calls, 2);
    ck_assert_uint_eq(rows[0].bytes, 1 << 20);
    ck_assert(fabs(rows[0].time_s - 199.5e-6) < 1e-12);
    ck_assert(fabs(rows[0].algbw - (1 << 20) / 199.5e-6) < 1);
    ck_assert(fabs(rows[0].busbw - rows[0].algbw * 1.5) < 1);
    free(rows);
    trace_timeline_destroy(tl);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_compare");
    TCase *tc = tcase_create("compare");
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_differ);
    tcase_add_test(tc, test_sweep_stats);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
