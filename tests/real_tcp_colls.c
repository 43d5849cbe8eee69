/* tests/real_tcp_colls.c - every collective x every algorithm core/
 * implements for it, on world sizes 1, 2, 3, 4, 7 and 8 (real processes on
 * loopback), counts 0, 1 and a prime, every root kind, in place and out of
 * place, one and two channels with small pipeline chunks; float32 sum.
 * One spawn per world size runs the whole list. */
#include "real_tcp_harness.h"
#include "support/testutil.h"

static const herd_coll_t colls[] = {
    HERD_COLL_ALL_REDUCE,     HERD_COLL_BROADCAST,  HERD_COLL_REDUCE,
    HERD_COLL_ALL_GATHER,     HERD_COLL_GATHER,     HERD_COLL_SCATTER,
    HERD_COLL_REDUCE_SCATTER, HERD_COLL_ALL_TO_ALL, HERD_COLL_BARRIER};

static int rooted(herd_coll_t k)
{
    return k == HERD_COLL_BROADCAST || k == HERD_COLL_REDUCE ||
           k == HERD_COLL_GATHER || k == HERD_COLL_SCATTER;
}

static int inplace_kind(herd_coll_t k)
{
    return k == HERD_COLL_ALL_REDUCE || k == HERD_COLL_REDUCE_SCATTER ||
           k == HERD_COLL_ALL_GATHER;
}

static int run_coll_algo(herd_comm_t *c, herd_coll_t coll, herd_algo_t algo)
{
    static const uint64_t counts[] = {0, 1, 1009};
    int p = herd_comm_size(c), bad = 0;
    int roots[2] = {0, p - 1};
    for (size_t i = 0; i < 3; i++)
        for (int ri = 0; ri < (rooted(coll) && p > 1 ? 2 : 1); ri++)
            for (int ip = 0; ip <= inplace_kind(coll); ip++) {
                rt_case_t k = {.coll = coll,
                               .algo = algo,
                               .dtype = HERD_FLOAT32,
                               .op = HERD_SUM,
                               .count = counts[i],
                               .root = roots[ri],
                               .inplace = ip};
                bad |= rt_run_case(c, &k);
                if (coll == HERD_COLL_BARRIER)
                    return bad;
            }
    return bad;
}

static int colls_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    int bad = 0;
    for (int ch = 1; ch <= 2; ch++) {
        /* Small chunks make the pipelined schedules use many steps. */
        herd_comm_set_channels(c, ch, ch == 1 ? 4u << 20 : 1024);
        for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
            for (int a = 0; a < HERD_ALGO_COUNT; a++)
                if (core_sched_supports((herd_algo_t)a, colls[i]))
                    bad |= run_coll_algo(c, colls[i], (herd_algo_t)a);
    }
    return bad;
}

START_TEST(test_colls)
{
    static const int sizes[] = {1, 2, 3, 4, 7, 8};
    int p = sizes[_i];
    ck_assert_msg(rt_spawn(p, colls_main, NULL) == 0, "p=%d", p);
}
END_TEST

static void two_nodes(int rank, void *arg)
{
    (void)rank;
    setenv("LOCAL_WORLD_SIZE", arg, 1);
}

/* Ranks split into nodes (LOCAL_WORLD_SIZE), so hierarchical schedules
 * run their intra- and inter-node phases; all_reduce only. */
static int nodes_main(herd_comm_t *c, void *arg)
{
    (void)arg;
    int bad = 0;
    herd_comm_set_channels(c, 2, 512);
    for (int a = 0; a < HERD_ALGO_COUNT; a++)
        if (core_sched_supports((herd_algo_t)a, HERD_COLL_ALL_REDUCE))
            bad |= run_coll_algo(c, HERD_COLL_ALL_REDUCE, (herd_algo_t)a);
    return bad;
}

START_TEST(test_nodes)
{
    static const int sizes[][2] = {{4, 2}, {6, 3}, {8, 4}, {8, 2}};
    char local[8];
    snprintf(local, sizeof(local), "%d", sizes[_i][1]);
    rt_opts_t o = {.child_cb = two_nodes};
    int codes[RT_MAX_RANKS];
    ck_assert_msg(rt_spawn_opts(sizes[_i][0], nodes_main, local, &o, codes) ==
                      0,
                  "p=%d local=%d", sizes[_i][0], sizes[_i][1]);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_tcp_colls");
    TCase *tc = tcase_create("colls");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_colls, 0, 6);
    tcase_add_loop_test(tc, test_nodes, 0, 4);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
