/* workload/fsdp/report.h - predictions for an FSDP run, from the timeline
 * records the engine emits while the FSDP program runs, and the
 * diagnosis of a run that hung or failed.
 *
 * The program labels its compute "forward uK", "backward uK" and
 * "optimizer" and its collectives "all_gather uK", "reduce_scatter uK",
 * "all_reduce uK". The compute stream's idle time before a unit's compute
 * is that unit's exposed communication (the wait for its all_gather);
 * before the optimizer, the wait for the last reductions. Step time is
 * the time between "step" marks; exposed communication the step less its
 * compute. Memory comes from the job (fsdp_job_memory_most), judged
 * against fsdp.gpu_mem. */
#ifndef HERD_WORKLOAD_FSDP_REPORT_H
#define HERD_WORKLOAD_FSDP_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include <herd/herd.h>

#include "workload/common/collect.h"
#include "workload/ddp/report.h"
#include "workload/fsdp/job.h"

#define FSDP_REC_MAX_ITERS WL_REC_MAX_ITERS

/* Per iteration and unit, summed over ranks. */
typedef struct fsdp_utime {
    double fwd_gap, bwd_gap;     /* compute stream idle before it, s */
    uint32_t ag, rs, ar;         /* collectives seen on rank 0 */
    uint64_t ag_bytes, rs_bytes; /* bytes rank 0 put into them */
} fsdp_utime_t;

typedef struct fsdp_collect {
    const fsdp_job_t *job;
    int world;
    size_t nu;         /* unit slots (most units of any rank) */
    wl_steps_t steps;  /* per rank and iteration; per rank */
    double *comm;      /* [wl_steps_at(it, r)]: seconds in collectives */
    fsdp_utime_t *ut;  /* [it * nu + u] */
    double *tail;      /* [it]: idle before the optimizer, summed */
    uint64_t *prev;    /* per rank: end of the last compute (or step) */
    fsdp_memory_t mem; /* the rank with the most (fsdp_job_memory_most) */
    herd_timeline_cb next_cb;
    void *next_arg;
} fsdp_collect_t;

herd_status_t fsdp_collect_create(const fsdp_job_t *job, fsdp_collect_t **out);
void fsdp_collect_destroy(fsdp_collect_t *c);
void fsdp_collect_cb(const herd_tl_rec_t *rec, void *arg);

typedef struct fsdp_step_pred {
    long iter;
    int complete;
    double step_s, max_step_s; /* mean and max over ranks */
    double exposed_s;          /* mean over ranks: step - compute - data */
    double compute_s, comm_s;
    double data_s; /* mean over ranks: the wait for the batch */
} fsdp_step_pred_t;

typedef struct fsdp_summary {
    long iters, nsteady;
    double step_s, exposed_s, compute_s, comm_s, overlap;
    double data_s;     /* mean wait for the batch per step */
    fsdp_memory_t mem; /* the rank with the most; mem.rank says which */
    int fits;          /* mem within fsdp.gpu_mem (or no limit) */
} fsdp_summary_t;

void fsdp_collect_step(const fsdp_collect_t *c, long it, fsdp_step_pred_t *o);
void fsdp_collect_summary(const fsdp_collect_t *c, fsdp_summary_t *o);
/* Unit u's exposed communication (forward and backward), mean per rank
 * and complete iteration, seconds; and its collectives per step. */
void fsdp_collect_unit(const fsdp_collect_t *c, size_t u, fsdp_utime_t *o);

typedef struct fsdp_outcome {
    herd_status_t status;
    const herd_run_info_t *info;
    char *const *errors;
} fsdp_outcome_t;

void fsdp_report_text(const fsdp_collect_t *c, const fsdp_outcome_t *o,
                      FILE *f);
json_t *fsdp_report_json(const fsdp_collect_t *c, const fsdp_outcome_t *o);
/* The diagnosis of a failed run ("" when it succeeded): where the ranks
 * blocked, the first collective on which the ranks' programs disagree,
 * and the option that explains it. */
void fsdp_report_diagnosis(const fsdp_collect_t *c, const fsdp_outcome_t *o,
                           char *buf, size_t len);
/* The first disagreement between the ranks' collective sequences in any
 * group ("" when they agree); from the job alone, no run needed. */
void fsdp_report_mismatch(const fsdp_job_t *job, char *buf, size_t len);

#endif
