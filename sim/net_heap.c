/* sim/net_heap.c - the network model's pending send completions, ordered
 * by (time, insertion sequence), so that events at the same nanosecond
 * come out in the order they were scheduled.
 *
 * Big collectives finish thousands of sends at the same instant (every
 * connection of a ring moves equal chunks at equal rates), so the queue
 * is a 4-ary heap of buckets, each a FIFO of events at one time: an event
 * pushed at the time of the last bucket used joins it, O(1); any other
 * opens a new bucket. One time may then have several buckets, but their
 * events were pushed in disjoint, increasing runs, so the heap orders
 * buckets by (time, creation order) and the events still come out in
 * (time, sequence) order. (An earlier version found the bucket of any
 * pending time through a hash of the times; with uneven transfers most
 * times are distinct and the hash's random accesses cost more than the
 * extra buckets.)
 *
 * A connection whose rate changes is rescheduled by pushing a new entry
 * with a new version; the old entry stays behind and is dropped when it
 * reaches the front (lazy invalidation). When the node pool fills up,
 * stale entries are swept out before it would need to grow, so pushes
 * never allocate. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net_impl.h"

static inline int ev_stale(const net_state_t *s, uint32_t id, uint32_t ver)
{
    return ver != NET_EV_DELIVERY && ver != (s->conns[id].ver & NET_VER_MASK);
}

/* Heap order of two slots: time, then creation order. */
static inline int th_less(const net_state_t *s, const net_tslot_t *a,
                          const net_tslot_t *b)
{
    return a->t < b->t ||
           (a->t == b->t && s->bk[a->b].order < s->bk[b->b].order);
}

static void th_down(net_state_t *s, uint32_t i)
{
    net_tslot_t *h = s->th, x = h[i];
    uint32_t n = s->nth;
    for (;;) {
        uint32_t c = 4 * i + 1;
        if (c >= n)
            break;
        uint32_t best = c, end = c + 4 < n ? c + 4 : n;
        for (uint32_t k = c + 1; k < end; k++)
            if (th_less(s, &h[k], &h[best]))
                best = k;
        if (!th_less(s, &h[best], &x))
            break;
        h[i] = h[best];
        i = best;
    }
    h[i] = x;
}

static void th_up(net_state_t *s, uint32_t i)
{
    net_tslot_t *h = s->th, x = h[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 4;
        if (!th_less(s, &x, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

/* The bucket for an event at t: the last one used if it has that time,
 * else a new one. */
static uint32_t bucket_of(net_state_t *s, uint64_t t)
{
    if (s->last_bk != NET_NONE && s->bk[s->last_bk].t == t)
        return s->last_bk;
    uint32_t b = s->bk_free;
    s->bk_free = s->bk[b].head;
    s->bk[b] = (net_bucket_t){
        .t = t, .order = s->bk_order++, .head = NET_NONE, .tail = NET_NONE};
    s->th[s->nth] = (net_tslot_t){.t = t, .b = b};
    th_up(s, s->nth++);
    s->last_bk = b;
    return b;
}

/* The front bucket ran empty: drop it. */
static void bucket_drop(net_state_t *s)
{
    uint32_t b = s->th[0].b;
    s->th[0] = s->th[--s->nth];
    if (s->nth > 1)
        th_down(s, 0);
    s->bk[b].head = s->bk_free;
    s->bk_free = b;
    if (s->last_bk == b)
        s->last_bk = NET_NONE;
}

static void node_free(net_state_t *s, uint32_t n)
{
    s->qn[n].next = s->qn_free;
    s->qn_free = n;
    s->nq--;
}

/* Drop every stale entry (pool full). Survivors keep their order. */
static void compact(net_state_t *s)
{
    for (uint32_t i = 0; i < s->nth; i++) {
        net_bucket_t *b = &s->bk[s->th[i].b];
        uint32_t keep = NET_NONE, tail = NET_NONE;
        for (uint32_t n = b->head, nx; n != NET_NONE; n = nx) {
            nx = s->qn[n].next;
            if (ev_stale(s, s->qn[n].id, s->qn[n].ver)) {
                node_free(s, n);
                continue;
            }
            s->qn[n].next = NET_NONE;
            if (tail == NET_NONE)
                keep = n;
            else
                s->qn[tail].next = n;
            tail = n;
        }
        b->head = keep;
        b->tail = tail;
    }
    uint32_t n = 0; /* drop the buckets left empty, restore the order */
    for (uint32_t i = 0; i < s->nth; i++) {
        uint32_t b = s->th[i].b;
        if (s->bk[b].head != NET_NONE) {
            s->th[n++] = s->th[i];
            continue;
        }
        s->bk[b].head = s->bk_free;
        s->bk_free = b;
    }
    s->nth = n;
    s->last_bk = NET_NONE;
    for (uint32_t i = n / 4 + 1; i-- > 0;)
        if (i < n)
            th_down(s, i);
}

/* Every index stays valid: the arrays only grow, and the new nodes and
 * buckets join the free lists. A heap never holds more buckets than
 * nodes (empty buckets are dropped), so th needs as many slots. */
static herd_status_t grow(net_state_t *s, uint32_t cap)
{
    net_qnode_t *qn = realloc(s->qn, (size_t)cap * sizeof(*qn));
    if (qn)
        s->qn = qn;
    net_bucket_t *bk = qn ? realloc(s->bk, (size_t)cap * sizeof(*bk)) : NULL;
    if (bk)
        s->bk = bk;
    net_tslot_t *th = bk ? realloc(s->th, (size_t)cap * sizeof(*th)) : NULL;
    if (!th)
        return HERD_ERR_NO_MEMORY;
    s->th = th;
    for (uint32_t i = cap; i-- > s->qn_cap;) {
        qn[i].next = s->qn_free;
        s->qn_free = i;
        bk[i].head = s->bk_free;
        s->bk_free = i;
    }
    s->qn_cap = cap;
    return HERD_OK;
}

herd_status_t net_heap_reserve(net_state_t *s, uint64_t live)
{
    uint64_t want = 2 * live + 64;
    if (want <= s->qn_cap)
        return HERD_OK;
    if (want > UINT32_MAX / 2)
        return HERD_ERR_OVERFLOW;
    uint64_t cap = s->qn_cap ? s->qn_cap : 64;
    while (cap < want)
        cap *= 2;
    return grow(s, (uint32_t)cap);
}

void net_heap_push(net_state_t *s, uint64_t t, uint32_t id, uint32_t ver)
{
    net_next_keep(s, t);
    if (s->nq == s->qn_cap)
        compact(s);
    /* net_heap_reserve keeps the capacity at twice the live entries. */
    assert(s->nq < s->qn_cap && s->qn_free != NET_NONE);
    uint32_t b = bucket_of(s, t), n = s->qn_free;
    s->qn_free = s->qn[n].next;
    s->nq++;
    s->qn[n] =
        (net_qnode_t){.seq = s->seq++, .id = id, .ver = ver, .next = NET_NONE};
    net_bucket_t *k = &s->bk[b];
    if (k->tail == NET_NONE)
        k->head = n;
    else
        s->qn[k->tail].next = n;
    k->tail = n;
}

void net_heap_pop(net_state_t *s)
{
    s->next_ok = 0;
    net_bucket_t *b = &s->bk[s->th[0].b];
    uint32_t n = b->head;
    b->head = s->qn[n].next;
    if (b->head == NET_NONE)
        b->tail = NET_NONE;
    else /* the next event's connection: fetched while this one runs */
        __builtin_prefetch(&s->conns[s->qn[b->head].id]);
    node_free(s, n);
    if (b->head == NET_NONE)
        bucket_drop(s);
}

const net_ev_t *net_heap_top(net_state_t *s)
{
    while (s->nth > 0) {
        net_bucket_t *b = &s->bk[s->th[0].b];
        const net_qnode_t *q = &s->qn[b->head];
        if (q->next != NET_NONE)
            __builtin_prefetch(&s->qn[q->next]);
        if (ev_stale(s, q->id, q->ver)) {
            net_heap_pop(s);
            continue;
        }
        s->top =
            (net_ev_t){.t = b->t, .seq = q->seq, .id = q->id, .ver = q->ver};
        return &s->top;
    }
    return NULL;
}

void net_heap_free(net_state_t *s)
{
    free(s->qn);
    free(s->bk);
    free(s->th);
    s->qn = NULL, s->bk = NULL, s->th = NULL;
    s->qn_cap = s->nq = s->nth = 0;
}
