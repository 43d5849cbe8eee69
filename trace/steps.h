/* trace/steps.h - reading step records (core/steplog.h: HERD_STEPS_DIR's
 * steps.tsv from the simulator, steps-rank<r>.tsv from a real engine) and
 * comparing a prediction with a measurement step by step: records are
 * matched by (rank, group, sequence, step), each side's times taken from
 * the moment that rank posted the op (so the hosts' clocks need not
 * agree), and the medians over the ops of one kind, algorithm and size
 * reported per rank and step. */
#ifndef HERD_TRACE_STEPS_H
#define HERD_TRACE_STEPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <herd/herd.h>

#include "core/steplog.h"

typedef struct trace_steps {
    core_step_rec_t *r;
    size_t n, cap;
} trace_steps_t;

/* 1 when the file at path starts with the step records' header. */
int trace_steps_is_file(const char *path);

/* Appends the records of one file to *s. A malformed line is an error at
 * its file:line:column; *s keeps what was read before. */
herd_status_t trace_steps_read(const char *path, trace_steps_t *s, char *err,
                               size_t errlen);
void trace_steps_free(trace_steps_t *s);

/* One row of the comparison: a step of one rank, over the ops of one
 * (collective, algorithm, size); times in ns after the rank posted. */
typedef struct trace_step_row {
    herd_coll_t coll;
    herd_algo_t algo;
    uint64_t op_bytes;
    int rank;
    uint32_t step;
    int kind, peer, channel;
    uint64_t bytes;
    size_t n;                                          /* matched ops */
    double pred_start, pred_end, meas_start, meas_end; /* medians */
} trace_step_row_t;

typedef struct trace_step_cmp {
    trace_step_row_t *rows;
    size_t nrows;
    size_t matched, only_pred, only_meas;
    size_t differ; /* same key, but not the same step (another collective,
                      algorithm, kind, peer, channel or size): left out */
} trace_step_cmp_t;

/* Sorts both sides and compares them (see above). */
herd_status_t trace_steps_compare(trace_steps_t *pred, trace_steps_t *meas,
                                  trace_step_cmp_t *out);
void trace_step_cmp_free(trace_step_cmp_t *c);
/* The rows as a table (µs); tsv: tab-separated with a header. */
void trace_step_cmp_print(const trace_step_cmp_t *c, FILE *f, int tsv);

#endif
