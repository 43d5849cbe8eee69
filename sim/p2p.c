/* sim/p2p.c - point-to-point send/recv: ops match by (group, source,
 * destination, tag) in posting order, rendezvous style as NCCL's: the
 * transfer starts when both sides have posted; the send completes when
 * its last byte left, the receive on delivery. Each (pair, p2p) uses its
 * own network connection, apart from the collectives' channels. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sym.h"

#define SIM_P2P_CHANNEL (1 << 20)

typedef struct p2p_q {
    int group, src, dst, tag;
    sim_req_t *sends, *sends_tail;
    sim_req_t *recvs, *recvs_tail;
    struct p2p_q *chain;
} p2p_q_t;

static uint64_t q_hash(int group, int src, int dst, int tag)
{
    uint64_t h = sim_hash64(((uint64_t)(uint32_t)group << 32) | (uint32_t)tag);
    return sim_hash64(h ^ (((uint64_t)(uint32_t)src << 32) | (uint32_t)dst));
}

static p2p_q_t *q_get(sim_world_t *w, int group, int src, int dst, int tag)
{
    uint64_t h = q_hash(group, src, dst, tag);
    p2p_q_t *head = sim_htab_get(&w->p2p, h);
    for (p2p_q_t *q = head; q; q = q->chain)
        if (q->group == group && q->src == src && q->dst == dst &&
            q->tag == tag)
            return q;
    p2p_q_t *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    *q = (p2p_q_t){
        .group = group, .src = src, .dst = dst, .tag = tag, .chain = head};
    if (sim_htab_put(&w->p2p, h, q) != HERD_OK) {
        free(q);
        return NULL;
    }
    return q;
}

static void q_push(sim_req_t **head, sim_req_t **tail, sim_req_t *r)
{
    r->p2p_next = NULL;
    if (*tail)
        (*tail)->p2p_next = r;
    else
        *head = r;
    *tail = r;
}

static sim_req_t *q_pop(sim_req_t **head, sim_req_t **tail)
{
    sim_req_t *r = *head;
    *head = r->p2p_next;
    if (!*head)
        *tail = NULL;
    r->p2p_next = NULL;
    return r;
}

static uint64_t req_bytes(const sim_req_t *r)
{
    return r->args.count * herd_dtype_size(r->args.dtype);
}

static void mismatch(sim_world_t *w, sim_req_t *s, sim_req_t *r)
{
    core_comm_error(s->base.comm, HERD_ERR_MISMATCH,
                    "send to rank %d (tag %d): %llu bytes sent but the "
                    "receive expects %llu",
                    r->owner->id, s->args.tag, (unsigned long long)req_bytes(s),
                    (unsigned long long)req_bytes(r));
    core_comm_error(r->base.comm, HERD_ERR_MISMATCH,
                    "recv from rank %d (tag %d): %llu bytes expected but "
                    "%llu sent",
                    s->owner->id, r->args.tag, (unsigned long long)req_bytes(r),
                    (unsigned long long)req_bytes(s));
    sim_req_complete(w, s, HERD_ERR_MISMATCH);
    sim_req_complete(w, r, HERD_ERR_MISMATCH);
}

static herd_status_t match(sim_world_t *w, sim_req_t *s, sim_req_t *r)
{
    if (req_bytes(s) != req_bytes(r)) {
        mismatch(w, s, r);
        return HERD_OK;
    }
    sim_flow_t *f = sim_flow_get(w);
    if (!f)
        return HERD_ERR_NO_MEMORY;
    f->is_p2p = 1;
    f->send = s;
    f->recv = r;
    s->match = r;
    r->match = s;
    if (w->opts.real_buffers && req_bytes(s))
        memcpy(r->args.recvbuf, s->args.sendbuf, req_bytes(s));
    herd_status_t st =
        sim_net_flow_start(w->net, w->now, s->owner->id, r->owner->id,
                           SIM_P2P_CHANNEL, req_bytes(s), f);
    if (st != HERD_OK)
        sim_flow_put(w, f);
    return st;
}

herd_status_t sim_p2p_post(sim_comm_t *c, const core_coll_args_t *a,
                           sim_req_t *req)
{
    sim_world_t *w = c->w;
    if (w->sym)
        sim_sym_flush(w); /* its flow would share the regime's links */
    int me = c->r->id;
    int peer = herd_comm_world_rank(&c->base, a->root);
    int is_send = a->coll == HERD_COLL_SEND;
    req->peer_world = peer;
    p2p_q_t *q = q_get(w, c->base.group_id, is_send ? me : peer,
                       is_send ? peer : me, a->tag);
    if (!q)
        return HERD_ERR_NO_MEMORY;
    sim_req_t **other = is_send ? &q->recvs : &q->sends;
    sim_req_t **other_tail = is_send ? &q->recvs_tail : &q->sends_tail;
    /* A dead peer's posted op never transfers anything. */
    if (*other && (*other)->owner->state != SIM_RANK_DEAD) {
        sim_req_t *o = q_pop(other, other_tail);
        return is_send ? match(w, req, o) : match(w, o, req);
    }
    if (is_send)
        q_push(&q->sends, &q->sends_tail, req);
    else
        q_push(&q->recvs, &q->recvs_tail, req);
    return HERD_OK;
}

void sim_p2p_flow_done(sim_world_t *w, void *flow, int delivered)
{
    sim_flow_t *f = flow;
    if (!delivered) {
        sim_req_t *s = f->send;
        f->send = NULL;
        if (s)
            sim_req_complete(w, s, HERD_OK);
        return;
    }
    sim_req_t *r = f->recv;
    sim_flow_put(w, f);
    if (r && r->owner->state != SIM_RANK_DEAD)
        sim_req_complete(w, r, HERD_OK);
}

void sim_p2p_fini(sim_world_t *w)
{
    for (size_t i = 0; i < w->p2p.cap; i++)
        for (p2p_q_t *q = w->p2p.vals[i], *n; q; q = n) {
            n = q->chain;
            free(q);
        }
    sim_htab_fini(&w->p2p);
}

/* For the diagnosis: a blocked p2p op that never matched. */
int sim_p2p_unmatched(const sim_req_t *req)
{
    return !req->done && !req->match;
}
