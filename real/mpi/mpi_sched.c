/* real/mpi/mpi_sched.c - herd's core/ schedules (ring, tree, rhd, ...)
 * on MPI point-to-point: core/sched_run.c decides which step may start,
 * this file is its transport. Each step becomes an MPI_Isend or
 * MPI_Irecv on the communicator's schedule twin (`sc`), with a tag made
 * of the op's sequence number and the step's channel: MPI does not let
 * messages with one (source, tag, communicator) overtake each other, and
 * the runner hands each connection's steps over in schedule order, so
 * the k-th send meets the k-th receive as the schedule rules require.
 * Requests in flight sit in a compact array tested with MPI_Testsome. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real/mpi/mpi_internal.h"

/* 64 channels at most (herd_comm_set_channels), so 6 bits of the tag. */
#define MPI_SCHED_CH_BITS 6

static int sched_tag(const mpi_req_t *q, int channel)
{
    uint64_t seqs = ((uint64_t)q->c->w->tag_ub + 1) >> MPI_SCHED_CH_BITS;
    return (int)(((q->args.seq % seqs) << MPI_SCHED_CH_BITS) |
                 (uint64_t)channel);
}

static herd_status_t start(mpi_req_t *q, uint32_t step, const core_step_t *st,
                           void *buf, int send)
{
    herd_comm_t *c = &q->c->base;
    if (st->count > INT_MAX)
        return core_comm_error(c, HERD_ERR_OVERFLOW,
                               "%s: a message of %llu elements exceeds MPI's "
                               "int counts (use smaller chunks)",
                               herd_coll_name(q->args.coll),
                               (unsigned long long)st->count);
    MPI_Datatype dt = mpi_dtype(q->args.dtype);
    int tag = sched_tag(q, st->channel), rc;
    MPI_Request *r = &q->areq[q->nact];
    if (send)
        rc = MPI_Isend(buf, (int)st->count, dt, st->peer, tag, q->c->sc, r);
    else
        rc = MPI_Irecv(buf, (int)st->count, dt, st->peer, tag, q->c->sc, r);
    if (rc != MPI_SUCCESS)
        return mpi_fail(c, rc, send ? "schedule send" : "schedule receive");
    q->astep[q->nact++] = step;
    return HERD_OK;
}

static herd_status_t t_send(void *ctx, uint32_t step, const core_step_t *st,
                            const void *buf, size_t bytes)
{
    (void)bytes;
    return start(ctx, step, st, (void *)buf, 1);
}

static herd_status_t t_recv(void *ctx, uint32_t step, const core_step_t *st,
                            void *buf, size_t bytes)
{
    (void)bytes;
    return start(ctx, step, st, buf, 0);
}

static const core_run_ops_t transport = {.send = t_send, .recv = t_recv};

herd_status_t mpi_sched_post(mpi_req_t *q, herd_algo_t algo)
{
    herd_comm_t *c = &q->c->base;
    herd_status_t st = core_run_init(&q->run, c, &q->args, algo,
                                     q->c->w->local_size, &transport, q);
    if (st != HERD_OK)
        return st;
    uint32_t n = q->run.sched.nsteps ? q->run.sched.nsteps : 1;
    q->areq = malloc(n * sizeof(*q->areq));
    q->astep = malloc(n * sizeof(*q->astep));
    q->aidx = malloc(n * sizeof(*q->aidx));
    q->asts = malloc(n * sizeof(*q->asts));
    if (!q->areq || !q->astep || !q->aidx || !q->asts) {
        mpi_sched_free(q);
        return core_comm_error(c, HERD_ERR_NO_MEMORY,
                               "%s: out of memory for its schedule",
                               herd_coll_name(q->args.coll));
    }
    mpi_req_link(q);
    st = core_run_start(&q->run);
    if (st != HERD_OK)
        mpi_req_finish(q, st, c->last_error);
    else if (q->run.finished)
        mpi_req_finish(q, HERD_OK, NULL);
    return HERD_OK;
}

/* A finished receive: the size the schedule expected, from its peer. */
static herd_status_t check_recv(mpi_req_t *q, uint32_t step, MPI_Status *status,
                                char *msg, size_t len)
{
    const core_step_t *st = &q->run.sched.steps[step];
    if (st->kind == CORE_STEP_SEND)
        return HERD_OK;
    int got = 0;
    int truncated = status->MPI_ERROR != MPI_SUCCESS;
    MPI_Get_count(status, mpi_dtype(q->args.dtype), &got);
    if (!truncated && (uint64_t)got == st->count)
        return HERD_OK;
    snprintf(msg, len,
             "size mismatch: rank %d sent %s%d elements where %llu were "
             "expected (ranks called different sizes)",
             herd_comm_world_rank(&q->c->base, st->peer),
             truncated ? "more than " : "", got, (unsigned long long)st->count);
    return HERD_ERR_MISMATCH;
}

herd_status_t mpi_sched_progress(mpi_req_t *q)
{
    if (q->done || !q->nact)
        return q->status;
    int *idx = q->aidx;
    MPI_Status *sts = q->asts;
    uint32_t n0 = q->nact;
    int outn = 0;
    char msg[CORE_ERROR_MAX] = "";
    herd_status_t st = HERD_OK;
    int rc = MPI_Testsome((int)n0, q->areq, &outn, idx, sts);
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
        st = mpi_fail(&q->c->base, rc, herd_coll_name(q->args.coll));
        snprintf(msg, sizeof(msg), "%s", q->c->base.last_error);
        goto out;
    }
    for (int k = 0; k < outn && outn != MPI_UNDEFINED && st == HERD_OK; k++) {
        uint32_t step = q->astep[idx[k]];
        if (rc == MPI_ERR_IN_STATUS && sts[k].MPI_ERROR != MPI_SUCCESS &&
            sts[k].MPI_ERROR != MPI_ERR_TRUNCATE) {
            st = mpi_fail(&q->c->base, sts[k].MPI_ERROR,
                          herd_coll_name(q->args.coll));
            snprintf(msg, sizeof(msg), "%s", q->c->base.last_error);
            break;
        }
        if (rc != MPI_ERR_IN_STATUS)
            sts[k].MPI_ERROR = MPI_SUCCESS;
        st = check_recv(q, step, &sts[k], msg, sizeof(msg));
        if (st == HERD_OK) {
            st = core_run_step_done(&q->run, step);
            if (st != HERD_OK)
                snprintf(msg, sizeof(msg), "%s", q->c->base.last_error);
        }
    }
    /* Drop the finished requests (now MPI_REQUEST_NULL); steps posted by
     * step_done above were appended after n0 and are kept. */
    uint32_t k = 0;
    for (uint32_t i = 0; i < q->nact; i++)
        if (q->areq[i] != MPI_REQUEST_NULL) {
            q->areq[k] = q->areq[i];
            q->astep[k++] = q->astep[i];
        }
    q->nact = k;
out:
    if (st != HERD_OK)
        mpi_req_finish(q, st, msg);
    else if (q->run.finished)
        mpi_req_finish(q, HERD_OK, NULL);
    return st;
}

void mpi_sched_waiting(const mpi_req_t *q, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < q->nact; i++) {
        uint32_t s = q->astep[i];
        if (!core_run_awaits(&q->run, s))
            continue;
        int wr = herd_comm_world_rank(&q->c->base, q->run.sched.steps[s].peer);
        char item[16];
        snprintf(item, sizeof(item), "%d", wr);
        int dup = 0;
        for (uint32_t j = 0; j < i && !dup; j++)
            dup = core_run_awaits(&q->run, q->astep[j]) &&
                  q->run.sched.steps[q->astep[j]].peer ==
                      q->run.sched.steps[s].peer;
        if (!dup && n + 16 < len)
            n +=
                (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", item);
    }
}

/* Receives still posted are cancelled (MPI would write into freed
 * memory); sends cannot be, so their buffers are left to the end of the
 * process rather than freed under MPI. */
void mpi_sched_free(mpi_req_t *q)
{
    int sends = 0;
    for (uint32_t i = 0; i < q->nact; i++) {
        if (q->areq[i] == MPI_REQUEST_NULL)
            continue;
        if (core_run_awaits(&q->run, q->astep[i])) {
            MPI_Cancel(&q->areq[i]);
            MPI_Wait(&q->areq[i], MPI_STATUS_IGNORE);
        } else {
            MPI_Request_free(&q->areq[i]);
            sends = 1;
        }
    }
    if (!sends)
        core_run_fini(&q->run);
    free(q->areq);
    free(q->astep);
    free(q->aidx);
    free(q->asts);
    q->areq = NULL;
    q->astep = NULL;
    q->aidx = NULL;
    q->asts = NULL;
    q->nact = 0;
}
