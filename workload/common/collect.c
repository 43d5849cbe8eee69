/* workload/common/collect.c - the per-rank state of the workloads'
 * collectors (collect.h). */
#include "workload/common/collect.h"

#include <stdlib.h>

herd_status_t wl_collect_ranks(int world, long **iter, uint64_t **last,
                               ddp_stuck_t **stuck)
{
    size_t w = (size_t)world;
    long *it = malloc(w * sizeof(long));
    uint64_t *l = calloc(w, sizeof(uint64_t));
    ddp_stuck_t *s = calloc(w, sizeof(ddp_stuck_t));
    if (!it || !l || !s) {
        wl_collect_ranks_free(it, l, s);
        return HERD_ERR_NO_MEMORY;
    }
    for (size_t r = 0; r < w; r++)
        it[r] = -1;
    *iter = it;
    *last = l;
    *stuck = s;
    return HERD_OK;
}

void wl_collect_ranks_free(long *iter, uint64_t *last, ddp_stuck_t *stuck)
{
    free(iter);
    free(last);
    free(stuck);
}
