/* workload/fsdp/prog.c - the FSDP walker bound to the herd API.
 *
 * Collectives go through DDP's in-order streams (ddp_stream_t): by
 * default one, as a process group's NCCL communicator runs one collective
 * at a time whichever CUDA stream FSDP issues it from; with
 * fsdp.comm_streams 2 the reduce_scatters get their own communicator and
 * stream beside the all_gathers'; compute overlaps both
 * (ddp_streams_compute). The groups, streams and engine buffer (the
 * size of the largest unsharded unit) are workload/common/prog.c's
 * program (wl_group_prog_main); this file says which. */
#include "workload/fsdp/prog.h"

int fsdp_prog_main(herd_comm_t *world, void *arg)
{
    fsdp_prog_t *p = arg;
    const fsdp_job_t *job = p->job;
    static const int inflight[] = {1, 1};
    wl_group_prog_t d = {.job = job,
                         .walk = fsdp_job_walk,
                         .groups = job->groups,
                         .ngroups = job->ngroups,
                         .max_slots = job->max_slots,
                         .max_buf_bytes = job->max_buf_bytes,
                         .nstreams = job->cfg.comm_streams,
                         .inflight = inflight,
                         .fold_streams = 1,
                         .data = &job->data};
    return wl_job_prog_main(world, p, &d);
}

herd_status_t fsdp_prog_create(const fsdp_job_t *job, fsdp_prog_t **out)
{
    return wl_job_prog_create(job, job->world, out);
}

void fsdp_prog_destroy(fsdp_prog_t *p)
{
    wl_job_prog_destroy(p);
}
