/* sim/nccl_lower.c - the NCCL model's execution half: a collective
 * instance whose algorithm is "nccl" is lowered into core/ schedules
 * shaped like NCCL's (see sim/nccl_model.h and docs/nccl-model.md).
 *
 * Rings: each of NCCL's channels is an independent core/ ring over its
 * contiguous part of the data, visiting nodes in order and, inside each
 * node, starting at a GPU rotated by the channel, so channels leave and
 * enter nodes through different GPUs and NICs as NCCL's rings do.
 * Trees (all_reduce): per channel, NCCL's shape: a chain inside every
 * node up to the channel's head GPU (core/ ring reduce), a double binary
 * tree across the heads (core/ tree all_reduce) and the chain back down
 * (core/ ring broadcast), cut into segments that pipeline through the
 * three phases. Sub-schedules are lowered in their own rank numbering and
 * embedded with their peers, buffers and dependencies remapped. */
#include <stdlib.h>
#include <string.h>

#include "sim/nccl_model.h"
#include "sim/sim.h"

/* Tree segments per channel at most: enough to overlap the three phases,
 * few enough to keep lowering cheap (each phase chunks further inside). */
#define NCCL_TREE_MAX_SEGS 16
/* Sub-schedule channel k of NCCL channel c is connection label
 * c + k * stride (the across-node trees run two: one per binary tree). */
#define NCCL_SUBCHANNEL_STRIDE 64

/* How a sub-schedule maps into the collective's schedule. */
typedef struct emb {
    const int *peer; /* sub rank -> group rank */
    int channel;
    core_buf_t to[3]; /* sub IN / OUT / SCRATCH -> buffer */
    uint64_t base[3]; /* offset added */
    int blocked;      /* sub buffer laid out in p blocks, or -1 */
    uint64_t blen;    /* its block length (elements) */
    uint64_t bstride; /* target block stride */
    const int *bmap;  /* sub block -> target block */
    int64_t pre;      /* step every dependency-free step waits for, -1 */
} emb_t;

static void remap(const emb_t *e, int buf, uint64_t off, core_buf_t *b,
                  uint64_t *o)
{
    if (buf > CORE_BUF_SCRATCH) {
        *b = (core_buf_t)buf;
        *o = off;
        return;
    }
    *b = e->to[buf];
    if (buf == e->blocked)
        *o = e->base[buf] + (uint64_t)e->bmap[off / e->blen] * e->bstride +
             off % e->blen;
    else
        *o = e->base[buf] + off;
}

/* Append `sub` to `out` under `e`. */
static herd_status_t embed(const emb_t *e, const core_sched_t *sub,
                           core_sched_t *out)
{
    uint32_t base = out->nsteps;
    int64_t small[64], *dv = small;
    uint32_t cap = 64;
    herd_status_t st = HERD_OK;
    for (uint32_t i = 0; i < sub->nsteps && st == HERD_OK; i++) {
        const core_step_t *s = &sub->steps[i];
        if (s->ndeps + 1 > cap) {
            if (dv != small)
                free(dv);
            cap = s->ndeps + 1;
            dv = malloc(cap * sizeof(*dv));
            if (!dv)
                return HERD_ERR_NO_MEMORY;
        }
        int nd = 0;
        for (uint32_t k = 0; k < s->ndeps; k++)
            dv[nd++] = (int64_t)sub->deps[s->dep_off + k] + base;
        if (nd == 0 && e->pre >= 0)
            dv[nd++] = e->pre;
        core_buf_t sb, db;
        uint64_t so, dof;
        remap(e, s->src_buf, s->src_off, &sb, &so);
        remap(e, s->dst_buf, s->dst_off, &db, &dof);
        int peer = s->peer >= 0 ? e->peer[s->peer] : -1;
        int64_t r = core_sched_add(out, (core_step_kind_t)s->kind, peer,
                                   e->channel +
                                       (int)s->channel * NCCL_SUBCHANNEL_STRIDE,
                                   sb, so, db, dof, s->count, dv, nd);
        if (r < 0)
            st = (herd_status_t)r;
    }
    if (dv != small)
        free(dv);
    return st;
}

/* Lower `d` (in sub numbering) and embed it; the sub-schedule's scratch
 * gets a fresh range after everything used so far. */
static herd_status_t sub_lower(const core_sched_desc_t *d, emb_t *e,
                               core_sched_t *out)
{
    core_sched_t sub;
    memset(&sub, 0, sizeof(sub));
    herd_status_t st = core_sched_lower(d, &sub);
    if (st == HERD_OK) {
        e->base[CORE_BUF_SCRATCH] = out->scratch_count;
        st = embed(e, &sub, out);
        out->scratch_count += sub.scratch_count;
    }
    core_sched_fini(&sub);
    return st;
}

/* A zero-element local step depending on every step in [from, to): the
 * point the next phase of a segment starts from. */
static int64_t join(core_sched_t *out, uint32_t from, uint32_t to)
{
    uint32_t n = to - from;
    int64_t *dv = malloc((n ? n : 1) * sizeof(*dv));
    if (!dv)
        return HERD_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < n; i++)
        dv[i] = from + i;
    int64_t r = core_sched_add(out, CORE_STEP_COPY, -1, 0, CORE_BUF_OUT, 0,
                               CORE_BUF_OUT, 0, 0, dv, (int)n);
    free(dv);
    return r;
}

/* ---- node structure ---- */

typedef struct nodes {
    int p, n;      /* ranks, nodes */
    int *order;    /* group ranks, node-major */
    int *start;    /* n + 1: node k's members are order[start[k]..) */
    int *node_of;  /* group rank -> node index */
    int *pos2rank; /* scratch: a ring's or chain's ranks */
    int *rank2pos;
} nodes_t;

static void nodes_free(nodes_t *g)
{
    free(g->order);
}

/* Ranks in node-major order (stable), as NCCL's rings visit nodes. */
static herd_status_t nodes_make(const int *node, int p, nodes_t *g)
{
    memset(g, 0, sizeof(*g));
    g->order = malloc((5 * (size_t)p + 1) * sizeof(int));
    if (!g->order)
        return HERD_ERR_NO_MEMORY;
    g->start = g->order + p;
    g->node_of = g->start + p + 1;
    g->pos2rank = g->node_of + p;
    g->rank2pos = g->pos2rank + p;
    g->p = p;
    for (int i = 0; i < p; i++)
        g->order[i] = i;
    for (int i = 1; i < p; i++) { /* insertion sort: O(p) when sorted */
        int v = g->order[i], j = i - 1;
        while (j >= 0 && node[g->order[j]] > node[v]) {
            g->order[j + 1] = g->order[j];
            j--;
        }
        g->order[j + 1] = v;
    }
    for (int i = 0; i < p; i++) {
        if (i == 0 || node[g->order[i]] != node[g->order[i - 1]])
            g->start[g->n++] = i;
        g->node_of[g->order[i]] = g->n - 1;
    }
    g->start[g->n] = p;
    return HERD_OK;
}

/* Channel c's member of node k at chain position j (rotated by c). */
static int member(const nodes_t *g, int k, int c, int j)
{
    int len = g->start[k + 1] - g->start[k];
    return g->order[g->start[k] + (j + c) % len];
}

/* ---- rings ---- */

static herd_status_t ring_channel(const core_sched_desc_t *d, nodes_t *g, int c,
                                  uint64_t coff, uint64_t clen,
                                  core_sched_t *out)
{
    for (int k = 0, pos = 0; k < g->n; k++)
        for (int j = 0; j < g->start[k + 1] - g->start[k]; j++, pos++)
            g->pos2rank[pos] = member(g, k, c, j);
    for (int i = 0; i < g->p; i++)
        g->rank2pos[g->pos2rank[i]] = i;
    core_sched_desc_t sd = *d;
    sd.algo = HERD_ALGO_RING;
    sd.rank = g->rank2pos[d->rank];
    sd.root = d->root >= 0 && d->root < d->nranks ? g->rank2pos[d->root] : 0;
    sd.count = clen;
    sd.channels = 1;
    emb_t e = {.peer = g->pos2rank,
               .channel = c,
               .to = {CORE_BUF_IN, CORE_BUF_OUT, CORE_BUF_SCRATCH},
               .base = {coff, coff, 0},
               .blocked = -1,
               .blen = clen,
               .bstride = d->count,
               .bmap = g->pos2rank,
               .pre = -1};
    if (d->coll == HERD_COLL_ALL_GATHER) {
        e.blocked = CORE_BUF_OUT;
        e.base[CORE_BUF_OUT] = coff;
    } else if (d->coll == HERD_COLL_REDUCE_SCATTER) {
        e.blocked = CORE_BUF_IN;
    }
    return sub_lower(&sd, &e, out);
}

/* ---- trees ---- */

typedef struct tseg {
    const core_sched_desc_t *d;
    nodes_t *g;
    int c;
    uint64_t off, len; /* the segment, elements */
    int *heads;        /* node -> the channel's head rank */
    int *chain;        /* this rank's node, chain positions */
} tseg_t;

/* Phase 1: reduce up the node's chain to the head (position 0), into a
 * fresh scratch range R; returns R's offset in *r_off. */
static herd_status_t tree_up(const tseg_t *t, int pos, int L, uint64_t *r_off,
                             core_sched_t *out)
{
    int *rev = t->g->rank2pos; /* sub s -> chain[(L - s) % L]: towards 0 */
    for (int s = 0; s < L; s++)
        rev[s] = t->chain[(L - s) % L];
    core_sched_desc_t sd = *t->d;
    sd.coll = HERD_COLL_REDUCE;
    sd.algo = HERD_ALGO_RING;
    sd.nranks = L;
    sd.rank = (L - pos) % L;
    sd.root = 0;
    sd.count = t->len;
    sd.channels = 1;
    *r_off = out->scratch_count;
    out->scratch_count += t->len;
    emb_t e = {.peer = rev,
               .channel = t->c,
               .to = {CORE_BUF_IN, CORE_BUF_SCRATCH, CORE_BUF_SCRATCH},
               .base = {t->off, *r_off, 0},
               .blocked = -1,
               .pre = -1};
    return sub_lower(&sd, &e, out);
}

/* Phase 2 (heads only): all_reduce R across nodes into OUT. */
static herd_status_t tree_across(const tseg_t *t, uint64_t r_off, int64_t pre,
                                 core_sched_t *out)
{
    core_sched_desc_t sd = *t->d;
    sd.algo = HERD_ALGO_TREE;
    sd.nranks = t->g->n;
    sd.rank = t->g->node_of[t->d->rank];
    sd.count = t->len;
    sd.channels = 2; /* core/: one binary tree per channel, as NCCL */
    emb_t e = {.peer = t->heads,
               .channel = t->c,
               .to = {CORE_BUF_SCRATCH, CORE_BUF_OUT, CORE_BUF_SCRATCH},
               .base = {r_off, t->off, 0},
               .blocked = -1,
               .pre = pre};
    return sub_lower(&sd, &e, out);
}

/* Phase 3: broadcast OUT down the chain from the head. */
static herd_status_t tree_down(const tseg_t *t, int pos, int L, int64_t pre,
                               core_sched_t *out)
{
    core_sched_desc_t sd = *t->d;
    sd.coll = HERD_COLL_BROADCAST;
    sd.algo = HERD_ALGO_RING;
    sd.nranks = L;
    sd.rank = pos;
    sd.root = 0;
    sd.count = t->len;
    sd.channels = 1;
    emb_t e = {.peer = t->chain,
               .channel = t->c,
               .to = {CORE_BUF_IN, CORE_BUF_OUT, CORE_BUF_SCRATCH},
               .base = {t->off, t->off, 0},
               .blocked = -1,
               .pre = pre};
    return L > 1 ? sub_lower(&sd, &e, out) : HERD_OK;
}

static herd_status_t tree_segment(const tseg_t *t, core_sched_t *out)
{
    int k = t->g->node_of[t->d->rank];
    int L = t->g->start[k + 1] - t->g->start[k], pos = 0;
    for (int j = 0; j < L; j++)
        if (t->chain[j] == t->d->rank)
            pos = j;
    uint64_t r_off = 0;
    uint32_t s0 = out->nsteps;
    herd_status_t st = tree_up(t, pos, L, &r_off, out);
    int64_t pre = st == HERD_OK ? join(out, s0, out->nsteps) : -1;
    if (st == HERD_OK && pre < 0)
        st = (herd_status_t)pre;
    if (st == HERD_OK && pos == 0) {
        uint32_t s1 = out->nsteps;
        st = tree_across(t, r_off, pre, out);
        pre = st == HERD_OK ? join(out, s1, out->nsteps) : -1;
        if (st == HERD_OK && pre < 0)
            st = (herd_status_t)pre;
    }
    if (st == HERD_OK)
        st = tree_down(t, pos, L, pos == 0 ? pre : -1, out);
    return st;
}

static herd_status_t tree_channel(const core_sched_desc_t *d, nodes_t *g, int c,
                                  uint64_t coff, uint64_t clen, int *heads,
                                  core_sched_t *out)
{
    int k = g->node_of[d->rank];
    int L = g->start[k + 1] - g->start[k];
    int *chain = g->pos2rank;
    for (int j = 0; j < L; j++)
        chain[j] = member(g, k, c, j);
    for (int n = 0; n < g->n; n++)
        heads[n] = member(g, n, c, 0);
    uint64_t es = d->elem_size ? d->elem_size : 1;
    uint64_t seg = d->chunk_bytes / es ? d->chunk_bytes / es : 1;
    uint64_t nseg = (clen + seg - 1) / seg;
    if (nseg > NCCL_TREE_MAX_SEGS)
        nseg = NCCL_TREE_MAX_SEGS;
    herd_status_t st = HERD_OK;
    for (uint64_t i = 0; i < nseg && st == HERD_OK; i++) {
        uint64_t q = clen / nseg, rem = clen % nseg;
        tseg_t t = {.d = d, .g = g, .c = c, .heads = heads, .chain = chain};
        t.off = coff + i * q + (i < rem ? i : rem);
        t.len = q + (i < rem ? 1 : 0);
        if (t.len)
            st = tree_segment(&t, out);
    }
    return st;
}

/* ---- the hook ---- */

static herd_status_t lower_channels(const core_sched_desc_t *d, const int *node,
                                    core_sched_t *out)
{
    nodes_t g;
    herd_status_t st = nodes_make(node, d->nranks, &g);
    int *heads = st == HERD_OK ? malloc((size_t)g.n * sizeof(int)) : NULL;
    if (st == HERD_OK && !heads)
        st = HERD_ERR_NO_MEMORY;
    memset(out, 0, sizeof(*out));
    out->desc = *d;
    uint64_t q = d->count / (uint64_t)d->channels;
    uint64_t rem = d->count % (uint64_t)d->channels;
    for (int c = 0; c < d->channels && st == HERD_OK; c++) {
        uint64_t uc = (uint64_t)c; /* contiguous ranges (NCCL >= 2.22) */
        uint64_t coff = uc * q + (uc < rem ? uc : rem);
        uint64_t clen = q + (uc < rem ? 1 : 0);
        if (clen == 0)
            continue;
        st = d->algo == HERD_ALGO_TREE
                 ? tree_channel(d, &g, c, coff, clen, heads, out)
                 : ring_channel(d, &g, c, coff, clen, out);
    }
    free(heads);
    nodes_free(&g);
    if (st != HERD_OK)
        core_sched_fini(out);
    return st;
}

/* Members' nodes, and the instance's plan, computed once (by its first
 * lowering member). */
static herd_status_t inst_plan(sim_world_t *w, sim_inst_t *inst, int *node)
{
    for (int i = 0; i < inst->p; i++)
        node[i] = sim_node_of(w, sim_inst_world_rank(inst, i));
    if (inst->nccl.valid)
        return HERD_OK;
    nodes_t g;
    herd_status_t st = nodes_make(node, inst->p, &g);
    sim_nccl_topo_t t;
    if (st == HERD_OK)
        st = sim_nccl_topo_init(&w->opts.cluster, inst->p, g.n, &t);
    nodes_free(&g);
    size_t es = herd_dtype_size(inst->args.dtype);
    if (st == HERD_OK)
        st = sim_nccl_plan(
            &t, inst->args.coll,
            sim_nccl_nbytes(inst->args.coll, inst->args.count, es, inst->p),
            &inst->nccl);
    return st;
}

int sim_nccl_sym_ok(sim_world_t *w, sim_inst_t *inst)
{
    int *node = malloc((size_t)inst->p * sizeof(int));
    herd_status_t st = node ? inst_plan(w, inst, node) : HERD_ERR_NO_MEMORY;
    free(node);
    const sim_nccl_plan_t *pl = &inst->nccl;
    const core_coll_args_t *a = &inst->args;
    if (st != HERD_OK || pl->lower != HERD_ALGO_RING || inst->p < 2)
        return 0;
    /* each channel is a core/ ring over its range (ring_channel), the
     * ranks in node order: shifting by one node maps it onto itself when
     * its ring is a rotation (equal blocks) */
    int ch = pl->channels > 0 ? pl->channels : 1;
    uint64_t q = a->count / (uint64_t)ch, rem = a->count % (uint64_t)ch;
    for (uint64_t len = q; len <= q + (rem ? 1 : 0); len++) {
        core_sched_desc_t d = {.coll = a->coll,
                               .algo = HERD_ALGO_RING,
                               .nranks = inst->p,
                               .count = len,
                               .elem_size = herd_dtype_size(a->dtype),
                               .channels = 1,
                               .chunk_bytes = pl->slice_bytes};
        if (len > 0 && !core_sched_rotational(&d))
            return 0;
    }
    return 1;
}

herd_status_t sim_nccl_lower(sim_world_t *w, sim_inst_t *inst, int rank,
                             core_sched_t *out)
{
    int *node = malloc((size_t)inst->p * sizeof(int));
    if (!node)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = inst_plan(w, inst, node);
    const sim_nccl_plan_t *pl = &inst->nccl;
    const core_coll_args_t *a = &inst->args;
    core_sched_desc_t d = {.coll = a->coll,
                           .algo = pl->lower,
                           .nranks = inst->p,
                           .rank = rank,
                           .root = a->root,
                           .count = a->count,
                           .elem_size = herd_dtype_size(a->dtype),
                           .channels = pl->channels > 0 ? pl->channels : 1,
                           .chunk_bytes = pl->slice_bytes,
                           .ranks_per_node = 0};
    if (st == HERD_OK) {
        memset(out, 0, sizeof(*out));
        if ((pl->lower == HERD_ALGO_RING || pl->lower == HERD_ALGO_TREE) &&
            inst->p > 1)
            st = lower_channels(&d, node, out);
        else
            st = core_sched_lower(&d, out);
    }
    free(node);
    return st;
}
