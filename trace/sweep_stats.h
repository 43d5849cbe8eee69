/* trace/sweep_stats.h - nccl-tests style results of a message-size sweep,
 * computed from the timeline of the sweep trace (trace_from_sweep): per
 * algorithm and size, the time of one call (first start to last end over
 * the ranks, averaged over the timed iterations), algbw and busbw. */
#ifndef HERD_TRACE_SWEEP_STATS_H
#define HERD_TRACE_SWEEP_STATS_H

#include <stdio.h>

#include "trace/scenario.h"
#include "trace/timeline.h"

typedef struct trace_sweep_row {
    herd_algo_t algo;
    uint64_t count; /* elements per call */
    uint64_t bytes; /* count * dtype size */
    int calls;      /* timed calls that completed */
    double time_s;  /* mean time of one call */
    double algbw;   /* bytes/s, as nccl-tests counts them */
    double busbw;   /* bytes/s */
} trace_sweep_row_t;

/* Rows in trace order (algorithm, then size). Caller frees *rows. */
herd_status_t trace_sweep_stats(const trace_timeline_t *tl,
                                const trace_sweep_t *sw, int world_size,
                                trace_sweep_row_t **rows, size_t *nrows);
/* The table as nccl-tests prints it (size, count, type, time, algbw,
 * busbw) per algorithm. */
void trace_sweep_print(const trace_sweep_row_t *rows, size_t n,
                       const trace_sweep_t *sw, FILE *f);
/* For plots/busbw.gp: one block per algorithm (a header row naming it),
 * blocks separated by two blank lines. */
herd_status_t trace_sweep_write_tsv(const trace_sweep_row_t *rows, size_t n,
                                    const char *path, char *err, size_t errlen);

#endif
