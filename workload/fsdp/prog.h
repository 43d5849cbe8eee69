/* workload/fsdp/prog.h - the FSDP job as a herd program (herd_main_fn):
 * every rank creates the strategy's groups, then walks its iterations
 * over DDP's in-order streams (workload/ddp/stream.h): one for both
 * all_gathers and reduce_scatters (the process group's communicator), or
 * one each (fsdp.comm_streams: 2). Runs on any engine; on sim all ranks share
 * one fsdp_prog_t. */
#ifndef HERD_WORKLOAD_FSDP_PROG_H
#define HERD_WORKLOAD_FSDP_PROG_H

#include <herd/herd.h>

#include "workload/common/prog.h"
#include "workload/fsdp/job.h"

/* The job, what stopped each rank and the settings for the walk
 * (workload/common/prog.h). */
typedef wl_job_prog_t fsdp_prog_t;

herd_status_t fsdp_prog_create(const fsdp_job_t *job, fsdp_prog_t **out);
void fsdp_prog_destroy(fsdp_prog_t *p);

/* The herd_main_fn; `arg` is an fsdp_prog_t. 0: done, 1: stopped. */
int fsdp_prog_main(herd_comm_t *world, void *arg);

#endif
