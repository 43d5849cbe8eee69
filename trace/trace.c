/* trace/trace.c - the in-memory trace: a compact op array with string,
 * rank-set, group and variant tables; building and per-rank reading. */
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"

herd_status_t trace_create(int world_size, trace_t **out)
{
    if (world_size < 1 || world_size > TRACE_MAX_WORLD)
        return HERD_ERR_INVALID_ARG;
    trace_t *t = calloc(1, sizeof(*t));
    if (!t)
        return HERD_ERR_NO_MEMORY;
    t->version = TRACE_FORMAT_VERSION;
    t->world_size = world_size;
    *out = t;
    return HERD_OK;
}

void trace_destroy(trace_t *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->nstrings; i++)
        free(t->strings[i]);
    for (uint32_t i = 0; i < t->nasync; i++)
        free(t->async_names[i]);
    free(t->async_names);
    free(t->strings);
    free(t->groups);
    free(t->rank_pool);
    free(t->ranksets);
    free(t->variants);
    free(t->rank_lists);
    free(t->ops);
    free(t->vpool);
    free(t->name);
    free(t);
}

herd_status_t trace_add_counts(trace_t *t, const uint64_t *v, uint32_t n,
                               uint32_t *idx_out)
{
    if (n > UINT32_MAX / 2 - t->nvpool)
        return HERD_ERR_OVERFLOW;
    if (t->nvpool + n > t->vpool_cap) {
        uint32_t cap = t->vpool_cap ? t->vpool_cap : 64;
        while (cap < t->nvpool + n)
            cap *= 2;
        uint64_t *p = realloc(t->vpool, (size_t)cap * sizeof(*p));
        if (!p)
            return HERD_ERR_NO_MEMORY;
        t->vpool = p;
        t->vpool_cap = cap;
    }
    if (n)
        memcpy(t->vpool + t->nvpool, v, (size_t)n * sizeof(*v));
    *idx_out = t->nvpool;
    t->nvpool += n;
    return HERD_OK;
}

int trace_op_group_size(const trace_t *t, const trace_op_t *op)
{
    return op->group ? (int)trace_group(t, op->group).n : t->world_size;
}

uint64_t trace_op_vlen(const trace_t *t, const trace_op_t *op)
{
    uint64_t p = (uint64_t)trace_op_group_size(t, op);
    if (op->kind != TRACE_OP_COLL)
        return 0;
    if (op->coll == HERD_COLL_ALL_GATHER_V ||
        op->coll == HERD_COLL_REDUCE_SCATTER_V)
        return p;
    return op->coll == HERD_COLL_ALL_TO_ALL_V ? p * p : 0;
}

/* Grow an array of `size`-byte items so it holds n + 1. */
static herd_status_t trace_grow(void **arr, uint32_t n, uint32_t *cap,
                                size_t size)
{
    if (n < *cap)
        return HERD_OK;
    if (n >= UINT32_MAX / 2)
        return HERD_ERR_OVERFLOW;
    uint32_t ncap = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, (size_t)ncap * size);
    if (!p)
        return HERD_ERR_NO_MEMORY;
    *arr = p;
    *cap = ncap;
    return HERD_OK;
}

trace_op_t trace_op_default(trace_op_kind_t kind)
{
    return (trace_op_t){.kind = (uint8_t)kind,
                        .coll = HERD_COLL_ALL_REDUCE,
                        .dtype = HERD_FLOAT32,
                        .redop = HERD_SUM,
                        .algo = HERD_ALGO_AUTO,
                        .peer = -1,
                        .async = TRACE_NONE,
                        .label = TRACE_NONE,
                        .ranks = TRACE_NONE,
                        .vcounts = TRACE_NONE};
}

herd_status_t trace_add_op(trace_t *t, const trace_op_t *op)
{
    herd_status_t st =
        trace_grow((void **)&t->ops, t->nops, &t->ops_cap, sizeof(*op));
    if (st)
        return st;
    t->ops[t->nops] = *op;
    t->ops[t->nops].var_off = t->nvariants;
    t->ops[t->nops].nvar = 0;
    t->nops++;
    if (t->nrank_lists == 0)
        t->nspmd = t->nops;
    else
        t->rank_lists[t->nrank_lists - 1].span.n++;
    return HERD_OK;
}

herd_status_t trace_add_variant(trace_t *t, uint32_t op_index,
                                const trace_variant_t *v)
{
    if (op_index >= t->nops)
        return HERD_ERR_INVALID_ARG;
    trace_op_t *op = &t->ops[op_index];
    if (op->var_off + op->nvar != t->nvariants)
        return HERD_ERR_INVALID_ARG; /* variants of one op stay together */
    herd_status_t st = trace_grow((void **)&t->variants, t->nvariants,
                                  &t->variants_cap, sizeof(*v));
    if (st)
        return st;
    t->variants[t->nvariants++] = *v;
    op->nvar++;
    return HERD_OK;
}

/* Labels repeat a lot ("bucket3" every step): look back before adding.
 * The search is bounded so pathological traces stay linear. */
herd_status_t trace_intern(trace_t *t, const char *s, uint32_t *idx_out)
{
    uint32_t lo = t->nstrings > 256 ? t->nstrings - 256 : 0;
    for (uint32_t i = t->nstrings; i-- > lo;)
        if (!strcmp(t->strings[i], s)) {
            *idx_out = i;
            return HERD_OK;
        }
    return trace_add_string(t, s, idx_out);
}

herd_status_t trace_add_string(trace_t *t, const char *s, uint32_t *idx_out)
{
    herd_status_t st = trace_grow((void **)&t->strings, t->nstrings,
                                  &t->strings_cap, sizeof(char *));
    if (st)
        return st;
    char *copy = strdup(s);
    if (!copy)
        return HERD_ERR_NO_MEMORY;
    t->strings[t->nstrings] = copy;
    *idx_out = t->nstrings++;
    return HERD_OK;
}

herd_status_t trace_async_slot(trace_t *t, const char *name, uint32_t *idx_out)
{
    for (uint32_t i = 0; i < t->nasync; i++)
        if (!strcmp(t->async_names[i], name)) {
            *idx_out = i;
            return HERD_OK;
        }
    char **p = realloc(t->async_names, (t->nasync + 1) * sizeof(*p));
    if (!p)
        return HERD_ERR_NO_MEMORY;
    t->async_names = p;
    if (!(p[t->nasync] = strdup(name)))
        return HERD_ERR_NO_MEMORY;
    *idx_out = t->nasync++;
    return HERD_OK;
}

static herd_status_t trace_pool_add(trace_t *t, const int32_t *ranks,
                                    uint32_t n, trace_span_t *span)
{
    if (n > UINT32_MAX - t->npool)
        return HERD_ERR_OVERFLOW;
    int32_t *p = realloc(t->rank_pool, (size_t)(t->npool + n) * sizeof(*p));
    if (!p && t->npool + n > 0)
        return HERD_ERR_NO_MEMORY;
    t->rank_pool = p;
    if (n)
        memcpy(p + t->npool, ranks, n * sizeof(*p));
    *span = (trace_span_t){t->npool, n};
    t->npool += n;
    return HERD_OK;
}

static int trace_cmp_int(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Copy `ranks` into the pool and append their span to the span array
 * `*spans` of `count` entries (the caller counts it). Rank sets and groups
 * are both such arrays. */
static herd_status_t trace_span_append(trace_t *t, trace_span_t **spans,
                                       uint32_t count, const int32_t *ranks,
                                       uint32_t n)
{
    trace_span_t *p = realloc(*spans, (count + 1) * sizeof(*p));
    if (!p)
        return HERD_ERR_NO_MEMORY;
    *spans = p;
    return trace_pool_add(t, ranks, n, &p[count]);
}

herd_status_t trace_add_rankset(trace_t *t, const int32_t *ranks, uint32_t n,
                                uint32_t *idx_out)
{
    herd_status_t st =
        trace_span_append(t, &t->ranksets, t->nranksets, ranks, n);
    if (st)
        return st;
    qsort(t->rank_pool + t->ranksets[t->nranksets].off, n, sizeof(int32_t),
          trace_cmp_int);
    *idx_out = t->nranksets++;
    return HERD_OK;
}

herd_status_t trace_add_group(trace_t *t, const int32_t *ranks, uint32_t n)
{
    herd_status_t st = trace_span_append(t, &t->groups, t->ngroups, ranks, n);
    if (st)
        return st;
    t->ngroups++;
    return HERD_OK;
}

trace_span_t trace_group(const trace_t *t, uint32_t g)
{
    if (g < 1 || g > t->ngroups)
        return (trace_span_t){0, 0};
    return t->groups[g - 1];
}

herd_status_t trace_begin_rank_list(trace_t *t, int rank)
{
    trace_rank_list_t *p =
        realloc(t->rank_lists, (t->nrank_lists + 1) * sizeof(*p));
    if (!p)
        return HERD_ERR_NO_MEMORY;
    t->rank_lists = p;
    p[t->nrank_lists++] = (trace_rank_list_t){rank, {t->nops, 0}};
    return HERD_OK;
}

void trace_end_rank_list(trace_t *t)
{
    (void)t;
}

void trace_rank_ops(const trace_t *t, int rank, const trace_op_t **ops,
                    uint32_t *n)
{
    for (uint32_t i = 0; i < t->nrank_lists; i++)
        if (t->rank_lists[i].rank == rank) {
            *ops = t->ops + t->rank_lists[i].span.off;
            *n = t->rank_lists[i].span.n;
            return;
        }
    *ops = t->ops;
    *n = t->nspmd;
}

static int trace_rankset_has(const trace_t *t, uint32_t set, int rank)
{
    trace_span_t s = t->ranksets[set];
    int32_t key = rank;
    return bsearch(&key, t->rank_pool + s.off, s.n, sizeof(int32_t),
                   trace_cmp_int) != NULL;
}

int trace_op_for_rank(const trace_t *t, const trace_op_t *op, int rank,
                      trace_op_t *out)
{
    if (op->ranks != TRACE_NONE && !trace_rankset_has(t, op->ranks, rank))
        return 0;
    *out = *op;
    for (uint32_t i = 0; i < op->nvar; i++) {
        const trace_variant_t *v = &t->variants[op->var_off + i];
        if (v->rank != rank)
            continue;
        if (v->fields & TRACE_VAR_SKIP)
            return 0;
        if (v->fields & TRACE_VAR_COUNT)
            out->count = v->count;
        if (v->fields & TRACE_VAR_DUR)
            out->dur_ns = v->dur_ns;
        if (v->fields & TRACE_VAR_PEER) {
            out->peer = v->peer;
            out->peer_rel = 0;
        }
        if (v->fields & TRACE_VAR_LABEL)
            out->label = v->label;
        if (v->fields & TRACE_VAR_COLL)
            out->coll = v->coll;
        if (v->fields & TRACE_VAR_DTYPE)
            out->dtype = v->dtype;
    }
    return 1;
}

const char *trace_string(const trace_t *t, uint32_t idx)
{
    return idx < t->nstrings ? t->strings[idx] : NULL;
}

int trace_op_peer(const trace_op_t *op, int rank, int size)
{
    if (!op->peer_rel)
        return op->peer;
    long p = ((long)rank + op->peer) % size;
    return (int)(p < 0 ? p + size : p);
}
