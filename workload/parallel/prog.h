/* workload/parallel/prog.h - the 3D-parallel job as a herd program
 * (herd_main_fn): every rank creates the layout's TP and DP groups, then
 * walks its steps over DDP's in-order streams (workload/ddp/stream.h):
 * the TP group's collectives, the pipeline's receives and sends (posted
 * at once, any number in flight) and the DP group's reductions and
 * all_gathers. Runs
 * on any engine; on sim all ranks share one par_prog_t. */
#ifndef HERD_WORKLOAD_PARALLEL_PROG_H
#define HERD_WORKLOAD_PARALLEL_PROG_H

#include <herd/herd.h>

#include "workload/common/prog.h"
#include "workload/parallel/job.h"

/* The job, what stopped each rank and the settings for the walk
 * (workload/common/prog.h). */
typedef wl_job_prog_t par_prog_t;

herd_status_t par_prog_create(const par_job_t *job, par_prog_t **out);
void par_prog_destroy(par_prog_t *p);

/* The herd_main_fn; `arg` is a par_prog_t. 0: done, 1: stopped. */
int par_prog_main(herd_comm_t *world, void *arg);

#endif
