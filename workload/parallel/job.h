/* workload/parallel/job.h - a 3D-parallel training job ready to run: the
 * model (DDP's model files) cut into layers (FSDP's transformer-block
 * units), the layout of ranks into tensor-, data- and pipeline-parallel
 * groups, the layers of each pipeline stage, the collective sizes, the
 * memory per rank, and the walker that turns (rank, iteration) into the
 * calls Megatron-LM / DeepSpeed make.
 *
 * Layout (Megatron's order: tp fastest, then dp, then pp):
 *   rank = pp_idx * (dp * tp) + dp_idx * tp + tp_idx
 * so a tensor-parallel group is tp consecutive ranks (inside a node when
 * tp <= GPUs per node), a data-parallel group strides by tp, and pipeline
 * neighbours are dp * tp ranks apart.
 *
 * The walker drives DDP's emitter (ddp_emit_ops_t, its `coll` call, with
 * HERD_COLL_SEND / HERD_COLL_RECV for the pipeline's p2p), so the same
 * walk runs as a herd program (parallel/prog.c, over DDP's streams) or is
 * written out as a trace by DDP's recorder (ddp_trace_record). */
#ifndef HERD_WORKLOAD_PARALLEL_JOB_H
#define HERD_WORKLOAD_PARALLEL_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "trace/trace.h"
#include "workload/common/job.h"
#include "workload/common/mem.h"
#include "workload/ddp/job.h"
#include "workload/ddp/model.h"
#include "workload/parallel/cfg.h"

/* Streams of the walker's ops (ddp_emit_coll_t.stream). */
#define PAR_STREAM_TP 0 /* tensor-parallel collectives, in the layer */
#define PAR_STREAM_PP 1 /* pipeline receives (concurrent) */
#define PAR_STREAM_DP 2 /* gradient reductions, ZeRO's all_gathers */
#define PAR_STREAM_PP_SEND                                                     \
    3 /* pipeline sends (concurrent): apart from                               \
         the receives, whose waits must not wait                               \
         for a send the peer has not matched yet */
#define PAR_NSTREAMS 4

typedef wl_group_t par_group_t; /* workload/common/job.h */

/* One transformer layer (or the root: embeddings, final norm, head),
 * whole: before tensor parallelism divides it. Compute is one
 * micro-batch's on one device. */
typedef struct par_layer {
    uint64_t numel;
    double fwd_s, bwd_s;
} par_layer_t;

/* Bytes per rank. */
typedef struct par_memory {
    uint64_t params, grads, optimizer;
    uint64_t gathered;    /* ZeRO-3: layers all_gathered at once (peak) */
    uint64_t activations; /* micro-batches in flight x stashed bytes */
    int inflight;         /* micro-batches whose activations are kept */
    uint64_t total;
    int rank; /* the rank (stage) with the most */
} par_memory_t;

typedef struct par_job {
    par_cfg_t cfg;
    ddp_model_t model;
    int world, node_size;
    int tp, pp, dp;
    long seq, hidden, heads;
    int nlayers;         /* transformer layers; layers[nlayers] is the root */
    par_layer_t *layers; /* nlayers + 1 */
    int vstages;         /* model chunks per rank (1 but interleaved) */
    int *chunk_first;    /* pp * vstages + 1: chunk q has layers
                            [chunk_first[q], chunk_first[q + 1]); rank
                            stage s holds chunks c * pp + s */
    uint64_t act_count;  /* b x s x h elements of one micro-batch */
    /* groups every rank creates in this order (herd_new_group); the
     * walker names them 1.. (0: world); groups of one rank are not made */
    par_group_t *groups;
    int ngroups;
    int tp_group0, dp_group0; /* first TP / DP group (0: none) */
    int grad_group; /* interleaved: a copy of the world for the backward
                       p2p, so the chunk hand-overs between the last and
                       the first stage never match the other direction's
                       (0: the world) */
    size_t max_slots;
    uint64_t max_buf_bytes;
    wl_data_t data; /* data loading before each step (set by the caller;
                       zero: none) */
} par_job_t;

herd_status_t par_job_create(const par_cfg_t *cfg, const char *model_dir,
                             int world, int node_size, par_job_t **out,
                             char *err, size_t errlen);
void par_job_destroy(par_job_t *job);

/* Coordinates of a rank in the layout. */
void par_job_coords(const par_job_t *job, int rank, int *tp_idx, int *dp_idx,
                    int *pp_idx);
/* Group index (0: none: a group of one) of rank's TP and DP groups. */
int par_job_tp_group(const par_job_t *job, int rank);
int par_job_dp_group(const par_job_t *job, int rank);
/* Elements of rank's share of layer l after tensor parallelism. */
uint64_t par_job_layer_numel(const par_job_t *job, int l);
/* Chunk q's layer count and its first layer. */
int par_job_chunk_layers(const par_job_t *job, int q);
/* Elements of one stage's parameters on one rank (after TP). */
uint64_t par_job_stage_numel(const par_job_t *job, int stage);
/* Stashed activation bytes of one layer and micro-batch on one rank
 * (Korthikanti et al. 2022, 16-bit activations, no recomputation). */
uint64_t par_job_act_bytes(const par_job_t *job);

/* Walk every iteration of `rank` (a ddp_walk_fn: job is a par_job_t). */
herd_status_t par_job_walk(const void *job, int rank, const ddp_emit_ops_t *ops,
                           void *ctx);
/* Memory per rank: the largest over the stages. */
herd_status_t par_job_memory(const par_job_t *job, par_memory_t *out);
/* 1 when the memory fits cfg.gpu_mem (GiB; 0: no limit), else 0. */
int par_job_fits(const par_job_t *job, const par_memory_t *m);

/* The job as a herd trace (groups included) for herd replay. */
herd_status_t par_trace_build(const par_job_t *job, trace_t **out);

#endif
