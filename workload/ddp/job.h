/* workload/ddp/job.h - a DDP training job ready to run: the model (compute
 * scaled), both bucket layouts, per-rank iteration counts, and the walker
 * that turns (rank, iteration) into the calls PyTorch's reducer makes.
 *
 * The walker does not call herd itself: it drives a ddp_emit_ops_t, so
 * the same walk runs as a herd program (ddp_prog.c, every engine) or is
 * written out as a trace (ddp_trace.c). */
#ifndef HERD_WORKLOAD_DDP_JOB_H
#define HERD_WORKLOAD_DDP_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "workload/common/data.h"
#include "workload/ddp/bucket.h"
#include "workload/ddp/cfg.h"
#include "workload/ddp/model.h"

#define DDP_ERR_MSG_MAX 1024
/* Exit code of a rank that raised PyTorch's reduction error. */
#define DDP_EXIT_REDUCTION_ERROR 3

typedef struct ddp_job {
    ddp_cfg_t cfg;
    ddp_model_t model;
    ddp_buckets_t initial; /* construction layout */
    ddp_buckets_t rebuilt; /* after the rebuild (copy of initial if none) */
    int rebuilds;          /* DDP rebuilds for these options */
    int rebuild_after;     /* synchronising backwards before the rebuild */
    int world;
    long *rank_iters; /* iterations each rank runs */
    size_t *ready;    /* gradient-ready order */
    uint64_t max_bucket_bytes;
    size_t max_slots; /* async request slots a rank needs */
    wl_data_t data;   /* data loading (ddp_job_set_data; off by default) */
} ddp_job_t;

/* Build a job for `world` ranks. `model_dir` resolves model names. On
 * error writes a message into err. */
herd_status_t ddp_job_create(const ddp_cfg_t *cfg, const char *model_dir,
                             int world, ddp_job_t **out, char *err,
                             size_t errlen);
void ddp_job_destroy(ddp_job_t *job);

/* Model the scenario's data loading (workload/common/data.h): each rank
 * takes one batch per iteration, a new iterator per epoch. */
void ddp_job_set_data(ddp_job_t *job, const wl_data_t *data);

/* Any collective of a walker over a group and stream of its choosing
 * (sharded workloads such as FSDP; DDP's own walk uses the calls below).
 * group 0 is the world, g >= 1 the workload's g-th group of this rank;
 * stream picks the in-order stream it queues on. */
typedef struct ddp_emit_coll {
    herd_coll_t coll;
    uint64_t count; /* elements, as herd's call takes them */
    herd_dtype_t dtype;
    int root;
    int group;
    int stream;
    const char *label;
} ddp_emit_coll_t;

/* What a walker asks for. `slot` names an async request (0..max_slots-1);
 * all_reduce and broadcast are asynchronous and completed by wait. */
typedef struct ddp_emit_ops {
    herd_status_t (*compute)(void *ctx, double seconds, const char *label);
    herd_status_t (*mark)(void *ctx, const char *label);
    herd_status_t (*all_reduce)(void *ctx, uint64_t count, herd_dtype_t dt,
                                size_t slot, const char *label);
    herd_status_t (*broadcast)(void *ctx, uint64_t count, herd_dtype_t dt,
                               int root, size_t slot, const char *label);
    herd_status_t (*barrier)(void *ctx, size_t slot, const char *label);
    herd_status_t (*wait)(void *ctx, size_t slot);
    /* asynchronous, completed by wait; NULL where not supported */
    herd_status_t (*coll)(void *ctx, const ddp_emit_coll_t *op, size_t slot);
} ddp_emit_ops_t;

/* A walker: every call of `rank`'s program into ops (job: the workload's
 * own job type). DDP's is ddp_job_walk; the trace export takes any. */
typedef herd_status_t (*ddp_walk_fn)(const void *job, int rank,
                                     const ddp_emit_ops_t *ops, void *ctx);

/* Walk every iteration of `rank`. Returns an emitter's error, or HERD_OK.
 * When the rank raises PyTorch's "Expected to have finished reduction"
 * error, *raised is set to 1 and msg (DDP_ERR_MSG_MAX) holds the text;
 * the walk stops there, as the Python process would. */
herd_status_t ddp_job_walk(const ddp_job_t *job, int rank,
                           const ddp_emit_ops_t *ops, void *ctx, int *raised,
                           char *msg);

/* The bucket layout in force at iteration `iter` (0-based) of a rank
 * that synchronised on every accumulation boundary. */
const ddp_buckets_t *ddp_job_layout(const ddp_job_t *job, long iter);

/* Bytes and dtype bucket k of a layout puts on the wire. */
uint64_t ddp_job_wire_bytes(const ddp_job_t *job, const ddp_bucket_t *b);

/* 1 when iteration `iter` synchronises gradients (not under no_sync). */
int ddp_job_is_sync(const ddp_job_t *job, long iter);

#endif
