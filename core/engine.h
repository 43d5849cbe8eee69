/* core/engine.h - the engine interface: communicator and request bases,
 * the collective descriptor handed to engines, the engine ops vtable and
 * the static engine table.
 *
 * Engines embed herd_comm_t / herd_req_t as the first member of their own
 * structs. core/api.c checks every argument once, then dispatches through
 * comm->ops; engines may assume valid arguments. */
#ifndef HERD_CORE_ENGINE_H
#define HERD_CORE_ENGINE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

#define CORE_LABEL_MAX 128
#define CORE_ERROR_MAX 512
#define CORE_DEFAULT_CHUNK_BYTES (4u << 20)

typedef struct herd_engine_ops herd_engine_ops_t;

struct herd_comm {
    const herd_engine_ops_t *ops;
    int rank; /* rank in this group */
    int size;
    int local_rank;
    int world_rank;    /* this process's / context's world rank */
    int group_id;      /* 0: world; >0: subgroups in creation order */
    int *world_ranks;  /* group rank -> world rank; NULL for the world */
    int next_group_id; /* world only: ids for new groups */
    uint64_t seq;      /* collectives posted on this group */
    uint64_t p2p_seq;  /* point-to-point ops posted */
    herd_algo_t algo[HERD_COLL_COUNT];
    int channels;
    size_t chunk_bytes;
    double timeout_s;
    char label[CORE_LABEL_MAX];
    char last_error[CORE_ERROR_MAX];
    herd_timeline_cb tl_cb;
    void *tl_arg;
};

struct herd_req {
    const herd_engine_ops_t *ops;
    herd_comm_t *comm;
};

/* One collective or p2p call, after checking. For p2p ops `root` is the
 * peer. `seq` is the group's sequence number of this op (1-based). */
typedef struct core_coll_args {
    herd_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count; /* elements, as in the public call */
    herd_dtype_t dtype;
    herd_op_t op;
    int root; /* root, or peer for send/recv; -1 if none */
    int tag;
    herd_algo_t algo; /* from the comm's settings; may be AUTO */
    int channels;
    size_t chunk_bytes;
    uint64_t seq;
    const char *label; /* the comm's label, or NULL */
    /* The *_v kinds (core/coll_v.c): counts per group rank, in elements,
     * valid during the post only (engines copy or lower them then).
     * all_gather_v, reduce_scatter_v: vcounts[r] is rank r's block, the
     * same array on every rank; all_to_all_v: vcounts[r] is what this
     * rank sends to r, vrecv[r] what it receives from r. `count` is this
     * rank's own side (all_gather_v: sent, reduce_scatter_v: received,
     * all_to_all_v: sent in all) and vtotal the other buffer's length. */
    const size_t *vcounts;
    const size_t *vrecv;
    uint64_t vtotal;
    /* monitored_barrier: its own timeout (0: the comm's) and whether
     * rank 0 names every rank that did not arrive or the first one */
    double timeout_s;
    int wait_all;
} core_coll_args_t;

struct herd_engine_ops {
    const char *name;
    /* Run fn on this engine (all ranks for sim, this rank for real). */
    herd_status_t (*run)(const herd_init_t *init, herd_main_fn fn, void *arg,
                         herd_run_info_t *info);
    /* Real engines: create / destroy this process's world comm. */
    herd_status_t (*comm_create)(const herd_init_t *init, herd_comm_t **out);
    herd_status_t (*comm_destroy)(herd_comm_t *comm);
    /* A subgroup; `ranks` are ranks of `parent`. *out NULL if not member. */
    herd_status_t (*group_create)(herd_comm_t *parent, const int *ranks,
                                  int nranks, int group_id, herd_comm_t **out);
    herd_status_t (*coll_post)(herd_comm_t *comm, const core_coll_args_t *args,
                               herd_req_t **req_out);
    herd_status_t (*req_wait)(herd_req_t *req);
    herd_status_t (*req_test)(herd_req_t *req, int *done);
    void (*req_free)(herd_req_t *req);
    herd_status_t (*compute)(herd_comm_t *comm, double seconds,
                             const char *label);
    /* Optional: compute cut short when req completes (herd_compute_until);
     * without it core/ computes in slices and tests req between them. */
    herd_status_t (*compute_until)(herd_comm_t *comm, double seconds,
                                   herd_req_t *req, const char *label,
                                   double *done_out);
    herd_status_t (*alloc)(herd_comm_t *comm, size_t bytes, void **ptr_out);
    herd_status_t (*free)(herd_comm_t *comm, void *ptr);
    uint64_t (*now)(const herd_comm_t *comm);
    herd_status_t (*mark)(herd_comm_t *comm, const char *label);
    /* Optional: write the flight record to dir (NULL: engine default). */
    herd_status_t (*flight_dump)(herd_comm_t *comm, const char *dir);
    /* Optional: post n checked ops (sequence numbers set) as one group
     * with one request, as ncclGroupStart/End does (batch_isend_irecv,
     * coalesced collectives). NULL: core/ posts them one by one and
     * joins their requests (core/calls.c), which is right wherever a
     * posted op never blocks the next one from being posted. */
    herd_status_t (*post_group)(herd_comm_t *comm, const core_coll_args_t *ops,
                                int n, herd_req_t **req_out);
    /* Optional: copy between host memory and the engine's (either way;
     * one of dst and src is host memory). NULL: memcpy (host engines). */
    herd_status_t (*copy)(herd_comm_t *comm, void *dst, const void *src,
                          size_t bytes);
};

/* The engine table, looked up by name or alias ("gloo" is tcp). NULL if
 * unknown (or not built). */
const herd_engine_ops_t *core_engine_find(const char *name);
/* The engine's own name for `name` (an engine or an alias), NULL if none:
 * callers that compare names compare this one. */
const char *core_engine_resolve(const char *name);
/* The engines built in, with their aliases, for messages: "sim, tcp (alias
 * gloo); nccl is not built (...)". Truncated to len. */
void core_engine_describe(char *buf, size_t len);

/* Fill the core part of a communicator (defaults for algorithms, channels,
 * chunk size, timeout). world_ranks is taken over (freed by
 * core_comm_fini) and may be NULL. */
void core_comm_init(herd_comm_t *comm, const herd_engine_ops_t *ops, int rank,
                    int size, int local_rank, int world_rank, int group_id,
                    int *world_ranks, const herd_init_t *init);
void core_comm_fini(herd_comm_t *comm);
/* Inherit settings (algorithms, channels, timeout, timeline) from parent. */
void core_comm_inherit(herd_comm_t *child, const herd_comm_t *parent);

/* herd_alloc / herd_free for the engines whose buffers are host memory
 * (tcp, mpi): 64-byte aligned, so reductions vectorise. */
herd_status_t core_host_alloc(herd_comm_t *comm, size_t bytes, void **out);
herd_status_t core_host_free(herd_comm_t *comm, void *ptr);

/* Record an error message on comm (printf-style) and return `status`. */
herd_status_t core_comm_error(herd_comm_t *comm, herd_status_t status,
                              const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Emit a timeline record if the comm has a callback. */
void core_comm_timeline(const herd_comm_t *comm, const herd_tl_rec_t *rec);

/* Elements / bytes each buffer of a collective holds for a group of `p`
 * (as documented in herd.h). */
uint64_t core_coll_send_count(herd_coll_t coll, uint64_t count, int p);
uint64_t core_coll_recv_count(herd_coll_t coll, uint64_t count, int p);
/* The same for a posted call, the *_v kinds included (their lengths
 * come from the call's counts, not from p). */
uint64_t core_args_send_count(const core_coll_args_t *a, int p);
uint64_t core_args_recv_count(const core_coll_args_t *a, int p);
/* 1 for the kinds whose per-rank counts differ (the *_v kinds). */
int core_coll_is_v(herd_coll_t coll);

/* core/coll.c: check a call, give it its sequence number and the comm's
 * settings (core_coll_prepare), and post it (core_coll_post, which
 * prepares first; req_out NULL: blocking). */
herd_status_t core_coll_prepare(herd_comm_t *comm, core_coll_args_t *a);
herd_status_t core_coll_post(herd_comm_t *comm, core_coll_args_t *a,
                             herd_req_t **req_out);

/* core/calls.c: a request that joins several (the group posts of
 * engines without post_group). herd_req_* and herd_compute_until
 * recognise it by its ops. */
extern const herd_engine_ops_t core_multi_req_ops;
herd_status_t core_multi_compute_until(herd_comm_t *comm, double seconds,
                                       herd_req_t *req, const char *label,
                                       double *done_out);
/* The text a failed monitored_barrier gives on rank 0: `absent` lists
 * the group ranks that did not arrive (n of them; the first only unless
 * a->wait_all). On other ranks (absent NULL) it says rank 0 did not
 * release them. Written into comm's last error; returns `status`. */
herd_status_t core_monitored_barrier_error(herd_comm_t *comm,
                                           const core_coll_args_t *a,
                                           const int *absent, int n,
                                           herd_status_t status);
/* The bytes nccl-tests counts for algbw: count*size (all_reduce,
 * broadcast, reduce), times p for all_gather / reduce_scatter / alltoall. */
uint64_t core_coll_algbw_bytes(herd_coll_t coll, uint64_t count, size_t esize,
                               int p);
/* nccl-tests' bus bandwidth factor. */
double core_coll_busbw_factor(herd_coll_t coll, int p);

/* Environment helpers shared by engines and the CLI. */
int core_env_int(const char *name, int fallback);

#endif
