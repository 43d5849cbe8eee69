/* herd/sim.h - options of the discrete-event simulator engine.
 *
 * Pass a herd_sim_opts_t through herd_init_t.engine_opts with backend
 * "sim". herd_sim_opts_init() fills the defaults (one node of 8 GPUs with
 * NVLink-like links); the scenario reader (trace/) fills it from YAML. */
#ifndef HERD_SIM_H
#define HERD_SIM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <herd/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct herd_link {
    double bandwidth; /* bytes per second */
    double latency;   /* seconds */
    uint64_t burst;   /* bytes: a token bucket (Linux tbf, a cloud NIC's
                         shaping) passes this much at once after the link
                         has been idle, refilled at `bandwidth` while it
                         is idle; 0: none (docs/network-model.md) */
} herd_link_t;

typedef enum herd_topo {
    HERD_TOPO_NONBLOCKING, /* every NIC reaches every other at full rate */
    HERD_TOPO_FATTREE,     /* leaf uplinks oversubscribed by `oversub` */
    HERD_TOPO_RAIL         /* NIC i of each node on rail switch i */
} herd_topo_t;

typedef struct herd_cluster {
    int nodes;
    int gpus_per_node;
    herd_link_t intra; /* per-GPU intra-node fabric (NVLink-like) */
    herd_link_t inter; /* per-NIC network link */
    int nics_per_node; /* 0: one NIC per GPU */
    herd_topo_t topo;
    double oversub;           /* fat-tree oversubscription ratio (>= 1) */
    int nodes_per_leaf;       /* fat-tree: nodes under one leaf switch */
    double reduce_bw;         /* bytes/s of a local reduction; 0: free */
    double spine_latency;     /* seconds added through the spine: fat-tree
                                 cross-leaf, rail cross-rail traffic */
    double comm_cpu_slowdown; /* CPU backends: compute runs 1 + this times
                                 as long while the rank has communication
                                 in flight (its progress and the kernel's
                                 TCP stack take cycles); 0: none */
    double compute_comm_slowdown; /* CPU backends, the other way round: while
                                     a rank computes, its ports and NIC
                                     carry 1 / (1 + this) of their capacity
                                     (its network processing waits for
                                     cycles); 0: none */
} herd_cluster_t;

typedef enum herd_jitter {
    HERD_JITTER_NONE,
    HERD_JITTER_NORMAL,   /* duration * max(0, N(1, sigma)) */
    HERD_JITTER_LOGNORMAL /* duration * LogNormal(-sigma^2/2, sigma) */
} herd_jitter_t;

/* A per-rank override: compute slowdown, NIC / intra-link degradation. */
typedef struct herd_rank_override {
    int rank;
    double compute_factor; /* >= 1 slows compute; 0: unchanged */
    double nic_factor;     /* multiplies the rank's NIC bandwidth; 0: 1 */
    double intra_factor;   /* multiplies its intra-node bandwidth; 0: 1 */
} herd_rank_override_t;

/* A slow point-to-point link between two ranks (both directions). */
typedef struct herd_link_override {
    int a, b;
    double bw_factor;     /* multiplies the bandwidth; 0: 1 */
    double extra_latency; /* seconds added */
} herd_link_override_t;

/* How far a long run is (herd_sim_opts_t.progress_cb). The estimate
 * covers the collectives posted so far: steps_done of their steps_total
 * schedule steps are done (a later collective adds to the total). */
typedef struct herd_sim_progress {
    uint64_t events;      /* engine events and network callbacks */
    uint64_t now_ns;      /* simulated time */
    uint64_t steps_done;  /* schedule steps completed */
    uint64_t steps_total; /* schedule steps of the collectives posted */
    int ranks;            /* world size */
    int ranks_done;       /* ranks that returned or died */
    double wall_s;        /* since the run started */
} herd_sim_progress_t;

typedef void (*herd_sim_progress_cb)(const herd_sim_progress_t *p, void *arg);

/* A rank that dies: at a virtual time, or when it starts step `at_step`
 * (as counted by herd_mark labels "step"), whichever is set (>= 0). */
typedef struct herd_fault {
    int rank;
    double at_time; /* seconds; < 0: unset */
    long at_step;   /* < 0: unset */
} herd_fault_t;

typedef struct herd_sim_opts {
    herd_cluster_t cluster;
    int world_size; /* 0: nodes * gpus_per_node */
    uint64_t seed;
    herd_jitter_t jitter;
    double jitter_sigma;
    const herd_rank_override_t *ranks;
    size_t nranks_overrides;
    const herd_link_override_t *links;
    size_t nlink_overrides;
    const herd_fault_t *faults;
    size_t nfaults;
    int real_buffers;   /* 1: allocate and compute results */
    size_t stack_bytes; /* per-rank context stack; 0: default */
    int nccl_model;     /* 1: algorithm AUTO runs the NCCL model (as
                           algorithm "nccl"; sim/nccl_model.h) */
    int no_rotation;    /* tests: lower every rank's schedule even when
                           they are rotations of one another (the
                           results are the same, set-up is slower) */
    herd_sim_progress_cb progress_cb; /* called about every progress_s of
                                         wall time; NULL: never */
    void *progress_arg;
    double progress_s;           /* 0: 0.5 s */
    volatile sig_atomic_t *stop; /* nonzero (e.g. set by a SIGINT handler):
                              the run ends at its next event with
                              HERD_ERR_ABORTED and a partial report in
                              herd_run_info_t.report */
    const char *flight_dir;      /* a run that hangs or times out writes every
                                   rank's flight record here (rank<r>.json, for
                                   `herd diagnose`); NULL: $HERD_FLIGHT_DIR, and
                                   when that is unset too, none */
} herd_sim_opts_t;

void herd_sim_opts_init(herd_sim_opts_t *opts);

#ifdef __cplusplus
}
#endif
#endif
