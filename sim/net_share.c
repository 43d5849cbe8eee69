/* sim/net_share.c - max-min fair sharing of links among connections.
 *
 * A connection joins the links of its path when its queue gets bytes to
 * move and leaves them when the queue runs dry. Each join or leave marks
 * the links dirty; the rates are settled later, once per virtual instant,
 * by progressive filling over the connected component of each dirty link
 * (connections and links reachable through shared links). Connections
 * outside those components keep their rates and completion times, so an
 * uncontended flow finishes exactly at start + ceil(bytes / bandwidth).
 * Rates that come out unchanged leave the schedule alone for the same
 * reason.
 *
 * Token buckets (herd_link_t.burst): a link with one passes up to its
 * tokens at once when a flow starts, and refills at its capacity while
 * idle (no active connection), up to the bucket's size. A busy link is
 * taken to be saturated and refills nothing; links without a bucket do
 * not hold a burst back. */
#include <assert.h>
#include <math.h>

#include "sim/net_impl.h"

static void mark_dirty(net_state_t *s, uint32_t l)
{
    if (s->ndirty == 0)
        s->t_dirty = s->now;
    if (!s->links[l].dirty) {
        s->links[l].dirty = 1;
        s->dirty[s->ndirty++] = l;
    }
}

/* A connection alone on every link of its path, none of them waiting
 * to be settled, has the path's smallest capacity as its max-min share,
 * known without a settle; when it leaves, nobody else's share changes.
 * Most connections of a collective are alone (one flow per NIC and port
 * at a time), so most joins and leaves skip the component search. */
int net_share_join(net_state_t *s, uint32_t ci)
{
    net_conn_t *c = &s->conns[ci];
    assert(!c->in_links);
    int solo = 1;
    double cap = INFINITY;
    for (uint32_t k = 0; k < c->nlinks; k++) {
        net_link_t *l = &s->links[c->link[k]];
        assert(l->n < l->conns_cap);
        solo &= l->n == 0 && !l->dirty;
        if (l->cap < cap)
            cap = l->cap;
        c->pos[k] = l->n;
        l->conns[l->n++] = ci;
    }
    if (!solo)
        for (uint32_t k = 0; k < c->nlinks; k++)
            if (!s->links[c->link[k]].dirty)
                mark_dirty(s, c->link[k]);
    c->in_links = 1;
    c->rate = solo ? (cap < 1.0 ? 1.0 : cap) /* as waterfill() */ : 0;
    return solo;
}

static int leaves_alone(const net_state_t *s, const net_conn_t *c)
{
    for (uint32_t k = 0; k < c->nlinks; k++) {
        const net_link_t *l = &s->links[c->link[k]];
        if (l->n != 1 || l->dirty)
            return 0;
    }
    return 1;
}

/* Links left idle at the current instant start refilling now. */
static void burst_idle(net_state_t *s, const net_conn_t *c)
{
    for (uint32_t k = 0; s->bursts && k < c->nlinks; k++) {
        net_link_t *l = &s->links[c->link[k]];
        if (l->burst > 0 && l->n == 0)
            l->t_idle = s->now;
    }
}

uint64_t net_burst_take(net_state_t *s, uint32_t ci, uint64_t t, uint64_t bytes)
{
    const net_conn_t *c = &s->conns[ci];
    double take = (double)bytes;
    int any = 0;
    for (uint32_t k = 0; k < c->nlinks; k++) {
        net_link_t *l = &s->links[c->link[k]];
        if (l->burst <= 0)
            continue;
        if (l->n == 0) { /* idle since t_idle: top up */
            l->tokens += l->cap * (double)(t - l->t_idle) * 1e-9;
            if (l->tokens > l->burst)
                l->tokens = l->burst;
            l->t_idle = t;
        }
        if (l->tokens < take)
            take = l->tokens;
        any = 1;
    }
    uint64_t got = any ? (uint64_t)floor(take) : 0;
    for (uint32_t k = 0; got && k < c->nlinks; k++) {
        net_link_t *l = &s->links[c->link[k]];
        if (l->burst > 0)
            l->tokens -= (double)got;
    }
    return got;
}

void net_share_leave(net_state_t *s, uint32_t ci)
{
    net_conn_t *c = &s->conns[ci];
    assert(c->in_links);
    c->in_links = 0;
    c->rate = 0;
    if (leaves_alone(s, c)) {
        for (uint32_t k = 0; k < c->nlinks; k++)
            s->links[c->link[k]].n = 0;
        burst_idle(s, c);
        return;
    }
    for (uint32_t k = 0; k < c->nlinks; k++) {
        uint32_t li = c->link[k];
        net_link_t *l = &s->links[li];
        uint32_t moved = l->conns[--l->n];
        uint32_t at = c->pos[k];
        if (moved != ci) { /* the last one fills the hole */
            l->conns[at] = moved;
            net_conn_t *m = &s->conns[moved];
            for (uint32_t j = 0; j < m->nlinks; j++)
                if (m->link[j] == li)
                    m->pos[j] = at;
        }
        if (!l->dirty)
            mark_dirty(s, li);
    }
    burst_idle(s, c);
}

void net_conn_schedule(net_state_t *s, uint32_t ci, uint64_t t)
{
    net_conn_t *c = &s->conns[ci];
    c->ver = (c->ver + 1) & NET_VER_MASK;
    /* the cached next event may be this connection's entry, stale now */
    if (s->next_ok && s->next_src == NET_EV_HEAP && s->next_ev.id == ci)
        s->next_ok = 0;
    c->t_done = t;
    net_heap_push(s, t, ci, c->ver);
}

/* Collect the component reachable from link `start` into comp_links /
 * comp_conns (breadth first, so the order is deterministic). */
static void collect(net_state_t *s, uint32_t start)
{
    s->ncomp_links = 0;
    s->ncomp_conns = 0;
    s->links[start].stamp = s->epoch;
    s->comp_links[s->ncomp_links++] = start;
    for (uint32_t i = 0; i < s->ncomp_links; i++) {
        net_link_t *l = &s->links[s->comp_links[i]];
        for (uint32_t j = 0; j < l->n; j++) {
            net_conn_t *c = &s->conns[l->conns[j]];
            if (c->stamp == s->epoch)
                continue;
            c->stamp = s->epoch;
            c->frozen = 0;
            s->comp_conns[s->ncomp_conns++] = l->conns[j];
            for (uint32_t k = 0; k < c->nlinks; k++) {
                net_link_t *m = &s->links[c->link[k]];
                if (m->stamp != s->epoch) {
                    m->stamp = s->epoch;
                    s->comp_links[s->ncomp_links++] = c->link[k];
                }
            }
        }
    }
}

/* The link with the smallest fair share among unfrozen connections. */
static uint32_t bottleneck(const net_state_t *s, double *share)
{
    uint32_t best = NET_NONE;
    double bs = INFINITY;
    for (uint32_t i = 0; i < s->ncomp_links; i++) {
        const net_link_t *l = &s->links[s->comp_links[i]];
        if (l->nleft == 0)
            continue;
        double sh = l->left / l->nleft;
        if (sh < bs) {
            bs = sh;
            best = s->comp_links[i];
        }
    }
    *share = bs;
    return best;
}

/* Progressive filling: repeatedly freeze the connections of the most
 * constrained link at its fair share and take that share off every link
 * they cross. */
/* A component whose every link carries all its connections (the
 * channels between two ranks, say) has one share: the tightest link's
 * capacity over their number, what the filling below would find. */
static int uniform(net_state_t *s)
{
    double cap = INFINITY;
    for (uint32_t i = 0; i < s->ncomp_links; i++) {
        const net_link_t *l = &s->links[s->comp_links[i]];
        if (l->n != s->ncomp_conns)
            return 0;
        if (l->cap < cap)
            cap = l->cap;
    }
    double share = cap / s->ncomp_conns;
    if (share < 1.0)
        share = 1.0;
    for (uint32_t i = 0; i < s->ncomp_conns; i++)
        s->conns[s->comp_conns[i]].newrate = share;
    return 1;
}

static void waterfill(net_state_t *s)
{
    if (uniform(s))
        return;
    for (uint32_t i = 0; i < s->ncomp_links; i++) {
        net_link_t *l = &s->links[s->comp_links[i]];
        l->left = l->cap;
        l->nleft = l->n;
    }
    uint32_t todo = s->ncomp_conns;
    while (todo > 0) {
        double share;
        uint32_t bi = bottleneck(s, &share);
        assert(bi != NET_NONE);
        if (share < 1.0) /* rounding noise only: keep rates positive */
            share = 1.0;
        net_link_t *b = &s->links[bi];
        for (uint32_t j = 0; j < b->n; j++) {
            net_conn_t *c = &s->conns[b->conns[j]];
            if (c->frozen)
                continue;
            c->frozen = 1;
            c->newrate = share;
            todo--;
            for (uint32_t k = 0; k < c->nlinks; k++) {
                net_link_t *m = &s->links[c->link[k]];
                m->left -= share;
                m->nleft--;
            }
        }
    }
}

/* Give each connection of the component its new rate; reschedule only
 * those whose rate changed. */
static void apply(net_state_t *s, uint64_t now)
{
    /* the connections of a component mostly move equal chunks at equal
     * shares: one division serves them all */
    double last_rem = -1, last_r = 0;
    uint64_t last_tx = 0;
    for (uint32_t i = 0; i < s->ncomp_conns; i++) {
        uint32_t ci = s->comp_conns[i];
        net_conn_t *c = &s->conns[ci];
        double r = c->newrate;
        if (c->t_done <= now) { /* finishing at this very instant */
            c->rate = r;
            continue;
        }
        if (fabs(r - c->rate) <= 1e-12 * r)
            continue; /* the same share, up to rounding: keep the schedule */
        if (c->rate > 0) {
            c->rem -= c->rate * (double)(now - c->t_upd) * 1e-9;
            if (c->rem < 0)
                c->rem = 0;
        }
        c->t_upd = now;
        c->rate = r;
        if (c->rem != last_rem || r != last_r) {
            last_rem = c->rem;
            last_r = r;
            last_tx = net_tx_ns(c->rem, r);
        }
        net_conn_schedule(s, ci, now + last_tx);
    }
}

void net_share_set_cap(net_state_t *s, uint32_t li, double cap)
{
    net_link_t *l = &s->links[li];
    l->cap = cap;
    if (l->n > 0 && !l->dirty) /* a lone connection's rate was its cap */
        mark_dirty(s, li);
}

void net_share_settle(net_state_t *s)
{
    uint64_t now = s->t_dirty;
    if (++s->epoch == 0) { /* wrapped: old stamps could look current */
        for (uint32_t i = 0; i < s->nlinks; i++)
            s->links[i].stamp = 0;
        for (uint32_t i = 0; i < s->nconns; i++)
            s->conns[i].stamp = 0;
        s->epoch = 1;
    }
    for (uint32_t i = 0; i < s->ndirty; i++) {
        uint32_t li = s->dirty[i];
        s->links[li].dirty = 0;
        if (s->links[li].stamp == s->epoch || s->links[li].n == 0)
            continue;
        collect(s, li);
        waterfill(s);
        apply(s, now);
        s->stats.recomputes++;
    }
    s->ndirty = 0;
}
