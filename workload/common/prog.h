/* workload/common/prog.h - what the workload programs (ddp, fsdp,
 * parallel) share to bind a walker to the herd API: the scenario's
 * collective settings on a communicator, the per-rank notes of what
 * stopped a rank, and the whole program of a walker over rank groups and
 * DDP's in-order streams (workload/ddp/stream.h) that FSDP and the
 * 3D-parallel job run, with its state (wl_job_prog_t). */
#ifndef HERD_WORKLOAD_COMMON_PROG_H
#define HERD_WORKLOAD_COMMON_PROG_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

#include "workload/common/data.h"
#include "workload/common/job.h"
#include "workload/ddp/job.h"
#include "workload/ddp/stream.h"

/* Apply the algorithms (HERD_ALGO_AUTO: left alone), channels and chunk
 * size (0: left alone) to comm (NULL: nothing). */
void wl_comm_apply(herd_comm_t *comm, const herd_algo_t algo[HERD_COLL_COUNT],
                   int channels, size_t chunk_bytes);

/* The per-rank notes (NULL: the rank finished) of `world` ranks. */
herd_status_t wl_errors_create(int world, char ***out);
void wl_errors_destroy(char **errors, int world);
/* Note in *note what stopped a rank with st: the op its first blocked
 * stream waits for and the iteration (counted by "step" marks), then
 * the status and the engine's last error. */
void wl_note_failure(char **note, ddp_stream_t *const *streams, int nstreams,
                     herd_comm_t *world, long iter, herd_status_t st);

/* The engine's clock of communicator `comm` in seconds (the loader's
 * clock in a program, workload/common/loader.h). */
double wl_prog_now_s(void *comm);

#define WL_MAX_STREAMS 4

/* A walker's program over groups and streams. */
typedef struct wl_group_prog {
    const void *job;
    ddp_walk_fn walk;
    const wl_group_t *groups; /* the walker's group g is groups[g - 1] */
    int ngroups;
    size_t max_slots;
    uint64_t max_buf_bytes; /* the engine buffer (at least 1 MiB) */
    int nstreams;           /* 1..WL_MAX_STREAMS */
    const int *inflight;    /* per stream (ddp_stream_create) */
    /* a collective on a stream past nstreams goes to stream 0 (FSDP with
     * one communicator for all_gathers and reduce_scatters); else it is
     * HERD_ERR_INVALID_ARG */
    int fold_streams;
    const herd_algo_t *algo; /* for the world and every group */
    int channels;
    size_t chunk_bytes;
    char **errors;         /* [rank]: set when the rank stopped */
    const wl_data_t *data; /* data loading before each step; NULL: none */
} wl_group_prog_t;

/* Run rank's walk: create the groups, the engine buffer and the streams,
 * walk, note a failure, release. 0: done, 1: stopped. */
int wl_group_prog_main(herd_comm_t *world, const wl_group_prog_t *d);

/* The state of a walker's program over groups (fsdp, parallel; on sim
 * one for all ranks): its job, what stopped each rank and the settings
 * applied to the world communicator and every group before the walk. */
typedef struct wl_job_prog {
    const void *job; /* the walker's (fsdp_job_t, par_job_t) */
    int world;
    char **errors; /* per rank: what stopped it (NULL: finished) */
    herd_algo_t algo[HERD_COLL_COUNT];
    int channels;
    size_t chunk_bytes;
} wl_job_prog_t;

herd_status_t wl_job_prog_create(const void *job, int world,
                                 wl_job_prog_t **out);
void wl_job_prog_destroy(wl_job_prog_t *p);
/* wl_group_prog_main with d's settings and notes (algo, channels,
 * chunk_bytes, errors) taken from p. */
int wl_job_prog_main(herd_comm_t *world, const wl_job_prog_t *p,
                     wl_group_prog_t *d);

#endif
