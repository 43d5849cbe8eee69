/* workload/common/loader.h - a rank's DataLoader in a walk: the wait for
 * each batch (data.h has the settings and the model's rules), emitted as
 * compute labelled "data" right after the rank's "step" mark by an
 * emitter that wraps the program's (or the trace recorder's), so the
 * walkers need not know about it. */
#ifndef HERD_WORKLOAD_COMMON_LOADER_H
#define HERD_WORKLOAD_COMMON_LOADER_H

#include <herd/herd.h>

#include "workload/common/data.h"
#include "workload/ddp/job.h"

/* A rank's loader wrapped around an emitter. */
typedef struct wl_loader {
    const wl_data_t *d;
    int rank;
    const ddp_emit_ops_t *ops; /* the wrapped emitter */
    void *ctx;
    /* the clock the loop's need times are read from, in seconds: the
     * engine's (a program); NULL: the compute emitted so far (a trace) */
    double (*now)(void *arg);
    void *now_arg;
    double emitted;  /* compute emitted through the wrapper, seconds */
    double t0;       /* the clock when the walk began */
    long taken;      /* batches taken by the loop */
    long k;          /* batch index in the current iterator */
    double *cons;    /* ring: when the loop took batch j (prefetch * W) */
    double *free_at; /* per worker: when it finishes its last batch */
    double start;    /* the iterator's start */
    double scale;    /* 1 / the rank's compute factor */
    double waited;   /* data wait emitted, seconds */
} wl_loader_t;

/* The ops a wrapped walk emits into (ctx: the wl_loader_t). */
extern const ddp_emit_ops_t wl_data_ops;

/* Wrap (ops, ctx) for `rank`; now NULL: the emitted-compute clock. */
herd_status_t wl_loader_init(wl_loader_t *l, const wl_data_t *d, int rank,
                             const ddp_emit_ops_t *ops, void *ctx,
                             double (*now)(void *), void *now_arg);
void wl_loader_fini(wl_loader_t *l);

/* The wait for the next batch when the loop asks for it at `need`
 * seconds (the loader's clock); advances the loader. */
double wl_loader_next(wl_loader_t *l, double need);

/* Run walk(job, rank) through a loader when d is on (else directly). */
herd_status_t wl_data_walk(const wl_data_t *d, ddp_walk_fn walk,
                           const void *job, int rank, const ddp_emit_ops_t *ops,
                           void *ctx, double (*now)(void *), void *now_arg);

#endif
