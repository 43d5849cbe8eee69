/* core/algo_barrier.c - barrier by dissemination: in round k every rank
 * sends a zero-element message to rank + 2^k and receives one from
 * rank - 2^k; after ceil(log2 p) rounds each rank has (transitively) heard
 * from every other. Every algorithm lowers barrier this way. */
#include "core/sched_algo.h"

herd_status_t core_algo_barrier(core_alg_t *a)
{
    int p = a->p, r = a->rank;
    int64_t got = -1;
    for (int d = 1; d < p; d *= 2) {
        core_alg_step0(a, CORE_STEP_SEND, core_mod(r + d, p), CORE_BUF_NONE, 0,
                       CORE_BUF_NONE, 0, 0, &got, 1);
        /* chained, so round k's send carries everything heard so far */
        got = core_alg_step0(a, CORE_STEP_RECV, core_mod(r - d, p),
                             CORE_BUF_NONE, 0, CORE_BUF_NONE, 0, 0, &got, 1);
    }
    return a->err;
}
