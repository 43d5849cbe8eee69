/* sim/net_heap.c - the network model's pending send completions, ordered
 * by (time, insertion sequence), so that events at the same nanosecond
 * come out in the order they were scheduled.
 *
 * Big collectives finish thousands of sends at the same instant (every
 * connection of a ring moves equal chunks at equal rates), so the queue
 * is a 4-ary heap of distinct times, each with a FIFO bucket of its
 * events: sequence numbers only grow, so appending keeps a bucket in
 * order, and an event costs O(1) unless its time is new. A hash of the
 * times finds the bucket; the last one used is remembered.
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

static inline uint32_t t_hash(const net_state_t *s, uint64_t t)
{
    return (uint32_t)((t * 0x9e3779b97f4a7c15ULL) >> 32) & (s->ht_cap - 1);
}

static net_tslot_t *ht_slot(net_state_t *s, uint64_t t)
{
    uint32_t mask = s->ht_cap - 1;
    for (uint32_t i = t_hash(s, t);; i = (i + 1) & mask)
        if (s->ht[i].b == NET_NONE || s->ht[i].t == t)
            return &s->ht[i];
}

/* Remove time t from the hash (backward-shift deletion). */
static void ht_del(net_state_t *s, uint64_t t)
{
    uint32_t mask = s->ht_cap - 1;
    net_tslot_t *slot = ht_slot(s, t);
    uint32_t i = (uint32_t)(slot - s->ht);
    s->ht[i].b = NET_NONE;
    for (uint32_t j = (i + 1) & mask; s->ht[j].b != NET_NONE;
         j = (j + 1) & mask) {
        uint32_t home = t_hash(s, s->ht[j].t);
        int movable =
            (j > i) ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            s->ht[i] = s->ht[j];
            s->ht[j].b = NET_NONE;
            i = j;
        }
    }
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
            if (h[k].t < h[best].t)
                best = k;
        if (h[best].t >= x.t)
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
        if (h[p].t <= x.t)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

/* A bucket for time t, new if t is not pending. */
static uint32_t bucket_of(net_state_t *s, uint64_t t)
{
    if (s->last_bk != NET_NONE && s->bk[s->last_bk].t == t)
        return s->last_bk;
    net_tslot_t *slot = ht_slot(s, t);
    if (slot->b == NET_NONE) {
        uint32_t b = s->bk_free;
        s->bk_free = s->bk[b].head;
        s->bk[b] = (net_bucket_t){.t = t, .head = NET_NONE, .tail = NET_NONE};
        *slot = (net_tslot_t){.t = t, .b = b};
        s->th[s->nth] = (net_tslot_t){.t = t, .b = b};
        th_up(s, s->nth++);
    }
    s->last_bk = slot->b;
    return slot->b;
}

/* The front bucket ran empty: drop it. */
static void bucket_drop(net_state_t *s)
{
    uint32_t b = s->th[0].b;
    ht_del(s, s->bk[b].t);
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
        ht_del(s, s->bk[b].t);
        s->bk[b].head = s->bk_free;
        s->bk_free = b;
    }
    s->nth = n;
    s->last_bk = NET_NONE;
    for (uint32_t i = n / 4 + 1; i-- > 0;)
        if (i < n)
            th_down(s, i);
}

static void chain_free(net_state_t *s, uint32_t *head, uint32_t cap)
{
    *head = NET_NONE;
    for (uint32_t i = cap; i-- > 0;) {
        s->qn[i].next = *head;
        *head = i;
    }
}

static herd_status_t grow(net_state_t *s, uint32_t cap)
{
    net_qnode_t *qn = malloc((size_t)cap * sizeof(*qn));
    net_bucket_t *bk = malloc((size_t)cap * sizeof(*bk));
    net_tslot_t *th = malloc((size_t)cap * sizeof(*th));
    net_tslot_t *ht = malloc((size_t)cap * 2 * sizeof(*ht));
    if (!qn || !bk || !th || !ht) {
        free(qn), free(bk), free(th), free(ht);
        return HERD_ERR_NO_MEMORY;
    }
    /* Rebuild: move the pending entries over, in order. */
    s->next_ok = 0;
    net_state_t old = *s;
    s->qn = qn, s->bk = bk, s->th = th, s->ht = ht;
    s->qn_cap = cap, s->ht_cap = 2 * cap;
    memset(ht, 0xff, (size_t)cap * 2 * sizeof(*ht));
    chain_free(s, &s->qn_free, cap);
    s->bk_free = NET_NONE;
    for (uint32_t i = cap; i-- > 0;) {
        bk[i].head = s->bk_free;
        s->bk_free = i;
    }
    s->nth = 0, s->nq = 0, s->last_bk = NET_NONE;
    for (uint32_t i = 0; i < old.nth; i++) {
        const net_bucket_t *b = &old.bk[old.th[i].b];
        for (uint32_t n = b->head; n != NET_NONE; n = old.qn[n].next) {
            uint32_t nb = bucket_of(s, b->t), m = s->qn_free;
            s->qn_free = qn[m].next;
            qn[m] = old.qn[n];
            qn[m].next = NET_NONE;
            if (bk[nb].tail == NET_NONE)
                bk[nb].head = m;
            else
                qn[bk[nb].tail].next = m;
            bk[nb].tail = m;
            s->nq++;
        }
    }
    free(old.qn), free(old.bk), free(old.th), free(old.ht);
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
    free(s->ht);
    s->qn = NULL, s->bk = NULL, s->th = NULL, s->ht = NULL;
    s->qn_cap = s->ht_cap = s->nq = s->nth = 0;
}
