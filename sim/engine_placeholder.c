/* sim/engine_placeholder.c - replaced by the simulator engine. */
#include "core/engine.h"

static herd_status_t run_unavailable(const herd_init_t *i, herd_main_fn f,
                                     void *a, herd_run_info_t *info)
{
    return HERD_ERR_UNSUPPORTED;
}

const herd_engine_ops_t sim_engine_ops = {.name = "sim",
                                          .run = run_unavailable};
