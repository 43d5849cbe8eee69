/* workload/common/prog.c - the program machinery ddp, fsdp and parallel
 * share (prog.h). A collective of a group is posted on that group's
 * communicator (herd_new_group, made here in the job's order by every
 * rank; the walker names them 1.., 0 being the world); compute overlaps
 * every stream (ddp_streams_compute). Every op works in place in one
 * engine buffer the size of the largest (herd_alloc; phantom on sim). */
#include "workload/common/prog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/common/loader.h"

void wl_comm_apply(herd_comm_t *comm, const herd_algo_t algo[HERD_COLL_COUNT],
                   int channels, size_t chunk_bytes)
{
    for (int c = 0; comm && c < HERD_COLL_COUNT; c++)
        if (algo[c] != HERD_ALGO_AUTO)
            herd_comm_set_algo(comm, (herd_coll_t)c, algo[c]);
    if (comm && (channels > 0 || chunk_bytes > 0))
        herd_comm_set_channels(comm, channels, chunk_bytes);
}

double wl_prog_now_s(void *comm)
{
    return (double)herd_now(comm) * 1e-9;
}

herd_status_t wl_errors_create(int world, char ***out)
{
    char **e = calloc((size_t)world, sizeof(char *));
    if (!e)
        return HERD_ERR_NO_MEMORY;
    *out = e;
    return HERD_OK;
}

void wl_errors_destroy(char **errors, int world)
{
    for (int r = 0; errors && r < world; r++)
        free(errors[r]);
    free(errors);
}

herd_status_t wl_job_prog_create(const void *job, int world,
                                 wl_job_prog_t **out)
{
    wl_job_prog_t *p = calloc(1, sizeof(*p));
    if (!p)
        return HERD_ERR_NO_MEMORY;
    p->job = job;
    p->world = world;
    if (wl_errors_create(world, &p->errors) != HERD_OK) {
        free(p);
        return HERD_ERR_NO_MEMORY;
    }
    *out = p;
    return HERD_OK;
}

void wl_job_prog_destroy(wl_job_prog_t *p)
{
    if (!p)
        return;
    wl_errors_destroy(p->errors, p->world);
    free(p);
}

int wl_job_prog_main(herd_comm_t *world, const wl_job_prog_t *p,
                     wl_group_prog_t *d)
{
    d->algo = p->algo;
    d->channels = p->channels;
    d->chunk_bytes = p->chunk_bytes;
    d->errors = p->errors;
    return wl_group_prog_main(world, d);
}

void wl_note_failure(char **note, ddp_stream_t *const *streams, int nstreams,
                     herd_comm_t *world, long iter, herd_status_t st)
{
    char msg[DDP_ERR_MSG_MAX];
    const char *where = "";
    for (int s = 0; s < nstreams && !*where; s++)
        if (streams[s])
            where = ddp_stream_blocked(streams[s]);
    const char *detail = herd_last_error(world);
    if (*where)
        snprintf(msg, sizeof(msg), "%s of iteration %ld: %s%s%s", where,
                 iter - 1, herd_status_string(st), *detail ? ": " : "", detail);
    else
        snprintf(msg, sizeof(msg), "%s%s%s", herd_status_string(st),
                 *detail ? ": " : "", detail);
    *note = strdup(msg);
}

typedef struct prog_ctx {
    const wl_group_prog_t *d;
    herd_comm_t *world;
    herd_comm_t **groups; /* [g - 1]: NULL where this rank is not in it */
    ddp_stream_t *streams[WL_MAX_STREAMS];
    unsigned char *slot_stream; /* which stream holds a slot's op */
    long iter;                  /* counted by "step" marks */
} prog_ctx_t;

static herd_status_t e_compute(void *c, double s, const char *label)
{
    prog_ctx_t *x = c;
    return s > 0 ? ddp_streams_compute(x->streams, (size_t)x->d->nstreams, s,
                                       label)
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
    int s = e->stream >= x->d->nstreams && x->d->fold_streams ? 0 : e->stream;
    if (!comm || s < 0 || s >= x->d->nstreams)
        return HERD_ERR_INVALID_ARG; /* a group this rank is not in */
    ddp_stream_op_t op = {e->coll, e->count, e->dtype, e->root, e->label, comm};
    x->slot_stream[slot] = (unsigned char)s;
    return ddp_stream_launch(x->streams[s], slot, &op);
}

static herd_status_t e_wait(void *c, size_t slot)
{
    prog_ctx_t *x = c;
    return ddp_stream_wait(x->streams[x->slot_stream[slot]], slot);
}

static const ddp_emit_ops_t prog_ops = {
    .compute = e_compute, .mark = e_mark, .wait = e_wait, .coll = e_coll};

static herd_status_t make_groups(const wl_group_prog_t *d, prog_ctx_t *x)
{
    x->groups = calloc((size_t)d->ngroups + 1, sizeof(herd_comm_t *));
    if (!x->groups)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = HERD_OK;
    for (int g = 0; g < d->ngroups && st == HERD_OK; g++) {
        st = herd_new_group(x->world, d->groups[g].ranks, d->groups[g].n,
                            &x->groups[g]);
        wl_comm_apply(x->groups[g], d->algo, d->channels, d->chunk_bytes);
    }
    return st;
}

int wl_group_prog_main(herd_comm_t *world, const wl_group_prog_t *d)
{
    int rank = herd_comm_rank(world);
    prog_ctx_t x = {.d = d, .world = world};
    void *buf = NULL;
    uint64_t bytes =
        d->max_buf_bytes > (1u << 20) ? d->max_buf_bytes : (1u << 20);
    if (d->nstreams < 1 || d->nstreams > WL_MAX_STREAMS)
        return 1;
    wl_comm_apply(world, d->algo, d->channels, d->chunk_bytes);
    x.slot_stream = calloc(d->max_slots, 1);
    herd_status_t st = x.slot_stream ? make_groups(d, &x) : HERD_ERR_NO_MEMORY;
    if (st == HERD_OK)
        st = herd_alloc(world, bytes, &buf);
    for (int s = 0; st == HERD_OK && s < d->nstreams; s++)
        st = ddp_stream_create(world, buf, d->max_slots, d->inflight[s],
                               &x.streams[s]);
    if (st == HERD_OK)
        st = wl_data_walk(d->data, d->walk, d->job, rank, &prog_ops, &x,
                          wl_prog_now_s, world);
    if (st != HERD_OK)
        wl_note_failure(&d->errors[rank], x.streams, d->nstreams, world, x.iter,
                        st);
    for (int s = 0; s < d->nstreams; s++)
        ddp_stream_destroy(x.streams[s]);
    for (int g = 0; x.groups && g < d->ngroups; g++)
        if (x.groups[g])
            herd_comm_destroy(x.groups[g]);
    free(x.groups);
    free(x.slot_stream);
    herd_free(world, buf);
    return st == HERD_OK ? 0 : 1;
}
