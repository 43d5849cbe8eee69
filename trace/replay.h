/* trace/replay.h - the trace replayer: an ordinary herd program
 * (herd_main_fn) that performs a rank's ops from a trace. It uses only
 * the public API, so it runs unchanged on every engine: on sim all ranks
 * run it in one process, on tcp/nccl each process runs it for its rank
 * (under `herd launch`). */
#ifndef HERD_TRACE_REPLAY_H
#define HERD_TRACE_REPLAY_H

#include <herd/herd.h>

#include "trace/trace.h"

typedef struct trace_replay {
    const trace_t *trace;
    /* applied to the world and every group before the first op */
    herd_algo_t algo[HERD_COLL_COUNT]; /* AUTO: keep the engine's */
    int channels;                      /* 0: keep */
    size_t chunk_bytes;                /* 0: keep */
    int steps;                         /* play the op list this often */
    /* optional, world_size entries: a failing rank r stores a malloc'd
     * "op 12 (all_reduce): <engine message>" in errors[r] */
    char **errors;
} trace_replay_t;

/* Defaults: every algorithm AUTO, one pass. */
void trace_replay_init(trace_replay_t *r, const trace_t *trace);

/* The work `steps` passes of `trace` ask for (ops posted over all ranks)
 * must stay under TRACE_REPLAY_MAX_OPS: a scenario's `steps` times a
 * large trace is otherwise an unbounded run from two numbers. The
 * message names workload.steps, the product and the limit. */
#define TRACE_REPLAY_MAX_OPS 1000000000ull
herd_status_t trace_replay_check_work(const trace_t *trace, int steps,
                                      char *err, size_t errlen);

/* The herd_main_fn; `arg` is a const trace_replay_t. Returns 0, or 1
 * when an op failed (the error is on the communicator), 2 when the trace
 * does not fit the world (size mismatch). */
int trace_replay_main(herd_comm_t *world, void *arg);

#endif
