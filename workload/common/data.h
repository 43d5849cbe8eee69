/* workload/common/data.h - the data-loading settings of a scenario: the
 * phase before each forward, as PyTorch's DataLoader feeds a training
 * loop, for every workload (ddp, fsdp, parallel).
 *
 * With num_workers = 0 the training process loads each batch itself: its
 * load time sits on the critical path before the forward. With W workers
 * batch k goes to worker k mod W, which loads its batches in order; the
 * loader keeps prefetch_factor * W batches asked for (the first ones when
 * the epoch's iterator starts, one more each time the loop takes a batch),
 * and the loop takes them in order, waiting only when the next one is not
 * ready yet (loader.h runs it in a walk). */
#ifndef HERD_WORKLOAD_COMMON_DATA_H
#define HERD_WORKLOAD_COMMON_DATA_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

#include "trace/scenario.h"

/* The scenario's data settings; load_s 0: not modelled (the default). */
typedef struct wl_data {
    trace_data_t cfg;
    uint64_t seed;                      /* the scenario's */
    const trace_data_straggler_t *slow; /* stragglers.data (borrowed) */
    size_t nslow;
    const herd_rank_override_t *compute; /* the simulator's compute factors
                                            (borrowed): the wait is compute
                                            the simulator scales by them */
    size_t ncompute;
    /* per rank: the batches it takes (DDP: its iterations; later "step"
     * marks, such as a joined rank's shadow steps, take none); NULL:
     * every step takes one */
    const long *rank_batches;
    long epochs; /* rank_batches[r] / epochs batches per iterator; 0: one */
} wl_data_t;

/* The data settings of a scenario (borrowing its arrays). */
wl_data_t wl_data_of(const trace_scenario_t *sc);

/* 1 when data loading is modelled. */
int wl_data_on(const wl_data_t *d);

/* Rank's load-time factor for its batch n (straggler x jitter, >= 0). */
double wl_data_factor(const wl_data_t *d, int rank, long n);

#endif
