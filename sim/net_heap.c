/* sim/net_heap.c - the network model's pending events: a 4-ary min-heap
 * ordered by (time, insertion sequence), so that events at the same
 * nanosecond come out in the order they were scheduled.
 *
 * A connection whose rate changes is rescheduled by pushing a new entry
 * with a new version; the old entry stays behind and is dropped when it
 * reaches the top (lazy invalidation). When the heap fills up, stale
 * entries are swept out before it would need to grow, so pushes never
 * allocate. */
#include <assert.h>
#include <stdlib.h>

#include "sim/net_impl.h"

static inline int ev_less(const net_ev_t *a, const net_ev_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static inline int ev_stale(const net_state_t *s, const net_ev_t *e)
{
    return e->ver != NET_EV_DELIVERY &&
           e->ver != (s->conns[e->id].ver & NET_VER_MASK);
}

static void sift_down(net_ev_t *h, uint32_t n, uint32_t i)
{
    net_ev_t x = h[i];
    for (;;) {
        uint32_t c = 4 * i + 1;
        if (c >= n)
            break;
        uint32_t best = c;
        uint32_t end = c + 4 < n ? c + 4 : n;
        for (uint32_t k = c + 1; k < end; k++)
            if (ev_less(&h[k], &h[best]))
                best = k;
        if (!ev_less(&h[best], &x))
            break;
        h[i] = h[best];
        i = best;
    }
    h[i] = x;
}

static void sift_up(net_ev_t *h, uint32_t i)
{
    net_ev_t x = h[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 4;
        if (!ev_less(&x, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

/* Drop every stale entry and restore the heap order. The order of the
 * survivors is fixed by their unique (time, seq) keys, so this does not
 * change what comes out. */
static void compact(net_state_t *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nheap; i++)
        if (!ev_stale(s, &s->heap[i]))
            s->heap[n++] = s->heap[i];
    s->nheap = n;
    for (uint32_t i = n / 4 + 1; i-- > 0;)
        if (i < n)
            sift_down(s->heap, n, i);
}

herd_status_t net_heap_reserve(net_state_t *s, uint64_t live)
{
    uint64_t want = 2 * live + 64;
    if (want <= s->heap_cap)
        return HERD_OK;
    if (want > UINT32_MAX)
        return HERD_ERR_OVERFLOW;
    uint64_t cap = s->heap_cap ? s->heap_cap : 64;
    while (cap < want)
        cap *= 2;
    if (cap > UINT32_MAX)
        cap = UINT32_MAX;
    net_ev_t *h = realloc(s->heap, cap * sizeof(*h));
    if (!h)
        return HERD_ERR_NO_MEMORY;
    s->heap = h;
    s->heap_cap = (uint32_t)cap;
    return HERD_OK;
}

void net_heap_push(net_state_t *s, uint64_t t, uint32_t id, uint32_t ver)
{
    if (s->nheap == s->heap_cap)
        compact(s);
    assert(s->nheap < s->heap_cap);
    /* net_heap_reserve keeps the capacity at twice the live entries. */
    net_ev_t *e = &s->heap[s->nheap];
    e->t = t;
    e->seq = s->seq++;
    e->id = id;
    e->ver = ver;
    sift_up(s->heap, s->nheap++);
}

void net_heap_pop(net_state_t *s)
{
    s->heap[0] = s->heap[--s->nheap];
    if (s->nheap > 1)
        sift_down(s->heap, s->nheap, 0);
}

const net_ev_t *net_heap_top(net_state_t *s)
{
    while (s->nheap > 0 && ev_stale(s, &s->heap[0]))
        net_heap_pop(s);
    return s->nheap ? &s->heap[0] : NULL;
}
