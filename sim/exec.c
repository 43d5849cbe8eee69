/* sim/exec.c - executes one member's schedule of a collective in virtual
 * time, following core/sched.h's rules: a step starts when its
 * dependencies are done and the previous step on its connection (peer,
 * channel, direction) has started; the k-th send to a peer on a channel
 * matches that peer's k-th receive from us on that channel. A SEND starts
 * a flow on the network model and completes when its last byte left; a
 * RECV completes at max(its own readiness, delivery), a RECV_REDUCE one
 * local reduction later (bytes / cluster.reduce_bw). Steps whose
 * dependencies complete at the same instant are started from a work list,
 * never by recursion. With real buffers the data moves and reduces too. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/reduce.h"
#include "sim/sim.h"

#define XS_NONE UINT32_MAX

enum { XS_IDLE, XS_STARTED, XS_DONE };

/* Everything the executor touches per step, in one 32-byte record: the
 * schedule's own steps (48 bytes, plus dependency lists) are dropped
 * after conversion unless real buffers need their offsets. */
typedef struct sim_xstep {
    uint64_t count; /* elements */
    int32_t peer;
    uint32_t wait;      /* deps not done + connection predecessor unstarted */
    uint32_t conn_next; /* next step on the same connection */
    uint32_t k;         /* index of this step on its connection */
    uint32_t rdep_off;  /* dependents: rdeps[rdep_off .. next's rdep_off) */
    uint16_t channel;
    uint8_t kind;
    uint8_t flags; /* XS_STATE_MASK: state; XS_ARRIVED */
} sim_xstep_t;

#define XS_STATE_MASK 3
#define SIM_SMALL_PEERS 4
#define SIM_SMALL_CH 64
#define XS_ARRIVED 4

/* (peer, channel) -> nonzero uint32: a direct table for the few peers
 * most schedules talk to, a hash map beyond them. */
typedef struct sim_pcmap {
    int n; /* peers in the table; -1: every entry is in h */
    int32_t peer[SIM_SMALL_PEERS];
    uint32_t v[SIM_SMALL_PEERS][SIM_SMALL_CH];
    sim_htab_t h;
} sim_pcmap_t;

struct sim_exec {
    sim_world_t *w;
    sim_inst_t *inst;
    int member;
    sim_req_t *req;
    sim_rank_t *rank;
    core_sched_t s; /* kept with real buffers only */
    uint32_t nsteps;
    sim_xstep_t *xs; /* nsteps + 1 (sentinel rdep_off) */
    uint32_t *rdeps;
    sim_pcmap_t rconn;           /* (peer, channel) -> receive conn + 1 */
    uint32_t *crecv_off, *crecv; /* per receive conn: its steps in order */
    uint32_t nconns;
    uint32_t *ccur; /* per receive conn: the step expected next */
    uint32_t ccur_cap;
    uint32_t nleft;
    size_t esize;
    int real;
    uint8_t *buf[3];
    uint64_t buflen[3];
    void **payload;
    herd_status_t err;
};

static int xs_state(const sim_xstep_t *x)
{
    return x->flags & XS_STATE_MASK;
}

static void xs_set_state(sim_xstep_t *x, int st)
{
    x->flags = (uint8_t)((x->flags & ~XS_STATE_MASK) | st);
}

/* Large per-exec arrays live in huge pages where the kernel allows it: a
 * big run touches them in many places at once and TLB misses dominate. */
static void hint_huge(void *p, size_t n)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(huge - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

static void *big_calloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p && n * size >= ((size_t)4 << 20))
        hint_huge(p, n * size);
    return p;
}

sim_req_t *sim_exec_req(const sim_exec_t *x)
{
    return x->req;
}

static uint64_t conn_key(int channel, int peer)
{
    return ((uint64_t)(uint32_t)channel << 32) | (uint32_t)peer;
}

void sim_exec_destroy(sim_exec_t *x)
{
    if (!x)
        return;
    if (x->payload) {
        for (uint32_t i = 0; i < x->nsteps; i++)
            free(x->payload[i]);
        free(x->payload);
    }
    core_sched_fini(&x->s);
    free(x->xs);
    free(x->rdeps);
    sim_htab_fini(&x->rconn.h);
    free(x->crecv_off);
    free(x->crecv);
    free(x->ccur);
    free(x->buf[CORE_BUF_SCRATCH]);
    free(x);
}

/* Copies what the executor needs from the schedule and inverts the
 * dependency lists (who waits for each step, as CSR offsets). */
static herd_status_t build_steps(sim_exec_t *x, const core_sched_t *s)
{
    x->xs = big_calloc((size_t)s->nsteps + 1, sizeof(*x->xs));
    x->rdeps = big_calloc((size_t)s->ndeps + 1, sizeof(uint32_t));
    if (!x->xs || !x->rdeps)
        return HERD_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < s->nsteps; i++) {
        const core_step_t *st = &s->steps[i];
        sim_xstep_t *xs = &x->xs[i];
        xs->count = st->count;
        xs->peer = st->peer;
        xs->channel = st->channel;
        xs->kind = st->kind;
        xs->wait += st->ndeps;
        for (uint32_t j = 0; j < st->ndeps; j++)
            x->xs[s->deps[st->dep_off + j] + 1].rdep_off++;
    }
    for (uint32_t i = 0; i < s->nsteps; i++)
        x->xs[i + 1].rdep_off += x->xs[i].rdep_off;
    /* fill using each target's running count in `k` (reset below) */
    for (uint32_t i = 0; i < s->nsteps; i++) {
        const core_step_t *st = &s->steps[i];
        for (uint32_t j = 0; j < st->ndeps; j++) {
            sim_xstep_t *d = &x->xs[s->deps[st->dep_off + j]];
            x->rdeps[d->rdep_off + d->k++] = i;
        }
    }
    for (uint32_t i = 0; i < s->nsteps; i++)
        x->xs[i].k = 0;
    return HERD_OK;
}

static uint32_t pcmap_get(const sim_pcmap_t *m, int peer, int channel)
{
    if (m->n < 0)
        return (uint32_t)(uintptr_t)sim_htab_get(&m->h,
                                                 conn_key(channel, peer));
    if ((unsigned)channel >= SIM_SMALL_CH)
        return 0;
    for (int i = 0; i < m->n; i++)
        if (m->peer[i] == peer)
            return m->v[i][channel];
    return 0;
}

static herd_status_t pcmap_spill(sim_pcmap_t *m)
{
    for (int i = 0; i < m->n; i++)
        for (int c = 0; c < SIM_SMALL_CH; c++)
            if (m->v[i][c] &&
                sim_htab_put(&m->h, conn_key(c, m->peer[i]),
                             (void *)(uintptr_t)m->v[i][c]) != HERD_OK)
                return HERD_ERR_NO_MEMORY;
    m->n = -1;
    return HERD_OK;
}

static herd_status_t pcmap_put(sim_pcmap_t *m, int peer, int channel,
                               uint32_t v)
{
    if (m->n >= 0 && (unsigned)channel < SIM_SMALL_CH) {
        int i = 0;
        while (i < m->n && m->peer[i] != peer)
            i++;
        if (i < m->n || m->n < SIM_SMALL_PEERS) {
            if (i == m->n)
                m->peer[m->n++] = peer;
            m->v[i][channel] = v;
            return HERD_OK;
        }
    }
    if (m->n >= 0 && pcmap_spill(m) != HERD_OK)
        return HERD_ERR_NO_MEMORY;
    return sim_htab_put(&m->h, conn_key(channel, peer), (void *)(uintptr_t)v);
}

/* A new receive connection whose first step is `first`. */
static herd_status_t new_recv_conn(sim_exec_t *x, const sim_xstep_t *p,
                                   uint32_t first)
{
    if (x->nconns == x->ccur_cap) {
        uint32_t cap = x->ccur_cap ? 2 * x->ccur_cap : 16;
        uint32_t *v = realloc(x->ccur, (size_t)cap * sizeof(*v));
        if (!v)
            return HERD_ERR_NO_MEMORY;
        x->ccur = v;
        x->ccur_cap = cap;
    }
    x->ccur[x->nconns++] = first;
    return pcmap_put(&x->rconn, p->peer, p->channel, x->nconns);
}

/* Chains each connection's steps (conn_next, k) and numbers the receive
 * connections for delivery lookups. */
static herd_status_t build_conns(sim_exec_t *x)
{
    sim_pcmap_t *last = calloc(2, sizeof(*last)); /* send, receive */
    if (!last)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = HERD_OK;
    for (uint32_t i = 0; i < x->nsteps && st == HERD_OK; i++) {
        sim_xstep_t *p = &x->xs[i];
        p->conn_next = XS_NONE;
        if (p->kind == CORE_STEP_COPY)
            continue;
        sim_pcmap_t *m = &last[p->kind != CORE_STEP_SEND];
        uint32_t prev = pcmap_get(m, p->peer, p->channel);
        if (prev) {
            x->xs[prev - 1].conn_next = i;
            p->wait++;
            p->k = x->xs[prev - 1].k + 1;
        } else if (p->kind != CORE_STEP_SEND) {
            st = new_recv_conn(x, p, i);
        }
        if (st == HERD_OK)
            st = pcmap_put(m, p->peer, p->channel, i + 1);
    }
    sim_htab_fini(&last[0].h);
    sim_htab_fini(&last[1].h);
    free(last);
    return st;
}

/* Receive steps of each connection in order (CSR), for deliveries that
 * arrive out of order. */
static herd_status_t build_recv_index(sim_exec_t *x)
{
    x->crecv_off = calloc((size_t)x->nconns + 1, sizeof(uint32_t));
    x->crecv = big_calloc((size_t)x->nsteps + 1, sizeof(uint32_t));
    if (!x->crecv_off || !x->crecv)
        return HERD_ERR_NO_MEMORY;
    uint32_t j = 0;
    for (uint32_t c = 0; c < x->nconns; c++) {
        for (uint32_t s = x->ccur[c]; s != XS_NONE; s = x->xs[s].conn_next)
            x->crecv[j++] = s;
        x->crecv_off[c + 1] = j;
    }
    return HERD_OK;
}

static herd_status_t setup_buffers(sim_exec_t *x, const sim_req_t *req)
{
    const core_coll_args_t *a = &req->args;
    int p = x->inst->p;
    x->buf[CORE_BUF_IN] = (uint8_t *)(uintptr_t)a->sendbuf;
    x->buf[CORE_BUF_OUT] = a->recvbuf;
    x->buflen[CORE_BUF_IN] =
        a->sendbuf ? core_coll_send_count(a->coll, a->count, p) : 0;
    x->buflen[CORE_BUF_OUT] =
        a->recvbuf ? core_coll_recv_count(a->coll, a->count, p) : 0;
    x->buflen[CORE_BUF_SCRATCH] = x->s.scratch_count; /* real only */
    if (!x->real)
        return HERD_OK;
    if (x->s.scratch_count) {
        x->buf[CORE_BUF_SCRATCH] = calloc(x->s.scratch_count, x->esize);
        if (!x->buf[CORE_BUF_SCRATCH])
            return HERD_ERR_NO_MEMORY;
    }
    x->payload = calloc((size_t)x->nsteps + 1, sizeof(void *));
    return x->payload ? HERD_OK : HERD_ERR_NO_MEMORY;
}

herd_status_t sim_exec_create(sim_world_t *w, sim_inst_t *inst, int member,
                              sim_req_t *req, core_sched_t *sched,
                              sim_exec_t **out)
{
    sim_exec_t *x = calloc(1, sizeof(*x));
    if (!x)
        return HERD_ERR_NO_MEMORY;
    x->w = w;
    x->inst = inst;
    x->member = member;
    x->req = req;
    x->rank = &w->ranks[sim_inst_world_rank(inst, member)];
    x->esize = herd_dtype_size(inst->args.dtype);
    x->real = w->opts.real_buffers != 0;
    x->nsteps = x->nleft = sched->nsteps;
    herd_status_t st = build_steps(x, sched);
    if (x->real) {
        x->s = *sched; /* taken over: offsets and buffers */
        memset(sched, 0, sizeof(*sched));
    } else {
        core_sched_fini(sched);
    }
    if (st == HERD_OK)
        st = build_conns(x);
    if (st == HERD_OK)
        st = build_recv_index(x);
    if (st == HERD_OK)
        st = setup_buffers(x, req);
    if (st != HERD_OK) {
        sim_exec_destroy(x);
        return st;
    }
    *out = x;
    return HERD_OK;
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
    w->work[w->nwork] = x;
    w->work_step[w->nwork++] = step;
}

static void release(sim_exec_t *x, uint32_t step)
{
    if (--x->xs[step].wait == 0)
        push_work(x->w, x, step);
}

static int frozen(const sim_exec_t *x)
{
    return x->rank->state == SIM_RANK_DEAD ||
           x->inst->mismatch != SIM_DIAG_NONE;
}

static void finish(sim_exec_t *x)
{
    const core_coll_args_t *a = &x->req->args;
    if (x->real && a->op == HERD_AVG && x->err == HERD_OK &&
        (a->coll == HERD_COLL_ALL_REDUCE || a->coll == HERD_COLL_REDUCE ||
         a->coll == HERD_COLL_REDUCE_SCATTER) &&
        (a->coll != HERD_COLL_REDUCE || x->member == a->root) &&
        x->buf[CORE_BUF_OUT])
        core_reduce_avg_finish(x->buf[CORE_BUF_OUT], a->count, a->dtype,
                               x->inst->p);
    sim_inst_member_done(x->w, x->inst, x->member, x->err);
}

static void complete(sim_exec_t *x, uint32_t step)
{
    if (x->rank->state == SIM_RANK_DEAD)
        return;
    xs_set_state(&x->xs[step], XS_DONE);
    for (uint32_t j = x->xs[step].rdep_off; j < x->xs[step + 1].rdep_off; j++)
        release(x, x->rdeps[j]);
    if (--x->nleft == 0)
        finish(x); /* frees x */
}

void sim_exec_step_done(sim_world_t *w, sim_exec_t *x, uint32_t step)
{
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
    const sim_xstep_t *p = &x->xs[step];
    if (x->real)
        apply_recv(x, step);
    double bw = x->w->opts.cluster.reduce_bw;
    /* NCCL model: the protocol's latency per hop (0 for other algorithms;
     * sim/nccl_model.c) */
    double hop = (double)x->inst->nccl.hop_ns;
    if ((p->kind == CORE_STEP_RECV_REDUCE && bw > 0 && p->count > 0) ||
        hop > 0) {
        double ns = hop;
        if (p->kind == CORE_STEP_RECV_REDUCE && bw > 0)
            ns += (double)(p->count * x->esize) * 1e9 / bw;
        uint64_t t = x->w->now + (uint64_t)(ns + 0.5);
        if (t > x->w->now &&
            sim_push(x->w, t, SIM_EV_STEP_DONE, step, x) == HERD_OK)
            return;
    }
    complete(x, step);
}

static void start_send(sim_exec_t *x, uint32_t step)
{
    sim_world_t *w = x->w;
    const sim_xstep_t *p = &x->xs[step];
    sim_flow_t *f = sim_flow_get(w);
    if (!f) {
        x->err = HERD_ERR_NO_MEMORY;
        complete(x, step);
        return;
    }
    f->is_p2p = 0;
    f->src = x->member;
    f->dst = p->peer;
    f->step = step;
    f->k = p->k;
    f->channel = p->channel;
    f->sx = x;
    f->inst = x->inst;
    f->payload = NULL;
    if (x->real) {
        const core_step_t *q = &x->s.steps[step];
        uint8_t *src = range(x, q->src_buf, q->src_off, q->count);
        f->payload = malloc(p->count * x->esize + 1);
        if (src && f->payload)
            memcpy(f->payload, src, p->count * x->esize);
    }
    x->inst->inflight++;
    int to = sim_inst_world_rank(x->inst, p->peer);
    /* NCCL model: bytes on the wire under the protocol (LL, LL128) */
    uint64_t bytes = sim_nccl_wire_bytes(&x->inst->nccl, p->count * x->esize);
    if (sim_net_flow_start(w->net, w->now, x->rank->id, to, p->channel, bytes,
                           f) != HERD_OK) {
        x->inst->inflight--;
        free(f->payload);
        sim_flow_put(w, f);
        x->err = HERD_ERR_INTERNAL;
        complete(x, step);
    }
}

static void start(sim_exec_t *x, uint32_t step)
{
    if (frozen(x))
        return;
    sim_xstep_t *xs = &x->xs[step];
    xs_set_state(xs, XS_STARTED);
    if (xs->conn_next != XS_NONE)
        release(x, xs->conn_next);
    switch (xs->kind) {
    case CORE_STEP_SEND:
        start_send(x, step);
        break;
    case CORE_STEP_RECV:
    case CORE_STEP_RECV_REDUCE:
        if (xs->flags & XS_ARRIVED)
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
    /* The work list is a stack: push in reverse so steps start in
     * schedule order. */
    for (uint32_t i = x->nsteps; i-- > 0;)
        if (x->xs[i].wait == 0)
            push_work(w, x, i);
}

void sim_world_drain(sim_world_t *w)
{
    while (w->nwork > 0) {
        w->nwork--;
        start(w->work[w->nwork], w->work_step[w->nwork]);
    }
}

/* The receive step of the k-th message on connection c. Messages on a
 * connection normally arrive in order, so a cursor finds it without the
 * index; the index handles any other order. */
static uint32_t recv_step(sim_exec_t *x, uint32_t c, uint32_t k)
{
    uint32_t cur = x->ccur[c - 1];
    if (cur != XS_NONE && x->xs[cur].k == k) {
        uint32_t nx = x->xs[cur].conn_next;
        while (nx != XS_NONE && (x->xs[nx].flags & XS_ARRIVED))
            nx = x->xs[nx].conn_next;
        x->ccur[c - 1] = nx;
        return cur;
    }
    return x->crecv[x->crecv_off[c - 1] + k];
}

void sim_exec_deliver(sim_world_t *w, sim_exec_t *x, int src, int channel,
                      uint32_t k, void *payload)
{
    uint32_t c = pcmap_get(&x->rconn, src, channel);
    if (!c || k >= x->crecv_off[c] - x->crecv_off[c - 1]) {
        x->err = HERD_ERR_INTERNAL; /* sender and receiver disagree */
        free(payload);
        return;
    }
    uint32_t step = recv_step(x, c, k);
    x->xs[step].flags |= XS_ARRIVED;
    if (x->real)
        x->payload[step] = payload;
    else
        free(payload);
    if (xs_state(&x->xs[step]) == XS_STARTED && !frozen(x))
        recv_ready(x, step);
}
