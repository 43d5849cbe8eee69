/* sim/net_lane.c - delivery lanes: one FIFO per distinct path latency.
 *
 * Sends end in time order, so deliveries of flows whose paths have the
 * same latency are due in the same order: a ring buffer per latency
 * keeps them sorted by (time, sequence) at O(1) per delivery, and the
 * heap only holds send completions. The earliest event overall is the
 * smallest of the heap top and the lane heads (a handful). */
#include <stdlib.h>
#include <string.h>

#include "sim/net_impl.h"

uint8_t net_lane_of(net_state_t *s, uint64_t lat)
{
    for (uint32_t i = 0; i < s->nlanes; i++)
        if (s->lanes[i].lat == lat)
            return (uint8_t)i;
    if (s->nlanes == NET_LANES)
        return NET_LANE_HEAP;
    s->lanes[s->nlanes].lat = lat;
    return (uint8_t)s->nlanes++;
}

herd_status_t net_lane_grow(net_state_t *s, uint8_t lane)
{
    net_lane_t *l = &s->lanes[lane];
    uint32_t cap = l->cap ? 2 * l->cap : 256;
    if (cap <= l->cap)
        return HERD_ERR_OVERFLOW;
    net_dev_t *q = malloc((size_t)cap * sizeof(*q));
    if (!q)
        return HERD_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < l->n; i++) /* unwrap into the new buffer */
        q[i] = l->q[(l->head + i) & (l->cap - 1)];
    free(l->q);
    l->q = q;
    l->cap = cap;
    l->head = 0;
    l->users++;
    return HERD_OK;
}

void net_lane_push(net_state_t *s, uint8_t lane, uint64_t t, uint32_t flow)
{
    if (lane == NET_LANE_HEAP) {
        net_heap_push(s, t, flow, NET_EV_DELIVERY);
        return;
    }
    net_next_keep(s, t);
    net_lane_t *l = &s->lanes[lane];
    /* a new head comes first only if earlier: its sequence is the newest */
    if (l->n == 0 && s->lane_min_ok &&
        (s->lane_min == NET_EV_NONE ||
         t < s->lanes[s->lane_min].q[s->lanes[s->lane_min].head].t))
        s->lane_min = lane;
    /* net_lane_reserve made room: users >= queued deliveries */
    net_dev_t *d = &l->q[(l->head + l->n++) & (l->cap - 1)];
    d->t = t;
    d->seq = s->seq++;
    d->flow = flow;
}

/* The lane with the earliest head, by (time, sequence). */
static int lane_min(net_state_t *s)
{
    if (s->lane_min_ok)
        return s->lane_min;
    int best = NET_EV_NONE;
    for (uint32_t i = 0; i < s->nlanes; i++) {
        const net_lane_t *l = &s->lanes[i];
        if (l->n == 0)
            continue;
        const net_dev_t *d = &l->q[l->head];
        const net_lane_t *b = best == NET_EV_NONE ? NULL : &s->lanes[best];
        if (!b || d->t < b->q[b->head].t ||
            (d->t == b->q[b->head].t && d->seq < b->q[b->head].seq))
            best = (int)i;
    }
    s->lane_min = best;
    s->lane_min_ok = 1;
    return best;
}

int net_next_event(net_state_t *s, net_ev_t *out)
{
    if (s->next_ok) {
        *out = s->next_ev;
        return s->next_src;
    }
    const net_ev_t *h = net_heap_top(s);
    int src = NET_EV_NONE;
    if (h) {
        *out = *h;
        src = NET_EV_HEAP;
    }
    int li = lane_min(s);
    if (li != NET_EV_NONE) {
        const net_lane_t *l = &s->lanes[li];
        const net_dev_t *d = &l->q[l->head];
        if (src == NET_EV_NONE || d->t < out->t ||
            (d->t == out->t && d->seq < out->seq)) {
            *out = (net_ev_t){.t = d->t,
                              .seq = d->seq,
                              .id = d->flow,
                              .ver = NET_EV_DELIVERY};
            src = li;
        }
    }
    if (src != NET_EV_NONE)
        s->next_ev = *out;
    s->next_src = src;
    s->next_ok = 1;
    return src;
}

void net_next_pop(net_state_t *s, int src)
{
    s->next_ok = 0;
    if (src == NET_EV_HEAP) {
        net_heap_pop(s);
        return;
    }
    net_lane_t *l = &s->lanes[src];
    s->lane_min_ok = 0;
    l->head = (l->head + 1) & (l->cap - 1);
    l->n--;
    l->users--; /* the flow is gone once delivered */
}

void net_lanes_free(net_state_t *s)
{
    for (uint32_t i = 0; i < s->nlanes; i++)
        free(s->lanes[i].q);
    memset(s->lanes, 0, sizeof(s->lanes));
    s->lane_min_ok = 0;
    s->nlanes = 0;
}
