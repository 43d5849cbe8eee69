/* workload/parallel/cfg.h - the options of a simulated 3D-parallel job
 * (Megatron-style tensor and pipeline parallelism with data parallelism or
 * DeepSpeed ZeRO across the replicas): the layout (tp, pp, dp), the
 * pipeline schedule and micro-batches, the activation shapes, ZeRO's stage
 * and DeepSpeed's knobs, the device memory limit.
 *
 * Every option has a key, the same in a scenario's `workload: parallel:`
 * section and in `--set parallel.<key>=<value>`; see docs/parallel.md.
 * Values are parsed by DDP's parsers (workload/ddp/cfg.h). */
#ifndef HERD_WORKLOAD_PARALLEL_CFG_H
#define HERD_WORKLOAD_PARALLEL_CFG_H

#include <stddef.h>

#include <herd/herd.h>

typedef enum par_schedule {
    PAR_GPIPE,      /* every forward, then every backward */
    PAR_1F1B,       /* PipeDream-flush: warm-up forwards, then one F one B */
    PAR_INTERLEAVED /* Megatron's interleaved 1F1B over virtual_stages
                       model chunks per rank */
} par_schedule_t;

typedef struct par_cfg {
    char model[1024];
    int tp, pp, dp;          /* dp 0: world / (tp * pp) */
    int micro_batches;       /* per step and pipeline */
    int micro_batch_size;    /* samples per micro-batch */
    long global_batch_size;  /* samples per step (DeepSpeed's
                                train_batch_size); 0: dp x micro_batches x
                                micro_batch_size. Set, it fixes
                                micro_batches = global / (dp x size) */
    long compute_batch;      /* samples the model file's compute is for;
                                0: micro_batch_size (no scaling) */
    long seq, hidden, heads; /* 0: from the model's shapes */
    long layers;             /* 0: the model's transformer blocks */
    par_schedule_t schedule;
    int virtual_stages; /* model chunks per rank of the interleaved
                           schedule (>= 2; the others have one) */
    int sequence_parallel;
    int zero_stage;                     /* 0: DDP-style all_reduce */
    double reduce_bucket_size;          /* elements (DeepSpeed's) */
    double allgather_bucket_size;       /* elements */
    double stage3_prefetch_bucket_size; /* elements */
    int overlap_comm;
    herd_dtype_t dtype;     /* parameters, activations, gradients */
    double optimizer_bytes; /* per parameter: fp32 master + Adam = 12 */
    long steps;
    double compute_scale;
    double gpu_mem_gib; /* 0: no limit */
} par_cfg_t;

void par_cfg_init(par_cfg_t *cfg);

/* Set one option from text ("tp", "4"); the key may carry the "parallel."
 * prefix. On error writes what was wrong and what is expected. */
herd_status_t par_cfg_set(par_cfg_t *cfg, const char *key, const char *value,
                          char *err, size_t errlen);

/* tp * pp * dp against the world (dp 0 is inferred); writes the three
 * sizes in force. The message names the keys. */
herd_status_t par_cfg_layout(const par_cfg_t *cfg, int world, int *tp, int *pp,
                             int *dp, char *err, size_t errlen);

const char *par_schedule_name(par_schedule_t s);

#endif
