/* core/algo_v.c - schedules of the uneven collectives and of
 * monitored_barrier.
 *
 * all_gather_v, reduce_scatter_v and all_to_all_v are lowered direct
 * (pairwise): at round k = 1..p-1 rank r sends to r+k and receives from
 * r-k, one message per peer of that peer's (or this rank's) block, cut
 * into channels and chunks like algo_direct.c's. Both ends compute a
 * message's length from the same count, so empty blocks are skipped on
 * both sides and FIFO matching holds. reduce_scatter_v reduces its
 * messages into OUT in arrival order, chained per piece.
 *
 * monitored_barrier is gloo's: every rank sends a zero-element message to
 * rank 0, which receives them all and only then answers each rank. An
 * engine that times out on rank 0 can name the ranks whose message did
 * not come (core_monitored_barrier_error). */
#include <stdlib.h>

#include "core/sched_algo.h"

/* Element offsets of the blocks of `v` (p entries; NULL on failure). */
static uint64_t *prefix(core_alg_t *a, const size_t *v)
{
    uint64_t *off = malloc(((size_t)a->p + 1) * sizeof(*off));
    if (!off) {
        a->err = HERD_ERR_NO_MEMORY;
        return NULL;
    }
    off[0] = 0;
    for (int r = 0; r < a->p; r++)
        off[r + 1] = off[r] + v[r];
    return off;
}

/* One message of len elements, cut into pieces; no dependencies. */
static void v_msg(core_alg_t *a, core_step_kind_t kind, int peer, core_buf_t sb,
                  uint64_t so, core_buf_t db, uint64_t dof, uint64_t len)
{
    uint64_t np = core_alg_npieces(a, len);
    for (uint64_t i = 0; i < np; i++) {
        int ch;
        uint64_t off, pl = core_alg_piece(a, len, i, &ch, &off);
        core_alg_step(a, kind, peer, ch, sb, so + off, db, dof + off, pl, NULL,
                      0);
    }
}

static void all_gather_v(core_alg_t *a)
{
    int p = a->p, r = a->rank;
    const size_t *n = a->d->counts;
    uint64_t *off = prefix(a, n);
    if (!off)
        return;
    v_msg(a, CORE_STEP_COPY, -1, CORE_BUF_IN, 0, CORE_BUF_OUT, off[r], n[r]);
    for (int k = 1; k < p; k++) {
        int to = core_mod(r + k, p), from = core_mod(r - k, p);
        v_msg(a, CORE_STEP_SEND, to, CORE_BUF_IN, 0, CORE_BUF_NONE, 0, n[r]);
        v_msg(a, CORE_STEP_RECV, from, CORE_BUF_NONE, 0, CORE_BUF_OUT,
              off[from], n[from]);
    }
    free(off);
}

static void reduce_scatter_v(core_alg_t *a)
{
    int p = a->p, r = a->rank;
    const size_t *n = a->d->counts;
    uint64_t *off = prefix(a, n);
    uint64_t mine = n[r], np = core_alg_npieces(a, mine);
    int64_t *last = off ? core_alg_idx(a, np) : NULL;
    if (!last) {
        free(off);
        return;
    }
    for (int k = 1; k < p; k++) {
        int to = core_mod(r + k, p), from = core_mod(r - k, p);
        v_msg(a, CORE_STEP_SEND, to, CORE_BUF_IN, off[to], CORE_BUF_NONE, 0,
              n[to]);
        for (uint64_t i = 0; i < np; i++) {
            int ch;
            uint64_t po, pl = core_alg_piece(a, mine, i, &ch, &po);
            core_buf_t src = k == 1 ? CORE_BUF_IN : CORE_BUF_OUT;
            uint64_t so = (k == 1 ? off[r] : 0) + po;
            last[i] = core_alg_step(a, CORE_STEP_RECV_REDUCE, from, ch, src, so,
                                    CORE_BUF_OUT, po, pl, &last[i], 1);
        }
    }
    free(last);
    free(off);
}

static void all_to_all_v(core_alg_t *a)
{
    int p = a->p, r = a->rank;
    const size_t *sn = a->d->counts, *rn = a->d->recv_counts;
    uint64_t *so = prefix(a, sn);
    uint64_t *ro = so ? prefix(a, rn) : NULL;
    if (ro) {
        v_msg(a, CORE_STEP_COPY, -1, CORE_BUF_IN, so[r], CORE_BUF_OUT, ro[r],
              sn[r]);
        for (int k = 1; k < p; k++) {
            int to = core_mod(r + k, p), from = core_mod(r - k, p);
            v_msg(a, CORE_STEP_SEND, to, CORE_BUF_IN, so[to], CORE_BUF_NONE, 0,
                  sn[to]);
            v_msg(a, CORE_STEP_RECV, from, CORE_BUF_NONE, 0, CORE_BUF_OUT,
                  ro[from], rn[from]);
        }
    }
    free(so);
    free(ro);
}

static void monitored_barrier(core_alg_t *a)
{
    int p = a->p, r = a->rank;
    if (r != 0) {
        int64_t s = core_alg_step0(a, CORE_STEP_SEND, 0, CORE_BUF_NONE, 0,
                                   CORE_BUF_NONE, 0, 0, NULL, 0);
        core_alg_step0(a, CORE_STEP_RECV, 0, CORE_BUF_NONE, 0, CORE_BUF_NONE, 0,
                       0, &s, 1);
        return;
    }
    int64_t *got = core_alg_idx(a, (uint64_t)p);
    if (!got)
        return;
    for (int q = 1; q < p; q++)
        got[q] = core_alg_step0(a, CORE_STEP_RECV, q, CORE_BUF_NONE, 0,
                                CORE_BUF_NONE, 0, 0, NULL, 0);
    /* the first answer waits for every report, each later one for the
     * answer before it: O(p) dependencies, not O(p^2) */
    int64_t prev = core_alg_step0(a, CORE_STEP_SEND, 1, CORE_BUF_NONE, 0,
                                  CORE_BUF_NONE, 0, 0, got + 1, p - 1);
    for (int q = 2; q < p; q++)
        prev = core_alg_step0(a, CORE_STEP_SEND, q, CORE_BUF_NONE, 0,
                              CORE_BUF_NONE, 0, 0, &prev, 1);
    free(got);
}

herd_status_t core_algo_v(core_alg_t *a)
{
    switch (a->d->coll) {
    case HERD_COLL_ALL_GATHER_V:
        all_gather_v(a);
        break;
    case HERD_COLL_REDUCE_SCATTER_V:
        reduce_scatter_v(a);
        break;
    case HERD_COLL_ALL_TO_ALL_V:
        all_to_all_v(a);
        break;
    case HERD_COLL_MONITORED_BARRIER:
        monitored_barrier(a);
        break;
    default:
        return HERD_ERR_UNSUPPORTED;
    }
    return a->err;
}
