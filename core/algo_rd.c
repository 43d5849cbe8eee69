/* core/algo_rd.c - recursive doubling all_reduce for small messages: at
 * level k every rank exchanges its whole current vector with partner
 * rank ^ 2^k and reduces, so p' = 2^L ranks finish in L = log2 p' rounds
 * of n (one round at p = 2), against 2 log2 p' for rhd and 2(p-1) for the
 * ring. Every op a schedule uses is commutative (AVG reduces as SUM), so
 * both partners compute the same result.
 *
 * The other rem = p - p' ranks are folded in first, as in core/algo_rhd.c:
 * each even rank below 2*rem sends its vector to the odd rank above it,
 * which reduces it into OUT and takes part as new rank r/2; at the end the
 * odd rank sends the result back (+2 rounds).
 *
 * A level's send reads the current vector while its receive-reduce runs,
 * so the reduce writes the other buffer: levels alternate SCRATCH, OUT,
 * SCRATCH, ... Level 0 never writes OUT, which may alias IN (in place)
 * while IN is being sent; with L odd the result lands in SCRATCH and one
 * local copy moves it to OUT. Channels and chunks cut the vector into
 * pieces, each an independent chain over the levels. */
#include <stdlib.h>

#include "core/sched_algo.h"

typedef struct rd {
    core_alg_t *a;
    uint64_t n, np; /* elements, pieces */
    /* per piece: last writer of the vector, last send, the send before */
    int64_t *w, *s, *ps;
} rd_t;

/* One message of the whole vector, piece by piece: piece i depends on
 * w[i] and on after[i] (the send that read what it overwrites; NULL: none)
 * and becomes the new w[i] (or s[i] for sends). */
static void rd_msg(rd_t *h, core_step_kind_t kind, int peer, core_buf_t sb,
                   core_buf_t db, const int64_t *after)
{
    for (uint64_t i = 0; i < h->np; i++) {
        int ch;
        uint64_t off, len = core_alg_piece(h->a, h->n, i, &ch, &off);
        int64_t deps[2] = {h->w[i], after ? after[i] : -1};
        int64_t st =
            core_alg_step(h->a, kind, peer, ch, sb, off, db, off, len, deps, 2);
        if (kind == CORE_STEP_SEND) {
            h->ps[i] = h->s[i];
            h->s[i] = st;
        } else {
            h->w[i] = st;
        }
    }
}

static int rd_old(int nr, int rem)
{
    return nr < rem ? 2 * nr + 1 : nr + rem;
}

static void rd_levels(rd_t *h, int p2, int nr, int rem, core_buf_t cur)
{
    int lv = 0;
    for (int mask = 1; mask < p2; mask *= 2, lv++) {
        core_buf_t dst = lv % 2 ? CORE_BUF_OUT : CORE_BUF_SCRATCH;
        int peer = rd_old(nr ^ mask, rem);
        rd_msg(h, CORE_STEP_SEND, peer, cur, CORE_BUF_NONE, NULL);
        /* dst was read by the previous level's send; waiting for this
         * level's would deadlock unbuffered transports */
        rd_msg(h, CORE_STEP_RECV_REDUCE, peer, cur, dst, h->ps);
        cur = dst;
    }
    core_alg_scratch(h->a, h->n);
    if (cur == CORE_BUF_SCRATCH)
        rd_msg(h, CORE_STEP_COPY, -1, CORE_BUF_SCRATCH, CORE_BUF_OUT, h->s);
}

static void rd_allreduce(rd_t *h)
{
    int p = h->a->p, r = h->a->rank, p2 = 1;
    while (p2 * 2 <= p)
        p2 *= 2;
    int rem = p - p2;
    if (r < 2 * rem && r % 2 == 0) {
        rd_msg(h, CORE_STEP_SEND, r + 1, CORE_BUF_IN, CORE_BUF_NONE, NULL);
        /* OUT may alias IN */
        rd_msg(h, CORE_STEP_RECV, r + 1, CORE_BUF_NONE, CORE_BUF_OUT, h->s);
        return;
    }
    core_buf_t cur = CORE_BUF_IN;
    if (r < 2 * rem) {
        rd_msg(h, CORE_STEP_RECV_REDUCE, r - 1, CORE_BUF_IN, CORE_BUF_OUT,
               NULL);
        cur = CORE_BUF_OUT;
    }
    rd_levels(h, p2, r < 2 * rem ? r / 2 : r - rem, rem, cur);
    if (r < 2 * rem)
        rd_msg(h, CORE_STEP_SEND, r - 1, CORE_BUF_OUT, CORE_BUF_NONE, NULL);
}

herd_status_t core_algo_rd(core_alg_t *a)
{
    if (a->d->coll != HERD_COLL_ALL_REDUCE)
        return HERD_ERR_UNSUPPORTED;
    rd_t h = {.a = a, .n = a->d->count};
    if (h.n == 0)
        return HERD_OK;
    h.np = core_alg_npieces(a, h.n);
    h.w = core_alg_idx(a, h.np);
    h.s = core_alg_idx(a, h.np);
    h.ps = core_alg_idx(a, h.np);
    if (h.w && h.s && h.ps)
        rd_allreduce(&h);
    free(h.w);
    free(h.s);
    free(h.ps);
    return a->err;
}
