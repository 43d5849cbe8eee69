/* workload/ddp/report.h - predictions for a DDP run, computed from the
 * timeline records the engine emits while the DDP program runs.
 *
 * Per rank and iteration: step start and end, end of backward compute,
 * end of finalize, and per bucket its ready (mark "ready bK"), launch
 * (all_reduce posted) and end times. From these: step time, exposed
 * communication (finalize end - backward end on the critical rank, the
 * one whose backward ends last), the overlap fraction (1 - exposed /
 * busy time of the bucket all_reduces) and the critical rank; plus, when
 * the job hangs or fails, what every rank was doing. */
#ifndef HERD_WORKLOAD_DDP_REPORT_H
#define HERD_WORKLOAD_DDP_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include <herd/herd.h>

#include "workload/ddp/job.h"

#define DDP_REC_MAX_ITERS 64 /* iterations recorded per rank */

/* ready: its last gradient arrived; launch: DDP launched it (in bucket
 * order); start: the all_reduce began on the stream; end: it finished. */
typedef struct ddp_btime {
    uint64_t ready, launch, start, end; /* ns; 0: not seen */
} ddp_btime_t;

typedef struct ddp_rstep {
    uint64_t start, fwd_end, bwd_end, fin_end, end; /* ns; 0: not seen */
    uint64_t data; /* ns waiting for the batch (compute "data") */
} ddp_rstep_t;

/* The op a rank was in when the run stopped (status != OK), if any. */
typedef struct ddp_stuck {
    int valid;
    herd_coll_t coll;
    uint64_t seq, count;
    herd_dtype_t dtype;
    herd_status_t status;
    char label[64];
    long iter;
} ddp_stuck_t;

typedef struct ddp_collect {
    const ddp_job_t *job;
    int world;
    size_t nb;          /* bucket slots per iteration */
    ddp_rstep_t *steps; /* [rank * DDP_REC_MAX_ITERS + iter] */
    ddp_btime_t *bt;    /* [(rank * DDP_REC_MAX_ITERS + iter) * nb + k] */
    long *iter;         /* per rank: current iteration (-1 before any) */
    uint64_t *last;     /* per rank: latest record end */
    ddp_stuck_t *stuck;
    herd_timeline_cb next_cb; /* optional: every record is passed on */
    void *next_arg;
} ddp_collect_t;

/* Keep a failed collective's record as the op a rank blocked in (the
 * first one only); shared with the other workloads' collectors. */
void ddp_stuck_note(ddp_stuck_t *s, const herd_tl_rec_t *rec, long iter);

herd_status_t ddp_collect_create(const ddp_job_t *job, ddp_collect_t **out);
void ddp_collect_destroy(ddp_collect_t *c);
/* The herd_timeline_cb; arg is a ddp_collect_t. */
void ddp_collect_cb(const herd_tl_rec_t *rec, void *arg);

/* One iteration's prediction (across ranks). Times in seconds. */
typedef struct ddp_step_pred {
    long iter;
    int complete; /* every rank finished it */
    int sync;
    double step_s; /* mean over ranks of end - start */
    double max_step_s;
    double exposed_s; /* on the critical rank */
    double comm_s;    /* busy time of its bucket all_reduces */
    double overlap;   /* 1 - exposed / comm, in [0, 1] */
    int critical_rank;
    size_t nbuckets;
    double data_s;     /* mean over ranks of the wait for the batch */
    double max_data_s; /* the most any rank waited */
} ddp_step_pred_t;

typedef struct ddp_summary {
    long iters;        /* iterations recorded (most ranks) */
    long first_steady; /* first iteration with the final layout */
    double step_s;     /* mean over steady, complete, sync iterations */
    double exposed_s;
    double comm_s;
    double overlap;
    int critical_rank; /* most frequent critical rank */
    long nsteady;
    double opt_step_s; /* grad_accum iterations: one optimizer step */
    double data_s;     /* mean data wait per steady step (ranks' mean) */
    double max_data_s; /* mean over steady steps of the most any rank
                          waited for its batch */
} ddp_summary_t;

/* Predictions for iteration `iter`. */
void ddp_collect_step(const ddp_collect_t *c, long iter, ddp_step_pred_t *out);
void ddp_collect_summary(const ddp_collect_t *c, ddp_summary_t *out);

/* The outcome of a run, for the report. */
typedef struct ddp_outcome {
    herd_status_t status; /* herd_run's */
    const herd_run_info_t *info;
    const int *raised; /* per rank: raised the reduction error */
    char *const *errors;
} ddp_outcome_t;

/* A human-readable report (summary, per-step table, per-bucket table of
 * the last steady iteration, and the diagnosis of a hang or error). */
void ddp_report_text(const ddp_collect_t *c, const ddp_outcome_t *o, FILE *f);
/* The same as JSON (caller decrefs). */
json_t *ddp_report_json(const ddp_collect_t *c, const ddp_outcome_t *o);
/* "rank 3" or "ranks 0-3,7" for the ranks where sel[r] is set. */
void ddp_report_ranks(const unsigned char *sel, int n, char *buf, size_t len);
/* "ranks 0-2 blocked in all_gather 'u3' (seq 9, ...) of iteration 1: ..."
 * for the ranks of stuck[0..world) grouped by the op they blocked in;
 * returns the length written. Shared with the FSDP report. */
size_t ddp_report_stuck(const ddp_stuck_t *stuck, int world, char *buf,
                        size_t len);
/* One-paragraph diagnosis of a failed run into buf ("" if it succeeded). */
void ddp_report_diagnosis(const ddp_collect_t *c, const ddp_outcome_t *o,
                          char *buf, size_t len);

#endif
