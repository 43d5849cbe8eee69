/* workload/ddp/cfg.h - the options of a simulated DDP job: DDP's own
 * constructor arguments, the training loop around it (steps, gradient
 * accumulation, data sharding, rank-0 evaluation and checkpoints) and the
 * faults a real job hits (parameters without gradients).
 *
 * Every option has a key, the same in a scenario's `workload: ddp:`
 * section, in `--set ddp.<key>=<value>` and in `herd ddp run` flags; see
 * docs/ddp.md for the list. */
#ifndef HERD_WORKLOAD_DDP_CFG_H
#define HERD_WORKLOAD_DDP_CFG_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

#include "workload/ddp/straggle.h"

typedef enum ddp_hook {
    DDP_HOOK_NONE,    /* allreduce_hook: divide, SUM in the gradient dtype */
    DDP_HOOK_FP16,    /* fp16_compress_hook: half the bytes */
    DDP_HOOK_BF16,    /* bf16_compress_hook */
    DDP_HOOK_POWERSGD /* powerSGD_hook: low-rank P and Q all_reduces */
} ddp_hook_t;

/* PowerSGDState's settings (torch.distributed.algorithms.ddp_comm_hooks.
 * powerSGD_hook), plus what the hook's compute costs. */
typedef struct ddp_powersgd {
    int rank;                    /* matrix_approximation_rank */
    long start_iter;             /* start_powerSGD_iter: plain before */
    double min_compression_rate; /* compress when (n+m)r*rate < n*m */
    int use_error_feedback;
    int warm_start;
    double compute_s; /* the hook's compute per iteration; < 0: from its
                         FLOPs at the model's rate */
    int given;        /* a PowerSGD setting was given (powersgd only) */
} ddp_powersgd_t;

/* GradScaler under AMP (ddp.amp): unscale and the inf check. */
typedef struct ddp_amp {
    int grad_scaler;
} ddp_amp_t;

typedef enum ddp_ckpt_barrier {
    DDP_CKPT_NO_BARRIER,   /* rank 0 saves, nobody waits for it */
    DDP_CKPT_BARRIER,      /* every rank calls barrier() after the save */
    DDP_CKPT_RANK0_BARRIER /* barrier() inside `if rank == 0:` (a bug) */
} ddp_ckpt_barrier_t;

#define DDP_LIST_MAX 64

typedef struct ddp_int_list {
    long v[DDP_LIST_MAX];
    size_t n; /* 0: "all" where the option says so */
} ddp_int_list_t;

typedef struct ddp_cfg {
    char model[1024]; /* name (models/<name>.json) or path */
    double bucket_cap_mb;
    double first_bucket_mb; /* the first rebuilt bucket's cap; 0: the same
                               as bucket_cap_mb (PyTorch 2.x when
                               bucket_cap_mb is given) */
    int find_unused;
    int static_graph;
    int grad_as_bucket_view;
    int broadcast_buffers;
    int init_sync;  /* the constructor's broadcast of the module state */
    int grad_accum; /* no_sync for N-1 of every N iterations */
    int have_grad_dtype;
    herd_dtype_t grad_dtype; /* mixed precision: the gradients' dtype */
    ddp_hook_t hook;
    ddp_powersgd_t psgd; /* hook == DDP_HOOK_POWERSGD */
    ddp_amp_t amp;
    long steps;           /* iterations per rank (without a dataset) */
    double compute_scale; /* multiplies the model's compute */
    int comm_streams;     /* collectives running at once (1: NCCL's one
                             stream per group; 0: no limit) */
    /* parameters that get no gradient: which, on which ranks and steps */
    ddp_int_list_t unused_params;
    ddp_int_list_t unused_ranks; /* empty: every rank */
    ddp_int_list_t unused_steps; /* empty: every step */
    /* data: per-rank iteration counts from a sampler or shards */
    uint64_t dataset_size; /* 0: use `steps` */
    uint64_t batch_size;
    int drop_last;              /* DistributedSampler(drop_last) */
    int loader_drop_last;       /* DataLoader(drop_last) */
    int shards;                 /* unpadded per-rank shards instead */
    ddp_int_list_t shard_sizes; /* explicit per-rank shard lengths */
    long epochs;
    int join; /* the training loop runs under Join (uneven inputs) */
    /* rank 0 extras */
    long eval_every;
    double eval_s;
    int eval_collective; /* rank 0's eval calls all_reduce: others don't */
    long ckpt_every;
    double ckpt_s;
    ddp_ckpt_barrier_t ckpt_barrier;
    /* the scenario's stragglers.grads (not a ddp.* key) */
    ddp_grad_delays_t grad_delays;
} ddp_cfg_t;

void ddp_cfg_init(ddp_cfg_t *cfg);

/* Set one option from text ("bucket_cap_mb", "25"). Lists take "[1, 2]"
 * or "1,2". On error writes what was wrong and what is expected. */
herd_status_t ddp_cfg_set(ddp_cfg_t *cfg, const char *key, const char *value,
                          char *err, size_t errlen);

/* Cross-option checks (against the world size and model size). */
herd_status_t ddp_cfg_check(const ddp_cfg_t *cfg, int world_size,
                            size_t nparams, char *err, size_t errlen);

/* 1 if `v` is in the list (an empty list means every value when
 * empty_is_all). */
int ddp_list_has(const ddp_int_list_t *l, long v, int empty_is_all);

const char *ddp_hook_name(ddp_hook_t h);

/* The value parsers behind ddp_cfg_set, shared with the other workloads'
 * options (FSDP): 0 on success, -1 (out untouched) otherwise. Booleans
 * take true/false, yes/no, on/off, 1/0; numbers must lie in [lo, hi];
 * lists are "[1, 2]", "1,2" or "[]" of whole numbers in [lo, hi]. */
int ddp_cfg_parse_bool(const char *v, int *out);
int ddp_cfg_parse_num(const char *v, double lo, double hi, double *out);
int ddp_cfg_parse_list(const char *v, double lo, double hi, ddp_int_list_t *l);

#endif
