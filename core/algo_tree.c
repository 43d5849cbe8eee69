/* core/algo_tree.c - double binary tree all_reduce (as NCCL's tree
 * algorithm): each channel's range is split in two halves, each reduced
 * up one binary tree to its root and broadcast back down, chunk-pipelined.
 * Tree A numbers ranks as a heap (node i: children 2i+1, 2i+2); tree B
 * uses the mirrored numbering p-1-r, so ranks that are interior in A are
 * leaves in B and the two halves load different links.
 *
 * Cost: about 2 log2(p) hops of latency; each rank sends and receives at
 * most n (its two trees' halves up and down), pipelined over chunks.
 * With two or more channels, channel c carries tree c % 2 over its whole
 * range, so the trees use separate connections (as NCCL splits its
 * channels between the trees). With one channel both halves share its
 * connections: chunk j of A, then of B, on both ends of every connection,
 * which keeps FIFO matching but couples the two pipelines.
 */
#include "core/sched_algo.h"

typedef struct tnode {
    int parent;   /* -1 at the root */
    int child[2]; /* -1 if absent */
} tnode_t;

void core_tree_node(int p, int r, int mirror, int *parent, int child[2])
{
    int id = mirror ? p - 1 - r : r;
    *parent = id > 0 ? (id - 1) / 2 : -1;
    for (int k = 0; k < 2; k++)
        child[k] = 2 * id + 1 + k < p ? 2 * id + 1 + k : -1;
    if (!mirror)
        return;
    if (*parent >= 0)
        *parent = p - 1 - *parent;
    for (int k = 0; k < 2; k++)
        if (child[k] >= 0)
            child[k] = p - 1 - child[k];
}

static tnode_t tree_node(int p, int r, int mirror)
{
    tnode_t t;
    core_tree_node(p, r, mirror, &t.parent, t.child);
    return t;
}

/* One chunk [o, o+l) of one tree: reduce up, then broadcast down. */
static void tree_chunk(core_alg_t *a, const tnode_t *t, int ch, uint64_t o,
                       uint64_t l)
{
    int64_t prev = -1;
    core_buf_t cur = CORE_BUF_IN;
    for (int k = 0; k < 2; k++) {
        if (t->child[k] < 0)
            continue;
        prev = core_alg_step(a, CORE_STEP_RECV_REDUCE, t->child[k], ch, cur, o,
                             CORE_BUF_OUT, o, l, &prev, 1);
        cur = CORE_BUF_OUT;
    }
    int64_t have = prev;
    if (t->parent >= 0) {
        int64_t up = core_alg_step(a, CORE_STEP_SEND, t->parent, ch, cur, o,
                                   CORE_BUF_NONE, 0, l, &prev, 1);
        /* the result overwrites what the send up read (in place) */
        have = core_alg_step(a, CORE_STEP_RECV, t->parent, ch, CORE_BUF_NONE, 0,
                             CORE_BUF_OUT, o, l, &up, 1);
    }
    for (int k = 0; k < 2; k++)
        if (t->child[k] >= 0)
            core_alg_step(a, CORE_STEP_SEND, t->child[k], ch, CORE_BUF_OUT, o,
                          CORE_BUF_NONE, 0, l, &have, 1);
}

/* Channel range [coff, coff+cl) carried by the trees in `which` (bit t:
 * tree t), halves interleaved chunk by chunk when both. */
static void tree_range(core_alg_t *a, const tnode_t *tr, int which, int ch,
                       uint64_t coff, uint64_t cl)
{
    int both = which == 3;
    uint64_t ho[2] = {0, 0}, hl[2] = {cl, cl}, J[2];
    for (int t = 0; t < 2; t++) {
        if (both)
            hl[t] = core_split(cl, 2, (uint64_t)t, &ho[t]);
        J[t] = core_alg_nchunks(a, hl[t]);
    }
    uint64_t jmax = J[0] > J[1] ? J[0] : J[1];
    for (uint64_t j = 0; j < jmax; j++)
        for (int t = 0; t < 2; t++) {
            if (!(which >> t & 1) || j >= J[t])
                continue;
            uint64_t jo, jl = core_split(hl[t], J[t], j, &jo);
            if (jl)
                tree_chunk(a, &tr[t], ch, coff + ho[t] + jo, jl);
        }
}

herd_status_t core_algo_tree(core_alg_t *a)
{
    if (a->d->coll != HERD_COLL_ALL_REDUCE)
        return HERD_ERR_UNSUPPORTED;
    tnode_t tr[2] = {tree_node(a->p, a->rank, 0), tree_node(a->p, a->rank, 1)};
    for (int c = 0; c < a->nch && a->err == HERD_OK; c++) {
        uint64_t coff,
            cl = core_split(a->d->count, (uint64_t)a->nch, (uint64_t)c, &coff);
        if (cl)
            tree_range(a, tr, a->nch == 1 ? 3 : 1 << (c % 2), c, coff, cl);
    }
    return a->err;
}
