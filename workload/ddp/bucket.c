/* workload/ddp/bucket.c - gradient bucket assignment by size, reproducing
 * torch's compute_bucket_assignment_by_size and how DDP (1.13) calls it
 * at construction and at the rebuild. See docs/ddp.md. */
#include "workload/ddp/bucket.h"

#include <stdlib.h>
#include <string.h>

uint64_t ddp_cap_bytes(double bucket_cap_mb)
{
    double b = bucket_cap_mb * 1024.0 * 1024.0;
    return b <= 0 ? 0 : b >= 9.2e18 ? DDP_NO_LIMIT : (uint64_t)b;
}

int ddp_rebuilds(int find_unused, int static_graph)
{
    return !find_unused || static_graph;
}

/* A running bucket of one dtype, and where it is in the limit list. */
typedef struct accum {
    ddp_bucket_t cur;
    size_t limit_pos;
    int used;
} accum_t;

static herd_status_t push_index(ddp_bucket_t *b, size_t idx, size_t cap)
{
    if (!b->params) {
        b->params = malloc(cap * sizeof(size_t));
        if (!b->params)
            return HERD_ERR_NO_MEMORY;
    }
    b->params[b->nparams++] = idx;
    return HERD_OK;
}

static herd_status_t emit(ddp_buckets_t *out, ddp_bucket_t *b)
{
    out->b[out->n++] = *b;
    memset(b, 0, sizeof(*b));
    return HERD_OK;
}

static size_t min_index(const ddp_bucket_t *b)
{
    size_t m = b->params[0];
    for (size_t i = 1; i < b->nparams; i++)
        if (b->params[i] < m)
            m = b->params[i];
    return m;
}

static int cmp_bucket(const void *a, const void *b)
{
    size_t ma = min_index(a), mb = min_index(b);
    return ma < mb ? -1 : ma > mb;
}

/* One tensor into its dtype's running bucket; close it at the limit. */
static herd_status_t add_tensor(accum_t *acc, size_t idx, uint64_t bytes,
                                herd_dtype_t dt, const uint64_t *limits,
                                size_t nlimits, size_t n, ddp_buckets_t *out)
{
    herd_status_t st = push_index(&acc->cur, idx, n);
    if (st != HERD_OK)
        return st;
    acc->used = 1;
    acc->cur.dtype = dt;
    acc->cur.bytes += bytes;
    acc->cur.limit = limits[acc->limit_pos];
    if (acc->cur.bytes < acc->cur.limit)
        return HERD_OK;
    if (acc->limit_pos + 1 < nlimits)
        acc->limit_pos++;
    return emit(out, &acc->cur);
}

static herd_status_t sparse_bucket(size_t idx, herd_dtype_t dt, uint64_t bytes,
                                   ddp_buckets_t *out)
{
    ddp_bucket_t b = {0};
    herd_status_t st = push_index(&b, idx, 1);
    if (st != HERD_OK)
        return st;
    b.bytes = bytes;
    b.limit = DDP_NO_LIMIT;
    b.dtype = dt;
    return emit(out, &b);
}

static void fill_bucket_of(ddp_buckets_t *bs)
{
    for (size_t k = 0; k < bs->n; k++)
        for (size_t j = 0; j < bs->b[k].nparams; j++)
            bs->bucket_of[bs->b[k].params[j]] = k;
}

static herd_status_t assign_loop(const ddp_model_t *m, const size_t *order,
                                 size_t n, const uint64_t *limits,
                                 size_t nlimits, const herd_dtype_t *gdt,
                                 accum_t *acc, int *first_seen,
                                 ddp_buckets_t *out)
{
    int nseen = 0;
    herd_status_t st = HERD_OK;
    for (size_t i = 0; i < n && st == HERD_OK; i++) {
        const ddp_param_t *p = &m->params[order[i]];
        herd_dtype_t dt = gdt ? *gdt : p->dtype;
        uint64_t bytes = p->numel * herd_dtype_size(dt);
        if (p->sparse) {
            st = sparse_bucket(order[i], dt, bytes, out);
            continue;
        }
        if (!acc[dt].used && !acc[dt].cur.nparams)
            first_seen[nseen++] = (int)dt;
        st = add_tensor(&acc[dt], order[i], bytes, dt, limits, nlimits, n, out);
    }
    /* Flush the still-open buckets, one per dtype. */
    for (int k = 0; k < nseen && st == HERD_OK; k++)
        if (acc[first_seen[k]].cur.nparams)
            st = emit(out, &acc[first_seen[k]].cur);
    return st;
}

herd_status_t ddp_bucket_assign(const ddp_model_t *m, const size_t *order,
                                size_t n, const uint64_t *limits,
                                size_t nlimits, int sort,
                                const herd_dtype_t *grad_dtype,
                                ddp_buckets_t *out)
{
    if (!m || !order || !limits || nlimits == 0 || !out)
        return HERD_ERR_INVALID_ARG;
    ddp_buckets_t bs = {0};
    accum_t acc[HERD_DTYPE_COUNT];
    int first_seen[HERD_DTYPE_COUNT];
    memset(acc, 0, sizeof(acc));
    bs.b = calloc(n + 1, sizeof(ddp_bucket_t));
    bs.bucket_of = calloc(m->nparams + 1, sizeof(size_t));
    bs.nparams = m->nparams;
    herd_status_t st = bs.b && bs.bucket_of ? HERD_OK : HERD_ERR_NO_MEMORY;
    if (st == HERD_OK)
        st = assign_loop(m, order, n, limits, nlimits, grad_dtype, acc,
                         first_seen, &bs);
    for (int d = 0; d < HERD_DTYPE_COUNT; d++)
        free(acc[d].cur.params);
    if (st != HERD_OK) {
        ddp_buckets_fini(&bs);
        return st;
    }
    if (sort)
        qsort(bs.b, bs.n, sizeof(ddp_bucket_t), cmp_bucket);
    fill_bucket_of(&bs);
    *out = bs;
    return HERD_OK;
}

void ddp_buckets_reverse(ddp_buckets_t *bs)
{
    for (size_t i = 0, j = bs->n ? bs->n - 1 : 0; i < j; i++, j--) {
        ddp_bucket_t t = bs->b[i];
        bs->b[i] = bs->b[j];
        bs->b[j] = t;
    }
    fill_bucket_of(bs);
}

herd_status_t ddp_bucket_for_phase(const ddp_model_t *m, ddp_phase_t phase,
                                   uint64_t cap_bytes, int find_unused,
                                   int static_graph, const size_t *ready,
                                   const herd_dtype_t *grad_dtype,
                                   ddp_buckets_t *out)
{
    return ddp_bucket_for_phase_first(m, phase, DDP_FIRST_BUCKET_BYTES,
                                      cap_bytes, find_unused, static_graph,
                                      ready, grad_dtype, out);
}

herd_status_t ddp_bucket_for_phase_first(const ddp_model_t *m,
                                         ddp_phase_t phase,
                                         uint64_t first_bytes,
                                         uint64_t cap_bytes, int find_unused,
                                         int static_graph, const size_t *ready,
                                         const herd_dtype_t *grad_dtype,
                                         ddp_buckets_t *out)
{
    uint64_t limits[2] = {first_bytes, cap_bytes};
    size_t *order = malloc((m->nparams + 1) * sizeof(size_t));
    if (!order)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st;
    if (phase == DDP_PHASE_REBUILT) {
        if (ready)
            memcpy(order, ready, m->nparams * sizeof(size_t));
        else
            ddp_model_ready_order(m, order);
        st = ddp_bucket_assign(m, order, m->nparams, limits, 2, 0, grad_dtype,
                               out);
    } else {
        for (size_t i = 0; i < m->nparams; i++)
            order[i] = i;
        int single = !find_unused || static_graph;
        uint64_t one[1] = {DDP_NO_LIMIT};
        st = ddp_bucket_assign(m, order, m->nparams, single ? one : limits,
                               single ? 1 : 2, 1, grad_dtype, out);
        if (st == HERD_OK)
            ddp_buckets_reverse(out);
    }
    free(order);
    return st;
}

void ddp_buckets_fini(ddp_buckets_t *bs)
{
    if (!bs)
        return;
    for (size_t k = 0; k < bs->n; k++)
        free(bs->b[k].params);
    free(bs->b);
    free(bs->bucket_of);
    memset(bs, 0, sizeof(*bs));
}
