/* real/mpi/mpi_wait.c - progress, completion, waits and timeouts of the
 * mpi engine's requests.
 *
 * herd_req_wait and herd_req_test map to MPI_Test (never MPI_Wait, which
 * cannot time out): a wait polls every request in flight, yielding the
 * CPU between polls (ranks often share cores) and napping after 1 s (Open
 * MPI's non-blocking collectives advance only inside MPI calls: napping
 * after 10 ms made an 8-64 MiB MPI_Iallreduce 3-6x slower), and
 * gives up at the comm's timeout. A timeout names ranks as the tcp engine
 * does: every rank that times out in a collective sends its position in
 * the group (group id, sequence number) to the other members on a
 * control communicator and waits a grace period for theirs; members that
 * sent nothing, or an earlier position, did not join. Ranks stuck in the
 * same collective time out together and so hear from one another; a rank
 * that died, hangs elsewhere or never called the collective stays silent.
 * After a timeout the world is unusable, as after a NCCL watchdog abort:
 * every op in flight fails and later calls return HERD_ERR_ABORTED. */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/reduce.h"
#include "real/mpi/mpi_internal.h"

void mpi_req_link(mpi_req_t *q)
{
    mpi_world_t *w = q->c->w;
    q->prev = NULL;
    q->next = w->active;
    if (w->active)
        w->active->prev = q;
    w->active = q;
    q->linked = 1;
}

static void unlink_req(mpi_req_t *q)
{
    mpi_world_t *w = q->c->w;
    if (!q->linked)
        return;
    if (q->prev)
        q->prev->next = q->next;
    else
        w->active = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->next = q->prev = NULL;
    q->linked = 0;
}

/* AVG on MPI's own collectives: MPI summed, herd divides. */
static void native_avg(mpi_req_t *q)
{
    const core_coll_args_t *a = &q->args;
    herd_comm_t *c = &q->c->base;
    int reduced = a->coll == HERD_COLL_ALL_REDUCE ||
                  a->coll == HERD_COLL_REDUCE_SCATTER ||
                  a->coll == HERD_COLL_REDUCE_SCATTER_V ||
                  (a->coll == HERD_COLL_REDUCE && c->rank == a->root);
    if (reduced && a->op == HERD_AVG && a->count)
        core_reduce_avg_finish(a->recvbuf, a->count, a->dtype, c->size);
}

void mpi_req_finish(mpi_req_t *q, herd_status_t st, const char *msg)
{
    if (q->done)
        return;
    q->done = 1;
    q->status = st;
    q->t_end = mpi_now_ns();
    core_flight_update(&q->c->w->flight, q->fr_id,
                       st == HERD_OK ? CORE_FR_COMPLETED : CORE_FR_STARTED, st,
                       q->t_end);
    if (msg)
        snprintf(q->err, sizeof(q->err), "%s", msg);
    unlink_req(q);
    if (q->native && st == HERD_OK)
        native_avg(q);
    mpi_req_timeline(q, HERD_TL_COLL, q->t_post, q->t_end);
}

static void poll_native(mpi_req_t *q)
{
    int flag = 0;
    MPI_Status status;
    int rc = MPI_Test(&q->mreq, &flag, &status);
    if (rc != MPI_SUCCESS) {
        herd_comm_t *c = &q->c->base;
        herd_status_t st = mpi_fail(c, rc, herd_coll_name(q->args.coll));
        mpi_req_finish(q, st, c->last_error);
        return;
    }
    if (!flag)
        return;
    if (q->args.coll == HERD_COLL_RECV) {
        int got = 0;
        MPI_Get_count(&status, mpi_dtype(q->args.dtype), &got);
        if ((uint64_t)got != q->args.count) {
            char msg[CORE_ERROR_MAX];
            snprintf(msg, sizeof(msg),
                     "recv: size mismatch: rank %d sent %d elements where "
                     "%zu were expected",
                     herd_comm_world_rank(&q->c->base, q->args.root), got,
                     q->args.count);
            mpi_req_finish(q, HERD_ERR_MISMATCH, msg);
            return;
        }
    }
    mpi_req_finish(q, HERD_OK, NULL);
}

static void poll_one(mpi_req_t *q)
{
    if (q->native)
        poll_native(q);
    else
        mpi_sched_progress(q);
}

void mpi_progress(mpi_world_t *w)
{
    for (mpi_req_t *q = w->active, *next; q; q = next) {
        next = q->next;
        poll_one(q);
    }
}

/* Members of q's group that did not reach q (world ranks, "1, 3"). */
static void missing_ranks(mpi_req_t *q, char *buf, size_t len)
{
    mpi_world_t *w = q->c->w;
    herd_comm_t *c = &q->c->base;
    int p = c->size, tag = (int)((unsigned)c->group_id % (unsigned)w->tag_ub);
    int64_t *got = calloc((size_t)p * 3, sizeof(int64_t));
    MPI_Request *rr = malloc((size_t)p * sizeof(MPI_Request));
    buf[0] = '\0';
    if (!got || !rr) {
        free(got);
        free(rr);
        return;
    }
    w->pos_msg[0] = c->group_id;
    w->pos_msg[1] = (int64_t)q->args.seq;
    for (int i = 0; i < p; i++) {
        rr[i] = MPI_REQUEST_NULL;
        if (i == c->rank)
            continue;
        int wr = herd_comm_world_rank(c, i);
        MPI_Request sr;
        if (MPI_Isend(w->pos_msg, 2, MPI_INT64_T, wr, tag, w->ctl, &sr) ==
            MPI_SUCCESS)
            MPI_Request_free(&sr); /* small: sent eagerly */
        MPI_Irecv(got + 3 * i, 2, MPI_INT64_T, wr, tag, w->ctl, &rr[i]);
    }
    double grace = c->timeout_s < 0.5 ? 0.5
                   : c->timeout_s > 5 ? 5
                                      : c->timeout_s;
    uint64_t end = mpi_now_ns() + (uint64_t)(grace * 1e9);
    int left = p - 1;
    while (left > 0 && mpi_now_ns() < end) {
        for (int i = 0; i < p; i++) { /* MPI_Test: one heard, one NULL */
            int flag = 0;
            if (rr[i] != MPI_REQUEST_NULL &&
                MPI_Test(&rr[i], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
                flag)
                left--;
        }
        mpi_progress(w);
        if (left > 0)
            usleep(1000);
    }
    size_t n = 0;
    for (int i = 0; i < p; i++) {
        if (i == c->rank)
            continue;
        int heard = rr[i] == MPI_REQUEST_NULL;
        if (!heard) {
            MPI_Cancel(&rr[i]);
            MPI_Wait(&rr[i], MPI_STATUS_IGNORE);
        }
        if (heard && got[3 * i] == c->group_id &&
            got[3 * i + 1] >= (int64_t)q->args.seq)
            continue;
        if (n + 16 < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? ", " : "",
                                  herd_comm_world_rank(c, i));
    }
    free(got);
    free(rr);
}

static void world_fail(mpi_world_t *w, const char *msg)
{
    if (w->fail_status != HERD_OK)
        return;
    w->fail_status = HERD_ERR_TIMEOUT;
    snprintf(w->fail_msg, sizeof(w->fail_msg), "%s", msg);
    char m[CORE_ERROR_MAX];
    snprintf(m, sizeof(m), "aborted after a timeout: %.400s", msg);
    while (w->active)
        mpi_req_finish(w->active, HERD_ERR_ABORTED, m);
    const char *dir = core_flight_dir();
    if (dir)
        mpi_flight_dump(w, dir, "timeout");
}

/* A monitored_barrier past its deadline: rank 0 names the ranks whose
 * report has not come (its receives still awaited); the others say rank
 * 0 did not release them. */
static void monitored_timeout(mpi_req_t *q)
{
    herd_comm_t *c = &q->c->base;
    int *absent = malloc((size_t)c->size * sizeof(int)), n = 0;
    for (uint32_t i = 0; absent && i < q->nact; i++)
        if (core_run_awaits(&q->run, q->astep[i]) &&
            q->run.sched.steps[q->astep[i]].kind == CORE_STEP_RECV)
            absent[n++] = q->run.sched.steps[q->astep[i]].peer;
    /* the runner posts them in rank order; MPI_Testsome compacts in order */
    char keep[CORE_ERROR_MAX], msg[CORE_ERROR_MAX];
    memcpy(keep, c->last_error, sizeof(keep));
    core_monitored_barrier_error(c, &q->args, c->rank == 0 ? absent : NULL, n,
                                 HERD_ERR_TIMEOUT);
    memcpy(msg, c->last_error, sizeof(msg));
    memcpy(c->last_error, keep, sizeof(keep));
    free(absent);
    mpi_req_finish(q, HERD_ERR_TIMEOUT, msg);
    world_fail(q->c->w, msg);
}

static double req_timeout_s(const mpi_req_t *q)
{
    return q->args.timeout_s > 0 ? q->args.timeout_s : q->c->base.timeout_s;
}

static void req_timeout(mpi_req_t *q)
{
    herd_comm_t *c = &q->c->base;
    const core_coll_args_t *a = &q->args;
    int p2p = a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV;
    char waiting[256] = "", missing[256] = "", msg[CORE_ERROR_MAX];
    if (a->coll == HERD_COLL_MONITORED_BARRIER) {
        monitored_timeout(q);
        return;
    }
    if (!q->native)
        mpi_sched_waiting(q, waiting, sizeof(waiting));
    if (!p2p)
        missing_ranks(q, missing, sizeof(missing));
    if (q->done)
        return; /* it completed during the grace period after all */
    int n;
    if (p2p)
        n = snprintf(msg, sizeof(msg),
                     "%s (group %d, tag %d) with rank %d timed out after "
                     "%.3g s on rank %d",
                     herd_coll_name(a->coll), c->group_id, a->tag,
                     herd_comm_world_rank(c, a->root), c->timeout_s,
                     c->world_rank);
    else
        n = snprintf(msg, sizeof(msg),
                     "%s (group %d, seq %" PRIu64 ") timed out after %.3g s "
                     "on rank %d",
                     herd_coll_name(a->coll), c->group_id, a->seq, c->timeout_s,
                     c->world_rank);
    if (missing[0] && n > 0 && (size_t)n < sizeof(msg))
        n += snprintf(msg + n, sizeof(msg) - (size_t)n,
                      ": rank(s) %s did not join", missing);
    if (waiting[0] && n > 0 && (size_t)n < sizeof(msg))
        snprintf(msg + n, sizeof(msg) - (size_t)n,
                 "; waiting for data from rank(s) %s", waiting);
    mpi_req_finish(q, HERD_ERR_TIMEOUT, msg);
    world_fail(q->c->w, msg);
}

static herd_status_t report(mpi_req_t *q)
{
    if (q->status != HERD_OK)
        core_comm_error(&q->c->base, q->status, "%s", q->err);
    return q->status;
}

herd_status_t mpi_req_wait(herd_req_t *req)
{
    mpi_req_t *q = (mpi_req_t *)req;
    mpi_world_t *w = q->c->w;
    uint64_t t0 = mpi_now_ns();
    uint64_t deadline = q->t_post + (uint64_t)(req_timeout_s(q) * 1e9);
    int waited = !q->done;
    while (!q->done) {
        mpi_progress(w);
        if (q->done)
            break;
        uint64_t t = mpi_now_ns();
        if (t >= deadline) {
            req_timeout(q);
            break;
        }
        if (t - t0 > 1000000000u) /* a long wait: a peer, not MPI's work */
            usleep(100);
        else
            sched_yield();
    }
    if (waited)
        mpi_req_timeline(q, HERD_TL_WAIT, t0, mpi_now_ns());
    return report(q);
}

herd_status_t mpi_req_test(herd_req_t *req, int *done)
{
    mpi_req_t *q = (mpi_req_t *)req;
    if (!q->done) {
        mpi_progress(q->c->w);
        uint64_t deadline = q->t_post + (uint64_t)(req_timeout_s(q) * 1e9);
        if (!q->done && mpi_now_ns() >= deadline)
            req_timeout(q);
    }
    *done = q->done;
    return q->done ? report(q) : HERD_OK;
}

void mpi_req_free(herd_req_t *req)
{
    mpi_req_t *q = (mpi_req_t *)req;
    if (!q->done)
        mpi_req_wait(req);
    /* A native request that failed while MPI still owns it: a receive is
     * cancelled, a send released; a collective cannot be either (MPI
     * forbids it), so it and its input copy stay to the end of MPI. */
    int live = q->native && q->mreq != MPI_REQUEST_NULL;
    if (live && q->args.coll == HERD_COLL_RECV) {
        MPI_Cancel(&q->mreq);
        MPI_Wait(&q->mreq, MPI_STATUS_IGNORE);
        live = 0;
    } else if (live && q->args.coll == HERD_COLL_SEND) {
        MPI_Request_free(&q->mreq);
        live = 0;
    }
    if (!q->native)
        mpi_sched_free(q);
    if (!live)
        free(q->in_copy);
    free(q);
}
