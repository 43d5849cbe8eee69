/* tests/unit_sched_counts.c - core_sched_counts gives every rank's step
 * counts in schedule order exactly as core_sched_lower does, without
 * lowering: ring all_reduce over many group sizes, counts (primes, fewer
 * elements than ranks, uneven and even splits), 1..4 channels and chunk
 * sizes, for every rank; other collectives and algorithms on a smaller
 * grid; a wrong step count and bad descriptors are errors. */
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "support/testutil.h"

static core_sched_desc_t mk(herd_coll_t coll, herd_algo_t algo, int p,
                            uint64_t count, int channels, uint64_t chunk)
{
    core_sched_desc_t d = {.coll = coll,
                           .algo = algo,
                           .nranks = p,
                           .root = p / 3,
                           .count = count,
                           .elem_size = 4,
                           .channels = channels,
                           .chunk_bytes = chunk};
    return d;
}

/* For every rank: core_sched_counts equals the lowered steps' counts.
 * Returns the total number of steps compared. */
static uint64_t check_all_ranks(const core_sched_desc_t *desc)
{
    core_sched_desc_t d = *desc;
    uint64_t total = 0;
    for (int r = 0; r < d.nranks; r++) {
        core_sched_t s = {0};
        d.rank = r;
        ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
        uint64_t *c = malloc((s.nsteps + 1) * sizeof(*c));
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(core_sched_counts(&d, c, s.nsteps), HERD_OK);
        /* every ck_assert records its location: test first */
        for (uint32_t i = 0; i < s.nsteps; i++)
            if (c[i] != s.steps[i].count)
                ck_abort_msg("%s/%s p=%d rank=%d count=%llu ch=%d chunk=%llu: "
                             "step %u has %llu, counted %llu",
                             herd_coll_name(d.coll), herd_algo_name(d.algo),
                             d.nranks, r, (unsigned long long)d.count,
                             d.channels, (unsigned long long)d.chunk_bytes, i,
                             (unsigned long long)s.steps[i].count,
                             (unsigned long long)c[i]);
        /* one step more or fewer than the schedule has is refused */
        ck_assert_int_eq(core_sched_counts(&d, c, s.nsteps + 1),
                         HERD_ERR_INVALID_ARG);
        if (s.nsteps > 0)
            ck_assert_int_eq(core_sched_counts(&d, c, s.nsteps - 1),
                             HERD_ERR_INVALID_ARG);
        total += s.nsteps;
        free(c);
        core_sched_fini(&s);
    }
    return total;
}

START_TEST(test_ring_all_reduce)
{
    static const int ps[] = {1, 2, 3, 4, 5, 7, 8, 12, 13, 16, 31};
    static const uint64_t chunks[] = {0, 4, 28, 400};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        uint64_t P = (uint64_t)ps[i];
        const uint64_t counts[] = {1,  2,    P > 1 ? P - 1 : 3, P + 1, 4 * P,
                                   97, 1009, 12 * P + 5,        4099};
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
            for (int ch = 1; ch <= 4; ch++)
                for (size_t j = 0; j < sizeof(chunks) / sizeof(chunks[0]);
                     j++) {
                    core_sched_desc_t d =
                        mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, ps[i],
                           counts[k], ch, chunks[j]);
                    ck_assert_uint_gt(check_all_ranks(&d), 0);
                }
    }
}
END_TEST

START_TEST(test_other_collectives)
{
    /* counting runs every algorithm's own code: spot-check the others */
    static const struct {
        herd_coll_t coll;
        herd_algo_t algo;
    } cases[] = {{HERD_COLL_ALL_GATHER, HERD_ALGO_RING},
                 {HERD_COLL_REDUCE_SCATTER, HERD_ALGO_RING},
                 {HERD_COLL_BROADCAST, HERD_ALGO_RING},
                 {HERD_COLL_REDUCE, HERD_ALGO_RING},
                 {HERD_COLL_ALL_REDUCE, HERD_ALGO_TREE},
                 {HERD_COLL_ALL_REDUCE, HERD_ALGO_RHD},
                 {HERD_COLL_ALL_REDUCE, HERD_ALGO_RD},
                 {HERD_COLL_ALL_REDUCE, HERD_ALGO_AUTO},
                 {HERD_COLL_ALL_TO_ALL, HERD_ALGO_DIRECT},
                 {HERD_COLL_GATHER, HERD_ALGO_BINOMIAL},
                 {HERD_COLL_BARRIER, HERD_ALGO_RHD}};
    static const int ps[] = {1, 3, 6, 8};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
            for (int ch = 1; ch <= 2; ch++) {
                core_sched_desc_t d =
                    mk(cases[c].coll, cases[c].algo, ps[i], 97, ch, 40);
                check_all_ranks(&d);
            }
}
END_TEST

START_TEST(test_errors)
{
    uint64_t c[4];
    core_sched_desc_t d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4, 64, 0, 0);
    ck_assert_int_eq(core_sched_counts(&d, c, 4), HERD_ERR_INVALID_ARG);
    d = mk(HERD_COLL_ALL_TO_ALL, HERD_ALGO_RING, 4, 64, 1, 0);
    ck_assert_int_eq(core_sched_counts(&d, c, 4), HERD_ERR_UNSUPPORTED);
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4, UINT64_MAX / 4, 1, 0);
    ck_assert_int_eq(core_sched_counts(&d, c, 4), HERD_ERR_OVERFLOW);
    /* no output: only a schedule without steps matches */
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4, 64, 1, 0);
    ck_assert_int_eq(core_sched_counts(&d, NULL, 0), HERD_ERR_INVALID_ARG);
    d = mk(HERD_COLL_BROADCAST, HERD_ALGO_RING, 1, 64, 1, 0);
    ck_assert_int_eq(core_sched_counts(&d, NULL, 0), HERD_OK);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sched_counts");
    TCase *tc = tcase_create("counts");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_ring_all_reduce);
    tcase_add_test(tc, test_other_collectives);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
