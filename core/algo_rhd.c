/* core/algo_rhd.c - recursive halving-doubling all_reduce (Rabenseifner)
 * for any p: a reduce-scatter by recursive halving (log2 p' exchanges of
 * n/2, n/4, ...) then an all-gather by recursive doubling (the mirror
 * image), on p' = the largest power of two <= p ranks.
 *
 * The other rem = p - p' ranks are folded in first (MPICH style): among
 * ranks 0 .. 2*rem-1 each even rank sends its whole vector to the odd one
 * above it, which reduces it and takes part as new rank r/2; ranks >=
 * 2*rem become r - rem. At the end each odd rank sends the result back.
 * Cost: 2 log2(p') steps (+2 when p is not a power of two), moving
 * 2 (p'-1)/p' n per rank.
 *
 * reduce_scatter uses the halving alone over the p*count input (new rank
 * b owns the blocks of the old ranks it stands for), accumulating in
 * scratch; a folded odd rank forwards its partner's block at the end.
 *
 * The whole vector is one range; every message is cut into channel and
 * chunk pieces, and dependencies follow the element ranges: a piece
 * depends on the pieces that wrote what it reads (or that read what it
 * overwrites), found in offset-sorted write logs.
 *
 * The exchanges are step-synchronous, as MPI_Sendrecv makes them: an
 * exchange's sends go once every piece of the one before has been
 * received, not piece by piece as their data is ready. Chunks that
 * ran ahead put two peers' traffic on one link at once, which the links
 * serve no faster (the bytes a rank moves are the same) and TCP serves
 * worse: side by side on the testbed the overlapped pieces cost 5-25 %
 * (two senders on one port lose packets), and the synchronous exchanges
 * take the closed form's time in most runs (BENCHMARKS.md, "rhd's
 * exchanges, one at a time"). */
#include <stdlib.h>

#include "core/sched_algo.h"

typedef struct rhd {
    core_alg_t *a;
    int p2, rem, nr, levels; /* power of two, folded ranks, new rank */
    uint64_t n;              /* elements of the vector being reduced */
    core_buf_t acc; /* where partial sums live: OUT, or SCRATCH for RS */
    int64_t *deps;
    uint64_t deps_cap;
    core_wlog_t w, w2;    /* writers of OUT (current, spare) */
    core_wlog_t *sent;    /* per level: the reduce-scatter's send pieces */
    core_wlog_t pre;      /* folded even rank: its send of IN */
    int64_t ex_lo, ex_hi; /* the last exchange's receive steps */
} rhd_t;

static int rhd_old(const rhd_t *h, int nr)
{
    return nr < h->rem ? 2 * nr + 1 : nr + h->rem;
}

/* Element offset of new rank b's block. all_reduce: p2 balanced blocks;
 * reduce_scatter: the blocks of the old ranks it stands for (a folded
 * pair owns two). */
static uint64_t rhd_boff(const rhd_t *h, int b)
{
    uint64_t off;
    if (h->a->d->coll == HERD_COLL_REDUCE_SCATTER)
        return (uint64_t)(b < h->rem ? 2 * b : b + h->rem) * h->a->d->count;
    core_split(h->n, (uint64_t)h->p2, (uint64_t)b, &off);
    return b >= h->p2 ? h->n : off;
}

/* Pieces of [off, off+len): each depends on the steps in `rd` over its
 * range and is logged in `wr` (either may be NULL). */
static void rhd_msg(rhd_t *h, core_step_kind_t kind, int peer, core_buf_t sb,
                    core_buf_t db, uint64_t off, uint64_t len,
                    const core_wlog_t *rd, core_wlog_t *wr)
{
    core_wlog_msg(h->a, kind, peer, sb, off, db, off, len, rd, wr, &h->deps,
                  &h->deps_cap);
}

/* An exchange's send: after every receive of the last exchange. Not its
 * sends: a send is done in the simulator when its last byte has left, in
 * the real engines when the socket or the network library took it, and
 * waiting for the former held the next exchange back where the real
 * engines do not wait. */
static void rhd_send(rhd_t *h, int peer, core_buf_t sb, uint64_t off,
                     uint64_t len, const core_wlog_t *rd, core_wlog_t *wr)
{
    core_wlog_msg_after(h->a, CORE_STEP_SEND, peer, sb, off, CORE_BUF_NONE, off,
                        len, rd, wr, h->ex_lo, h->ex_hi, &h->deps,
                        &h->deps_cap);
    h->ex_lo = core_alg_next(h->a); /* this exchange's receive comes next */
}

static void rhd_exchanged(rhd_t *h)
{
    h->ex_hi = core_alg_next(h->a);
}

/* Recursive halving: afterwards this rank owns block nr, reduced. */
static void rhd_halving(rhd_t *h, core_buf_t src)
{
    int lo = 0, hi = h->p2;
    for (int mask = h->p2 / 2, lv = h->levels - 1; mask >= 1; mask /= 2, lv--) {
        int peer = rhd_old(h, h->nr ^ mask), mid = lo + mask;
        int upper = (h->nr & mask) != 0;
        int klo = upper ? mid : lo, khi = upper ? hi : mid;
        int slo = upper ? lo : mid, shi = upper ? mid : hi;
        uint64_t so = rhd_boff(h, slo), ko = rhd_boff(h, klo);
        rhd_send(h, peer, src, so, rhd_boff(h, shi) - so, &h->w, &h->sent[lv]);
        core_wlog_clear(&h->w2);
        rhd_msg(h, CORE_STEP_RECV_REDUCE, peer, src, h->acc, ko,
                rhd_boff(h, khi) - ko, &h->w, &h->w2);
        rhd_exchanged(h);
        core_wlog_t t = h->w;
        h->w = h->w2;
        h->w2 = t;
        src = h->acc;
        lo = klo;
        hi = khi;
    }
}

/* Recursive doubling: the held range grows from block nr to all. */
static void rhd_doubling(rhd_t *h)
{
    int lo = h->nr, hi = h->nr + 1;
    for (int mask = 1, lv = 0; mask < h->p2; mask *= 2, lv++) {
        int peer = rhd_old(h, h->nr ^ mask);
        int before = (h->nr & mask) != 0;
        int plo = before ? lo - mask : hi, phi = before ? lo : hi + mask;
        uint64_t o = rhd_boff(h, lo), po = rhd_boff(h, plo);
        rhd_send(h, peer, CORE_BUF_OUT, o, rhd_boff(h, hi) - o, &h->w, NULL);
        /* arriving data overwrites what the halving sent at this level */
        core_wlog_t got = {0};
        rhd_msg(h, CORE_STEP_RECV, peer, CORE_BUF_NONE, CORE_BUF_OUT, po,
                rhd_boff(h, phi) - po, &h->sent[lv], &got);
        rhd_exchanged(h);
        core_wlog_clear(&h->w2);
        const core_wlog_t *parts[2] = {before ? &got : &h->w,
                                       before ? &h->w : &got};
        for (int k = 0; k < 2; k++)
            for (uint64_t i = 0; i < parts[k]->n; i++)
                core_wlog_add(h->a, &h->w2, parts[k]->off[i], parts[k]->len[i],
                              parts[k]->step[i]);
        core_wlog_free(&got);
        core_wlog_t t = h->w;
        h->w = h->w2;
        h->w2 = t;
        lo = before ? plo : lo;
        hi = before ? hi : phi;
    }
}

static void rhd_allreduce(rhd_t *h)
{
    core_alg_t *a = h->a;
    int r = a->rank;
    core_buf_t src = CORE_BUF_IN;
    if (r < 2 * h->rem && r % 2 == 0) {
        rhd_msg(h, CORE_STEP_SEND, r + 1, CORE_BUF_IN, CORE_BUF_NONE, 0, h->n,
                NULL, &h->pre);
        rhd_msg(h, CORE_STEP_RECV, r + 1, CORE_BUF_NONE, CORE_BUF_OUT, 0, h->n,
                &h->pre, NULL);
        return;
    }
    if (r < 2 * h->rem) {
        rhd_msg(h, CORE_STEP_RECV_REDUCE, r - 1, CORE_BUF_IN, CORE_BUF_OUT, 0,
                h->n, NULL, &h->w);
        rhd_exchanged(h);
        src = CORE_BUF_OUT;
    }
    rhd_halving(h, src);
    rhd_doubling(h);
    if (r < 2 * h->rem)
        rhd_msg(h, CORE_STEP_SEND, r - 1, CORE_BUF_OUT, CORE_BUF_NONE, 0, h->n,
                &h->w, NULL);
}

/* reduce_scatter: halve over the p*count input, accumulating in scratch;
 * then each rank copies its block out, and a folded pair's odd rank
 * sends the even one its block. */
static void rhd_reduce_scatter(rhd_t *h)
{
    core_alg_t *a = h->a;
    int r = a->rank;
    uint64_t cnt = a->d->count;
    core_buf_t src = CORE_BUF_IN;
    if (r < 2 * h->rem && r % 2 == 0) {
        rhd_msg(h, CORE_STEP_SEND, r + 1, CORE_BUF_IN, CORE_BUF_NONE, 0, h->n,
                NULL, NULL);
        rhd_msg(h, CORE_STEP_RECV, r + 1, CORE_BUF_NONE, CORE_BUF_OUT, 0, cnt,
                NULL, NULL);
        return;
    }
    core_alg_scratch(a, h->n);
    if (r < 2 * h->rem) {
        rhd_msg(h, CORE_STEP_RECV_REDUCE, r - 1, CORE_BUF_IN, CORE_BUF_SCRATCH,
                0, h->n, NULL, &h->w);
        rhd_exchanged(h);
        src = CORE_BUF_SCRATCH;
    }
    rhd_halving(h, src);
    uint64_t own = (uint64_t)r * cnt;
    if (r < 2 * h->rem)
        rhd_msg(h, CORE_STEP_SEND, r - 1, CORE_BUF_SCRATCH, CORE_BUF_NONE,
                own - cnt, cnt, &h->w, NULL);
    uint64_t np = core_alg_npieces(a, cnt);
    for (uint64_t i = 0; i < np; i++) {
        int ch;
        uint64_t po, pl = core_alg_piece(a, cnt, i, &ch, &po);
        int nd = core_wlog_deps(a, &h->w, own + po, pl, &h->deps, &h->deps_cap);
        core_alg_step(a, CORE_STEP_COPY, -1, ch, CORE_BUF_SCRATCH, own + po,
                      CORE_BUF_OUT, po, pl, h->deps, nd);
    }
}

herd_status_t core_algo_rhd(core_alg_t *a)
{
    int rs = a->d->coll == HERD_COLL_REDUCE_SCATTER;
    if (a->d->coll != HERD_COLL_ALL_REDUCE && !rs)
        return HERD_ERR_UNSUPPORTED;
    rhd_t h = {.a = a,
               .p2 = 1,
               .n = a->d->count * (rs ? (uint64_t)a->p : 1),
               .acc = rs ? CORE_BUF_SCRATCH : CORE_BUF_OUT};
    while (h.p2 * 2 <= a->p) {
        h.p2 *= 2;
        h.levels++;
    }
    h.rem = a->p - h.p2;
    h.nr = a->rank < 2 * h.rem ? (a->rank % 2 ? a->rank / 2 : -1)
                               : a->rank - h.rem;
    h.sent = calloc((size_t)h.levels + 1, sizeof(*h.sent));
    if (!h.sent)
        return HERD_ERR_NO_MEMORY;
    if (h.n > 0 && rs)
        rhd_reduce_scatter(&h);
    else if (h.n > 0)
        rhd_allreduce(&h);
    for (int i = 0; i <= h.levels; i++)
        core_wlog_free(&h.sent[i]);
    free(h.sent);
    core_wlog_free(&h.w);
    core_wlog_free(&h.w2);
    core_wlog_free(&h.pre);
    free(h.deps);
    return a->err;
}
