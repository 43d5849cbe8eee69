/* sim/gloo_lower.c - algorithm "gloo": the schedules PyTorch's gloo
 * backend runs for CPU tensors (ProcessGroupGloo over gloo's own
 * algorithms), lowered to core/ schedules of the same shape for the
 * simulator's rendezvous transport (sim/exec.c, docs/network-model.md):
 *
 *  - all_reduce: gloo's ring (reduce-scatter, then all-gather), each
 *    rank's block cut into two segments (gloo keeps one segment in flight
 *    while it reduces the other), each segment's receive posted before
 *    its send;
 *  - all_gather: gloo's ring, each block sent as two halves, each half's
 *    send posted before its receive;
 *  - reduce_scatter: what ProcessGroupGloo does for reduce_scatter_tensor,
 *    an all_reduce of the whole input (the ring above, into scratch) and a
 *    copy of the rank's block;
 *  - every other kind: herd's default schedule for its size.
 *
 * The posting order is what matters: under gloo's transport a message
 * moves only once the receiver's ready-to-receive notice has arrived, and
 * that notice travels on the same TCP connection as the data, behind what
 * is queued there. A rank that posts a send before its receive, to a peer
 * that already said it is ready, puts its data ahead of its own notice:
 * with two ranks the peer's data waits for it (all_gather 1.5x, a lone
 * send/recv exchange 2x, measured in BENCHMARKS.md). Everything runs on
 * one channel: gloo connects each pair of ranks with one connection. */
#include <stdlib.h>

#include "sim/sim.h"

/* Chunk size that cuts each of p blocks of `count` elements in two. */
static uint64_t halves(uint64_t count, int p, size_t es)
{
    uint64_t block = (count + (uint64_t)p - 1) / (uint64_t)p;
    return ((block + 1) / 2) * es;
}

/* reduce_scatter as an all_reduce of p * count elements into SCRATCH,
 * then this rank's block copied to OUT once every receive is done. */
static herd_status_t lower_rs(const core_sched_desc_t *d, core_sched_t *out)
{
    uint64_t p = (uint64_t)d->nranks;
    if (d->count > UINT64_MAX / p)
        return HERD_ERR_OVERFLOW;
    core_sched_desc_t ar = *d;
    ar.coll = HERD_COLL_ALL_REDUCE;
    ar.count = d->count * p;
    ar.chunk_bytes = halves(ar.count, d->nranks, d->elem_size);
    herd_status_t st = core_sched_lower(&ar, out);
    if (st != HERD_OK)
        return st;
    int64_t *deps = malloc((out->nsteps + 1) * sizeof(*deps));
    if (!deps) {
        core_sched_fini(out);
        return HERD_ERR_NO_MEMORY;
    }
    int n = 0;
    for (uint32_t i = 0; i < out->nsteps; i++) {
        core_step_t *s = &out->steps[i];
        if (s->src_buf == CORE_BUF_OUT)
            s->src_buf = CORE_BUF_SCRATCH;
        if (s->dst_buf == CORE_BUF_OUT)
            s->dst_buf = CORE_BUF_SCRATCH;
        if (s->kind == CORE_STEP_RECV || s->kind == CORE_STEP_RECV_REDUCE)
            deps[n++] = i;
    }
    out->scratch_count = ar.count;
    int64_t k = core_sched_add(out, CORE_STEP_COPY, -1, 0, CORE_BUF_SCRATCH,
                               (uint64_t)d->rank * d->count, CORE_BUF_OUT, 0,
                               d->count, deps, n);
    free(deps);
    out->desc = *d; /* what was asked, for readers of the schedule */
    if (k < 0) {
        core_sched_fini(out);
        return (herd_status_t)k;
    }
    return HERD_OK;
}

static herd_status_t lower(const core_sched_desc_t *desc, core_sched_t *out)
{
    core_sched_desc_t d = *desc;
    d.channels = 1;
    d.recv_first = 0;
    d.ranks_per_node = 0;
    switch (d.coll) {
    case HERD_COLL_ALL_REDUCE:
        d.algo = HERD_ALGO_RING;
        d.recv_first = 1;
        d.chunk_bytes = halves(d.count, d.nranks, d.elem_size);
        return core_sched_lower(&d, out);
    case HERD_COLL_ALL_GATHER:
        if (d.nranks > 0 && d.count > UINT64_MAX / (uint64_t)d.nranks)
            return HERD_ERR_OVERFLOW;
        d.algo = HERD_ALGO_RING;
        d.chunk_bytes =
            halves(d.count * (uint64_t)d.nranks, d.nranks, d.elem_size);
        return core_sched_lower(&d, out);
    case HERD_COLL_REDUCE_SCATTER:
        d.algo = HERD_ALGO_RING;
        d.recv_first = 1;
        return d.nranks > 1 ? lower_rs(&d, out) : core_sched_lower(&d, out);
    default:
        d.algo = core_sched_pick(d.coll, d.nranks, d.count * d.elem_size);
        return core_sched_lower(&d, out);
    }
}

herd_status_t sim_gloo_lower(const core_sched_desc_t *desc, core_sched_t *out)
{
    herd_status_t st = lower(desc, out);
    if (st == HERD_OK && desc->algo == HERD_ALGO_GLOO)
        out->desc.algo = HERD_ALGO_GLOO; /* what was asked, for readers */
    return st;
}
