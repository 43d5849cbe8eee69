/* core/algo_hier.c - hierarchical all_reduce for p = N nodes x L ranks per
 * node (desc->ranks_per_node; rank r is local rank r % L of node r / L):
 *   1. intra-node ring reduce-scatter: local rank l ends with block
 *      (l+1) % L of the channel range, summed over its node;
 *   2. inter-node all_reduce of that block among the N ranks with the
 *      same local rank (one per node): a ring, or with
 *      desc->hier_inter = TREE a double binary tree (cell k on tree k % 2);
 *   3. intra-node ring all-gather of the blocks.
 * Cost: 2(L-1) intra steps of n/L plus 2(N-1) inter steps of n/(L N): the
 * slow inter-node links carry 2(N-1)/N * n/L per rank instead of the
 * flat ring's 2(p-1)/p * n, spread over L parallel rings.
 *
 * Each block is cut into N sub-blocks (the inter-node ring's blocks) of J
 * chunks; every message carries one such cell, so dependencies connect
 * cells across phases and all three phases pipeline per cell. */
#include <stdlib.h>

#include "core/sched_algo.h"

typedef struct hier {
    core_alg_t *a;
    int L, N, l, node;
    int inext, iprev, xnext, xprev; /* intra / inter ring neighbours */
    uint64_t cb, cn, J, K;          /* channel range, chunks, cells/block */
    int ch;
    int tree;         /* inter-node part: double binary tree, not ring */
    int64_t *last;    /* K: latest writer of each cell of the own block */
    int64_t *rs_send; /* (L-1) * K: phase 1 sends (what phase 3 overwrites) */
    int64_t *x_send;  /* (N-1) * J: phase 2 reduce-scatter sends */
    int64_t *ag_last; /* K */
} hier_t;

/* Cell k (= sub-block m * J + chunk j) of block b: length, *off. */
static uint64_t hier_cell(const hier_t *h, int b, uint64_t k, uint64_t *off)
{
    uint64_t bo, so, co;
    uint64_t bl = core_split(h->cn, (uint64_t)h->L, (uint64_t)b, &bo);
    uint64_t sl = core_split(bl, (uint64_t)h->N, k / h->J, &so);
    uint64_t cl = core_split(sl, h->J, k % h->J, &co);
    *off = h->cb + bo + so + co;
    return cl;
}

static int64_t hier_xfer(hier_t *h, core_step_kind_t kind, int peer,
                         core_buf_t sb, core_buf_t db, int b, uint64_t k,
                         int64_t dep)
{
    uint64_t o, n = hier_cell(h, b, k, &o);
    if (kind == CORE_STEP_SEND)
        db = CORE_BUF_NONE;
    if (kind == CORE_STEP_RECV)
        sb = CORE_BUF_NONE;
    return core_alg_step(h->a, kind, peer, h->ch, sb, o, db, o, n, &dep, 1);
}

/* Phase 1: ring reduce-scatter inside the node into OUT. */
static void hier_intra_rs(hier_t *h)
{
    int L = h->L, l = h->l;
    for (int s = 0; s < L - 1; s++)
        for (uint64_t k = 0; k < h->K; k++) {
            h->rs_send[(uint64_t)s * h->K + k] =
                hier_xfer(h, CORE_STEP_SEND, h->inext,
                          s == 0 ? CORE_BUF_IN : CORE_BUF_OUT, CORE_BUF_NONE,
                          core_mod(l - s, L), k, h->last[k]);
            h->last[k] =
                hier_xfer(h, CORE_STEP_RECV_REDUCE, h->iprev, CORE_BUF_IN,
                          CORE_BUF_OUT, core_mod(l - s - 1, L), k, -1);
        }
}

/* Phase 2: ring all_reduce across nodes of the own block's sub-blocks. */
static void hier_inter(hier_t *h, int ob, core_buf_t src)
{
    int N = h->N, x = h->node;
    uint64_t J = h->J;
    for (int s = 0; s < N - 1; s++)
        for (uint64_t j = 0; j < J; j++) {
            uint64_t ks = (uint64_t)core_mod(x - s, N) * J + j;
            uint64_t kr = (uint64_t)core_mod(x - s - 1, N) * J + j;
            h->x_send[(uint64_t)s * J + j] = hier_xfer(
                h, CORE_STEP_SEND, h->xnext, s == 0 ? src : CORE_BUF_OUT,
                CORE_BUF_NONE, ob, ks, h->last[ks]);
            h->last[kr] = hier_xfer(h, CORE_STEP_RECV_REDUCE, h->xprev, src,
                                    CORE_BUF_OUT, ob, kr, h->last[kr]);
        }
    for (int s = 0; s < N - 1; s++)
        for (uint64_t j = 0; j < J; j++) {
            uint64_t ks = (uint64_t)core_mod(x + 1 - s, N) * J + j;
            uint64_t kr = (uint64_t)core_mod(x - s, N) * J + j;
            hier_xfer(h, CORE_STEP_SEND, h->xnext, CORE_BUF_OUT, CORE_BUF_NONE,
                      ob, ks, h->last[ks]);
            h->last[kr] =
                hier_xfer(h, CORE_STEP_RECV, h->xprev, CORE_BUF_NONE,
                          CORE_BUF_OUT, ob, kr, h->x_send[(uint64_t)s * J + j]);
        }
}

/* Phase 2 as a double binary tree across nodes: cell k is reduced up and
 * broadcast down tree k % 2 (heap or mirrored numbering of the nodes). */
static void hier_inter_tree(hier_t *h, int ob, core_buf_t src)
{
    int par[2], kid[2][2];
    for (int t = 0; t < 2; t++)
        core_tree_node(h->N, h->node, t, &par[t], kid[t]);
    for (uint64_t k = 0; k < h->K; k++) {
        int t = (int)(k % 2);
        int64_t prev = h->last[k];
        core_buf_t cur = src;
        for (int c = 0; c < 2; c++) {
            if (kid[t][c] < 0)
                continue;
            prev = hier_xfer(h, CORE_STEP_RECV_REDUCE, kid[t][c] * h->L + h->l,
                             cur, CORE_BUF_OUT, ob, k, prev);
            cur = CORE_BUF_OUT;
        }
        if (par[t] >= 0) {
            int up = par[t] * h->L + h->l;
            int64_t snd = hier_xfer(h, CORE_STEP_SEND, up, cur, CORE_BUF_NONE,
                                    ob, k, prev);
            /* the result overwrites what the send up read (in place) */
            prev = hier_xfer(h, CORE_STEP_RECV, up, CORE_BUF_NONE, CORE_BUF_OUT,
                             ob, k, snd);
        }
        for (int c = 0; c < 2; c++)
            if (kid[t][c] >= 0)
                hier_xfer(h, CORE_STEP_SEND, kid[t][c] * h->L + h->l,
                          CORE_BUF_OUT, CORE_BUF_NONE, ob, k, prev);
        h->last[k] = prev;
    }
}

/* Phase 3: ring all-gather inside the node. */
static void hier_intra_ag(hier_t *h)
{
    int L = h->L, l = h->l;
    for (int s = 0; s < L - 1; s++)
        for (uint64_t k = 0; k < h->K; k++) {
            hier_xfer(h, CORE_STEP_SEND, h->inext, CORE_BUF_OUT, CORE_BUF_NONE,
                      core_mod(l + 1 - s, L), k,
                      s == 0 ? h->last[k] : h->ag_last[k]);
            h->ag_last[k] = hier_xfer(
                h, CORE_STEP_RECV, h->iprev, CORE_BUF_NONE, CORE_BUF_OUT,
                core_mod(l - s, L), k, h->rs_send[(uint64_t)s * h->K + k]);
        }
}

static void hier_channel(hier_t *h)
{
    core_alg_t *a = h->a;
    uint64_t bmax = (h->cn + (uint64_t)h->L - 1) / (uint64_t)h->L;
    h->J = core_alg_nchunks(a, (bmax + (uint64_t)h->N - 1) / (uint64_t)h->N);
    h->K = (uint64_t)h->N * h->J;
    h->last = core_alg_idx(a, h->K);
    h->ag_last = core_alg_idx(a, h->K);
    h->rs_send = core_alg_idx(a, (uint64_t)(h->L - 1) * h->K);
    h->x_send = core_alg_idx(a, (uint64_t)(h->N - 1) * h->J);
    if (h->last && h->ag_last && h->rs_send && h->x_send) {
        hier_intra_rs(h);
        int ob = core_mod(h->l + 1, h->L);
        core_buf_t src = h->L > 1 ? CORE_BUF_OUT : CORE_BUF_IN;
        if (h->tree)
            hier_inter_tree(h, ob, src);
        else
            hier_inter(h, ob, src);
        hier_intra_ag(h);
    }
    free(h->last);
    free(h->ag_last);
    free(h->rs_send);
    free(h->x_send);
}

herd_status_t core_algo_hier(core_alg_t *a)
{
    if (a->d->coll != HERD_COLL_ALL_REDUCE)
        return HERD_ERR_UNSUPPORTED;
    int p = a->p, L = a->d->ranks_per_node;
    if (L <= 0 || L > p)
        L = p;
    if (p % L != 0)
        return HERD_ERR_INVALID_ARG;
    herd_algo_t inter = a->d->hier_inter;
    if (inter != HERD_ALGO_AUTO && inter != HERD_ALGO_RING &&
        inter != HERD_ALGO_TREE)
        return HERD_ERR_INVALID_ARG;
    hier_t h = {.a = a,
                .L = L,
                .N = p / L,
                .l = a->rank % L,
                .node = a->rank / L,
                .tree = inter == HERD_ALGO_TREE};
    int nb = h.node * L;
    h.inext = nb + core_mod(h.l + 1, L);
    h.iprev = nb + core_mod(h.l - 1, L);
    h.xnext = core_mod(h.node + 1, h.N) * L + h.l;
    h.xprev = core_mod(h.node - 1, h.N) * L + h.l;
    for (int c = 0; c < a->nch && a->err == HERD_OK; c++) {
        h.cn = core_split(a->d->count, (uint64_t)a->nch, (uint64_t)c, &h.cb);
        h.ch = c;
        if (h.cn)
            hier_channel(&h);
    }
    return a->err;
}
