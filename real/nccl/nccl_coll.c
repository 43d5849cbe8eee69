/* real/nccl/nccl_coll.c - collectives on the GPU engine: NCCL's own
 * collectives (gather, scatter and all_to_all as grouped send/recv),
 * requests timed with CUDA events, and waits that poll NCCL's async error
 * against the deadline and abort on timeout. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sched.h"
#include "real/nccl/nccl_internal.h"

herd_status_t nccl_map_dtype(herd_dtype_t d, ncclDataType_t *out)
{
    static const ncclDataType_t map[HERD_DTYPE_COUNT] = {
        [HERD_INT8] = ncclInt8,       [HERD_UINT8] = ncclUint8,
        [HERD_INT32] = ncclInt32,     [HERD_INT64] = ncclInt64,
        [HERD_FLOAT16] = ncclFloat16, [HERD_BFLOAT16] = ncclBfloat16,
        [HERD_FLOAT32] = ncclFloat32, [HERD_FLOAT64] = ncclFloat64};
    if ((unsigned)d >= HERD_DTYPE_COUNT)
        return HERD_ERR_INVALID_ARG;
    *out = map[d];
    return HERD_OK;
}

herd_status_t nccl_map_op(nccl_comm_t *c, herd_op_t op, ncclRedOp_t *out)
{
    switch (op) {
    case HERD_SUM:
        *out = ncclSum;
        return HERD_OK;
    case HERD_AVG:
        *out = ncclAvg;
        return HERD_OK;
    case HERD_PRODUCT:
        *out = ncclProd;
        return HERD_OK;
    case HERD_MIN:
        *out = ncclMin;
        return HERD_OK;
    case HERD_MAX:
        *out = ncclMax;
        return HERD_OK;
    default:
        return core_comm_error(&c->base, HERD_ERR_UNSUPPORTED,
                               "nccl: reduce op %s is not supported (NCCL has "
                               "no bitwise reductions; use the tcp engine)",
                               herd_op_name(op));
    }
}

static size_t esize(const core_coll_args_t *a)
{
    return herd_dtype_size(a->dtype);
}

/* gather / scatter / all_to_all as one group of sends and receives. */
static ncclResult_t grouped_p2p(nccl_comm_t *c, const core_coll_args_t *a,
                                ncclDataType_t dt)
{
    int p = c->base.size, me = c->base.rank;
    size_t blk = a->count * esize(a);
    const char *s = a->sendbuf;
    char *r = a->recvbuf;
    ncclResult_t res = ncclGroupStart();
    for (int peer = 0; res == ncclSuccess && peer < p; peer++) {
        int send = 0, recv = 0;
        const void *sp = s;
        void *rp = r;
        if (a->coll == HERD_COLL_GATHER) {
            send = peer == a->root;
            recv = me == a->root;
            rp = r ? r + peer * blk : NULL;
        } else if (a->coll == HERD_COLL_SCATTER) {
            send = me == a->root;
            recv = peer == a->root;
            sp = s ? s + peer * blk : NULL;
        } else {
            send = recv = 1;
            sp = s + peer * blk;
            rp = r + peer * blk;
        }
        if (send)
            res = ncclSend(sp, a->count, dt, peer, c->nc, c->stream);
        if (recv && res == ncclSuccess)
            res = ncclRecv(rp, a->count, dt, peer, c->nc, c->stream);
    }
    ncclResult_t end = ncclGroupEnd();
    return res != ncclSuccess ? res : end;
}

/* all_gather_v and all_to_all_v as one group of sends and receives at
 * the blocks' offsets (prefix sums of the counts); the rank's own block
 * is a device copy on the stream. */
static ncclResult_t grouped_v(nccl_comm_t *c, const core_coll_args_t *a,
                              ncclDataType_t dt)
{
    int p = c->base.size, me = c->base.rank;
    size_t es = esize(a), soff = 0, roff = 0;
    int ag = a->coll == HERD_COLL_ALL_GATHER_V;
    const size_t *sn = a->vcounts, *rn = ag ? a->vcounts : a->vrecv;
    const char *s = a->sendbuf;
    char *r = a->recvbuf;
    ncclResult_t res = ncclGroupStart();
    for (int q = 0; res == ncclSuccess && q < p; q++) {
        size_t scount = ag ? sn[me] : sn[q];
        const char *sp = ag ? s : s + soff * es;
        if (q == me) {
            if (scount && cudaMemcpyAsync(r + roff * es, sp, scount * es,
                                          cudaMemcpyDeviceToDevice,
                                          c->stream) != cudaSuccess)
                res = ncclUnhandledCudaError;
        } else {
            if (scount)
                res = ncclSend(sp, scount, dt, q, c->nc, c->stream);
            if (res == ncclSuccess && rn[q])
                res = ncclRecv(r + roff * es, rn[q], dt, q, c->nc, c->stream);
        }
        soff += sn[q];
        roff += rn[q];
    }
    ncclResult_t end = ncclGroupEnd();
    return res != ncclSuccess ? res : end;
}

/* reduce_scatter_v: every peer's part of my block into staging (one
 * group), then reduced into the output with herd's kernel. */
static herd_status_t reduce_scatter_v(nccl_comm_t *c, const core_coll_args_t *a,
                                      ncclDataType_t dt, double deadline_s)
{
    int p = c->base.size, me = c->base.rank;
    size_t es = esize(a), mine = a->vcounts[me], off = 0, my_off = 0;
    if (a->op == HERD_AVG)
        return core_comm_error(&c->base, HERD_ERR_UNSUPPORTED,
                               "nccl: reduce_scatter_v with avg is not "
                               "supported (use sum and divide)");
    char *stage = NULL;
    if (mine && p > 1 &&
        cudaMallocAsync((void **)&stage, (size_t)(p - 1) * mine * es,
                        c->stream) != cudaSuccess)
        return core_comm_error(&c->base, HERD_ERR_NO_MEMORY,
                               "nccl: reduce_scatter_v staging");
    ncclResult_t res = ncclGroupStart();
    for (int q = 0, slot = 0; res == ncclSuccess && q < p; q++) {
        if (q == me) {
            my_off = off;
        } else {
            if (a->vcounts[q])
                res = ncclSend((const char *)a->sendbuf + off * es,
                               a->vcounts[q], dt, q, c->nc, c->stream);
            if (res == ncclSuccess && mine)
                res = ncclRecv(stage + (size_t)slot * mine * es, mine, dt, q,
                               c->nc, c->stream);
            slot++;
        }
        off += a->vcounts[q];
    }
    ncclResult_t end = ncclGroupEnd();
    herd_status_t st = nccl_settle(c, res != ncclSuccess ? res : end,
                                   deadline_s, "reduce_scatter_v");
    const char *in = (const char *)a->sendbuf + my_off * es;
    for (int k = 0; st == HERD_OK && mine && k < p - 1; k++)
        if (nccl_reduce_launch(a->recvbuf, k ? a->recvbuf : in,
                               stage + (size_t)k * mine * es, mine, a->dtype,
                               a->op, c->stream) != cudaSuccess)
            st = core_comm_error(&c->base, HERD_ERR_IO,
                                 "nccl: reduce_scatter_v reduce kernel");
    if (st == HERD_OK && mine && p == 1 &&
        cudaMemcpyAsync(a->recvbuf, in, mine * es, cudaMemcpyDeviceToDevice,
                        c->stream) != cudaSuccess)
        st = core_comm_error(&c->base, HERD_ERR_IO, "nccl: copy");
    if (stage)
        cudaFreeAsync(stage, c->stream);
    return st;
}

static ncclResult_t native_post(nccl_comm_t *c, const core_coll_args_t *a,
                                ncclDataType_t dt, ncclRedOp_t op,
                                void *scratch)
{
    ncclComm_t nc = c->nc;
    cudaStream_t s = c->stream;
    switch (a->coll) {
    case HERD_COLL_ALL_REDUCE:
        return ncclAllReduce(a->sendbuf, a->recvbuf, a->count, dt, op, nc, s);
    case HERD_COLL_BROADCAST:
        return ncclBroadcast(a->sendbuf, a->recvbuf, a->count, dt, a->root, nc,
                             s);
    case HERD_COLL_REDUCE:
        return ncclReduce(a->sendbuf, a->recvbuf, a->count, dt, op, a->root, nc,
                          s);
    case HERD_COLL_ALL_GATHER:
        return ncclAllGather(a->sendbuf, a->recvbuf, a->count, dt, nc, s);
    case HERD_COLL_REDUCE_SCATTER:
        return ncclReduceScatter(a->sendbuf, a->recvbuf, a->count, dt, op, nc,
                                 s);
    case HERD_COLL_GATHER:
    case HERD_COLL_SCATTER:
    case HERD_COLL_ALL_TO_ALL:
        return grouped_p2p(c, a, dt);
    case HERD_COLL_ALL_GATHER_V:
    case HERD_COLL_ALL_TO_ALL_V:
        return grouped_v(c, a, dt);
    case HERD_COLL_BARRIER:
    case HERD_COLL_MONITORED_BARRIER:
        /* As torch does: a one-element all_reduce on a device buffer. A
         * monitored barrier is the same with its own deadline; a rank that
         * does not arrive is named by the timeout's store round. */
        return ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, nc, s);
    case HERD_COLL_SEND:
        return ncclSend(a->sendbuf, a->count, dt, a->root, nc, s);
    case HERD_COLL_RECV:
        return ncclRecv(a->recvbuf, a->count, dt, a->root, nc, s);
    default:
        return ncclInvalidArgument;
    }
}

static void fill_rec(nccl_req_t *q, const herd_comm_t *c,
                     const core_coll_args_t *a)
{
    herd_tl_rec_t *r = &q->rec;
    r->kind = HERD_TL_COLL;
    r->rank = c->world_rank;
    r->group = c->group_id;
    r->seq = a->seq;
    r->coll = a->coll;
    r->algo = a->algo == HERD_ALGO_AUTO || core_sched_is_library(a->algo)
                  ? HERD_ALGO_NCCL
                  : a->algo;
    r->dtype = a->dtype;
    r->op = a->op;
    r->count = a->count;
    r->bytes = a->count * herd_dtype_size(a->dtype);
    r->peer = a->root;
    if (a->label)
        snprintf(q->label, sizeof(q->label), "%s", a->label);
    r->label = q->label[0] ? q->label : NULL;
}

static herd_status_t launch(nccl_comm_t *c, const core_coll_args_t *a,
                            nccl_req_t *q)
{
    ncclDataType_t dt;
    ncclRedOp_t op = ncclSum;
    herd_status_t st = nccl_map_dtype(a->dtype, &dt);
    if (st == HERD_OK &&
        (a->coll == HERD_COLL_ALL_REDUCE || a->coll == HERD_COLL_REDUCE ||
         a->coll == HERD_COLL_REDUCE_SCATTER ||
         a->coll == HERD_COLL_REDUCE_SCATTER_V))
        st = nccl_map_op(c, a->op, &op);
    if (st != HERD_OK)
        return st;
    if (a->coll == HERD_COLL_REDUCE_SCATTER_V)
        return reduce_scatter_v(c, a, dt, q->deadline_s);
    int own = core_coll_is_v(a->coll) || a->coll == HERD_COLL_MONITORED_BARRIER;
    int custom = !own && a->algo != HERD_ALGO_AUTO &&
                 !core_sched_is_library(a->algo) && a->coll != HERD_COLL_SEND &&
                 a->coll != HERD_COLL_RECV;
    if (custom)
        return nccl_sched_post(c, a);
    void *scratch = NULL;
    if ((a->coll == HERD_COLL_BARRIER ||
         a->coll == HERD_COLL_MONITORED_BARRIER) &&
        cudaMallocAsync(&scratch, sizeof(int), c->stream) != cudaSuccess)
        return core_comm_error(&c->base, HERD_ERR_NO_MEMORY,
                               "nccl: barrier buffer");
    ncclResult_t r = native_post(c, a, dt, op, scratch);
    st = nccl_settle(c, r, q->deadline_s, herd_coll_name(a->coll));
    if (scratch)
        cudaFreeAsync(scratch, c->stream);
    return st;
}

/* The request's flight-record entries (one, or a group's) move on. */
static void flight_update(nccl_req_t *q, core_fr_state_t st,
                          herd_status_t status)
{
    nccl_comm_t *c = (nccl_comm_t *)q->base.comm;
    uint64_t t = nccl_clock_ns();
    for (int i = 0; q->fr_id && i < q->fr_n; i++)
        core_flight_update(&c->world->flight, q->fr_id + (uint64_t)i, st,
                           status, t);
}

herd_status_t nccl_coll_post(herd_comm_t *comm, const core_coll_args_t *a,
                             herd_req_t **req_out)
{
    nccl_comm_t *c = (nccl_comm_t *)comm;
    if (c->aborted)
        return core_comm_error(comm, HERD_ERR_ABORTED,
                               "nccl: communicator was aborted after an "
                               "earlier error");
    nccl_req_t *q = calloc(1, sizeof(*q));
    if (!q)
        return HERD_ERR_NO_MEMORY;
    q->base.ops = comm->ops;
    q->base.comm = comm;
    q->post_ns = nccl_clock_ns();
    q->timeout_s = a->timeout_s > 0 ? a->timeout_s : comm->timeout_s;
    q->deadline_s = q->post_ns * 1e-9 + q->timeout_s;
    fill_rec(q, comm, a);
    q->fr_id = core_flight_add(&c->world->flight, comm, a, q->post_ns);
    q->fr_n = 1;
    if (cudaEventCreate(&q->start) || cudaEventCreate(&q->end) ||
        cudaEventRecord(q->start, c->stream)) {
        flight_update(q, CORE_FR_SCHEDULED, HERD_ERR_IO);
        nccl_req_free(&q->base);
        return core_comm_error(comm, HERD_ERR_IO, "nccl: event setup failed");
    }
    herd_status_t st = launch(c, a, q);
    if (st == HERD_OK && cudaEventRecord(q->end, c->stream) != cudaSuccess)
        st = core_comm_error(comm, HERD_ERR_IO, "nccl: event record failed");
    if (st != HERD_OK) {
        flight_update(q, CORE_FR_SCHEDULED, st);
        nccl_req_free(&q->base);
        return st;
    }
    *req_out = &q->base;
    return HERD_OK;
}

static void finish(nccl_req_t *q, herd_status_t st)
{
    nccl_comm_t *c = (nccl_comm_t *)q->base.comm;
    float t0 = 0, dur = 0;
    q->done = 1;
    q->status = st;
    q->rec.status = st;
    flight_update(q,
                  st == HERD_OK ? CORE_FR_COMPLETED
                  : q->started  ? CORE_FR_STARTED
                                : CORE_FR_SCHEDULED,
                  st);
    if (st == HERD_OK &&
        cudaEventElapsedTime(&t0, c->world->base_event, q->start) ==
            cudaSuccess &&
        cudaEventElapsedTime(&dur, q->start, q->end) == cudaSuccess) {
        q->rec.start_ns = (uint64_t)((double)t0 * 1e6);
        q->rec.end_ns = q->rec.start_ns + (uint64_t)((double)dur * 1e6);
    } else {
        q->rec.start_ns = q->post_ns - c->world->base_ns;
        q->rec.end_ns = nccl_clock_ns() - c->world->base_ns;
    }
    core_comm_timeline(q->base.comm, &q->rec);
}

/* One poll: done, still running, failed, or past the deadline. */
static herd_status_t poll_once(nccl_req_t *q, int *done)
{
    nccl_comm_t *c = (nccl_comm_t *)q->base.comm;
    if (!q->started && cudaEventQuery(q->start) == cudaSuccess) {
        /* the stream reached the collective: "started" when first seen
         * so, as PyTorch's recorder discovers it */
        q->started = 1;
        flight_update(q, CORE_FR_STARTED, HERD_OK);
    }
    cudaError_t ce = cudaEventQuery(q->end);
    if (ce == cudaSuccess) {
        finish(q, HERD_OK);
        *done = 1;
        return HERD_OK;
    }
    ncclResult_t ar = ncclSuccess;
    ncclCommGetAsyncError(c->nc, &ar);
    herd_status_t st = HERD_OK;
    if (ce != cudaErrorNotReady)
        st = core_comm_error(q->base.comm, HERD_ERR_IO, "nccl: CUDA error %s",
                             cudaGetErrorString(ce));
    else if (ar != ncclSuccess && ar != ncclInProgress)
        st = core_comm_error(q->base.comm, HERD_ERR_PEER_FAILED,
                             "nccl: %s (a peer failed or the network broke)",
                             ncclGetErrorString(ar));
    else if (nccl_clock_ns() * 1e-9 > q->deadline_s) {
        core_coll_args_t a = {.coll = q->rec.coll,
                              .count = q->rec.count,
                              .dtype = q->rec.dtype,
                              .seq = q->rec.seq};
        st = nccl_report_timeout(c, &a, q->timeout_s);
    }
    if (st != HERD_OK) {
        if (!c->aborted)
            ncclCommAbort(c->nc);
        c->aborted = 1;
        finish(q, st);
        *done = 1;
        const char *dir = core_flight_dir();
        if (dir)
            nccl_flight_dump(c, dir,
                             st == HERD_ERR_TIMEOUT ? "timeout" : "error");
    } else
        *done = 0;
    return st;
}

herd_status_t nccl_req_test(herd_req_t *req, int *done)
{
    nccl_req_t *q = (nccl_req_t *)req;
    if (q->done) {
        *done = 1;
        return q->status;
    }
    return poll_once(q, done);
}

/* Spin briefly (collectives are often short), then yield, then sleep. */
herd_status_t nccl_req_wait(herd_req_t *req)
{
    int done = 0;
    for (unsigned i = 0;; i++) {
        herd_status_t st = nccl_req_test(req, &done);
        if (done)
            return st;
        if (i > 20000)
            usleep(50);
        else if (i > 2000)
            sched_yield();
    }
}

void nccl_req_free(herd_req_t *req)
{
    nccl_req_t *q = (nccl_req_t *)req;
    if (!q->done && q->end) {
        int done = 0;
        if (nccl_req_test(req, &done) == HERD_OK && !done)
            nccl_req_wait(req);
    }
    if (q->start)
        cudaEventDestroy(q->start);
    if (q->end)
        cudaEventDestroy(q->end);
    free(q);
}

herd_status_t nccl_report_timeout(nccl_comm_t *c, const core_coll_args_t *a,
                                  double waited_s)
{
    nccl_world_t *w = c->world;
    char key[192], missing[512] = "";
    snprintf(key, sizeof(key), "hang/%d/%llu/%d", c->base.group_id,
             (unsigned long long)a->seq, c->base.rank);
    store_set(w->rdzv.client, key, "1", 1);
    /* Ranks stuck in the same collective time out together and publish
     * within this grace period; the others did not join. */
    usleep(2000000);
    size_t len = 0;
    for (int r = 0; r < c->base.size; r++) {
        snprintf(key, sizeof(key), "hang/%d/%llu/%d", c->base.group_id,
                 (unsigned long long)a->seq, r);
        const char *keys[1] = {key};
        int exists = 0;
        if (store_check(w->rdzv.client, keys, 1, &exists) == HERD_OK &&
            !exists && len + 16 < sizeof(missing))
            len += (size_t)snprintf(missing + len, sizeof(missing) - len,
                                    "%s%d", len ? ", " : "",
                                    herd_comm_world_rank(&c->base, r));
    }
    return core_comm_error(
        &c->base, HERD_ERR_TIMEOUT,
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%llu, "
        "OpType=%s, NumelIn=%llu, NumelOut=%llu, Timeout(ms)=%.0f) ran for "
        "%.0f milliseconds before timing out; ranks that did not join: %s",
        (unsigned long long)a->seq, herd_coll_name(a->coll),
        (unsigned long long)a->count, (unsigned long long)a->count,
        c->base.timeout_s * 1e3, waited_s * 1e3, len ? missing : "none found");
}

/* batch_isend_irecv and the coalesced collectives: one NCCL group, so a
 * batch whose sends come before its receives on every rank cannot
 * deadlock (NCCL matches the group as a whole), and one request timed
 * from before the group to after it. Only NCCL's own calls join a group
 * (send, recv, all_reduce, all_gather, reduce_scatter). */
herd_status_t nccl_post_group(herd_comm_t *comm, const core_coll_args_t *ops,
                              int n, herd_req_t **req_out)
{
    nccl_comm_t *c = (nccl_comm_t *)comm;
    if (c->aborted)
        return core_comm_error(comm, HERD_ERR_ABORTED,
                               "nccl: communicator was aborted after an "
                               "earlier error");
    nccl_req_t *q = calloc(1, sizeof(*q));
    if (!q)
        return HERD_ERR_NO_MEMORY;
    q->base.ops = comm->ops;
    q->base.comm = comm;
    q->post_ns = nccl_clock_ns();
    q->timeout_s = comm->timeout_s;
    q->deadline_s = q->post_ns * 1e-9 + q->timeout_s;
    if (n > 0)
        fill_rec(q, comm, &ops[0]);
    /* one entry per op, as PyTorch records a coalesced group's members;
     * ids are consecutive within one post */
    for (int i = 0; i < n; i++) {
        uint64_t id =
            core_flight_add(&c->world->flight, comm, &ops[i], q->post_ns);
        if (i == 0)
            q->fr_id = id;
        q->fr_n += id != 0;
    }
    if (cudaEventCreate(&q->start) || cudaEventCreate(&q->end) ||
        cudaEventRecord(q->start, c->stream)) {
        flight_update(q, CORE_FR_SCHEDULED, HERD_ERR_IO);
        nccl_req_free(&q->base);
        return core_comm_error(comm, HERD_ERR_IO, "nccl: event setup failed");
    }
    herd_status_t st = HERD_OK;
    ncclResult_t res = ncclGroupStart();
    for (int i = 0; i < n && st == HERD_OK && res == ncclSuccess; i++) {
        const core_coll_args_t *a = &ops[i];
        ncclDataType_t dt;
        ncclRedOp_t op = ncclSum;
        st = nccl_map_dtype(a->dtype, &dt);
        if (st == HERD_OK && a->coll != HERD_COLL_SEND &&
            a->coll != HERD_COLL_RECV && a->coll != HERD_COLL_ALL_GATHER)
            st = nccl_map_op(c, a->op, &op);
        if (st == HERD_OK)
            res = native_post(c, a, dt, op, NULL);
    }
    ncclResult_t end = ncclGroupEnd();
    if (st == HERD_OK)
        st = nccl_settle(c, res != ncclSuccess ? res : end, q->deadline_s,
                         "group");
    if (st == HERD_OK && cudaEventRecord(q->end, c->stream) != cudaSuccess)
        st = core_comm_error(comm, HERD_ERR_IO, "nccl: event record failed");
    if (st != HERD_OK) {
        flight_update(q, CORE_FR_SCHEDULED, st);
        nccl_req_free(&q->base);
        return st;
    }
    *req_out = &q->base;
    return HERD_OK;
}

/* Host <-> device (either way) for the object collectives. */
herd_status_t nccl_copy(herd_comm_t *comm, void *dst, const void *src,
                        size_t bytes)
{
    if (cudaMemcpy(dst, src, bytes, cudaMemcpyDefault) != cudaSuccess)
        return core_comm_error(comm, HERD_ERR_IO, "nccl: copy of %zu bytes",
                               bytes);
    return HERD_OK;
}
