/* workload/ddp/trace.h - a DDP job written out as a herd trace, so the steps
 * the simulator predicts replay on the tcp and nccl engines (herd replay)
 * and the measured timeline can be compared op by op.
 *
 * Ranks that do the same work share the SPMD op list; a rank that differs
 * (unused parameters, rank-0 evaluation, uneven data) gets its own list. */
#ifndef HERD_WORKLOAD_DDP_TRACE_H
#define HERD_WORKLOAD_DDP_TRACE_H

#include "workload/ddp/job.h"
#include "trace/trace.h"

herd_status_t ddp_trace_build(const ddp_job_t *job, trace_t **out);

#endif
