/* workload/fsdp/job.h - an FSDP training job ready to run: the model
 * (DDP's model files, workload/ddp/model.h), its units per rank (a rank
 * may wrap differently: a fault), the process groups the strategy needs,
 * the collective sizes, the memory it implies, and the walker that turns
 * (rank, iteration) into the calls FSDP makes.
 *
 * The walker drives DDP's emitter (ddp_emit_ops_t, its `coll` call), so
 * the same walk runs as a herd program (fsdp/prog.c, over DDP's stream)
 * or is written out as a trace by DDP's recorder (ddp_trace_record). */
#ifndef HERD_WORKLOAD_FSDP_JOB_H
#define HERD_WORKLOAD_FSDP_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "trace/trace.h"
#include "workload/common/job.h"
#include "workload/common/mem.h"
#include "workload/ddp/job.h"
#include "workload/ddp/model.h"
#include "workload/fsdp/cfg.h"
#include "workload/fsdp/unit.h"

/* Streams of the walker's collectives (ddp_emit_coll_t.stream). */
#define FSDP_STREAM_AG 0
#define FSDP_STREAM_RS 1

typedef wl_group_t fsdp_group_t; /* workload/common/job.h */

/* Bytes per rank. */
typedef struct fsdp_memory {
    uint64_t params;    /* the sharded master parameters */
    uint64_t grads;     /* the sharded gradients */
    uint64_t optimizer; /* optim_states x params */
    uint64_t unsharded; /* peak of unsharded params + grads alive at once */
    int units_alive;    /* unsharded units at that peak */
    uint64_t total;     /* on the device */
    uint64_t host;      /* cpu_offload: params, grads, optimizer here */
    int rank;           /* whose: fsdp_job_memory_most's rank */
} fsdp_memory_t;

typedef struct fsdp_job {
    fsdp_cfg_t cfg;
    ddp_model_t model;
    fsdp_units_t units;     /* the policy's */
    fsdp_units_t bad_units; /* fsdp.bad_wrap (ranks in bad_wrap_ranks) */
    int world, node_size;
    int shard;    /* ranks a unit is sharded over (1: NO_SHARD) */
    int replicas; /* world / shard */
    int reshard_fwd;
    int reshard_to;  /* FSDP2 reshard_after_forward=N: N (else 0) */
    int post_group0; /* the first of the groups of N ranks (g index) */
    herd_dtype_t master_dtype; /* the model's parameter dtype */
    herd_dtype_t param_dtype, reduce_dtype;
    /* groups every rank creates in this order (herd_new_group); the
     * walker names them 1.. (0: world) */
    fsdp_group_t *groups;
    int ngroups;
    size_t max_slots;
    uint64_t max_buf_bytes;
    /* the scenario's stragglers.grads (set by the caller, checked with
     * ddp_grad_delays_check) */
    ddp_grad_delays_t grad_delays;
    wl_data_t data; /* data loading before each step (set by the caller;
                       zero: none) */
} fsdp_job_t;

herd_status_t fsdp_job_create(const fsdp_cfg_t *cfg, const char *model_dir,
                              int world, int node_size, fsdp_job_t **out,
                              char *err, size_t errlen);
void fsdp_job_destroy(fsdp_job_t *job);

/* The units `rank` wraps the model into. */
const fsdp_units_t *fsdp_job_units(const fsdp_job_t *job, int rank);
/* Elements of one rank's shard of unit u (FSDP pads to a multiple of the
 * shard count). */
uint64_t fsdp_job_shard_numel(const fsdp_job_t *job, const fsdp_unit_t *u);
/* Group indices (0: world) of rank's all_gathers, reduce_scatters and
 * (HYBRID_SHARD) cross-replica all_reduces; -1 when there is none. */
int fsdp_job_group(const fsdp_job_t *job, int rank, herd_coll_t coll);
/* The group of reshard_to ranks a backward all_gather runs over after
 * a partial reshard (reshard_after_forward=N). */
int fsdp_job_post_forward_group(const fsdp_job_t *job, int rank);
/* 1 when rank skips unit u's forward in iteration iter (fsdp.skip_*). */
int fsdp_job_skips(const fsdp_job_t *job, int rank, size_t u, long iter);

/* Iterations `rank` runs (fewer on fsdp.short_ranks: uneven inputs). */
long fsdp_job_steps(const fsdp_job_t *job, int rank);

/* Walk every iteration of `rank` (a ddp_walk_fn: job is an fsdp_job_t). */
herd_status_t fsdp_job_walk(const void *job, int rank,
                            const ddp_emit_ops_t *ops, void *ctx);

/* Memory per rank from the sharding and the walk's unsharded peak. */
herd_status_t fsdp_job_memory(const fsdp_job_t *job, int rank,
                              fsdp_memory_t *out);

/* The memory of the rank with the most on the device (the first of
 * them: rank 0 when the ranks agree); out->rank says which. Ranks differ
 * where they wrap or skip differently (fsdp.bad_wrap_ranks, skip_*). */
herd_status_t fsdp_job_memory_most(const fsdp_job_t *job, fsdp_memory_t *out);
/* 1 when m fits fsdp.gpu_mem (or there is no limit). */
int fsdp_job_fits(const fsdp_job_t *job, const fsdp_memory_t *m);

/* The job as a herd trace (groups included) for herd replay. */
herd_status_t fsdp_trace_build(const fsdp_job_t *job, trace_t **out);

#endif
