/* real/mpi/mpi_flight.c - the mpi engine's glue to the flight recorder
 * (core/flight.c keeps the record: this rank's last HERD_FLIGHT_ENTRIES
 * ops with their group, sequence, kind, sizes, state and times on the
 * monotonic clock). It is written to <dir>/rank<r>.json (r: the rank in
 * MPI_COMM_WORLD) on a timeout when HERD_FLIGHT_DIR is set, and on
 * herd_flight_dump(); `herd diagnose` reads the dumps of all ranks. */
#include "real/mpi/mpi_internal.h"

static core_flight_meta_t meta(const mpi_world_t *w, const char *reason)
{
    return (core_flight_meta_t){.engine = "mpi",
                                .rank = w->rank,
                                .world_size = w->size,
                                .now = mpi_now_ns(),
                                .clock = "monotonic",
                                .reason = reason};
}

herd_status_t mpi_flight_dump(mpi_world_t *w, const char *dir,
                              const char *reason)
{
    core_flight_meta_t m = meta(w, reason);
    return core_flight_dump(&w->flight, &m, dir);
}

herd_status_t mpi_flight_dump_op(herd_comm_t *comm, const char *dir)
{
    mpi_world_t *w = ((mpi_comm_t *)comm)->w;
    core_flight_meta_t m = meta(w, "api");
    return core_flight_dump_api(comm, &w->flight, &m, dir);
}
