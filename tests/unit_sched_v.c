/* tests/unit_sched_v.c - the schedules of the uneven collectives
 * (all_gather_v, reduce_scatter_v, all_to_all_v) and of
 * monitored_barrier (core/algo_v.c), verified symbolically
 * (core_sched_verify: every order, rendezvous included) for p = 1..24
 * with pseudo-random counts that include empty blocks, with and without
 * channels and pipeline chunks; and the verifier rejects a descriptor
 * whose own count disagrees with its counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "support/testutil.h"

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static void verify(herd_coll_t coll, int p, const size_t *counts,
                   const size_t *matrix, int channels, uint64_t chunk)
{
    core_sched_desc_t d = {.coll = coll,
                           .algo = HERD_ALGO_DIRECT,
                           .nranks = p,
                           .count = counts ? counts[0] : 0,
                           .elem_size = 4,
                           .channels = channels,
                           .chunk_bytes = chunk,
                           .counts = counts,
                           .matrix = matrix};
    char why[600];
    herd_status_t st = core_sched_verify(&d, NULL, why, sizeof(why));
    ck_assert_msg(st == HERD_OK, "%s p=%d channels=%d chunk=%llu: %s",
                  herd_coll_name(coll), p, channels, (unsigned long long)chunk,
                  why);
}

START_TEST(uneven_kinds)
{
    uint64_t seed = 0x76 + (uint64_t)_i;
    for (int p = 1; p <= 24; p++) {
        size_t *c = calloc((size_t)p, sizeof(size_t));
        size_t *m = calloc((size_t)p * (size_t)p, sizeof(size_t));
        for (int i = 0; i < p; i++)
            c[i] = next(&seed) % 4 == 0 ? 0 : next(&seed) % 37;
        for (int i = 0; i < p * p; i++)
            m[i] = next(&seed) % 3 == 0 ? 0 : next(&seed) % 29;
        int ch = 1 + p % 3;
        uint64_t chunk = p % 2 ? 0 : 16;
        verify(HERD_COLL_ALL_GATHER_V, p, c, NULL, ch, chunk);
        verify(HERD_COLL_REDUCE_SCATTER_V, p, c, NULL, ch, chunk);
        verify(HERD_COLL_ALL_TO_ALL_V, p, NULL, m, ch, chunk);
        verify(HERD_COLL_MONITORED_BARRIER, p, NULL, NULL, 1, 0);
        free(c);
        free(m);
    }
}
END_TEST

START_TEST(large_groups)
{
    int ps[] = {65, 130};
    for (int k = 0; k < 2; k++) {
        int p = ps[k];
        size_t *c = calloc((size_t)p, sizeof(size_t));
        for (int i = 0; i < p; i++)
            c[i] = (size_t)(i % 5);
        verify(HERD_COLL_ALL_GATHER_V, p, c, NULL, 2, 8);
        verify(HERD_COLL_REDUCE_SCATTER_V, p, c, NULL, 1, 0);
        verify(HERD_COLL_MONITORED_BARRIER, p, NULL, NULL, 1, 0);
        free(c);
    }
}
END_TEST

START_TEST(bad_descriptor)
{
    size_t c[3] = {1, 2, 3};
    core_sched_desc_t d = {.coll = HERD_COLL_ALL_GATHER_V,
                           .algo = HERD_ALGO_DIRECT,
                           .nranks = 3,
                           .rank = 1,
                           .count = 5,
                           .elem_size = 4,
                           .channels = 1,
                           .counts = c};
    core_sched_t s;
    memset(&s, 0, sizeof(s));
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_INVALID_ARG);
    d.count = 2;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    core_sched_fini(&s);
    d.counts = NULL;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_INVALID_ARG);
    d.counts = c;
    d.algo = HERD_ALGO_RING;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_UNSUPPORTED);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("unit_sched_v");
    TCase *tc = tcase_create("v");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, uneven_kinds, 0, 3);
    tcase_add_test(tc, large_groups);
    tcase_add_test(tc, bad_descriptor);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
