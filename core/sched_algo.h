/* core/sched_algo.h - internal helpers shared by the algorithm files
 * (core/algo_*.c): the lowering context with a sticky error, step emission
 * that skips empty transfers, balanced range splits, and the per-message
 * split into channels and pipeline chunks.
 *
 * Empty steps are never emitted: both ends of a transfer compute the same
 * sizes, so they skip the same messages and FIFO matching still holds.
 * A skipped step's index is -1, which core_sched_add ignores in dependency
 * lists, so chains over empty chunks simply vanish. */
#ifndef HERD_CORE_SCHED_ALGO_H
#define HERD_CORE_SCHED_ALGO_H

#include <stdint.h>

#include "core/sched.h"

typedef struct core_alg {
    const core_sched_desc_t *d;
    core_sched_t *s;
    int p;
    int rank;
    int nch;              /* channels */
    uint64_t chunk_elems; /* max elements per pipelined chunk */
    herd_status_t err;    /* first failure; later emissions are no-ops */
    /* core_sched_counts: steps are numbered and their counts stored in
     * counts[0 .. counts_cap) instead of being added to s (NULL: lower) */
    uint64_t *counts;
    size_t ncounts, counts_cap;
} core_alg_t;

/* Balanced split of n into `parts`: returns the length of part i and sets
 * *off to its start. Parts differ in length by at most one. */
static inline uint64_t core_split(uint64_t n, uint64_t parts, uint64_t i,
                                  uint64_t *off)
{
    uint64_t q = n / parts, rem = n % parts;
    *off = i * q + (i < rem ? i : rem);
    return q + (i < rem ? 1 : 0);
}

static inline int core_mod(int64_t x, int p)
{
    int64_t m = x % p;
    return (int)(m < 0 ? m + p : m);
}

/* Number of chunks a block of at most `maxlen` elements is cut into. */
static inline uint64_t core_alg_nchunks(const core_alg_t *a, uint64_t maxlen)
{
    if (maxlen <= a->chunk_elems)
        return 1;
    return (maxlen - 1) / a->chunk_elems + 1;
}

/* Emit a step unless count is 0 (then -1). Negative deps are ignored. */
int64_t core_alg_step(core_alg_t *a, core_step_kind_t kind, int peer, int ch,
                      core_buf_t sb, uint64_t so, core_buf_t db, uint64_t dof,
                      uint64_t count, const int64_t *deps, int ndeps);
/* Same, but also emits zero-element messages (barrier). */
int64_t core_alg_step0(core_alg_t *a, core_step_kind_t kind, int peer,
                       core_buf_t sb, uint64_t so, core_buf_t db, uint64_t dof,
                       uint64_t count, const int64_t *deps, int ndeps);

/* A contiguous message of `len` elements is cut into channels (contiguous
 * parts) and each part into chunks: core_alg_npieces pieces, piece i on
 * channel *ch at offset *off (relative to the message), length returned. */
uint64_t core_alg_npieces(const core_alg_t *a, uint64_t len);
uint64_t core_alg_piece(const core_alg_t *a, uint64_t len, uint64_t i, int *ch,
                        uint64_t *off);

/* Record that `step` (>= 0) wrote [off, off+len) of a buffer, in increasing
 * offset order; core_alg_wlog_deps appends the writers overlapping a range
 * to a->tmp-like array `out` (capacity checked). Used where transfers of
 * different shapes touch one staging buffer (gather, scatter, rhd). */
typedef struct core_wlog {
    uint64_t *off, *len;
    int64_t *step;
    uint64_t n, cap;
} core_wlog_t;
void core_wlog_add(core_alg_t *a, core_wlog_t *w, uint64_t off, uint64_t len,
                   int64_t step);
/* Writers overlapping [off, off+len): fills deps (grown as needed). */
int core_wlog_deps(core_alg_t *a, const core_wlog_t *w, uint64_t off,
                   uint64_t len, int64_t **deps, uint64_t *cap);
/* One contiguous message of `len` elements cut into pieces
 * (core_alg_piece): each piece depends on the writers in `rd` of its source
 * range and is logged in `wr` as the writer of its destination range (either
 * may be NULL). deps/cap is the caller's scratch for dependency lists.
 * Shared by the binomial and rhd builders. */
void core_wlog_msg(core_alg_t *a, core_step_kind_t kind, int peer,
                   core_buf_t sb, uint64_t so, core_buf_t db, uint64_t dof,
                   uint64_t len, const core_wlog_t *rd, core_wlog_t *wr,
                   int64_t **deps, uint64_t *cap);
/* The same, and the first piece on each channel also waits for every step
 * numbered [after_lo, after_hi): a message that goes only once an earlier
 * exchange has ended (rhd's step-synchronous exchanges). */
void core_wlog_msg_after(core_alg_t *a, core_step_kind_t kind, int peer,
                         core_buf_t sb, uint64_t so, core_buf_t db,
                         uint64_t dof, uint64_t len, const core_wlog_t *rd,
                         core_wlog_t *wr, int64_t after_lo, int64_t after_hi,
                         int64_t **deps, uint64_t *cap);
/* The number the next step emitted will get. */
int64_t core_alg_next(const core_alg_t *a);
void core_wlog_clear(core_wlog_t *w);
void core_wlog_free(core_wlog_t *w);

/* Scratch needs grow monotonically. */
static inline void core_alg_scratch(core_alg_t *a, uint64_t n)
{
    if (n > a->s->scratch_count)
        a->s->scratch_count = n;
}

/* int64 array of n entries set to -1 (NULL + a->err on failure). */
int64_t *core_alg_idx(core_alg_t *a, uint64_t n);

/* Node r of the binary tree over p ranks used by the tree algorithm:
 * heap numbering (mirror 0) or the mirrored numbering p-1-r (mirror 1).
 * Sets *parent (-1 at the root) and child[0..1] (-1 if absent). */
void core_tree_node(int p, int r, int mirror, int *parent, int child[2]);

/* Algorithm families. Each lowers desc->coll for desc->rank; the caller
 * has validated the descriptor and handles p == 1 generically. */
herd_status_t core_algo_ring(core_alg_t *a);
herd_status_t core_algo_binomial(core_alg_t *a);
herd_status_t core_algo_direct(core_alg_t *a);
herd_status_t core_algo_tree(core_alg_t *a);
herd_status_t core_algo_rhd(core_alg_t *a);
herd_status_t core_algo_hier(core_alg_t *a);
herd_status_t core_algo_rd(core_alg_t *a);
herd_status_t core_algo_barrier(core_alg_t *a);
/* The *_v kinds and monitored_barrier (core/algo_v.c). */
herd_status_t core_algo_v(core_alg_t *a);

/* core_sched_rotational (except_counts 0) and
 * core_sched_rotational_shape (except_counts 1) for a valid ring
 * descriptor with p > 1 (algo resolved): 1 when ring's lowering of a->d
 * is rotation symmetric (in everything but the counts). */
int core_ring_rotational(const core_alg_t *a, int except_counts);

#endif
