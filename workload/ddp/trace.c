/* workload/ddp/trace.c - record the DDP walker's calls as trace ops: one
 * list per rank, the common one stored once as the SPMD list and only the
 * ranks that differ stored on their own. */
#include "workload/ddp/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/common/loader.h"

typedef struct op_list {
    trace_t *t; /* for labels and async slot names */
    trace_op_t *ops;
    size_t n, cap;
    herd_status_t st;
} op_list_t;

static trace_op_t *grow(op_list_t *l, trace_op_kind_t kind, const char *label)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        trace_op_t *p = realloc(l->ops, cap * sizeof(*p));
        if (!p) {
            l->st = HERD_ERR_NO_MEMORY;
            return NULL;
        }
        l->ops = p;
        l->cap = cap;
    }
    trace_op_t *op = &l->ops[l->n++];
    *op = trace_op_default(kind);
    if (label && trace_intern(l->t, label, &op->label) != HERD_OK)
        l->st = HERD_ERR_NO_MEMORY;
    return op;
}

static herd_status_t slot_of(op_list_t *l, size_t slot, uint32_t *out)
{
    char name[32];
    snprintf(name, sizeof(name), "s%zu", slot);
    return trace_async_slot(l->t, name, out);
}

static herd_status_t r_compute(void *c, double s, const char *label)
{
    op_list_t *l = c;
    trace_op_t *op = s > 0 ? grow(l, TRACE_OP_COMPUTE, label) : NULL;
    if (op)
        op->dur_ns = (uint64_t)(s * 1e9 + 0.5);
    return l->st;
}

static herd_status_t r_mark(void *c, const char *label)
{
    op_list_t *l = c;
    grow(l, TRACE_OP_MARK, label);
    return l->st;
}

static herd_status_t r_coll(op_list_t *l, herd_coll_t coll, uint64_t count,
                            herd_dtype_t dt, int root, size_t slot,
                            const char *label)
{
    trace_op_t *op = grow(l, TRACE_OP_COLL, label);
    if (!op)
        return l->st;
    op->coll = (uint8_t)coll;
    op->dtype = (uint8_t)dt;
    op->count = count;
    op->peer = root;
    if (slot_of(l, slot, &op->async) != HERD_OK)
        l->st = HERD_ERR_NO_MEMORY;
    return l->st;
}

static herd_status_t r_all_reduce(void *c, uint64_t count, herd_dtype_t dt,
                                  size_t slot, const char *label)
{
    return r_coll(c, HERD_COLL_ALL_REDUCE, count, dt, -1, slot, label);
}

static herd_status_t r_broadcast(void *c, uint64_t count, herd_dtype_t dt,
                                 int root, size_t slot, const char *label)
{
    return r_coll(c, HERD_COLL_BROADCAST, count, dt, root, slot, label);
}

static herd_status_t r_barrier(void *c, size_t slot, const char *label)
{
    return r_coll(c, HERD_COLL_BARRIER, 0, HERD_UINT8, -1, slot, label);
}

static herd_status_t r_wait(void *c, size_t slot)
{
    op_list_t *l = c;
    trace_op_t *op = grow(l, TRACE_OP_WAIT, NULL);
    if (op && slot_of(l, slot, &op->async) != HERD_OK)
        l->st = HERD_ERR_NO_MEMORY;
    return l->st;
}

/* A walker's collective on one of its groups (g >= 1 is the trace's
 * group g: the walker's job added them in its order). */
static herd_status_t r_any(void *c, const ddp_emit_coll_t *e, size_t slot)
{
    op_list_t *l = c;
    herd_status_t st =
        r_coll(l, e->coll, e->count, e->dtype, e->root, slot, e->label);
    if (st == HERD_OK && l->n)
        l->ops[l->n - 1].group = (uint16_t)e->group;
    return st;
}

static const ddp_emit_ops_t rec_ops = {
    r_compute, r_mark, r_all_reduce, r_broadcast, r_barrier, r_wait, r_any};

typedef struct walker {
    ddp_walk_fn walk;
    const void *job;
    const wl_data_t *data;
} walker_t;

static herd_status_t record(const walker_t *w, int rank, op_list_t *l)
{
    l->n = 0;
    herd_status_t st =
        wl_data_walk(w->data, w->walk, w->job, rank, &rec_ops, l, NULL, NULL);
    return st != HERD_OK ? st : l->st;
}

/* DDP's walk as a ddp_walk_fn: a raised error ends the list there. */
static herd_status_t ddp_walk(const void *job, int rank,
                              const ddp_emit_ops_t *ops, void *ctx)
{
    char msg[DDP_ERR_MSG_MAX];
    int raised;
    return ddp_job_walk(job, rank, ops, ctx, &raised, msg);
}

static herd_status_t add_all(trace_t *t, const op_list_t *l)
{
    herd_status_t st = HERD_OK;
    for (size_t i = 0; i < l->n && st == HERD_OK; i++)
        st = trace_add_op(t, &l->ops[i]);
    return st;
}

static int op_eq(const trace_op_t *a, const trace_op_t *b)
{
    return a->kind == b->kind && a->coll == b->coll && a->dtype == b->dtype &&
           a->redop == b->redop && a->peer == b->peer && a->async == b->async &&
           a->group == b->group && a->label == b->label &&
           a->count == b->count && a->dur_ns == b->dur_ns;
}

static int same_list(const op_list_t *a, const op_list_t *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (!op_eq(&a->ops[i], &b->ops[i]))
            return 0;
    return 1;
}

herd_status_t ddp_trace_record(trace_t *t, ddp_walk_fn walk, const void *job,
                               const wl_data_t *data)
{
    walker_t w = {walk, job, data};
    op_list_t ref = {.t = t}, cur = {.t = t};
    int world = (int)t->world_size;
    int base = world > 1 ? 1 : 0;
    herd_status_t st = record(&w, base, &ref);
    if (st == HERD_OK)
        st = add_all(t, &ref);
    for (int r = 0; st == HERD_OK && r < world; r++) {
        if (r == base || (st = record(&w, r, &cur)) != HERD_OK)
            continue;
        if (same_list(&cur, &ref))
            continue;
        st = trace_begin_rank_list(t, r);
        if (st == HERD_OK)
            st = add_all(t, &cur);
        trace_end_rank_list(t);
    }
    free(ref.ops);
    free(cur.ops);
    return st;
}

herd_status_t ddp_trace_build(const ddp_job_t *job, trace_t **out)
{
    trace_t *t = NULL;
    herd_status_t st = trace_create(job->world, &t);
    if (st != HERD_OK)
        return st;
    free(t->name);
    t->name = strdup(job->model.name);
    st = ddp_trace_record(t, ddp_walk, job, &job->data);
    if (st != HERD_OK) {
        trace_destroy(t);
        return st;
    }
    *out = t;
    return HERD_OK;
}
