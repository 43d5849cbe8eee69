/* core/host_engine.h - glue shared by the engines whose ranks are host
 * processes and whose buffers are host memory (tcp, mpi): the monotonic
 * clock, timeline marks and compute records, modelled compute as a CPU
 * spin that keeps the engine's communication progressing, flight record
 * dumps and herd_run for one process. The engines keep what differs (how a rank
 * finds its node, how it progresses, what it tears down) and pass it in. */
#ifndef HERD_CORE_HOST_ENGINE_H
#define HERD_CORE_HOST_ENGINE_H

#include <stdint.h>

#include "core/engine.h"
#include "core/flight.h"

/* Progress the engine's communication once (called in a compute spin). */
typedef void (*core_host_poll_cb)(void *arg);

/* CLOCK_MONOTONIC in nanoseconds: the clock of every timeline record of
 * a host engine. */
uint64_t core_host_now_ns(void);
/* The engine's `now` op: core_host_now_ns (comm unused). */
uint64_t core_host_now(const herd_comm_t *comm);

/* A timeline record of this rank with no collective (a compute span or a
 * mark) on `node`. */
void core_host_record(herd_comm_t *comm, herd_tl_kind_t kind, int node,
                      uint64_t t0, uint64_t t1, const char *label);
/* Spin the CPU for `seconds` (already scaled by HERD_COMPUTE_SCALE),
 * calling poll(arg) all the while so asynchronous collectives overlap
 * modelled compute as on a device; then record the span. */
herd_status_t core_host_compute(herd_comm_t *comm, double seconds, int node,
                                core_host_poll_cb poll, void *arg,
                                const char *label);
/* A zero-length timeline mark now. */
herd_status_t core_host_mark(herd_comm_t *comm, int node, const char *label);

/* Dump the flight record f of world rank `rank` of `size` of `engine` to
 * dir (core_flight_dump), stamped with the monotonic clock now. */
herd_status_t core_host_flight_dump(const core_flight_t *f, const char *engine,
                                    int rank, int size, const char *dir,
                                    const char *reason);
/* The same for herd_flight_dump on comm (core_flight_dump_api, reason
 * "api"). */
herd_status_t core_host_flight_dump_api(herd_comm_t *comm,
                                        const core_flight_t *f,
                                        const char *engine, int rank, int size,
                                        const char *dir);

/* herd_run for one process of a host engine: the world through
 * ops->comm_create, fn, the run's info, ops->comm_destroy, then
 * after_destroy() when not NULL (not called when the world was not
 * created). HERD_ERR_ABORTED when fn returned non-zero. */
herd_status_t core_host_run(const herd_engine_ops_t *ops,
                            const herd_init_t *init, herd_main_fn fn, void *arg,
                            herd_run_info_t *info, void (*after_destroy)(void));

#endif
