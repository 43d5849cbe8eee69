/* core/sched_run.h - an executor of one rank's core/ schedule that any
 * transport with asynchronous send and receive can drive (the mpi engine
 * does; tcp and nccl have executors tied to their own transports).
 *
 * The runner keeps the rules of core/sched.h: a step starts once its
 * dependencies have completed, and the steps of one connection (peer,
 * channel, direction) are handed to the transport in schedule order, so a
 * transport whose messages between two endpoints do not overtake one
 * another (MPI's, per tag) matches the k-th send with the k-th receive.
 * Receive-reduces are posted as early as their connection allows, into
 * a staging area, and reduced with core/reduce.c once their dependencies
 * are done. The runner also prepares the buffers (broadcast's single
 * buffer, a private copy of an input that overlaps the output, scratch)
 * and divides for AVG at the end. */
#ifndef HERD_CORE_SCHED_RUN_H
#define HERD_CORE_SCHED_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"
#include "core/sched.h"

/* The transport. `send` starts sending `bytes` at `buf` to group rank
 * st->peer on st->channel; `recv` starts receiving `bytes` into `buf`.
 * Each later reports completion with core_run_step_done (never from
 * inside the call). An error return fails the run. */
typedef struct core_run_ops {
    herd_status_t (*send)(void *ctx, uint32_t step, const core_step_t *st,
                          const void *buf, size_t bytes);
    herd_status_t (*recv)(void *ctx, uint32_t step, const core_step_t *st,
                          void *buf, size_t bytes);
} core_run_ops_t;

typedef struct core_run {
    core_sched_t sched;
    const core_run_ops_t *ops;
    void *ctx;
    core_coll_args_t args; /* label not kept */
    int nranks, rank;
    size_t esize;
    char *buf[3];    /* IN, OUT, SCRATCH */
    char *own;       /* scratch and the private input copy, one block */
    char *staging;   /* RECV_REDUCE messages */
    uint64_t *stage; /* per step: element offset into staging */
    void *arena;     /* every per-step array below */
    uint32_t *ndeps_left, *dep_off, *dependents;
    int32_t *next_conn; /* next step on the same connection, -1 if none */
    uint8_t *posted, *arrived, *done;
    uint8_t *blocked; /* waits for the previous step of its connection */
    uint32_t *ready, ready_n;
    uint32_t ndone, inflight;
    int finished;
    herd_status_t status;
} core_run_t;

/* Lower a call (algo resolved: not AUTO or NCCL) for comm's rank into
 * *out, elements of esize bytes, with the call's channels and chunks;
 * ranks_per_node serves hier. An algorithm that does not implement the
 * call, or a failed lowering, is the comm's error. The runner's lowering
 * and the tcp engine's. */
herd_status_t core_sched_lower_call(herd_comm_t *comm,
                                    const core_coll_args_t *args,
                                    herd_algo_t algo, size_t esize,
                                    int ranks_per_node, core_sched_t *out);

/* Lower args (algo resolved: not AUTO or NCCL) for this rank and prepare
 * the run; nothing is posted yet. ranks_per_node serves hier (0: all one
 * node). On failure `run` holds nothing and the comm has a message. */
herd_status_t core_run_init(core_run_t *run, herd_comm_t *comm,
                            const core_coll_args_t *args, herd_algo_t algo,
                            int ranks_per_node, const core_run_ops_t *ops,
                            void *ctx);
/* Post every step that can start. */
herd_status_t core_run_start(core_run_t *run);
/* The transport finished step `step`: reduce if it was a receive-reduce
 * whose dependencies are done, release dependents, post what became
 * ready. HERD_OK with run->finished set once every step is done (AVG
 * already divided). */
herd_status_t core_run_step_done(core_run_t *run, uint32_t step);
/* 1 if step is a posted receive whose message has not arrived. */
int core_run_awaits(const core_run_t *run, uint32_t step);
void core_run_fini(core_run_t *run);

#endif
