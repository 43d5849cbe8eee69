/* sim/net.h - the simulator's network model: topology, links, and
 * flow-level bandwidth sharing.
 *
 * A transfer (flow) goes from one rank to another on a connection
 * (src, dst, channel). Connections are FIFO, as NCCL's are: a flow starts
 * moving bytes only when the previous flow on its connection has finished
 * transmitting. Active flows share the links they cross max-min fairly
 * (a rank's intra-node port, its NIC egress/ingress, switch uplinks for a
 * fat-tree, per-link overrides). A flow is "sent" when its last byte left
 * (time = start of transmission + bytes / rate, with the rate changing as
 * other flows come and go) and "delivered" one path latency later.
 *
 * The model is passive: the engine asks for the time of the next event
 * and advances it; completions come back through a callback. */
#ifndef HERD_SIM_NET_H
#define HERD_SIM_NET_H

#include <stdint.h>

#include <herd/sim.h>

typedef struct sim_net sim_net_t;

/* Called for each flow: once with delivered = 0 when its last byte left
 * the sender (time `t`), once with delivered = 1 when it arrived. */
typedef void (*sim_net_done_cb)(void *ctx, uint64_t t, int delivered,
                                void *arg);

herd_status_t sim_net_create(const herd_sim_opts_t *opts, int world_size,
                             sim_net_done_cb cb, void *cb_arg, sim_net_t **out);
void sim_net_destroy(sim_net_t *net);

/* Queue a flow of `bytes` at virtual time `now` (>= the last time passed
 * to advance). `ctx` comes back in the callback. Zero-byte flows take the
 * path latency only. */
herd_status_t sim_net_flow_start(sim_net_t *net, uint64_t now, int src, int dst,
                                 int channel, uint64_t bytes, void *ctx);

/* A connection handle for (src, dst, channel), made on first use; ids
 * are small integers, stable for the model's life. Starting flows on a
 * handle skips the lookup: for engines that cache it per schedule step.
 * sim_net_flow_start_on behaves exactly as sim_net_flow_start. */
herd_status_t sim_net_conn(sim_net_t *net, int src, int dst, int channel,
                           uint32_t *out);
herd_status_t sim_net_flow_start_on(sim_net_t *net, uint64_t now, uint32_t conn,
                                    uint64_t bytes, void *ctx);

/* Time of the earliest pending send-completion or delivery; UINT64_MAX
 * if nothing is in flight. */
uint64_t sim_net_next_time(const sim_net_t *net);

/* Process every net event with time <= t (in time order; callbacks may
 * start new flows at their event time). */
void sim_net_advance(sim_net_t *net, uint64_t t);

/* Rank `rank` starts (busy 1) or stops (busy 0) computing at `now`. On a
 * CPU backend its network processing (the communication library's
 * threads, the kernel's TCP stack) then waits for cycles: while it
 * computes, its intra-node ports and its NIC (both directions; a NIC
 * shared by several ranks while any of them computes) carry 1 / (1 +
 * cluster.compute_comm_slowdown) of their capacity, and the flows on them
 * get new max-min shares from `now`. Nothing happens when that slowdown
 * is 0. Calls must pair up per rank. */
herd_status_t sim_net_rank_busy(sim_net_t *net, uint64_t now, int rank,
                                int busy);

/* Closed-form helpers for tests and reports: the uncontended latency
 * (ns) and bandwidth (bytes/s) of the path src -> dst. */
uint64_t sim_net_path_latency(const sim_net_t *net, int src, int dst);
double sim_net_path_bandwidth(const sim_net_t *net, int src, int dst);

/* Transmission time (ns) of `bytes` at `bw` bytes/s as the model rounds
 * it: ceil(bytes * 1e9 / bw), forgiving floating-point noise of 1e-12
 * relative above an integer. A lone flow started at t is sent at
 * t + sim_net_tx_ns(bytes, path bandwidth) and delivered one path latency
 * later. */
uint64_t sim_net_tx_ns(uint64_t bytes, double bw);

/* Check options for sim_net_create; on error write what is wrong (the
 * field and value) into err and return HERD_ERR_INVALID_ARG. world_size
 * 0 means opts->world_size, or all GPUs when that is 0 too. */
herd_status_t sim_net_check_opts(const herd_sim_opts_t *opts, int world_size,
                                 char *err, size_t errlen);

/* Counters: flows started, rate recomputations, peak flows in flight. */
typedef struct sim_net_stats {
    uint64_t flows;
    uint64_t recomputes;
    uint64_t peak_active;
} sim_net_stats_t;
void sim_net_stats(const sim_net_t *net, sim_net_stats_t *out);

#endif
