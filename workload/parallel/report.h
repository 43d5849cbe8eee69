/* workload/parallel/report.h - predictions for a 3D-parallel run, from
 * the timeline records the engine emits while the program runs, and the
 * diagnosis of a run that hung or failed.
 *
 * The program labels its compute "forward LK", "backward LK" and
 * "optimizer", and its communication by kind: "tp ... LK" (the TP group's
 * collectives), "pp act|grad mM" (pipeline p2p), "dp grads|params bK"
 * (the DP group's reductions and ZeRO 1/2's all_gathers) and "zero3 LK"
 * (ZeRO-3's per-layer all_gathers). Step time is the time between "step"
 * marks; the idle time (pipeline bubble plus exposed communication) the
 * step less its compute. Memory comes from the job (par_job_memory). */
#ifndef HERD_WORKLOAD_PARALLEL_REPORT_H
#define HERD_WORKLOAD_PARALLEL_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include <herd/herd.h>

#include "workload/common/collect.h"
#include "workload/ddp/report.h"
#include "workload/parallel/job.h"

#define PAR_REC_MAX_ITERS WL_REC_MAX_ITERS

typedef enum par_cat {
    PAR_CAT_TP,
    PAR_CAT_PP,
    PAR_CAT_DP,
    PAR_CAT_Z3,
    PAR_NCAT
} par_cat_t;

/* One rank's communication of one iteration, by kind and collective. */
typedef struct par_counts {
    uint32_t n[PAR_NCAT][HERD_COLL_COUNT];
    uint64_t bytes[PAR_NCAT][HERD_COLL_COUNT]; /* this rank put in */
} par_counts_t;

typedef struct par_collect {
    const par_job_t *job;
    int world;
    wl_steps_t steps;     /* per rank and iteration; per rank */
    double *comm;         /* [wl_steps_at(it, r) * PAR_NCAT + cat], s */
    par_counts_t *counts; /* [it]: rank 0's */
    herd_timeline_cb next_cb;
    void *next_arg;
} par_collect_t;

herd_status_t par_collect_create(const par_job_t *job, par_collect_t **out);
void par_collect_destroy(par_collect_t *c);
void par_collect_cb(const herd_tl_rec_t *rec, void *arg);

typedef struct par_summary {
    long iters, nsteady;
    double step_s, max_step_s; /* mean over ranks and complete steps
                                  (the first left out when there are more) */
    double compute_s;          /* mean over ranks */
    double idle_s;             /* step - compute - data: bubble + exposed
                                  comm */
    double data_s;             /* mean over ranks: the wait for the batch */
    double comm_s[PAR_NCAT];   /* mean over ranks, busy time */
    double bubble;             /* (P-1)/(M+P-1): the schedule's, in theory */
    par_memory_t mem;          /* the rank with the most */
    int fits;                  /* within parallel.gpu_mem */
} par_summary_t;

void par_collect_summary(const par_collect_t *c, par_summary_t *o);
/* Rank 0's ops of iteration `it` (zero when out of range). */
void par_collect_counts(const par_collect_t *c, long it, par_counts_t *o);
const char *par_cat_name(par_cat_t cat);

typedef struct par_outcome {
    herd_status_t status;
    const herd_run_info_t *info;
    char *const *errors;
} par_outcome_t;

void par_report_text(const par_collect_t *c, const par_outcome_t *o, FILE *f);
json_t *par_report_json(const par_collect_t *c, const par_outcome_t *o);
/* Where the ranks blocked and why ("" when the run succeeded). */
void par_report_diagnosis(const par_collect_t *c, const par_outcome_t *o,
                          char *buf, size_t len);

#endif
