/* real/nccl/nccl_internal.h - the GPU engine's private types.
 *
 * One process per GPU (LOCAL_RANK picks the device). Each communicator
 * owns a non-blocking NCCL communicator and a stream for collectives;
 * the world owns the compute stream (spin kernels), the rendezvous store
 * and a base event that turns CUDA event times into host nanoseconds. */
#ifndef HERD_REAL_NCCL_INTERNAL_H
#define HERD_REAL_NCCL_INTERNAL_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>

#include "core/engine.h"
#include "core/flight.h"
#include "real/store/store.h"

typedef struct nccl_world {
    store_rdzv_t rdzv;
    int device;
    cudaStream_t compute_stream;
    cudaEvent_t base_event; /* recorded at creation, host time base_ns */
    uint64_t base_ns;
    double compute_scale; /* HERD_COMPUTE_SCALE (stragglers), 1 if unset */
    int refs;             /* world comm + live subgroups */
    core_flight_t flight; /* this rank's last ops (core/flight.h) */
} nccl_world_t;

typedef struct nccl_comm {
    herd_comm_t base;
    nccl_world_t *world;
    ncclComm_t nc;
    cudaStream_t stream;
    int aborted;
} nccl_comm_t;

typedef struct nccl_req {
    herd_req_t base;
    cudaEvent_t start, end;
    herd_tl_rec_t rec;
    char label[CORE_LABEL_MAX];
    uint64_t post_ns;
    uint64_t fr_id; /* its flight-record entry (a group's first) */
    int fr_n;       /* entries: 1, or the ops of a group post */
    int started;    /* its start event has passed (flight record) */
    double deadline_s;
    double timeout_s; /* the op's: a monitored barrier's own, else the comm's */
    int done;
    herd_status_t status;
} nccl_req_t;

/* Host monotonic clock. */
uint64_t nccl_clock_ns(void);

/* Map herd dtypes / ops to NCCL's; HERD_ERR_UNSUPPORTED (with a message
 * on comm) for bitwise ops, which NCCL does not have. */
herd_status_t nccl_map_dtype(herd_dtype_t d, ncclDataType_t *out);
herd_status_t nccl_map_op(nccl_comm_t *c, herd_op_t op, ncclRedOp_t *out);

/* Wait for a non-blocking NCCL call to settle (ncclInProgress -> done),
 * until deadline_s (host seconds, monotonic). */
herd_status_t nccl_settle(nccl_comm_t *c, ncclResult_t r, double deadline_s,
                          const char *what);

/* On a timeout: publish this rank's position, look for the others', and
 * write "ranks that did not join" into the comm's error. */
herd_status_t nccl_report_timeout(nccl_comm_t *c, const core_coll_args_t *a,
                                  double waited_s);

/* nccl_flight.c: the flight record's glue (core/flight.c keeps it) */
herd_status_t nccl_flight_dump(nccl_comm_t *c, const char *dir,
                               const char *reason);
herd_status_t nccl_flight_dump_op(herd_comm_t *comm, const char *dir);

herd_status_t nccl_coll_post(herd_comm_t *comm, const core_coll_args_t *a,
                             herd_req_t **req_out);
herd_status_t nccl_req_wait(herd_req_t *req);
/* Engine ops: a group of ops as one NCCL group (batch_isend_irecv,
 * coalesced collectives); host <-> device copies (object calls). */
herd_status_t nccl_post_group(herd_comm_t *comm, const core_coll_args_t *ops,
                              int n, herd_req_t **req_out);
herd_status_t nccl_copy(herd_comm_t *comm, void *dst, const void *src,
                        size_t bytes);
herd_status_t nccl_req_test(herd_req_t *req, int *done);
void nccl_req_free(herd_req_t *req);

/* Custom core/ schedules through grouped ncclSend/ncclRecv. */
herd_status_t nccl_sched_post(nccl_comm_t *c, const core_coll_args_t *a);

/* Kernels (nccl_kernels.cu). */
cudaError_t nccl_spin_launch(uint64_t ns, cudaStream_t stream);
cudaError_t nccl_reduce_launch(void *dst, const void *a, const void *b,
                               size_t count, herd_dtype_t dtype, herd_op_t op,
                               cudaStream_t stream);

#endif
