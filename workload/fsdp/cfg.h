/* workload/fsdp/cfg.h - the options of a simulated FSDP job: how the
 * model is wrapped into units (a list of name prefixes or a wrap policy),
 * the sharding strategy and its group, FSDP's prefetch and rate-limit
 * knobs, FSDP2's reshard_after_forward, mixed precision, the training
 * loop, and the faults that make ranks disagree (a rank that wraps
 * differently, a rank that skips a unit's forward).
 *
 * Every option has a key, the same in a scenario's `workload: fsdp:`
 * section and in `--set fsdp.<key>=<value>`; see docs/fsdp.md. Values are
 * parsed by DDP's parsers (workload/ddp/cfg.h). */
#ifndef HERD_WORKLOAD_FSDP_CFG_H
#define HERD_WORKLOAD_FSDP_CFG_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

#include "workload/ddp/cfg.h"

typedef enum fsdp_strategy {
    FSDP_FULL_SHARD,    /* shard params, grads, optimizer; reshard after fwd */
    FSDP_SHARD_GRAD_OP, /* the same, params kept unsharded from fwd to bwd */
    FSDP_NO_SHARD,      /* DDP-like: all_reduce of each unit's gradients */
    FSDP_HYBRID_SHARD   /* FULL_SHARD in groups, all_reduce across them */
} fsdp_strategy_t;

typedef enum fsdp_bwd_prefetch {
    FSDP_BWD_PRE,  /* next all_gather before the current unit's backward */
    FSDP_BWD_POST, /* after its backward, before its reduce_scatter */
    FSDP_BWD_NONE  /* when the next unit's backward starts */
} fsdp_bwd_prefetch_t;

typedef enum fsdp_wrap_kind {
    FSDP_WRAP_NONE,       /* one unit: the root holds every parameter */
    FSDP_WRAP_BLOCK,      /* transformer_block: one unit per layer index */
    FSDP_WRAP_MIN_PARAMS, /* min_params=N: consecutive params up to N */
    FSDP_WRAP_PREFIXES    /* `units`: one unit per parameter-name prefix */
} fsdp_wrap_kind_t;

#define FSDP_MAX_PREFIXES 256

typedef struct fsdp_wrap {
    fsdp_wrap_kind_t kind;
    uint64_t min_params;
} fsdp_wrap_t;

typedef struct fsdp_cfg {
    char model[1024];
    fsdp_strategy_t strategy;
    fsdp_wrap_t wrap;
    char *prefixes[FSDP_MAX_PREFIXES]; /* `units`: owned strings */
    size_t nprefixes;
    int shard_group_size;      /* HYBRID_SHARD; 0: the GPUs of a node */
    int reshard_after_forward; /* -1: the strategy's; 0, 1; N >= 2:
                                  FSDP2's int, reshard to N ranks */
    int forward_prefetch;
    int cpu_bound; /* the CPU issues each op when the GPU gets there (no
                      run-ahead): forward_prefetch matters then */
    fsdp_bwd_prefetch_t backward_prefetch;
    int limit_all_gathers;
    int gloo;         /* backend gloo (CPU): every collective blocks the issuing
                         thread (no streams: FSDP's synchronous calls wait), and
                         reduce_scatter is gloo's all_reduce of the whole
                         gradient followed by a copy of this rank's chunk */
    int comm_streams; /* 1: all_gather and reduce_scatter share the process
                         group's one communicator (PyTorch's default);
                         2: reduce_scatter has its own (an opt-in) */
    int have_param_dtype, have_reduce_dtype;
    herd_dtype_t param_dtype, reduce_dtype;
    long steps;
    double compute_scale;
    double hook_s;       /* backend gloo: CPU seconds of FSDP's own work in each
                            of a unit's four hooks per step (pre/post forward,
                            pre/post backward), on the one thread that also
                            computes and communicates */
    int cpu_offload;     /* CPUOffload(offload_params=True) */
    double offload_gbps; /* host <-> device copies, GB/s */
    double cpu_optimizer_scale; /* CPU optimizer time / the model's */
    double optim_states;        /* optimizer state per parameter, in master
                                   copies (Adam: 2, SGD momentum: 1) */
    double gpu_mem_gib;         /* the device's memory (workload/common/mem.h);
                                   0: no limit */
    /* faults: ranks that wrap with another policy, unit forwards skipped */
    ddp_int_list_t bad_wrap_ranks;
    fsdp_wrap_t bad_wrap;
    ddp_int_list_t skip_units;
    ddp_int_list_t skip_ranks;  /* empty: every rank */
    ddp_int_list_t skip_steps;  /* empty: every step */
    ddp_int_list_t short_ranks; /* uneven inputs: these ranks run */
    long short_steps;           /* short_steps iterations, not steps */
} fsdp_cfg_t;

void fsdp_cfg_init(fsdp_cfg_t *cfg);
void fsdp_cfg_fini(fsdp_cfg_t *cfg);

/* Set one option from text ("strategy", "HYBRID_SHARD"); the key may
 * carry the "fsdp." prefix. On error writes what was wrong and what is
 * expected. */
herd_status_t fsdp_cfg_set(fsdp_cfg_t *cfg, const char *key, const char *value,
                           char *err, size_t errlen);

/* Cross-option checks against the world and node size. */
herd_status_t fsdp_cfg_check(const fsdp_cfg_t *cfg, int world, int node_size,
                             char *err, size_t errlen);

/* reshard_after_forward in force (the strategy's unless set): 0, 1, or
 * N >= 2 ranks to reshard to. */
int fsdp_cfg_reshard_fwd(const fsdp_cfg_t *cfg);

const char *fsdp_strategy_name(fsdp_strategy_t s);
const char *fsdp_bwd_prefetch_name(fsdp_bwd_prefetch_t p);
/* "transformer_block", "min_params=1000000", "units", "none" */
const char *fsdp_wrap_name(const fsdp_wrap_t *w, char *buf, size_t len);

#endif
