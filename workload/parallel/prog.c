/* workload/parallel/prog.c - the 3D-parallel walker bound to the herd
 * API, over DDP's in-order streams: one per kind of traffic (TP, pipeline
 * receives, DP, pipeline sends), compute overlapping them
 * (ddp_streams_compute). The TP and DP streams run one op at a time, as a
 * NCCL communicator does; the p2p streams post every send and receive at
 * once (Megatron batches them with isend/irecv), and are two so that
 * waiting for a receive never waits for an earlier send, which completes
 * only when its peer receives it (the interleaved schedule would
 * deadlock). A collective of a group is posted on that group's
 * communicator (herd_new_group, made here in the job's order by every
 * rank); p2p on the world. Every op works in place in one engine buffer
 * the size of the largest (herd_alloc; phantom on sim). */
#include "workload/parallel/prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/ddp/stream.h"

typedef struct prog_ctx {
    herd_comm_t *world;
    herd_comm_t **groups; /* [g - 1]: NULL where this rank is not in it */
    ddp_stream_t *streams[PAR_NSTREAMS];
    unsigned char *slot_stream;
    long iter;
} prog_ctx_t;

static herd_status_t e_compute(void *c, double s, const char *label)
{
    prog_ctx_t *x = c;
    return s > 0 ? ddp_streams_compute(x->streams, PAR_NSTREAMS, s, label)
                 : HERD_OK;
}

static herd_status_t e_mark(void *c, const char *label)
{
    prog_ctx_t *x = c;
    x->iter += !strcmp(label, "step");
    return herd_mark(x->world, label);
}

static herd_status_t e_coll(void *c, const ddp_emit_coll_t *e, size_t slot)
{
    prog_ctx_t *x = c;
    herd_comm_t *comm = e->group > 0 ? x->groups[e->group - 1] : x->world;
    if (!comm || e->stream < 0 || e->stream >= PAR_NSTREAMS)
        return HERD_ERR_INVALID_ARG;
    ddp_stream_op_t op = {e->coll, e->count, e->dtype, e->root, e->label, comm};
    x->slot_stream[slot] = (unsigned char)e->stream;
    return ddp_stream_launch(x->streams[e->stream], slot, &op);
}

static herd_status_t e_wait(void *c, size_t slot)
{
    prog_ctx_t *x = c;
    return ddp_stream_wait(x->streams[x->slot_stream[slot]], slot);
}

static const ddp_emit_ops_t prog_ops = {
    .compute = e_compute, .mark = e_mark, .wait = e_wait, .coll = e_coll};

static void apply_settings(const par_prog_t *p, herd_comm_t *comm)
{
    for (int c = 0; comm && c < HERD_COLL_COUNT; c++)
        if (p->algo[c] != HERD_ALGO_AUTO)
            herd_comm_set_algo(comm, (herd_coll_t)c, p->algo[c]);
    if (comm && (p->channels > 0 || p->chunk_bytes > 0))
        herd_comm_set_channels(comm, p->channels, p->chunk_bytes);
}

static herd_status_t make_groups(const par_prog_t *p, prog_ctx_t *x)
{
    const par_job_t *j = p->job;
    x->groups = calloc((size_t)j->ngroups + 1, sizeof(herd_comm_t *));
    if (!x->groups)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = HERD_OK;
    for (int g = 0; g < j->ngroups && st == HERD_OK; g++) {
        st = herd_new_group(x->world, j->groups[g].ranks, j->groups[g].n,
                            &x->groups[g]);
        apply_settings(p, x->groups[g]);
    }
    return st;
}

static void note_failure(par_prog_t *p, int rank, const prog_ctx_t *x,
                         herd_status_t st)
{
    char msg[DDP_ERR_MSG_MAX];
    const char *where = "";
    for (int s = 0; s < PAR_NSTREAMS && !*where; s++)
        if (x->streams[s])
            where = ddp_stream_blocked(x->streams[s]);
    const char *detail = herd_last_error(x->world);
    if (*where)
        snprintf(msg, sizeof(msg), "%s of iteration %ld: %s%s%s", where,
                 x->iter - 1, herd_status_string(st), *detail ? ": " : "",
                 detail);
    else
        snprintf(msg, sizeof(msg), "%s%s%s", herd_status_string(st),
                 *detail ? ": " : "", detail);
    p->errors[rank] = strdup(msg);
}

int par_prog_main(herd_comm_t *world, void *arg)
{
    par_prog_t *p = arg;
    const par_job_t *job = p->job;
    int rank = herd_comm_rank(world);
    prog_ctx_t x = {.world = world};
    void *buf = NULL;
    static const int inflight[PAR_NSTREAMS] = {1, 0, 1, 0};
    uint64_t bytes =
        job->max_buf_bytes > (1u << 20) ? job->max_buf_bytes : (1u << 20);
    apply_settings(p, world);
    x.slot_stream = calloc(job->max_slots, 1);
    herd_status_t st = x.slot_stream ? make_groups(p, &x) : HERD_ERR_NO_MEMORY;
    if (st == HERD_OK)
        st = herd_alloc(world, bytes, &buf);
    for (int s = 0; st == HERD_OK && s < PAR_NSTREAMS; s++)
        st = ddp_stream_create(world, buf, job->max_slots, inflight[s],
                               &x.streams[s]);
    if (st == HERD_OK)
        st = par_job_walk(job, rank, &prog_ops, &x);
    if (st != HERD_OK)
        note_failure(p, rank, &x, st);
    for (int s = 0; s < PAR_NSTREAMS; s++)
        ddp_stream_destroy(x.streams[s]);
    for (int g = 0; x.groups && g < job->ngroups; g++)
        if (x.groups[g])
            herd_comm_destroy(x.groups[g]);
    free(x.groups);
    free(x.slot_stream);
    herd_free(world, buf);
    return st == HERD_OK ? 0 : 1;
}

herd_status_t par_prog_create(const par_job_t *job, par_prog_t **out)
{
    par_prog_t *p = calloc(1, sizeof(*p));
    if (!p)
        return HERD_ERR_NO_MEMORY;
    p->job = job;
    p->errors = calloc((size_t)job->world, sizeof(char *));
    if (!p->errors) {
        free(p);
        return HERD_ERR_NO_MEMORY;
    }
    *out = p;
    return HERD_OK;
}

void par_prog_destroy(par_prog_t *p)
{
    if (!p)
        return;
    for (int r = 0; p->errors && r < p->job->world; r++)
        free(p->errors[r]);
    free(p->errors);
    free(p);
}
