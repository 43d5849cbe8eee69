/* tests/unit_sched.c - schedule lowering: the builder, which algorithm
 * implements which collective, the size-based default, argument errors,
 * the closed forms of step counts and sizes (ring all_reduce: 2(p-1)
 * sends of n/p), channels and chunks, dependency structure (pipelining:
 * chunk j of step s+1 waits only for chunk j of step s), and lowering
 * very large groups in O(steps). */
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "support/testutil.h"

static core_sched_desc_t mk(herd_coll_t coll, herd_algo_t algo, int p, int rank,
                            uint64_t count)
{
    core_sched_desc_t d = {.coll = coll,
                           .algo = algo,
                           .nranks = p,
                           .rank = rank,
                           .count = count,
                           .elem_size = 4,
                           .channels = 1};
    return d;
}

static uint32_t count_kind(const core_sched_t *s, core_step_kind_t k)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nsteps; i++)
        n += s->steps[i].kind == k;
    return n;
}

START_TEST(test_builder)
{
    core_sched_t s = {0};
    int64_t deps[3] = {-1, -1, -1};
    for (int i = 0; i < 1000; i++) {
        int64_t idx =
            core_sched_add(&s, CORE_STEP_COPY, -1, 0, CORE_BUF_IN, (uint64_t)i,
                           CORE_BUF_OUT, (uint64_t)i, 1, deps, 3);
        ck_assert_int_eq(idx, i);
        deps[i % 3] = idx; /* negative entries are skipped */
    }
    ck_assert_uint_eq(s.nsteps, 1000);
    ck_assert_uint_eq(s.steps[0].ndeps, 0);
    ck_assert_uint_eq(s.steps[999].ndeps, 3);
    ck_assert_uint_le(s.steps_cap, 2048);
    core_sched_fini(&s);
    ck_assert_ptr_null(s.steps);
    core_sched_fini(&s); /* twice is harmless */
}
END_TEST

START_TEST(test_every_coll_has_algo)
{
    for (int c = 0; c < HERD_COLL_SEND; c++) {
        herd_algo_t small = core_sched_pick((herd_coll_t)c, 16, 64);
        herd_algo_t large = core_sched_pick((herd_coll_t)c, 16, 1u << 30);
        ck_assert(core_sched_supports(small, (herd_coll_t)c));
        ck_assert(core_sched_supports(large, (herd_coll_t)c));
        ck_assert(core_sched_supports(HERD_ALGO_AUTO, (herd_coll_t)c));
    }
    ck_assert(!core_sched_supports(HERD_ALGO_RING, HERD_COLL_SEND));
    ck_assert(!core_sched_supports(HERD_ALGO_NCCL, HERD_COLL_ALL_REDUCE));
    ck_assert(!core_sched_supports(HERD_ALGO_RING, HERD_COLL_ALL_TO_ALL));
    ck_assert_int_eq(core_sched_pick(HERD_COLL_ALL_REDUCE, 64, 1024),
                     HERD_ALGO_RD);
    ck_assert_int_eq(core_sched_pick(HERD_COLL_ALL_REDUCE, 2, 4096),
                     HERD_ALGO_RD);
    ck_assert_int_eq(core_sched_pick(HERD_COLL_ALL_REDUCE, 64, 4097),
                     HERD_ALGO_RHD);
    ck_assert_int_eq(core_sched_pick(HERD_COLL_ALL_REDUCE, 64, 64u << 10),
                     HERD_ALGO_RHD);
    ck_assert_int_eq(core_sched_pick(HERD_COLL_ALL_REDUCE, 64, 64u << 20),
                     HERD_ALGO_RING);
    ck_assert_int_eq(core_sched_pick(HERD_COLL_BROADCAST, 64, 64u << 20),
                     HERD_ALGO_RING);
}
END_TEST

START_TEST(test_errors)
{
    core_sched_t s = {0};
    core_sched_desc_t d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4, 4, 8);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_INVALID_ARG);
    d.rank = 0;
    d.channels = 0;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_INVALID_ARG);
    d.channels = 1;
    d.elem_size = 0;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_INVALID_ARG);
    d = mk(HERD_COLL_BROADCAST, HERD_ALGO_RING, 4, 0, 8);
    d.root = 4;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_INVALID_ARG);
    d = mk(HERD_COLL_ALL_TO_ALL, HERD_ALGO_TREE, 4, 0, 8);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_UNSUPPORTED);
    d = mk(HERD_COLL_SEND, HERD_ALGO_AUTO, 4, 0, 8);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_UNSUPPORTED);
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_HIER, 6, 0, 8);
    d.ranks_per_node = 4;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_INVALID_ARG);
    d = mk(HERD_COLL_ALL_GATHER, HERD_ALGO_RING, 4, 0, UINT64_MAX / 4);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_OVERFLOW);
    ck_assert_ptr_null(s.steps);
}
END_TEST

/* Ring all_reduce: 2(p-1) sends and receives of n/p per rank. */
START_TEST(test_ring_closed_form)
{
    core_sched_t s = {0};
    core_sched_desc_t d =
        mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 8, 3, 8 * 1000);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_SEND), 14);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_RECV_REDUCE), 7);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_RECV), 7);
    for (uint32_t i = 0; i < s.nsteps; i++) {
        ck_assert_uint_eq(s.steps[i].count, 1000);
        if (s.steps[i].kind == CORE_STEP_SEND)
            ck_assert_int_eq(s.steps[i].peer, 4);
        else
            ck_assert_int_eq(s.steps[i].peer, 2);
    }
    ck_assert_uint_eq(s.scratch_count, 0);
    core_sched_fini(&s);
}
END_TEST

/* Chunks pipeline: each send of step s+1 depends on exactly one step, the
 * receive of the same chunk at step s, never on a whole step. */
START_TEST(test_ring_chunks_pipeline)
{
    core_sched_t s = {0};
    core_sched_desc_t d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4, 0, 400);
    d.chunk_bytes = 100; /* 25 elements: blocks of 100 -> 4 chunks */
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_SEND), 2 * 3 * 4);
    for (uint32_t i = 0; i < s.nsteps; i++) {
        const core_step_t *st = &s.steps[i];
        ck_assert_uint_eq(st->count, 25);
        ck_assert_uint_le(st->ndeps, 1);
        if (st->kind == CORE_STEP_SEND && st->ndeps) {
            const core_step_t *dep = &s.steps[s.deps[st->dep_off]];
            ck_assert(dep->kind == CORE_STEP_RECV ||
                      dep->kind == CORE_STEP_RECV_REDUCE);
            ck_assert_uint_eq(dep->dst_off, st->src_off);
        }
    }
    core_sched_fini(&s);
}
END_TEST

/* Channels: contiguous ranges, one channel id each, covering the data. */
START_TEST(test_channels)
{
    core_sched_t s = {0};
    core_sched_desc_t d = mk(HERD_COLL_ALL_GATHER, HERD_ALGO_RING, 4, 1, 1000);
    d.channels = 4;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    uint64_t per_ch[4] = {0};
    for (uint32_t i = 0; i < s.nsteps; i++) {
        const core_step_t *st = &s.steps[i];
        ck_assert_uint_lt(st->channel, 4);
        if (st->kind == CORE_STEP_RECV) {
            per_ch[st->channel] += st->count;
            uint64_t in_block = st->dst_off % 1000;
            ck_assert_uint_ge(in_block, 250 * st->channel);
            ck_assert_uint_le(in_block + st->count, 250 * (st->channel + 1u));
        }
    }
    for (int c = 0; c < 4; c++)
        ck_assert_uint_eq(per_ch[c], 3 * 250);
    core_sched_fini(&s);
}
END_TEST

START_TEST(test_rhd_and_tree_shape)
{
    core_sched_t s = {0};
    /* rhd, p = 16: log2 16 = 4 halvings then 4 doublings */
    core_sched_desc_t d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RHD, 16, 5, 1600);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_SEND), 8);
    ck_assert_uint_eq(s.steps[0].count, 800);
    core_sched_fini(&s);
    /* rhd, p = 6: rank 0 is folded into rank 1 (one send, one recv) */
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RHD, 6, 0, 60);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert_uint_eq(s.nsteps, 2);
    ck_assert_int_eq(s.steps[0].peer, 1);
    core_sched_fini(&s);
    /* tree: a leaf of tree A sends up and receives down, per half */
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_TREE, 7, 6, 70);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert(s.nsteps >= 4);
    core_sched_fini(&s);
}
END_TEST

/* rd, p = 2: one exchange of the whole vector; the reduce lands in
 * scratch (OUT may alias IN while IN is being sent) and one local copy
 * moves it to OUT. p = 4: two exchanges, the second reduces into OUT. */
/* rhd's exchanges are step-synchronous: the first piece of each channel
 * of an exchange's send waits for every receive of the exchange before
 * it, not only for the pieces whose data it reads (nor for its sends:
 * they end at different points in the simulator and the real engines);
 * the other pieces follow it on their connection. */
static int depends_on(const core_sched_t *s, uint32_t i, uint32_t on)
{
    const core_step_t *st = &s->steps[i];
    for (uint32_t k = 0; k < st->ndeps; k++)
        if (s->deps[st->dep_off + k] == on)
            return 1;
    return 0;
}

START_TEST(test_rhd_exchanges_synchronous)
{
    core_sched_t s = {0};
    /* p = 4, rank 1: two halvings (of 2,048 then 1,024 elements) and two
     * doublings, 1 KiB chunks: 8, 4, 4 and 8 pieces a message */
    core_sched_desc_t d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RHD, 4, 1, 4096);
    d.chunk_bytes = 1024;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    uint32_t first[4], n = 0, prev = 0;
    for (uint32_t i = 0; i < s.nsteps; i++)
        if (s.steps[i].kind == CORE_STEP_SEND &&
            (i == 0 || s.steps[i - 1].kind != CORE_STEP_SEND) && n < 4)
            first[n++] = i;
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(s.nsteps, 2 * (8 + 4 + 4 + 8));
    static const uint32_t sent[4] = {8, 4, 4, 8}; /* pieces of each send */
    for (uint32_t e = 1; e < 4; e++) {
        /* every receive of the exchange before, none of its sends */
        for (uint32_t k = prev; k < first[e]; k++)
            ck_assert_msg(depends_on(&s, first[e], k) ==
                              (k >= prev + sent[e - 1]),
                          "exchange %u's first send and step %u", e, k);
        /* its second piece only for what it reads */
        ck_assert(!depends_on(&s, first[e] + 1, prev));
        prev = first[e];
    }
    core_sched_fini(&s);
    /* two channels: the first piece of each */
    d.channels = 2;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    /* exchange 0: 8 pieces each way (4 per channel); exchange 1's send:
     * 2 pieces per channel */
    uint32_t e1 = 16;
    ck_assert_int_eq(s.steps[e1].kind, CORE_STEP_SEND);
    ck_assert_int_eq(s.steps[e1].channel, 0);
    ck_assert_int_eq(s.steps[e1 + 2].channel, 1);
    for (uint32_t k = 8; k < e1; k++) {
        ck_assert(depends_on(&s, e1, k));
        ck_assert(depends_on(&s, e1 + 2, k));
    }
    ck_assert(!depends_on(&s, e1 + 1, 0));
    core_sched_fini(&s);
}
END_TEST

START_TEST(test_rd_shape)
{
    core_sched_t s = {0};
    core_sched_desc_t d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RD, 2, 1, 2);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert_uint_eq(s.nsteps, 3);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_SEND), 1);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_RECV_REDUCE), 1);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_COPY), 1);
    ck_assert_int_eq(s.steps[0].peer, 0);
    ck_assert_uint_eq(s.steps[0].count, 2);
    ck_assert_uint_eq(s.steps[1].ndeps, 0); /* not after its own send */
    ck_assert_uint_eq(s.scratch_count, 2);
    core_sched_fini(&s);
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RD, 4, 2, 8);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert_uint_eq(s.nsteps, 4);
    ck_assert_int_eq(s.steps[0].peer, 3);
    ck_assert_int_eq(s.steps[2].peer, 0);
    ck_assert_int_eq(s.steps[3].dst_buf, CORE_BUF_OUT);
    core_sched_fini(&s);
    /* p = 6: rank 0 is folded into rank 1; rank 1 does 1 + 2 + 1 sends */
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RD, 6, 0, 6);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert_uint_eq(s.nsteps, 2);
    core_sched_fini(&s);
    d.rank = 1;
    d.channels = 2;
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_SEND), 2 * 3);
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_RECV_REDUCE), 2 * 3);
    for (uint32_t i = 0; i < s.nsteps; i++)
        ck_assert_uint_eq(s.steps[i].count, 3);
    core_sched_fini(&s);
    /* AUTO picks rd for a tiny all_reduce even at p = 2 */
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_AUTO, 2, 0, 2);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    ck_assert_int_eq(s.desc.algo, HERD_ALGO_RD);
    core_sched_fini(&s);
    d = mk(HERD_COLL_BROADCAST, HERD_ALGO_RD, 4, 0, 8);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(test_print)
{
    core_sched_t s = {0};
    core_sched_desc_t d = mk(HERD_COLL_BROADCAST, HERD_ALGO_BINOMIAL, 8, 0, 8);
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    core_sched_print(&s, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "binomial broadcast"));
    ck_assert_ptr_nonnull(strstr(buf, "send        to   4"));
    ck_assert_ptr_nonnull(strstr(buf, "out[0..8)"));
    free(buf);
    core_sched_fini(&s);
}
END_TEST

/* The simulator lowers thousands of ranks: a 4096-rank ring all_reduce
 * rank has 4 * 4095 steps, and lowering every rank must stay linear. */
START_TEST(test_large_group)
{
    core_sched_desc_t d =
        mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4096, 0, 1u << 24);
    for (int r = 0; r < 4096; r += 64) {
        core_sched_t s = {0};
        d.rank = r;
        ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
        ck_assert_uint_eq(s.nsteps, 4 * 4095);
        ck_assert_uint_le(s.ndeps, s.nsteps);
        core_sched_fini(&s);
    }
    d = mk(HERD_COLL_ALL_REDUCE, HERD_ALGO_HIER, 4096, 77, 1u << 24);
    d.ranks_per_node = 8;
    core_sched_t s = {0};
    ck_assert_int_eq(core_sched_lower(&d, &s), HERD_OK);
    /* 2(L-1) intra steps over N cells each, 2(N-1) inter steps */
    ck_assert_uint_eq(count_kind(&s, CORE_STEP_SEND), 2 * 7 * 512 + 2 * 511);
    core_sched_fini(&s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sched");
    TCase *tc = tcase_create("lower");
    tcase_add_test(tc, test_builder);
    tcase_add_test(tc, test_every_coll_has_algo);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_ring_closed_form);
    tcase_add_test(tc, test_ring_chunks_pipeline);
    tcase_add_test(tc, test_channels);
    tcase_add_test(tc, test_rhd_and_tree_shape);
    tcase_add_test(tc, test_rhd_exchanges_synchronous);
    tcase_add_test(tc, test_rd_shape);
    tcase_add_test(tc, test_print);
    tcase_add_test(tc, test_large_group);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
