/* real/tcp/flight.c - the tcp engine's glue to the flight recorder
 * (core/flight.c keeps the record: the last HERD_FLIGHT_ENTRIES ops of
 * this rank with their sequence, group, kind, sizes, state and times on
 * the monotonic clock). The record is written to <dir>/rank<r>.json on a
 * timeout or a peer failure (when HERD_FLIGHT_DIR is set), on SIGUSR1
 * and on herd_flight_dump(); `herd diagnose` reads the dumps of all
 * ranks. */
#include "real/tcp/tcp.h"

static core_flight_meta_t meta(const tcp_world_t *w, const char *reason)
{
    return (core_flight_meta_t){.engine = "tcp",
                                .rank = w->rank,
                                .world_size = w->size,
                                .now = tcp_now_ns(),
                                .clock = "monotonic",
                                .reason = reason};
}

herd_status_t tcp_flight_dump(tcp_world_t *w, const char *dir,
                              const char *reason)
{
    core_flight_meta_t m = meta(w, reason);
    return core_flight_dump(&w->flight, &m, dir);
}

herd_status_t tcp_flight_dump_op(herd_comm_t *comm, const char *dir)
{
    tcp_world_t *w = ((tcp_comm_t *)comm)->w;
    core_flight_meta_t m = meta(w, "api");
    return core_flight_dump_api(comm, &w->flight, &m, dir);
}
