/* real/mpi/mpi_internal.h - the mpi engine's private types, shared by its
 * files.
 *
 * One process per rank, started by mpirun or srun: rank, world size and
 * the node come from MPI. Each herd communicator owns two MPI
 * communicators: `mc` for MPI's own collectives and herd's send/recv, and
 * `sc` for the point-to-point messages of herd's schedules (their tags
 * carry the sequence number and channel, so concurrent collectives never
 * match each other's messages). Every request in flight is on the world's
 * active list: a wait progresses all of them, as an asynchronous op whose
 * next steps depend on this rank must move while it waits on another. */
#ifndef HERD_REAL_MPI_INTERNAL_H
#define HERD_REAL_MPI_INTERNAL_H

#include <mpi.h>
#include <stdint.h>

#include "core/engine.h"
#include "core/flight.h"
#include "core/sched_run.h"

typedef struct mpi_req mpi_req_t;

typedef struct mpi_world {
    int refs;     /* world comm + live subgroups */
    int owns_mpi; /* herd called MPI_Init_thread: it finalizes */
    int rank, size, local_rank, local_size, node;
    int tag_ub;   /* MPI_TAG_UB of the world */
    MPI_Comm ctl; /* positions exchanged on a timeout */
    /* herd's kernels as MPI ops where MPI's own will not do (float16,
     * bfloat16, 8-bit sums and products); MPI_OP_NULL elsewhere */
    MPI_Op own_ops[HERD_DTYPE_COUNT][HERD_OP_COUNT];
    mpi_req_t *active;         /* requests in flight */
    herd_status_t fail_status; /* after a timeout: the world is unusable */
    char fail_msg[CORE_ERROR_MAX];
    double compute_scale;
    int64_t pos_msg[4];   /* a timeout's position message (must outlive it) */
    core_flight_t flight; /* this rank's last ops (core/flight.h) */
} mpi_world_t;

typedef struct mpi_comm {
    herd_comm_t base;
    mpi_world_t *w;
    MPI_Comm mc, sc;
} mpi_comm_t;

struct mpi_req {
    herd_req_t base;
    mpi_req_t *next, *prev; /* world's active list */
    mpi_comm_t *c;
    core_coll_args_t args; /* label copied below */
    char label[CORE_LABEL_MAX];
    int native;            /* MPI's own collective (or send/recv) */
    MPI_Request mreq;      /* native */
    char *in_copy;         /* native: input that overlaps the output */
    core_run_t run;        /* schedule */
    MPI_Request *areq;     /* schedule: requests in flight, compact */
    uint32_t *astep, nact; /* ... and their steps */
    int *aidx;             /* MPI_Testsome's output, nsteps each */
    MPI_Status *asts;
    herd_algo_t algo; /* as recorded */
    uint64_t t_post, t_end;
    uint64_t fr_id; /* its flight-record entry */
    int done, linked;
    herd_status_t status;
    char err[CORE_ERROR_MAX];
};

/* mpi_engine.c */
extern const herd_engine_ops_t mpi_engine_ops;
uint64_t mpi_now_ns(void);
/* An MPI error code as a herd status, with MPI's own words in the comm's
 * last error: "<what>: <MPI_Error_string>". */
herd_status_t mpi_fail(herd_comm_t *comm, int code, const char *what);
/* The timeline record of a request (COLL or WAIT). */
void mpi_req_timeline(mpi_req_t *q, herd_tl_kind_t kind, uint64_t t0,
                      uint64_t t1);

/* mpi_types.c */
/* The MPI datatype that carries a herd dtype (float16 and bfloat16 as
 * MPI_UINT16_T) and the reduction for an op (herd's kernels through
 * MPI_Op_create where MPI's ops do not fit; SUM for AVG). */
MPI_Datatype mpi_dtype(herd_dtype_t d);
herd_status_t mpi_ops_create(mpi_world_t *w);
void mpi_ops_free(mpi_world_t *w);
MPI_Op mpi_op(const mpi_world_t *w, herd_dtype_t d, herd_op_t op);

/* mpi_coll.c: posting and MPI's own collectives */
herd_status_t mpi_coll_post(herd_comm_t *comm, const core_coll_args_t *a,
                            herd_req_t **req_out);

/* mpi_sched.c: herd's schedules over MPI_Isend / MPI_Irecv */
herd_status_t mpi_sched_post(mpi_req_t *q, herd_algo_t algo);
/* Test the schedule's requests; finishes q once it is done or failed. */
herd_status_t mpi_sched_progress(mpi_req_t *q);
/* Group ranks this schedule still waits for data from, "1, 3" (world). */
void mpi_sched_waiting(const mpi_req_t *q, char *buf, size_t len);
void mpi_sched_free(mpi_req_t *q);

/* mpi_flight.c: the flight record's glue (core/flight.c keeps it) */
herd_status_t mpi_flight_dump(mpi_world_t *w, const char *dir,
                              const char *reason);
herd_status_t mpi_flight_dump_op(herd_comm_t *comm, const char *dir);

/* mpi_wait.c: progress, waits, tests and timeouts */
void mpi_progress(mpi_world_t *w);
herd_status_t mpi_req_wait(herd_req_t *req);
herd_status_t mpi_req_test(herd_req_t *req, int *done);
void mpi_req_free(herd_req_t *req);
void mpi_req_link(mpi_req_t *q);
void mpi_req_finish(mpi_req_t *q, herd_status_t st, const char *msg);

#endif
