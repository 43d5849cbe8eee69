/* sim/evq.c - the event queue: a binary min-heap ordered by (time,
 * insertion sequence), so events at equal times run in the order they
 * were scheduled and every run is repeatable. */
#include <stdlib.h>

#include "sim/sim.h"

static int ev_less(const sim_ev_t *a, const sim_ev_t *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

herd_status_t sim_evq_push(sim_evq_t *q, uint64_t time, uint32_t type,
                           uint32_t a, void *p)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 1024;
        sim_ev_t *h = realloc(q->heap, cap * sizeof(*h));
        if (!h)
            return HERD_ERR_NO_MEMORY;
        q->heap = h;
        q->cap = cap;
    }
    sim_ev_t ev = {
        .time = time, .seq = q->next_seq++, .p = p, .type = type, .a = a};
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ev_less(&ev, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = ev;
    return HERD_OK;
}

int sim_evq_pop(sim_evq_t *q, sim_ev_t *out)
{
    if (q->n == 0)
        return 0;
    *out = q->heap[0];
    sim_ev_t last = q->heap[--q->n];
    size_t i = 0, n = q->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ev_less(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!ev_less(&q->heap[c], &last))
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    if (n > 0)
        q->heap[i] = last;
    return 1;
}

uint64_t sim_evq_next_time(const sim_evq_t *q)
{
    return q->n ? q->heap[0].time : UINT64_MAX;
}

void sim_evq_fini(sim_evq_t *q)
{
    free(q->heap);
    q->heap = NULL;
    q->n = q->cap = 0;
}
