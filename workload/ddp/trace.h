/* workload/ddp/trace.h - a DDP (or any walker's) job written out as a
 * herd trace, so the steps
 * the simulator predicts replay on the tcp and nccl engines (herd replay)
 * and the measured timeline can be compared op by op.
 *
 * Ranks that do the same work share the SPMD op list; a rank that differs
 * (unused parameters, rank-0 evaluation, uneven data) gets its own list. */
#ifndef HERD_WORKLOAD_DDP_TRACE_H
#define HERD_WORKLOAD_DDP_TRACE_H

#include "trace/trace.h"
#include "workload/ddp/job.h"

herd_status_t ddp_trace_build(const ddp_job_t *job, trace_t **out);

/* Record `walk` of every rank of `t` (made by the caller with
 * t->world_size ranks and the groups the walker names, in its order):
 * the SPMD list from rank 1 (rank 0 with one rank), other ranks' lists
 * where they differ. Shared by the DDP and FSDP exports. With `data` on,
 * each step's data wait is recorded too (workload/common/loader.h, on
 * the clock of the compute recorded so far). */
herd_status_t ddp_trace_record(trace_t *t, ddp_walk_fn walk, const void *job,
                               const wl_data_t *data);

#endif
