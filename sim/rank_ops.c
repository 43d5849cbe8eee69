/* sim/rank_ops.c - the engine ops vtable of "sim": what each API call
 * does on a rank's context (communicators, groups, posting and waiting,
 * compute, marks, phantom or real buffers, the clock). */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

/* Phantom buffers: non-canonical x86-64 addresses (bit 63 set), unique per
 * rank, that fault if a program dereferences them. */
#define SIM_FAKE_BASE 0x8000000000000000ULL
#define SIM_FAKE_RANK_SHIFT 40

static sim_comm_t *sc(herd_comm_t *c)
{
    return (sim_comm_t *)c;
}

herd_status_t sim_comm_new(sim_world_t *w, sim_rank_t *r, int rank, int size,
                           int group_id, int *world_ranks,
                           const herd_comm_t *parent, sim_comm_t **out)
{
    sim_comm_t *c = calloc(1, sizeof(*c));
    if (!c) {
        free(world_ranks);
        return HERD_ERR_NO_MEMORY;
    }
    core_comm_init(&c->base, &sim_engine_ops, rank, size,
                   r->id % w->gpus_per_node, r->id, group_id, world_ranks,
                   &w->init);
    if (parent)
        core_comm_inherit(&c->base, parent);
    c->w = w;
    c->r = r;
    *out = c;
    return HERD_OK;
}

static herd_status_t op_comm_create(const herd_init_t *init, herd_comm_t **o)
{
    return HERD_ERR_UNSUPPORTED;
}

static herd_status_t op_comm_destroy(herd_comm_t *comm)
{
    sim_comm_t *c = sc(comm);
    if (c == c->r->world_comm)
        return core_comm_error(comm, HERD_ERR_INVALID_ARG,
                               "comm_destroy: the sim world communicator "
                               "belongs to herd_run");
    /* requests still in flight on the group outlive it */
    sim_coll_gloo_detach(c->w, c);
    for (sim_req_t *q = c->r->reqs; q; q = q->next_all)
        if (q->base.comm == comm)
            q->base.comm = NULL;
    for (sim_comm_t **pp = &c->r->groups; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            core_comm_fini(&c->base);
            free(c);
            return HERD_OK;
        }
    return HERD_ERR_INVALID_ARG;
}

static herd_status_t op_group_create(herd_comm_t *parent, const int *ranks,
                                     int nranks, int group_id,
                                     herd_comm_t **out)
{
    sim_comm_t *p = sc(parent);
    if (sim_rank_aborting(p->r))
        return HERD_ERR_ABORTED;
    int me = -1;
    for (int i = 0; i < nranks; i++)
        if (ranks[i] == parent->rank)
            me = i;
    if (me < 0) {
        *out = NULL;
        return HERD_OK;
    }
    int *wr = malloc((size_t)nranks * sizeof(int));
    if (!wr)
        return HERD_ERR_NO_MEMORY;
    for (int i = 0; i < nranks; i++)
        wr[i] = herd_comm_world_rank(parent, ranks[i]);
    sim_comm_t *g;
    herd_status_t st =
        sim_comm_new(p->w, p->r, me, nranks, group_id, wr, parent, &g);
    if (st != HERD_OK)
        return st;
    g->next = p->r->groups;
    p->r->groups = g;
    *out = &g->base;
    return HERD_OK;
}

static herd_status_t op_coll_post(herd_comm_t *comm, const core_coll_args_t *a,
                                  herd_req_t **req_out)
{
    sim_comm_t *c = sc(comm);
    if (sim_rank_aborting(c->r))
        return core_comm_error(comm, HERD_ERR_ABORTED,
                               "%s: the simulated run has ended",
                               herd_coll_name(a->coll));
    c->r->poll_streak = 0;
    int p2p = a->coll == HERD_COLL_SEND || a->coll == HERD_COLL_RECV;
    sim_req_t *req = sim_req_new(
        c,
        p2p ? (a->coll == HERD_COLL_SEND ? SIM_REQ_SEND : SIM_REQ_RECV)
            : SIM_REQ_COLL,
        a);
    if (!req)
        return HERD_ERR_NO_MEMORY;
    req->fr_id = sim_flight_post(c, a);
    herd_status_t st = p2p ? sim_p2p_post(c, a, req) : sim_coll_post(c, a, req);
    if (st != HERD_OK) {
        sim_flight_done(c->w, req, st);
        sim_req_release(req);
        return st;
    }
    *req_out = &req->base;
    return HERD_OK;
}

static herd_status_t op_req_wait(herd_req_t *req)
{
    sim_req_t *q = (sim_req_t *)req;
    q->owner->poll_streak = 0;
    return sim_rank_block(q->owner, q);
}

static herd_status_t op_req_test(herd_req_t *req, int *done)
{
    sim_req_t *q = (sim_req_t *)req;
    if (!q->done && !q->owner->w->aborting)
        sim_rank_poll(q->owner, q);
    if (q->owner->w->aborting && !q->done) {
        *done = 1;
        return HERD_ERR_ABORTED;
    }
    *done = q->done;
    return q->done ? q->status : HERD_OK;
}

static void op_req_free(herd_req_t *req)
{
    sim_req_t *q = (sim_req_t *)req;
    if (!q->done && !q->owner->w->aborting)
        sim_rank_block(q->owner, q);
    sim_req_release(q);
}

static herd_status_t op_compute(herd_comm_t *comm, double s, const char *l)
{
    sim_comm_t *c = sc(comm);
    c->r->poll_streak = 0;
    return sim_rank_compute(c->r, s, l);
}

static herd_status_t op_compute_until(herd_comm_t *comm, double s,
                                      herd_req_t *req, const char *l,
                                      double *done_out)
{
    sim_comm_t *c = sc(comm);
    sim_req_t *q = (sim_req_t *)req;
    if (q->owner != c->r)
        return core_comm_error(comm, HERD_ERR_INVALID_ARG,
                               "compute_until: the request is rank %d's",
                               q->owner->id);
    c->r->poll_streak = 0;
    return sim_rank_compute_until(c->r, s, q, l, done_out);
}

static herd_status_t op_alloc(herd_comm_t *comm, size_t bytes, void **out)
{
    sim_comm_t *c = sc(comm);
    sim_rank_t *r = c->r;
    if (!c->w->opts.real_buffers) {
        uint64_t len = ((uint64_t)bytes + 255) & ~255ULL;
        if (len == 0)
            len = 256;
        if (len >= (1ULL << SIM_FAKE_RANK_SHIFT) - r->fake_next)
            return core_comm_error(comm, HERD_ERR_NO_MEMORY,
                                   "alloc: phantom address space of rank %d "
                                   "exhausted (%zu bytes asked)",
                                   r->id, bytes);
        uint64_t a = SIM_FAKE_BASE | ((uint64_t)r->id << SIM_FAKE_RANK_SHIFT) |
                     r->fake_next;
        r->fake_next += len;
        *out = (void *)(uintptr_t)a;
        return HERD_OK;
    }
    if (r->nallocs == r->allocs_cap) {
        size_t cap = r->allocs_cap ? r->allocs_cap * 2 : 16;
        void **v = realloc(r->allocs, cap * sizeof(*v));
        if (!v)
            return HERD_ERR_NO_MEMORY;
        r->allocs = v;
        r->allocs_cap = cap;
    }
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p)
        return core_comm_error(comm, HERD_ERR_NO_MEMORY, "alloc: %zu bytes",
                               bytes);
    r->allocs[r->nallocs++] = p;
    *out = p;
    return HERD_OK;
}

static herd_status_t op_free(herd_comm_t *comm, void *ptr)
{
    sim_comm_t *c = sc(comm);
    sim_rank_t *r = c->r;
    if ((uintptr_t)ptr & SIM_FAKE_BASE)
        return HERD_OK;
    for (size_t i = 0; i < r->nallocs; i++)
        if (r->allocs[i] == ptr) {
            free(ptr);
            r->allocs[i] = r->allocs[--r->nallocs];
            return HERD_OK;
        }
    return core_comm_error(comm, HERD_ERR_INVALID_ARG,
                           "free: %p was not allocated by herd_alloc", ptr);
}

/* Host <-> "engine" memory for the object calls: real buffers are host
 * memory; phantom ones hold no data, so nothing can be moved. */
static herd_status_t op_copy(herd_comm_t *comm, void *dst, const void *src,
                             size_t bytes)
{
    if (((uintptr_t)dst & SIM_FAKE_BASE) || ((uintptr_t)src & SIM_FAKE_BASE))
        return core_comm_error(comm, HERD_ERR_UNSUPPORTED,
                               "sim: phantom buffers carry no data (set "
                               "herd_sim_opts_t.real_buffers)");
    memcpy(dst, src, bytes);
    return HERD_OK;
}

static uint64_t op_now(const herd_comm_t *comm)
{
    return ((const sim_comm_t *)comm)->w->now;
}

static herd_status_t op_mark(herd_comm_t *comm, const char *label)
{
    sim_comm_t *c = sc(comm);
    sim_rank_t *r = c->r;
    sim_world_t *w = c->w;
    if (sim_rank_aborting(r))
        return HERD_ERR_ABORTED;
    r->poll_streak = 0;
    if (strncmp(label, "step", 4) == 0) {
        long s = r->steps++;
        if (s == r->die_at_step) {
            sim_rank_die(w, r);
            return sim_rank_park_dead(r);
        }
    }
    herd_tl_rec_t rec = {.kind = HERD_TL_MARK,
                         .rank = r->id,
                         .node = sim_node_of(w, r->id),
                         .group = comm->group_id,
                         .peer = -1,
                         .start_ns = w->now,
                         .end_ns = w->now,
                         .label = label};
    core_comm_timeline(comm, &rec);
    return HERD_OK;
}

const herd_engine_ops_t sim_engine_ops = {
    .name = "sim",
    .run = sim_engine_run_op,
    .comm_create = op_comm_create,
    .comm_destroy = op_comm_destroy,
    .group_create = op_group_create,
    .coll_post = op_coll_post,
    .req_wait = op_req_wait,
    .req_test = op_req_test,
    .req_free = op_req_free,
    .compute = op_compute,
    .compute_until = op_compute_until,
    .alloc = op_alloc,
    .free = op_free,
    .now = op_now,
    .mark = op_mark,
    .flight_dump = sim_flight_dump_op,
    .copy = op_copy,
};
