/* workload/ddp/prog.h - the DDP job as a herd program (herd_main_fn): every
 * rank walks its iterations and issues herd_compute / herd_all_reduce /
 * herd_req_wait as PyTorch's reducer would, with labels and marks for the
 * timeline. Runs on any engine; on sim all ranks share one ddp_prog_t. */
#ifndef HERD_WORKLOAD_DDP_PROG_H
#define HERD_WORKLOAD_DDP_PROG_H

#include <herd/herd.h>

#include "workload/ddp/job.h"

typedef struct ddp_prog {
    const ddp_job_t *job;
    /* per rank (sized job->world): set when the rank raised PyTorch's
     * reduction error; the text is kept in errors[rank] */
    int *raised;
    char **errors;
    /* applied to the world communicator before the walk */
    herd_algo_t algo[HERD_COLL_COUNT];
    int channels;
    size_t chunk_bytes;
} ddp_prog_t;

herd_status_t ddp_prog_create(const ddp_job_t *job, ddp_prog_t **out);
void ddp_prog_destroy(ddp_prog_t *p);

/* The herd_main_fn; `arg` is a ddp_prog_t. A rank that raised the
 * reduction error returns DDP_EXIT_REDUCTION_ERROR. */
int ddp_prog_main(herd_comm_t *world, void *arg);

#endif
