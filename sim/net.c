/* sim/net.c - the network model's flows, FIFO connections and event loop.
 *
 * A flow joins the queue of its connection (src, dst, channel). The head
 * of a queue transmits at its connection's max-min rate (net_share.c);
 * when its last byte has left, the next flow becomes head at once, and
 * the finished one is delivered a path latency later. Rate changes are
 * settled once per virtual instant, after every event of that instant
 * has been processed, so pipelined chunks that end together cost one
 * recomputation, not one each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net_impl.h"

uint64_t net_tx_ns(double bytes, double bw)
{
    double x = bytes * 1e9 / bw;
    x -= x * 1e-12; /* noise above an exact integer must not add 1 ns */
    if (!(x > 0))
        return 0;
    if (x >= 0x1p62) /* 146 years: keeps t + tx from wrapping */
        return (uint64_t)1 << 62;
    return (uint64_t)ceil(x);
}

uint64_t sim_net_tx_ns(uint64_t bytes, double bw)
{
    return net_tx_ns((double)bytes, bw);
}

herd_status_t sim_net_create(const herd_sim_opts_t *opts, int world_size,
                             sim_net_done_cb cb, void *cb_arg, sim_net_t **out)
{
    if (!opts || !cb || !out ||
        net_topo_check(opts, world_size, NULL, 0) != HERD_OK)
        return HERD_ERR_INVALID_ARG;
    int all = opts->cluster.nodes * opts->cluster.gpus_per_node;
    sim_net_t *net = calloc(1, sizeof(*net));
    net_state_t *s = calloc(1, sizeof(*s));
    herd_status_t st = HERD_ERR_NO_MEMORY;
    if (!net || !s)
        goto fail;
    net->st = s;
    s->world =
        world_size ? world_size : (opts->world_size ? opts->world_size : all);
    s->cb = cb;
    s->cb_arg = cb_arg;
    s->free_flow = NET_NONE;
    s->last_bk = NET_NONE;
    s->qn_free = NET_NONE;
    s->bk_free = NET_NONE;
    st = net_topo_build(s, opts);
    if (st != HERD_OK)
        goto fail;
    st = HERD_ERR_NO_MEMORY;
    s->hint = malloc((size_t)s->world * NET_HINTS * sizeof(*s->hint));
    if (!s->hint)
        goto fail;
    memset(s->hint, 0xff, (size_t)s->world * NET_HINTS * sizeof(*s->hint));
    s->dirty = malloc(s->nlinks * sizeof(*s->dirty));
    s->comp_links = malloc(s->nlinks * sizeof(*s->comp_links));
    if (!s->dirty || !s->comp_links)
        goto fail;
    if (s->cl.compute_comm_slowdown > 0 &&
        !(s->busy = calloc(s->nlinks, sizeof(*s->busy))))
        goto fail;
    *out = net;
    return HERD_OK;
fail:
    if (net)
        sim_net_destroy(net);
    else
        free(s);
    return st;
}

void sim_net_destroy(sim_net_t *net)
{
    if (!net)
        return;
    net_state_t *s = net->st;
    if (s) {
        for (uint32_t i = 0; s->links && i < s->nlinks; i++)
            free(s->links[i].conns);
        free(s->links);
        free(s->pairs);
        free(s->busy);
        free(s->conns);
        free(s->tab);
        free(s->hint);
        free(s->flows);
        net_heap_free(s);
        net_lanes_free(s);
        free(s->dirty);
        free(s->comp_links);
        free(s->comp_conns);
        free(s);
    }
    free(net);
}

static inline uint32_t conn_hash(int src, int dst, int chan)
{
    /* splitmix64's finaliser over the packed key */
    uint64_t h = ((uint64_t)(uint32_t)src << 42) ^
                 ((uint64_t)(uint32_t)dst << 21) ^ (uint64_t)(uint32_t)chan;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(h ^ (h >> 31));
}

static uint32_t *tab_slot(net_state_t *s, int src, int dst, int chan)
{
    uint32_t mask = s->tab_cap - 1;
    uint32_t i = conn_hash(src, dst, chan) & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t c = s->tab[i];
        if (c == NET_NONE)
            return &s->tab[i];
        const net_conn_t *k = &s->conns[c];
        if (k->src == src && k->dst == dst && k->chan == chan)
            return &s->tab[i];
    }
}

static herd_status_t tab_grow(net_state_t *s)
{
    uint32_t cap = s->tab_cap ? 2 * s->tab_cap : 256;
    uint32_t *t = malloc((size_t)cap * sizeof(*t));
    if (!t)
        return HERD_ERR_NO_MEMORY;
    memset(t, 0xff, (size_t)cap * sizeof(*t));
    free(s->tab);
    s->tab = t;
    s->tab_cap = cap;
    for (uint32_t c = 0; c < s->nconns; c++) {
        const net_conn_t *k = &s->conns[c];
        *tab_slot(s, k->src, k->dst, k->chan) = c;
    }
    return HERD_OK;
}

/* Room for one more connection in the arrays sized by their count. */
static herd_status_t conns_grow(net_state_t *s)
{
    if (s->nconns < s->conns_cap)
        return HERD_OK;
    uint32_t cap = s->conns_cap ? 2 * s->conns_cap : 64;
    net_conn_t *c = realloc(s->conns, (size_t)cap * sizeof(*c));
    if (!c)
        return HERD_ERR_NO_MEMORY;
    s->conns = c;
    uint32_t *cc = realloc(s->comp_conns, (size_t)cap * sizeof(*cc));
    if (!cc)
        return HERD_ERR_NO_MEMORY;
    s->comp_conns = cc;
    s->conns_cap = cap;
    return HERD_OK;
}

/* Every link of the path gets room to list this connection. */
static herd_status_t links_reserve(net_state_t *s, const net_path_t *p)
{
    for (uint32_t k = 0; k < p->n; k++) {
        net_link_t *l = &s->links[p->link[k]];
        if (l->users < l->conns_cap)
            continue;
        uint32_t cap = l->conns_cap ? 2 * l->conns_cap : 4;
        uint32_t *a = realloc(l->conns, (size_t)cap * sizeof(*a));
        if (!a)
            return HERD_ERR_NO_MEMORY;
        l->conns = a;
        l->conns_cap = cap;
    }
    for (uint32_t k = 0; k < p->n; k++)
        s->links[p->link[k]].users++;
    return HERD_OK;
}

static herd_status_t conn_find(net_state_t *s, int src, int dst, int chan,
                               uint32_t *out);

static herd_status_t conn_get(net_state_t *s, int src, int dst, int chan,
                              uint32_t *out)
{
    uint32_t *hint = &s->hint[(size_t)src * NET_HINTS + (chan % NET_HINTS)];
    if (*hint != NET_NONE) {
        const net_conn_t *k = &s->conns[*hint];
        if (k->dst == dst && k->chan == chan) {
            *out = *hint;
            return HERD_OK;
        }
    }
    herd_status_t st = conn_find(s, src, dst, chan, out);
    if (st == HERD_OK)
        *hint = *out;
    return st;
}

static herd_status_t conn_find(net_state_t *s, int src, int dst, int chan,
                               uint32_t *out)
{
    herd_status_t st;
    if (2 * (uint64_t)(s->nconns + 1) > s->tab_cap &&
        (st = tab_grow(s)) != HERD_OK)
        return st;
    uint32_t *slot = tab_slot(s, src, dst, chan);
    if (*slot != NET_NONE) {
        *out = *slot;
        return HERD_OK;
    }
    net_path_t p;
    net_topo_path(s, src, dst, &p);
    if ((st = conns_grow(s)) != HERD_OK ||
        (st = links_reserve(s, &p)) != HERD_OK)
        return st;
    uint32_t ci = s->nconns++;
    net_conn_t *c = &s->conns[ci];
    *c = (net_conn_t){.src = src,
                      .dst = dst,
                      .chan = chan,
                      .head = NET_NONE,
                      .tail = NET_NONE,
                      .nlinks = (uint8_t)p.n,
                      .lat = p.lat,
                      .t_done = NET_NEVER,
                      .lane = net_lane_of(s, p.lat)};
    memcpy(c->link, p.link, sizeof(p.link));
    *slot = ci;
    *out = ci;
    return HERD_OK;
}

static herd_status_t flow_alloc(net_state_t *s, uint32_t *out)
{
    if (s->free_flow == NET_NONE) {
        uint32_t old = s->flows_cap;
        uint32_t cap = old ? 2 * old : 256;
        if (cap <= old || cap == NET_NONE)
            return HERD_ERR_OVERFLOW;
        net_flow_t *f = realloc(s->flows, (size_t)cap * sizeof(*f));
        if (!f)
            return HERD_ERR_NO_MEMORY;
        s->flows = f;
        s->flows_cap = cap;
        for (uint32_t i = cap; i-- > old;) {
            f[i].next = s->free_flow;
            s->free_flow = i;
        }
    }
    *out = s->free_flow;
    s->free_flow = s->flows[*out].next;
    return HERD_OK;
}

static int bad_rank(const net_state_t *s, int r)
{
    return r < 0 || r >= s->world;
}

/* The head of connection c changed at time t (a new head, or none). */
static void start_head(net_state_t *s, uint32_t ci, uint64_t t)
{
    net_conn_t *c = &s->conns[ci];
    if (c->head == NET_NONE) {
        c->t_done = NET_NEVER;
        if (c->in_links)
            net_share_leave(s, ci);
        return;
    }
    uint64_t bytes = s->flows[c->head].bytes;
    if (s->bursts && bytes > 0) /* what token buckets pass at once */
        bytes -= net_burst_take(s, ci, t, bytes);
    if (bytes == 0 || c->nlinks == 0) {
        net_conn_schedule(s, ci, t); /* no bandwidth to share */
        return;
    }
    c->rem = (double)bytes;
    c->t_upd = t;
    c->t_done = NET_NEVER;
    if (!c->in_links) {
        if (net_share_join(s, ci)) /* else scheduled when rates settle */
            net_conn_schedule(s, ci, t + net_tx_ns(c->rem, c->rate));
    } else if (c->rate > 0)
        net_conn_schedule(s, ci, t + net_tx_ns(c->rem, c->rate));
}

/* Settle what an earlier instant left pending, and refuse a start
 * before net events the engine has not processed yet. */
static herd_status_t catch_up(net_state_t *s, uint64_t now)
{
    if (now < s->now)
        return HERD_ERR_INVALID_ARG;
    if (s->ndirty && now > s->t_dirty)
        net_share_settle(s);
    /* Nothing pending is earlier than the last event processed (or flow
     * started): a start at that same instant needs no look at the
     * queue, which is every start made from a callback. */
    if (now == s->now)
        return HERD_OK;
    net_ev_t e;
    if (net_next_event(s, &e) != NET_EV_NONE && e.t < now)
        return HERD_ERR_INVALID_ARG;
    return HERD_OK;
}

static herd_status_t enqueue(net_state_t *s, uint64_t now, uint32_t ci,
                             uint64_t bytes, void *ctx)
{
    uint32_t fi;
    herd_status_t st = flow_alloc(s, &fi);
    if (st != HERD_OK)
        return st;
    st = net_heap_reserve(s, (uint64_t)s->flows_cap + s->conns_cap);
    if (st == HERD_OK)
        st = net_lane_reserve(s, s->conns[ci].lane);
    if (st != HERD_OK) { /* give the flow back */
        s->flows[fi].next = s->free_flow;
        s->free_flow = fi;
        return st;
    }
    s->now = now;
    s->flows[fi] = (net_flow_t){.bytes = bytes, .ctx = ctx, .next = NET_NONE};
    net_conn_t *c = &s->conns[ci];
    if (c->tail != NET_NONE)
        s->flows[c->tail].next = fi;
    c->tail = fi;
    s->stats.flows++;
    if (++s->live_flows > s->stats.peak_active)
        s->stats.peak_active = s->live_flows;
    if (c->head == NET_NONE) {
        c->head = fi;
        start_head(s, ci, now);
    }
    return HERD_OK;
}

herd_status_t sim_net_flow_start(sim_net_t *net, uint64_t now, int src, int dst,
                                 int channel, uint64_t bytes, void *ctx)
{
    net_state_t *s = net->st;
    if (bad_rank(s, src) || bad_rank(s, dst) || channel < 0)
        return HERD_ERR_INVALID_ARG;
    uint32_t ci;
    herd_status_t st = catch_up(s, now);
    if (st == HERD_OK)
        st = conn_get(s, src, dst, channel, &ci);
    if (st == HERD_OK)
        st = enqueue(s, now, ci, bytes, ctx);
    return st;
}

herd_status_t sim_net_conn(sim_net_t *net, int src, int dst, int channel,
                           uint32_t *out)
{
    net_state_t *s = net->st;
    if (bad_rank(s, src) || bad_rank(s, dst) || channel < 0)
        return HERD_ERR_INVALID_ARG;
    uint32_t ci;
    herd_status_t st = conn_get(s, src, dst, channel, &ci);
    if (st == HERD_OK)
        *out = ci;
    return st;
}

herd_status_t sim_net_flow_start_on(sim_net_t *net, uint64_t now, uint32_t conn,
                                    uint64_t bytes, void *ctx)
{
    net_state_t *s = net->st;
    if (conn >= s->nconns)
        return HERD_ERR_INVALID_ARG;
    herd_status_t st = catch_up(s, now);
    if (st == HERD_OK)
        st = enqueue(s, now, conn, bytes, ctx);
    return st;
}

/* The head of connection ci has sent its last byte at t. */
static void on_sent(net_state_t *s, uint32_t ci, uint64_t t)
{
    net_conn_t *c = &s->conns[ci];
    uint32_t fi = c->head;
    c->ver = (c->ver + 1) & NET_VER_MASK;
    s->next_ok = 0; /* its queued entry, if any, is stale now */
    c->head = s->flows[fi].next;
    if (c->head == NET_NONE)
        c->tail = NET_NONE;
    net_lane_push(s, c->lane, t + c->lat, fi);
    start_head(s, ci, t);
    s->cb(s->flows[fi].ctx, t, 0, s->cb_arg);
}

static void on_delivered(net_state_t *s, uint32_t fi, uint64_t t)
{
    void *ctx = s->flows[fi].ctx;
    s->flows[fi].next = s->free_flow;
    s->free_flow = fi;
    s->live_flows--;
    s->cb(ctx, t, 1, s->cb_arg);
}

void sim_net_advance(sim_net_t *net, uint64_t t)
{
    net_state_t *s = net->st;
    for (;;) {
        net_ev_t e;
        int src = net_next_event(s, &e);
        if (s->ndirty && (src == NET_EV_NONE || e.t > s->t_dirty)) {
            net_share_settle(s);
            continue;
        }
        if (src == NET_EV_NONE || e.t > t)
            break;
        net_next_pop(s, src);
        s->now = e.t;
        if (e.ver == NET_EV_DELIVERY)
            on_delivered(s, e.id, e.t);
        else
            on_sent(s, e.id, e.t);
    }
}

/* One more (busy) or one fewer computing rank behind link li. */
static void busy_link(net_state_t *s, uint32_t li, int busy, double k)
{
    net_busy_t *b = &s->busy[li];
    if (busy && b->n++ == 0) {
        b->cap_full = s->links[li].cap;
        net_share_set_cap(s, li, b->cap_full / k);
    } else if (!busy && b->n > 0 && --b->n == 0)
        net_share_set_cap(s, li, b->cap_full);
}

herd_status_t sim_net_rank_busy(sim_net_t *net, uint64_t now, int rank,
                                int busy)
{
    net_state_t *s = net->st;
    double k = 1 + s->cl.compute_comm_slowdown;
    if (!(k > 1) || !s->busy)
        return HERD_OK;
    if (bad_rank(s, rank))
        return HERD_ERR_INVALID_ARG;
    herd_status_t st = catch_up(s, now);
    if (st != HERD_OK)
        return st;
    s->now = now;
    uint32_t w = (uint32_t)s->world, r = (uint32_t)rank;
    uint32_t nn = (uint32_t)(s->cl.nodes * s->nics),
             nic = net_topo_nic(s, rank);
    busy_link(s, r, busy, k);
    busy_link(s, w + r, busy, k);
    busy_link(s, s->nic_base + nic, busy, k);
    busy_link(s, s->nic_base + nn + nic, busy, k);
    return HERD_OK;
}

uint64_t sim_net_next_time(const sim_net_t *net)
{
    net_state_t *s = net->st;
    if (s->ndirty)
        net_share_settle(s);
    net_ev_t e;
    return net_next_event(s, &e) == NET_EV_NONE ? NET_NEVER : e.t;
}

uint64_t sim_net_path_latency(const sim_net_t *net, int src, int dst)
{
    if (bad_rank(net->st, src) || bad_rank(net->st, dst))
        return 0;
    net_path_t p;
    net_topo_path(net->st, src, dst, &p);
    return p.lat;
}

double sim_net_path_bandwidth(const sim_net_t *net, int src, int dst)
{
    if (bad_rank(net->st, src) || bad_rank(net->st, dst))
        return 0;
    net_path_t p;
    net_topo_path(net->st, src, dst, &p);
    return p.bw;
}

void sim_net_stats(const sim_net_t *net, sim_net_stats_t *out)
{
    *out = net->st->stats;
}
