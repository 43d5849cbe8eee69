/* sim/exec.c - executes one member's schedule of a collective in virtual
 * time, following core/sched.h's rules: a step starts when its
 * dependencies are done and the previous step on its connection (peer,
 * channel, direction) has started; the k-th send to a peer on a channel
 * matches that peer's k-th receive from us on that channel. A SEND starts
 * a flow on the network model and completes when its last byte left; a
 * RECV completes at max(its own readiness, delivery), a RECV_REDUCE one
 * local reduction later (bytes / cluster.reduce_bw). Under algorithm
 * "gloo" (inst->rdv) a SEND moves only once the receiver's notice that it
 * posted the matching receive has come: a RECV that starts sends one, a
 * small message on the connection to the sender, behind whatever data is
 * queued there (sim/gloo_lower.c says why that matters). Steps whose
 * dependencies complete at the same instant are started from a work list,
 * never by recursion. With real buffers the data moves and reduces too.
 * The compact per-step state is built by sim/exec_build.c. */
#include <stdlib.h>
#include <string.h>

#include "core/reduce.h"
#include "sim/exec_impl.h"
#include "sim/sym.h"

sim_req_t *sim_exec_req(const sim_exec_t *x)
{
    return x->req;
}

/* Real buffers: the element range a step names, or NULL (and an error on
 * the exec) if the schedule points outside the buffer. */
static uint8_t *range(sim_exec_t *x, int buf, uint64_t off, uint64_t count)
{
    if (buf > CORE_BUF_SCRATCH || !x->buf[buf] ||
        off + count > x->buflen[buf] || off + count < off) {
        if (count)
            x->err = HERD_ERR_INTERNAL;
        return NULL;
    }
    return x->buf[buf] + off * x->esize;
}

static void push_work(sim_world_t *w, sim_exec_t *x, uint32_t step)
{
    if (w->nwork == w->work_cap) {
        size_t cap = w->work_cap ? w->work_cap * 2 : 256;
        sim_exec_t **a = realloc(w->work, cap * sizeof(*a));
        uint32_t *b = a ? realloc(w->work_step, cap * sizeof(*b)) : NULL;
        if (a)
            w->work = a;
        if (!b) { /* the run cannot go on without its work list */
            if (w->end_status == HERD_OK)
                w->end_status = HERD_ERR_NO_MEMORY;
            return;
        }
        w->work_step = b;
        w->work_cap = cap;
    }
    size_t i = w->nwork++;
    /* gloo's order of posting matters (a notice queues behind data sent
     * before it): steps of one member that become startable in the same
     * instant start in schedule order, the smallest index on top */
    while (x->rdv && i > 0 && w->work[i - 1] == x &&
           w->work_step[i - 1] < step) {
        w->work[i] = x;
        w->work_step[i] = w->work_step[i - 1];
        i--;
    }
    w->work[i] = x;
    w->work_step[i] = step;
}

static void release(sim_exec_t *x, uint32_t step)
{
    uint8_t *b = xw(x, step);
    if ((*b & XB_COUNT) == XB_BIG) {
        if (--x->big[step] > 0)
            return;
        *b &= (uint8_t)~XB_COUNT;
        push_work(x->w, x, step);
        return;
    }
    if ((--*b & XB_COUNT) == 0)
        push_work(x->w, x, step);
}

static int frozen(const sim_exec_t *x)
{
    return x->w->dead[x->world_rank] || x->inst->mismatch != SIM_DIAG_NONE;
}

static void finish(sim_exec_t *x)
{
    const core_coll_args_t *a = &x->req->args;
    if (x->real && a->op == HERD_AVG && x->err == HERD_OK &&
        (a->coll == HERD_COLL_ALL_REDUCE || a->coll == HERD_COLL_REDUCE ||
         a->coll == HERD_COLL_REDUCE_SCATTER ||
         a->coll == HERD_COLL_REDUCE_SCATTER_V) &&
        (a->coll != HERD_COLL_REDUCE || x->member == a->root) &&
        x->buf[CORE_BUF_OUT])
        core_reduce_avg_finish(x->buf[CORE_BUF_OUT], a->count, a->dtype,
                               x->inst->p);
    sim_inst_member_done(x->w, x->inst, x->member, x->err);
}

/* HERD_STEPS_DIR: one line for a step that has ended now. Kept out of
 * line (cold): inlined, it cost the hot path 1.5 % more instructions. */
__attribute__((noinline, cold)) static void step_record(const sim_exec_t *x,
                                                        uint32_t step)
{
    const sim_xstep_t *xs = &x->xs[step];
    const sim_xconn_t *c = xs->conn != XS_NONE ? &x->conns[xs->conn] : NULL;
    const sim_req_t *q = x->req;
    core_step_rec_t r = {.rank = x->world_rank,
                         .group = x->inst->group,
                         .seq = x->inst->seq,
                         .coll = q->args.coll,
                         .algo = q->algo,
                         .op_bytes = core_args_send_count(&q->args, q->gsize) *
                                     x->esize,
                         .op_start = q->t_post,
                         .step = step,
                         .kind = (int)xb_kind(*xw(x, step)),
                         .peer = c ? c->peer : -1,
                         .channel = c ? (int)c->channel : 0,
                         .bytes = xs_count(x, step) * x->esize,
                         .start = x->t_step[step],
                         .end = x->w->now};
    core_steplog_write(x->w->steplog, &r);
}

static void complete(sim_exec_t *x, uint32_t step)
{
    if (x->w->dead[x->world_rank])
        return;
    if (x->t_step)
        step_record(x, step);
    const sim_xstep_t *p = &x->xs[step];
    xb_set_state(xw(x, step), XS_DONE);
    x->w->steps_done++;
    /* Pushed last to first: the work list is a stack, so dependents
     * released together start in schedule order, as the tcp engine's
     * ready queue starts them. The order decides which of two sends
     * that leave one NIC together takes its token bucket's burst: the
     * root of a tree fanning out to two children on the testbed. */
    if (p->ndep == 1)
        release(x, p->dep);
    else
        for (uint32_t j = p->dep + p->ndep; j-- > p->dep;)
            release(x, x->rdeps[j]);
    if (--x->nleft == 0)
        finish(x); /* frees x */
}

void sim_exec_step_done(sim_world_t *w, sim_exec_t *x, uint32_t step)
{
    (void)w;
    if (x->zombie)
        return;
    complete(x, step);
}

static void apply_recv(sim_exec_t *x, uint32_t step)
{
    const core_step_t *p = &x->s.steps[step];
    void *msg = x->payload[step];
    x->payload[step] = NULL;
    uint8_t *dst = range(x, p->dst_buf, p->dst_off, p->count);
    if (p->kind == CORE_STEP_RECV) {
        if (dst && msg)
            memcpy(dst, msg, p->count * x->esize);
    } else {
        uint8_t *src = range(x, p->src_buf, p->src_off, p->count);
        if (dst && src && msg &&
            core_reduce(dst, src, msg, p->count, x->req->args.dtype,
                        x->req->args.op) != HERD_OK)
            x->err = HERD_ERR_INTERNAL;
    }
    free(msg);
}

/* The message of a started receive is here: done now, or one local
 * reduction later. */
static void recv_ready(sim_exec_t *x, uint32_t step)
{
    uint32_t kind = xb_kind(*xw(x, step));
    uint64_t count = xs_count(x, step);
    if (x->real)
        apply_recv(x, step);
    double bw = x->w->opts.cluster.reduce_bw;
    /* NCCL model: the protocol's latency per hop (0 for other algorithms;
     * sim/nccl_model.c) */
    double hop = (double)x->inst->nccl.hop_ns;
    if ((kind == CORE_STEP_RECV_REDUCE && bw > 0 && count > 0) || hop > 0) {
        double ns = hop;
        if (kind == CORE_STEP_RECV_REDUCE && bw > 0)
            ns += (double)(count * x->esize) * 1e9 / bw;
        uint64_t t = x->w->now + (uint64_t)(ns + 0.5);
        if (t > x->w->now &&
            sim_push(x->w, t, SIM_EV_STEP_DONE, step, x) == HERD_OK)
            return;
    }
    complete(x, step);
}

static void send_failed(sim_exec_t *x, uint32_t step, sim_flow_t *f,
                        herd_status_t st)
{
    x->inst->inflight--;
    free(f->payload);
    sim_flow_put(x->w, f);
    x->err = st == HERD_ERR_NO_MEMORY ? st : HERD_ERR_INTERNAL;
    complete(x, step);
}

/* The network connection of a send connection, made on its first send
 * (when the network model would have made it anyway). */
static herd_status_t net_conn(sim_exec_t *x, sim_xconn_t *c)
{
    if (c->net != XS_NONE)
        return HERD_OK;
    return sim_net_conn(x->w->net, x->world_rank,
                        sim_inst_world_rank(x->inst, c->peer), (int)c->channel,
                        &c->net);
}

/* `k`: the send's index on its connection. */
static void start_send(sim_exec_t *x, uint32_t step, sim_xconn_t *c, uint32_t k)
{
    sim_world_t *w = x->w;
    uint64_t count = xs_count(x, step);
    sim_flow_t *f = sim_flow_get(w);
    if (!f) {
        x->err = HERD_ERR_NO_MEMORY;
        complete(x, step);
        return;
    }
    f->is_p2p = 0;
    f->src = x->member;
    f->dst = c->peer;
    f->step = step;
    f->k = k;
    f->channel = (int)c->channel;
    f->sx = x;
    f->inst = x->inst;
    f->payload = NULL;
    if (x->real) {
        const core_step_t *q = &x->s.steps[step];
        uint8_t *src = range(x, q->src_buf, q->src_off, q->count);
        f->payload = malloc(count * x->esize + 1);
        if (src && f->payload)
            memcpy(f->payload, src, count * x->esize);
    }
    x->inst->inflight++;
    if (!c->rconn) {
        int dst = c->peer, src = x->member;
        if (sim_sym_on(x->inst)) /* the peer's representative receives */
            sim_sym_map(w, &dst, &src);
        const sim_exec_t *r = x->inst->execs[dst];
        if (r)
            c->rconn = sim_pcmap_get(&r->rconn, src, (int)c->channel);
    }
    f->rconn = c->rconn;
    /* NCCL model: bytes on the wire under the protocol (LL, LL128) */
    uint64_t bytes = sim_nccl_wire_bytes(&x->inst->nccl, count * x->esize);
    herd_status_t st = net_conn(x, c);
    if (st == HERD_OK)
        st = sim_net_flow_start_on(w->net, w->now, c->net, bytes, f);
    if (st != HERD_OK)
        send_failed(x, step, f, st);
}

/* gloo's ready-to-receive notice: an op preamble of 6 x 8 bytes on the
 * pair's one connection (gloo/transport/tcp). */
#define SIM_RTR_BYTES 48

/* Algorithm "gloo": a started receive tells its sender, on the
 * connection to it, behind the data this member queued there. */
static void send_rtr(sim_exec_t *x, const sim_xconn_t *c)
{
    sim_world_t *w = x->w;
    sim_flow_t *f = sim_flow_get(w);
    if (!f) {
        x->err = HERD_ERR_NO_MEMORY;
        return;
    }
    f->is_p2p = SIM_FLOW_RTR;
    f->src = x->member;
    f->dst = c->peer;
    f->channel = (int)c->channel;
    f->inst = x->inst;
    f->payload = NULL;
    x->inst->inflight++;
    herd_status_t st = sim_net_flow_start(w->net, w->now, x->world_rank,
                                          sim_inst_world_rank(x->inst, c->peer),
                                          (int)c->channel, SIM_RTR_BYTES, f);
    if (st != HERD_OK) {
        x->inst->inflight--;
        f->inst = NULL;
        sim_flow_put(w, f);
        x->err = st;
    }
}

void sim_exec_rtr(sim_world_t *w, sim_exec_t *x, int src, int channel)
{
    (void)w;
    for (uint32_t i = 0; i < x->nconns; i++) {
        sim_xconn_t *c = &x->conns[i];
        if (c->peer != src || (int)c->channel != channel || c->n == 0 ||
            xb_kind(*xw(x, x->list[c->off])) != CORE_STEP_SEND)
            continue;
        uint32_t k = c->rtr++;
        if (k >= c->n)
            break; /* more receives than sends: the schedules disagree */
        if (k < c->cur && !frozen(x)) /* the send started and waits */
            start_send(x, x->list[c->off + k], c, k);
        return;
    }
    x->err = HERD_ERR_INTERNAL;
}

static void start(sim_exec_t *x, uint32_t step)
{
    if (frozen(x))
        return;
    const sim_xstep_t *xs = &x->xs[step];
    uint8_t *wt = xw(x, step);
    xb_set_state(wt, XS_STARTED);
    if (x->t_step)
        x->t_step[step] = x->w->now;
    uint32_t kind = xb_kind(*wt), k = 0;
    sim_xconn_t *c = NULL;
    if (xs->conn != XS_NONE) {
        c = &x->conns[xs->conn];
        k = c->cur++; /* steps of a connection start in order */
        if (xs->next != XS_NONE)
            release(x, xs->next);
    }
    switch (kind) {
    case CORE_STEP_SEND:
        /* gloo: the send moves when the receiver's notice comes */
        if (!x->rdv || k < c->rtr)
            start_send(x, step, c, k);
        break;
    case CORE_STEP_RECV:
    case CORE_STEP_RECV_REDUCE:
        if (x->rdv)
            send_rtr(x, c);
        if (*wt & XB_ARRIVED)
            recv_ready(x, step);
        break;
    default:
        if (x->real) {
            const core_step_t *p = &x->s.steps[step];
            uint8_t *s = range(x, p->src_buf, p->src_off, p->count);
            uint8_t *d = range(x, p->dst_buf, p->dst_off, p->count);
            if (s && d && s != d)
                memmove(d, s, p->count * x->esize);
        }
        complete(x, step);
    }
}

void sim_exec_start(sim_world_t *w, sim_exec_t *x)
{
    if (x->nsteps == 0) {
        finish(x);
        return;
    }
    /* The work list is a stack: `ready` is in reverse so steps start in
     * schedule order. */
    for (uint32_t i = 0; i < x->nready; i++)
        push_work(w, x, x->ready[i]);
}

void sim_world_drain(sim_world_t *w)
{
    while (w->nwork > 0) {
        w->nwork--;
        start(w->work[w->nwork], w->work_step[w->nwork]);
    }
}

/* The receive step of message k on receive connection c: the cursor's
 * when messages come in order (FIFO connections: always, apart from
 * early arrivals), else from the connection's list. */
static uint32_t recv_step(sim_exec_t *x, sim_xconn_t *c, uint32_t k)
{
    if (k == c->rk && c->rstep != XS_NONE) {
        uint32_t step = c->rstep;
        c->rstep = x->xs[step].next;
        c->rk++;
        return step;
    }
    return x->list[c->off + k];
}

void sim_exec_deliver(sim_world_t *w, sim_exec_t *x, uint32_t rconn, int src,
                      int channel, uint32_t k, void *payload)
{
    uint32_t c = rconn ? rconn : sim_pcmap_get(&x->rconn, src, channel);
    if (!c || k >= x->conns[c - 1].n) {
        x->err = HERD_ERR_INTERNAL; /* sender and receiver disagree */
        free(payload);
        return;
    }
    uint32_t step = recv_step(x, &x->conns[c - 1], k);
    uint8_t *wt = xw(x, step);
    *wt |= XB_ARRIVED;
    if (x->real)
        x->payload[step] = payload;
    else
        free(payload);
    if (xb_state(*wt) == XS_STARTED && !frozen(x))
        recv_ready(x, step);
}
