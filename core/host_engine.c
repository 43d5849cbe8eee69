/* core/host_engine.c - glue shared by the host-memory engines (tcp, mpi):
 * the clock, compute spins, marks, flight dumps and herd_run; see
 * core/host_engine.h. One copy here, so the two engines' timelines and run
 * results cannot drift apart. */
#include <time.h>

#include "core/host_engine.h"

uint64_t core_host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t core_host_now(const herd_comm_t *comm)
{
    (void)comm;
    return core_host_now_ns();
}

void core_host_record(herd_comm_t *comm, herd_tl_kind_t kind, int node,
                      uint64_t t0, uint64_t t1, const char *label)
{
    herd_tl_rec_t r = {.kind = kind,
                       .rank = comm->world_rank,
                       .node = node,
                       .group = comm->group_id,
                       .peer = -1,
                       .start_ns = t0,
                       .end_ns = t1,
                       .label = label,
                       .status = HERD_OK};
    core_comm_timeline(comm, &r);
}

herd_status_t core_host_compute(herd_comm_t *comm, double seconds, int node,
                                core_host_poll_cb poll, void *arg,
                                const char *label)
{
    uint64_t t0 = core_host_now_ns();
    uint64_t end = t0 + (uint64_t)(seconds * 1e9);
    while (core_host_now_ns() < end)
        poll(arg);
    core_host_record(comm, HERD_TL_COMPUTE, node, t0, core_host_now_ns(),
                     label);
    return HERD_OK;
}

herd_status_t core_host_mark(herd_comm_t *comm, int node, const char *label)
{
    uint64_t t = core_host_now_ns();
    core_host_record(comm, HERD_TL_MARK, node, t, t, label);
    return HERD_OK;
}

static core_flight_meta_t flight_meta(const char *engine, int rank, int size,
                                      const char *reason)
{
    return (core_flight_meta_t){.engine = engine,
                                .rank = rank,
                                .world_size = size,
                                .now = core_host_now_ns(),
                                .clock = "monotonic",
                                .reason = reason};
}

herd_status_t core_host_flight_dump(const core_flight_t *f, const char *engine,
                                    int rank, int size, const char *dir,
                                    const char *reason)
{
    core_flight_meta_t m = flight_meta(engine, rank, size, reason);
    return core_flight_dump(f, &m, dir);
}

herd_status_t core_host_flight_dump_api(herd_comm_t *comm,
                                        const core_flight_t *f,
                                        const char *engine, int rank, int size,
                                        const char *dir)
{
    core_flight_meta_t m = flight_meta(engine, rank, size, "api");
    return core_flight_dump_api(comm, f, &m, dir);
}

herd_status_t core_host_run(const herd_engine_ops_t *ops,
                            const herd_init_t *init, herd_main_fn fn, void *arg,
                            herd_run_info_t *info, void (*after_destroy)(void))
{
    herd_comm_t *comm = NULL;
    herd_status_t st = ops->comm_create(init, &comm);
    if (st != HERD_OK)
        return st;
    int rc = fn(comm, arg);
    if (info) {
        info->failed_rank = rc ? comm->rank : -1;
        info->exit_code = rc;
        info->end_time_ns = core_host_now_ns();
        info->events = 0;
    }
    ops->comm_destroy(comm);
    if (after_destroy)
        after_destroy();
    return rc ? HERD_ERR_ABORTED : HERD_OK;
}
