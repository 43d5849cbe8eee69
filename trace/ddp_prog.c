/* trace/ddp_prog.c - the DDP walker bound to the herd API.
 *
 * Every bucket is reduced in place in one engine buffer the size of the
 * largest bucket (herd_alloc; phantom on sim): the simulator only needs
 * sizes, and the values of a model without real gradients mean nothing.
 * Requests are kept per slot until finalize waits on them. */
#include "trace/ddp_prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot_info {
    herd_coll_t coll;
    char label[40];
} slot_info_t;

typedef struct prog_ctx {
    herd_comm_t *comm;
    char *buf; /* bucket buffer (largest bucket) */
    herd_req_t **reqs;
    slot_info_t *info; /* what each slot's request is, for diagnostics */
    size_t nslots;
    long iter;         /* iteration in progress (counted by "step") */
    char blocked[160]; /* the op a failed wait was for */
} prog_ctx_t;

static void remember(prog_ctx_t *x, size_t slot, herd_coll_t coll,
                     const char *label)
{
    x->info[slot].coll = coll;
    snprintf(x->info[slot].label, sizeof(x->info[slot].label), "%s", label);
}

static herd_status_t e_compute(void *c, double s, const char *label)
{
    prog_ctx_t *x = c;
    herd_status_t st = s > 0 ? herd_compute(x->comm, s, label) : HERD_OK;
    if (st != HERD_OK)
        snprintf(x->blocked, sizeof(x->blocked),
                 "stopped in compute '%s' of iteration %ld", label,
                 x->iter - 1);
    return st;
}

static herd_status_t e_mark(void *c, const char *label)
{
    prog_ctx_t *x = c;
    x->iter += !strcmp(label, "step");
    return herd_mark(x->comm, label);
}

static herd_status_t e_all_reduce(void *c, uint64_t count, herd_dtype_t dt,
                                  size_t slot, const char *label)
{
    prog_ctx_t *x = c;
    remember(x, slot, HERD_COLL_ALL_REDUCE, label);
    herd_status_t st = herd_comm_set_label(x->comm, label);
    if (st == HERD_OK)
        st = herd_all_reduce(x->comm, x->buf, x->buf, count, dt, HERD_SUM,
                             &x->reqs[slot]);
    herd_comm_set_label(x->comm, NULL);
    return st;
}

static herd_status_t e_broadcast(void *c, uint64_t count, herd_dtype_t dt,
                                 int root, size_t slot, const char *label)
{
    prog_ctx_t *x = c;
    remember(x, slot, HERD_COLL_BROADCAST, label);
    herd_status_t st = herd_comm_set_label(x->comm, label);
    if (st == HERD_OK)
        st = herd_broadcast(x->comm, x->buf, count, dt, root, &x->reqs[slot]);
    herd_comm_set_label(x->comm, NULL);
    return st;
}

static herd_status_t e_barrier(void *c, size_t slot, const char *label)
{
    prog_ctx_t *x = c;
    remember(x, slot, HERD_COLL_BARRIER, label);
    herd_status_t st = herd_comm_set_label(x->comm, label);
    if (st == HERD_OK)
        st = herd_barrier(x->comm, &x->reqs[slot]);
    herd_comm_set_label(x->comm, NULL);
    return st;
}

static herd_status_t e_wait(void *c, size_t slot)
{
    prog_ctx_t *x = c;
    if (!x->reqs[slot])
        return HERD_OK;
    herd_status_t st = herd_req_wait(x->reqs[slot]);
    if (st != HERD_OK)
        snprintf(x->blocked, sizeof(x->blocked),
                 "blocked in %s '%s' of iteration %ld",
                 herd_coll_name(x->info[slot].coll), x->info[slot].label,
                 x->iter - 1);
    herd_req_free(x->reqs[slot]);
    x->reqs[slot] = NULL;
    return st;
}

static const ddp_emit_ops_t prog_ops = {
    .compute = e_compute,
    .mark = e_mark,
    .all_reduce = e_all_reduce,
    .broadcast = e_broadcast,
    .barrier = e_barrier,
    .wait = e_wait,
};

static void apply_settings(const ddp_prog_t *p, herd_comm_t *world)
{
    for (int c = 0; c < HERD_COLL_COUNT; c++)
        if (p->algo[c] != HERD_ALGO_AUTO)
            herd_comm_set_algo(world, (herd_coll_t)c, p->algo[c]);
    if (p->channels > 0 || p->chunk_bytes > 0)
        herd_comm_set_channels(world, p->channels, p->chunk_bytes);
}

/* Requests still open when a rank leaves (it raised): release those that
 * finished; an unfinished one is the engine's to clean up. */
static void drop_requests(prog_ctx_t *x)
{
    for (size_t s = 0; s < x->nslots; s++) {
        int done = 0;
        if (x->reqs[s] && herd_req_test(x->reqs[s], &done) == HERD_OK && done)
            herd_req_free(x->reqs[s]);
    }
}

int ddp_prog_main(herd_comm_t *world, void *arg)
{
    ddp_prog_t *p = arg;
    const ddp_job_t *job = p->job;
    int rank = herd_comm_rank(world);
    prog_ctx_t x = {.comm = world, .nslots = job->max_slots};
    char msg[DDP_ERR_MSG_MAX];
    uint64_t bytes =
        job->max_bucket_bytes > (1u << 20) ? job->max_bucket_bytes : (1u << 20);
    apply_settings(p, world);
    x.reqs = calloc(x.nslots, sizeof(herd_req_t *));
    x.info = calloc(x.nslots, sizeof(slot_info_t));
    if (!x.reqs || !x.info ||
        herd_alloc(world, bytes, (void **)&x.buf) != HERD_OK) {
        free(x.reqs);
        free(x.info);
        return 1;
    }
    int raised = 0;
    herd_status_t st = ddp_job_walk(job, rank, &prog_ops, &x, &raised, msg);
    if (raised) {
        p->raised[rank] = 1;
        p->errors[rank] = strdup(msg);
        drop_requests(&x);
    } else if (st != HERD_OK && !p->errors[rank]) {
        /* an engine error (aborted wait, unsupported algorithm, ...) */
        snprintf(msg, sizeof(msg), "%s%s%s%s%s", x.blocked,
                 x.blocked[0] ? ": " : "", herd_status_string(st),
                 *herd_last_error(world) ? ": " : "", herd_last_error(world));
        p->errors[rank] = strdup(msg);
    }
    free(x.reqs);
    free(x.info);
    herd_free(world, x.buf);
    if (raised)
        return DDP_EXIT_REDUCTION_ERROR;
    return st == HERD_OK ? 0 : 1;
}

herd_status_t ddp_prog_create(const ddp_job_t *job, ddp_prog_t **out)
{
    ddp_prog_t *p = calloc(1, sizeof(*p));
    if (!p)
        return HERD_ERR_NO_MEMORY;
    p->job = job;
    p->raised = calloc((size_t)job->world, sizeof(int));
    p->errors = calloc((size_t)job->world, sizeof(char *));
    if (!p->raised || !p->errors) {
        ddp_prog_destroy(p);
        return HERD_ERR_NO_MEMORY;
    }
    *out = p;
    return HERD_OK;
}

void ddp_prog_destroy(ddp_prog_t *p)
{
    if (!p)
        return;
    for (int r = 0; p->errors && r < p->job->world; r++)
        free(p->errors[r]);
    free(p->errors);
    free(p->raised);
    free(p);
}
