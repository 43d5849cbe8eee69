/* real/nccl/nccl_engine.c - the GPU engine: communicator lifecycle
 * (rendezvous through the store, NCCL unique id, non-blocking NCCL
 * communicators, subgroups by ncclCommSplit), modelled compute as a spin
 * kernel, device memory, the clock and the engine ops table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "real/nccl/nccl_internal.h"

static herd_status_t nccl_comm_destroy(herd_comm_t *comm);

uint64_t nccl_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double now_s(void)
{
    return nccl_clock_ns() * 1e-9;
}

herd_status_t nccl_settle(nccl_comm_t *c, ncclResult_t r, double deadline_s,
                          const char *what)
{
    while (r == ncclInProgress) {
        if (now_s() > deadline_s) {
            ncclCommAbort(c->nc);
            c->aborted = 1;
            return core_comm_error(&c->base, HERD_ERR_TIMEOUT,
                                   "nccl: %s did not complete in time "
                                   "(communicator aborted)",
                                   what);
        }
        if (ncclCommGetAsyncError(c->nc, &r) != ncclSuccess)
            break;
    }
    if (r != ncclSuccess)
        return core_comm_error(&c->base, HERD_ERR_IO, "nccl: %s failed: %s",
                               what, ncclGetErrorString(r));
    return HERD_OK;
}

/* Pick the GPU: LOCAL_RANK modulo the visible devices. */
static herd_status_t pick_device(int local_rank, int *dev_out, char *err,
                                 size_t errlen)
{
    int n = 0;
    cudaError_t ce = cudaGetDeviceCount(&n);
    if (ce != cudaSuccess || n <= 0) {
        snprintf(err, errlen,
                 "nccl engine: no usable CUDA device (%s); use --engine tcp "
                 "or sim on this machine",
                 ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        return HERD_ERR_NO_DEVICE;
    }
    int dev = (local_rank < 0 ? 0 : local_rank) % n;
    if (cudaSetDevice(dev) != cudaSuccess) {
        snprintf(err, errlen, "nccl engine: cannot use device %d", dev);
        return HERD_ERR_NO_DEVICE;
    }
    *dev_out = dev;
    return HERD_OK;
}

/* Rank 0 makes the unique id; everyone else reads it from the store. */
static herd_status_t exchange_id(nccl_world_t *w, int gid, int rank,
                                 ncclUniqueId *id)
{
    char key[160];
    /* The store client adds the run's key prefix (HERD_STORE_PREFIX). */
    snprintf(key, sizeof(key), "nccl/uid/%d", gid);
    if (rank == 0) {
        if (ncclGetUniqueId(id) != ncclSuccess)
            return HERD_ERR_IO;
        return store_set(w->rdzv.client, key, id, sizeof(*id));
    }
    void *val = NULL;
    size_t len = 0;
    herd_status_t st = store_get(w->rdzv.client, key, 0, &val, &len);
    if (st == HERD_OK && len != sizeof(*id))
        st = HERD_ERR_PARSE;
    if (st == HERD_OK)
        memcpy(id, val, sizeof(*id));
    free(val);
    return st;
}

static herd_status_t world_setup(nccl_world_t *w, const herd_init_t *init,
                                 char *err, size_t errlen)
{
    /* Fail fast on a machine without a GPU, before any rendezvous. */
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev <= 0)
        return pick_device(0, &w->device, err, errlen);
    herd_status_t st = store_rdzv_open(init, &w->rdzv, err, errlen);
    if (st != HERD_OK)
        return st;
    const char *scale = getenv("HERD_COMPUTE_SCALE");
    w->compute_scale = scale && atof(scale) > 0 ? atof(scale) : 1.0;
    st = pick_device(w->rdzv.local_rank, &w->device, err, errlen);
    if (st != HERD_OK)
        return st;
    if (cudaStreamCreateWithFlags(&w->compute_stream, cudaStreamNonBlocking) ||
        cudaEventCreate(&w->base_event) ||
        cudaEventRecord(w->base_event, w->compute_stream) ||
        cudaEventSynchronize(w->base_event)) {
        snprintf(err, errlen, "nccl engine: CUDA stream/event setup failed");
        return HERD_ERR_IO;
    }
    w->base_ns = nccl_clock_ns();
    return HERD_OK;
}

static herd_status_t comm_open(nccl_world_t *w, nccl_comm_t *c,
                               const herd_init_t *init)
{
    double deadline = now_s() + c->base.timeout_s;
    ncclUniqueId id;
    herd_status_t st = exchange_id(w, 0, c->base.rank, &id);
    if (st != HERD_OK)
        return core_comm_error(&c->base, st, "nccl: unique id exchange: %s",
                               herd_status_string(st));
    if (cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking))
        return core_comm_error(&c->base, HERD_ERR_IO, "nccl: stream create");
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclResult_t r =
        ncclCommInitRankConfig(&c->nc, c->base.size, id, c->base.rank, &cfg);
    return nccl_settle(c, r, deadline, "ncclCommInitRankConfig");
}

static herd_status_t nccl_comm_create(const herd_init_t *init,
                                      herd_comm_t **out)
{
    extern const herd_engine_ops_t nccl_engine_ops;
    char err[512] = "";
    nccl_world_t *w = calloc(1, sizeof(*w));
    nccl_comm_t *c = calloc(1, sizeof(*c));
    herd_status_t st = HERD_ERR_NO_MEMORY;
    if (!w || !c)
        goto fail;
    core_flight_init(&w->flight, core_flight_limit());
    if ((st = world_setup(w, init, err, sizeof(err))) != HERD_OK) {
        fprintf(stderr, "herd: %s\n", err);
        goto fail;
    }
    core_comm_init(&c->base, &nccl_engine_ops, w->rdzv.rank, w->rdzv.world_size,
                   w->rdzv.local_rank, w->rdzv.rank, 0, NULL, init);
    c->world = w;
    w->refs = 1;
    if ((st = comm_open(w, c, init)) != HERD_OK) {
        fprintf(stderr, "herd: rank %d: %s\n", c->base.rank,
                c->base.last_error);
        nccl_comm_destroy(&c->base);
        return st;
    }
    *out = &c->base;
    return HERD_OK;
fail:
    if (w && w->rdzv.client)
        store_rdzv_close(&w->rdzv);
    free(w);
    free(c);
    return st;
}

static void world_release(nccl_world_t *w)
{
    if (--w->refs > 0)
        return;
    cudaEventDestroy(w->base_event);
    cudaStreamDestroy(w->compute_stream);
    store_rdzv_close(&w->rdzv);
    core_flight_fini(&w->flight);
    free(w);
}

static herd_status_t nccl_comm_destroy(herd_comm_t *comm)
{
    nccl_comm_t *c = (nccl_comm_t *)comm;
    if (c->nc) {
        if (c->aborted)
            ; /* already torn down by ncclCommAbort */
        else if (cudaStreamSynchronize(c->stream) != cudaSuccess ||
                 ncclCommFinalize(c->nc) != ncclSuccess)
            ncclCommAbort(c->nc);
        else
            ncclCommDestroy(c->nc);
    }
    if (c->stream)
        cudaStreamDestroy(c->stream);
    nccl_world_t *w = c->world;
    core_comm_fini(comm);
    free(c);
    if (w)
        world_release(w);
    return HERD_OK;
}

static herd_status_t nccl_group_create(herd_comm_t *parent, const int *ranks,
                                       int n, int gid, herd_comm_t **out)
{
    extern const herd_engine_ops_t nccl_engine_ops;
    nccl_comm_t *p = (nccl_comm_t *)parent;
    int me = -1;
    for (int i = 0; i < n; i++)
        if (ranks[i] == parent->rank)
            me = i;
    nccl_comm_t *c = calloc(1, sizeof(*c));
    int *wr = me >= 0 ? malloc(sizeof(int) * (size_t)n) : NULL;
    if (!c || (me >= 0 && !wr)) {
        free(c);
        free(wr);
        return HERD_ERR_NO_MEMORY;
    }
    for (int i = 0; me >= 0 && i < n; i++)
        wr[i] = herd_comm_world_rank(parent, ranks[i]);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t nc = NULL;
    ncclResult_t r =
        ncclCommSplit(p->nc, me >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, me, &nc, &cfg);
    herd_status_t st =
        nccl_settle(p, r, now_s() + parent->timeout_s, "ncclCommSplit");
    if (st != HERD_OK || me < 0) {
        free(c);
        free(wr);
        if (st == HERD_OK)
            *out = NULL;
        return st;
    }
    core_comm_init(&c->base, &nccl_engine_ops, me, n, parent->local_rank,
                   parent->world_rank, gid, wr, NULL);
    core_comm_inherit(&c->base, parent);
    c->nc = nc;
    c->world = p->world;
    p->world->refs++;
    if (cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) {
        nccl_comm_destroy(&c->base);
        return HERD_ERR_IO;
    }
    *out = &c->base;
    return HERD_OK;
}

static herd_status_t nccl_compute(herd_comm_t *comm, double seconds,
                                  const char *label)
{
    nccl_comm_t *c = (nccl_comm_t *)comm;
    seconds *= c->world->compute_scale;
    uint64_t t0 = nccl_clock_ns();
    if (nccl_spin_launch((uint64_t)(seconds * 1e9), c->world->compute_stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(c->world->compute_stream) != cudaSuccess)
        return core_comm_error(comm, HERD_ERR_IO, "nccl: spin kernel failed");
    herd_tl_rec_t rec = {.kind = HERD_TL_COMPUTE,
                         .rank = comm->world_rank,
                         .group = comm->group_id,
                         .peer = -1,
                         .start_ns = t0 - c->world->base_ns,
                         .end_ns = nccl_clock_ns() - c->world->base_ns,
                         .label = label};
    core_comm_timeline(comm, &rec);
    return HERD_OK;
}

static herd_status_t nccl_alloc(herd_comm_t *comm, size_t bytes, void **out)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess)
        return core_comm_error(comm, HERD_ERR_NO_MEMORY,
                               "nccl: cudaMalloc(%zu) failed", bytes);
    *out = p;
    return HERD_OK;
}

static herd_status_t nccl_free(herd_comm_t *comm, void *ptr)
{
    return cudaFree(ptr) == cudaSuccess ? HERD_OK : HERD_ERR_INVALID_ARG;
}

static uint64_t nccl_now(const herd_comm_t *comm)
{
    return nccl_clock_ns() - ((const nccl_comm_t *)comm)->world->base_ns;
}

static herd_status_t nccl_mark(herd_comm_t *comm, const char *label)
{
    uint64_t t = nccl_now(comm);
    herd_tl_rec_t rec = {.kind = HERD_TL_MARK,
                         .rank = comm->world_rank,
                         .group = comm->group_id,
                         .peer = -1,
                         .start_ns = t,
                         .end_ns = t,
                         .label = label};
    core_comm_timeline(comm, &rec);
    return HERD_OK;
}

static herd_status_t nccl_run(const herd_init_t *init, herd_main_fn fn,
                              void *arg, herd_run_info_t *info)
{
    herd_comm_t *world = NULL;
    herd_status_t st = nccl_comm_create(init, &world);
    if (st != HERD_OK)
        return st;
    int rc = fn(world, arg);
    if (info) {
        info->failed_rank = rc ? world->rank : -1;
        info->exit_code = rc;
        info->end_time_ns = nccl_now(world);
    }
    nccl_comm_destroy(world);
    return rc ? HERD_ERR_RANK_EXITED : HERD_OK;
}

const herd_engine_ops_t nccl_engine_ops = {
    .name = "nccl",
    .run = nccl_run,
    .comm_create = nccl_comm_create,
    .comm_destroy = nccl_comm_destroy,
    .group_create = nccl_group_create,
    .coll_post = nccl_coll_post,
    .req_wait = nccl_req_wait,
    .req_test = nccl_req_test,
    .req_free = nccl_req_free,
    .compute = nccl_compute,
    .alloc = nccl_alloc,
    .free = nccl_free,
    .now = nccl_now,
    .mark = nccl_mark,
    .flight_dump = nccl_flight_dump_op,
    .post_group = nccl_post_group,
    .copy = nccl_copy,
};
