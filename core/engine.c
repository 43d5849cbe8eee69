/* core/engine.c - the static engine table and the communicator base. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

extern const herd_engine_ops_t sim_engine_ops;
extern const herd_engine_ops_t tcp_engine_ops;
#ifdef HERD_HAVE_NCCL
extern const herd_engine_ops_t nccl_engine_ops;
#endif
#ifdef HERD_HAVE_MPI
extern const herd_engine_ops_t mpi_engine_ops;
#endif

static const herd_engine_ops_t *const engine_table[] = {
    &sim_engine_ops,
    &tcp_engine_ops,
#ifdef HERD_HAVE_NCCL
    &nccl_engine_ops,
#endif
#ifdef HERD_HAVE_MPI
    &mpi_engine_ops,
#endif
};

static const char *const engine_names[] = {"sim", "tcp",
#ifdef HERD_HAVE_NCCL
                                           "nccl",
#endif
#ifdef HERD_HAVE_MPI
                                           "mpi",
#endif
                                           NULL};

const char *const *herd_engine_names(void)
{
    return engine_names;
}

/* Names PyTorch users type for an engine herd has under another name:
 * torch.distributed's CPU backend is Gloo, over TCP like ours. */
static const struct {
    const char *alias, *engine;
} engine_aliases[] = {{"gloo", "tcp"}};

const char *core_engine_resolve(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof(engine_aliases) / sizeof(engine_aliases[0]);
         i++)
        if (strcmp(engine_aliases[i].alias, name) == 0)
            name = engine_aliases[i].engine;
    for (size_t i = 0; i < sizeof(engine_table) / sizeof(engine_table[0]); i++)
        if (strcmp(engine_table[i]->name, name) == 0)
            return engine_table[i]->name;
    return NULL;
}

const herd_engine_ops_t *core_engine_find(const char *name)
{
    const char *engine = core_engine_resolve(name);
    for (size_t i = 0;
         engine && i < sizeof(engine_table) / sizeof(engine_table[0]); i++)
        if (engine_table[i]->name == engine)
            return engine_table[i];
    return NULL;
}

void core_engine_describe(char *buf, size_t len)
{
    size_t o = 0;
    if (!len)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(engine_table) / sizeof(engine_table[0]);
         i++) {
        const char *name = engine_table[i]->name;
        if (o < len)
            o +=
                (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", name);
        for (size_t k = 0;
             k < sizeof(engine_aliases) / sizeof(engine_aliases[0]); k++)
            if (o < len && !strcmp(engine_aliases[k].engine, name))
                o += (size_t)snprintf(buf + o, len - o, " (alias %s)",
                                      engine_aliases[k].alias);
    }
#ifndef HERD_HAVE_NCCL
    if (o < len)
        o += (size_t)snprintf(buf + o, len - o,
                              "; nccl is not built (needs CUDA and NCCL)");
#endif
#ifndef HERD_HAVE_MPI
    if (o < len)
        snprintf(buf + o, len - o,
                 "; mpi is not built (needs Open MPI: libopenmpi-dev)");
#endif
}

void core_comm_init(herd_comm_t *c, const herd_engine_ops_t *ops, int rank,
                    int size, int local_rank, int world_rank, int group_id,
                    int *world_ranks, const herd_init_t *init)
{
    memset(c, 0, sizeof(*c));
    c->ops = ops;
    c->rank = rank;
    c->size = size;
    c->local_rank = local_rank;
    c->world_rank = world_rank;
    c->group_id = group_id;
    c->world_ranks = world_ranks;
    c->next_group_id = 1;
    for (int i = 0; i < HERD_COLL_COUNT; i++)
        c->algo[i] = HERD_ALGO_AUTO;
    c->channels = 1;
    c->chunk_bytes = CORE_DEFAULT_CHUNK_BYTES;
    c->timeout_s = HERD_DEFAULT_TIMEOUT_S;
    if (init) {
        if (init->timeout_s > 0)
            c->timeout_s = init->timeout_s;
        c->tl_cb = init->timeline_cb;
        c->tl_arg = init->timeline_arg;
    }
}

void core_comm_fini(herd_comm_t *c)
{
    free(c->world_ranks);
    c->world_ranks = NULL;
}

void core_comm_inherit(herd_comm_t *child, const herd_comm_t *parent)
{
    memcpy(child->algo, parent->algo, sizeof(child->algo));
    child->channels = parent->channels;
    child->chunk_bytes = parent->chunk_bytes;
    child->timeout_s = parent->timeout_s;
    child->tl_cb = parent->tl_cb;
    child->tl_arg = parent->tl_arg;
}

herd_status_t core_comm_error(herd_comm_t *c, herd_status_t st, const char *fmt,
                              ...)
{
    if (!c)
        return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
    va_end(ap);
    return st;
}

void core_comm_timeline(const herd_comm_t *c, const herd_tl_rec_t *rec)
{
    if (c && c->tl_cb)
        c->tl_cb(rec, c->tl_arg);
}

uint64_t core_coll_send_count(herd_coll_t coll, uint64_t count, int p)
{
    switch (coll) {
    case HERD_COLL_SCATTER:
    case HERD_COLL_REDUCE_SCATTER:
    case HERD_COLL_ALL_TO_ALL:
        return count * (uint64_t)p;
    case HERD_COLL_BARRIER:
    case HERD_COLL_MONITORED_BARRIER:
        return 0;
    default:
        return count;
    }
}

uint64_t core_coll_recv_count(herd_coll_t coll, uint64_t count, int p)
{
    switch (coll) {
    case HERD_COLL_ALL_GATHER:
    case HERD_COLL_GATHER:
    case HERD_COLL_ALL_TO_ALL:
        return count * (uint64_t)p;
    case HERD_COLL_BARRIER:
    case HERD_COLL_MONITORED_BARRIER:
        return 0;
    default:
        return count;
    }
}

int core_coll_is_v(herd_coll_t coll)
{
    return coll == HERD_COLL_ALL_GATHER_V ||
           coll == HERD_COLL_REDUCE_SCATTER_V || coll == HERD_COLL_ALL_TO_ALL_V;
}

/* For the *_v kinds `count` is this rank's own side and vtotal the other
 * (core/coll_v.c sets both). */
uint64_t core_args_send_count(const core_coll_args_t *a, int p)
{
    return a->coll == HERD_COLL_REDUCE_SCATTER_V
               ? a->vtotal
               : core_coll_send_count(a->coll, a->count, p);
}

uint64_t core_args_recv_count(const core_coll_args_t *a, int p)
{
    return a->coll == HERD_COLL_ALL_GATHER_V ||
                   a->coll == HERD_COLL_ALL_TO_ALL_V
               ? a->vtotal
               : core_coll_recv_count(a->coll, a->count, p);
}

uint64_t core_coll_algbw_bytes(herd_coll_t coll, uint64_t count, size_t esize,
                               int p)
{
    uint64_t b = count * esize;
    switch (coll) {
    case HERD_COLL_ALL_GATHER:
    case HERD_COLL_REDUCE_SCATTER:
    case HERD_COLL_ALL_TO_ALL:
    case HERD_COLL_GATHER:
    case HERD_COLL_SCATTER:
        return b * (uint64_t)p;
    default:
        return b;
    }
}

double core_coll_busbw_factor(herd_coll_t coll, int p)
{
    if (p <= 1)
        return coll == HERD_COLL_ALL_REDUCE ? 0.0 : 1.0;
    switch (coll) {
    case HERD_COLL_ALL_REDUCE:
        return 2.0 * (p - 1) / p;
    case HERD_COLL_ALL_GATHER:
    case HERD_COLL_REDUCE_SCATTER:
    case HERD_COLL_ALL_TO_ALL:
    case HERD_COLL_GATHER:
    case HERD_COLL_SCATTER:
        return (double)(p - 1) / p;
    default:
        return 1.0;
    }
}

int core_env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end;
    long x = strtol(v, &end, 10);
    return (*end == '\0' && x >= -2147483647L && x <= 2147483647L) ? (int)x
                                                                   : fallback;
}

herd_status_t core_host_alloc(herd_comm_t *comm, size_t bytes, void **out)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0)
        return core_comm_error(comm, HERD_ERR_NO_MEMORY,
                               "alloc: %zu bytes: out of memory", bytes);
    *out = p;
    return HERD_OK;
}

herd_status_t core_host_free(herd_comm_t *comm, void *ptr)
{
    (void)comm;
    free(ptr);
    return HERD_OK;
}
