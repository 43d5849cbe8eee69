/* workload/ddp/prog.c - the DDP walker bound to the herd API.
 *
 * Collectives go through a ddp_stream_t (one in-order stream per process
 * group, as ProcessGroupNCCL runs them, unless ddp.comm_streams says
 * otherwise). Every bucket is reduced in place in one engine buffer the
 * size of the largest bucket (herd_alloc; phantom on sim): the simulator
 * only needs sizes, and a model without real gradients has no values. */
#include "workload/ddp/prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/common/loader.h"
#include "workload/common/prog.h"
#include "workload/ddp/stream.h"

typedef struct prog_ctx {
    herd_comm_t *comm;
    ddp_stream_t *stream;
    long iter; /* iteration in progress (counted by "step") */
} prog_ctx_t;

static herd_status_t e_compute(void *c, double s, const char *label)
{
    prog_ctx_t *x = c;
    return s > 0 ? ddp_stream_compute(x->stream, s, label) : HERD_OK;
}

static herd_status_t e_mark(void *c, const char *label)
{
    prog_ctx_t *x = c;
    x->iter += !strcmp(label, "step");
    return herd_mark(x->comm, label);
}

static herd_status_t launch(prog_ctx_t *x, size_t slot,
                            const ddp_stream_op_t *op)
{
    return ddp_stream_launch(x->stream, slot, op);
}

static herd_status_t e_all_reduce(void *c, uint64_t count, herd_dtype_t dt,
                                  size_t slot, const char *label)
{
    ddp_stream_op_t op = {HERD_COLL_ALL_REDUCE, count, dt, -1, label, NULL};
    return launch(c, slot, &op);
}

static herd_status_t e_broadcast(void *c, uint64_t count, herd_dtype_t dt,
                                 int root, size_t slot, const char *label)
{
    ddp_stream_op_t op = {HERD_COLL_BROADCAST, count, dt, root, label, NULL};
    return launch(c, slot, &op);
}

static herd_status_t e_barrier(void *c, size_t slot, const char *label)
{
    ddp_stream_op_t op = {HERD_COLL_BARRIER, 0, HERD_UINT8, -1, label, NULL};
    return launch(c, slot, &op);
}

static herd_status_t e_wait(void *c, size_t slot)
{
    return ddp_stream_wait(((prog_ctx_t *)c)->stream, slot);
}

static const ddp_emit_ops_t prog_ops = {
    .compute = e_compute,
    .mark = e_mark,
    .all_reduce = e_all_reduce,
    .broadcast = e_broadcast,
    .barrier = e_barrier,
    .wait = e_wait,
};

void ddp_job_set_data(ddp_job_t *job, const wl_data_t *data)
{
    job->data = *data;
    job->data.rank_batches = job->rank_iters;
    job->data.epochs = job->cfg.epochs;
}

int ddp_prog_main(herd_comm_t *world, void *arg)
{
    ddp_prog_t *p = arg;
    const ddp_job_t *job = p->job;
    int rank = herd_comm_rank(world);
    prog_ctx_t x = {.comm = world};
    char msg[DDP_ERR_MSG_MAX];
    void *buf = NULL;
    uint64_t bytes =
        job->max_bucket_bytes > (1u << 20) ? job->max_bucket_bytes : (1u << 20);
    wl_comm_apply(world, p->algo, p->channels, p->chunk_bytes);
    if (herd_alloc(world, bytes, &buf) != HERD_OK ||
        ddp_stream_create(world, buf, job->max_slots, job->cfg.comm_streams,
                          &x.stream) != HERD_OK) {
        herd_free(world, buf);
        return 1;
    }
    int raised = 0;
    wl_loader_t l;
    herd_status_t st = HERD_OK;
    if (wl_data_on(&job->data)) {
        st = wl_loader_init(&l, &job->data, rank, &prog_ops, &x, wl_prog_now_s,
                            world);
        if (st == HERD_OK)
            st = ddp_job_walk(job, rank, &wl_data_ops, &l, &raised, msg);
        wl_loader_fini(&l);
    } else {
        st = ddp_job_walk(job, rank, &prog_ops, &x, &raised, msg);
    }
    if (raised) {
        p->raised[rank] = 1;
        p->errors[rank] = strdup(msg);
    } else if (st != HERD_OK) {
        wl_note_failure(&p->errors[rank], &x.stream, 1, x.comm, x.iter, st);
    }
    ddp_stream_destroy(x.stream);
    herd_free(world, buf);
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
