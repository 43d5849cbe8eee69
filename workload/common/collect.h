/* workload/common/collect.h - the per-rank state every workload's
 * collector (ddp, fsdp, parallel) keeps while timeline records arrive:
 * the iteration in progress, the latest record's end and the op a rank
 * is stuck in (for the diagnosis). */
#ifndef HERD_WORKLOAD_COMMON_COLLECT_H
#define HERD_WORKLOAD_COMMON_COLLECT_H

#include <stdint.h>

#include <herd/herd.h>

#include "workload/ddp/report.h"

/* Allocate the state of `world` ranks, iterations at -1 (none begun);
 * all three or none. */
herd_status_t wl_collect_ranks(int world, long **iter, uint64_t **last,
                               ddp_stuck_t **stuck);
void wl_collect_ranks_free(long *iter, uint64_t *last, ddp_stuck_t *stuck);

#endif
