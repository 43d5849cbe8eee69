/* cli/cmd_perf.h - `herd perf`'s benchmark as an engine-agnostic herd
 * program: on sim every rank runs it in one process, on tcp/nccl each
 * process runs it for its rank under `herd launch`; rank 0 prints the
 * nccl-tests table, out-of-place and in-place column groups side by side.
 * A rank's time comes from the timeline records of its timed operations
 * (its first post to its last completion, divided by iterations x
 * aggregated operations); the ranks' times are combined as -a says. */
#ifndef HERD_CLI_PERF_H
#define HERD_CLI_PERF_H

#include <stdint.h>
#include <stdio.h>

#include <herd/herd.h>

typedef struct cli_perf_span {
    uint64_t start, end; /* first post, last completion of timed ops */
    int seen;
} cli_perf_span_t;

typedef struct cli_perf {
    /* settings */
    herd_coll_t coll;
    herd_algo_t algo;
    herd_dtype_t dtype;
    herd_op_t op;
    int root;
    uint64_t minbytes, maxbytes, stepbytes;
    double stepfactor;
    int iters, warmup, check;
    int agg;      /* -m: operations posted back to back per iteration */
    int blocking; /* -z: each operation through the blocking call */
    int average;  /* -a: 0 rank 0's time, 1 mean, 2 min, 3 max */
    int channels;
    uint64_t chunk;
    int report_all; /* every rank prints why it failed (real engines) */
    int shared;     /* every rank runs in this process (sim) */
    FILE *out;
    /* state: per rank spans of the current group (grown on demand) */
    cli_perf_span_t *spans;
    int nspans;
    int failed;       /* set by the callback on an allocation failure */
    double sum_busbw; /* for the "Avg bus bandwidth" line (in-place) */
    int rows;
    uint64_t wrong_total;
} cli_perf_t;

/* The timeline callback to install (arg: the cli_perf_t). */
void cli_perf_timeline(const herd_tl_rec_t *rec, void *arg);
/* The program (arg: the cli_perf_t). */
int cli_perf_program(herd_comm_t *world, void *arg);
/* Elements per rank for a size in bytes (nccl-tests' convention: the size
 * is the total for gathered collectives). 0: size too small. */
uint64_t cli_perf_count(const cli_perf_t *p, uint64_t bytes, int nranks);
/* Verify the output of one run (real buffers); returns wrong elements. */
uint64_t cli_perf_verify(const cli_perf_t *p, int rank, int nranks,
                         uint64_t count, const void *out);
/* Inputs of one run; `in` and `out` may overlap (in place): the output is
 * cleared first, then the input written. */
void cli_perf_fill(const cli_perf_t *p, int rank, int nranks, uint64_t count,
                   void *in, void *out);

#endif
