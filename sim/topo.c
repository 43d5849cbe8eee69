/* sim/topo.c - the cluster's topology: which links exist, their
 * capacities (with per-rank and per-pair overrides), and the path and
 * latency between two ranks.
 *
 * Link layout (indices into net_state_t.links):
 *   [0, W)              intra-node egress port of rank r
 *   [W, 2W)             intra-node ingress port of rank r
 *   nic_base + [0, N)   NIC egress (N = nodes * NICs per node)
 *   nic_base + [N, 2N)  NIC ingress
 *   sw_base + [0, S)    fat-tree leaf uplinks / rail-switch spine uplinks
 *   sw_base + [S, 2S)   the matching downlinks
 *   pair_base + ...     one link per direction of a slowed rank pair
 * See docs/network-model.md for the model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/net_impl.h"

static int bad_num(double x, double min)
{
    return !(isfinite(x) && x >= min);
}

/* Latencies up to a million seconds keep every time sum far from the
 * 64-bit ns limit. */
static int bad_lat(double x)
{
    return bad_num(x, 0) || x > 1e6;
}

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            if (errlen)                                                        \
                snprintf(err, errlen, __VA_ARGS__);                            \
            return HERD_ERR_INVALID_ARG;                                       \
        }                                                                      \
    } while (0)

static herd_status_t check_cluster(const herd_cluster_t *c, char *err,
                                   size_t errlen)
{
    CHECK(c->nodes >= 1, "cluster.nodes must be >= 1 (got %d)", c->nodes);
    CHECK(c->gpus_per_node >= 1, "cluster.gpus_per_node must be >= 1 (got %d)",
          c->gpus_per_node);
    CHECK((int64_t)c->nodes * c->gpus_per_node <= INT32_MAX / 4,
          "cluster: %d nodes x %d GPUs is too many", c->nodes,
          c->gpus_per_node);
    CHECK(!bad_num(c->intra.bandwidth, 0) && c->intra.bandwidth > 0,
          "cluster.intra.bandwidth must be > 0 bytes/s (got %g)",
          c->intra.bandwidth);
    CHECK(!bad_num(c->inter.bandwidth, 0) && c->inter.bandwidth > 0,
          "cluster.inter.bandwidth must be > 0 bytes/s (got %g)",
          c->inter.bandwidth);
    CHECK(!bad_lat(c->intra.latency),
          "cluster.intra.latency must be in 0..1e6 s (got %g)",
          c->intra.latency);
    CHECK(!bad_lat(c->inter.latency),
          "cluster.inter.latency must be in 0..1e6 s (got %g)",
          c->inter.latency);
    CHECK(c->inter.burst <= (uint64_t)1e12,
          "cluster.inter.burst must be at most 1e12 bytes (got %llu)",
          (unsigned long long)c->inter.burst);
    CHECK(c->intra.burst == 0,
          "cluster.intra.burst: token buckets are modelled on the "
          "inter-node (NIC) links only (got %llu bytes)",
          (unsigned long long)c->intra.burst);
    CHECK(!bad_lat(c->spine_latency),
          "cluster.spine_latency must be in 0..1e6 s (got %g)",
          c->spine_latency);
    CHECK(c->nics_per_node >= 0 && c->nics_per_node <= 1024,
          "cluster.nics_per_node must be in 0..1024 (got %d)",
          c->nics_per_node);
    CHECK(c->topo == HERD_TOPO_NONBLOCKING || c->topo == HERD_TOPO_FATTREE ||
              c->topo == HERD_TOPO_RAIL,
          "cluster.topo: unknown topology %d", (int)c->topo);
    if (c->topo == HERD_TOPO_NONBLOCKING)
        return HERD_OK;
    CHECK(!bad_num(c->oversub, 1), "cluster.oversub must be >= 1 (got %g)",
          c->oversub);
    CHECK(c->topo != HERD_TOPO_FATTREE || c->nodes_per_leaf >= 1,
          "cluster.nodes_per_leaf must be >= 1 (got %d)", c->nodes_per_leaf);
    return HERD_OK;
}

static herd_status_t check_overrides(const herd_sim_opts_t *o, int w, char *err,
                                     size_t errlen)
{
    CHECK(o->nranks_overrides == 0 || o->ranks,
          "rank overrides: count %zu without an array", o->nranks_overrides);
    CHECK(o->nlink_overrides == 0 || o->links,
          "link overrides: count %zu without an array", o->nlink_overrides);
    for (size_t i = 0; i < o->nranks_overrides; i++) {
        const herd_rank_override_t *r = &o->ranks[i];
        CHECK(r->rank >= 0 && r->rank < w,
              "ranks[%zu].rank: %d is outside 0..%d", i, r->rank, w - 1);
        CHECK(!bad_num(r->nic_factor, 0),
              "ranks[%zu].nic_factor must be >= 0 (got %g)", i, r->nic_factor);
        CHECK(!bad_num(r->intra_factor, 0),
              "ranks[%zu].intra_factor must be >= 0 (got %g)", i,
              r->intra_factor);
    }
    for (size_t i = 0; i < o->nlink_overrides; i++) {
        const herd_link_override_t *l = &o->links[i];
        CHECK(l->a >= 0 && l->a < w, "links[%zu].a: %d is outside 0..%d", i,
              l->a, w - 1);
        CHECK(l->b >= 0 && l->b < w, "links[%zu].b: %d is outside 0..%d", i,
              l->b, w - 1);
        CHECK(l->a != l->b, "links[%zu]: a and b are both rank %d", i, l->a);
        CHECK(!bad_num(l->bw_factor, 0),
              "links[%zu].bw_factor must be >= 0 (got %g)", i, l->bw_factor);
        CHECK(!bad_lat(l->extra_latency),
              "links[%zu].extra_latency must be in 0..1e6 s (got %g)", i,
              l->extra_latency);
    }
    return HERD_OK;
}

herd_status_t net_topo_check(const herd_sim_opts_t *o, int world, char *err,
                             size_t errlen)
{
    CHECK(o, "no simulator options");
    herd_status_t st = check_cluster(&o->cluster, err, errlen);
    if (st != HERD_OK)
        return st;
    int all = o->cluster.nodes * o->cluster.gpus_per_node;
    int w = world ? world : (o->world_size ? o->world_size : all);
    CHECK(w >= 1 && w <= all,
          "world_size %d must be in 1..%d (nodes %d x gpus_per_node %d)", w,
          all, o->cluster.nodes, o->cluster.gpus_per_node);
    return check_overrides(o, w, err, errlen);
}

herd_status_t sim_net_check_opts(const herd_sim_opts_t *opts, int world_size,
                                 char *err, size_t errlen)
{
    if (errlen)
        err[0] = '\0';
    return net_topo_check(opts, world_size, err, errlen);
}

static inline double factor(double f)
{
    return f == 0 ? 1.0 : f;
}

/* NIC (global index) of a rank. */
uint32_t net_topo_nic(const net_state_t *s, int r)
{
    int node = r / s->gpn, local = r % s->gpn;
    int k =
        s->cl.nics_per_node ? (int)((int64_t)local * s->nics / s->gpn) : local;
    return (uint32_t)(node * s->nics + k);
}

static void add_link(net_path_t *p, uint32_t l)
{
    p->link[p->n++] = l;
}

/* The path without per-pair overrides; returns its latency in seconds. */
static double base_path(const net_state_t *s, int src, int dst, net_path_t *p)
{
    int ns = src / s->gpn, nd = dst / s->gpn;
    uint32_t w = (uint32_t)s->world;
    if (ns == nd) {
        add_link(p, (uint32_t)src);
        add_link(p, w + (uint32_t)dst);
        return s->cl.intra.latency;
    }
    uint32_t a = net_topo_nic(s, src), b = net_topo_nic(s, dst);
    uint32_t nn = (uint32_t)(s->cl.nodes * s->nics);
    add_link(p, s->nic_base + a);
    add_link(p, s->nic_base + nn + b);
    double lat = s->cl.inter.latency;
    uint32_t up = 0, down = 0;
    if (s->cl.topo == HERD_TOPO_FATTREE) {
        up = (uint32_t)(ns / s->cl.nodes_per_leaf);
        down = (uint32_t)(nd / s->cl.nodes_per_leaf);
    } else if (s->cl.topo == HERD_TOPO_RAIL) {
        up = a % (uint32_t)s->nics;
        down = b % (uint32_t)s->nics;
    }
    if (up != down) {
        add_link(p, s->sw_base + up);
        add_link(p, s->sw_base + s->nsw + down);
        lat += s->cl.spine_latency;
    }
    return lat;
}

static const net_pair_t *find_pair(const net_state_t *s, int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    uint32_t l = 0, r = s->npairs;
    while (l < r) {
        uint32_t m = (l + r) / 2;
        const net_pair_t *p = &s->pairs[m];
        if (p->a < lo || (p->a == lo && p->b < hi))
            l = m + 1;
        else
            r = m;
    }
    if (l < s->npairs && s->pairs[l].a == lo && s->pairs[l].b == hi)
        return &s->pairs[l];
    return NULL;
}

static double path_bw(const net_state_t *s, const net_path_t *p)
{
    double bw = INFINITY;
    for (uint32_t k = 0; k < p->n; k++)
        if (s->links[p->link[k]].cap < bw)
            bw = s->links[p->link[k]].cap;
    return bw;
}

void net_topo_path(const net_state_t *s, int src, int dst, net_path_t *out)
{
    out->n = 0;
    out->lat = 0;
    out->bw = INFINITY;
    if (src == dst)
        return;
    double lat = base_path(s, src, dst, out);
    const net_pair_t *pr = find_pair(s, src, dst);
    if (pr) {
        lat += pr->extra_lat;
        uint32_t l = src < dst ? pr->link_ab : pr->link_ba;
        if (l != NET_NONE)
            add_link(out, l);
    }
    out->lat = (uint64_t)llround(lat * 1e9);
    out->bw = path_bw(s, out);
}

static int pair_cmp(const void *x, const void *y)
{
    const net_pair_t *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* Sort and merge the link overrides: factors multiply, latencies add. */
static herd_status_t build_pairs(net_state_t *s, const herd_sim_opts_t *o)
{
    if (o->nlink_overrides == 0)
        return HERD_OK;
    s->pairs = calloc(o->nlink_overrides, sizeof(*s->pairs));
    if (!s->pairs)
        return HERD_ERR_NO_MEMORY;
    for (size_t i = 0; i < o->nlink_overrides; i++) {
        const herd_link_override_t *l = &o->links[i];
        net_pair_t *p = &s->pairs[i];
        p->a = l->a < l->b ? l->a : l->b;
        p->b = l->a < l->b ? l->b : l->a;
        p->bw_factor = factor(l->bw_factor);
        p->extra_lat = l->extra_latency;
    }
    qsort(s->pairs, o->nlink_overrides, sizeof(*s->pairs), pair_cmp);
    uint32_t n = 0;
    for (size_t i = 0; i < o->nlink_overrides; i++) {
        net_pair_t *p = &s->pairs[i];
        if (n > 0 && pair_cmp(&s->pairs[n - 1], p) == 0) {
            s->pairs[n - 1].bw_factor *= p->bw_factor;
            s->pairs[n - 1].extra_lat += p->extra_lat;
        } else {
            s->pairs[n++] = *p;
        }
    }
    s->npairs = n;
    return HERD_OK;
}

static void set_caps(net_state_t *s, const herd_sim_opts_t *o)
{
    uint32_t w = (uint32_t)s->world;
    uint32_t nn = (uint32_t)(s->cl.nodes * s->nics);
    for (uint32_t r = 0; r < 2 * w; r++)
        s->links[r].cap = s->cl.intra.bandwidth;
    for (uint32_t i = 0; i < 2 * nn; i++) {
        net_link_t *l = &s->links[s->nic_base + i];
        l->cap = s->cl.inter.bandwidth;
        l->burst = l->tokens = (double)s->cl.inter.burst; /* full at 0 */
        s->bursts |= s->cl.inter.burst > 0;
    }
    double sw =
        s->cl.inter.bandwidth / (s->cl.oversub >= 1 ? s->cl.oversub : 1);
    sw *= s->cl.topo == HERD_TOPO_FATTREE
              ? (double)s->cl.nodes_per_leaf * s->nics
              : (double)s->cl.nodes;
    for (uint32_t i = 0; i < 2 * s->nsw; i++)
        s->links[s->sw_base + i].cap = sw;
    for (size_t i = 0; i < o->nranks_overrides; i++) {
        const herd_rank_override_t *r = &o->ranks[i];
        s->links[r->rank].cap *= factor(r->intra_factor);
        s->links[w + (uint32_t)r->rank].cap *= factor(r->intra_factor);
        uint32_t nic = net_topo_nic(s, r->rank);
        s->links[s->nic_base + nic].cap *= factor(r->nic_factor);
        s->links[s->nic_base + nn + nic].cap *= factor(r->nic_factor);
    }
}

/* A slowed pair gets a link per direction with the pair's uncontended
 * bandwidth times its factor, shared by all of the pair's channels. */
static void set_pair_links(net_state_t *s)
{
    uint32_t next = s->pair_base;
    for (uint32_t i = 0; i < s->npairs; i++) {
        net_pair_t *p = &s->pairs[i];
        p->link_ab = p->link_ba = NET_NONE;
        if (p->bw_factor == 1.0)
            continue;
        net_path_t ab = {.n = 0}, ba = {.n = 0};
        base_path(s, p->a, p->b, &ab);
        base_path(s, p->b, p->a, &ba);
        p->link_ab = next++;
        p->link_ba = next++;
        s->links[p->link_ab].cap = path_bw(s, &ab) * p->bw_factor;
        s->links[p->link_ba].cap = path_bw(s, &ba) * p->bw_factor;
    }
    s->nlinks = next;
}

herd_status_t net_topo_build(net_state_t *s, const herd_sim_opts_t *o)
{
    s->cl = o->cluster;
    s->gpn = s->cl.gpus_per_node;
    s->nics = s->cl.nics_per_node ? s->cl.nics_per_node : s->gpn;
    uint32_t nn = (uint32_t)(s->cl.nodes * s->nics);
    s->nic_base = 2 * (uint32_t)s->world;
    s->sw_base = s->nic_base + 2 * nn;
    s->nsw = 0;
    if (s->cl.topo == HERD_TOPO_FATTREE)
        s->nsw = (uint32_t)((s->cl.nodes + s->cl.nodes_per_leaf - 1) /
                            s->cl.nodes_per_leaf);
    else if (s->cl.topo == HERD_TOPO_RAIL)
        s->nsw = (uint32_t)s->nics;
    s->pair_base = s->sw_base + 2 * s->nsw;
    herd_status_t st = build_pairs(s, o);
    if (st != HERD_OK)
        return st;
    uint32_t most = s->pair_base + 2 * s->npairs;
    s->links = calloc(most, sizeof(*s->links));
    if (!s->links)
        return HERD_ERR_NO_MEMORY;
    s->nlinks = most;
    set_caps(s, o);
    set_pair_links(s);
    return HERD_OK;
}
