/* core/algo_binomial.c - binomial trees rooted at desc->root: broadcast
 * and reduce (chunk-pipelined, ceil(log2 p) rounds), gather and scatter
 * (subtrees of blocks travel as one message per level).
 *
 * Ranks are renumbered relative to the root (v = rank - root mod p). Node
 * v's parent is v minus its lowest set bit; its children are v + m for the
 * powers of two m below that bit (below the next power of two >= p for
 * the root). Gather/scatter stage a subtree's blocks in SCRATCH in
 * relative order; messages are cut where absolute rank order wraps so the
 * root reads and writes its absolute-order buffers directly. */
#include <stdlib.h>

#include "core/sched_algo.h"

typedef struct bino {
    core_alg_t *a;
    int p, v, root;
    int top; /* lowest set bit of v; for the root: pow2 >= p */
    uint64_t cnt;
    int64_t *deps; /* scratch list for write-log queries */
    uint64_t deps_cap;
} bino_t;

static int bino_abs(const bino_t *b, int v)
{
    return (v + b->root) % b->p;
}

static bino_t bino_make(core_alg_t *a)
{
    bino_t b = {.a = a, .p = a->p, .root = a->d->root, .cnt = a->d->count};
    b.v = core_mod(a->rank - b.root, b.p);
    if (b.v == 0) {
        b.top = 1;
        while (b.top < b.p)
            b.top *= 2;
    } else {
        b.top = b.v & -b.v;
    }
    return b;
}

/* Blocks in this node's subtree (itself included). */
static int bino_sub(const bino_t *b)
{
    return b->top < b->p - b->v ? b->top : b->p - b->v;
}

/* One contiguous message cut into channel/chunk pieces. `rd` (if set)
 * gives the writers of the source range (offsets in the source buffer),
 * `wr` (if set) records this step as the writer of the destination. */
static void bino_msg(bino_t *b, core_step_kind_t kind, int peer, core_buf_t sb,
                     uint64_t so, core_buf_t db, uint64_t dof, uint64_t len,
                     const core_wlog_t *rd, core_wlog_t *wr)
{
    core_wlog_msg(b->a, kind, peer, sb, so, db, dof, len, rd, wr, &b->deps,
                  &b->deps_cap);
}

/* Transfer of relative blocks [u0, u1) between node `self_v` and `peer`,
 * cut where absolute order wraps. On the root side offsets are absolute
 * (abs * cnt); elsewhere relative to the staging node (u - base) * cnt. */
static void bino_blocks(bino_t *b, core_step_kind_t kind, int peer_v, int u0,
                        int u1, core_buf_t buf, int base, const core_wlog_t *rd,
                        core_wlog_t *wr)
{
    int u = u0;
    while (u < u1) {
        int x = bino_abs(b, u);
        int nb = u1 - u < b->p - x ? u1 - u : b->p - x;
        uint64_t o =
            base < 0 ? (uint64_t)x * b->cnt : (uint64_t)(u - base) * b->cnt;
        uint64_t len = (uint64_t)nb * b->cnt;
        if (kind == CORE_STEP_SEND)
            bino_msg(b, kind, bino_abs(b, peer_v), buf, o, CORE_BUF_NONE, 0,
                     len, rd, NULL);
        else
            bino_msg(b, kind, bino_abs(b, peer_v), CORE_BUF_NONE, 0, buf, o,
                     len, NULL, wr);
        u += nb;
    }
}

static void bino_bcast(bino_t *b, int ch, uint64_t coff, uint64_t cl)
{
    core_alg_t *a = b->a;
    uint64_t J = core_alg_nchunks(a, cl);
    for (uint64_t j = 0; j < J; j++) {
        uint64_t jo, jl = core_split(cl, J, j, &jo), o = coff + jo;
        int64_t got = -1;
        if (b->v > 0)
            got =
                core_alg_step(a, CORE_STEP_RECV, bino_abs(b, b->v - b->top), ch,
                              CORE_BUF_NONE, 0, CORE_BUF_OUT, o, jl, NULL, 0);
        for (int m = b->top / 2; m >= 1; m /= 2)
            if (b->v + m < b->p)
                core_alg_step(a, CORE_STEP_SEND, bino_abs(b, b->v + m), ch,
                              CORE_BUF_OUT, o, CORE_BUF_NONE, 0, jl, &got, 1);
    }
}

static void bino_reduce(bino_t *b, int ch, uint64_t coff, uint64_t cl)
{
    core_alg_t *a = b->a;
    uint64_t J = core_alg_nchunks(a, cl);
    core_buf_t acc = b->v == 0 ? CORE_BUF_OUT : CORE_BUF_SCRATCH;
    if (b->v > 0 && b->top > 1 && b->v + 1 < b->p)
        core_alg_scratch(a, b->cnt);
    for (uint64_t j = 0; j < J; j++) {
        uint64_t jo, jl = core_split(cl, J, j, &jo), o = coff + jo;
        int64_t prev = -1;
        core_buf_t cur = CORE_BUF_IN;
        for (int m = 1; m < b->top && b->v + m < b->p; m *= 2) {
            prev =
                core_alg_step(a, CORE_STEP_RECV_REDUCE, bino_abs(b, b->v + m),
                              ch, cur, o, acc, o, jl, &prev, 1);
            cur = acc;
        }
        if (b->v > 0)
            core_alg_step(a, CORE_STEP_SEND, bino_abs(b, b->v - b->top), ch,
                          cur, o, CORE_BUF_NONE, 0, jl, &prev, 1);
    }
}

static void bino_gather(bino_t *b)
{
    core_alg_t *a = b->a;
    int sub = bino_sub(b), v = b->v;
    core_wlog_t log = {0};
    if (v == 0) {
        core_alg_step(a, CORE_STEP_COPY, -1, 0, CORE_BUF_IN, 0, CORE_BUF_OUT,
                      (uint64_t)a->rank * b->cnt, b->cnt, NULL, 0);
        for (int m = 1; m < b->p; m *= 2)
            bino_blocks(b, CORE_STEP_RECV, m, m, 2 * m < b->p ? 2 * m : b->p,
                        CORE_BUF_OUT, -1, NULL, NULL);
        return;
    }
    core_buf_t src = CORE_BUF_IN;
    if (sub > 1) {
        core_alg_scratch(a, (uint64_t)sub * b->cnt);
        int64_t cp = core_alg_step(a, CORE_STEP_COPY, -1, 0, CORE_BUF_IN, 0,
                                   CORE_BUF_SCRATCH, 0, b->cnt, NULL, 0);
        core_wlog_add(a, &log, 0, b->cnt, cp);
        for (int m = 1; m < sub; m *= 2)
            bino_blocks(b, CORE_STEP_RECV, v + m, v + m,
                        v + (2 * m < sub ? 2 * m : sub), CORE_BUF_SCRATCH, v,
                        NULL, &log);
        src = CORE_BUF_SCRATCH;
    }
    bino_blocks(b, CORE_STEP_SEND, v - b->top, v, v + sub, src, v,
                sub > 1 ? &log : NULL, NULL);
    core_wlog_free(&log);
}

static void bino_scatter(bino_t *b)
{
    core_alg_t *a = b->a;
    int sub = bino_sub(b), v = b->v;
    core_wlog_t log = {0};
    if (v == 0) {
        core_alg_step(a, CORE_STEP_COPY, -1, 0, CORE_BUF_IN,
                      (uint64_t)a->rank * b->cnt, CORE_BUF_OUT, 0, b->cnt, NULL,
                      0);
        for (int m = b->top / 2; m >= 1; m /= 2)
            if (m < b->p)
                bino_blocks(b, CORE_STEP_SEND, m, m,
                            2 * m < b->p ? 2 * m : b->p, CORE_BUF_IN, -1, NULL,
                            NULL);
        return;
    }
    if (sub == 1) {
        bino_blocks(b, CORE_STEP_RECV, v - b->top, v, v + 1, CORE_BUF_OUT, v,
                    NULL, NULL);
        return;
    }
    core_alg_scratch(a, (uint64_t)sub * b->cnt);
    bino_blocks(b, CORE_STEP_RECV, v - b->top, v, v + sub, CORE_BUF_SCRATCH, v,
                NULL, &log);
    for (int m = b->top / 2; m >= 1; m /= 2)
        if (m < sub)
            bino_blocks(b, CORE_STEP_SEND, v + m, v + m,
                        v + (2 * m < sub ? 2 * m : sub), CORE_BUF_SCRATCH, v,
                        &log, NULL);
    bino_msg(b, CORE_STEP_COPY, -1, CORE_BUF_SCRATCH, 0, CORE_BUF_OUT, 0,
             b->cnt, &log, NULL);
    core_wlog_free(&log);
}

herd_status_t core_algo_binomial(core_alg_t *a)
{
    bino_t b = bino_make(a);
    herd_coll_t coll = a->d->coll;
    if (coll == HERD_COLL_GATHER)
        bino_gather(&b);
    else if (coll == HERD_COLL_SCATTER)
        bino_scatter(&b);
    for (int c = 0; c < a->nch &&
                    (coll == HERD_COLL_BROADCAST || coll == HERD_COLL_REDUCE);
         c++) {
        uint64_t off,
            len = core_split(b.cnt, (uint64_t)a->nch, (uint64_t)c, &off);
        if (len == 0)
            continue;
        if (coll == HERD_COLL_BROADCAST)
            bino_bcast(&b, c, off, len);
        else
            bino_reduce(&b, c, off, len);
    }
    free(b.deps);
    return a->err;
}
