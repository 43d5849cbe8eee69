/* tests/sim_net.c - the simulator's network model: path selection, exact
 * closed forms for lone flows and rings, FIFO connections, max-min
 * sharing, overrides, topologies, validation and determinism. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net.h"
#include "sim/net_impl.h" /* the reference model reads links and paths */
#include "support/testutil.h"

#define MAXEV 4096

typedef struct rec_ev {
    uintptr_t id;
    uint64_t t;
    int delivered;
} rec_ev_t;

/* What the callbacks saw, and optional ring driving. */
typedef struct rec {
    sim_net_t *net;
    rec_ev_t ev[MAXEV];
    int nev;
    uint64_t sent[MAXEV], deliv[MAXEV]; /* by flow id */
    /* ring: p ranks, 2(p-1) steps of `chunk` bytes */
    int ring_p, ring_steps;
    uint64_t ring_chunk;
    uint64_t ring_end;
    /* halving-doubling (hd_p ranks) or a chunked chain broadcast */
    int hd_p, chain_p, chain_k;
    uint64_t hd_n, chain_chunk;
} rec_t;

static void drive_hd(rec_t *r, uintptr_t k, uint64_t t);
static void drive_chain(rec_t *r, uintptr_t k, uint64_t t);

static void on_done(void *ctx, uint64_t t, int delivered, void *arg)
{
    rec_t *r = arg;
    uintptr_t id = (uintptr_t)ctx;
    ck_assert_int_lt(r->nev, MAXEV);
    r->ev[r->nev++] = (rec_ev_t){id, t, delivered};
    if (id < MAXEV) {
        if (delivered)
            r->deliv[id] = t;
        else
            r->sent[id] = t;
    }
    if (!delivered || id < MAXEV)
        return;
    if (r->hd_p) {
        drive_hd(r, id - MAXEV, t);
        return;
    }
    if (r->chain_p) {
        drive_chain(r, id - MAXEV, t);
        return;
    }
    /* ring flow ids: MAXEV + step * p + receiving rank */
    uintptr_t k = id - MAXEV;
    int step = (int)(k / (uintptr_t)r->ring_p), rank = (int)(k % r->ring_p);
    if (step + 1 == r->ring_steps) {
        if (t > r->ring_end)
            r->ring_end = t;
        return;
    }
    int dst = (rank + 1) % r->ring_p;
    uintptr_t nid = MAXEV + (uintptr_t)(step + 1) * r->ring_p + dst;
    ck_assert_int_eq(
        sim_net_flow_start(r->net, t, rank, dst, 0, r->ring_chunk, (void *)nid),
        HERD_OK);
}

static void opts_flat(herd_sim_opts_t *o, int nodes, int gpn)
{
    herd_sim_opts_init(o);
    o->cluster.nodes = nodes;
    o->cluster.gpus_per_node = gpn;
    o->cluster.intra.bandwidth = 4e9;
    o->cluster.intra.latency = 500e-9;
    o->cluster.inter.bandwidth = 1e9;
    o->cluster.inter.latency = 2e-6;
    o->cluster.spine_latency = 1e-6;
}

static rec_t *rec_new(const herd_sim_opts_t *o)
{
    rec_t *r = calloc(1, sizeof(*r));
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(sim_net_create(o, 0, on_done, r, &r->net), HERD_OK);
    return r;
}

static void rec_free(rec_t *r)
{
    sim_net_destroy(r->net);
    free(r);
}

static void flow(rec_t *r, uint64_t now, int src, int dst, int ch,
                 uint64_t bytes, uintptr_t id)
{
    ck_assert_int_eq(
        sim_net_flow_start(r->net, now, src, dst, ch, bytes, (void *)id),
        HERD_OK);
}

static void flow_ck(rec_t *r, uint64_t now, int src, int dst, uint64_t bytes,
                    uintptr_t id)
{
    ck_assert_int_eq(
        sim_net_flow_start(r->net, now, src, dst, 0, bytes, (void *)id),
        HERD_OK);
}

static void run(rec_t *r)
{
    uint64_t t;
    while ((t = sim_net_next_time(r->net)) != UINT64_MAX)
        sim_net_advance(r->net, t);
}

/* Token buckets (cluster.inter.burst): a flow that starts on idle NIC
 * links passes the bucket's bytes at once, the rest at the link rate;
 * a busy link refills nothing; idle time refills at the link rate, up to
 * the bucket; each direction's NIC has its own bucket. */
START_TEST(burst_token_bucket)
{
    herd_sim_opts_t o;
    opts_flat(&o, 2, 1); /* ranks 0 and 1 on two nodes: NIC links */
    o.cluster.inter.latency = 0;
    o.cluster.inter.burst = 1000000;
    rec_t *r = rec_new(&o);
    flow(r, 0, 0, 1, 0, 3000000, 1); /* 1 MB free, 2 MB at 1 GB/s */
    flow(r, 0, 0, 1, 0, 3000000, 2); /* queued: the links stay busy */
    run(r);
    ck_assert_uint_eq(r->sent[1], 2000000);
    ck_assert_uint_eq(r->sent[2], 5000000);
    flow(r, 5500000, 0, 1, 0, 3000000, 3); /* idle 0.5 ms: 0.5 MB back */
    run(r);
    ck_assert_uint_eq(r->sent[3], 5500000 + 2500000);
    flow(r, 20000000, 0, 1, 0, 600000, 4); /* a full bucket holds it */
    run(r);
    ck_assert_uint_eq(r->sent[4], 20000000);
    /* the other direction has buckets of its own, full */
    flow(r, 20000000, 1, 0, 0, 3000000, 5);
    run(r);
    ck_assert_uint_eq(r->sent[5], 20000000 + 2000000);
    /* after flow 4 took 0.6 MB, 10 ms of idling tops the bucket up again,
     * never beyond 1 MB */
    flow(r, 30000000, 0, 1, 0, 1500000, 6);
    run(r);
    ck_assert_uint_eq(r->sent[6], 30000000 + 500000);
    rec_free(r);
    /* a bucket only on the inter-node links */
    opts_flat(&o, 1, 2);
    o.cluster.intra.burst = 4096;
    char err[256];
    ck_assert_int_eq(sim_net_check_opts(&o, 0, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_msg(strstr(err, "cluster.intra.burst"), "%s", err);
}
END_TEST

START_TEST(lone_flow_exact)
{
    herd_sim_opts_t o;
    opts_flat(&o, 1, 2);
    rec_t *r = rec_new(&o);
    ck_assert_uint_eq(sim_net_path_latency(r->net, 0, 1), 500);
    ck_assert(sim_net_path_bandwidth(r->net, 0, 1) == 4e9);
    flow(r, 100, 0, 1, 0, 1000000, 1);
    run(r);
    ck_assert_uint_eq(r->sent[1], 100 + 250000);
    ck_assert_uint_eq(r->deliv[1], 100 + 250000 + 500);
    /* a non-integral transmission time rounds up */
    flow(r, 400000, 0, 1, 0, 1001, 2);
    run(r);
    ck_assert_uint_eq(sim_net_tx_ns(1001, 4e9), 251);
    ck_assert_uint_eq(r->sent[2], 400000 + 251);
    /* a zero-byte flow takes the latency only */
    flow(r, 500000, 1, 0, 0, 0, 3);
    run(r);
    ck_assert_uint_eq(r->sent[3], 500000);
    ck_assert_uint_eq(r->deliv[3], 500500);
    /* to itself: no links, no latency, but still FIFO */
    flow(r, 600000, 1, 1, 0, 5000, 4);
    flow(r, 600000, 1, 1, 0, 5000, 5);
    run(r);
    ck_assert_uint_eq(r->deliv[4], 600000);
    ck_assert_uint_eq(r->deliv[5], 600000);
    ck_assert_uint_eq(r->ev[r->nev - 1].id, 5);
    ck_assert_int_eq(r->nev, 10);
    /* a connection alone on its links takes its rate without a max-min
     * recomputation */
    sim_net_stats_t st;
    sim_net_stats(r->net, &st);
    ck_assert_uint_eq(st.recomputes, 0);
    rec_free(r);
}
END_TEST

START_TEST(path_selection)
{
    herd_sim_opts_t o;
    opts_flat(&o, 2, 2);
    rec_t *r = rec_new(&o);
    ck_assert_uint_eq(sim_net_path_latency(r->net, 0, 1), 500);
    ck_assert_uint_eq(sim_net_path_latency(r->net, 1, 2), 2000);
    ck_assert(sim_net_path_bandwidth(r->net, 2, 3) == 4e9);
    ck_assert(sim_net_path_bandwidth(r->net, 3, 0) == 1e9);
    /* intra and inter traffic of one rank use different ports */
    flow(r, 0, 0, 1, 0, 1000000, 1);
    flow(r, 0, 0, 2, 0, 1000000, 2);
    run(r);
    ck_assert_uint_eq(r->deliv[1], 250000 + 500);
    ck_assert_uint_eq(r->deliv[2], 1000000 + 2000);
    rec_free(r);
}
END_TEST

START_TEST(nic_contention)
{
    herd_sim_opts_t o;
    opts_flat(&o, 3, 1);
    rec_t *r = rec_new(&o);
    flow(r, 0, 0, 1, 0, 1000000, 1); /* alone */
    run(r);
    uint64_t one = r->sent[1];
    ck_assert_uint_eq(one, 1000000);
    uint64_t t0 = r->deliv[1];
    flow(r, t0, 0, 1, 0, 1000000, 2); /* two through one NIC egress */
    flow(r, t0, 0, 2, 0, 1000000, 3);
    run(r);
    /* flow 2 took the whole NIC when it joined; flow 3, joining at the
     * same instant, halves it */
    ck_assert_uint_eq(r->sent[2] - t0, 2 * one);
    ck_assert_uint_eq(r->sent[3], r->sent[2]);
    ck_assert_uint_eq(r->deliv[3], r->sent[3] + 2000);
    rec_free(r);
    /* two GPUs behind one NIC per node share it too */
    o.cluster.nodes = 2;
    o.cluster.gpus_per_node = 2;
    o.cluster.nics_per_node = 1;
    r = rec_new(&o);
    flow(r, 0, 0, 2, 0, 1000000, 1);
    flow(r, 0, 1, 3, 0, 1000000, 2);
    run(r);
    ck_assert_uint_eq(r->sent[1], 2000000);
    ck_assert_uint_eq(r->sent[2], 2000000);
    rec_free(r);
}
END_TEST

START_TEST(fifo_connection)
{
    herd_sim_opts_t o;
    opts_flat(&o, 2, 1);
    rec_t *r = rec_new(&o);
    flow(r, 0, 0, 1, 0, 1000000, 1);
    flow(r, 0, 0, 1, 0, 1000000, 2);
    flow(r, 0, 0, 1, 0, 0, 3); /* zero bytes wait their turn */
    run(r);
    ck_assert_uint_eq(r->sent[1], 1000000);
    ck_assert_uint_eq(r->sent[2], 2000000);
    ck_assert_uint_eq(r->sent[3], 2000000);
    ck_assert_uint_eq(r->deliv[1], 1002000);
    ck_assert_uint_eq(r->deliv[2], 2002000);
    ck_assert_uint_eq(r->deliv[3], 2002000);
    /* delivery callbacks come in queue order */
    ck_assert_uint_eq(r->ev[r->nev - 2].id, 2);
    ck_assert_uint_eq(r->ev[r->nev - 1].id, 3);
    /* a connection handle is the same FIFO connection */
    uint32_t h;
    ck_assert_int_eq(sim_net_conn(r->net, 0, 1, 0, &h), HERD_OK);
    ck_assert_int_eq(sim_net_conn(r->net, 0, 2, 0, &h), HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(sim_net_conn(r->net, 0, 1, 0, &h), HERD_OK);
    flow(r, 2500000, 0, 1, 0, 100000, 6);
    ck_assert_int_eq(
        sim_net_flow_start_on(r->net, 2500000, h, 100000, (void *)(uintptr_t)7),
        HERD_OK);
    ck_assert_int_eq(sim_net_flow_start_on(r->net, 2500000, h + 100, 1, NULL),
                     HERD_ERR_INVALID_ARG);
    run(r);
    ck_assert_uint_eq(r->sent[6], 2600000);
    ck_assert_uint_eq(r->sent[7], 2700000);
    /* two channels are two connections: they share and end together */
    flow(r, 3000000, 0, 1, 0, 1000000, 4);
    flow(r, 3000000, 0, 1, 1, 1000000, 5);
    run(r);
    ck_assert_uint_eq(r->sent[4], 5000000);
    ck_assert_uint_eq(r->sent[5], 5000000);
    rec_free(r);
}
END_TEST

START_TEST(maxmin_unequal)
{
    herd_sim_opts_t o;
    opts_flat(&o, 5, 1);
    o.cluster.inter.bandwidth = 3e9;
    rec_t *r = rec_new(&o);
    /* B, C, D share rank 2's ingress (1e9 each); A gets the 2e9 B leaves
     * on rank 0's egress. */
    flow(r, 0, 0, 1, 0, 1000000, 1); /* A */
    flow(r, 0, 0, 2, 0, 1000000, 2); /* B */
    flow(r, 0, 3, 2, 0, 1000000, 3); /* C */
    flow(r, 0, 4, 2, 0, 1000000, 4); /* D */
    run(r);
    ck_assert_uint_eq(r->sent[1], 500000);
    ck_assert_uint_eq(r->sent[2], 1000000);
    ck_assert_uint_eq(r->sent[3], 1000000);
    ck_assert_uint_eq(r->sent[4], 1000000);
    rec_free(r);
}
END_TEST

START_TEST(maxmin_rates_change)
{
    herd_sim_opts_t o;
    opts_flat(&o, 3, 1);
    rec_t *r = rec_new(&o);
    /* half rate each until the small one ends at 2 ms; the big one then
     * sends its remaining 2 MB at full rate */
    flow(r, 0, 0, 1, 0, 1000000, 1);
    flow(r, 0, 0, 2, 0, 3000000, 2);
    run(r);
    ck_assert_uint_eq(r->sent[1], 2000000);
    ck_assert_uint_eq(r->sent[2], 4000000);
    /* a late joiner slows the running flow from then on */
    flow(r, 5000000, 0, 1, 0, 2000000, 3);
    ck_assert_uint_eq(sim_net_next_time(r->net), 7000000);
    sim_net_advance(r->net, 6000000);
    flow(r, 6000000, 0, 2, 0, 500000, 4);
    run(r);
    ck_assert_uint_eq(r->sent[4], 7000000);
    ck_assert_uint_eq(r->sent[3], 7500000);
    sim_net_stats_t st;
    sim_net_stats(r->net, &st);
    ck_assert_uint_eq(st.flows, 4);
    ck_assert_uint_eq(st.peak_active, 2);
    ck_assert_uint_gt(st.recomputes, 0);
    rec_free(r);
}
END_TEST

START_TEST(overrides)
{
    herd_sim_opts_t o;
    opts_flat(&o, 3, 2);
    herd_rank_override_t ro[] = {
        {.rank = 2, .nic_factor = 0.5},
        {.rank = 4, .intra_factor = 0.25},
    };
    herd_link_override_t lo[] = {
        {.a = 1, .b = 0, .bw_factor = 0.5, .extra_latency = 1e-6},
    };
    o.ranks = ro;
    o.nranks_overrides = 2;
    o.links = lo;
    o.nlink_overrides = 1;
    rec_t *r = rec_new(&o);
    ck_assert(sim_net_path_bandwidth(r->net, 0, 2) == 0.5e9);
    ck_assert(sim_net_path_bandwidth(r->net, 2, 3) == 4e9);
    ck_assert(sim_net_path_bandwidth(r->net, 4, 5) == 1e9);
    ck_assert(sim_net_path_bandwidth(r->net, 0, 1) == 2e9);
    ck_assert(sim_net_path_bandwidth(r->net, 1, 0) == 2e9);
    ck_assert_uint_eq(sim_net_path_latency(r->net, 0, 1), 1500);
    flow(r, 0, 0, 2, 0, 1000000, 1); /* degraded NIC: half bandwidth */
    flow(r, 0, 4, 5, 0, 1000000, 2);
    run(r);
    ck_assert_uint_eq(r->sent[1], 2000000);
    ck_assert_uint_eq(r->sent[2], 1000000);
    /* the slow pair is one link: its two channels share it */
    flow(r, 3000000, 0, 1, 0, 1000000, 3);
    flow(r, 3000000, 0, 1, 1, 1000000, 4);
    run(r);
    ck_assert_uint_eq(r->sent[3], 4000000);
    ck_assert_uint_eq(r->deliv[4], 4001500);
    rec_free(r);
}
END_TEST

START_TEST(fattree_oversub)
{
    herd_sim_opts_t o;
    opts_flat(&o, 4, 1);
    o.cluster.topo = HERD_TOPO_FATTREE;
    o.cluster.nodes_per_leaf = 2;
    o.cluster.oversub = 2;
    rec_t *r = rec_new(&o);
    ck_assert_uint_eq(sim_net_path_latency(r->net, 0, 1), 2000);
    ck_assert_uint_eq(sim_net_path_latency(r->net, 0, 2), 3000);
    flow(r, 0, 0, 2, 0, 1000000, 1); /* two flows up one leaf uplink */
    flow(r, 0, 1, 3, 0, 1000000, 2);
    run(r);
    ck_assert_uint_eq(r->sent[1], 2000000);
    ck_assert_uint_eq(r->sent[2], 2000000);
    flow(r, 3000000, 0, 1, 0, 1000000, 3); /* within a leaf */
    flow(r, 3000000, 2, 3, 0, 1000000, 4);
    run(r);
    ck_assert_uint_eq(r->sent[3], 4000000);
    ck_assert_uint_eq(r->sent[4], 4000000);
    rec_free(r);
    o.cluster.oversub = 1; /* full bisection: no slowdown */
    r = rec_new(&o);
    flow(r, 0, 0, 2, 0, 1000000, 1);
    flow(r, 0, 1, 3, 0, 1000000, 2);
    run(r);
    ck_assert_uint_eq(r->sent[1], 1000000);
    ck_assert_uint_eq(r->sent[2], 1000000);
    rec_free(r);
}
END_TEST

START_TEST(rail_topology)
{
    herd_sim_opts_t o;
    opts_flat(&o, 3, 2);
    o.cluster.topo = HERD_TOPO_RAIL;
    o.cluster.oversub = 2;
    rec_t *r = rec_new(&o);
    ck_assert_uint_eq(sim_net_path_latency(r->net, 0, 2), 2000);
    ck_assert_uint_eq(sim_net_path_latency(r->net, 0, 3), 3000);
    /* spine uplink of rail 0: 3 nodes * 1e9 / 2 = 1.5e9 for two flows */
    flow(r, 0, 0, 3, 0, 1500000, 1);
    flow(r, 0, 2, 5, 0, 1500000, 2);
    flow(r, 0, 4, 0, 0, 1000000, 3); /* same rail: unaffected */
    run(r);
    ck_assert_uint_eq(r->sent[1], 2000000);
    ck_assert_uint_eq(r->sent[2], 2000000);
    ck_assert_uint_eq(r->sent[3], 1000000);
    rec_free(r);
}
END_TEST

static uint64_t ring_run(int nodes, int gpn, uint64_t n)
{
    herd_sim_opts_t o;
    opts_flat(&o, nodes, gpn);
    rec_t *r = rec_new(&o);
    int p = nodes * gpn;
    r->ring_p = p;
    r->ring_steps = 2 * (p - 1);
    r->ring_chunk = n / (uint64_t)p;
    for (int i = 0; i < p; i++)
        flow(r, 0, i, (i + 1) % p, 0, r->ring_chunk,
             MAXEV + (uintptr_t)(i + 1) % p);
    run(r);
    uint64_t end = r->ring_end;
    rec_free(r);
    return end;
}

/* Halving-doubling all_reduce: log p steps of recursive halving (reduce-
 * scatter), then log p of recursive doubling (all-gather); step s moves
 * n / 2^(s+1) bytes (halving) or the mirror (doubling). Flow id:
 * MAXEV + step * p + receiving rank. */
static int hd_log(int p)
{
    int l = 0;
    while ((1 << l) < p)
        l++;
    return l;
}

static void hd_send(rec_t *r, uint64_t t, int rank, int step)
{
    int lg = hd_log(r->hd_p);
    int k = step < lg ? step : 2 * lg - 1 - step;
    int peer = rank ^ (r->hd_p >> (k + 1));
    uint64_t bytes = r->hd_n >> (k + 1);
    flow_ck(r, t, rank, peer, bytes, MAXEV + (uintptr_t)step * r->hd_p + peer);
}

static void drive_hd(rec_t *r, uintptr_t k, uint64_t t)
{
    int step = (int)(k / (uintptr_t)r->hd_p), rank = (int)(k % r->hd_p);
    if (step + 1 == 2 * hd_log(r->hd_p)) {
        if (t > r->ring_end)
            r->ring_end = t;
        return;
    }
    hd_send(r, t, rank, step + 1);
}

/* A chain broadcast from rank 0 in k chunks: rank r forwards chunk j as
 * soon as it has it. Flow id: MAXEV + chunk * p + receiving rank. */
static void drive_chain(rec_t *r, uintptr_t k, uint64_t t)
{
    int chunk = (int)(k / (uintptr_t)r->chain_p);
    int rank = (int)(k % r->chain_p);
    if (rank + 1 == r->chain_p) {
        if (t > r->ring_end)
            r->ring_end = t;
        return;
    }
    flow_ck(r, t, rank, rank + 1, r->chain_chunk,
            MAXEV + (uintptr_t)chunk * r->chain_p + rank + 1);
}

START_TEST(halving_doubling_closed_form)
{
    /* 2 log2(p) alpha + 2 (p-1)/p n / beta */
    herd_sim_opts_t o;
    opts_flat(&o, 8, 1);
    rec_t *r = rec_new(&o);
    r->hd_p = 8;
    r->hd_n = 8000000;
    for (int i = 0; i < 8; i++)
        hd_send(r, 0, i, 0);
    run(r);
    ck_assert_uint_eq(r->ring_end, 6 * 2000 + 2 * 7000000);
    rec_free(r);
}
END_TEST

START_TEST(chain_broadcast_pipelines)
{
    /* FIFO connections pipeline the chunks: (p-1) alpha + (k+p-2) n/(k beta)
     * instead of (p-1) (alpha + n/beta) without chunking. */
    herd_sim_opts_t o;
    opts_flat(&o, 6, 1);
    rec_t *r = rec_new(&o);
    r->chain_p = 6;
    r->chain_k = 10;
    r->chain_chunk = 100000;
    for (int j = 0; j < 10; j++)
        flow_ck(r, 0, 0, 1, r->chain_chunk, MAXEV + (uintptr_t)j * 6 + 1);
    run(r);
    ck_assert_uint_eq(r->ring_end, 5 * 2000 + 14 * 100000);
    rec_free(r);
}
END_TEST

START_TEST(ring_closed_form)
{
    /* 2(p-1) alpha + 2(p-1)/p n / beta, to the nanosecond */
    uint64_t n = 8 * 1000000;
    ck_assert_uint_eq(ring_run(8, 1, n), 14 * (2000 + 1000000));
    ck_assert_uint_eq(ring_run(1, 8, n), 14 * (500 + 250000));
    n = 5 * 1000000;
    ck_assert_uint_eq(ring_run(5, 1, n), 8 * (2000 + 1000000));
}
END_TEST

/* A tangle of flows of many sizes, channels and start times. */
static void tangle(rec_t *r)
{
    uint64_t x = 12345;
    uint64_t now = 0;
    for (int i = 0; i < 300; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int src = (int)((x >> 33) % 8), dst = (int)((x >> 40) % 8);
        if (dst == src)
            dst = (dst + 1) % 8;
        if (i % 25 == 0) {
            now += (x >> 20) % 50000;
            sim_net_advance(r->net, now);
        }
        flow(r, now, src, dst, (int)((x >> 50) % 3), (x >> 13) % 100000,
             (uintptr_t)i);
    }
    run(r);
}

/* A brute-force reference: continuous time, global max-min over every
 * transmitting connection after every event, FIFO per connection. */
#define REF_N 160

typedef struct ref_flow {
    uint64_t start, bytes;
    int src, dst, ch, conn;
    net_path_t path;
    double rem, rate, sent;
    int state; /* 0 not arrived, 1 queued, 2 head, 3 sent */
} ref_flow_t;

static void ref_rates(const net_state_t *s, ref_flow_t *f, int n)
{
    static const int maxl = 64;
    double left[64];
    int cnt[64];
    ck_assert_uint_le(s->nlinks, maxl);
    for (uint32_t l = 0; l < s->nlinks; l++) {
        left[l] = s->links[l].cap;
        cnt[l] = 0;
    }
    int todo = 0;
    for (int i = 0; i < n; i++) {
        f[i].rate = 0;
        if (f[i].state != 2)
            continue;
        todo++;
        for (uint32_t k = 0; k < f[i].path.n; k++)
            cnt[f[i].path.link[k]]++;
    }
    while (todo > 0) {
        int best = -1;
        for (uint32_t l = 0; l < s->nlinks; l++)
            if (cnt[l] &&
                (best < 0 || left[l] / cnt[l] < left[best] / cnt[best]))
                best = (int)l;
        double share = left[best] / cnt[best];
        for (int i = 0; i < n; i++) {
            int on = 0;
            for (uint32_t k = 0; k < f[i].path.n; k++)
                on |= f[i].path.link[k] == (uint32_t)best;
            if (f[i].state != 2 || f[i].rate > 0 || !on)
                continue;
            f[i].rate = share;
            todo--;
            for (uint32_t k = 0; k < f[i].path.n; k++) {
                left[f[i].path.link[k]] -= share;
                cnt[f[i].path.link[k]]--;
            }
        }
    }
}

/* Make arrived flows heads of idle connections; true if any changed. */
static int ref_heads(ref_flow_t *f, int n, double t)
{
    int changed = 0;
    for (int i = 0; i < n; i++) {
        if (f[i].state == 0 && (double)f[i].start <= t + 1e-9) {
            f[i].state = 1;
            changed = 1;
        }
    }
    for (int i = 0; i < n; i++) {
        if (f[i].state != 1)
            continue;
        int busy = 0;
        for (int j = 0; j < n; j++)
            busy |= j != i && f[j].conn == f[i].conn &&
                    (f[j].state == 2 || (f[j].state == 1 && j < i));
        if (!busy) {
            f[i].state = 2;
            f[i].rem = (double)f[i].bytes;
            changed = 1;
        }
    }
    return changed;
}

static void ref_run(const net_state_t *s, ref_flow_t *f, int n)
{
    double t = 0;
    for (int done = 0; done < n;) {
        while (ref_heads(f, n, t))
            ;
        ref_rates(s, f, n);
        double dt = INFINITY;
        for (int i = 0; i < n; i++) {
            if (f[i].state == 0 && (double)f[i].start - t < dt)
                dt = (double)f[i].start - t;
            if (f[i].state == 2 && f[i].rem * 1e9 / f[i].rate < dt)
                dt = f[i].rem * 1e9 / f[i].rate;
        }
        t += dt;
        for (int i = 0; i < n; i++) {
            if (f[i].state != 2)
                continue;
            f[i].rem -= f[i].rate * dt * 1e-9;
            if (f[i].rem <= 1e-6 * (double)f[i].bytes) {
                f[i].state = 3;
                f[i].sent = t;
                done++;
            }
        }
    }
}

START_TEST(maxmin_matches_reference)
{
    herd_sim_opts_t o;
    opts_flat(&o, 4, 2);
    o.cluster.topo = HERD_TOPO_FATTREE;
    o.cluster.nodes_per_leaf = 2;
    o.cluster.oversub = 3;
    herd_rank_override_t ro = {.rank = 5, .nic_factor = 0.4};
    o.ranks = &ro;
    o.nranks_overrides = 1;
    rec_t *r = rec_new(&o);
    ref_flow_t *f = calloc(REF_N, sizeof(*f));
    uint64_t x = 99, now = 0;
    for (int i = 0; i < REF_N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        f[i].src = (int)((x >> 33) % 8);
        f[i].dst = (f[i].src + 1 + (int)((x >> 40) % 7)) % 8;
        f[i].ch = (int)((x >> 50) % 2);
        f[i].conn = (f[i].src * 8 + f[i].dst) * 2 + f[i].ch;
        f[i].bytes = 10000 + (x >> 13) % 200000;
        now += (x >> 20) % 20000;
        f[i].start = now;
        net_topo_path(r->net->st, f[i].src, f[i].dst, &f[i].path);
        sim_net_advance(r->net, now);
        flow(r, now, f[i].src, f[i].dst, f[i].ch, f[i].bytes, (uintptr_t)i);
    }
    run(r);
    ref_run(r->net->st, f, REF_N);
    for (int i = 0; i < REF_N; i++) /* ns rounding may add up a little */
        ck_assert_msg(fabs((double)r->sent[i] - f[i].sent) < 50,
                      "flow %d: model %llu, reference %.1f", i,
                      (unsigned long long)r->sent[i], f[i].sent);
    free(f);
    rec_free(r);
}
END_TEST

START_TEST(deterministic)
{
    herd_sim_opts_t o;
    opts_flat(&o, 4, 2);
    o.cluster.topo = HERD_TOPO_FATTREE;
    o.cluster.nodes_per_leaf = 2;
    o.cluster.oversub = 3;
    rec_t *a = rec_new(&o), *b = rec_new(&o);
    tangle(a);
    tangle(b);
    ck_assert_int_eq(a->nev, 600);
    ck_assert_int_eq(a->nev, b->nev);
    ck_assert_mem_eq(a->ev, b->ev, (size_t)a->nev * sizeof(a->ev[0]));
    for (int i = 0; i < 300; i++) /* sanity: delivered after sent */
        ck_assert_uint_ge(a->deliv[i], a->sent[i]);
    rec_free(a);
    rec_free(b);
}
END_TEST

START_TEST(invalid_input)
{
    herd_sim_opts_t o;
    char err[256];
    sim_net_t *net = NULL;
    opts_flat(&o, 2, 2);
    o.cluster.inter.bandwidth = 0;
    ck_assert_int_eq(sim_net_check_opts(&o, 0, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(err, "cluster.inter.bandwidth"));
    ck_assert_int_eq(sim_net_create(&o, 0, on_done, NULL, &net),
                     HERD_ERR_INVALID_ARG);
    ck_assert_ptr_null(net);
    opts_flat(&o, 2, 2);
    o.cluster.intra.latency = -1;
    ck_assert_int_eq(sim_net_check_opts(&o, 0, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    opts_flat(&o, 2, 2);
    o.cluster.inter.latency = 1e300;
    ck_assert_int_eq(sim_net_check_opts(&o, 0, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(err, "cluster.inter.latency"));
    opts_flat(&o, 2, 2);
    ck_assert_int_eq(sim_net_check_opts(&o, 5, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(err, "world_size 5"));
    herd_rank_override_t ro = {.rank = 4, .nic_factor = 2};
    o.ranks = &ro;
    o.nranks_overrides = 1;
    ck_assert_int_eq(sim_net_check_opts(&o, 0, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(err, "ranks[0].rank"));
    o.nranks_overrides = 0;
    herd_link_override_t lo = {.a = 1, .b = 1};
    o.links = &lo;
    o.nlink_overrides = 1;
    ck_assert_int_eq(sim_net_check_opts(&o, 0, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    o.nlink_overrides = 0;
    o.cluster.topo = HERD_TOPO_FATTREE;
    o.cluster.oversub = 0.5;
    ck_assert_int_eq(sim_net_check_opts(&o, 0, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(err, "oversub"));
    /* bad flows */
    opts_flat(&o, 2, 2);
    rec_t *r = rec_new(&o);
    ck_assert_int_eq(sim_net_flow_start(r->net, 0, 0, 4, 0, 1, NULL),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(sim_net_flow_start(r->net, 0, -1, 1, 0, 1, NULL),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(sim_net_flow_start(r->net, 0, 0, 1, -1, 1, NULL),
                     HERD_ERR_INVALID_ARG);
    flow(r, 1000, 0, 1, 0, 1000, 1);
    /* in the past, or skipping the pending completion at 1250 */
    ck_assert_int_eq(sim_net_flow_start(r->net, 999, 0, 1, 0, 1, NULL),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(sim_net_flow_start(r->net, 1251, 0, 1, 0, 1, NULL),
                     HERD_ERR_INVALID_ARG);
    run(r);
    ck_assert_int_eq(r->nev, 2);
    /* an absurd size saturates instead of wrapping around */
    flow(r, 2000, 2, 3, 0, UINT64_MAX, 8);
    run(r);
    ck_assert_uint_gt(r->sent[8], 2000);
    ck_assert_uint_eq(r->deliv[8], r->sent[8] + 500);
    rec_free(r);
}
END_TEST

START_TEST(opts_defaults)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    ck_assert_int_eq(o.cluster.nodes, 1);
    ck_assert_int_eq(o.cluster.gpus_per_node, 8);
    ck_assert_int_eq(sim_net_check_opts(&o, 0, NULL, 0), HERD_OK);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sim_net");
    TCase *tc = tcase_create("net");
    tcase_add_test(tc, lone_flow_exact);
    tcase_add_test(tc, burst_token_bucket);
    tcase_add_test(tc, path_selection);
    tcase_add_test(tc, nic_contention);
    tcase_add_test(tc, fifo_connection);
    tcase_add_test(tc, maxmin_unequal);
    tcase_add_test(tc, maxmin_rates_change);
    tcase_add_test(tc, overrides);
    tcase_add_test(tc, fattree_oversub);
    tcase_add_test(tc, rail_topology);
    tcase_add_test(tc, ring_closed_form);
    tcase_add_test(tc, halving_doubling_closed_form);
    tcase_add_test(tc, chain_broadcast_pipelines);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, maxmin_matches_reference);
    tcase_add_test(tc, invalid_input);
    tcase_add_test(tc, opts_defaults);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(suite());
}
