/* core/api.c - the public API: every argument is checked here once, then
 * the call is dispatched to the communicator's engine. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/reduce.h"

void herd_run_info_clear(herd_run_info_t *info)
{
    if (!info)
        return;
    free(info->report);
    memset(info, 0, sizeof(*info));
    info->failed_rank = -1;
}

static herd_status_t find_engine(const herd_init_t *init,
                                 const herd_engine_ops_t **ops)
{
    if (!init || !init->backend)
        return HERD_ERR_INVALID_ARG;
    *ops = core_engine_find(init->backend);
    return *ops ? HERD_OK : HERD_ERR_NOT_FOUND;
}

herd_status_t herd_run(const herd_init_t *init, herd_main_fn fn, void *arg,
                       herd_run_info_t *info)
{
    const herd_engine_ops_t *ops;
    if (!fn)
        return HERD_ERR_INVALID_ARG;
    if (info) {
        memset(info, 0, sizeof(*info));
        info->failed_rank = -1;
    }
    herd_status_t st = find_engine(init, &ops);
    if (st == HERD_ERR_NOT_FOUND && info) {
        char engines[256], msg[512];
        core_engine_describe(engines, sizeof(engines));
        snprintf(msg, sizeof(msg), "unknown engine '%s'; engines: %s\n",
                 init->backend, engines);
        info->report = strdup(msg);
    }
    if (st != HERD_OK)
        return st;
    return ops->run(init, fn, arg, info);
}

herd_status_t herd_comm_create(const herd_init_t *init, herd_comm_t **out)
{
    const herd_engine_ops_t *ops;
    if (!out)
        return HERD_ERR_INVALID_ARG;
    herd_status_t st = find_engine(init, &ops);
    if (st != HERD_OK)
        return st;
    if (!ops->comm_create)
        return HERD_ERR_UNSUPPORTED;
    return ops->comm_create(init, out);
}

herd_status_t herd_comm_destroy(herd_comm_t *comm)
{
    if (!comm)
        return HERD_ERR_INVALID_ARG;
    return comm->ops->comm_destroy(comm);
}

int herd_comm_rank(const herd_comm_t *c)
{
    return c ? c->rank : -1;
}
int herd_comm_size(const herd_comm_t *c)
{
    return c ? c->size : 0;
}
int herd_comm_local_rank(const herd_comm_t *c)
{
    return c ? c->local_rank : -1;
}
const char *herd_comm_backend(const herd_comm_t *c)
{
    return c ? c->ops->name : "";
}
const char *herd_last_error(const herd_comm_t *c)
{
    return c ? c->last_error : "no communicator";
}

int herd_comm_world_rank(const herd_comm_t *c, int rank)
{
    if (!c || rank < 0 || rank >= c->size)
        return -1;
    return c->world_ranks ? c->world_ranks[rank] : rank;
}

herd_status_t herd_new_group(herd_comm_t *comm, const int *ranks, int nranks,
                             herd_comm_t **out)
{
    if (!comm || !out)
        return HERD_ERR_INVALID_ARG;
    if (!ranks || nranks <= 0 || nranks > comm->size)
        return core_comm_error(comm, HERD_ERR_INVALID_ARG,
                               "new_group: need 1..%d ranks, got %d",
                               comm->size, nranks);
    for (int i = 0; i < nranks; i++) {
        if (ranks[i] < 0 || ranks[i] >= comm->size)
            return core_comm_error(comm, HERD_ERR_INVALID_ARG,
                                   "new_group: rank %d out of range [0, %d)",
                                   ranks[i], comm->size);
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return core_comm_error(comm, HERD_ERR_INVALID_ARG,
                                       "new_group: rank %d listed twice",
                                       ranks[i]);
    }
    /* Ids are agreed without communication: every rank of the parent calls
     * new_group in the same order, so counting calls gives the same id. */
    int id = comm->next_group_id++;
    id = comm->group_id * 1000 + id;
    return comm->ops->group_create(comm, ranks, nranks, id, out);
}

herd_status_t herd_comm_set_algo(herd_comm_t *c, herd_coll_t coll,
                                 herd_algo_t algo)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    if ((unsigned)coll >= HERD_COLL_COUNT || (unsigned)algo >= HERD_ALGO_COUNT)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "set_algo: unknown collective or algorithm");
    c->algo[coll] = algo;
    return HERD_OK;
}

herd_status_t herd_comm_set_channels(herd_comm_t *c, int channels,
                                     size_t chunk_bytes)
{
    if (!c || channels < 0 || channels > 64)
        return c ? core_comm_error(c, HERD_ERR_INVALID_ARG,
                                   "set_channels: channels must be 1..64")
                 : HERD_ERR_INVALID_ARG;
    if (channels)
        c->channels = channels;
    if (chunk_bytes)
        c->chunk_bytes = chunk_bytes;
    return HERD_OK;
}

herd_status_t herd_comm_set_label(herd_comm_t *c, const char *label)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    snprintf(c->label, sizeof(c->label), "%s", label ? label : "");
    return HERD_OK;
}

herd_status_t herd_mark(herd_comm_t *c, const char *label)
{
    if (!c || !label)
        return HERD_ERR_INVALID_ARG;
    return c->ops->mark(c, label);
}

herd_status_t herd_compute(herd_comm_t *c, double seconds, const char *label)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    if (!(seconds >= 0) || seconds > 1e9)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "compute: duration %g s is not in [0, 1e9]",
                               seconds);
    return c->ops->compute(c, seconds, label);
}

/* Engines without their own compute_until: slices, testing between. */
static herd_status_t compute_sliced(herd_comm_t *c, double seconds,
                                    herd_req_t *req, const char *label,
                                    double *done_out)
{
    const double slice = 20e-6;
    double left = seconds;
    while (left > 0) {
        int fin = 0;
        herd_status_t st = herd_req_test(req, &fin);
        if (fin)
            break;
        if (st != HERD_OK)
            return st;
        double piece = left < slice ? left : slice;
        if ((st = c->ops->compute(c, piece, label)) != HERD_OK)
            return st;
        left -= piece;
    }
    *done_out = left > 0 ? seconds - left : seconds;
    return HERD_OK;
}

herd_status_t herd_compute_until(herd_comm_t *c, double seconds,
                                 herd_req_t *req, const char *label,
                                 double *done_out)
{
    if (!c || !req || !done_out || req->comm == NULL)
        return HERD_ERR_INVALID_ARG;
    if (!(seconds >= 0) || seconds > 1e9)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "compute: duration %g s is not in [0, 1e9]",
                               seconds);
    if (req->ops == &core_multi_req_ops) /* batch or coalesced call */
        return core_multi_compute_until(c, seconds, req, label, done_out);
    if (req->ops != c->ops)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "compute_until: the request belongs to "
                               "another engine");
    return c->ops->compute_until
               ? c->ops->compute_until(c, seconds, req, label, done_out)
               : compute_sliced(c, seconds, req, label, done_out);
}

herd_status_t herd_alloc(herd_comm_t *c, size_t bytes, void **ptr_out)
{
    if (!c || !ptr_out)
        return HERD_ERR_INVALID_ARG;
    return c->ops->alloc(c, bytes, ptr_out);
}

herd_status_t herd_free(herd_comm_t *c, void *ptr)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    if (!ptr)
        return HERD_OK;
    return c->ops->free(c, ptr);
}

uint64_t herd_now(const herd_comm_t *c)
{
    return c ? c->ops->now(c) : 0;
}

herd_status_t herd_req_wait(herd_req_t *req)
{
    if (!req)
        return HERD_ERR_INVALID_ARG;
    return req->ops->req_wait(req);
}

herd_status_t herd_req_test(herd_req_t *req, int *done)
{
    if (!req || !done)
        return HERD_ERR_INVALID_ARG;
    return req->ops->req_test(req, done);
}

void herd_req_free(herd_req_t *req)
{
    if (req)
        req->ops->req_free(req);
}

herd_status_t herd_flight_dump(herd_comm_t *c, const char *dir)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    if (!c->ops->flight_dump)
        return core_comm_error(c, HERD_ERR_UNSUPPORTED,
                               "flight dump: the %s engine keeps no flight "
                               "record",
                               c->ops->name);
    return c->ops->flight_dump(c, dir);
}
