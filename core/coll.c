/* core/coll.c - the collective and point-to-point entry points: argument
 * checks (buffers, roots, dtypes, ops, size overflow), sequence numbers,
 * the comm's algorithm settings, then dispatch to the engine. */
#include <stdint.h>
#include <string.h>

#include "core/engine.h"
#include "core/reduce.h"

/* Which buffers a rank must supply for a collective. */
static int needs_send(herd_coll_t coll, int rank, int root)
{
    switch (coll) {
    case HERD_COLL_SCATTER:
        return rank == root;
    case HERD_COLL_BARRIER:
    case HERD_COLL_MONITORED_BARRIER:
    case HERD_COLL_RECV:
        return 0;
    default:
        return 1;
    }
}

static int needs_recv(herd_coll_t coll, int rank, int root)
{
    switch (coll) {
    case HERD_COLL_REDUCE:
    case HERD_COLL_GATHER:
        return rank == root;
    case HERD_COLL_BARRIER:
    case HERD_COLL_MONITORED_BARRIER:
    case HERD_COLL_SEND:
        return 0;
    default:
        return 1;
    }
}

static int has_root(herd_coll_t coll)
{
    return coll == HERD_COLL_BROADCAST || coll == HERD_COLL_REDUCE ||
           coll == HERD_COLL_GATHER || coll == HERD_COLL_SCATTER ||
           coll == HERD_COLL_SEND || coll == HERD_COLL_RECV;
}

static int has_op(herd_coll_t coll)
{
    return coll == HERD_COLL_ALL_REDUCE || coll == HERD_COLL_REDUCE ||
           coll == HERD_COLL_REDUCE_SCATTER ||
           coll == HERD_COLL_REDUCE_SCATTER_V;
}

static herd_status_t check_sizes(herd_comm_t *c, const core_coll_args_t *a)
{
    const char *name = herd_coll_name(a->coll);
    size_t es = herd_dtype_size(a->dtype);
    if (es == 0)
        return core_comm_error(c, HERD_ERR_INVALID_ARG, "%s: unknown dtype %d",
                               name, (int)a->dtype);
    uint64_t p = (uint64_t)c->size;
    if (a->count > SIZE_MAX / es / (p ? p : 1))
        return core_comm_error(c, HERD_ERR_OVERFLOW,
                               "%s: count %zu x %zu bytes x %d ranks overflows",
                               name, a->count, es, c->size);
    return HERD_OK;
}

static herd_status_t check_args(herd_comm_t *c, const core_coll_args_t *a)
{
    const char *name = herd_coll_name(a->coll);
    herd_status_t st = check_sizes(c, a);
    if (st != HERD_OK)
        return st;
    if (has_root(a->coll) && (a->root < 0 || a->root >= c->size))
        return core_comm_error(
            c, HERD_ERR_INVALID_ARG, "%s: %s %d out of range [0, %d)", name,
            a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV ? "peer"
                                                                   : "root",
            a->root, c->size);
    if ((a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV) &&
        a->root == c->rank)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "%s: peer %d is this rank", name, a->root);
    if (has_op(a->coll)) {
        if ((unsigned)a->op >= HERD_OP_COUNT)
            return core_comm_error(c, HERD_ERR_INVALID_ARG,
                                   "%s: unknown reduce op %d", name,
                                   (int)a->op);
        if (!core_reduce_valid(a->dtype, a->op))
            return core_comm_error(
                c, HERD_ERR_INVALID_ARG,
                "%s: reduce op %s is not defined for dtype %s (bitwise ops "
                "need an integer dtype)",
                name, herd_op_name(a->op), herd_dtype_name(a->dtype));
    }
    if (a->count > 0 && needs_send(a->coll, c->rank, a->root) && !a->sendbuf)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "%s: NULL send buffer with count %zu", name,
                               a->count);
    if (a->count > 0 && needs_recv(a->coll, c->rank, a->root) && !a->recvbuf)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "%s: NULL receive buffer with count %zu", name,
                               a->count);
    return HERD_OK;
}

herd_status_t core_coll_prepare(herd_comm_t *c, core_coll_args_t *a)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    herd_status_t st = check_args(c, a);
    if (st != HERD_OK)
        return st;
    int p2p = a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV;
    a->seq = p2p ? ++c->p2p_seq : ++c->seq;
    a->algo = c->algo[a->coll];
    a->channels = c->channels;
    a->chunk_bytes = c->chunk_bytes;
    a->label = c->label[0] ? c->label : NULL;
    return HERD_OK;
}

herd_status_t core_coll_post(herd_comm_t *c, core_coll_args_t *a,
                             herd_req_t **req_out)
{
    herd_status_t st = core_coll_prepare(c, a);
    if (st != HERD_OK)
        return st;
    herd_req_t *req = NULL;
    st = c->ops->coll_post(c, a, &req);
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

#define ARGS(...) ((core_coll_args_t){__VA_ARGS__})

herd_status_t herd_all_reduce(herd_comm_t *c, const void *s, void *r, size_t n,
                              herd_dtype_t d, herd_op_t op, herd_req_t **req)
{
    core_coll_args_t a =
        ARGS(.coll = HERD_COLL_ALL_REDUCE, .sendbuf = s, .recvbuf = r,
             .count = n, .dtype = d, .op = op, .root = -1);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_broadcast(herd_comm_t *c, void *buf, size_t n,
                             herd_dtype_t d, int root, herd_req_t **req)
{
    core_coll_args_t a =
        ARGS(.coll = HERD_COLL_BROADCAST, .sendbuf = buf, .recvbuf = buf,
             .count = n, .dtype = d, .root = root);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_reduce(herd_comm_t *c, const void *s, void *r, size_t n,
                          herd_dtype_t d, herd_op_t op, int root,
                          herd_req_t **req)
{
    core_coll_args_t a =
        ARGS(.coll = HERD_COLL_REDUCE, .sendbuf = s, .recvbuf = r, .count = n,
             .dtype = d, .op = op, .root = root);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_all_gather(herd_comm_t *c, const void *s, void *r, size_t n,
                              herd_dtype_t d, herd_req_t **req)
{
    core_coll_args_t a = ARGS(.coll = HERD_COLL_ALL_GATHER, .sendbuf = s,
                              .recvbuf = r, .count = n, .dtype = d, .root = -1);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_gather(herd_comm_t *c, const void *s, void *r, size_t n,
                          herd_dtype_t d, int root, herd_req_t **req)
{
    core_coll_args_t a =
        ARGS(.coll = HERD_COLL_GATHER, .sendbuf = s, .recvbuf = r, .count = n,
             .dtype = d, .root = root);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_scatter(herd_comm_t *c, const void *s, void *r, size_t n,
                           herd_dtype_t d, int root, herd_req_t **req)
{
    core_coll_args_t a =
        ARGS(.coll = HERD_COLL_SCATTER, .sendbuf = s, .recvbuf = r, .count = n,
             .dtype = d, .root = root);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_reduce_scatter(herd_comm_t *c, const void *s, void *r,
                                  size_t n, herd_dtype_t d, herd_op_t op,
                                  herd_req_t **req)
{
    core_coll_args_t a =
        ARGS(.coll = HERD_COLL_REDUCE_SCATTER, .sendbuf = s, .recvbuf = r,
             .count = n, .dtype = d, .op = op, .root = -1);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_all_to_all(herd_comm_t *c, const void *s, void *r, size_t n,
                              herd_dtype_t d, herd_req_t **req)
{
    core_coll_args_t a = ARGS(.coll = HERD_COLL_ALL_TO_ALL, .sendbuf = s,
                              .recvbuf = r, .count = n, .dtype = d, .root = -1);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_barrier(herd_comm_t *c, herd_req_t **req)
{
    core_coll_args_t a =
        ARGS(.coll = HERD_COLL_BARRIER, .dtype = HERD_UINT8, .root = -1);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_send(herd_comm_t *c, const void *buf, size_t n,
                        herd_dtype_t d, int peer, int tag, herd_req_t **req)
{
    core_coll_args_t a = ARGS(.coll = HERD_COLL_SEND, .sendbuf = buf,
                              .count = n, .dtype = d, .root = peer, .tag = tag);
    return core_coll_post(c, &a, req);
}

herd_status_t herd_recv(herd_comm_t *c, void *buf, size_t n, herd_dtype_t d,
                        int peer, int tag, herd_req_t **req)
{
    core_coll_args_t a = ARGS(.coll = HERD_COLL_RECV, .recvbuf = buf,
                              .count = n, .dtype = d, .root = peer, .tag = tag);
    return core_coll_post(c, &a, req);
}
