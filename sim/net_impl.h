/* sim/net_impl.h - internal state of the network model, shared by
 * net.c (flows, connections, event loop), net_heap.c (event queue),
 * net_share.c (max-min sharing) and topo.c (topology and paths).
 *
 * Everything is addressed by 32-bit indices into arrays that only grow,
 * so callbacks that start flows (and may grow the arrays) never leave a
 * dangling pointer behind. All memory is reserved in sim_net_flow_start;
 * sim_net_advance never allocates, so it cannot fail. */
#ifndef HERD_SIM_NET_IMPL_H
#define HERD_SIM_NET_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "sim/net.h"

#define NET_NONE UINT32_MAX
#define NET_NEVER UINT64_MAX
/* Links on one path: two ports or NICs, a switch up/down pair, and a
 * per-pair override. */
#define NET_MAX_PATH 5
#define NET_HINTS 16
/* Tag in net_ev_t.ver: the event is a delivery of flow `id`. */
#define NET_EV_DELIVERY 0x80000000u
#define NET_VER_MASK 0x7fffffffu

/* A shared resource: a port, NIC direction, switch uplink or override. */
typedef struct net_link {
    double cap;     /* bytes per second */
    double left;    /* water-filling: capacity not yet handed out */
    uint32_t nleft; /* water-filling: connections not yet frozen */
    uint32_t stamp; /* component search epoch */
    uint32_t dirty; /* on the dirty list */
    uint32_t n;     /* active connections crossing it */
    uint32_t users; /* connections whose path crosses it */
    uint32_t conns_cap;
    uint32_t *conns; /* the n active connections (room for all users) */
    double burst;    /* token bucket size in bytes (0: none) */
    double tokens;   /* bytes it passes at once, as of t_idle */
    uint64_t t_idle; /* when it last became idle (n == 0), or was topped up */
} net_link_t;

/* compute_comm_slowdown's state of a link, apart from net_link_t so that
 * the links the settle walks stay as small as they were. */
typedef struct net_busy {
    double cap_full; /* capacity while no rank behind it computes */
    uint32_t n;      /* ranks behind it computing */
} net_busy_t;

typedef struct net_path {
    uint32_t link[NET_MAX_PATH];
    uint32_t n;
    uint64_t lat; /* ns */
    double bw;    /* uncontended bytes per second */
} net_path_t;

/* One FIFO connection (src, dst, channel); its head flow is the only one
 * moving bytes. While it has bytes to move it is "in links": listed on
 * every link of its path, and its rate is its max-min share. */
typedef struct net_conn {
    int32_t src, dst, chan;
    uint32_t head, tail; /* flow queue */
    uint32_t ver;        /* bumps invalidate its pending heap entry */
    uint32_t stamp;
    uint8_t nlinks, in_links, frozen, lane;
    uint32_t link[NET_MAX_PATH];
    uint32_t pos[NET_MAX_PATH]; /* index in link->conns */
    uint64_t lat;
    uint64_t t_upd;  /* time `rem` was last brought up to date */
    uint64_t t_done; /* scheduled end of the head's transmission */
    double rate;     /* bytes per second; 0: not assigned yet */
    double rem;      /* head's bytes left at t_upd */
    double newrate;  /* water-filling result */
} net_conn_t;

typedef struct net_flow {
    uint64_t bytes;
    void *ctx;
    uint32_t next; /* next in the connection's queue, or in the free list */
} net_flow_t;

typedef struct net_qnode {
    uint64_t seq;
    uint32_t id, ver;
    uint32_t next;
} net_qnode_t;

typedef struct net_bucket {
    uint64_t t;
    uint64_t order;      /* creation order: buckets of one time, oldest first */
    uint32_t head, tail; /* nodes in sequence order; free list in head */
} net_bucket_t;

typedef struct net_tslot {
    uint64_t t;
    uint32_t b; /* bucket */
} net_tslot_t;

typedef struct net_ev {
    uint64_t t;
    uint64_t seq;
    uint32_t id;  /* connection, or flow for a delivery */
    uint32_t ver; /* connection version, or NET_EV_DELIVERY */
} net_ev_t;

/* Deliveries of connections with the same latency happen in the order
 * their sends ended, so each distinct latency gets a FIFO lane instead of
 * heap entries. Latencies beyond NET_LANES (many slowed pairs) use the
 * heap. */
#define NET_LANES 8
#define NET_LANE_HEAP 0xff

typedef struct net_dev {
    uint64_t t;
    uint64_t seq;
    uint32_t flow;
} net_dev_t;

typedef struct net_lane {
    uint64_t lat;
    net_dev_t *q; /* ring buffer */
    uint32_t cap, head, n;
    uint32_t users; /* live flows on this lane's connections */
} net_lane_t;

/* A merged per-pair override (a < b), looked up when a connection is
 * made. */
typedef struct net_pair {
    int32_t a, b;
    double bw_factor;
    double extra_lat;          /* seconds */
    uint32_t link_ab, link_ba; /* NET_NONE: bandwidth unchanged */
} net_pair_t;

typedef struct net_state {
    herd_cluster_t cl;
    int world, gpn, nics; /* nics: per node, after the 0 default */
    uint32_t nic_base;    /* link index of NIC egress; ingress follows */
    uint32_t sw_base;     /* switch up links; down links follow */
    uint32_t nsw;         /* switch links per direction */
    uint32_t pair_base;
    int bursts; /* some link has a token bucket */

    net_link_t *links;
    uint32_t nlinks;
    net_pair_t *pairs;
    uint32_t npairs;
    net_busy_t *busy; /* per link; only with compute_comm_slowdown */

    net_conn_t *conns;
    uint32_t nconns, conns_cap;
    uint32_t *tab; /* hash of (src, dst, chan) -> connection */
    uint32_t tab_cap;
    /* The connection last used by (src, chan mod NET_HINTS): rings and
     * trees hit it, which saves the hash table's cache misses. */
    uint32_t *hint;

    net_flow_t *flows;
    uint32_t flows_cap, free_flow, live_flows;

    net_lane_t lanes[NET_LANES];
    uint32_t nlanes;
    /* The lane whose head delivery is the earliest of all lane heads
     * (NET_EV_NONE: all empty), valid while lane_min_ok: heads change
     * only when a lane is popped or an empty one gets a delivery. */
    int lane_min, lane_min_ok;

    /* send completions (net_heap.c): nodes in FIFO buckets per time */
    net_qnode_t *qn;
    uint32_t qn_cap, qn_free, nq;
    net_bucket_t *bk;
    uint32_t bk_free, last_bk;
    net_tslot_t *th; /* 4-ary heap of the buckets by (time, order) */
    uint32_t nth;
    uint64_t bk_order;
    net_ev_t top;
    /* net_next_event's answer, kept until the queue or a lane changes:
     * the engine asks several times per event */
    net_ev_t next_ev;
    int next_src, next_ok;
    uint64_t seq;

    uint32_t *dirty; /* links whose connection set changed */
    uint32_t ndirty;
    uint64_t t_dirty;
    uint32_t *comp_links, *comp_conns;
    uint32_t ncomp_links, ncomp_conns;
    uint32_t epoch;

    uint64_t now; /* time of the last event processed or flow started */
    sim_net_done_cb cb;
    void *cb_arg;
    sim_net_stats_t stats;
} net_state_t;

struct sim_net {
    /* Behind a pointer so that sim_net_next_time, const to its callers,
     * can settle deferred rate changes first. */
    net_state_t *st;
};

/* net.c: transmission time in ns of `bytes` at `bw` bytes/s, rounded up
 * (see sim_net_tx_ns). */
uint64_t net_tx_ns(double bytes, double bw);

/* topo.c */
herd_status_t net_topo_build(net_state_t *s, const herd_sim_opts_t *opts);
void net_topo_path(const net_state_t *s, int src, int dst, net_path_t *out);
/* Index (0 .. nodes * NICs) of the NIC rank r uses. */
uint32_t net_topo_nic(const net_state_t *s, int r);
herd_status_t net_topo_check(const herd_sim_opts_t *opts, int world_size,
                             char *err, size_t errlen);

/* net_heap.c */
void net_heap_push(net_state_t *s, uint64_t t, uint32_t id, uint32_t ver);
/* The earliest live event, stale ones dropped; NULL if none. */
const net_ev_t *net_heap_top(net_state_t *s);
void net_heap_pop(net_state_t *s);
void net_heap_free(net_state_t *s);
/* Make room for `live` entries plus slack (called where allocation may
 * fail). */
herd_status_t net_heap_reserve(net_state_t *s, uint64_t live);

/* net_lane.c */
#define NET_EV_NONE (-2)
#define NET_EV_HEAP (-1)
/* An event at t, queued just now, leaves net_next_event's cached answer
 * standing unless it comes first: its sequence number is the newest, so
 * at an equal time the cached event still wins. The engine queues most
 * events for later than the next one. */
static inline void net_next_keep(net_state_t *s, uint64_t t)
{
    if (s->next_ok && (s->next_src == NET_EV_NONE || t < s->next_ev.t))
        s->next_ok = 0;
}

/* The lane of a latency (NET_LANE_HEAP when all lanes are taken). */
uint8_t net_lane_of(net_state_t *s, uint64_t lat);
/* Count one more live flow on the lane, making room for its delivery
 * (net_lane_grow when the ring is full: the one path that allocates). */
herd_status_t net_lane_grow(net_state_t *s, uint8_t lane);
static inline herd_status_t net_lane_reserve(net_state_t *s, uint8_t lane)
{
    if (lane == NET_LANE_HEAP)
        return HERD_OK;
    net_lane_t *l = &s->lanes[lane];
    if (l->users < l->cap) {
        l->users++;
        return HERD_OK;
    }
    return net_lane_grow(s, lane);
}
void net_lane_push(net_state_t *s, uint8_t lane, uint64_t t, uint32_t flow);
/* The earliest event of the heap and the lanes: returns NET_EV_NONE,
 * NET_EV_HEAP or a lane index, for net_next_pop. */
int net_next_event(net_state_t *s, net_ev_t *out);
void net_next_pop(net_state_t *s, int src);
void net_lanes_free(net_state_t *s);

/* net_share.c */
/* Returns 1 when the connection is alone on its path: its rate is set
 * and it can be scheduled at once; else it is scheduled by the settle. */
int net_share_join(net_state_t *s, uint32_t c);
void net_share_leave(net_state_t *s, uint32_t c);
void net_share_settle(net_state_t *s);
/* Link li's capacity becomes cap from s->now; its connections get their
 * new shares when rates settle. */
void net_share_set_cap(net_state_t *s, uint32_t li, double cap);
/* Token buckets: the bytes of a flow starting at t on connection c that
 * its path's buckets pass at once (at most `bytes`), taken from them. */
uint64_t net_burst_take(net_state_t *s, uint32_t c, uint64_t t, uint64_t bytes);
/* Schedule the head of connection c to finish at t. */
void net_conn_schedule(net_state_t *s, uint32_t c, uint64_t t);

#endif
