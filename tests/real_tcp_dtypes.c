/* tests/real_tcp_dtypes.c - the full dtype x reduce-op matrix on 3 real
 * ranks: every reducing collective with every algorithm that implements
 * it, small counts (odd, so element sizes and chunk edges are exercised),
 * and the data-moving collectives for every element size. */
#include "real_tcp_harness.h"
#include "support/testutil.h"

static const herd_coll_t reducing[] = {HERD_COLL_ALL_REDUCE, HERD_COLL_REDUCE,
                                       HERD_COLL_REDUCE_SCATTER};
static const herd_coll_t moving[] = {HERD_COLL_BROADCAST, HERD_COLL_ALL_GATHER,
                                     HERD_COLL_ALL_TO_ALL};

static int reduce_matrix(herd_comm_t *c, herd_dtype_t dt)
{
    int bad = 0;
    for (int op = 0; op < HERD_OP_COUNT; op++) {
        if (!core_reduce_valid(dt, (herd_op_t)op))
            continue;
        for (size_t i = 0; i < 3; i++)
            for (int a = 0; a < HERD_ALGO_COUNT; a++) {
                if (!core_sched_supports((herd_algo_t)a, reducing[i]))
                    continue;
                rt_case_t k = {.coll = reducing[i],
                               .algo = (herd_algo_t)a,
                               .dtype = dt,
                               .op = (herd_op_t)op,
                               .count = 37,
                               .root = 1};
                bad |= rt_run_case(c, &k);
            }
    }
    return bad;
}

static int dtypes_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    int bad = 0;
    herd_comm_set_channels(c, 2, 64); /* many small chunks */
    for (int dt = 0; dt < HERD_DTYPE_COUNT; dt++) {
        bad |= reduce_matrix(c, (herd_dtype_t)dt);
        for (size_t i = 0; i < 3; i++) {
            rt_case_t k = {.coll = moving[i],
                           .algo = HERD_ALGO_AUTO,
                           .dtype = (herd_dtype_t)dt,
                           .op = HERD_SUM,
                           .count = 101,
                           .root = 2};
            bad |= rt_run_case(c, &k);
        }
    }
    return bad;
}

START_TEST(test_dtype_op_matrix)
{
    ck_assert_int_eq(rt_spawn(3, dtypes_main, NULL), 0);
}
END_TEST

/* A bitwise op on a float dtype is refused before anything is sent. */
static int badop_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    float x = 1;
    herd_status_t st =
        herd_all_reduce(c, &x, &x, 1, HERD_FLOAT32, HERD_BXOR, NULL);
    return st == HERD_ERR_INVALID_ARG && strstr(herd_last_error(c), "bxor") ? 0
                                                                            : 1;
}

START_TEST(test_invalid_op)
{
    ck_assert_int_eq(rt_spawn(2, badop_main, NULL), 0);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_tcp_dtypes");
    TCase *tc = tcase_create("dtypes");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_dtype_op_matrix);
    tcase_add_test(tc, test_invalid_op);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
