/* tests/unit_sched_rotate.c - core_sched_rotational: whenever it claims
 * that every rank's schedule is rank 0's with peers rotated by the rank,
 * lowering all ranks shows exactly that (kinds, channels, buffers,
 * counts, dependencies, rotated peers, scratch), over many collectives,
 * algorithms, group sizes, counts, channels and chunk sizes; for ring
 * all_reduce the even-split condition is exact (not merely sufficient);
 * the benchmark's shapes (512 and 1024 ranks) are claimed symmetric.
 * core_sched_rotational_shape (the same but for counts) likewise, and
 * exactly for ring all_reduce with uneven splits (DDP buckets).
 * core_sched_counts gives every rank's step counts exactly as lowering
 * does: ring all_reduce over many group sizes, counts (primes, fewer
 * elements than ranks), 1..4 channels and chunk sizes, every rank; the
 * other collectives and algorithms on a smaller grid; errors. */
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
                           .root = p / 2,
                           .count = count,
                           .elem_size = 4,
                           .channels = channels,
                           .chunk_bytes = chunk};
    return d;
}

/* Step i of s is step i of ref with the peer rotated by r (and the same
 * count unless except_counts). */
static int step_rotated(const core_sched_t *ref, const core_sched_t *s,
                        uint32_t i, int r, int except_counts)
{
    const core_step_t *a = &ref->steps[i], *b = &s->steps[i];
    int p = ref->desc.nranks;
    int peer = a->peer < 0 ? a->peer : (a->peer + r) % p;
    if (a->kind != b->kind || a->channel != b->channel ||
        a->src_buf != b->src_buf || a->dst_buf != b->dst_buf ||
        (!except_counts && a->count != b->count) || a->ndeps != b->ndeps ||
        b->peer != peer)
        return 0;
    return a->ndeps == 0 || memcmp(&ref->deps[a->dep_off], &s->deps[b->dep_off],
                                   a->ndeps * sizeof(*ref->deps)) == 0;
}

/* 1 if lowering every rank gives rank 0's schedule rotated (but for the
 * counts if except_counts). */
static int rotated_same(const core_sched_desc_t *desc, int except_counts)
{
    core_sched_desc_t d = *desc;
    core_sched_t ref = {0}, s = {0};
    d.rank = 0;
    ck_assert_int_eq(core_sched_lower(&d, &ref), HERD_OK);
    int same = 1;
    for (int r = 1; r < d.nranks && same; r++) {
        d.rank = r;
        ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
        same = s.nsteps == ref.nsteps && s.ndeps == ref.ndeps &&
               s.scratch_count == ref.scratch_count;
        for (uint32_t i = 0; same && i < s.nsteps; i++)
            same = step_rotated(&ref, &s, i, r, except_counts);
        core_sched_fini(&s);
    }
    core_sched_fini(&ref);
    return same;
}

static int rotated_equal(const core_sched_desc_t *desc)
{
    return rotated_same(desc, 0);
}

static const int sizes[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,
                            10, 11, 12, 13, 14, 15, 16, 17, 64};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Counts around the even splits: 12p splits evenly into 1..4 channels. */
static int ncounts(int p, uint64_t out[6])
{
    uint64_t P = (uint64_t)p;
    uint64_t c[6] = {0, 1, P + 1, 12 * P, 12 * P + 3, 5 * P};
    memcpy(out, c, sizeof(c));
    return 6;
}

/* Shapes check_claims tries: 6 counts x 4 channel counts x 3 chunk sizes
 * per group size, less those it skips for p = 64; ONE_RANK for p = 1. */
#define ONE_RANK (6 * 4 * 3)
#define ALL_SHAPES ((int)NSIZES * ONE_RANK - 6 * (12 - 6))

/* Every claim of symmetry holds; returns how many claims were checked. */
static int check_claims(herd_coll_t coll, herd_algo_t algo, int exact)
{
    static const uint64_t chunks[] = {0, 4, 20};
    int claims = 0;
    for (size_t i = 0; i < NSIZES; i++) {
        int p = sizes[i];
        uint64_t counts[6];
        int nc = ncounts(p, counts);
        for (int k = 0; k < nc; k++)
            for (int ch = 1; ch <= 4; ch++)
                for (int j = 0; j < 3; j++) {
                    if (p == 64 && (j == 1 || ch == 3))
                        continue; /* keeps the suite fast */
                    core_sched_desc_t d =
                        mk(coll, algo, p, counts[k], ch, chunks[j]);
                    if (!core_sched_supports(algo, coll))
                        continue;
                    int claim = core_sched_rotational(&d);
                    claims += claim;
                    /* the same schedule up to rotation is also the same
                     * shape */
                    ck_assert_int_le(claim, core_sched_rotational_shape(&d));
                    if (claim || exact)
                        ck_assert_msg(claim == rotated_equal(&d),
                                      "%s/%s p=%d count=%llu ch=%d chunk=%llu: "
                                      "claims %d",
                                      herd_coll_name(coll),
                                      herd_algo_name(algo), p,
                                      (unsigned long long)counts[k], ch,
                                      (unsigned long long)chunks[j], claim);
                }
    }
    return claims;
}

START_TEST(test_ring_all_reduce_exact)
{
    /* the even-split condition is exactly when the ranks are rotations */
    ck_assert_int_gt(check_claims(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 1), 0);
}
END_TEST

/* core_sched_rotational_shape for ring all_reduce on p ranks: whenever
 * it is claimed, exactly when, lowering every rank gives rank 0's steps
 * rotated with only the counts differing. Returns the claims that
 * core_sched_rotational does not make (uneven splits). */
static int check_shape_claims(int p)
{
    static const uint64_t chunks[] = {0, 4, 36, 400};
    uint64_t P = (uint64_t)p;
    const uint64_t counts[] = {1,     P - 1,      P + 1,      2 * P + 1,
                               97,    1009,       12 * P + 3, 40 * P + 7,
                               4 * P, 100 * P + 1};
    int uneven = 0;
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
        for (int ch = 1; ch <= 4; ch++)
            for (size_t j = 0; j < sizeof(chunks) / sizeof(chunks[0]); j++) {
                core_sched_desc_t d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING,
                                         p, counts[k], ch, chunks[j]);
                int claim = core_sched_rotational_shape(&d);
                uneven += claim && !core_sched_rotational(&d);
                ck_assert_msg(claim == rotated_same(&d, 1),
                              "p=%d count=%llu ch=%d chunk=%llu: claims %d", p,
                              (unsigned long long)counts[k], ch,
                              (unsigned long long)chunks[j], claim);
            }
    return uneven;
}

START_TEST(test_ring_all_reduce_shape_exact)
{
    /* uneven splits: the same steps as long as no chunk is empty */
    static const int ps[] = {2, 3, 4, 5, 7, 8, 13, 16, 31};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
        ck_assert_int_gt(check_shape_claims(ps[i]), 0);
    /* the DDP benchmark's buckets: 512 ranks, arbitrary sizes */
    core_sched_desc_t d =
        mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 512, 2362368 + 5, 1, 0);
    ck_assert_int_eq(core_sched_rotational(&d), 0);
    ck_assert_int_eq(core_sched_rotational_shape(&d), 1);
    d.count = 511; /* a block is empty */
    ck_assert_int_eq(core_sched_rotational_shape(&d), 0);
    /* other collectives and algorithms: the same as full symmetry */
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_TREE, 8, 1009, 1, 0);
    ck_assert_int_eq(core_sched_rotational_shape(&d), 0);
    d = mk(HERD_COLL_BROADCAST, HERD_ALGO_RING, 8, 1009, 1, 0);
    ck_assert_int_eq(core_sched_rotational_shape(&d), 0);
    d = mk(HERD_COLL_ALL_GATHER, HERD_ALGO_RING, 8, 1009, 3, 0);
    ck_assert_int_eq(core_sched_rotational_shape(&d), 1);
    d.channels = 0;
    ck_assert_int_eq(core_sched_rotational_shape(&d), 0);
}
END_TEST

START_TEST(test_ring_gather_scatter)
{
    /* sizes never depend on the rank: claimed for every shape */
    ck_assert_int_eq(check_claims(HERD_COLL_ALL_GATHER, HERD_ALGO_RING, 1),
                     ALL_SHAPES);
    ck_assert_int_eq(check_claims(HERD_COLL_REDUCE_SCATTER, HERD_ALGO_RING, 1),
                     ALL_SHAPES);
}
END_TEST

START_TEST(test_chains_and_barrier)
{
    /* broadcast / reduce chains start at a root: claimed for p = 1 only */
    int one = ONE_RANK;
    ck_assert_int_eq(check_claims(HERD_COLL_BROADCAST, HERD_ALGO_RING, 0), one);
    ck_assert_int_eq(check_claims(HERD_COLL_REDUCE, HERD_ALGO_RING, 0), one);
    ck_assert_int_gt(check_claims(HERD_COLL_BARRIER, HERD_ALGO_RHD, 1), one);
}
END_TEST

START_TEST(test_other_algorithms)
{
    /* not claimed beyond one rank, and what is claimed holds */
    static const struct {
        herd_coll_t coll;
        herd_algo_t algo;
    } cases[] = {{HERD_COLL_ALL_REDUCE, HERD_ALGO_TREE},
                 {HERD_COLL_ALL_REDUCE, HERD_ALGO_RHD},
                 {HERD_COLL_ALL_REDUCE, HERD_ALGO_RD},
                 {HERD_COLL_ALL_GATHER, HERD_ALGO_DIRECT},
                 {HERD_COLL_ALL_TO_ALL, HERD_ALGO_DIRECT},
                 {HERD_COLL_BROADCAST, HERD_ALGO_BINOMIAL},
                 {HERD_COLL_GATHER, HERD_ALGO_BINOMIAL}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_int_eq(check_claims(cases[i].coll, cases[i].algo, 0),
                         ONE_RANK);
}
END_TEST

START_TEST(test_bench_shapes_and_errors)
{
    /* bench_sim_scale: 512 ranks x 16 channels and 1024 x 4, 1 GiB */
    core_sched_desc_t d =
        mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 512, 1u << 28, 16, 2u << 20);
    ck_assert_int_eq(core_sched_rotational(&d), 1);
    d.rank = 300; /* the rank asked about does not matter */
    ck_assert_int_eq(core_sched_rotational(&d), 1);
    d.nranks = 1024;
    d.channels = 4;
    ck_assert_int_eq(core_sched_rotational(&d), 1);
    d.count += 4; /* no longer splits evenly */
    ck_assert_int_eq(core_sched_rotational(&d), 0);
    /* AUTO resolves as lowering does: large -> ring, tiny -> rd */
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_AUTO, 8, 8u << 20, 2, 0);
    ck_assert_int_eq(core_sched_rotational(&d), 1);
    d.count = 8;
    ck_assert_int_eq(core_sched_rotational(&d), 0);
    /* a smaller copy of the benchmark's shape, checked by lowering */
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 64, 64 * 16 * 6, 16, 8);
    ck_assert_int_eq(core_sched_rotational(&d), 1);
    ck_assert_int_eq(rotated_equal(&d), 1);
    /* invalid descriptors are never claimed */
    d.channels = 0;
    ck_assert_int_eq(core_sched_rotational(&d), 0);
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 0, 64, 1, 0);
    ck_assert_int_eq(core_sched_rotational(&d), 0);
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_NCCL, 8, 64, 1, 0);
    ck_assert_int_eq(core_sched_rotational(&d), 0);
    d = mk(HERD_COLL_ALL_TO_ALL, HERD_ALGO_RING, 8, 64, 1, 0);
    ck_assert_int_eq(core_sched_rotational(&d), 0);
    d = mk(HERD_COLL_ALL_GATHER, HERD_ALGO_RING, 8, 64, 1, 0);
    d.elem_size = 0;
    ck_assert_int_eq(core_sched_rotational(&d), 0);
}
END_TEST

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

START_TEST(test_counts_ring_all_reduce)
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

START_TEST(test_counts_other_collectives)
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
                d.root = ps[i] / 3;
                check_all_ranks(&d);
            }
}
END_TEST

START_TEST(test_counts_errors)
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
    Suite *s = suite_create("sched_rotate");
    TCase *tc = tcase_create("rotate");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_ring_all_reduce_exact);
    tcase_add_test(tc, test_ring_all_reduce_shape_exact);
    tcase_add_test(tc, test_ring_gather_scatter);
    tcase_add_test(tc, test_chains_and_barrier);
    tcase_add_test(tc, test_other_algorithms);
    tcase_add_test(tc, test_bench_shapes_and_errors);
    tcase_add_test(tc, test_counts_ring_all_reduce);
    tcase_add_test(tc, test_counts_other_collectives);
    tcase_add_test(tc, test_counts_errors);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
