/* sim/nccl_model.c - NCCL's tuning model and its execution in the
 * simulator (see sim/nccl_model.h; sources of every constant in
 * docs/nccl-model.md). The constants are NCCL's defaults for Hopper
 * (sm90) on an x86 Intel host: src/graph/tuning.cc
 * (ncclTunerConstantsDefaults, ncclTopoTuneModel, ncclTopoGetAlgoTime),
 * src/graph/search.cc (speed arrays, ncclTopoDupChannels),
 * src/graph/connect.cc (ncclTopoPostset), src/enqueue.cc
 * (topoGetAlgoInfo, calcCollChunking), src/include/device.h, comm.h and
 * collectives.h (buffer sizes, thread thresholds, chunk/slice steps). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/nccl_model.h"

enum { HW_NVLINK, HW_PCI, HW_NET };

/* tuning.cc: baseLatencies, hwLatencies (µs) for Tree and Ring. */
static const double base_lat[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
static const double hw_lat[3][2][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   /* NVLink */
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    /* PCI */
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}}}; /* NET */
/* Hopper rows, by node count (1, 2, >= 3). llMaxBw: one node uses the
 * GPU row (Hopper), several nodes the CPU row (Intel). */
static const double ll_max_bw_1node = 141.0;
static const double ll_max_bw_intel[3] = {39.0, 39.0, 20.4};
static const double per_ch_ring_ll128[3] = {36.7, 36.7, 36.7};
static const double per_ch_tree_ll128[3] = {36.7, 36.7, 29.0};
static const double per_ch_tree[3] = {38.7, 41.4, 36.0};
/* ncclTopoGetAlgoTime: tree bandwidth correction, 64 B << i. */
static const double tree_corr[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
/* search.cc: sm90SpeedArrayIntra / sm90SpeedArrayInter (GB/s). */
static const double speed_intra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                     15.0, 12.0, 11.0, 6.0,  3.0};
static const double speed_inter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0,
                                     22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                     3.0,  2.4,  1.2,  0.24, 0.12};
#define NCCL_RING_MAX_CHANNELS 32 /* MAXCHANNELS / 2 (init.cc) */
#define NCCL_MAXCHANNELS 64
#define NCCL_NET_OVERHEAD_US 1.0 /* getNetOverhead: x86 Intel */
/* device.h / init.cc: per-protocol buffers, NCCL_STEPS slots each. */
#define NCCL_STEPS 8
static const uint64_t buff_size[3] = {
    8ull * 512 * NCCL_STEPS * 16, 120ull * 640 * NCCL_STEPS * 8, 1ull << 22};
/* comm.h thread thresholds; tuning.cc / device.h max threads. */
static const uint64_t thread_threshold[3] = {8, 8, 64};
static const uint64_t max_threads[3] = {512, 640, 512};
/* Bytes on the wire per payload byte: LL 8 + 8 flag, LL128 120 of 128. */
static const double wire_factor[3] = {2.0, 128.0 / 120.0, 1.0};

static const char *const algo_names[] = {"tree", "ring"};
static const char *const proto_names[] = {"LL", "LL128", "Simple"};

const char *sim_nccl_algo_name(sim_nccl_algo_t a)
{
    return (unsigned)a < SIM_NCCL_NALGO ? algo_names[a] : "?";
}

const char *sim_nccl_proto_name(sim_nccl_proto_t p)
{
    return (unsigned)p < SIM_NCCL_NPROTO ? proto_names[p] : "?";
}

static int log2i(uint64_t n)
{
    int l = -1;
    while (n) {
        n >>= 1;
        l++;
    }
    return l;
}

/* Channels that fit at `speed`: `lanes` NICs (or the GPU's fabric) of
 * `lane_bw` each, and, across nodes, the NVLink hops inside the node. */
static int fit_channels(const sim_nccl_topo_t *t, double speed, int lanes,
                        double lane_bw)
{
    int c = lanes * (int)floor(lane_bw / speed + 1e-9);
    if (c > NCCL_RING_MAX_CHANNELS)
        c = NCCL_RING_MAX_CHANNELS;
    while (t->nnodes > 1 && t->ppn > 1 && c > 0 &&
           c * speed * (t->ppn - 1) / t->ppn > t->intra_gbs + 1e-9)
        c--;
    return c;
}

/* ncclTopoCompute, reduced to what decides bandwidth: the fastest speed
 * with a channel (pass 1), ncclTopoDupChannels, then faster speeds
 * while the channel count still fits (pass 2). */
static void graph_search(sim_nccl_topo_t *t)
{
    int multi = t->nnodes > 1;
    const double *sp = multi ? speed_inter : speed_intra;
    int n = multi ? (int)(sizeof(speed_inter) / sizeof(double))
                  : (int)(sizeof(speed_intra) / sizeof(double));
    int lanes = multi ? t->nics : 1;
    double lane_bw = multi ? t->nic_gbs : t->intra_gbs;
    int i = 0;
    while (i < n - 1 && fit_channels(t, sp[i], lanes, lane_bw) < 1)
        i++;
    int c = fit_channels(t, sp[i], lanes, lane_bw);
    double s = sp[i];
    if (c < 1) { /* slower than NCCL's slowest speed */
        c = 1;
        s = lane_bw;
    }
    if (s >= 25.0 && !(s < 50.0 && c > 4)) {
        int d = 2 * c < NCCL_RING_MAX_CHANNELS ? 2 * c : NCCL_RING_MAX_CHANNELS;
        s /= (d + c - 1) / c;
        c = d;
    }
    int j = 0;
    while (j < n - 1 && sp[j] > s)
        j++;
    while (j > 0 && fit_channels(t, sp[j - 1], lanes, lane_bw) >= c)
        s = sp[--j];
    t->graph_channels = c;
    t->graph_bw = s;
    /* ncclTopoPostset: duplicate, and double again across nodes on
     * Hopper while bwIntra > 45 and fewer than 16 channels. */
    int ch = 2 * c < NCCL_MAXCHANNELS ? 2 * c : NCCL_MAXCHANNELS;
    if (multi && s > 45.0 && ch < 16)
        ch *= 2;
    t->channels = ch;
}

/* NCCL_ALGO / NCCL_PROTO as NCCL reads them: a comma-separated list of
 * names (case-insensitive), "^" first to exclude them instead. Names of
 * algorithms the model lacks (NVLS, CollNet, PAT) are ignored, and so is
 * the per-collective "func:list" form. 0: no restriction. */
static unsigned parse_mask(const char *v, const char *const *names, int n)
{
    if (!v || !*v || strchr(v, ':'))
        return 0;
    int neg = v[0] == '^';
    unsigned m = 0;
    const char *s = v + neg;
    while (*s) {
        size_t len = strcspn(s, ",");
        for (int i = 0; i < n; i++)
            if (strlen(names[i]) == len && !strncasecmp(s, names[i], len))
                m |= 1u << i;
        s += len + (s[len] == ',');
    }
    unsigned all = (1u << n) - 1;
    if (neg) /* excluding everything leaves nothing: a bit no pair has */
        return (all & ~m) ? (all & ~m) : 1u << n;
    return m ? m : all; /* nothing we model: leave every pair on */
}

herd_status_t sim_nccl_topo_init(const herd_cluster_t *cl, int nranks,
                                 int nnodes, sim_nccl_topo_t *out)
{
    if (!cl || !out || nranks < 1 || cl->gpus_per_node < 1 ||
        !(cl->intra.bandwidth > 0) || !(cl->inter.bandwidth > 0))
        return HERD_ERR_INVALID_ARG;
    sim_nccl_topo_t t = {0};
    t.nranks = nranks;
    t.nnodes = nnodes > 0 ? nnodes : (nranks - 1) / cl->gpus_per_node + 1;
    if (t.nnodes > nranks)
        return HERD_ERR_INVALID_ARG;
    t.ppn = nranks / t.nnodes;
    t.intra_gbs = cl->intra.bandwidth / 1e9;
    t.nic_gbs = cl->inter.bandwidth / 1e9;
    /* Faster than PCIe Gen5 x16 (~32 GB/s per direction): NVLink. */
    t.nvlink = t.intra_gbs > 32.0;
    t.ll128 = t.nvlink;
    int nics = cl->nics_per_node > 0 ? cl->nics_per_node : cl->gpus_per_node;
    t.nics = nics < t.ppn ? nics : t.ppn;
    t.intra_lat_us = cl->intra.latency * 1e6;
    t.inter_lat_us = cl->inter.latency * 1e6;
    t.algo_mask = parse_mask(getenv("NCCL_ALGO"), algo_names, SIM_NCCL_NALGO);
    t.proto_mask =
        parse_mask(getenv("NCCL_PROTO"), proto_names, SIM_NCCL_NPROTO);
    graph_search(&t);
    *out = t;
    return HERD_OK;
}

static int tuned(herd_coll_t coll)
{
    return coll == HERD_COLL_ALL_REDUCE || coll == HERD_COLL_BROADCAST ||
           coll == HERD_COLL_REDUCE || coll == HERD_COLL_ALL_GATHER ||
           coll == HERD_COLL_REDUCE_SCATTER;
}

static int nsteps_of(const sim_nccl_topo_t *t, herd_coll_t coll)
{
    int n = t->nranks;
    if (coll == HERD_COLL_ALL_REDUCE)
        return 2 * (n - 1);
    if (coll == HERD_COLL_ALL_GATHER || coll == HERD_COLL_REDUCE_SCATTER)
        return n - 1;
    return n;
}

/* comm->bandwidths[coll][a][p] (algorithm bandwidth, GB/s); 0: off. */
static double model_bw(const sim_nccl_topo_t *t, herd_coll_t coll,
                       sim_nccl_algo_t a, sim_nccl_proto_t p)
{
    int idx = t->nnodes <= 2 ? t->nnodes - 1 : 2;
    double ll_max = t->nnodes == 1 ? ll_max_bw_1node : ll_max_bw_intel[idx];
    double nch = t->graph_channels;
    double bus = nch * t->graph_bw;
    if (p == SIM_NCCL_LL128 && !t->ll128)
        return 0;
    if (a == SIM_NCCL_RING && p == SIM_NCCL_LL)
        bus = fmin(ll_max, bus * .5);
    if (a == SIM_NCCL_RING && p == SIM_NCCL_LL128)
        bus = fmin(bus * .92, nch * per_ch_ring_ll128[idx]);
    if (a == SIM_NCCL_TREE) {
        bus = fmin(bus * .92, nch * per_ch_tree[idx]);
        if (p == SIM_NCCL_LL)
            bus = fmin(bus / 3.8, ll_max);
        if (p == SIM_NCCL_LL128)
            bus = fmin(bus * (t->nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                       nch * per_ch_tree_ll128[idx]);
        return bus * .5;
    }
    return bus * t->nranks / nsteps_of(t, coll);
}

/* comm->latencies[coll][a][p] (µs). */
static double model_lat(const sim_nccl_topo_t *t, herd_coll_t coll,
                        sim_nccl_algo_t a, sim_nccl_proto_t p)
{
    int intra_hw = t->nvlink ? HW_NVLINK : HW_PCI;
    double lat = base_lat[a][p];
    double intra = hw_lat[intra_hw][a][p];
    double inter =
        hw_lat[HW_NET][t->nranks == t->nnodes ? SIM_NCCL_TREE : a][p];
    if (a == SIM_NCCL_TREE)
        return lat +
               2 * ((t->ppn - 1) * intra + log2i((uint64_t)t->nnodes) * inter);
    int hw = t->nnodes == 1 ? intra_hw : HW_NET;
    if (coll == HERD_COLL_BROADCAST || coll == HERD_COLL_REDUCE)
        return lat + hw_lat[hw][a][p]; /* sameChannels rings */
    double over = 0;
    if (t->nnodes > 1)
        over = NCCL_NET_OVERHEAD_US * (p == SIM_NCCL_SIMPLE ? 3 : 1);
    intra = fmax(intra, over);
    int steps = nsteps_of(t, coll);
    int inter_steps = t->nnodes == 1                 ? 0
                      : coll == HERD_COLL_ALL_REDUCE ? 2 * (t->nnodes - 1)
                                                     : t->nnodes - 1;
    return lat + (steps - inter_steps) * intra + inter_steps * inter;
}

double sim_nccl_time(const sim_nccl_topo_t *t, herd_coll_t coll,
                     sim_nccl_algo_t a, sim_nccl_proto_t p, uint64_t nbytes)
{
    if (!tuned(coll) || (unsigned)a >= SIM_NCCL_NALGO ||
        (unsigned)p >= SIM_NCCL_NPROTO)
        return -1;
    if (t->nranks == 1)
        return a == SIM_NCCL_RING && p == SIM_NCCL_SIMPLE ? 0 : -1;
    if (a == SIM_NCCL_TREE && coll != HERD_COLL_ALL_REDUCE)
        return -1;
    if ((t->algo_mask && !(t->algo_mask & (1u << a))) ||
        (t->proto_mask && !(t->proto_mask & (1u << p))))
        return -1; /* NCCL_ALGO / NCCL_PROTO */
    double bw = model_bw(t, coll, a, p);
    if (!(bw > 0))
        return -1;
    double lat = model_lat(t, coll, a, p);
    int ls = log2i(nbytes >> 6);
    if (a == SIM_NCCL_TREE && ls >= 0 && ls < 23)
        bw *= tree_corr[p][ls];
    if (a == SIM_NCCL_RING && p == SIM_NCCL_SIMPLE && t->nnodes > 1 &&
        coll == HERD_COLL_ALL_REDUCE &&
        nbytes / ((uint64_t)t->channels * (uint64_t)t->nranks) >= 64)
        lat *= 1.4; /* "plateau effect of ring", compute capability >= 8 */
    return lat + (double)nbytes / (1000.0 * bw);
}

/* topoGetAlgoInfo: fewer channels while each thread would get less than
 * its threshold of bytes. */
static int pick_channels(const sim_nccl_topo_t *t, sim_nccl_algo_t a,
                         sim_nccl_proto_t p, uint64_t nbytes)
{
    uint64_t nc = (uint64_t)t->channels;
    uint64_t th = thread_threshold[p];
    if (a == SIM_NCCL_RING && p == SIM_NCCL_LL)
        th *= (uint64_t)t->nranks;
    while (nbytes < nc * max_threads[p] * th && nc >= 2)
        nc--;
    return (int)nc;
}

/* calcCollChunking: a chunk of chunkSteps steps (ring Simple), LL
 * carrying half its lines' bytes, LL128 15 of every 16 words; tree LL128
 * halves the chunk while there are too few chunks to pipeline. */
static void pick_chunk(const sim_nccl_topo_t *t, sim_nccl_plan_t *pl,
                       uint64_t nbytes)
{
    uint64_t step = buff_size[pl->proto] / NCCL_STEPS;
    int ring_simple = pl->algo == SIM_NCCL_RING && pl->proto == SIM_NCCL_SIMPLE;
    int bcast = pl->coll == HERD_COLL_BROADCAST || pl->coll == HERD_COLL_REDUCE;
    uint64_t chunk_steps = ring_simple && !bcast ? NCCL_STEPS / 2 : 1;
    uint64_t slice_steps = ring_simple && !bcast ? NCCL_STEPS / 4 : 1;
    uint64_t chunk = step * chunk_steps;
    if (pl->proto == SIM_NCCL_LL)
        chunk /= 2;
    if (pl->proto == SIM_NCCL_LL128)
        chunk = chunk / 16 * 15;
    if (pl->algo == SIM_NCCL_TREE && pl->proto == SIM_NCCL_LL128) {
        double ppn = t->ppn;
        double k = 1 + log2i((uint64_t)t->nnodes) + 0.1 * ppn;
        uint64_t nch = (uint64_t)pl->channels;
        while ((double)(nbytes / (nch * chunk)) < k * 64 / ppn &&
               chunk > 131072)
            chunk /= 2;
        while ((double)(nbytes / (nch * chunk)) < k * 16 / ppn && chunk > 32768)
            chunk /= 2;
    }
    pl->chunk_bytes = chunk;
    pl->slice_bytes = chunk / chunk_steps * slice_steps;
}

/* NCCL's latency per hop as the simulator spreads it: what NCCL's table
 * charges beyond the simulated links' own latency, over the hops of the
 * critical path (the ring's steps, the binary trees' depth up and down). */
static uint64_t hop_extra_ns(const sim_nccl_topo_t *t,
                             const sim_nccl_plan_t *pl)
{
    double hops, path;
    if (pl->algo == SIM_NCCL_RING) {
        int steps = pl->coll == HERD_COLL_ALL_REDUCE ? 2 * (t->nranks - 1)
                                                     : t->nranks - 1;
        int inter = t->nnodes == 1                     ? 0
                    : pl->coll == HERD_COLL_ALL_REDUCE ? 2 * (t->nnodes - 1)
                                                       : t->nnodes - 1;
        hops = steps;
        path = (steps - inter) * t->intra_lat_us + inter * t->inter_lat_us;
    } else { /* chain up and down inside the node, binary trees across */
        int depth = log2i((uint64_t)t->nnodes);
        hops = 2.0 * (t->ppn - 1) + 2.0 * depth;
        path = 2.0 * (t->ppn - 1) * t->intra_lat_us +
               2.0 * depth * t->inter_lat_us;
    }
    if (hops < 1 || pl->lat_us <= path)
        return 0;
    return (uint64_t)llround((pl->lat_us - path) / hops * 1e3);
}

static void plan_untuned(herd_coll_t coll, sim_nccl_plan_t *pl)
{
    pl->algo = SIM_NCCL_RING;
    pl->proto = SIM_NCCL_SIMPLE;
    pl->time_us = pl->lat_us = pl->bw_gbs = -1;
    pl->channels = 1;
    pl->chunk_bytes = pl->slice_bytes = 0;
    pl->lower = coll == HERD_COLL_BARRIER ? HERD_ALGO_AUTO : HERD_ALGO_DIRECT;
    pl->wire = 1.0;
    pl->hop_ns = 0;
}

herd_status_t sim_nccl_plan(const sim_nccl_topo_t *t, herd_coll_t coll,
                            uint64_t nbytes, sim_nccl_plan_t *out)
{
    if (!t || !out || (unsigned)coll >= HERD_COLL_COUNT ||
        coll == HERD_COLL_SEND || coll == HERD_COLL_RECV)
        return HERD_ERR_INVALID_ARG;
    sim_nccl_plan_t pl = {.valid = 1, .coll = coll};
    if (!tuned(coll)) {
        plan_untuned(coll, &pl);
        *out = pl;
        return HERD_OK;
    }
    double best = -1;
    for (int a = 0; a < SIM_NCCL_NALGO; a++)
        for (int p = 0; p < SIM_NCCL_NPROTO; p++) {
            double tm = sim_nccl_time(t, coll, a, p, nbytes);
            if (tm >= 0 && (best < 0 || tm < best)) {
                best = tm;
                pl.algo = (sim_nccl_algo_t)a;
                pl.proto = (sim_nccl_proto_t)p;
            }
        }
    if (best < 0) /* NCCL: "No algorithm/protocol available" */
        return HERD_ERR_UNSUPPORTED;
    pl.time_us = best;
    pl.lat_us = t->nranks > 1 ? model_lat(t, coll, pl.algo, pl.proto) : 0;
    pl.bw_gbs = t->nranks > 1 ? model_bw(t, coll, pl.algo, pl.proto) : 0;
    pl.channels =
        t->nranks > 1 ? pick_channels(t, pl.algo, pl.proto, nbytes) : 1;
    pick_chunk(t, &pl, nbytes);
    pl.lower = pl.algo == SIM_NCCL_TREE ? HERD_ALGO_TREE : HERD_ALGO_RING;
    pl.wire = wire_factor[pl.proto];
    pl.hop_ns = t->nranks > 1 ? hop_extra_ns(t, &pl) : 0;
    *out = pl;
    return HERD_OK;
}

uint64_t sim_nccl_nbytes(herd_coll_t coll, uint64_t count, size_t esize,
                         int nranks)
{
    uint64_t n = count * esize;
    if (coll == HERD_COLL_ALL_GATHER || coll == HERD_COLL_REDUCE_SCATTER)
        n *= (uint64_t)nranks;
    return n;
}

herd_status_t sim_nccl_predict(const herd_cluster_t *cluster, int nranks,
                               herd_coll_t coll, uint64_t count,
                               herd_dtype_t dtype, sim_nccl_plan_t *out)
{
    size_t es = herd_dtype_size(dtype);
    if (!out || es == 0)
        return HERD_ERR_INVALID_ARG;
    if ((unsigned)coll < HERD_COLL_COUNT && !tuned(coll))
        return HERD_ERR_UNSUPPORTED;
    sim_nccl_topo_t t;
    herd_status_t st = sim_nccl_topo_init(cluster, nranks, 0, &t);
    if (st == HERD_OK)
        st = sim_nccl_plan(&t, coll, sim_nccl_nbytes(coll, count, es, nranks),
                           out);
    return st;
}

uint64_t sim_nccl_wire_bytes(const sim_nccl_plan_t *plan, uint64_t bytes)
{
    if (!plan->valid || plan->wire == 1.0)
        return bytes;
    return (uint64_t)ceil((double)bytes * plan->wire);
}
