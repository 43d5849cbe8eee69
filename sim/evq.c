/* sim/evq.c - the event queue, ordered by (time, insertion sequence), so
 * events at equal times run in the order they were scheduled and every
 * run is repeatable.
 *
 * Most events are pushed in time order: a schedule's step that ends one
 * hop latency or one reduction after now, behind the previous one; a
 * collective's timeout 600 s after its post, behind the previous
 * collective's. Those go to one of a few lanes, FIFOs whose events are in
 * (time, seq) order by construction (an event joins a lane only if it is
 * not earlier than the lane's last; seq always grows), at O(1) a push
 * and a pop; an event no lane takes goes to a binary min-heap. A pop
 * takes the least of the heap's top and the lanes' heads, so the order is
 * exactly the heap's alone (tests/sim_identity.c). */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

static int ev_less(const sim_ev_t *a, const sim_ev_t *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static herd_status_t heap_push(sim_evq_t *q, const sim_ev_t *ev)
{
    if (q->hn == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 1024;
        sim_ev_t *h = realloc(q->heap, cap * sizeof(*h));
        if (!h)
            return HERD_ERR_NO_MEMORY;
        q->heap = h;
        q->cap = cap;
    }
    size_t i = q->hn++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ev_less(ev, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = *ev;
    return HERD_OK;
}

static void heap_pop(sim_evq_t *q, sim_ev_t *out)
{
    *out = q->heap[0];
    sim_ev_t last = q->heap[--q->hn];
    size_t i = 0, n = q->hn;
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
}

/* The lane `ev` may join: the one whose last event is the latest not
 * after it (keeping lanes close to now), else an empty one; -1: none. */
static int pick_lane(const sim_evq_t *q, uint64_t time)
{
    int best = -1, empty = -1;
    uint64_t best_t = 0;
    for (int i = 0; i < SIM_EVQ_LANES; i++) {
        const sim_evq_lane_t *l = &q->lane[i];
        if (l->head == l->tail) {
            if (empty < 0)
                empty = i;
            continue;
        }
        uint64_t t = l->v[l->tail - 1].time;
        if (t <= time && (best < 0 || t > best_t)) {
            best = i;
            best_t = t;
        }
    }
    return best >= 0 ? best : empty;
}

static herd_status_t lane_push(sim_evq_lane_t *l, const sim_ev_t *ev)
{
    if (l->tail == l->cap) {
        if (l->head >= l->cap / 2 && l->head > 0) { /* slide down */
            memmove(l->v, l->v + l->head, (l->tail - l->head) * sizeof(*l->v));
            l->tail -= l->head;
            l->head = 0;
        } else {
            size_t cap = l->cap ? l->cap * 2 : 1024;
            sim_ev_t *v = realloc(l->v, cap * sizeof(*v));
            if (!v)
                return HERD_ERR_NO_MEMORY;
            l->v = v;
            l->cap = cap;
        }
    }
    l->v[l->tail++] = *ev;
    return HERD_OK;
}

herd_status_t sim_evq_push(sim_evq_t *q, uint64_t time, uint32_t type,
                           uint32_t a, void *p)
{
    sim_ev_t ev = {
        .time = time, .seq = q->next_seq++, .p = p, .type = type, .a = a};
    int i = pick_lane(q, time);
    herd_status_t st = i >= 0 ? lane_push(&q->lane[i], &ev) : heap_push(q, &ev);
    if (st == HERD_OK && (q->n++ == 0 || time < q->next_t))
        q->next_t = time;
    return st;
}

/* The lane whose head comes first, or -1 when the lanes are empty. */
static int first_lane(const sim_evq_t *q)
{
    int best = -1;
    for (int i = 0; i < SIM_EVQ_LANES; i++) {
        const sim_evq_lane_t *l = &q->lane[i];
        if (l->head < l->tail &&
            (best < 0 ||
             ev_less(&l->v[l->head], &q->lane[best].v[q->lane[best].head])))
            best = i;
    }
    return best;
}

/* The earliest time queued, searched (after a pop). */
static uint64_t earliest(const sim_evq_t *q)
{
    uint64_t t = q->hn ? q->heap[0].time : UINT64_MAX;
    for (int i = 0; i < SIM_EVQ_LANES; i++) {
        const sim_evq_lane_t *l = &q->lane[i];
        if (l->head < l->tail && l->v[l->head].time < t)
            t = l->v[l->head].time;
    }
    return t;
}

int sim_evq_pop(sim_evq_t *q, sim_ev_t *out)
{
    if (q->n == 0)
        return 0;
    int i = first_lane(q);
    sim_evq_lane_t *l = i >= 0 ? &q->lane[i] : NULL;
    if (l && (q->hn == 0 || ev_less(&l->v[l->head], &q->heap[0]))) {
        *out = l->v[l->head++];
        if (l->head == l->tail)
            l->head = l->tail = 0;
    } else {
        heap_pop(q, out);
    }
    q->n--;
    q->next_t = earliest(q);
    return 1;
}

uint64_t sim_evq_next_time(const sim_evq_t *q)
{
    return q->n ? q->next_t : UINT64_MAX;
}

void sim_evq_fini(sim_evq_t *q)
{
    free(q->heap);
    q->heap = NULL;
    q->hn = q->cap = q->n = 0;
    for (int i = 0; i < SIM_EVQ_LANES; i++) {
        free(q->lane[i].v);
        memset(&q->lane[i], 0, sizeof(q->lane[i]));
    }
}
