/* core/algo_ring.c - ring algorithms: all_reduce (reduce-scatter then
 * all-gather, 2(p-1) steps of n/p), all_gather and reduce_scatter (p-1
 * steps of n), broadcast and reduce (a pipelined chain of p-1 hops).
 *
 * Channels split the data into contiguous ranges, each an independent
 * ring. Within a channel every per-step block is cut into chunks; chunk j
 * of step s+1 depends only on chunk j of step s, so chunks stream around
 * the ring. Steps are emitted step-major (all chunks of step s before step
 * s+1), which is also the FIFO order on each connection; each chunk's
 * send before its receive, or (all_reduce with desc->recv_first) after.
 *
 * Rank r's schedule is rank 0's with peers rotated by r whenever the
 * sizes of what it sends do not depend on r, and is so in everything but
 * those sizes whenever no rank skips an empty chunk
 * (core_ring_rotational). */
#include <stdlib.h>

#include "core/sched_algo.h"

typedef struct ring {
    core_alg_t *a;
    int r, p, next, prev;
} ring_t;

static ring_t ring_make(core_alg_t *a)
{
    ring_t g = {a, a->rank, a->p, core_mod(a->rank + 1, a->p),
                core_mod(a->rank - 1, a->p)};
    return g;
}

/* Chunk j of block b of a channel range [base, base+n) cut into p blocks
 * of J chunks: returns length, sets *off (absolute). */
static uint64_t blk(const ring_t *g, uint64_t base, uint64_t n, int b,
                    uint64_t J, uint64_t j, uint64_t *off)
{
    uint64_t bo, co = 0;
    uint64_t bl = core_split(n, (uint64_t)g->p, (uint64_t)b, &bo);
    /* unchunked (the usual case): no division per step */
    uint64_t cl = J == 1 ? bl : core_split(bl, J, j, &co);
    *off = base + bo + co;
    return cl;
}

/* all_reduce: chunks per block of a channel range of n elements (cut
 * for the largest block, so every rank uses the same number). */
static uint64_t ring_ar_nchunks(const core_alg_t *a, uint64_t n)
{
    return core_alg_nchunks(a, (n + (uint64_t)a->p - 1) / (uint64_t)a->p);
}

/* all_reduce on channel range [base, base+n). OUT accumulates; the
 * schedule is also correct when IN and OUT are the same buffer. */
static void ring_ar(ring_t *g, int ch, uint64_t base, uint64_t n)
{
    core_alg_t *a = g->a;
    int p = g->p, r = g->r, rf = a->d->recv_first;
    uint64_t J = ring_ar_nchunks(a, n);
    int64_t *last = core_alg_idx(a, J);
    int64_t *rs_send = core_alg_idx(a, (uint64_t)(p - 1) * J);
    if (!last || !rs_send)
        goto out;
    for (int s = 0; s < p - 1; s++) {
        for (uint64_t j = 0; j < J; j++) {
            uint64_t so, ro;
            uint64_t sl = blk(g, base, n, core_mod(r - s, p), J, j, &so);
            uint64_t rl = blk(g, base, n, core_mod(r - s - 1, p), J, j, &ro);
            int64_t prev = last[j];
            if (rf)
                last[j] = core_alg_step(a, CORE_STEP_RECV_REDUCE, g->prev, ch,
                                        CORE_BUF_IN, ro, CORE_BUF_OUT, ro, rl,
                                        NULL, 0);
            rs_send[(uint64_t)s * J + j] =
                core_alg_step(a, CORE_STEP_SEND, g->next, ch,
                              s == 0 ? CORE_BUF_IN : CORE_BUF_OUT, so,
                              CORE_BUF_NONE, 0, sl, &prev, 1);
            if (!rf)
                last[j] = core_alg_step(a, CORE_STEP_RECV_REDUCE, g->prev, ch,
                                        CORE_BUF_IN, ro, CORE_BUF_OUT, ro, rl,
                                        NULL, 0);
        }
    }
    for (int s = 0; s < p - 1; s++) {
        for (uint64_t j = 0; j < J; j++) {
            uint64_t so, ro;
            uint64_t sl = blk(g, base, n, core_mod(r + 1 - s, p), J, j, &so);
            uint64_t rl = blk(g, base, n, core_mod(r - s, p), J, j, &ro);
            int64_t prev = last[j];
            /* the block arriving was read by this rank's send of step s */
            if (rf)
                last[j] = core_alg_step(a, CORE_STEP_RECV, g->prev, ch,
                                        CORE_BUF_NONE, 0, CORE_BUF_OUT, ro, rl,
                                        &rs_send[(uint64_t)s * J + j], 1);
            core_alg_step(a, CORE_STEP_SEND, g->next, ch, CORE_BUF_OUT, so,
                          CORE_BUF_NONE, 0, sl, &prev, 1);
            if (!rf)
                last[j] = core_alg_step(a, CORE_STEP_RECV, g->prev, ch,
                                        CORE_BUF_NONE, 0, CORE_BUF_OUT, ro, rl,
                                        &rs_send[(uint64_t)s * J + j], 1);
        }
    }
out:
    free(last);
    free(rs_send);
}

/* all_gather: channel part [coff, coff+cl) of every rank's block. */
static void ring_ag(ring_t *g, int ch, uint64_t coff, uint64_t cl)
{
    core_alg_t *a = g->a;
    int p = g->p, r = g->r;
    uint64_t cnt = a->d->count, J = core_alg_nchunks(a, cl);
    int64_t *last = core_alg_idx(a, J);
    if (!last)
        return;
    core_alg_step(a, CORE_STEP_COPY, -1, ch, CORE_BUF_IN, coff, CORE_BUF_OUT,
                  (uint64_t)r * cnt + coff, cl, NULL, 0);
    for (int s = 0; s < p - 1; s++) {
        for (uint64_t j = 0; j < J; j++) {
            uint64_t jo, jl = core_split(cl, J, j, &jo);
            uint64_t sb = (uint64_t)core_mod(r - s, p);
            uint64_t rb = (uint64_t)core_mod(r - s - 1, p);
            core_alg_step(a, CORE_STEP_SEND, g->next, ch,
                          s == 0 ? CORE_BUF_IN : CORE_BUF_OUT,
                          (s == 0 ? 0 : sb * cnt) + coff + jo, CORE_BUF_NONE, 0,
                          jl, &last[j], 1);
            last[j] =
                core_alg_step(a, CORE_STEP_RECV, g->prev, ch, CORE_BUF_NONE, 0,
                              CORE_BUF_OUT, rb * cnt + coff + jo, jl, NULL, 0);
        }
    }
    free(last);
}

/* reduce_scatter: partial sums travel in two alternating scratch slots
 * (a slot is rewritten only after the send that read it). */
static void ring_rs(ring_t *g, int ch, uint64_t coff, uint64_t cl)
{
    core_alg_t *a = g->a;
    int p = g->p, r = g->r;
    uint64_t cnt = a->d->count, J = core_alg_nchunks(a, cl);
    int64_t *last = core_alg_idx(a, J);
    int64_t *psend = core_alg_idx(a, J);
    if (!last || !psend)
        goto out;
    core_alg_scratch(a, (uint64_t)(p - 2 < 2 ? p - 2 : 2) * cnt);
    for (int s = 0; s < p - 1; s++) {
        for (uint64_t j = 0; j < J; j++) {
            uint64_t jo, jl = core_split(cl, J, j, &jo);
            uint64_t sb = (uint64_t)core_mod(r - s - 1, p);
            uint64_t rb = (uint64_t)core_mod(r - s - 2, p);
            uint64_t so = s == 0 ? sb * cnt : (uint64_t)((s - 1) % 2) * cnt;
            int64_t snd = core_alg_step(a, CORE_STEP_SEND, g->next, ch,
                                        s == 0 ? CORE_BUF_IN : CORE_BUF_SCRATCH,
                                        so + coff + jo, CORE_BUF_NONE, 0, jl,
                                        &last[j], 1);
            int fin = s == p - 2;
            int64_t war = s >= 2 && !fin ? psend[j] : -1;
            last[j] = core_alg_step(
                a, CORE_STEP_RECV_REDUCE, g->prev, ch, CORE_BUF_IN,
                rb * cnt + coff + jo, fin ? CORE_BUF_OUT : CORE_BUF_SCRATCH,
                (fin ? 0 : (uint64_t)(s % 2) * cnt) + coff + jo, jl, &war, 1);
            psend[j] = snd;
        }
    }
out:
    free(last);
    free(psend);
}

/* broadcast (chain root -> root+1 -> ... -> root-1) and reduce (chain
 * root+1 -> ... -> root, partial sums in SCRATCH), chunk-pipelined. */
static void ring_chain(ring_t *g, int ch, uint64_t coff, uint64_t cl)
{
    core_alg_t *a = g->a;
    int p = g->p, bc = a->d->coll == HERD_COLL_BROADCAST;
    int k = core_mod(g->r - a->d->root - (bc ? 0 : 1), p);
    uint64_t J = core_alg_nchunks(a, cl);
    if (!bc && k > 0 && k < p - 1)
        core_alg_scratch(a, a->d->count);
    for (uint64_t j = 0; j < J; j++) {
        uint64_t jo, jl = core_split(cl, J, j, &jo), o = coff + jo;
        int64_t got = -1;
        core_buf_t from = bc ? CORE_BUF_OUT : CORE_BUF_IN;
        if (k > 0 && bc) {
            got = core_alg_step(a, CORE_STEP_RECV, g->prev, ch, CORE_BUF_NONE,
                                0, CORE_BUF_OUT, o, jl, NULL, 0);
        } else if (k > 0) {
            from = k == p - 1 ? CORE_BUF_OUT : CORE_BUF_SCRATCH;
            got = core_alg_step(a, CORE_STEP_RECV_REDUCE, g->prev, ch,
                                CORE_BUF_IN, o, from, o, jl, NULL, 0);
        }
        if (k < p - 1)
            core_alg_step(a, CORE_STEP_SEND, g->next, ch, from, o,
                          CORE_BUF_NONE, 0, jl, &got, 1);
    }
}

herd_status_t core_algo_ring(core_alg_t *a)
{
    ring_t g = ring_make(a);
    herd_coll_t coll = a->d->coll;
    uint64_t n = a->d->count;
    for (int c = 0; c < a->nch && a->err == HERD_OK; c++) {
        uint64_t off, len = core_split(n, (uint64_t)a->nch, (uint64_t)c, &off);
        if (len == 0)
            continue;
        if (coll == HERD_COLL_ALL_REDUCE)
            ring_ar(&g, c, off, len);
        else if (coll == HERD_COLL_ALL_GATHER)
            ring_ag(&g, c, off, len);
        else if (coll == HERD_COLL_REDUCE_SCATTER)
            ring_rs(&g, c, off, len);
        else if (coll == HERD_COLL_BROADCAST || coll == HERD_COLL_REDUCE)
            ring_chain(&g, c, off, len);
        else
            return HERD_ERR_UNSUPPORTED;
    }
    return a->err;
}

/* all_reduce on a channel range of n elements emits a step for every
 * chunk of every block on every rank (none is empty and skipped) when
 * its smallest block, floor(n / p), has at least as many elements as
 * there are chunks per block. Blocks of every size are then cut into
 * the same number of chunks by every rank: only the sizes differ. */
static int ring_ar_dense(const core_alg_t *a, uint64_t n)
{
    return n == 0 || n / (uint64_t)a->p >= ring_ar_nchunks(a, n);
}

/* all_gather and reduce_scatter move channel parts of every rank's block,
 * whose sizes do not depend on the rank. all_reduce sends blocks
 * (r - s) mod p of each channel's range: the same sizes for every r only
 * when the range splits into p equal blocks (and then so do the chunks);
 * the same steps otherwise as long as no chunk is empty (a rank whose
 * excluded block is a smaller one would skip different steps).
 * Channel ranges have length q or q + 1 (core_split); an empty channel is
 * skipped by every rank alike. Broadcast and reduce are chains from the
 * root: never symmetric for p > 1. */
int core_ring_rotational(const core_alg_t *a, int except_counts)
{
    const core_sched_desc_t *d = a->d;
    uint64_t p = (uint64_t)d->nranks, nch = (uint64_t)d->channels;
    uint64_t q = d->count / nch, rem = d->count % nch;
    switch (d->coll) {
    case HERD_COLL_ALL_GATHER:
    case HERD_COLL_REDUCE_SCATTER:
        return 1;
    case HERD_COLL_ALL_REDUCE:
        if (except_counts)
            return ring_ar_dense(a, q) && (rem == 0 || ring_ar_dense(a, q + 1));
        return q % p == 0 && (rem == 0 || (q + 1) % p == 0);
    default:
        return 0;
    }
}
