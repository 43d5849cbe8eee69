/* real/mpi/mpi_coll.c - posting a call on the mpi engine: algorithm auto
 * (or nccl, "the library's own" as on the nccl engine) runs MPI's own
 * nonblocking collective (MPI_Iallreduce, MPI_Ibcast, ...); an explicit
 * herd algorithm (ring, tree, rhd, ...) runs herd's schedule over
 * MPI_Isend / MPI_Irecv (mpi_sched.c). send and recv are MPI_Isend and
 * MPI_Irecv with the caller's tag.
 *
 * Buffers follow herd.h: sendbuf == recvbuf is in place, which maps to
 * MPI_IN_PLACE where MPI's meaning is the same (all_reduce, reduce at
 * the root, all_gather with the input at the rank's block, gather and
 * scatter at the root, reduce_scatter); any other overlap of input and
 * output gets a private copy of the input, as on the tcp engine. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real/mpi/mpi_internal.h"

static int overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return a && b && alen && blen && a < b + blen && b < a + alen;
}

/* The send buffer MPI gets: MPI_IN_PLACE, the caller's, or a copy. */
static herd_status_t send_side(mpi_req_t *q, const void **s_out)
{
    const core_coll_args_t *a = &q->args;
    herd_comm_t *c = &q->c->base;
    int p = c->size, me = c->rank, root = a->root;
    size_t es = herd_dtype_size(a->dtype), blk = a->count * es;
    const char *s = a->sendbuf;
    char *r = a->recvbuf;
    size_t sb = core_args_send_count(a, p) * es;
    size_t rb = core_args_recv_count(a, p) * es;
    int in_place = 0;
    switch (a->coll) {
    case HERD_COLL_ALL_REDUCE:
    case HERD_COLL_REDUCE_SCATTER:
        in_place = s == r;
        break;
    case HERD_COLL_REDUCE:
        in_place = me == root && s == r;
        if (me != root)
            rb = 0; /* recvbuf is the root's only */
        break;
    case HERD_COLL_ALL_GATHER:
        in_place = r && s == r + (size_t)me * blk;
        break;
    case HERD_COLL_GATHER:
        in_place = me == root && r && s == r + (size_t)me * blk;
        if (me != root)
            rb = 0;
        break;
    case HERD_COLL_SCATTER:
        /* the root's own block stays where it is: MPI_IN_PLACE as the
         * receive buffer (scatter_recv_buf below) */
        if (me != root)
            sb = 0;
        break;
    default:
        break;
    }
    if (in_place) {
        *s_out = MPI_IN_PLACE;
        return HERD_OK;
    }
    if (a->coll != HERD_COLL_SCATTER && overlaps(s, sb, r, rb)) {
        q->in_copy = malloc(sb);
        if (!q->in_copy)
            return HERD_ERR_NO_MEMORY;
        memcpy(q->in_copy, s, sb);
        s = q->in_copy;
    }
    *s_out = s;
    return HERD_OK;
}

/* scatter's receive buffer: MPI_IN_PLACE at a root whose output is its
 * own block of the input; a copy of the input when they overlap
 * otherwise (then the input is read from the copy). */
static herd_status_t scatter_bufs(mpi_req_t *q, const void **s, void **r)
{
    const core_coll_args_t *a = &q->args;
    herd_comm_t *c = &q->c->base;
    size_t es = herd_dtype_size(a->dtype), blk = a->count * es;
    *s = a->sendbuf;
    *r = a->recvbuf;
    if (c->rank != a->root)
        return HERD_OK;
    const char *in = a->sendbuf;
    if ((char *)a->recvbuf == in + (size_t)c->rank * blk) {
        *r = MPI_IN_PLACE;
    } else if (overlaps(in, blk * (size_t)c->size, a->recvbuf, blk)) {
        q->in_copy = malloc(blk * (size_t)c->size);
        if (!q->in_copy)
            return HERD_ERR_NO_MEMORY;
        memcpy(q->in_copy, in, blk * (size_t)c->size);
        *s = q->in_copy;
    }
    return HERD_OK;
}

static int native_call(mpi_req_t *q, const void *s, void *r)
{
    const core_coll_args_t *a = &q->args;
    mpi_comm_t *c = q->c;
    MPI_Comm mc = c->mc;
    MPI_Datatype dt = mpi_dtype(a->dtype);
    MPI_Op op = mpi_op(c->w, a->dtype, a->op);
    int n = (int)a->count, root = a->root;
    MPI_Request *mr = &q->mreq;
    switch (a->coll) {
    case HERD_COLL_ALL_REDUCE:
        return MPI_Iallreduce(s, r, n, dt, op, mc, mr);
    case HERD_COLL_BROADCAST:
        return MPI_Ibcast(r, n, dt, root, mc, mr);
    case HERD_COLL_REDUCE:
        return MPI_Ireduce(s, c->base.rank == root ? r : NULL, n, dt, op, root,
                           mc, mr);
    case HERD_COLL_ALL_GATHER:
        return MPI_Iallgather(s, n, dt, r, n, dt, mc, mr);
    case HERD_COLL_GATHER:
        return MPI_Igather(s, n, dt, c->base.rank == root ? r : NULL, n, dt,
                           root, mc, mr);
    case HERD_COLL_SCATTER:
        return MPI_Iscatter(s, n, dt, r, n, dt, root, mc, mr);
    case HERD_COLL_REDUCE_SCATTER:
        return MPI_Ireduce_scatter_block(s, r, n, dt, op, mc, mr);
    case HERD_COLL_ALL_TO_ALL:
        return MPI_Ialltoall(s, n, dt, r, n, dt, mc, mr);
    case HERD_COLL_SEND:
        return MPI_Isend(s, n, dt, root, a->tag, mc, mr);
    case HERD_COLL_RECV:
        return MPI_Irecv(r, n, dt, root, a->tag, mc, mr);
    default:
        return MPI_Ibarrier(mc, mr);
    }
}

static herd_status_t native_post(mpi_req_t *q)
{
    const core_coll_args_t *a = &q->args;
    herd_comm_t *c = &q->c->base;
    const char *name = herd_coll_name(a->coll);
    if (a->count > INT_MAX)
        return core_comm_error(c, HERD_ERR_OVERFLOW,
                               "%s: count %zu exceeds MPI's int counts (at "
                               "most %d elements per block)",
                               name, a->count, INT_MAX);
    if ((a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV) &&
        (a->tag < 0 || a->tag > q->c->w->tag_ub))
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "%s: tag %d out of MPI's range [0, %d]", name,
                               a->tag, q->c->w->tag_ub);
    const void *s = a->sendbuf;
    void *r = a->recvbuf;
    herd_status_t st = a->coll == HERD_COLL_SCATTER ? scatter_bufs(q, &s, &r)
                       : a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV
                           ? HERD_OK
                           : send_side(q, &s);
    if (st != HERD_OK)
        return core_comm_error(c, st,
                               "%s: out of memory for a copy of the "
                               "input",
                               name);
    int rc = native_call(q, s, r);
    if (rc != MPI_SUCCESS) {
        char what[96];
        snprintf(what, sizeof(what), "%s (group %d, seq %llu)", name,
                 c->group_id, (unsigned long long)a->seq);
        return mpi_fail(c, rc, what);
    }
    return HERD_OK;
}

herd_status_t mpi_coll_post(herd_comm_t *comm, const core_coll_args_t *a,
                            herd_req_t **req_out)
{
    mpi_comm_t *c = (mpi_comm_t *)comm;
    mpi_world_t *w = c->w;
    if (w->fail_status != HERD_OK)
        return core_comm_error(comm, HERD_ERR_ABORTED,
                               "%s: the communicators are unusable after an "
                               "earlier failure: %s",
                               herd_coll_name(a->coll), w->fail_msg);
    mpi_req_t *q = calloc(1, sizeof(*q));
    if (!q)
        return core_comm_error(comm, HERD_ERR_NO_MEMORY, "%s: out of memory",
                               herd_coll_name(a->coll));
    q->base.ops = comm->ops;
    q->base.comm = comm;
    q->c = c;
    q->args = *a;
    q->args.label = NULL;
    if (a->label)
        snprintf(q->label, sizeof(q->label), "%s", a->label);
    q->mreq = MPI_REQUEST_NULL;
    q->t_post = mpi_now_ns();
    int p2p = a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV;
    /* the *_v kinds and monitored_barrier run herd's direct schedule: one
     * code path for their uneven counts, and a monitored barrier's
     * receives tell which ranks did not arrive */
    int own = core_coll_is_v(a->coll) || a->coll == HERD_COLL_MONITORED_BARRIER;
    q->native = !own && (p2p || a->algo == HERD_ALGO_AUTO ||
                         core_sched_is_library(a->algo));
    q->algo = q->native ? HERD_ALGO_AUTO : own ? HERD_ALGO_DIRECT : a->algo;
    q->fr_id = core_flight_add(&w->flight, comm, a, q->t_post);
    herd_status_t st;
    if (q->native) {
        st = native_post(q);
        if (st == HERD_OK)
            mpi_req_link(q);
    } else {
        st = mpi_sched_post(q, q->algo); /* links it */
    }
    if (st != HERD_OK) {
        core_flight_update(&w->flight, q->fr_id, CORE_FR_SCHEDULED, st,
                           mpi_now_ns());
        free(q->in_copy);
        free(q);
        return st;
    }
    /* MPI (or the schedule's first sends) has the op from here on */
    core_flight_update(&w->flight, q->fr_id, CORE_FR_STARTED, HERD_OK,
                       q->t_post);
    *req_out = &q->base;
    return HERD_OK;
}
