/* core/algo_rhd.c - rhd algorithms (not implemented yet: core_sched_supports
 * reports them unsupported, so this is never reached). */
#include "core/sched_algo.h"

herd_status_t core_algo_rhd(core_alg_t *a)
{
    (void)a;
    return HERD_ERR_UNSUPPORTED;
}
