/* workload/parallel/prog.c - the 3D-parallel walker bound to the herd
 * API, over DDP's in-order streams: one per kind of traffic (TP, pipeline
 * receives, DP, pipeline sends), compute overlapping them
 * (ddp_streams_compute). The TP and DP streams run one op at a time, as a
 * NCCL communicator does; the p2p streams post every send and receive at
 * once (Megatron batches them with isend/irecv), and are two so that
 * waiting for a receive never waits for an earlier send, which completes
 * only when its peer receives it (the interleaved schedule would
 * deadlock). The groups (a collective of a group on its communicator,
 * p2p on the world), streams and engine buffer are the program of
 * workload/common/prog.c (wl_group_prog_main); this file says which. */
#include "workload/parallel/prog.h"

int par_prog_main(herd_comm_t *world, void *arg)
{
    par_prog_t *p = arg;
    const par_job_t *job = p->job;
    static const int inflight[] = {1, 0, 1, 0};
    wl_group_prog_t d = {.job = job,
                         .walk = par_job_walk,
                         .groups = job->groups,
                         .ngroups = job->ngroups,
                         .max_slots = job->max_slots,
                         .max_buf_bytes = job->max_buf_bytes,
                         .nstreams = PAR_NSTREAMS,
                         .inflight = inflight,
                         .fold_streams = 0,
                         .data = &job->data};
    return wl_job_prog_main(world, p, &d);
}

herd_status_t par_prog_create(const par_job_t *job, par_prog_t **out)
{
    return wl_job_prog_create(job, job->world, out);
}

void par_prog_destroy(par_prog_t *p)
{
    wl_job_prog_destroy(p);
}
