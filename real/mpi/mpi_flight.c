/* real/mpi/mpi_flight.c - the mpi engine's glue to the flight recorder
 * (core/flight.c keeps the record: this rank's last HERD_FLIGHT_ENTRIES
 * ops with their group, sequence, kind, sizes, state and times on the
 * monotonic clock). It is written to <dir>/rank<r>.json (r: the rank in
 * MPI_COMM_WORLD) on a timeout when HERD_FLIGHT_DIR is set, and on
 * herd_flight_dump(); `herd diagnose` reads the dumps of all ranks. */
#include "core/host_engine.h"
#include "real/mpi/mpi_internal.h"

herd_status_t mpi_flight_dump(mpi_world_t *w, const char *dir,
                              const char *reason)
{
    return core_host_flight_dump(&w->flight, "mpi", w->rank, w->size, dir,
                                 reason);
}

herd_status_t mpi_flight_dump_op(herd_comm_t *comm, const char *dir)
{
    mpi_world_t *w = ((mpi_comm_t *)comm)->w;
    return core_host_flight_dump_api(comm, &w->flight, "mpi", w->rank, w->size,
                                     dir);
}
