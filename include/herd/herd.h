/* herd/herd.h - the one header a herd user needs.
 *
 * torch.distributed's concepts in C: a world communicator (process group)
 * per backend ("sim", "tcp", "nccl", "mpi"), ranks, groups, collectives
 * that are blocking or asynchronous (a request, torch's Work),
 * point-to-point, modelled compute and engine-owned buffers.
 *
 * One program, every engine: write `int my_main(herd_comm_t *world,
 * void *arg)` and start it with herd_run(). On "sim" every rank runs it as
 * a lightweight context in one process, in virtual time; on real engines
 * each process runs it once for its own rank.
 *
 * Conventions: functions return herd_status_t (0 ok, negative error);
 * output arguments come last and are set only on success; the caller owns
 * its buffers; every *_create has a *_destroy. On error the communicator
 * keeps a message for herd_last_error(). */
#ifndef HERD_HERD_H
#define HERD_HERD_H

#include <stddef.h>
#include <stdint.h>

#include <herd/status.h>
#include <herd/timeline.h>
#include <herd/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HERD_VERSION_MAJOR 0
#define HERD_VERSION_MINOR 1
#define HERD_VERSION_PATCH 0
#define HERD_VERSION_STRING "0.1.0"

/* Default collective timeout: PyTorch's NCCL process-group default. */
#define HERD_DEFAULT_TIMEOUT_S 600.0

typedef struct herd_comm herd_comm_t; /* a process group, seen by one rank */
typedef struct herd_req herd_req_t;   /* an asynchronous operation (Work) */

/* How to create the world communicator. Zero-initialise, then set what you
 * need: unset fields take the documented defaults. */
typedef struct herd_init {
    const char *backend;     /* "sim", "tcp" (alias "gloo"), "nccl" or
                                "mpi" (where built); required */
    const char *init_method; /* "env://" (default), "tcp://host:port",
                                "file:///path"; ignored by sim */
    int rank;                /* -1 or 0 with world_size 0: from init_method */
    int world_size;          /* 0: from init_method / environment */
    int local_rank;          /* -1: from LOCAL_RANK or rank */
    double timeout_s;        /* collective timeout; 0: HERD_DEFAULT_TIMEOUT_S */
    const void *engine_opts; /* engine options: herd_sim_opts_t * for sim,
                                NULL for defaults */
    herd_timeline_cb timeline_cb; /* optional: one call per finished op */
    void *timeline_arg;
} herd_init_t;

/* The program every rank runs. Return 0 on success; any other value is the
 * rank's exit code. */
typedef int (*herd_main_fn)(herd_comm_t *world, void *arg);

/* What herd_run() learnt. Owned by the caller; release with
 * herd_run_info_clear(). */
typedef struct herd_run_info {
    int failed_rank;      /* first rank that failed, -1 if none */
    int exit_code;        /* that rank's return value, 0 if none failed */
    uint64_t end_time_ns; /* engine time when the last rank finished */
    uint64_t events;      /* sim: events processed; real: 0 */
    char *report;         /* sim: hang / timeout diagnosis text; an
                             unknown backend: the engines there are; NULL */
} herd_run_info_t;

void herd_run_info_clear(herd_run_info_t *info);

/* Run `fn` on the engine named by init->backend. On sim, every rank of the
 * simulated world runs it; on real engines this process's rank runs it.
 * Returns HERD_OK when every rank returned 0; HERD_ERR_HANG or
 * HERD_ERR_TIMEOUT for a predicted (sim) hang or timeout; another error
 * when a rank failed. `info` may be NULL. */
herd_status_t herd_run(const herd_init_t *init, herd_main_fn fn, void *arg,
                       herd_run_info_t *info);

/* Real engines only: create this process's world communicator directly.
 * sim returns HERD_ERR_UNSUPPORTED (use herd_run). */
herd_status_t herd_comm_create(const herd_init_t *init, herd_comm_t **comm_out);
herd_status_t herd_comm_destroy(herd_comm_t *comm);

int herd_comm_rank(const herd_comm_t *comm);
int herd_comm_size(const herd_comm_t *comm);
int herd_comm_local_rank(const herd_comm_t *comm);
/* Rank in the world communicator of group rank `rank`; -1 if out of range. */
int herd_comm_world_rank(const herd_comm_t *comm, int rank);
const char *herd_comm_backend(const herd_comm_t *comm);
/* The message of the last error on this communicator ("" if none). */
const char *herd_last_error(const herd_comm_t *comm);

/* A subgroup of `comm` over `nranks` distinct ranks of `comm` (in group
 * order). Collective over `comm`: every rank calls it with the same list.
 * A rank not in the list gets *group_out = NULL and HERD_OK. The group has
 * its own sequence numbers; destroy it with herd_comm_destroy(). */
herd_status_t herd_new_group(herd_comm_t *comm, const int *ranks, int nranks,
                             herd_comm_t **group_out);

/* Per-communicator settings that choose how collectives are lowered. */
herd_status_t herd_comm_set_algo(herd_comm_t *comm, herd_coll_t coll,
                                 herd_algo_t algo);
/* Channels (parallel rings/trees) and pipeline chunk size in bytes; 0
 * keeps the current value. Defaults: 1 channel, 4 MiB chunks. */
herd_status_t herd_comm_set_channels(herd_comm_t *comm, int channels,
                                     size_t chunk_bytes);
/* A label attached to the timeline records of the following ops (bucket
 * names, phases); NULL clears it. The string is copied. */
herd_status_t herd_comm_set_label(herd_comm_t *comm, const char *label);
/* A marker (step boundary, bucket event) in the timeline. */
herd_status_t herd_mark(herd_comm_t *comm, const char *label);

/* Collectives. `req_out` NULL: blocking. Otherwise the call returns at once
 * with a request to wait on; buffers must stay valid until it completes.
 * sendbuf == recvbuf means in place. Counts are in elements. */
herd_status_t herd_all_reduce(herd_comm_t *comm, const void *sendbuf,
                              void *recvbuf, size_t count, herd_dtype_t dtype,
                              herd_op_t op, herd_req_t **req_out);
herd_status_t herd_broadcast(herd_comm_t *comm, void *buf, size_t count,
                             herd_dtype_t dtype, int root,
                             herd_req_t **req_out);
/* recvbuf is written on root only (may be NULL elsewhere). */
herd_status_t herd_reduce(herd_comm_t *comm, const void *sendbuf, void *recvbuf,
                          size_t count, herd_dtype_t dtype, herd_op_t op,
                          int root, herd_req_t **req_out);
/* recvbuf holds size * count elements, rank r's block at r * count. */
herd_status_t herd_all_gather(herd_comm_t *comm, const void *sendbuf,
                              void *recvbuf, size_t count, herd_dtype_t dtype,
                              herd_req_t **req_out);
/* recvbuf (size * count) on root only. */
herd_status_t herd_gather(herd_comm_t *comm, const void *sendbuf, void *recvbuf,
                          size_t count, herd_dtype_t dtype, int root,
                          herd_req_t **req_out);
/* sendbuf (size * count) on root only. */
herd_status_t herd_scatter(herd_comm_t *comm, const void *sendbuf,
                           void *recvbuf, size_t count, herd_dtype_t dtype,
                           int root, herd_req_t **req_out);
/* sendbuf holds size * count elements; recvbuf count. */
herd_status_t herd_reduce_scatter(herd_comm_t *comm, const void *sendbuf,
                                  void *recvbuf, size_t count,
                                  herd_dtype_t dtype, herd_op_t op,
                                  herd_req_t **req_out);
/* Both buffers hold size * count; block j of sendbuf goes to rank j. */
herd_status_t herd_all_to_all(herd_comm_t *comm, const void *sendbuf,
                              void *recvbuf, size_t count, herd_dtype_t dtype,
                              herd_req_t **req_out);
herd_status_t herd_barrier(herd_comm_t *comm, herd_req_t **req_out);

/* Uneven collectives (torch's all_gather / reduce_scatter with tensors of
 * different sizes, all_to_all_single with split sizes: the MoE pattern).
 * Counts are in elements, one per rank of the group; the arrays are read
 * during the call only. Rank r's block starts at the sum of the counts
 * before r. */
/* counts: the same array on every rank. sendbuf holds counts[rank]
 * elements, recvbuf the sum of all counts. */
herd_status_t herd_all_gather_v(herd_comm_t *comm, const void *sendbuf,
                                void *recvbuf, const size_t *counts,
                                herd_dtype_t dtype, herd_req_t **req_out);
/* counts: the same array on every rank. sendbuf holds the sum of all
 * counts, recvbuf gets the reduced block of counts[rank] elements. */
herd_status_t herd_reduce_scatter_v(herd_comm_t *comm, const void *sendbuf,
                                    void *recvbuf, const size_t *counts,
                                    herd_dtype_t dtype, herd_op_t op,
                                    herd_req_t **req_out);
/* all_to_all_single: sendbuf holds send_count elements, send_splits[r] of
 * them (in rank order) go to rank r; recvbuf holds recv_count, the
 * recv_splits[r] from rank r in rank order. A NULL splits array splits
 * its buffer evenly (the count must then be a multiple of the group
 * size). The splits must add up to their count, and what rank a sends
 * to b must be what b expects from a. */
herd_status_t herd_all_to_all_v(herd_comm_t *comm, const void *sendbuf,
                                size_t send_count, const size_t *send_splits,
                                void *recvbuf, size_t recv_count,
                                const size_t *recv_splits, herd_dtype_t dtype,
                                herd_req_t **req_out);

/* Coalesced collectives: n independent collectives of one dtype (and op)
 * in one call with one request, as torch's *_coalesced calls and
 * _coalescing_manager (NCCL posts them as one group). Buffer i holds
 * what the single call would with counts[i]. */
herd_status_t herd_all_reduce_coalesced(herd_comm_t *comm,
                                        const void *const *sendbufs,
                                        void *const *recvbufs,
                                        const size_t *counts, int n,
                                        herd_dtype_t dtype, herd_op_t op,
                                        herd_req_t **req_out);
/* all_gather_into_tensor_coalesced: recvbufs[i] holds size * counts[i]. */
herd_status_t
herd_all_gather_coalesced(herd_comm_t *comm, const void *const *sendbufs,
                          void *const *recvbufs, const size_t *counts, int n,
                          herd_dtype_t dtype, herd_req_t **req_out);
/* reduce_scatter_tensor_coalesced: sendbufs[i] holds size * counts[i]. */
herd_status_t herd_reduce_scatter_coalesced(herd_comm_t *comm,
                                            const void *const *sendbufs,
                                            void *const *recvbufs,
                                            const size_t *counts, int n,
                                            herd_dtype_t dtype, herd_op_t op,
                                            herd_req_t **req_out);

/* torch's monitored_barrier: every rank reports to rank 0, which waits at
 * most timeout_s (<= 0: the comm's timeout) and then releases them. When
 * a rank does not arrive in time rank 0 fails with HERD_ERR_TIMEOUT and
 * a message naming it (wait_all_ranks 0: the first such rank;
 * otherwise every one), and the others fail as rank 0 does not release
 * them. Blocking, as in torch. */
herd_status_t herd_monitored_barrier(herd_comm_t *comm, double timeout_s,
                                     int wait_all_ranks);

/* Point to point; messages between two ranks with one tag arrive in
 * order. */
herd_status_t herd_send(herd_comm_t *comm, const void *buf, size_t count,
                        herd_dtype_t dtype, int peer, int tag,
                        herd_req_t **req_out);
herd_status_t herd_recv(herd_comm_t *comm, void *buf, size_t count,
                        herd_dtype_t dtype, int peer, int tag,
                        herd_req_t **req_out);

/* batch_isend_irecv: a group of sends and receives posted together
 * with one request (torch's list of P2POp). The group never deadlocks
 * on its own order: every rank may list its sends before its receives.
 * Each op follows herd_send / herd_recv (peer and tag rules). */
typedef enum herd_p2p_kind { HERD_P2P_SEND, HERD_P2P_RECV } herd_p2p_kind_t;

typedef struct herd_p2p_op {
    herd_p2p_kind_t kind;
    void *buf; /* read only for a send */
    size_t count;
    herd_dtype_t dtype;
    int peer;
    int tag;
} herd_p2p_op_t;

herd_status_t herd_batch_isend_irecv(herd_comm_t *comm,
                                     const herd_p2p_op_t *ops, int nops,
                                     herd_req_t **req_out);

/* Object collectives (torch's broadcast_object_list, all_gather_object,
 * gather_object, scatter_object_list) on byte buffers: the sizes are
 * exchanged first, then the bytes. Blocking, as in torch. The results
 * are allocated by herd and owned by the caller, who releases them with
 * herd_bytes_free; they are set only on success. On sim they need real
 * buffers (herd_sim_opts_t.real_buffers): phantom buffers carry no data,
 * so the calls return HERD_ERR_UNSUPPORTED there. */
typedef struct herd_bytes {
    void *data;
    size_t len;
} herd_bytes_t;

/* Free the data of n buffers and zero them (NULL or n <= 0: nothing). */
void herd_bytes_free(herd_bytes_t *bufs, int n);
/* root's n buffers (`in`, read on root only) to every rank: out[0..n)
 * on every rank, root included; n must be the same everywhere. */
herd_status_t herd_broadcast_bytes(herd_comm_t *comm, const herd_bytes_t *in,
                                   int n, int root, herd_bytes_t *out);
/* Every rank's len bytes at data: out[0..size) on every rank. */
herd_status_t herd_all_gather_bytes(herd_comm_t *comm, const void *data,
                                    size_t len, herd_bytes_t *out);
/* Every rank's bytes to root: out[0..size) on root only (NULL elsewhere). */
herd_status_t herd_gather_bytes(herd_comm_t *comm, const void *data, size_t len,
                                int root, herd_bytes_t *out);
/* root's in[0..size) (read on root only): rank r gets in[r] in *out. */
herd_status_t herd_scatter_bytes(herd_comm_t *comm, const herd_bytes_t *in,
                                 int root, herd_bytes_t *out);

/* Requests: wait blocks until done and returns the op's status; test sets
 * *done to 1 when finished (and returns the op's status then). free
 * releases a request (waiting first if it is still running). */
herd_status_t herd_req_wait(herd_req_t *req);
herd_status_t herd_req_test(herd_req_t *req, int *done);
void herd_req_free(herd_req_t *req);

/* Modelled compute for `seconds`: virtual time on sim (scaled by the
 * rank's straggler factor and jitter), a CPU spin on tcp, a GPU spin
 * kernel on nccl. `label` (may be NULL) names it in the timeline. */
herd_status_t herd_compute(herd_comm_t *comm, double seconds,
                           const char *label);

/* Modelled compute like herd_compute, cut short when `req` (a request of
 * the same rank) completes, as a compute stream does for a program that
 * acts on the completion of its communication stream. *done_out gets the
 * compute time it stood for: `seconds` when req did not complete first,
 * 0 when it was already complete. The simulator wakes the rank at the
 * completion's instant; the real engines compute in slices of 20 µs and
 * test req between them. */
herd_status_t herd_compute_until(herd_comm_t *comm, double seconds,
                                 herd_req_t *req, const char *label,
                                 double *done_out);

/* Buffers in the engine's memory (device memory on nccl, host on tcp; on
 * sim phantom unless real buffers were asked for, in which case the
 * pointer must not be dereferenced by the program). */
herd_status_t herd_alloc(herd_comm_t *comm, size_t bytes, void **ptr_out);
herd_status_t herd_free(herd_comm_t *comm, void *ptr);

/* The engine's clock in nanoseconds (virtual on sim, monotonic on real). */
uint64_t herd_now(const herd_comm_t *comm);

/* Write this rank's flight record (its last HERD_FLIGHT_ENTRIES ops,
 * default 2000: group, sequence numbers, kind, sizes, dtype, op, state
 * scheduled / started / completed, status and times) as JSON to
 * <dir>/rank<r>.json (dir NULL: $HERD_FLIGHT_DIR; the simulator's
 * herd_sim_opts_t.flight_dir first). Every engine keeps one (sim in
 * virtual time); HERD_ERR_INVALID_ARG without a directory,
 * HERD_ERR_UNSUPPORTED when HERD_FLIGHT_ENTRIES=0 turned it off.
 * `herd diagnose DIR` analyses the dumps of all ranks. */
herd_status_t herd_flight_dump(herd_comm_t *comm, const char *dir);

/* Names of the engines built into this library, NULL-terminated. */
const char *const *herd_engine_names(void);

#ifdef __cplusplus
}
#endif
#endif
