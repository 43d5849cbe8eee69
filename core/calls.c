/* core/calls.c - calls made of several ops under one request:
 * batch_isend_irecv (a group of sends and receives) and the coalesced
 * collectives (several tensors in one call).
 *
 * Every op is checked and numbered as if called alone (core_coll_prepare),
 * so the timeline, the flight record and the simulator see the member
 * ops. An engine with post_group (nccl: ncclGroupStart/End) posts them as
 * one group with one request; on the others (sim, tcp, mpi) posting never
 * blocks, so the ops are posted one by one and a "multi" request joins
 * them: it is done when all are, with the first failure's status. Because
 * nothing waits between the posts, sends listed before receives on every
 * rank cannot deadlock. */
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

typedef struct core_multi {
    herd_req_t base; /* base.ops == &core_multi_req_ops */
    herd_req_t **subs;
    int n;
    int done;
    herd_status_t status;
} core_multi_t;

static herd_status_t multi_wait(herd_req_t *req)
{
    core_multi_t *m = (core_multi_t *)req;
    for (int i = 0; i < m->n; i++) {
        if (!m->subs[i])
            continue;
        herd_status_t st = m->subs[i]->ops->req_wait(m->subs[i]);
        m->subs[i]->ops->req_free(m->subs[i]);
        m->subs[i] = NULL;
        if (st != HERD_OK && m->status == HERD_OK)
            m->status = st;
    }
    m->done = 1;
    return m->status;
}

static herd_status_t multi_test(herd_req_t *req, int *done)
{
    core_multi_t *m = (core_multi_t *)req;
    int all = 1;
    for (int i = 0; i < m->n; i++) {
        if (!m->subs[i])
            continue;
        int d = 0;
        herd_status_t st = m->subs[i]->ops->req_test(m->subs[i], &d);
        if (!d) {
            all = 0;
            continue;
        }
        m->subs[i]->ops->req_free(m->subs[i]);
        m->subs[i] = NULL;
        if (st != HERD_OK && m->status == HERD_OK)
            m->status = st;
    }
    m->done = all;
    *done = all;
    return all ? m->status : HERD_OK;
}

static void multi_free(herd_req_t *req)
{
    core_multi_t *m = (core_multi_t *)req;
    for (int i = 0; i < m->n; i++)
        if (m->subs[i])
            m->subs[i]->ops->req_free(m->subs[i]);
    free(m->subs);
    free(m);
}

const herd_engine_ops_t core_multi_req_ops = {
    .name = "multi",
    .req_wait = multi_wait,
    .req_test = multi_test,
    .req_free = multi_free,
};

/* Compute until every member is done: computing until each in turn, with
 * what is left of the time, ends exactly when the last one completes. */
herd_status_t core_multi_compute_until(herd_comm_t *c, double seconds,
                                       herd_req_t *req, const char *label,
                                       double *done_out)
{
    core_multi_t *m = (core_multi_t *)req;
    double left = seconds;
    for (int i = 0; i < m->n && left > 0; i++) {
        if (!m->subs[i])
            continue;
        double d = 0;
        herd_status_t st = herd_compute_until(c, left, m->subs[i], label, &d);
        if (st != HERD_OK)
            return st;
        left -= d;
    }
    if (left < 0)
        left = 0;
    *done_out = seconds - left;
    return HERD_OK;
}

/* Post n prepared ops: as one engine group, or one by one joined. */
static herd_status_t post_all(herd_comm_t *c, core_coll_args_t *ops, int n,
                              herd_req_t **req_out)
{
    herd_status_t st;
    herd_req_t *req = NULL;
    if (c->ops->post_group) {
        st = c->ops->post_group(c, ops, n, &req);
    } else {
        core_multi_t *m = calloc(1, sizeof(*m));
        herd_req_t **subs = calloc((size_t)(n > 0 ? n : 1), sizeof(*subs));
        if (!m || !subs) {
            free(m);
            free(subs);
            return core_comm_error(c, HERD_ERR_NO_MEMORY, "out of memory");
        }
        m->base.ops = &core_multi_req_ops;
        m->base.comm = c;
        m->subs = subs;
        m->n = n;
        st = HERD_OK;
        for (int i = 0; i < n && st == HERD_OK; i++)
            st = c->ops->coll_post(c, &ops[i], &subs[i]);
        /* a failed post leaves the earlier ops running: they are waited
         * for (and freed) here, so no buffer is used after the return */
        if (st != HERD_OK) {
            char msg[CORE_ERROR_MAX];
            memcpy(msg, c->last_error, sizeof(msg));
            multi_wait(&m->base);
            multi_free(&m->base);
            memcpy(c->last_error, msg, sizeof(msg));
            return st;
        }
        req = &m->base;
    }
    if (st != HERD_OK)
        return st;
    if (req_out) {
        *req_out = req;
        return HERD_OK;
    }
    st = req->ops->req_wait(req);
    req->ops->req_free(req);
    return st;
}

/* Prefix the comm's last error with the call and the op's index. */
static herd_status_t member_error(herd_comm_t *c, herd_status_t st,
                                  const char *name, const char *what, int i)
{
    char msg[CORE_ERROR_MAX];
    memcpy(msg, c->last_error, sizeof(msg));
    return core_comm_error(c, st, "%s: %s %d: %.400s", name, what, i, msg);
}

static core_coll_args_t *args_new(herd_comm_t *c, const char *name, int n)
{
    if (n < 0 || n > (1 << 20)) {
        core_comm_error(c, HERD_ERR_INVALID_ARG,
                        "%s: %d ops is not in [0, 1048576]", name, n);
        return NULL;
    }
    core_coll_args_t *a = calloc((size_t)(n > 0 ? n : 1), sizeof(*a));
    if (!a)
        core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: out of memory", name);
    return a;
}

herd_status_t herd_batch_isend_irecv(herd_comm_t *c, const herd_p2p_op_t *ops,
                                     int nops, herd_req_t **req_out)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    if (nops > 0 && !ops)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "batch_isend_irecv: NULL ops with %d ops", nops);
    core_coll_args_t *a = args_new(c, "batch_isend_irecv", nops);
    if (!a)
        return nops < 0 ? HERD_ERR_INVALID_ARG : HERD_ERR_NO_MEMORY;
    herd_status_t st = HERD_OK;
    uint64_t seq0 = c->p2p_seq;
    for (int i = 0; i < nops && st == HERD_OK; i++) {
        const herd_p2p_op_t *o = &ops[i];
        if (o->kind != HERD_P2P_SEND && o->kind != HERD_P2P_RECV) {
            st = core_comm_error(c, HERD_ERR_INVALID_ARG,
                                 "batch_isend_irecv: ops[%d].kind %d is "
                                 "neither HERD_P2P_SEND nor HERD_P2P_RECV",
                                 i, (int)o->kind);
            break;
        }
        int send = o->kind == HERD_P2P_SEND;
        a[i] =
            (core_coll_args_t){.coll = send ? HERD_COLL_SEND : HERD_COLL_RECV,
                               .sendbuf = send ? o->buf : NULL,
                               .recvbuf = send ? NULL : o->buf,
                               .count = o->count,
                               .dtype = o->dtype,
                               .root = o->peer,
                               .tag = o->tag};
        st = core_coll_prepare(c, &a[i]);
        if (st != HERD_OK)
            member_error(c, st, "batch_isend_irecv", "op", i);
    }
    if (st == HERD_OK)
        st = post_all(c, a, nops, req_out);
    else
        c->p2p_seq = seq0; /* nothing was posted: the numbers stay free */
    free(a);
    return st;
}

static herd_status_t coalesced(herd_comm_t *c, herd_coll_t coll,
                               const char *name, const void *const *s,
                               void *const *r, const size_t *counts, int n,
                               herd_dtype_t d, herd_op_t op,
                               herd_req_t **req_out)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    if (n > 0 && (!s || !r || !counts))
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "%s: NULL buffer or count arrays with %d "
                               "tensors",
                               name, n);
    core_coll_args_t *a = args_new(c, name, n);
    if (!a)
        return n < 0 ? HERD_ERR_INVALID_ARG : HERD_ERR_NO_MEMORY;
    herd_status_t st = HERD_OK;
    uint64_t seq0 = c->seq;
    for (int i = 0; i < n && st == HERD_OK; i++) {
        a[i] = (core_coll_args_t){.coll = coll,
                                  .sendbuf = s[i],
                                  .recvbuf = r[i],
                                  .count = counts[i],
                                  .dtype = d,
                                  .op = op,
                                  .root = -1};
        st = core_coll_prepare(c, &a[i]);
        if (st != HERD_OK)
            member_error(c, st, name, "tensor", i);
    }
    if (st == HERD_OK)
        st = post_all(c, a, n, req_out);
    else
        c->seq = seq0; /* nothing was posted: the numbers stay free */
    free(a);
    return st;
}

herd_status_t herd_all_reduce_coalesced(herd_comm_t *c, const void *const *s,
                                        void *const *r, const size_t *counts,
                                        int n, herd_dtype_t d, herd_op_t op,
                                        herd_req_t **req)
{
    return coalesced(c, HERD_COLL_ALL_REDUCE, "all_reduce_coalesced", s, r,
                     counts, n, d, op, req);
}

herd_status_t herd_all_gather_coalesced(herd_comm_t *c, const void *const *s,
                                        void *const *r, const size_t *counts,
                                        int n, herd_dtype_t d, herd_req_t **req)
{
    return coalesced(c, HERD_COLL_ALL_GATHER, "all_gather_coalesced", s, r,
                     counts, n, d, HERD_SUM, req);
}

herd_status_t
herd_reduce_scatter_coalesced(herd_comm_t *c, const void *const *s,
                              void *const *r, const size_t *counts, int n,
                              herd_dtype_t d, herd_op_t op, herd_req_t **req)
{
    return coalesced(c, HERD_COLL_REDUCE_SCATTER, "reduce_scatter_coalesced", s,
                     r, counts, n, d, op, req);
}
