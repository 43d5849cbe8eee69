/* workload/common/collect.h - the per-rank state every workload's
 * collector (ddp, fsdp, parallel) keeps while timeline records arrive:
 * the iteration in progress, the latest record's end and the op a rank
 * is stuck in (for the diagnosis); and, for the collectors that keep
 * their steps as per-rank arrays (fsdp, parallel), those arrays and the
 * step bookkeeping on them. */
#ifndef HERD_WORKLOAD_COMMON_COLLECT_H
#define HERD_WORKLOAD_COMMON_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

#include "workload/ddp/report.h"

/* Allocate the state of `world` ranks, iterations at -1 (none begun);
 * all three or none. */
herd_status_t wl_collect_ranks(int world, long **iter, uint64_t **last,
                               ddp_stuck_t **stuck);
void wl_collect_ranks_free(long *iter, uint64_t *last, ddp_stuck_t *stuck);

/* The number a label ends with after `prefix`: "bucket 12" with prefix
 * "bucket " -> 12; -1 when the label (NULL too) is not prefix and a
 * number. The programs' labels say which bucket or unit a record is. */
long wl_label_index(const char *label, const char *prefix);

#define WL_REC_MAX_ITERS 64 /* iterations recorded per rank */

/* The steps of every rank: per rank and iteration (wl_steps_at) when it
 * began and ended, its compute and its wait for the batch; per rank the
 * state of wl_collect_ranks. */
typedef struct wl_steps {
    uint64_t *start, *end; /* ns; 0: not seen */
    double *compute;       /* seconds */
    double *data;          /* seconds waiting for the batch (DataLoader) */
    long *iter;            /* per rank: current iteration (-1 before any) */
    uint64_t *last;        /* per rank: latest record end */
    ddp_stuck_t *stuck;    /* per rank: the first failed op */
} wl_steps_t;

/* All arrays of `world` ranks, or none (HERD_ERR_NO_MEMORY);
 * wl_steps_fini frees what there is. */
herd_status_t wl_steps_init(wl_steps_t *s, int world);
void wl_steps_fini(wl_steps_t *s);

/* The index of rank r's iteration it in the per-iteration arrays. */
static inline size_t wl_steps_at(long it, int r)
{
    return (size_t)r * WL_REC_MAX_ITERS + (size_t)it;
}

/* Take what every record says about its rank (rec->rank valid): its end,
 * a "step" mark (ends the rank's iteration and begins the next; returns
 * 1, the record says nothing more), a failed collective (the rank's stuck
 * op). *it: the iteration the record belongs to (before a step mark). */
int wl_steps_take(wl_steps_t *s, const herd_tl_rec_t *rec, long *it);

/* When rank r's iteration it ended: its "step" mark, else, for the rank's
 * last iteration (the `steps`-th), its last record; 0: not yet. */
uint64_t wl_steps_end(const wl_steps_t *s, int r, long it, long steps);

/* The iterations any of `world` ranks began, at most WL_REC_MAX_ITERS. */
long wl_steps_recorded(const wl_steps_t *s, int world);

#endif
