/* nccl/engine_placeholder.c - replaced by the ncclulator engine. */
#include "core/engine.h"

static herd_status_t run_unavailable(const herd_init_t *i, herd_main_fn f,
                                     void *a, herd_run_info_t *info)
{
    return HERD_ERR_UNSUPPORTED;
}

const herd_engine_ops_t nccl_engine_ops = {.name = "nccl",
                                          .run = run_unavailable};
