/* sim/gloo_lower.c - algorithm "gloo": the schedules PyTorch's gloo
 * backend runs for CPU tensors (ProcessGroupGloo over gloo's own
 * algorithms), lowered to core/ schedules of the same shape for the
 * simulator's rendezvous transport (sim/exec.c, docs/network-model.md):
 *
 *  - all_reduce: gloo's ring (gloo/allreduce.cc: reduce-scatter, then
 *    all-gather), the buffer cut into segments of at most 1 MiB (gloo's
 *    kMaxSegmentSize), at least two per rank, each loop iteration
 *    waiting for the operations it issued two iterations before and
 *    then posting a receive and a send: two segments in flight each way,
 *    so that collectives running at once (ProcessGroupGloo's worker
 *    threads share one connection per pair) take turns on it segment by
 *    segment;
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
#include <string.h>

#include "sim/sim.h"

/* Chunk size that cuts each of p blocks of `count` elements in two. */
static uint64_t halves(uint64_t count, int p, size_t es)
{
    uint64_t block = (count + (uint64_t)p - 1) / (uint64_t)p;
    return ((block + 1) / 2) * es;
}

/* gloo's AllreduceOptions::kMaxSegmentSize: the largest send or receive
 * of its ring all_reduce. */
#define GLOO_MAX_SEGMENT_BYTES ((uint64_t)1 << 20)

static uint64_t round_up(uint64_t v, uint64_t m)
{
    return (v + m - 1) / m * m;
}

/* One all_reduce's segments: nseg segments of seg elements, `per` per
 * rank (gloo's numSegments, segmentBytes, numSegmentsPerRank). */
typedef struct gseg {
    uint64_t count, seg, nseg, per;
} gseg_t;

static gseg_t gloo_segments(uint64_t count, int p, size_t es)
{
    uint64_t total = count * es, max = es * (GLOO_MAX_SEGMENT_BYTES / es);
    if (max == 0)
        max = es;
    uint64_t n = (total + max - 1) / max;
    if (n < 2 * (uint64_t)p)
        n = 2 * (uint64_t)p;
    n = round_up(n, (uint64_t)p);
    gseg_t g = {count, round_up((total + n - 1) / n, es) / es, n,
                n / (uint64_t)p};
    return g;
}

/* Elements of segment x (mod nseg) from *off; 0 past the buffer's end. */
static uint64_t seg_len(const gseg_t *g, uint64_t x, uint64_t *off)
{
    *off = (x % g->nseg) * g->seg;
    return *off >= g->count           ? 0
           : g->count - *off < g->seg ? g->count - *off
                                      : g->seg;
}

/* What one loop iteration posted (receive, send; -1: nothing), and
 * `last`: the latest iteration up to this one that posted anything. */
typedef struct gops {
    int64_t step[2];
    int64_t last;
} gops_t;

/* Iteration q posts after waiting for everything posted up to iteration
 * `upto` (q - 2; q - 1 for the all-gather's first, which follows the
 * reduce-scatter's two final waits). The ops of the latest iteration k1
 * that posted follow everything up to k1 - 2, and those of the one
 * before it, k2, everything up to k2 - 2, so depending on both covers
 * all up to `upto`: at most four steps, however many posted nothing. */
static int gops_deps(const gops_t *o, int64_t upto, int64_t dep[4])
{
    int n = 0;
    int64_t k = upto >= 0 ? o[upto].last : -1;
    for (int b = 0; b < 2 && k >= 0; b++) {
        for (int j = 0; j < 2; j++)
            if (o[k].step[j] >= 0)
                dep[n++] = o[k].step[j];
        k = k > 0 ? o[k - 1].last : -1;
    }
    return n;
}

/* gloo's ring all_reduce: rank r receives from r + 1 and sends to r - 1.
 * Reduce-scatter iteration i receives segment (r + 2) S + i into OUT,
 * reduced with IN, and sends segment (r + 1) S + i (from IN while
 * i < S, its own data; afterwards the sum it received S iterations
 * before); the all-gather then passes the reduced segments on, r S + i
 * out and (r + 1) S + i in. S segments per rank, p S in all. */
static herd_status_t lower_ar(const core_sched_desc_t *d, core_sched_t *out)
{
    int p = d->nranks, r = d->rank;
    size_t es = d->elem_size ? d->elem_size : 1;
    if (p < 2 || d->count == 0) {
        core_sched_desc_t c = *d;
        c.algo = HERD_ALGO_RING;
        return core_sched_lower(&c, out);
    }
    if (d->count > UINT64_MAX / es / 2)
        return HERD_ERR_OVERFLOW;
    gseg_t g = gloo_segments(d->count, p, es);
    uint64_t up = (uint64_t)(r + 1) % (uint64_t)p, m = g.nseg - g.per;
    gops_t *o = calloc(2 * m, sizeof(*o));
    if (!o)
        return HERD_ERR_NO_MEMORY;
    memset(out, 0, sizeof(*out));
    out->desc = *d;
    out->desc.channels = 1;
    herd_status_t st = HERD_OK;
    for (uint64_t q = 0; q < 2 * m && st == HERD_OK; q++) {
        int ag = q >= m;
        uint64_t i = ag ? q - m : q, so, ro;
        uint64_t sx = (ag ? (uint64_t)r : up) * g.per + i;
        uint64_t rx = (ag ? up : up + 1) * g.per + i;
        uint64_t sl = seg_len(&g, sx, &so), rl = seg_len(&g, rx, &ro);
        int64_t dep[4];
        int nd = gops_deps(o, (int64_t)q - (q == m ? 1 : 2), dep);
        int64_t rv = -1, sd = -1;
        if (rl)
            rv =
                core_sched_add(out, ag ? CORE_STEP_RECV : CORE_STEP_RECV_REDUCE,
                               (int)up, 0, ag ? CORE_BUF_NONE : CORE_BUF_IN,
                               ag ? 0 : ro, CORE_BUF_OUT, ro, rl, dep, nd);
        if (sl && rv >= -1)
            sd = core_sched_add(out, CORE_STEP_SEND, (r + p - 1) % p, 0,
                                !ag && i < g.per ? CORE_BUF_IN : CORE_BUF_OUT,
                                so, CORE_BUF_NONE, 0, sl, dep, nd);
        if (rv < -1 || sd < -1) /* core_sched_add's negative status */
            st = (herd_status_t)(rv < -1 ? rv : sd);
        o[q] = (gops_t){{rv, sd},
                        rv >= 0 || sd >= 0 ? (int64_t)q
                        : q > 0            ? o[q - 1].last
                                           : -1};
    }
    free(o);
    if (st != HERD_OK)
        core_sched_fini(out);
    return st;
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
    herd_status_t st = lower_ar(&ar, out);
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
        return lower_ar(&d, out);
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
