/* real/nccl/nccl_flight.c - the GPU engine's glue to the flight recorder
 * (core/flight.c keeps the record: this rank's last HERD_FLIGHT_ENTRIES
 * ops with their group, sequence, kind, sizes, state and times on the
 * host's monotonic clock; "started" when a poll first finds the
 * collective's start event passed, as PyTorch's recorder discovers it).
 * It is written to <dir>/rank<r>.json on a timeout or a NCCL error when
 * HERD_FLIGHT_DIR is set, and on herd_flight_dump(); `herd diagnose`
 * reads the dumps of all ranks. */
#include "real/nccl/nccl_internal.h"

static core_flight_meta_t meta(const nccl_comm_t *c, const char *reason)
{
    const nccl_world_t *w = c->world;
    return (core_flight_meta_t){.engine = "nccl",
                                .rank = w->rdzv.rank,
                                .world_size = w->rdzv.world_size,
                                .now = nccl_clock_ns(),
                                .clock = "monotonic",
                                .reason = reason};
}

herd_status_t nccl_flight_dump(nccl_comm_t *c, const char *dir,
                               const char *reason)
{
    core_flight_meta_t m = meta(c, reason);
    return core_flight_dump(&c->world->flight, &m, dir);
}

herd_status_t nccl_flight_dump_op(herd_comm_t *comm, const char *dir)
{
    nccl_comm_t *c = (nccl_comm_t *)comm;
    core_flight_meta_t m = meta(c, "api");
    return core_flight_dump_api(comm, &c->world->flight, &m, dir);
}
