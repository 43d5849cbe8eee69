/* core/algo_direct.c - direct (pairwise) algorithms: every rank talks to
 * every other rank once. all_to_all and all_gather (p-1 messages of n out
 * and in, one round), gather and scatter (the root sends or receives p-1
 * messages), reduce_scatter (p-1 messages, reduced into OUT in arrival
 * order per chunk).
 *
 * Peers are visited in the pairwise order r+k / r-k (k = 1..p-1), so at
 * round k each rank sends to one peer and receives from another and no
 * rank is hot-spotted. Messages are cut into channels and chunks; no step
 * depends on another except the reduction chain of reduce_scatter. */
#include <stdlib.h>

#include "core/sched_algo.h"

/* One message of len elements, cut into pieces. */
static void direct_msg(core_alg_t *a, core_step_kind_t kind, int peer,
                       core_buf_t sb, uint64_t so, core_buf_t db, uint64_t dof,
                       uint64_t len)
{
    uint64_t np = core_alg_npieces(a, len);
    for (uint64_t i = 0; i < np; i++) {
        int ch;
        uint64_t off, pl = core_alg_piece(a, len, i, &ch, &off);
        core_alg_step(a, kind, peer, ch, sb, so + off, db, dof + off, pl, NULL,
                      0);
    }
}

/* all_to_all (block q of IN to rank q) and all_gather (IN to everyone). */
static void direct_exchange(core_alg_t *a, int a2a)
{
    int p = a->p, r = a->rank;
    uint64_t n = a->d->count;
    direct_msg(a, CORE_STEP_COPY, -1, CORE_BUF_IN, a2a ? (uint64_t)r * n : 0,
               CORE_BUF_OUT, (uint64_t)r * n, n);
    for (int k = 1; k < p; k++) {
        int to = core_mod(r + k, p), from = core_mod(r - k, p);
        direct_msg(a, CORE_STEP_SEND, to, CORE_BUF_IN,
                   a2a ? (uint64_t)to * n : 0, CORE_BUF_NONE, 0, n);
        direct_msg(a, CORE_STEP_RECV, from, CORE_BUF_NONE, 0, CORE_BUF_OUT,
                   (uint64_t)from * n, n);
    }
}

static void direct_rooted(core_alg_t *a, int gather)
{
    int p = a->p, r = a->rank, root = a->d->root;
    uint64_t n = a->d->count;
    if (r != root) {
        if (gather)
            direct_msg(a, CORE_STEP_SEND, root, CORE_BUF_IN, 0, CORE_BUF_NONE,
                       0, n);
        else
            direct_msg(a, CORE_STEP_RECV, root, CORE_BUF_NONE, 0, CORE_BUF_OUT,
                       0, n);
        return;
    }
    direct_msg(a, CORE_STEP_COPY, -1, CORE_BUF_IN, gather ? 0 : (uint64_t)r * n,
               CORE_BUF_OUT, gather ? (uint64_t)r * n : 0, n);
    for (int k = 1; k < p; k++) {
        int q = core_mod(r + k, p);
        if (gather)
            direct_msg(a, CORE_STEP_RECV, q, CORE_BUF_NONE, 0, CORE_BUF_OUT,
                       (uint64_t)q * n, n);
        else
            direct_msg(a, CORE_STEP_SEND, q, CORE_BUF_IN, (uint64_t)q * n,
                       CORE_BUF_NONE, 0, n);
    }
}

static void direct_rs(core_alg_t *a)
{
    int p = a->p, r = a->rank;
    uint64_t n = a->d->count, np = core_alg_npieces(a, n);
    int64_t *last = core_alg_idx(a, np);
    if (!last)
        return;
    for (int k = 1; k < p; k++) {
        int to = core_mod(r + k, p), from = core_mod(r - k, p);
        direct_msg(a, CORE_STEP_SEND, to, CORE_BUF_IN, (uint64_t)to * n,
                   CORE_BUF_NONE, 0, n);
        for (uint64_t i = 0; i < np; i++) {
            int ch;
            uint64_t off, pl = core_alg_piece(a, n, i, &ch, &off);
            core_buf_t src = k == 1 ? CORE_BUF_IN : CORE_BUF_OUT;
            uint64_t so = (k == 1 ? (uint64_t)r * n : 0) + off;
            last[i] = core_alg_step(a, CORE_STEP_RECV_REDUCE, from, ch, src, so,
                                    CORE_BUF_OUT, off, pl, &last[i], 1);
        }
    }
    free(last);
}

herd_status_t core_algo_direct(core_alg_t *a)
{
    switch (a->d->coll) {
    case HERD_COLL_ALL_TO_ALL:
        direct_exchange(a, 1);
        break;
    case HERD_COLL_ALL_GATHER:
        direct_exchange(a, 0);
        break;
    case HERD_COLL_GATHER:
        direct_rooted(a, 1);
        break;
    case HERD_COLL_SCATTER:
        direct_rooted(a, 0);
        break;
    case HERD_COLL_REDUCE_SCATTER:
        direct_rs(a);
        break;
    default:
        return HERD_ERR_UNSUPPORTED;
    }
    return a->err;
}
