/* workload/common/job.h - the pieces of a job that the workloads with
 * rank groups (fsdp, parallel) share: the group type, releasing the
 * groups, an emitter that does nothing, and the job as a herd trace (its
 * groups, then every rank's walk recorded by DDP's trace recorder). */
#ifndef HERD_WORKLOAD_COMMON_JOB_H
#define HERD_WORKLOAD_COMMON_JOB_H

#include <herd/herd.h>

#include "trace/trace.h"
#include "workload/common/data.h"
#include "workload/ddp/job.h"

/* A rank group every rank creates (herd_new_group), in the job's order. */
typedef struct wl_group {
    int *ranks;
    int n;
} wl_group_t;

/* An emitter that does nothing: the walk alone (for its memory). */
extern const ddp_emit_ops_t wl_null_ops;

/* Append the group {first, first + stride, ...} of n ranks. */
herd_status_t wl_groups_add(wl_group_t **groups, int *ngroups, int first,
                            int stride, int n);
/* Free the ranks of n groups and the array (NULL: nothing). */
void wl_groups_free(wl_group_t *groups, int n);

/* The job of `world` ranks named `name` as a herd trace: its groups in
 * order, then walk(job, rank, ...) of every rank, with the data waits of
 * `data` (NULL: none); *out on success. */
herd_status_t wl_trace_build(int world, const char *name,
                             const wl_group_t *groups, int ngroups,
                             ddp_walk_fn walk, const void *job,
                             const wl_data_t *data, trace_t **out);

#endif
