/* trace/replay.c - replay a trace on any engine through the public API:
 * groups first, then the rank's ops in order, blocking or async, with
 * labels and markers for the timeline. Buffers come from herd_alloc
 * (phantom on sim): one pair for blocking ops and one pair per async id,
 * each sized for the largest op that uses it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/replay.h"

#define RP_ERROR_TEXT 640

typedef struct rp_buf {
    void *send, *recv;
    size_t send_bytes, recv_bytes;
} rp_buf_t;

typedef struct rp_rank {
    const trace_replay_t *rp;
    herd_comm_t *world;
    herd_comm_t **groups; /* [g] for g >= 1; NULL: not a member */
    herd_req_t **reqs;    /* per async id */
    rp_buf_t *bufs;       /* [0]: blocking ops; [1 + async id] */
    int rank;
} rp_rank_t;

herd_status_t trace_replay_check_work(const trace_t *t, int steps, char *err,
                                      size_t errlen)
{
    uint64_t own = 0, with_own = 0;
    for (uint32_t i = 0; i < t->nrank_lists; i++) {
        own += t->rank_lists[i].span.n;
        with_own++;
    }
    uint64_t spmd_ranks = (uint64_t)t->world_size > with_own
                              ? (uint64_t)t->world_size - with_own
                              : 0;
    uint64_t per_step = (uint64_t)t->nspmd * spmd_ranks + own;
    uint64_t n = steps > 0 ? (uint64_t)steps : 1;
    if (per_step == 0 || per_step <= TRACE_REPLAY_MAX_OPS / n)
        return HERD_OK;
    snprintf(err, errlen,
             "workload.steps: %llu pass(es) of a trace of %llu ops over all "
             "ranks ask for %.3g ops; the limit is %.3g (fewer steps, or a "
             "smaller trace)",
             (unsigned long long)n, (unsigned long long)per_step,
             (double)n * (double)per_step, (double)TRACE_REPLAY_MAX_OPS);
    return HERD_ERR_INVALID_ARG;
}

void trace_replay_init(trace_replay_t *r, const trace_t *trace)
{
    memset(r, 0, sizeof(*r));
    r->trace = trace;
    for (int i = 0; i < HERD_COLL_COUNT; i++)
        r->algo[i] = HERD_ALGO_AUTO;
    r->steps = 1;
}

/* Elements each buffer of a collective holds in a group of p, for group
 * rank me. */
static void rp_counts(const trace_t *t, const trace_op_t *op, int p, int me,
                      uint64_t *in, uint64_t *out)
{
    uint64_t c = op->count, pc = c * (uint64_t)p;
    if (op->vcounts != TRACE_NONE) {
        const uint64_t *v = t->vpool + op->vcounts;
        uint64_t sum = 0, row = 0, col = 0;
        for (int q = 0; q < p; q++) {
            sum += v[q];
            if (op->coll == HERD_COLL_ALL_TO_ALL_V) {
                row += v[(uint64_t)me * (uint64_t)p + (uint64_t)q];
                col += v[(uint64_t)q * (uint64_t)p + (uint64_t)me];
            }
        }
        if (op->coll == HERD_COLL_ALL_TO_ALL_V)
            *in = row, *out = col;
        else if (op->coll == HERD_COLL_ALL_GATHER_V)
            *in = v[me], *out = sum;
        else
            *in = sum, *out = v[me];
        return;
    }
    switch (op->coll) {
    case HERD_COLL_ALL_GATHER:
    case HERD_COLL_GATHER:
        *in = c, *out = pc;
        break;
    case HERD_COLL_SCATTER:
    case HERD_COLL_REDUCE_SCATTER:
        *in = pc, *out = c;
        break;
    case HERD_COLL_ALL_TO_ALL:
        *in = pc, *out = pc;
        break;
    default:
        *in = c, *out = c;
    }
}

static herd_comm_t *rp_comm(rp_rank_t *s, const trace_op_t *op)
{
    return op->group ? s->groups[op->group] : s->world;
}

/* Size every buffer for the largest op that uses it. */
static void rp_size(rp_rank_t *s, const trace_op_t *ops, uint32_t n)
{
    const trace_t *t = s->rp->trace;
    for (uint32_t i = 0; i < n; i++) {
        trace_op_t op;
        if (ops[i].kind != TRACE_OP_COLL ||
            !trace_op_for_rank(t, &ops[i], s->rank, &op))
            continue;
        herd_comm_t *c = rp_comm(s, &op);
        if (!c)
            continue;
        uint64_t in, out;
        rp_counts(t, &op, herd_comm_size(c), herd_comm_rank(c), &in, &out);
        size_t es = herd_dtype_size((herd_dtype_t)op.dtype);
        rp_buf_t *b = &s->bufs[op.async == TRACE_NONE ? 0 : 1 + op.async];
        if (in * es > b->send_bytes)
            b->send_bytes = in * es;
        if (out * es > b->recv_bytes)
            b->recv_bytes = out * es;
    }
}

static herd_status_t rp_alloc(rp_rank_t *s)
{
    for (uint32_t i = 0; i <= s->rp->trace->nasync; i++) {
        rp_buf_t *b = &s->bufs[i];
        herd_status_t st = HERD_OK;
        if (b->send_bytes)
            st = herd_alloc(s->world, b->send_bytes, &b->send);
        if (!st && b->recv_bytes)
            st = herd_alloc(s->world, b->recv_bytes, &b->recv);
        if (st)
            return st;
    }
    return HERD_OK;
}

static herd_status_t rp_settings(const trace_replay_t *rp, herd_comm_t *c)
{
    herd_status_t st = HERD_OK;
    for (int i = 0; i < HERD_COLL_COUNT && !st; i++)
        if (rp->algo[i] != HERD_ALGO_AUTO)
            st = herd_comm_set_algo(c, (herd_coll_t)i, rp->algo[i]);
    if (!st && (rp->channels || rp->chunk_bytes))
        st = herd_comm_set_channels(c, rp->channels, rp->chunk_bytes);
    return st;
}

static herd_status_t rp_groups(rp_rank_t *s)
{
    const trace_t *t = s->rp->trace;
    herd_status_t st = rp_settings(s->rp, s->world);
    for (uint32_t g = 1; g <= t->ngroups && !st; g++) {
        trace_span_t span = trace_group(t, g);
        st = herd_new_group(s->world, t->rank_pool + span.off, (int)span.n,
                            &s->groups[g]);
        if (!st && s->groups[g])
            st = rp_settings(s->rp, s->groups[g]);
    }
    return st;
}

/* The *_v kinds: the op's counts as the API takes them (for all_to_all_v
 * this rank's row and column of the split matrix). */
static herd_status_t rp_v_call(const trace_t *t, herd_comm_t *c,
                               const trace_op_t *op, const rp_buf_t *b,
                               herd_req_t **req)
{
    int p = herd_comm_size(c), me = herd_comm_rank(c);
    const uint64_t *v = t->vpool + op->vcounts;
    size_t *s = malloc(2 * (size_t)p * sizeof(*s)), *r = s ? s + p : NULL;
    if (!s)
        return HERD_ERR_NO_MEMORY;
    size_t sn = 0, rn = 0;
    int a2a = op->coll == HERD_COLL_ALL_TO_ALL_V;
    for (int q = 0; q < p; q++) {
        s[q] =
            (size_t)(a2a ? v[(uint64_t)me * (uint64_t)p + (uint64_t)q] : v[q]);
        r[q] = a2a ? (size_t)v[(uint64_t)q * (uint64_t)p + (uint64_t)me] : 0;
        sn += s[q];
        rn += r[q];
    }
    herd_dtype_t dt = (herd_dtype_t)op->dtype;
    herd_status_t st;
    if (op->coll == HERD_COLL_ALL_GATHER_V)
        st = herd_all_gather_v(c, b->send, b->recv, s, dt, req);
    else if (op->coll == HERD_COLL_REDUCE_SCATTER_V)
        st = herd_reduce_scatter_v(c, b->send, b->recv, s, dt,
                                   (herd_op_t)op->redop, req);
    else
        st = herd_all_to_all_v(c, b->send, sn, s, b->recv, rn, r, dt, req);
    free(s);
    return st;
}

static herd_status_t rp_coll_call(herd_comm_t *c, const trace_op_t *op,
                                  const rp_buf_t *b, int peer, herd_req_t **req)
{
    herd_dtype_t dt = (herd_dtype_t)op->dtype;
    herd_op_t rop = (herd_op_t)op->redop;
    size_t n = op->count;
    switch ((herd_coll_t)op->coll) {
    case HERD_COLL_ALL_REDUCE:
        return herd_all_reduce(c, b->send, b->recv, n, dt, rop, req);
    case HERD_COLL_BROADCAST:
        return herd_broadcast(c, b->recv, n, dt, peer, req);
    case HERD_COLL_REDUCE:
        return herd_reduce(c, b->send, b->recv, n, dt, rop, peer, req);
    case HERD_COLL_ALL_GATHER:
        return herd_all_gather(c, b->send, b->recv, n, dt, req);
    case HERD_COLL_GATHER:
        return herd_gather(c, b->send, b->recv, n, dt, peer, req);
    case HERD_COLL_SCATTER:
        return herd_scatter(c, b->send, b->recv, n, dt, peer, req);
    case HERD_COLL_REDUCE_SCATTER:
        return herd_reduce_scatter(c, b->send, b->recv, n, dt, rop, req);
    case HERD_COLL_ALL_TO_ALL:
        return herd_all_to_all(c, b->send, b->recv, n, dt, req);
    case HERD_COLL_BARRIER:
        return herd_barrier(c, req);
    case HERD_COLL_SEND:
        return herd_send(c, b->send, n, dt, peer, op->tag, req);
    case HERD_COLL_RECV:
        return herd_recv(c, b->recv, n, dt, peer, op->tag, req);
    case HERD_COLL_MONITORED_BARRIER: {
        /* blocking, as in torch; an async id waits on nothing */
        if (req)
            *req = NULL;
        return herd_monitored_barrier(c, (double)op->dur_ns * 1e-9, op->tag);
    }
    default:
        return HERD_ERR_INVALID_ARG;
    }
}

static herd_status_t rp_coll(rp_rank_t *s, const trace_op_t *op)
{
    herd_comm_t *c = rp_comm(s, op);
    if (!c)
        return HERD_OK; /* not a member of the op's group */
    const char *label = trace_string(s->rp->trace, op->label);
    herd_status_t st = herd_comm_set_label(c, label);
    herd_algo_t saved = s->rp->algo[op->coll];
    if (!st && op->algo != HERD_ALGO_AUTO)
        st =
            herd_comm_set_algo(c, (herd_coll_t)op->coll, (herd_algo_t)op->algo);
    int async = op->async != TRACE_NONE;
    const rp_buf_t *b = &s->bufs[async ? 1 + op->async : 0];
    int peer = trace_op_peer(op, herd_comm_rank(c), herd_comm_size(c));
    herd_req_t **req = async ? &s->reqs[op->async] : NULL;
    if (!st && op->vcounts != TRACE_NONE)
        st = rp_v_call(s->rp->trace, c, op, b, req);
    else if (!st)
        st = rp_coll_call(c, op, b, peer, req);
    /* a per-op algorithm lasts for that op only */
    if (op->algo != HERD_ALGO_AUTO)
        herd_comm_set_algo(c, (herd_coll_t)op->coll, saved);
    return st;
}

static herd_status_t rp_wait(rp_rank_t *s, uint32_t slot)
{
    herd_req_t *req = s->reqs[slot];
    if (!req)
        return HERD_OK;
    s->reqs[slot] = NULL;
    herd_status_t st = herd_req_wait(req);
    herd_req_free(req);
    return st;
}

static herd_status_t rp_wait_all(rp_rank_t *s)
{
    herd_status_t first = HERD_OK;
    for (uint32_t i = 0; i < s->rp->trace->nasync; i++) {
        herd_status_t st = rp_wait(s, i);
        if (st && !first)
            first = st;
    }
    return first;
}

static herd_status_t rp_op(rp_rank_t *s, const trace_op_t *op)
{
    const char *label = trace_string(s->rp->trace, op->label);
    switch ((trace_op_kind_t)op->kind) {
    case TRACE_OP_COMPUTE:
        return herd_compute(s->world, (double)op->dur_ns * 1e-9, label);
    case TRACE_OP_COLL:
        return rp_coll(s, op);
    case TRACE_OP_WAIT:
        return rp_wait(s, op->async);
    case TRACE_OP_WAIT_ALL:
        return rp_wait_all(s);
    case TRACE_OP_MARK:
        return herd_mark(s->world, label ? label : "mark");
    }
    return HERD_ERR_INVALID_ARG;
}

/* Keep the first failure of this rank for the caller. */
static void rp_note(rp_rank_t *s, uint32_t i, const trace_op_t *op,
                    herd_status_t st)
{
    if (!s->rp->errors || s->rp->errors[s->rank])
        return;
    const char *what = op->kind == TRACE_OP_COLL
                           ? herd_coll_name((herd_coll_t)op->coll)
                       : op->kind == TRACE_OP_COMPUTE ? "compute"
                                                      : "wait";
    const char *msg = herd_last_error(s->world);
    char buf[RP_ERROR_TEXT];
    snprintf(buf, sizeof(buf), "op %u (%s): %s%s%s", i, what,
             herd_status_string(st), *msg ? ": " : "", msg);
    s->rp->errors[s->rank] = strdup(buf);
}

static herd_status_t rp_play(rp_rank_t *s)
{
    const trace_t *t = s->rp->trace;
    const trace_op_t *ops;
    uint32_t n;
    trace_rank_ops(t, s->rank, &ops, &n);
    herd_status_t st = rp_groups(s);
    if (!st) {
        rp_size(s, ops, n);
        st = rp_alloc(s);
    }
    int steps = s->rp->steps > 0 ? s->rp->steps : 1;
    for (int k = 0; k < steps && !st; k++)
        for (uint32_t i = 0; i < n && !st; i++) {
            trace_op_t op;
            if (trace_op_for_rank(t, &ops[i], s->rank, &op))
                st = rp_op(s, &op);
            if (st)
                rp_note(s, i, &op, st);
        }
    herd_status_t st2 = rp_wait_all(s); /* what the trace left running */
    return st ? st : st2;
}

static void rp_release(rp_rank_t *s)
{
    const trace_t *t = s->rp->trace;
    for (uint32_t i = 0; s->reqs && i < t->nasync; i++)
        if (s->reqs[i])
            herd_req_free(s->reqs[i]);
    for (uint32_t i = 0; s->bufs && i <= t->nasync; i++) {
        if (s->bufs[i].send)
            herd_free(s->world, s->bufs[i].send);
        if (s->bufs[i].recv)
            herd_free(s->world, s->bufs[i].recv);
    }
    for (uint32_t g = 1; s->groups && g <= t->ngroups; g++)
        if (s->groups[g])
            herd_comm_destroy(s->groups[g]);
    free(s->bufs);
    free(s->reqs);
    free(s->groups);
}

int trace_replay_main(herd_comm_t *world, void *arg)
{
    const trace_replay_t *rp = arg;
    const trace_t *t = rp->trace;
    if (herd_comm_size(world) != t->world_size)
        return 2;
    rp_rank_t s = {.rp = rp, .world = world, .rank = herd_comm_rank(world)};
    s.groups = calloc(t->ngroups + 1, sizeof(*s.groups));
    s.reqs = calloc(t->nasync + 1, sizeof(*s.reqs));
    s.bufs = calloc(t->nasync + 1, sizeof(*s.bufs));
    herd_status_t st =
        s.groups && s.reqs && s.bufs ? rp_play(&s) : HERD_ERR_NO_MEMORY;
    rp_release(&s);
    return st ? 1 : 0;
}
