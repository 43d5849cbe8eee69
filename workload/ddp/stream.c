/* workload/ddp/stream.c - in-order execution of a process group's
 * collectives over the asynchronous herd API (see ddp_stream.h). */
#include "workload/ddp/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum slot_state {
    SLOT_FREE,
    SLOT_QUEUED,
    SLOT_POSTED,
    SLOT_DONE
} slot_state_t;

typedef struct slot {
    slot_state_t state;
    herd_req_t *req;
    herd_status_t status;
    ddp_stream_op_t op;
    char label[48];
} slot_t;

struct ddp_stream {
    herd_comm_t *comm;
    void *buf;
    slot_t *slots;
    size_t nslots;
    size_t *queue, qhead, qlen;  /* QUEUED slots, FIFO (ring) */
    size_t *flight, fhead, flen; /* POSTED slots, FIFO (ring) */
    int max_inflight;
    char blocked[160];
};

herd_status_t ddp_stream_create(herd_comm_t *comm, void *buf, size_t nslots,
                                int max_inflight, ddp_stream_t **out)
{
    ddp_stream_t *s = calloc(1, sizeof(*s));
    if (!s)
        return HERD_ERR_NO_MEMORY;
    s->comm = comm;
    s->buf = buf;
    s->nslots = nslots;
    s->max_inflight = max_inflight;
    s->slots = calloc(nslots, sizeof(slot_t));
    s->queue = calloc(nslots, sizeof(size_t));
    s->flight = calloc(nslots, sizeof(size_t));
    if (!s->slots || !s->queue || !s->flight) {
        ddp_stream_destroy(s);
        return HERD_ERR_NO_MEMORY;
    }
    *out = s;
    return HERD_OK;
}

void ddp_stream_destroy(ddp_stream_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->slots && i < s->nslots; i++) {
        int done = 0;
        slot_t *sl = &s->slots[i];
        if (sl->req && (sl->state == SLOT_DONE ||
                        (herd_req_test(sl->req, &done) == HERD_OK && done)))
            herd_req_free(sl->req);
    }
    free(s->slots);
    free(s->queue);
    free(s->flight);
    free(s);
}

static void set_blocked(ddp_stream_t *s, const slot_t *sl, const char *verb)
{
    snprintf(s->blocked, sizeof(s->blocked), "%s %s '%s'", verb,
             herd_coll_name(sl->op.coll), sl->label);
}

static herd_status_t post(ddp_stream_t *s, size_t i)
{
    slot_t *sl = &s->slots[i];
    const ddp_stream_op_t *op = &sl->op;
    herd_comm_t *comm = op->comm ? op->comm : s->comm;
    herd_status_t st = herd_comm_set_label(comm, sl->label);
    if (st == HERD_OK && op->coll == HERD_COLL_ALL_REDUCE)
        st = herd_all_reduce(comm, s->buf, s->buf, op->count, op->dtype,
                             HERD_SUM, &sl->req);
    else if (st == HERD_OK && op->coll == HERD_COLL_BROADCAST)
        st = herd_broadcast(comm, s->buf, op->count, op->dtype, op->root,
                            &sl->req);
    else if (st == HERD_OK && op->coll == HERD_COLL_ALL_GATHER)
        st = herd_all_gather(comm, s->buf, s->buf, op->count, op->dtype,
                             &sl->req);
    else if (st == HERD_OK && op->coll == HERD_COLL_REDUCE_SCATTER)
        st = herd_reduce_scatter(comm, s->buf, s->buf, op->count, op->dtype,
                                 HERD_SUM, &sl->req);
    else if (st == HERD_OK && op->coll == HERD_COLL_SEND)
        st = herd_send(comm, s->buf, op->count, op->dtype, op->root, 0,
                       &sl->req);
    else if (st == HERD_OK && op->coll == HERD_COLL_RECV)
        st = herd_recv(comm, s->buf, op->count, op->dtype, op->root, 0,
                       &sl->req);
    else if (st == HERD_OK)
        st = herd_barrier(comm, &sl->req);
    herd_comm_set_label(comm, NULL);
    if (st != HERD_OK) {
        set_blocked(s, sl, "failed to post");
        return st;
    }
    sl->state = SLOT_POSTED;
    s->flight[(s->fhead + s->flen++) % s->nslots] = i;
    return HERD_OK;
}

/* Retire finished ops at the head of the stream, then start queued ops
 * while there is room. */
static herd_status_t pump(ddp_stream_t *s)
{
    while (s->flen) {
        slot_t *sl = &s->slots[s->flight[s->fhead]];
        int done = 0;
        herd_status_t st = herd_req_test(sl->req, &done);
        if (!done && st == HERD_OK)
            break;
        sl->state = SLOT_DONE;
        sl->status = st;
        s->fhead = (s->fhead + 1) % s->nslots;
        s->flen--;
    }
    herd_status_t st = HERD_OK;
    while (st == HERD_OK && s->qlen &&
           (s->max_inflight <= 0 || s->flen < (size_t)s->max_inflight)) {
        size_t i = s->queue[s->qhead];
        s->qhead = (s->qhead + 1) % s->nslots;
        s->qlen--;
        st = post(s, i);
    }
    return st;
}

herd_status_t ddp_stream_launch(ddp_stream_t *s, size_t slot,
                                const ddp_stream_op_t *op)
{
    if (slot >= s->nslots || s->slots[slot].state != SLOT_FREE)
        return HERD_ERR_INVALID_ARG;
    slot_t *sl = &s->slots[slot];
    sl->op = *op;
    snprintf(sl->label, sizeof(sl->label), "%s", op->label ? op->label : "");
    sl->op.label = sl->label;
    sl->state = SLOT_QUEUED;
    s->queue[(s->qhead + s->qlen++) % s->nslots] = slot;
    return pump(s);
}

/* While ops wait for a stream, compute until its running head op ends
 * (it is then retired and the next posted at that instant); else all of
 * it at once. With several streams the first that has ops waiting is
 * watched: a second one with a queue starts its next op when the watched
 * head ends or the compute does (FSDP rarely has both). */
herd_status_t ddp_streams_compute(ddp_stream_t *const *ss, size_t n,
                                  double seconds, const char *label)
{
    herd_status_t st = HERD_OK;
    while (st == HERD_OK && seconds > 1e-12) {
        double done = seconds;
        ddp_stream_t *w = NULL;
        for (size_t i = 0; i < n && !w; i++)
            if (ss[i]->qlen && ss[i]->flen)
                w = ss[i];
        if (w)
            st = herd_compute_until(w->comm, seconds,
                                    w->slots[w->flight[w->fhead]].req, label,
                                    &done);
        else
            st = herd_compute(ss[0]->comm, seconds, label);
        seconds -= done;
        for (size_t i = 0; i < n && st == HERD_OK; i++)
            st = pump(ss[i]);
    }
    for (size_t i = 0; st != HERD_OK && i < n; i++)
        if (!ss[i]->blocked[0])
            snprintf(ss[i]->blocked, sizeof(ss[i]->blocked),
                     "stopped in compute '%s'", label ? label : "compute");
    return st;
}

herd_status_t ddp_stream_compute(ddp_stream_t *s, double seconds,
                                 const char *label)
{
    return ddp_streams_compute(&s, 1, seconds, label);
}

/* Block on the oldest running op. */
static herd_status_t wait_head(ddp_stream_t *s)
{
    slot_t *sl = &s->slots[s->flight[s->fhead]];
    herd_status_t st = herd_req_wait(sl->req);
    sl->state = SLOT_DONE;
    sl->status = st;
    s->fhead = (s->fhead + 1) % s->nslots;
    s->flen--;
    if (st != HERD_OK)
        set_blocked(s, sl, "blocked in");
    return st;
}

herd_status_t ddp_stream_wait(ddp_stream_t *s, size_t slot)
{
    if (slot >= s->nslots)
        return HERD_ERR_INVALID_ARG;
    slot_t *sl = &s->slots[slot];
    herd_status_t st = HERD_OK;
    while (st == HERD_OK &&
           (sl->state == SLOT_QUEUED || sl->state == SLOT_POSTED)) {
        st = s->flen ? wait_head(s) : HERD_ERR_INTERNAL;
        if (st == HERD_OK)
            st = pump(s);
    }
    if (sl->state == SLOT_FREE)
        return st;
    if (st == HERD_OK && (st = sl->status) != HERD_OK && !s->blocked[0])
        set_blocked(s, sl, "blocked in");
    if (sl->req)
        herd_req_free(sl->req);
    sl->req = NULL;
    sl->state = SLOT_FREE;
    return st;
}

const char *ddp_stream_blocked(const ddp_stream_t *s)
{
    return s->blocked;
}
