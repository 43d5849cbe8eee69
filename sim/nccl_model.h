/* sim/nccl_model.h - the simulator's model of NCCL (algorithm "nccl").
 *
 * Two halves. The analytic half reproduces NCCL's tuning model
 * (src/graph/tuning.cc, Hopper constants): from the simulated cluster it
 * derives what NCCL's topology search would find (channels and the
 * per-channel bandwidth of the ring/tree graphs), evaluates latency +
 * bytes / bandwidth for every (algorithm, protocol), and picks the
 * cheapest as NCCL does, then NCCL's channel count and chunk size for
 * the size. sim_nccl_predict() returns that estimate: NCCL's own idea of
 * the time, with no simulation.
 *
 * The executing half (sim_nccl_lower) turns the choice into core/
 * schedules the simulator runs: NCCL's channels as separate rings (each
 * entering and leaving a node through a different GPU, hence NIC, as
 * NCCL's rings do), its chunking, and the protocol's effects: bytes on the
 * wire per payload byte (LL 2, LL128 128/120, Simple 1) and an extra
 * latency per hop so that a latency-bound collective costs what NCCL's
 * table says. docs/nccl-model.md records where every constant comes from.
 */
#ifndef HERD_SIM_NCCL_MODEL_H
#define HERD_SIM_NCCL_MODEL_H

#include <stdint.h>

#include <herd/sim.h>
#include <herd/types.h>

#include "core/sched.h"

/* In NCCL's order (NCCL_ALGO_TREE = 0, NCCL_ALGO_RING = 1): ties go to
 * the tree, as in NCCL's selection loop. */
typedef enum sim_nccl_algo {
    SIM_NCCL_TREE,
    SIM_NCCL_RING,
    SIM_NCCL_NALGO
} sim_nccl_algo_t;

typedef enum sim_nccl_proto {
    SIM_NCCL_LL,
    SIM_NCCL_LL128,
    SIM_NCCL_SIMPLE,
    SIM_NCCL_NPROTO
} sim_nccl_proto_t;

/* What NCCL's topology detection and graph search would find. */
typedef struct sim_nccl_topo {
    int nranks, nnodes, ppn;
    int nvlink;          /* intra-node links are NVLink (else PCI) */
    int ll128;           /* LL128 enabled (NVLink inside the node) */
    double intra_gbs;    /* per-GPU intra-node bandwidth, GB/s */
    double nic_gbs;      /* per-NIC bandwidth, GB/s */
    int nics;            /* NICs per node */
    int graph_channels;  /* channels of the ring (and tree) graph */
    double graph_bw;     /* their per-channel bandwidth, GB/s */
    int channels;        /* comm->nChannels after duplication */
    double intra_lat_us; /* the simulator's path latencies */
    double inter_lat_us;
    unsigned algo_mask;  /* bit per sim_nccl_algo_t allowed; 0: all */
    unsigned proto_mask; /* bit per sim_nccl_proto_t allowed; 0: all */
} sim_nccl_topo_t;

/* NCCL's choice for one collective and how the simulator runs it. */
typedef struct sim_nccl_plan {
    int valid;
    herd_coll_t coll;
    sim_nccl_algo_t algo;
    sim_nccl_proto_t proto;
    double time_us;        /* NCCL's estimate (< 0: not in its tuning) */
    double lat_us, bw_gbs; /* its latency and algorithm bandwidth */
    int channels;          /* after NCCL's size-based reduction */
    uint64_t chunk_bytes;  /* NCCL's chunk (payload bytes) */
    uint64_t slice_bytes;  /* what one simulated message carries */
    herd_algo_t lower;     /* core/ algorithm the simulator runs */
    double wire;           /* bytes on the wire per payload byte */
    uint64_t hop_ns;       /* extra latency added to every receive */
} sim_nccl_plan_t;

const char *sim_nccl_algo_name(sim_nccl_algo_t a);
const char *sim_nccl_proto_name(sim_nccl_proto_t p);

/* NCCL's nBytes for a call of `count` elements: count * esize, times
 * nranks for all_gather and reduce_scatter. */
uint64_t sim_nccl_nbytes(herd_coll_t coll, uint64_t count, size_t esize,
                         int nranks);

/* The topology NCCL would see for `nranks` ranks spread over `nnodes`
 * nodes of `cluster` (nnodes 0: ranks fill nodes in order). NCCL_ALGO
 * and NCCL_PROTO in the environment restrict the choice as in NCCL. */
herd_status_t sim_nccl_topo_init(const herd_cluster_t *cluster, int nranks,
                                 int nnodes, sim_nccl_topo_t *out);

/* NCCL's estimated time in µs of (algo, proto) for `nbytes` (NCCL's
 * nBytes: count * size, times nranks for all_gather / reduce_scatter);
 * -1 when NCCL would not use that pair for the collective. */
double sim_nccl_time(const sim_nccl_topo_t *t, herd_coll_t coll,
                     sim_nccl_algo_t a, sim_nccl_proto_t p, uint64_t nbytes);

/* NCCL's choice (cheapest pair, channels, chunk) and the simulator's
 * execution parameters. Collectives outside NCCL's tuning (gather,
 * scatter, all_to_all: grouped send/recv; barrier) get a plan with
 * time_us < 0 that runs core/'s direct or barrier schedules. */
herd_status_t sim_nccl_plan(const sim_nccl_topo_t *t, herd_coll_t coll,
                            uint64_t nbytes, sim_nccl_plan_t *out);

/* NCCL's own estimate, analytically: the plan for `count` elements of
 * `dtype` on `nranks` ranks of `cluster` (filling nodes in order).
 * HERD_ERR_UNSUPPORTED for collectives outside NCCL's tuning model. */
herd_status_t sim_nccl_predict(const herd_cluster_t *cluster, int nranks,
                               herd_coll_t coll, uint64_t count,
                               herd_dtype_t dtype, sim_nccl_plan_t *out);

/* Bytes a message of `bytes` payload puts on the wire under the plan
 * (unchanged when the plan is not valid). */
uint64_t sim_nccl_wire_bytes(const sim_nccl_plan_t *plan, uint64_t bytes);

/* The simulator's hook: lower a collective instance whose algorithm is
 * HERD_ALGO_NCCL for group rank `rank` (computes the instance's plan on
 * first use). */
struct sim_world;
struct sim_inst;
herd_status_t sim_nccl_lower(struct sim_world *w, struct sim_inst *inst,
                             int rank, core_sched_t *out);
/* 1 when the instance's members are interchangeable under a shift by
 * one node (NCCL's rings, each channel's blocks equal): the symmetry
 * shortcut (sim/sym.c) may run it. Computes the plan. */
int sim_nccl_sym_ok(struct sim_world *w, struct sim_inst *inst);

#endif
