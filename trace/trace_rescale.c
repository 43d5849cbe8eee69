/* trace/trace_rescale.c - a trace for another world size.
 *
 * Shared (SPMD) collectives keep their per-rank counts: data-parallel
 * work is the same on any number of ranks. Whatever names ranks is
 * mapped: when the new size is a multiple of the old one the job is
 * tiled (old rank r's part is played by r + k*N, its absolute
 * point-to-point peers shifted by k*N, so pipelines stay within a tile);
 * otherwise the parts of ranks below the new size are kept. Anything that
 * cannot be mapped (a root or peer that no longer exists, a send whose
 * partner disappears, groups under tiling) is rejected with the reason. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

typedef struct rs_ctx {
    const trace_t *in;
    trace_t *out;
    int n, m, tiles; /* old size, new size, copies (1: no tiling) */
    char *err;
    size_t errlen;
    char where[48];
} rs_ctx_t;

static herd_status_t rs_fail(rs_ctx_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static herd_status_t rs_fail(rs_ctx_t *c, const char *fmt, ...)
{
    int k =
        snprintf(c->err, c->errlen, "cannot rescale %d -> %d ranks: %s: ", c->n,
                 c->m, c->where);
    if (k >= 0 && (size_t)k < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return HERD_ERR_UNSUPPORTED;
}

static int rs_is_p2p(const trace_op_t *op)
{
    return op->kind == TRACE_OP_COLL &&
           (op->coll == HERD_COLL_SEND || op->coll == HERD_COLL_RECV);
}

/* Ranks named by an op's rank set, mapped; p2p partners must survive. */
static herd_status_t rs_rankset(rs_ctx_t *c, const trace_op_t *op,
                                uint32_t *set_out)
{
    trace_span_t s = c->in->ranksets[op->ranks];
    int32_t *r = malloc(((size_t)s.n * (size_t)c->tiles + 1) * sizeof(*r));
    if (!r)
        return HERD_ERR_NO_MEMORY;
    uint32_t k = 0;
    herd_status_t st = HERD_OK;
    for (uint32_t i = 0; i < s.n && !st; i++) {
        int32_t rank = c->in->rank_pool[s.off + i];
        for (int t = 0; t < c->tiles; t++)
            if (rank + t * c->n < c->m)
                r[k++] = rank + t * c->n;
        if (rank >= c->m && rs_is_p2p(op))
            st = rs_fail(c, "rank %d's %s has no place in %d ranks", rank,
                         herd_coll_name(op->coll), c->m);
    }
    if (!st)
        st = trace_add_rankset(c->out, r, k, set_out);
    free(r);
    return st;
}

static herd_status_t rs_variants(rs_ctx_t *c, const trace_op_t *op,
                                 uint32_t index)
{
    for (uint32_t i = 0; i < op->nvar; i++) {
        trace_variant_t v = c->in->variants[op->var_off + i];
        int abs_peer = (v.fields & TRACE_VAR_PEER) && rs_is_p2p(op);
        if (v.rank >= c->m && rs_is_p2p(op) && !(v.fields & TRACE_VAR_SKIP))
            return rs_fail(c, "rank %d's %s has no place in %d ranks", v.rank,
                           herd_coll_name(op->coll), c->m);
        if ((v.fields & TRACE_VAR_PEER) && !abs_peer && v.peer >= c->m)
            return rs_fail(c, "root %d does not exist in %d ranks", v.peer,
                           c->m);
        for (int t = 0; t < c->tiles; t++) {
            trace_variant_t w = v;
            w.rank += t * c->n;
            w.peer += abs_peer ? t * c->n : 0;
            if (w.rank >= c->m)
                continue;
            if (abs_peer && w.peer >= c->m)
                return rs_fail(c,
                               "rank %d's peer %d does not exist in %d "
                               "ranks",
                               w.rank, w.peer, c->m);
            herd_status_t st = trace_add_variant(c->out, index, &w);
            if (st)
                return st;
        }
    }
    return HERD_OK;
}

/* Map one op; `shift` moves absolute p2p peers (per-rank list copies). */
static herd_status_t rs_op(rs_ctx_t *c, const trace_op_t *in, int shift,
                           int shared)
{
    trace_op_t op = *in;
    /* a count per rank of a group, or a matrix of them: no rule says what
     * new ranks would send */
    if (op.vcounts != TRACE_NONE)
        return rs_fail(c,
                       "%s has a count per rank, which cannot be "
                       "rescaled",
                       herd_coll_name(op.coll));
    if (op.kind == TRACE_OP_COLL && op.peer >= 0 && !op.peer_rel) {
        if (rs_is_p2p(&op) && shared && c->tiles > 1)
            return rs_fail(c,
                           "a shared %s names absolute peer %d, which "
                           "cannot be tiled (use a relative peer \"+1\")",
                           herd_coll_name(op.coll), op.peer);
        op.peer += rs_is_p2p(&op) ? shift : 0;
        int size = op.group ? (int)trace_group(c->in, op.group).n : c->m;
        if (op.peer >= size)
            return rs_fail(c, "%s %d does not exist in %d ranks",
                           rs_is_p2p(&op) ? "peer" : "root", op.peer, size);
    }
    herd_status_t st = HERD_OK;
    if (op.ranks != TRACE_NONE)
        st = rs_rankset(c, in, &op.ranks);
    if (!st)
        st = trace_add_op(c->out, &op);
    if (!st)
        st = rs_variants(c, in, c->out->nops - 1);
    return st;
}

static herd_status_t rs_span(rs_ctx_t *c, trace_span_t span, int shift,
                             int shared, const char *name)
{
    for (uint32_t i = 0; i < span.n; i++) {
        snprintf(c->where, sizeof(c->where), "%s[%u]", name, i);
        herd_status_t st = rs_op(c, &c->in->ops[span.off + i], shift, shared);
        if (st)
            return st;
    }
    return HERD_OK;
}

static herd_status_t rs_rank_lists(rs_ctx_t *c)
{
    for (uint32_t l = 0; l < c->in->nrank_lists; l++) {
        const trace_rank_list_t *rl = &c->in->rank_lists[l];
        char name[32];
        snprintf(name, sizeof(name), "rank_ops.%d", rl->rank);
        for (int t = 0; t < c->tiles; t++) {
            int rank = rl->rank + t * c->n;
            if (rank >= c->m) {
                snprintf(c->where, sizeof(c->where), "%s", name);
                for (uint32_t i = 0; i < rl->span.n; i++)
                    if (rs_is_p2p(&c->in->ops[rl->span.off + i]))
                        return rs_fail(c,
                                       "rank %d exchanges messages but "
                                       "has no place in %d ranks",
                                       rank, c->m);
                continue;
            }
            herd_status_t st = trace_begin_rank_list(c->out, rank);
            if (!st)
                st = rs_span(c, rl->span, t * c->n, 0, name);
            if (st)
                return st;
        }
    }
    return HERD_OK;
}

static herd_status_t rs_tables(rs_ctx_t *c)
{
    const trace_t *in = c->in;
    trace_t *out = c->out;
    uint32_t idx;
    herd_status_t st = HERD_OK;
    if (in->name && !(out->name = strdup(in->name)))
        return HERD_ERR_NO_MEMORY;
    out->ranks_per_node = in->ranks_per_node;
    for (uint32_t i = 0; i < in->nstrings && !st; i++)
        st = trace_add_string(out, in->strings[i], &idx);
    for (uint32_t i = 0; i < in->nasync && !st; i++)
        st = trace_async_slot(out, in->async_names[i], &idx);
    for (uint32_t g = 0; g < in->ngroups && !st; g++) {
        trace_span_t s = in->groups[g];
        snprintf(c->where, sizeof(c->where), "groups[%u]", g);
        if (c->tiles > 1 && c->m != c->n)
            return rs_fail(c, "groups list fixed ranks and cannot be tiled");
        for (uint32_t k = 0; k < s.n; k++)
            if (in->rank_pool[s.off + k] >= c->m)
                return rs_fail(c, "rank %d does not exist in %d ranks",
                               in->rank_pool[s.off + k], c->m);
        st = trace_add_group(out, in->rank_pool + s.off, s.n);
    }
    return st;
}

herd_status_t trace_rescale(const trace_t *in, int world_size, trace_t **out,
                            char *err, size_t errlen)
{
    rs_ctx_t c = {.in = in,
                  .n = in->world_size,
                  .m = world_size,
                  .err = err,
                  .errlen = errlen};
    c.tiles = world_size > c.n && world_size % c.n == 0 ? world_size / c.n : 1;
    herd_status_t st = trace_create(world_size, &c.out);
    if (st)
        return st;
    st = rs_tables(&c);
    if (!st)
        st = rs_span(&c, (trace_span_t){0, in->nspmd}, 0, 1, "ops");
    if (!st)
        st = rs_rank_lists(&c);
    /* Strings were copied in order, so label indices stay valid. */
    if (!st)
        st = trace_validate(c.out, err, errlen);
    if (st) {
        trace_destroy(c.out);
        return st;
    }
    *out = c.out;
    return HERD_OK;
}
