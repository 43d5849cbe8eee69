/* real/tcp/post.c - turns one collective or point-to-point call into an
 * executing operation: picks the algorithm (the call's setting or
 * core_sched_pick by size), lowers the core/ schedule for this rank,
 * prepares buffers and the per-step state, posts every receive, then starts
 * the steps that depend on nothing. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched_run.h"
#include "real/tcp/tcp.h"

static herd_status_t lower_p2p(tcp_op_t *op, const core_coll_args_t *a)
{
    core_sched_t *s = &op->sched;
    s->desc.coll = a->coll;
    s->desc.algo = HERD_ALGO_DIRECT;
    s->desc.nranks = op->comm->base.size;
    s->desc.rank = op->comm->base.rank;
    s->desc.root = a->root;
    s->desc.count = a->count;
    s->desc.elem_size = op->esize;
    s->desc.channels = 1;
    int send = a->coll == HERD_COLL_SEND;
    int64_t r = core_sched_add(s, send ? CORE_STEP_SEND : CORE_STEP_RECV,
                               a->root, 0, send ? CORE_BUF_IN : CORE_BUF_NONE,
                               0, send ? CORE_BUF_NONE : CORE_BUF_OUT, 0,
                               a->count, NULL, 0);
    return r < 0 ? (herd_status_t)r : HERD_OK;
}

static herd_status_t lower_coll(tcp_op_t *op, const core_coll_args_t *a)
{
    herd_comm_t *c = &op->comm->base;
    herd_algo_t algo = a->algo;
    if (algo == HERD_ALGO_AUTO || core_sched_is_library(algo))
        algo = core_sched_pick(a->coll, c->size, a->count * op->esize);
    return core_sched_lower_call(c, a, algo, op->esize, op->w->local_size,
                                 &op->sched);
}

/* Carves `n` elements of `size` bytes from the arena at *off. */
static void *carve(char *arena, size_t *off, size_t n, size_t size)
{
    void *p = arena + *off;
    *off += (n * size + 7) & ~(size_t)7;
    return p;
}

/* Every per-step array in one zeroed allocation: a small collective is
 * posted thousands of times a second, and a malloc per array showed. */
static herd_status_t alloc_arrays(tcp_op_t *op)
{
    uint32_t n = op->sched.nsteps;
    size_t m = n ? n : 1, nd = op->sched.ndeps ? op->sched.ndeps : 1;
    size_t total = m * (sizeof(tcp_tx_t) + sizeof(tcp_rx_t) +
                        sizeof(tcp_msg_t *) + 5 * sizeof(uint32_t) + 3) +
                   (nd + 1) * sizeof(uint32_t) + 12 * 8;
    char *a = calloc(1, total);
    if (!a)
        return HERD_ERR_NO_MEMORY;
    size_t off = 0;
    op->arena = a;
    op->tx = carve(a, &off, m, sizeof(tcp_tx_t));
    op->rx = carve(a, &off, m, sizeof(tcp_rx_t));
    op->staged = carve(a, &off, m, sizeof(tcp_msg_t *));
    op->ndeps_left = carve(a, &off, m, sizeof(uint32_t));
    op->dep_off = carve(a, &off, m + 1, sizeof(uint32_t));
    op->dependents = carve(a, &off, nd, sizeof(uint32_t));
    op->prev_send = carve(a, &off, m, sizeof(int32_t));
    op->next_send = carve(a, &off, m, sizeof(int32_t));
    op->ready_q = carve(a, &off, m, sizeof(uint32_t));
    op->state = carve(a, &off, m, 1);
    op->enqueued = carve(a, &off, m, 1);
    op->arrived = carve(a, &off, m, 1);
    assert(off <= total);
    return HERD_OK;
}

/* Reverse dependencies (CSR) and the per-(peer, channel) send order. */
static herd_status_t index_steps(tcp_op_t *op)
{
    const core_sched_t *s = &op->sched;
    for (uint32_t i = 0; i < s->nsteps; i++) {
        op->ndeps_left[i] = s->steps[i].ndeps;
        for (uint32_t j = 0; j < s->steps[i].ndeps; j++)
            op->dep_off[s->deps[s->steps[i].dep_off + j] + 1]++;
    }
    for (uint32_t i = 0; i < s->nsteps; i++)
        op->dep_off[i + 1] += op->dep_off[i];
    uint32_t *fill = op->ready_q; /* unused until the op starts */
    for (uint32_t i = 0; i < s->nsteps; i++)
        for (uint32_t j = 0; j < s->steps[i].ndeps; j++) {
            uint32_t d = s->deps[s->steps[i].dep_off + j];
            op->dependents[op->dep_off[d] + fill[d]++] = i;
        }
    memset(fill, 0, s->nsteps * sizeof(uint32_t));
    for (uint32_t i = 0; i < s->nsteps; i++) {
        op->prev_send[i] = op->next_send[i] = -1;
        if (s->steps[i].kind != CORE_STEP_SEND)
            continue;
        for (int64_t j = (int64_t)i - 1; j >= 0; j--) {
            const core_step_t *o = &s->steps[j];
            if (o->kind == CORE_STEP_SEND && o->peer == s->steps[i].peer &&
                o->channel == s->steps[i].channel) {
                op->prev_send[i] = (int32_t)j;
                op->next_send[j] = (int32_t)i;
                break;
            }
        }
    }
    return HERD_OK;
}

static int overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return a && b && alen && blen && a < b + blen && b < a + alen;
}

static herd_status_t setup_buffers(tcp_op_t *op, const core_coll_args_t *a)
{
    int p = op->comm->base.size;
    size_t sb = core_args_send_count(a, p) * op->esize;
    size_t rb = core_args_recv_count(a, p) * op->esize;
    op->buf[CORE_BUF_IN] = (char *)a->sendbuf;
    op->buf[CORE_BUF_OUT] = a->recvbuf;
    int alias_ok =
        (a->coll == HERD_COLL_ALL_REDUCE || a->coll == HERD_COLL_REDUCE) &&
        a->sendbuf == a->recvbuf;
    if (a->coll == HERD_COLL_BROADCAST)
        op->buf[CORE_BUF_IN] = a->recvbuf;
    else if (!alias_ok && overlaps(a->sendbuf, sb, a->recvbuf, rb)) {
        /* In place: these schedules may write OUT before they have read
         * all of IN (all_reduce and reduce are verified safe aliased by
         * core_sched_verify), so IN gets a private copy. */
        op->in_copy = malloc(sb);
        if (!op->in_copy)
            return HERD_ERR_NO_MEMORY;
        memcpy(op->in_copy, a->sendbuf, sb);
        op->buf[CORE_BUF_IN] = op->in_copy;
    }
    if (op->sched.scratch_count) {
        op->scratch_own = malloc(op->sched.scratch_count * op->esize);
        if (!op->scratch_own)
            return HERD_ERR_NO_MEMORY;
        op->buf[CORE_BUF_SCRATCH] = op->scratch_own;
    }
    return HERD_OK;
}

static void post_receives(tcp_op_t *op)
{
    const core_sched_t *s = &op->sched;
    for (uint32_t i = 0; i < s->nsteps && !op->done; i++) {
        const core_step_t *st = &s->steps[i];
        if (st->kind != CORE_STEP_RECV && st->kind != CORE_STEP_RECV_REDUCE)
            continue;
        tcp_rx_t *rx = &op->rx[i];
        rx->key = op->key_base;
        rx->key.channel = st->channel;
        rx->op = op;
        rx->step = i;
        tcp_peer_t *p = &op->w->peers[tcp_group_world_rank(op->comm, st->peer)];
        tcp_rx_post(op->w, p, rx);
        if (!op->staged[i] && p->in_fd == -2) {
            char msg[128];
            snprintf(msg, sizeof(msg), "rank %d has %s", p->world_rank,
                     p->state == TCP_PEER_BYE ? "exited" : "failed");
            tcp_op_fail(op,
                        p->state == TCP_PEER_BYE ? HERD_ERR_RANK_EXITED
                                                 : HERD_ERR_PEER_FAILED,
                        msg);
        }
    }
}

static void op_link(tcp_op_t *op)
{
    tcp_world_t *w = op->w;
    op->next_active = w->ops_head;
    if (w->ops_head)
        w->ops_head->prev_active = op;
    w->ops_head = op;
}

static herd_status_t op_prepare(tcp_op_t *op, const core_coll_args_t *a)
{
    int p2p = a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV;
    herd_status_t st = p2p ? lower_p2p(op, a) : lower_coll(op, a);
    if (st == HERD_OK)
        st = alloc_arrays(op);
    if (st == HERD_OK)
        st = index_steps(op);
    if (st == HERD_OK)
        st = setup_buffers(op, a);
    return st;
}

herd_status_t tcp_op_post(tcp_comm_t *c, const core_coll_args_t *a,
                          tcp_op_t **out)
{
    tcp_op_t *op = calloc(1, sizeof(*op));
    if (!op)
        return HERD_ERR_NO_MEMORY;
    int p2p = a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV;
    op->req.ops = &tcp_engine_ops;
    op->req.comm = &c->base;
    op->comm = c;
    op->w = c->w;
    op->args = *a;
    op->esize = herd_dtype_size(a->dtype);
    op->t_post = tcp_now_ns();
    if (a->label)
        snprintf(op->label, sizeof(op->label), "%s", a->label);
    op->key_base = (tcp_key_t){.type = p2p ? TCP_MSG_P2P : TCP_MSG_COLL,
                               .group = c->base.group_id,
                               .tag = p2p ? a->tag : 0,
                               .seq = p2p ? 0 : a->seq};
    herd_status_t st = op_prepare(op, a);
    if (st != HERD_OK) {
        tcp_op_free(op);
        return st == HERD_ERR_NO_MEMORY
                   ? core_comm_error(&c->base, st, "%s: out of memory",
                                     herd_coll_name(a->coll))
                   : st;
    }
    if (op->w->steplog && !p2p && op->sched.nsteps) /* no room: none */
        op->t_step = calloc(op->sched.nsteps, sizeof(*op->t_step));
    op->fr_id = core_flight_add(&op->w->flight, &c->base, a, op->t_post);
    op_link(op);
    if (op->w->failed_rank >= 0 || op->w->fail_status != HERD_OK)
        tcp_op_fail(op, op->w->fail_status, op->w->fail_msg);
    post_receives(op);
    for (uint32_t i = 0; i < op->sched.nsteps && !op->done; i++)
        if (op->ndeps_left[i] == 0)
            op->ready_q[op->rq_tail++] = i;
    tcp_op_kick(op);
    *out = op;
    return HERD_OK;
}
