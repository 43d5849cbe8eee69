/* real/tcp/flight.c - the tcp engine's glue to the flight recorder
 * (core/flight.c keeps the record: the last HERD_FLIGHT_ENTRIES ops of
 * this rank with their sequence, group, kind, sizes, state and times on
 * the monotonic clock). The record is written to <dir>/rank<r>.json on a
 * timeout or a peer failure (when HERD_FLIGHT_DIR is set), on SIGUSR1
 * and on herd_flight_dump(); `herd diagnose` reads the dumps of all
 * ranks. */
#include "core/host_engine.h"
#include "real/tcp/tcp.h"

herd_status_t tcp_flight_dump(tcp_world_t *w, const char *dir,
                              const char *reason)
{
    return core_host_flight_dump(&w->flight, "tcp", w->rank, w->size, dir,
                                 reason);
}

herd_status_t tcp_flight_dump_op(herd_comm_t *comm, const char *dir)
{
    tcp_world_t *w = ((tcp_comm_t *)comm)->w;
    return core_host_flight_dump_api(comm, &w->flight, "tcp", w->rank, w->size,
                                     dir);
}
