/* tests/sim_rotate.c - members of a ring collective whose schedules are
 * rotations of the first poster's get executors derived from it instead
 * of lowering their own (sim/exec_build.c); herd_sim_opts_t.no_rotation
 * turns that off. Both ways must give byte-identical timelines and end
 * times: ring all_reduce (even counts, and uneven ones whose members
 * differ only in their counts, including counts over 32 bits),
 * all_gather, reduce_scatter and barrier, on several group sizes and
 * channel counts, with chunking, skewed posting (so the first poster is
 * not rank 0 and messages arrive before their receiver posted), a
 * subgroup, a slow NIC and a slow link (so a wrongly rotated peer would
 * show). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "support/testutil.h"

typedef struct shape {
    int nodes, gpn, channels;
    size_t chunk;
    size_t k; /* all_reduce count: p * channels * k, split evenly */
} shape_t;

typedef struct tl {
    char *text;
    size_t len, cap;
    int ncoll;
} tl_t;

static void on_rec(const herd_tl_rec_t *r, void *arg)
{
    tl_t *t = arg;
    char line[256];
    int n = snprintf(
        line, sizeof(line), "%d %d %d %llu %d %d %llu %llu %llu %d\n", r->kind,
        r->rank, r->group, (unsigned long long)r->seq, r->coll, r->algo,
        (unsigned long long)r->count, (unsigned long long)r->start_ns,
        (unsigned long long)r->end_ns, r->status);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->cap + (size_t)n + 1) * 2;
        t->text = realloc(t->text, t->cap);
        ck_assert_ptr_nonnull(t->text);
    }
    memcpy(t->text + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
    t->ncoll += r->kind == HERD_TL_COLL;
}

/* Posting skew: rank 1 posts first, rank 0 later than most. */
static int skew(herd_comm_t *c, int i)
{
    int r = herd_comm_rank(c);
    return herd_compute(c, 1e-6 * ((r * 7 + 3 + i) % 5), "skew") == HERD_OK ? 0
                                                                            : 1;
}

#define NUNEVEN 4
#define NCOLLS (4 + NUNEVEN) /* per member and communicator */

static int ring_colls(herd_comm_t *c, const shape_t *s, void *buf)
{
    size_t p = (size_t)herd_comm_size(c), n = p * (size_t)s->channels * s->k;
    const herd_coll_t colls[] = {HERD_COLL_ALL_REDUCE, HERD_COLL_ALL_GATHER,
                                 HERD_COLL_REDUCE_SCATTER};
    for (size_t i = 0; i < 3; i++)
        if (herd_comm_set_algo(c, colls[i], HERD_ALGO_RING) != HERD_OK)
            return 1;
    if (herd_comm_set_channels(c, s->channels, s->chunk) != HERD_OK)
        return 1;
    int rc = skew(c, 0) ||
             herd_all_reduce(c, buf, buf, n, HERD_FLOAT32, HERD_SUM, NULL);
    rc = rc || skew(c, 1) ||
         herd_all_gather(c, buf, buf, n / p + 5, HERD_FLOAT32, NULL);
    rc = rc || skew(c, 2) ||
         herd_reduce_scatter(c, buf, buf, n / p + 3, HERD_FLOAT32, HERD_SUM,
                             NULL);
    rc = rc || skew(c, 3) || herd_barrier(c, NULL);
    /* uneven splits: members count their own steps (same shape) where no
     * chunk is empty, else lower their own; fewer elements than ranks
     * always leaves some empty */
    const size_t uneven[NUNEVEN] = {n + 1, n * 7 / 5 + 3, n + p - 1, p - 1};
    for (int i = 0; i < NUNEVEN; i++)
        rc = rc || skew(c, 4 + i) ||
             herd_all_reduce(c, buf, buf, uneven[i], HERD_FLOAT32, HERD_SUM,
                             NULL);
    return rc;
}

static int prog(herd_comm_t *c, void *arg)
{
    const shape_t *s = arg;
    int p = herd_comm_size(c);
    void *buf;
    if (herd_alloc(c, (size_t)p * s->channels * s->k * 4 * 2 + 4096, &buf))
        return 1;
    if (ring_colls(c, s, buf))
        return 2;
    int odd[64], n = 0;
    for (int r = 1; r < p; r += 2)
        odd[n++] = r;
    herd_comm_t *g = NULL;
    if (n > 1 && herd_new_group(c, odd, n, &g))
        return 3;
    if (g) {
        int rc = ring_colls(g, s, buf);
        herd_comm_destroy(g);
        if (rc)
            return 4;
    }
    return 0;
}

static void run(const shape_t *s, int no_rotation, tl_t *t, uint64_t *end)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = s->nodes;
    o.cluster.gpus_per_node = s->gpn;
    o.no_rotation = no_rotation;
    herd_rank_override_t ov = {
        .rank = 2, .nic_factor = 0.5, .intra_factor = 0.7};
    herd_link_override_t lk = {
        .a = 0, .b = 1, .bw_factor = 0.25, .extra_latency = 3e-6};
    o.ranks = &ov;
    o.nranks_overrides = s->nodes * s->gpn > 2;
    o.links = &lk;
    o.nlink_overrides = 1;
    memset(t, 0, sizeof(*t));
    herd_init_t init = {.backend = "sim",
                        .engine_opts = &o,
                        .timeline_cb = on_rec,
                        .timeline_arg = t};
    herd_run_info_t info;
    ck_assert_int_eq(herd_run(&init, prog, (void *)s, &info), HERD_OK);
    *end = info.end_time_ns;
    herd_run_info_clear(&info);
}

static void same_both_ways(const shape_t *s)
{
    tl_t a, b;
    uint64_t ea, eb;
    run(s, 0, &a, &ea);
    run(s, 1, &b, &eb);
    int p = s->nodes * s->gpn, g = p / 2;
    /* NCOLLS collectives per member, in the world and the odd subgroup */
    ck_assert_int_eq(a.ncoll, NCOLLS * p + (g > 1 ? NCOLLS * g : 0));
    ck_assert_uint_gt(ea, 0);
    ck_assert_uint_eq(ea, eb);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_msg(memcmp(a.text, b.text, a.len) == 0,
                  "%d x %d, %d channels: timelines differ", s->nodes, s->gpn,
                  s->channels);
    free(a.text);
    free(b.text);
}

START_TEST(small_groups)
{
    for (int p = 2; p <= 7; p++)
        for (int ch = 1; ch <= 3; ch++) {
            shape_t s = {1, p, ch, 0, 3};
            same_both_ways(&s);
        }
}
END_TEST

START_TEST(chunked_multi_node)
{
    static const shape_t shapes[] = {{2, 4, 1, 64, 40},  {2, 4, 4, 64, 24},
                                     {3, 4, 2, 128, 33}, {4, 4, 3, 256, 70},
                                     {5, 2, 2, 32, 16},  {8, 8, 2, 512, 64}};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        same_both_ways(&shapes[i]);
}
END_TEST

START_TEST(wide_counts)
{
    /* blocks of more than 2^32 elements (chunks of 64 GiB): 64-bit
     * counts per member */
    const size_t big = (size_t)1 << 36;
    const shape_t shapes[] = {{1, 2, 1, big, (1ull << 32) + 3},
                              {1, 3, 1, big, (1ull << 32) + 1},
                              {1, 3, 2, big, (1ull << 31) + 1}};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        same_both_ways(&shapes[i]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_rotate");
    TCase *t = tcase_create("rotate");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, small_groups);
    tcase_add_test(t, chunked_multi_node);
    tcase_add_test(t, wide_counts);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
