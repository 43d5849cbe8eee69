/* workload/ddp/stream.h - the communication stream of a DDP process group.
 *
 * ProcessGroupNCCL runs a group's collectives one after another on one
 * CUDA stream: an all_reduce DDP launches while the previous one still
 * runs starts only when it ends, so each small bucket pays its full
 * latency. This module gives the DDP program that behaviour on any engine:
 * ops are queued in launch order and posted to herd when fewer than
 * `max_inflight` are running (0: no limit, the engine runs them
 * concurrently). Compute issued while ops wait runs until the running op
 * ends (herd_compute_until), so the next starts at that instant. */
#ifndef HERD_WORKLOAD_DDP_STREAM_H
#define HERD_WORKLOAD_DDP_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

typedef struct ddp_stream ddp_stream_t;

typedef struct ddp_stream_op {
    herd_coll_t coll; /* all_reduce (SUM), broadcast, barrier, all_gather,
                         reduce_scatter (SUM), or send / recv (tag 0) to
                         or from `root`: a pipeline's p2p */
    uint64_t count;   /* all_gather: sent, reduce_scatter: received */
    herd_dtype_t dtype;
    int root;
    const char *label;
    herd_comm_t *comm; /* NULL: the stream's; another group's collective
                          still runs in this stream's order (FSDP's hybrid
                          all_reduce after its reduce_scatter) */
} ddp_stream_op_t;

/* `buf` must hold the largest op (ops reduce in place in it; an
 * all_gather's or reduce_scatter's full size * count elements). */
herd_status_t ddp_stream_create(herd_comm_t *comm, void *buf, size_t nslots,
                                int max_inflight, ddp_stream_t **out);
/* Releases finished requests; unfinished ones are left to the engine. */
void ddp_stream_destroy(ddp_stream_t *s);

/* Launch an op into request slot `slot` (free until waited on). */
herd_status_t ddp_stream_launch(ddp_stream_t *s, size_t slot,
                                const ddp_stream_op_t *op);
/* Modelled compute; queued ops start as the stream frees up. */
herd_status_t ddp_stream_compute(ddp_stream_t *s, double seconds,
                                 const char *label);
/* The same for compute that overlaps several streams (FSDP's all_gather
 * and reduce_scatter streams); ss[0]'s communicator computes. */
herd_status_t ddp_streams_compute(ddp_stream_t *const *ss, size_t n,
                                  double seconds, const char *label);
/* Wait for slot's op (running every op queued before it first). */
herd_status_t ddp_stream_wait(ddp_stream_t *s, size_t slot);
/* After a failed wait or compute: "blocked in all_reduce 'bucket 3'" or
 * "stopped in compute 'checkpoint'"; "" otherwise. */
const char *ddp_stream_blocked(const ddp_stream_t *s);

#endif
