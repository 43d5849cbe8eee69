/* real/nccl/nccl_sched.c - run a core/ schedule on GPUs: the steps are
 * grouped by dependency depth; each depth becomes one ncclGroupStart/End
 * of sends and receives (receive-reduces land in a staging buffer), then
 * the reduction kernels of that depth, all on the communicator's stream.
 * So a schedule designed and verified for the simulator runs on NCCL.
 *
 * Depth grouping keeps each rank's order and dependencies; it relies on
 * matching steps of neighbouring ranks sitting at compatible depths, as
 * they do in the ring, tree, halving-doubling and direct schedules. */
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "real/nccl/nccl_internal.h"

typedef struct exec_bufs {
    char *in, *out, *scratch, *staging;
    size_t es;
} exec_bufs_t;

static char *buf_ptr(const exec_bufs_t *b, int which, uint64_t off)
{
    char *base = which == CORE_BUF_IN    ? b->in
                 : which == CORE_BUF_OUT ? b->out
                                         : b->scratch;
    return base + off * b->es;
}

static uint32_t *step_depths(const core_sched_t *s, uint32_t *max_out)
{
    uint32_t *d = calloc(s->nsteps ? s->nsteps : 1, sizeof(*d));
    uint32_t mx = 0;
    for (uint32_t i = 0; d && i < s->nsteps; i++) {
        const core_step_t *st = &s->steps[i];
        for (uint32_t k = 0; k < st->ndeps; k++) {
            uint32_t dep = s->deps[st->dep_off + k];
            if (d[dep] + 1 > d[i])
                d[i] = d[dep] + 1;
        }
        if (d[i] > mx)
            mx = d[i];
    }
    *max_out = mx;
    return d;
}

/* Post the network steps of one depth as one NCCL group; receive-reduces
 * go to staging, whose offsets are returned in stage_off. */
static ncclResult_t post_depth(nccl_comm_t *c, const core_sched_t *s,
                               const uint32_t *depth, uint32_t level,
                               const exec_bufs_t *b, ncclDataType_t dt,
                               uint64_t *stage_off)
{
    uint64_t stage = 0;
    ncclResult_t r = ncclGroupStart();
    for (uint32_t i = 0; r == ncclSuccess && i < s->nsteps; i++) {
        const core_step_t *st = &s->steps[i];
        if (depth[i] != level)
            continue;
        if (st->kind == CORE_STEP_SEND)
            r = ncclSend(buf_ptr(b, st->src_buf, st->src_off), st->count, dt,
                         st->peer, c->nc, c->stream);
        else if (st->kind == CORE_STEP_RECV)
            r = ncclRecv(buf_ptr(b, st->dst_buf, st->dst_off), st->count, dt,
                         st->peer, c->nc, c->stream);
        else if (st->kind == CORE_STEP_RECV_REDUCE) {
            stage_off[i] = stage;
            r = ncclRecv(b->staging + stage * b->es, st->count, dt, st->peer,
                         c->nc, c->stream);
            stage += st->count;
        }
    }
    ncclResult_t e = ncclGroupEnd();
    return r != ncclSuccess ? r : e;
}

static cudaError_t local_depth(nccl_comm_t *c, const core_sched_t *s,
                               const uint32_t *depth, uint32_t level,
                               const exec_bufs_t *b,
                               const core_coll_args_t *a,
                               const uint64_t *stage_off)
{
    cudaError_t ce = cudaSuccess;
    for (uint32_t i = 0; ce == cudaSuccess && i < s->nsteps; i++) {
        const core_step_t *st = &s->steps[i];
        if (depth[i] != level)
            continue;
        if (st->kind == CORE_STEP_COPY && st->count &&
            buf_ptr(b, st->dst_buf, st->dst_off) !=
                buf_ptr(b, st->src_buf, st->src_off))
            ce = cudaMemcpyAsync(buf_ptr(b, st->dst_buf, st->dst_off),
                                 buf_ptr(b, st->src_buf, st->src_off),
                                 st->count * b->es, cudaMemcpyDeviceToDevice,
                                 c->stream);
        else if (st->kind == CORE_STEP_RECV_REDUCE)
            ce = nccl_reduce_launch(buf_ptr(b, st->dst_buf, st->dst_off),
                                    buf_ptr(b, st->src_buf, st->src_off),
                                    b->staging + stage_off[i] * b->es,
                                    st->count, a->dtype, a->op, c->stream);
    }
    return ce;
}

static uint64_t staging_need(const core_sched_t *s, const uint32_t *depth,
                             uint32_t maxd)
{
    uint64_t need = 0;
    for (uint32_t level = 0; level <= maxd; level++) {
        uint64_t n = 0;
        for (uint32_t i = 0; i < s->nsteps; i++)
            if (depth[i] == level && s->steps[i].kind == CORE_STEP_RECV_REDUCE)
                n += s->steps[i].count;
        if (n > need)
            need = n;
    }
    return need;
}

static herd_status_t run_levels(nccl_comm_t *c, const core_coll_args_t *a,
                                const core_sched_t *s, exec_bufs_t *b)
{
    ncclDataType_t dt;
    nccl_map_dtype(a->dtype, &dt);
    uint32_t maxd = 0;
    uint32_t *depth = step_depths(s, &maxd);
    uint64_t *stage_off = calloc(s->nsteps ? s->nsteps : 1, sizeof(uint64_t));
    herd_status_t st = HERD_OK;
    uint64_t need = depth ? staging_need(s, depth, maxd) : 0;
    if (!depth || !stage_off ||
        cudaMallocAsync((void **)&b->staging, (need ? need : 1) * b->es,
                        c->stream) != cudaSuccess) {
        st = core_comm_error(&c->base, HERD_ERR_NO_MEMORY,
                             "nccl: schedule buffers");
        goto out;
    }
    double deadline = nccl_clock_ns() * 1e-9 + c->base.timeout_s;
    for (uint32_t level = 0; st == HERD_OK && level <= maxd; level++) {
        ncclResult_t r = post_depth(c, s, depth, level, b, dt, stage_off);
        st = nccl_settle(c, r, deadline, "schedule step group");
        if (st == HERD_OK &&
            local_depth(c, s, depth, level, b, a, stage_off) != cudaSuccess)
            st = core_comm_error(&c->base, HERD_ERR_IO,
                                 "nccl: schedule copy/reduce kernel failed");
    }
    cudaFreeAsync(b->staging, c->stream);
out:
    free(depth);
    free(stage_off);
    return st;
}

herd_status_t nccl_sched_post(nccl_comm_t *c, const core_coll_args_t *a)
{
    if (a->op == HERD_AVG)
        return core_comm_error(&c->base, HERD_ERR_UNSUPPORTED,
                               "nccl: avg with a custom schedule (%s) is not "
                               "supported; use --algo nccl",
                               herd_algo_name(a->algo));
    core_sched_desc_t d = {.coll = a->coll, .algo = a->algo,
                           .nranks = c->base.size, .rank = c->base.rank,
                           .root = a->root, .count = a->count,
                           .elem_size = herd_dtype_size(a->dtype),
                           .channels = a->channels > 0 ? a->channels : 1,
                           .chunk_bytes = a->chunk_bytes};
    core_sched_t s;
    memset(&s, 0, sizeof(s));
    herd_status_t st = core_sched_lower(&d, &s);
    if (st != HERD_OK)
        return core_comm_error(&c->base, st, "nccl: cannot lower %s with %s",
                               herd_coll_name(a->coll),
                               herd_algo_name(a->algo));
    exec_bufs_t b = {.in = (char *)a->sendbuf, .out = a->recvbuf,
                     .es = d.elem_size};
    if (s.scratch_count &&
        cudaMallocAsync((void **)&b.scratch, s.scratch_count * b.es,
                        c->stream) != cudaSuccess)
        st = core_comm_error(&c->base, HERD_ERR_NO_MEMORY, "nccl: scratch");
    if (st == HERD_OK)
        st = run_levels(c, a, &s, &b);
    if (b.scratch)
        cudaFreeAsync(b.scratch, c->stream);
    core_sched_fini(&s);
    return st;
}
