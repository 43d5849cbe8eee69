/* tests/unit_sched_verify.c - every algorithm x collective it supports,
 * verified symbolically (core_sched_verify) for p = 1..64 and counts 0, 1,
 * p-1, p, p+1 and a prime, with and without channels and pipeline chunks,
 * plus a few large groups (96, 128, 513) and larger counts. One test case
 * per algorithm so a failure names it. */
#include <stdio.h>
#include <string.h>

#include "core/sched.h"
#include "support/testutil.h"

static void verify_one(herd_algo_t algo, herd_coll_t coll, int p, int root,
                       uint64_t count, int channels, uint64_t chunk_bytes,
                       int rpn)
{
    core_sched_desc_t d = {.coll = coll,
                           .algo = algo,
                           .nranks = p,
                           .root = root,
                           .count = count,
                           .elem_size = 4,
                           .channels = channels,
                           .chunk_bytes = chunk_bytes,
                           .ranks_per_node = rpn};
    char why[600];
    herd_status_t st = core_sched_verify(&d, NULL, why, sizeof(why));
    ck_assert_msg(st == HERD_OK,
                  "%s %s p=%d root=%d count=%llu channels=%d chunk=%llu "
                  "rpn=%d: %s",
                  herd_algo_name(algo), herd_coll_name(coll), p, root,
                  (unsigned long long)count, channels,
                  (unsigned long long)chunk_bytes, rpn, why);
}

/* Ranks per node for hier: a divisor of p when there is one. */
static int pick_rpn(int p, int salt)
{
    static const int cands[] = {4, 2, 3, 8};
    for (int i = 0; i < 4; i++) {
        int c = cands[(i + salt) % 4];
        if (p % c == 0 && c < p)
            return c;
    }
    return 0;
}

static void sweep_algo(herd_algo_t algo)
{
    for (int coll = 0; coll < HERD_COLL_SEND; coll++) {
        if (!core_sched_supports(algo, (herd_coll_t)coll))
            continue;
        for (int p = 1; p <= 64; p++) {
            uint64_t counts[] = {
                0, 1, (uint64_t)p - 1, (uint64_t)p, (uint64_t)p + 1, 13};
            int root = (p * 5) / 7;
            int rpn = pick_rpn(p, p);
            for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
                verify_one(algo, coll, p, root, counts[i], 1, 0, rpn);
            /* channels and chunking: a few shapes, fewer group sizes */
            if (p <= 10 || p == 17 || p == 36 || p == 64) {
                uint64_t n = p <= 10 ? 3 * (uint64_t)p + 2 : (uint64_t)p + 3;
                /* small p: tiny chunks; larger p: ~3 chunks per count */
                uint64_t ck = p <= 10 ? 8 : 4 * ((n + 2) / 3);
                verify_one(algo, coll, p, root, n, 2, ck, rpn);
                verify_one(algo, coll, p, p - 1, n + 5, 3, ck / 2,
                           pick_rpn(p, p + 1));
                if (p <= 10)
                    verify_one(algo, coll, p, 0, 61, 1, 20, rpn);
            }
        }
        verify_one(algo, coll, 16, 3, 4099, 2, 256, 4);
        verify_one(algo, coll, 7, 2, 10007, 4, 1000, 0);
    }
}

static int linear_buffers(int coll)
{
    return coll == HERD_COLL_ALL_REDUCE || coll == HERD_COLL_BROADCAST ||
           coll == HERD_COLL_REDUCE;
}

/* Large groups. Buffers of all_gather, all_to_all, ... grow with p^2
 * (p ranks of p*count), so their counts stay small there. */
static void large_algo(herd_algo_t algo)
{
    static const int ps[] = {96, 128, 513};
    for (int coll = 0; coll < HERD_COLL_SEND; coll++) {
        if (!core_sched_supports(algo, (herd_coll_t)coll))
            continue;
        for (int i = 0; i < 3; i++) {
            int p = ps[i];
            int rpn = pick_rpn(p, 0);
            /* p^2 steps at p = 513: covered at 96 and 128 */
            if (p > 200 && (coll == HERD_COLL_ALL_GATHER ||
                            coll == HERD_COLL_REDUCE_SCATTER ||
                            coll == HERD_COLL_ALL_TO_ALL))
                continue;
            uint64_t big = linear_buffers(coll) ? (uint64_t)p + 1 : 2;
            verify_one(algo, coll, p, p / 3, 1, 1, 0, rpn);
            verify_one(algo, coll, p, p - 1, big, 2, 0, rpn);
            if (p == 96)
                verify_one(algo, coll, p, 1, 2 * big + 1, 1, 8, rpn);
        }
    }
}

#define ALGO_TEST(name, algo)                                                  \
    START_TEST(test_##name)                                                    \
    {                                                                          \
        sweep_algo(algo);                                                      \
        large_algo(algo);                                                      \
    }                                                                          \
    END_TEST

ALGO_TEST(ring, HERD_ALGO_RING)
ALGO_TEST(tree, HERD_ALGO_TREE)
ALGO_TEST(rhd, HERD_ALGO_RHD)
ALGO_TEST(direct, HERD_ALGO_DIRECT)
ALGO_TEST(binomial, HERD_ALGO_BINOMIAL)
ALGO_TEST(hier, HERD_ALGO_HIER)
ALGO_TEST(rd, HERD_ALGO_RD)

/* hier with a double binary tree across nodes, every node size. */
START_TEST(test_hier_tree)
{
    for (int p = 1; p <= 40; p++)
        for (int L = 1; L <= p; L++) {
            if (p % L)
                continue;
            uint64_t counts[] = {0, 1, 7, 3 * (uint64_t)p + 1};
            for (size_t i = 0; i < 4; i++)
                for (int v = 0; v < 2; v++) {
                    core_sched_desc_t d = {.coll = HERD_COLL_ALL_REDUCE,
                                           .algo = HERD_ALGO_HIER,
                                           .nranks = p,
                                           .count = counts[i],
                                           .elem_size = 4,
                                           .channels = v ? 2 : 1,
                                           .chunk_bytes = v ? 8 : 0,
                                           .ranks_per_node = L,
                                           .hier_inter = HERD_ALGO_TREE};
                    char why[600];
                    herd_status_t st =
                        core_sched_verify(&d, NULL, why, sizeof(why));
                    ck_assert_msg(st == HERD_OK,
                                  "hier/tree p=%d L=%d n=%llu "
                                  "v=%d: %s",
                                  p, L, (unsigned long long)counts[i], v, why);
                }
        }
}
END_TEST

START_TEST(test_auto)
{
    /* AUTO resolves by size: small and large counts take both branches */
    for (int coll = 0; coll < HERD_COLL_SEND; coll++)
        for (int p = 1; p <= 20; p += 3) {
            verify_one(HERD_ALGO_AUTO, coll, p, p / 2, 5, 1, 0, 0);
            uint64_t big = linear_buffers(coll) ? 40000 : 3000;
            verify_one(HERD_ALGO_AUTO, coll, p, 0, big, 1, 1 << 12, 0);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sched_verify");
    TCase *tc = tcase_create("sweep");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_ring);
    tcase_add_test(tc, test_tree);
    tcase_add_test(tc, test_rhd);
    tcase_add_test(tc, test_direct);
    tcase_add_test(tc, test_binomial);
    tcase_add_test(tc, test_hier);
    tcase_add_test(tc, test_rd);
    tcase_add_test(tc, test_hier_tree);
    tcase_add_test(tc, test_auto);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
