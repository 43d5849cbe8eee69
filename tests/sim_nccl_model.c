/* tests/sim_nccl_model.c - the simulator's model of NCCL (algorithm
 * "nccl"): NCCL's tuning-model choices (algorithm, protocol, channels,
 * chunk) and estimates for an 8 x H100 NVLink node and for 64 nodes with
 * 400 Gb/s NICs, the published bus-bandwidth plateaus (~370 GB/s ring
 * all_reduce in one node, 46-48 GB/s per NIC across nodes) within 10 %,
 * in the analytic model and in the simulated execution, agreement
 * between the two, correct results through every lowering, and the
 * NCCL_ALGO / NCCL_PROTO overrides. All numbers are model outputs in
 * virtual time: deterministic, not timings of this machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "sim/nccl_model.h"
#include "support/testutil.h"

#define GIB (1ull << 30)

/* nccl-tests' bus bandwidth (GB/s) of an all_reduce of `bytes` in `us`. */
static double ar_busbw(uint64_t bytes, double us, int p)
{
    return (double)bytes / (us * 1e3) * 2.0 * (p - 1) / p;
}

static void within(double got, double want, double tol, const char *what)
{
    ck_assert_msg(got >= want * (1 - tol) && got <= want * (1 + tol),
                  "%s: %.2f is not within %.0f%% of %.2f", what, got, tol * 100,
                  want);
}

static herd_cluster_t cluster(int nodes, int gpus)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o); /* H100: NVLink 370 GB/s, 400 Gb/s NICs */
    o.cluster.nodes = nodes;
    o.cluster.gpus_per_node = gpus;
    return o.cluster;
}

static sim_nccl_plan_t predict(int nodes, int gpus, herd_coll_t coll,
                               uint64_t bytes)
{
    herd_cluster_t c = cluster(nodes, gpus);
    int p = nodes * gpus;
    uint64_t count = bytes / 4;
    if (coll == HERD_COLL_ALL_GATHER || coll == HERD_COLL_REDUCE_SCATTER)
        count /= (uint64_t)p;
    sim_nccl_plan_t pl;
    ck_assert_int_eq(sim_nccl_predict(&c, p, coll, count, HERD_FLOAT32, &pl),
                     HERD_OK);
    return pl;
}

START_TEST(h100_node_topology)
{
    herd_cluster_t c = cluster(1, 8);
    sim_nccl_topo_t t;
    ck_assert_int_eq(sim_nccl_topo_init(&c, 8, 0, &t), HERD_OK);
    /* sm90 search: 6 x 60 GB/s, duplicated to 12 x 30; 24 after postset */
    ck_assert_int_eq(t.graph_channels, 12);
    ck_assert_double_eq_tol(t.graph_bw, 30.0, 1e-9);
    ck_assert_int_eq(t.channels, 24);
    ck_assert_int_eq(t.nvlink, 1);
    ck_assert_int_eq(t.ll128, 1);
}
END_TEST

START_TEST(h100_node_choices)
{
    sim_nccl_plan_t pl = predict(1, 8, HERD_COLL_ALL_REDUCE, 8);
    ck_assert_int_eq(pl.algo, SIM_NCCL_RING);
    ck_assert_int_eq(pl.proto, SIM_NCCL_LL);
    ck_assert_int_eq(pl.channels, 1);
    /* 6.6 base + 14 steps x 0.6 us NVLink LL */
    ck_assert_double_eq_tol(pl.lat_us, 15.0, 1e-9);
    pl = predict(1, 8, HERD_COLL_ALL_REDUCE, 32u << 20);
    ck_assert_int_eq(pl.proto, SIM_NCCL_LL128);
    pl = predict(1, 8, HERD_COLL_ALL_REDUCE, GIB);
    ck_assert_int_eq(pl.algo, SIM_NCCL_RING);
    ck_assert_int_eq(pl.proto, SIM_NCCL_SIMPLE);
    ck_assert_int_eq(pl.channels, 24);
    ck_assert_uint_eq(pl.chunk_bytes, 2u << 20); /* 4 steps of 512 KiB */
    ck_assert_uint_eq(pl.slice_bytes, 1u << 20);
    ck_assert_double_eq_tol(pl.wire, 1.0, 1e-12);
    /* tree is for all_reduce only; everything else is a ring */
    herd_coll_t others[] = {HERD_COLL_BROADCAST, HERD_COLL_REDUCE,
                            HERD_COLL_ALL_GATHER, HERD_COLL_REDUCE_SCATTER};
    for (int i = 0; i < 4; i++)
        for (uint64_t b = 1024; b <= GIB; b *= 64) {
            pl = predict(64, 8, others[i], b);
            ck_assert_int_eq(pl.algo, SIM_NCCL_RING);
        }
}
END_TEST

START_TEST(h100_node_plateau)
{
    sim_nccl_plan_t pl = predict(1, 8, HERD_COLL_ALL_REDUCE, GIB);
    double busbw = ar_busbw(GIB, pl.time_us, 8);
    within(busbw, 370.0, 0.10, "model ring busbw, 8 x H100, 1 GiB");
    /* the asymptote: 12 channels x 30 GB/s */
    ck_assert_double_eq_tol(pl.bw_gbs * 14 / 8, 360.0, 1e-6);
}
END_TEST

START_TEST(multinode_topology_and_plateau)
{
    herd_cluster_t c = cluster(64, 8);
    sim_nccl_topo_t t;
    ck_assert_int_eq(sim_nccl_topo_init(&c, 512, 0, &t), HERD_OK);
    ck_assert_int_eq(t.graph_channels, 8); /* one per NIC at 48 GB/s */
    ck_assert_double_eq_tol(t.graph_bw, 48.0, 1e-9);
    ck_assert_int_eq(t.channels, 16);
    /* ring/Simple bus bandwidth at the plateau: the slope of NCCL's time
     * between 1 and 4 GiB, per NIC */
    double t1 = sim_nccl_time(&t, HERD_COLL_ALL_REDUCE, SIM_NCCL_RING,
                              SIM_NCCL_SIMPLE, GIB);
    double t4 = sim_nccl_time(&t, HERD_COLL_ALL_REDUCE, SIM_NCCL_RING,
                              SIM_NCCL_SIMPLE, 4 * GIB);
    double per_nic = ar_busbw(3 * GIB, t4 - t1, 512) / 8;
    within(per_nic, 47.0, 0.10, "model ring busbw per NIC, 64 x 8");
    /* one GPU and NIC per node: 2 channels x 24 GB/s */
    c = cluster(64, 1);
    ck_assert_int_eq(sim_nccl_topo_init(&c, 64, 0, &t), HERD_OK);
    ck_assert_double_eq_tol(t.graph_channels * t.graph_bw, 48.0, 1e-9);
}
END_TEST

START_TEST(multinode_choices)
{
    /* at 512 ranks the ring's 1022 steps of latency lose to the tree */
    sim_nccl_plan_t pl = predict(64, 8, HERD_COLL_ALL_REDUCE, 8);
    ck_assert_int_eq(pl.algo, SIM_NCCL_TREE);
    ck_assert_int_eq(pl.proto, SIM_NCCL_LL);
    /* 6.8 + 2 (7 x 0.6 + 6 x 5.0) */
    ck_assert_double_eq_tol(pl.lat_us, 75.2, 1e-9);
    pl = predict(64, 8, HERD_COLL_ALL_REDUCE, 4u << 20);
    ck_assert_int_eq(pl.algo, SIM_NCCL_TREE);
    ck_assert_int_eq(pl.proto, SIM_NCCL_LL128);
    pl = predict(64, 8, HERD_COLL_ALL_REDUCE, GIB);
    ck_assert_int_eq(pl.algo, SIM_NCCL_TREE);
    ck_assert_int_eq(pl.proto, SIM_NCCL_SIMPLE);
    /* without NVLink in the node LL128 is off */
    herd_cluster_t c = cluster(2, 4);
    c.intra.bandwidth = 24e9;
    sim_nccl_topo_t t;
    ck_assert_int_eq(sim_nccl_topo_init(&c, 8, 0, &t), HERD_OK);
    ck_assert_int_eq(t.ll128, 0);
    ck_assert(sim_nccl_time(&t, HERD_COLL_ALL_REDUCE, SIM_NCCL_RING,
                            SIM_NCCL_LL128, 1 << 20) < 0);
    /* collectives outside the tuning model */
    sim_nccl_plan_t q;
    ck_assert_int_eq(
        sim_nccl_predict(&c, 8, HERD_COLL_ALL_TO_ALL, 16, HERD_FLOAT32, &q),
        HERD_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(env_overrides)
{
    setenv("NCCL_ALGO", "^tree", 1);
    sim_nccl_plan_t pl = predict(64, 8, HERD_COLL_ALL_REDUCE, 8);
    ck_assert_int_eq(pl.algo, SIM_NCCL_RING);
    setenv("NCCL_ALGO", "Tree,NVLS", 1);
    setenv("NCCL_PROTO", "simple", 1);
    pl = predict(1, 8, HERD_COLL_ALL_REDUCE, 8);
    ck_assert_int_eq(pl.algo, SIM_NCCL_TREE);
    ck_assert_int_eq(pl.proto, SIM_NCCL_SIMPLE);
    /* broadcast has no tree: a tree-only NCCL_ALGO leaves it nothing */
    herd_cluster_t c = cluster(1, 8);
    ck_assert_int_ne(
        sim_nccl_predict(&c, 8, HERD_COLL_BROADCAST, 8, HERD_FLOAT32, &pl),
        HERD_OK);
    setenv("NCCL_PROTO", "^LL,LL128,Simple", 1); /* nothing left */
    ck_assert_int_eq(
        sim_nccl_predict(&c, 8, HERD_COLL_ALL_REDUCE, 8, HERD_FLOAT32, &pl),
        HERD_ERR_UNSUPPORTED);
    unsetenv("NCCL_ALGO");
    unsetenv("NCCL_PROTO");
}
END_TEST

/* ---- simulated execution ---- */

typedef struct run {
    herd_coll_t coll;
    herd_algo_t algo;
    uint64_t count; /* float32 per rank (as in the public call) */
} run_t;

static int prog(herd_comm_t *c, void *arg)
{
    const run_t *r = arg;
    int p = herd_comm_size(c);
    herd_comm_set_algo(c, r->coll, r->algo);
    uint64_t in = r->coll == HERD_COLL_REDUCE_SCATTER ? r->count * p : r->count;
    uint64_t out = r->coll == HERD_COLL_ALL_GATHER ? r->count * p : r->count;
    void *a, *b;
    if (herd_alloc(c, in * 4, &a) != HERD_OK ||
        herd_alloc(c, out * 4, &b) != HERD_OK)
        return 1;
    herd_status_t st;
    switch (r->coll) {
    case HERD_COLL_ALL_GATHER:
        st = herd_all_gather(c, a, b, r->count, HERD_FLOAT32, NULL);
        break;
    case HERD_COLL_BROADCAST:
        st = herd_broadcast(c, b, r->count, HERD_FLOAT32, 0, NULL);
        break;
    default:
        st = herd_all_reduce(c, a, b, r->count, HERD_FLOAT32, HERD_SUM, NULL);
    }
    return st == HERD_OK ? 0 : 2;
}

/* Virtual time (µs) of one collective on nodes x gpus. */
static double simulate(int nodes, int gpus, run_t *r, int auto_nccl)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = nodes;
    o.cluster.gpus_per_node = gpus;
    o.nccl_model = auto_nccl;
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    herd_run_info_t info;
    ck_assert_int_eq(herd_run(&init, prog, r, &info), HERD_OK);
    double us = (double)info.end_time_ns / 1e3;
    herd_run_info_clear(&info);
    return us;
}

START_TEST(sim_h100_node_plateau)
{
    run_t r = {HERD_COLL_ALL_REDUCE, HERD_ALGO_NCCL, (512ull << 20) / 4};
    double us = simulate(1, 8, &r, 0);
    double busbw = ar_busbw(512ull << 20, us, 8);
    within(busbw, 370.0, 0.10, "simulated ring busbw, 8 x H100, 512 MiB");
    sim_nccl_plan_t pl = predict(1, 8, HERD_COLL_ALL_REDUCE, 512ull << 20);
    within(us, pl.time_us, 0.15, "simulated vs NCCL's estimate, 512 MiB");
    /* AUTO with the engine option behaves as algorithm nccl */
    run_t a = r;
    a.algo = HERD_ALGO_AUTO;
    ck_assert_double_eq_tol(simulate(1, 8, &a, 1), us, 1e-9);
}
END_TEST

START_TEST(sim_small_sizes_latency_bound)
{
    /* a latency-bound all_reduce costs what NCCL's table says */
    run_t r = {HERD_COLL_ALL_REDUCE, HERD_ALGO_NCCL, 64};
    double us = simulate(1, 8, &r, 0);
    sim_nccl_plan_t pl = predict(1, 8, HERD_COLL_ALL_REDUCE, 256);
    within(us, pl.time_us, 0.25, "simulated vs NCCL's estimate, 256 B");
    ck_assert(us > 10 && us < 40); /* tens of µs, not ns or ms */
    us = simulate(8, 8, &r, 0);
    pl = predict(8, 8, HERD_COLL_ALL_REDUCE, 256);
    ck_assert_int_eq(pl.algo, SIM_NCCL_TREE);
    within(us, pl.time_us, 0.25, "simulated vs NCCL's estimate, 8 nodes");
}
END_TEST

START_TEST(sim_multinode_ring_per_nic)
{
    /* NCCL_ALGO=ring as nccl-tests' ring numbers are measured */
    setenv("NCCL_ALGO", "ring", 1);
    run_t r = {HERD_COLL_ALL_REDUCE, HERD_ALGO_NCCL, GIB / 4};
    double us = simulate(64, 1, &r, 0);
    within(ar_busbw(GIB, us, 64), 47.0, 0.10,
           "simulated ring busbw per NIC, 64 nodes x 1");
    /* 8 GPUs and 8 NICs per node: rotated rings use every NIC */
    us = simulate(8, 8, &r, 0);
    within(ar_busbw(GIB, us, 64) / 8, 47.0, 0.10,
           "simulated ring busbw per NIC, 8 nodes x 8");
    unsetenv("NCCL_ALGO");
}
END_TEST

/* Results checked element by element (herd perf -c 1) through every
 * lowering the model uses. */
START_TEST(sim_results_correct)
{
    const char *colls[] = {"all_reduce", "all_gather", "reduce_scatter",
                           "broadcast",  "reduce",     "all_to_all",
                           "gather"};
    const char *algos[] = {"", "NCCL_ALGO=tree ", "NCCL_PROTO=LL "};
    char cmd[512];
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
        for (int a = 0; a < 3; a++) {
            if (a == 1 && i > 0)
                continue; /* only all_reduce has a tree */
            snprintf(cmd, sizeof(cmd),
                     "%s%s perf --algo nccl --coll %s --nodes 3 "
                     "--gpus-per-node 3 -b 4 -e 4MiB -f 32 -n 1 -w 0 -c 1 "
                     "-o avg 2>&1",
                     algos[a], tu_herd_binary(), colls[i]);
            char *out = NULL;
            int rc = tu_run(cmd, &out);
            ck_assert_msg(rc == 0, "%s\n%s", cmd, out ? out : "");
            ck_assert_ptr_nonnull(strstr(out, "Out of bounds values : 0 OK"));
            free(out);
        }
}
END_TEST

/* A subgroup spread unevenly over nodes, listed out of node order: the
 * plan counts its nodes and the rings and trees still give exact sums. */
static int group_prog(herd_comm_t *w, void *arg)
{
    (void)arg;
    static const int members[] = {6, 1, 3, 4, 7};
    herd_comm_t *g = NULL;
    if (herd_new_group(w, members, 5, &g) != HERD_OK)
        return 1;
    if (!g)
        return 0;
    enum { N = 3000 };
    int bad = 0;
    for (int a = 0; a < 2; a++) {
        herd_comm_set_algo(g, HERD_COLL_ALL_REDUCE, HERD_ALGO_NCCL);
        float *in = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
        for (int i = 0; i < N; i++)
            in[i] = (float)(herd_comm_rank(g) + 1) * (float)(i % 7);
        bad |= herd_all_reduce(g, in, out, N, HERD_FLOAT32, HERD_SUM, NULL) !=
               HERD_OK;
        for (int i = 0; i < N && !bad; i++)
            bad |= out[i] != 15.0f * (float)(i % 7);
        free(in);
        free(out);
        setenv("NCCL_ALGO", "tree", 1); /* second round: the tree */
    }
    return bad;
}

START_TEST(sim_subgroup_correct)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = 3;
    o.cluster.gpus_per_node = 3;
    o.real_buffers = 1;
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    ck_assert_int_eq(herd_run(&init, group_prog, NULL, NULL), HERD_OK);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_nccl_model");
    TCase *t = tcase_create("model");
    tcase_add_test(t, h100_node_topology);
    tcase_add_test(t, h100_node_choices);
    tcase_add_test(t, h100_node_plateau);
    tcase_add_test(t, multinode_topology_and_plateau);
    tcase_add_test(t, multinode_choices);
    tcase_add_test(t, env_overrides);
    suite_add_tcase(s, t);
    TCase *x = tcase_create("sim");
    tcase_set_timeout(x, 300);
    tcase_add_test(x, sim_h100_node_plateau);
    tcase_add_test(x, sim_small_sizes_latency_bound);
    tcase_add_test(x, sim_multinode_ring_per_nic);
    tcase_add_test(x, sim_results_correct);
    tcase_add_test(x, sim_subgroup_correct);
    suite_add_tcase(s, x);
    return tu_run_suite(s);
}
