/* core/sched.h - collective algorithms as per-rank schedules.
 *
 * An algorithm lowers one collective on p ranks, for one rank, into an
 * ordered list of steps (send, recv, recv-reduce, copy over element ranges
 * of the input, output and scratch buffers) with explicit dependencies.
 * The simulator executes schedules in virtual time, the tcp engine with
 * sockets, the verifier symbolically: the same steps everywhere.
 *
 * Execution rules every executor follows (and the verifier checks):
 *  - A step may start once every step in its dependency list has
 *    completed.
 *  - Steps on the same connection (peer, channel, direction) start in
 *    schedule order; the k-th send from a to b on channel c matches the
 *    k-th receive (RECV or RECV_REDUCE) at b from a on channel c, and
 *    both name the same element count.
 *  - SEND reads src[src_off .. +count) and completes when the data has
 *    left (the source may be overwritten by dependent steps only).
 *  - RECV writes the message into dst[dst_off ..).
 *  - RECV_REDUCE computes dst[dst_off+i] = src[src_off+i] (op) msg[i];
 *    src and dst may be the same range (elementwise, so in place is safe).
 *  - COPY copies src range to dst range locally (ranges do not overlap
 *    unless identical, in which case it is a no-op).
 *  - A schedule reduces with SUM for AVG; the executor divides the
 *    output by p afterwards (core_reduce_avg_finish).
 *
 * Buffers, in elements, per collective (count as in the public call):
 *   all_reduce      IN count        OUT count
 *   broadcast       OUT count (IN aliases OUT; only OUT is used)
 *   reduce          IN count        OUT count (root; others use SCRATCH)
 *   all_gather      IN count        OUT p*count
 *   gather          IN count        OUT p*count (root)
 *   scatter         IN p*count (root)  OUT count
 *   reduce_scatter  IN p*count      OUT count
 *   all_to_all      IN p*count      OUT p*count
 *   barrier         no data: zero-element messages
 *   all_gather_v    IN counts[rank] OUT sum(counts), block r at the sum
 *                   of counts[0..r)
 *   reduce_scatter_v IN sum(counts) OUT counts[rank]
 *   all_to_all_v    IN sum(counts), OUT sum(recv_counts), blocks in rank
 *                   order
 *   monitored_barrier no data: zero-element messages to and from rank 0
 * SCRATCH holds sched->scratch_count elements, allocated by the executor. */
#ifndef HERD_CORE_SCHED_H
#define HERD_CORE_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <herd/herd.h>

typedef enum core_step_kind {
    CORE_STEP_SEND,
    CORE_STEP_RECV,
    CORE_STEP_RECV_REDUCE,
    CORE_STEP_COPY
} core_step_kind_t;

typedef enum core_buf {
    CORE_BUF_IN,
    CORE_BUF_OUT,
    CORE_BUF_SCRATCH,
    CORE_BUF_NONE
} core_buf_t;

typedef struct core_step {
    uint8_t kind;    /* core_step_kind_t */
    uint8_t src_buf; /* core_buf_t: SEND, RECV_REDUCE, COPY */
    uint8_t dst_buf; /* core_buf_t: RECV, RECV_REDUCE, COPY */
    uint8_t reserved;
    uint16_t channel;
    uint16_t reserved2;
    int32_t peer;     /* group rank; -1 for COPY */
    uint32_t dep_off; /* this step's dependencies: deps[dep_off..+ndeps) */
    uint32_t ndeps;
    uint64_t src_off; /* elements */
    uint64_t dst_off;
    uint64_t count;
} core_step_t;

/* What to lower. */
typedef struct core_sched_desc {
    herd_coll_t coll;
    herd_algo_t algo; /* not AUTO: resolve with core_sched_pick first */
    int nranks;
    int rank;
    int root;               /* broadcast/reduce/gather/scatter; else ignored */
    uint64_t count;         /* as in the public call */
    size_t elem_size;       /* bytes per element (chunking is in bytes) */
    int channels;           /* >= 1 */
    uint64_t chunk_bytes;   /* pipeline chunk; 0: no chunking */
    int ranks_per_node;     /* hier: ranks per node (0: nranks) */
    herd_algo_t hier_inter; /* hier: inter-node part, RING (AUTO/0 means
                               ring) or TREE (double binary tree) */
    int recv_first;         /* ring all_reduce: emit each chunk's receive
                               before its send, the order in which gloo
                               posts them (the order matters to a
                               rendezvous transport: sim/gloo_lower.c) */
    /* The *_v kinds (core/algo_v.c), one entry per rank: all_gather_v and
     * reduce_scatter_v: counts[r] is rank r's block (count must be
     * counts[rank]); all_to_all_v: counts[r] is what this rank sends to
     * r, recv_counts[r] what it receives from r. */
    const size_t *counts;
    const size_t *recv_counts;
    /* all_to_all_v for the verifier and tools, which see every rank: the
     * p x p matrix (row i: what rank i sends each rank) instead of counts
     * and recv_counts. */
    const size_t *matrix;
} core_sched_desc_t;

typedef struct core_sched {
    core_sched_desc_t desc;
    core_step_t *steps;
    uint32_t nsteps, steps_cap;
    uint32_t *deps; /* step indices, each < the depending step's */
    uint32_t ndeps, deps_cap;
    uint64_t scratch_count; /* elements of scratch needed */
} core_sched_t;

/* Lower `desc` for desc->rank into `out` (which must be zeroed or fini'd).
 * HERD_ERR_UNSUPPORTED when the algorithm does not implement the
 * collective, HERD_ERR_INVALID_ARG for bad parameters (hier: when
 * ranks_per_node does not divide nranks), HERD_ERR_OVERFLOW when p * count
 * overflows. AUTO is resolved with core_sched_pick (count * elem_size).
 * Empty transfers are not emitted; every step has count > 0 except the
 * zero-element messages of barrier. Algorithms, costs and the default
 * choice are described in docs/schedules.md. */
herd_status_t core_sched_lower(const core_sched_desc_t *desc,
                               core_sched_t *out);
void core_sched_fini(core_sched_t *sched);

/* 1 if `algo` implements `coll` (AUTO: always). */
int core_sched_supports(herd_algo_t algo, herd_coll_t coll);
/* 1 for the algorithms that stand for a library's own implementation
 * (nccl, gloo): core lowers none of them; the simulator models them
 * (sim/nccl_lower.c, sim/gloo_lower.c) and real engines run their own
 * choice instead, as for AUTO. */
static inline int core_sched_is_library(herd_algo_t algo)
{
    return algo == HERD_ALGO_NCCL || algo == HERD_ALGO_GLOO;
}
/* The size-based default algorithm for a collective. */
herd_algo_t core_sched_pick(herd_coll_t coll, int nranks, uint64_t bytes);

/* Builder helpers for algorithm implementations. Return the new step's
 * index, or a negative status on allocation failure. Negative entries in
 * `deps` are skipped (handy for "no such step"); arrays grow
 * geometrically. */
int64_t core_sched_add(core_sched_t *s, core_step_kind_t kind, int peer,
                       int channel, core_buf_t src_buf, uint64_t src_off,
                       core_buf_t dst_buf, uint64_t dst_off, uint64_t count,
                       const int64_t *deps, int ndeps);

/* 1 when every rank's schedule is exactly rank 0's with each peer q
 * replaced by (q + r) mod p: the same steps in the same order with the
 * same kinds, channels, buffers, counts and dependencies; only offsets
 * may differ. True for one rank, for barrier (dissemination), for ring
 * all_gather and reduce_scatter, and for ring all_reduce when every
 * channel's range splits into p equal blocks. desc->rank is ignored; 0
 * for anything invalid or not known to be symmetric. Executors that
 * never read offsets (the simulator without real buffers) can then build
 * one rank's schedule and derive the others from it. */
int core_sched_rotational(const core_sched_desc_t *desc);

/* 1 when every rank's schedule is rank 0's with peers rotated as above
 * in everything except the counts: the same steps in the same order with
 * the same kinds, channels, buffers and dependencies, each step's count
 * possibly depending on the rank (core_sched_counts gives them). True
 * whenever core_sched_rotational is, and for ring all_reduce whenever no
 * rank skips a step: every chunk of every block is non-empty, i.e. each
 * channel's range is at least p times its number of chunks per block.
 * Then rank r's executor can be derived from rank 0's and r's counts. */
int core_sched_rotational_shape(const core_sched_desc_t *desc);

/* The counts of desc->rank's steps, in schedule order, into out[0 .. n):
 * what core_sched_lower would give in steps[i].count, by the same
 * lowering code but without building steps or dependency lists (no
 * allocation beyond the algorithm's own bookkeeping). n must be the
 * number of steps: HERD_ERR_INVALID_ARG when it is not (out is then
 * unspecified), and core_sched_lower's errors for a bad descriptor. */
herd_status_t core_sched_counts(const core_sched_desc_t *desc, uint64_t *out,
                                size_t n);

/* Print a readable schedule (one line per step) to `f`. */
void core_sched_print(const core_sched_t *s, FILE *f);
/* "send", "recv", "recv_reduce", "copy"; "?" for anything else. */
const char *core_step_kind_name(int kind);

/* Symbolic verification of an algorithm for one configuration: lowers all
 * ranks, executes them with FIFO matching and dependencies under several
 * step orders, and checks every rank's outputs contain exactly the right
 * contributions. On failure returns an error and writes a reason into
 * `why` (size `whylen`). `lower` may replace core_sched_lower (tests use
 * it to prove the verifier catches broken schedules). */
typedef herd_status_t (*core_sched_lower_fn)(const core_sched_desc_t *desc,
                                             core_sched_t *out);
herd_status_t core_sched_verify(const core_sched_desc_t *desc,
                                core_sched_lower_fn lower, char *why,
                                size_t whylen);

#endif
