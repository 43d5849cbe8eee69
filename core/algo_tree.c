/* core/algo_tree.c - tree algorithms (not implemented yet: core_sched_supports
 * reports them unsupported, so this is never reached). */
#include "core/sched_algo.h"

herd_status_t core_algo_tree(core_alg_t *a)
{
    (void)a;
    return HERD_ERR_UNSUPPORTED;
}
