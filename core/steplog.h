/* core/steplog.h - per-step records of collective schedules. When
 * HERD_STEPS_DIR names a directory, the engines that execute core/
 * schedules (the simulator, the tcp engine) write one line per step of
 * each collective (which op, which step, its kind, peer,
 * channel and bytes, and when it started and ended on the engine's clock:
 * monotonic nanoseconds on the real engines, virtual time on the
 * simulator), so that a prediction can be compared with a measurement
 * step by step (`herd compare STEPS MEASURED_STEPS...`, docs/formats.md
 * "Step records").
 * The simulator writes <dir>/steps.tsv for all its ranks, a real engine
 * <dir>/steps-rank<r>.tsv for its own. A step "starts" when its
 * dependencies are done and its connection's earlier steps have started
 * (a send: when it is handed to the transport); it "ends" when it is
 * done (a send: when its data has left, or, on the tcp engine, has been
 * accepted by the socket). Not thread-safe: one writer per file. */
#ifndef HERD_CORE_STEPLOG_H
#define HERD_CORE_STEPLOG_H

#include <stdint.h>

#include <herd/herd.h>

typedef struct core_steplog core_steplog_t;

/* One step of one rank's collective. */
typedef struct core_step_rec {
    int rank;          /* world rank */
    int group;         /* the op's group id (0: the world) */
    uint64_t seq;      /* the op's sequence number in its group */
    herd_coll_t coll;  /* what the op is */
    herd_algo_t algo;  /* its algorithm, as lowered */
    uint64_t op_bytes; /* the op's size as the timeline states it */
    uint64_t op_start; /* when this rank posted the op */
    uint32_t step;     /* index in this rank's schedule */
    int kind;          /* core_step_kind_t */
    int peer;          /* group rank of the peer; -1: none */
    int channel;
    uint64_t bytes; /* what the step moves */
    uint64_t start, end;
} core_step_rec_t;

/* $HERD_STEPS_DIR, or NULL when unset or empty. */
const char *core_steplog_dir(void);

/* Opens (truncates) <dir>/<name> and writes the header. On failure
 * returns the error and writes why into err. */
herd_status_t core_steplog_open(const char *dir, const char *name,
                                core_steplog_t **out, char *err, size_t errlen);
void core_steplog_write(core_steplog_t *l, const core_step_rec_t *r);
/* Flushes and closes; HERD_ERR_IO when a write failed. NULL is a no-op. */
herd_status_t core_steplog_close(core_steplog_t *l);

/* The header line, without its newline (readers check it). */
extern const char core_steplog_header[];

#endif
