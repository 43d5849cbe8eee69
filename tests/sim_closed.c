/* tests/sim_closed.c - without contention the simulator agrees with the
 * closed forms to the nanosecond: ring all-reduce (one node, and across
 * nodes), pipelined ring broadcast, the local reduction cost, recursive
 * halving-doubling and double binary tree. Expected values
 * are computed here from the cluster parameters, with the network model's
 * documented rounding: a transfer of b bytes at bandwidth B takes
 * ceil(b * 1e9 / B) ns, latencies round to the nearest ns, and a local
 * reduction of b bytes takes round(b * 1e9 / reduce_bw) ns. */
#include <math.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "core/sched.h"
#include "support/testutil.h"

typedef struct closed {
    herd_coll_t coll;
    herd_algo_t algo;
    size_t count; /* float32 elements */
    int channels;
    size_t chunk;
} closed_t;

static uint64_t tx(double bytes, double bw)
{
    return (uint64_t)ceil(bytes * 1e9 / bw - 1e-6);
}

static uint64_t lat(double s)
{
    return (uint64_t)llround(s * 1e9);
}

static int prog(herd_comm_t *c, void *arg)
{
    const closed_t *k = arg;
    herd_comm_set_algo(c, k->coll, k->algo);
    herd_comm_set_channels(c, k->channels, k->chunk);
    void *buf;
    if (herd_alloc(c, k->count * 4, &buf) != HERD_OK)
        return 1;
    herd_status_t st =
        k->coll == HERD_COLL_BROADCAST
            ? herd_broadcast(c, buf, k->count, HERD_FLOAT32, 0, NULL)
            : herd_all_reduce(c, buf, buf, k->count, HERD_FLOAT32, HERD_SUM,
                              NULL);
    return st == HERD_OK ? 0 : 2;
}

static uint64_t simulate(herd_sim_opts_t *o, closed_t *k)
{
    herd_init_t init = {.backend = "sim", .engine_opts = o};
    herd_run_info_t info;
    ck_assert_int_eq(herd_run(&init, prog, k, &info), HERD_OK);
    uint64_t t = info.end_time_ns;
    herd_run_info_clear(&info);
    return t;
}

static void cluster(herd_sim_opts_t *o, int nodes, int gpn)
{
    herd_sim_opts_init(o);
    o->cluster.nodes = nodes;
    o->cluster.gpus_per_node = gpn;
    o->cluster.intra.bandwidth = 370e9;
    o->cluster.intra.latency = 1e-6;
    o->cluster.inter.bandwidth = 50e9;
    o->cluster.inter.latency = 5e-6;
}

START_TEST(ring_all_reduce_one_node)
{
    static const int ps[] = {2, 3, 4, 8};
    for (size_t i = 0; i < 4; i++) {
        int p = ps[i];
        herd_sim_opts_t o;
        cluster(&o, 1, p);
        closed_t k = {HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, (size_t)p * 50000,
                      1, 16u << 20};
        /* 2(p-1) steps of one block (n/p) each: alpha + n/(p beta) */
        double b = 4.0 * (double)k.count / p;
        uint64_t want = 2 * (uint64_t)(p - 1) * (tx(b, 370e9) + lat(1e-6));
        ck_assert_uint_eq(simulate(&o, &k), want);
    }
}
END_TEST

START_TEST(ring_all_reduce_across_nodes)
{
    /* one GPU per node: every hop crosses the network */
    herd_sim_opts_t o;
    cluster(&o, 6, 1);
    closed_t k = {HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 6 * 100000, 1,
                  64u << 20};
    double b = 4.0 * 100000;
    uint64_t want = 10 * (tx(b, 50e9) + lat(5e-6));
    ck_assert_uint_eq(simulate(&o, &k), want);
}
END_TEST

START_TEST(ring_all_reduce_reduction_cost)
{
    herd_sim_opts_t o;
    cluster(&o, 1, 4);
    o.cluster.reduce_bw = 1e12;
    closed_t k = {HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4 * 30000, 1,
                  16u << 20};
    double b = 4.0 * 30000;
    /* the p-1 reduce-scatter steps each add one local reduction */
    uint64_t red = (uint64_t)llround(b * 1e9 / 1e12);
    uint64_t want = 6 * (tx(b, 370e9) + lat(1e-6)) + 3 * red;
    ck_assert_uint_eq(simulate(&o, &k), want);
}
END_TEST

START_TEST(ring_broadcast_pipelined)
{
    /* J chunks down a chain of p ranks: (J + p - 2) transfers of one
     * chunk plus (p - 1) latencies */
    herd_sim_opts_t o;
    cluster(&o, 1, 8);
    size_t chunk = 1u << 20, J = 16;
    closed_t k = {HERD_COLL_BROADCAST, HERD_ALGO_RING, J * chunk / 4, 1, chunk};
    uint64_t want = (J + 8 - 2) * tx((double)chunk, 370e9) + 7 * lat(1e-6);
    ck_assert_uint_eq(simulate(&o, &k), want);
    /* without chunking it is (p - 1) full transfers */
    k.chunk = 1u << 30;
    want = 7 * (tx((double)(J * chunk), 370e9) + lat(1e-6));
    ck_assert_uint_eq(simulate(&o, &k), want);
}
END_TEST

START_TEST(rhd_all_reduce)
{
    if (!core_sched_supports(HERD_ALGO_RHD, HERD_COLL_ALL_REDUCE))
        return; /* not implemented in core/ yet */
    static const int ps[] = {2, 4, 8};
    for (size_t i = 0; i < 3; i++) {
        int p = ps[i];
        herd_sim_opts_t o;
        cluster(&o, 1, p);
        closed_t k = {HERD_COLL_ALL_REDUCE, HERD_ALGO_RHD, 1 << 16, 1,
                      64u << 20};
        /* halving then doubling: log2 p exchanges of n/2, n/4, ... */
        uint64_t want = 0;
        double b = 4.0 * (double)k.count;
        for (int m = p / 2; m >= 1; m /= 2) {
            b /= 2;
            want += 2 * (tx(b, 370e9) + lat(1e-6));
        }
        ck_assert_uint_eq(simulate(&o, &k), want);
    }
}
END_TEST

START_TEST(tree_all_reduce_two_ranks)
{
    if (!core_sched_supports(HERD_ALGO_TREE, HERD_COLL_ALL_REDUCE))
        return; /* not implemented in core/ yet */
    /* two channels, one per tree: each half goes up its tree's one edge
     * and comes back down, the two trees in opposite directions */
    herd_sim_opts_t o;
    cluster(&o, 1, 2);
    closed_t k = {HERD_COLL_ALL_REDUCE, HERD_ALGO_TREE, 1 << 16, 2, 64u << 20};
    double half = 4.0 * (double)k.count / 2;
    uint64_t want = 2 * (tx(half, 370e9) + lat(1e-6));
    ck_assert_uint_eq(simulate(&o, &k), want);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_closed");
    TCase *t = tcase_create("closed_form");
    tcase_add_test(t, ring_all_reduce_one_node);
    tcase_add_test(t, ring_all_reduce_across_nodes);
    tcase_add_test(t, ring_all_reduce_reduction_cost);
    tcase_add_test(t, ring_broadcast_pipelined);
    tcase_add_test(t, rhd_all_reduce);
    tcase_add_test(t, tree_all_reduce_two_ranks);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
