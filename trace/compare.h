/* trace/compare.h - predicted against measured: match the records of two
 * timelines by (rank, group, sequence) for collectives and by (rank,
 * ordinal) for compute, and summarise the relative errors of durations
 * per op kind plus the error of the end-to-end time. */
#ifndef HERD_TRACE_COMPARE_H
#define HERD_TRACE_COMPARE_H

#include <stdio.h>

#include "trace/timeline.h"

#define TRACE_CMP_KINDS (HERD_COLL_COUNT + 1) /* collectives + compute */

typedef struct trace_cmp_kind {
    const char *name; /* "all_reduce", ..., "compute" */
    size_t n;         /* matched pairs */
    double median;    /* of |pred - meas| / meas */
    double p95;
    double bias; /* median of (pred - meas) / meas: + means slow */
} trace_cmp_kind_t;

typedef struct trace_cmp {
    trace_cmp_kind_t kinds[TRACE_CMP_KINDS]; /* only n > 0 are filled */
    size_t matched;
    size_t only_pred, only_meas; /* records without a partner */
    size_t differ;               /* same (rank, seq), different op */
    double e2e_pred_s, e2e_meas_s;
    double e2e_err; /* (pred - meas) / meas */
} trace_cmp_t;

/* Compare; when pairs_tsv is not NULL, write the matched pairs there
 * for plots/compare.gp (one block per kind: kind, pred_us, meas_us). */
herd_status_t trace_compare(const trace_timeline_t *pred,
                            const trace_timeline_t *meas, trace_cmp_t *out,
                            const char *pairs_tsv, char *err, size_t errlen);
void trace_compare_print(const trace_cmp_t *c, FILE *f);

#endif
