/* core/flight.h - the flight recorder every engine keeps: a ring of a
 * rank's last collectives and point-to-point ops (HERD_FLIGHT_ENTRIES,
 * default 2000; 0 turns it off) with the fields PyTorch's Flight Recorder
 * keeps, less the stacks: record id, group, sequence numbers, kind,
 * sizes, dtype, op, root or peer, state (scheduled, started, completed),
 * status and times. The engines call core_flight_add when an op is
 * posted and core_flight_update as it starts and ends, with their own
 * clock (monotonic nanoseconds on the real engines, virtual time on the
 * simulator); core_flight_dump writes <dir>/rank<r>.json, which
 * `herd diagnose` reads (docs/formats.md, "Flight record").
 *
 * The ring starts small and doubles up to its limit, so a simulated world
 * of many ranks that post few ops pays for the ops, not for the limit.
 * Not thread-safe: one rank's engine uses it from one thread. */
#ifndef HERD_CORE_FLIGHT_H
#define HERD_CORE_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"

#define CORE_FLIGHT_DEFAULT_ENTRIES 2000

typedef enum core_fr_state {
    CORE_FR_SCHEDULED,
    CORE_FR_STARTED,
    CORE_FR_COMPLETED
} core_fr_state_t;

typedef struct core_fr_entry {
    uint64_t id;                  /* record number, 1-based; 0: empty slot */
    uint64_t seq;                 /* the group's collective or p2p sequence */
    uint64_t coll_seq;            /* the group's collective count when posted */
    uint64_t p2p_seq;             /* the group's p2p count when posted */
    uint64_t count;               /* elements, as in the call */
    uint64_t in_bytes, out_bytes; /* this rank's input and output */
    uint64_t t_scheduled, t_started, t_completed;
    uint32_t timeout_ms;
    int group;
    int root; /* root, or the peer's world rank for send/recv; -1: none */
    herd_status_t status;
    uint8_t coll, algo, dtype, op, state; /* herd_coll_t, ... */
} core_fr_entry_t;

/* A group's members, as the dump lists them (learnt from the first op
 * recorded on it). */
typedef struct core_fr_group {
    struct core_fr_group *next;
    int id, size;
    int *world_ranks; /* NULL: 0 .. size-1 (the world) */
} core_fr_group_t;

/* Zero-filled is an empty record with the default limit. */
typedef struct core_flight {
    core_fr_entry_t *ring;
    size_t cap;       /* allocated slots */
    size_t max;       /* the limit; 0: not set (core_flight_limit()) */
    int off;          /* HERD_FLIGHT_ENTRIES=0: nothing is recorded */
    uint64_t next_id; /* 0 before the first record */
    core_fr_group_t *groups;
} core_flight_t;

/* The limit from HERD_FLIGHT_ENTRIES (default 2000; 0: off). */
size_t core_flight_limit(void);
/* $HERD_FLIGHT_DIR, or NULL when unset or empty. */
const char *core_flight_dir(void);

/* An empty record of at most `max` entries (0: recording off). */
void core_flight_init(core_flight_t *f, size_t max);
void core_flight_fini(core_flight_t *f);

/* Records an op of `comm` posted at time t (state scheduled); returns its
 * id for core_flight_update, 0 when nothing was recorded (recording off,
 * or out of memory for the very first slot). */
uint64_t core_flight_add(core_flight_t *f, const herd_comm_t *comm,
                         const core_coll_args_t *a, uint64_t t);
/* Moves entry `id` forward to state `st` at time t; a status other than
 * HERD_OK is kept. No effect once the ring has overwritten the entry. */
void core_flight_update(core_flight_t *f, uint64_t id, core_fr_state_t st,
                        herd_status_t status, uint64_t t);

/* What a dump says about where it comes from. */
typedef struct core_flight_meta {
    const char *engine;     /* "tcp", "sim", ... */
    int rank, world_size;   /* world rank and size */
    uint64_t now;           /* dump time on the engine's clock */
    const char *clock;      /* "monotonic" or "virtual" */
    const char *reason;     /* "timeout", "api", ...; NULL: none */
    const char *rank_state; /* "dead", "exited", ... (sim); NULL: none */
} core_flight_meta_t;

/* Writes the record as JSON to <dir>/rank<r>.json (creating dir; through
 * a temporary file and a rename, so a reader never sees half a dump). */
herd_status_t core_flight_dump(const core_flight_t *f,
                               const core_flight_meta_t *m, const char *dir);

/* herd_flight_dump's part every engine shares: dir NULL is
 * $HERD_FLIGHT_DIR (an error naming it when unset), and a failure is
 * recorded on comm with the directory. */
herd_status_t core_flight_dump_api(herd_comm_t *comm, const core_flight_t *f,
                                   const core_flight_meta_t *m,
                                   const char *dir);

#endif
