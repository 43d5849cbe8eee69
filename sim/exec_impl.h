/* sim/exec_impl.h - the schedule executor's per-member state, shared by
 * sim/exec_build.c (conversion of a core/ schedule) and sim/exec.c
 * (execution in virtual time).
 *
 * A 512-rank ring at chunk granularity has 16.7 M steps and every network
 * event touches one or two of them, spread over all ranks, so everything
 * it touches per step is kept small: what changes as it runs is one byte
 * per step and member (wait count and state), and the rest (connections,
 * successors, dependents, counts) is immutable once built and shared by every
 * member whose schedule has the same shape: all ranks of a ring, for instance,
 * read one copy, which stays in cache while they run in step. What is
 * known per connection (peer, channel, the network model's handle, how
 * many of its steps have started) is kept once per connection. */
#ifndef HERD_SIM_EXEC_IMPL_H
#define HERD_SIM_EXEC_IMPL_H

#include <stdint.h>

#include "sim/sim.h"

#define XS_NONE UINT32_MAX

/* A step's shared initial word (w0): the low bits count what it waits
 * for (dependencies, plus its connection predecessor starting), the top
 * ones hold its kind. */
#define XW_COUNT 0x07ffffffu
#define XW_KIND_SHIFT 27 /* 2 bits: core_step_kind_t */

/* The per-member wait byte: what the step still waits for (3 bits; the
 * value XB_BIG means "counted in the member's `big` array", for the rare
 * step that waits for 7 or more), its kind, its state and whether its
 * message arrived. A byte, not a word: a 512-rank collective's members
 * have millions of steps, and these are all the state they change. */
#define XB_COUNT 0x07u
#define XB_BIG 0x07u
#define XB_KIND_SHIFT 3  /* 2 bits */
#define XB_STATE_SHIFT 5 /* 2 bits: XS_IDLE, XS_STARTED, XS_DONE */
#define XB_ARRIVED 0x80u

enum { XS_IDLE, XS_STARTED, XS_DONE };

/* The immutable part of a step. Most steps have at most one dependent
 * and one successor on their connection: both are kept inline, so
 * finishing a step and starting the next touch one record each. */
typedef struct sim_xstep {
    uint32_t conn; /* index in conns; XS_NONE for COPY */
    uint32_t next; /* next step on the same connection, or XS_NONE */
    uint32_t ndep; /* number of dependents */
    uint32_t dep;  /* the dependent if ndep == 1, else rdeps[dep ..+ndep) */
} sim_xstep_t;

/* An immutable array shared by the members of one collective instance
 * whose arrays are equal byte for byte (sim_exec_share). */
typedef struct sim_blob {
    struct sim_blob *next;
    uint64_t hash;
    size_t len;
    void *data;
} sim_blob_t;

/* One direction of traffic with one peer on one channel: its steps in
 * schedule order are list[off .. off + n). Steps of a connection start in
 * that order, so a send's index on the connection is `cur` (steps
 * started) when it starts. Receives: messages normally arrive in order,
 * so `rstep` (the step of message `rk`) finds them without the list. */
typedef struct sim_xconn {
    int32_t peer; /* group rank */
    uint32_t channel;
    uint32_t off, n;
    uint32_t cur;
    uint32_t net;   /* sends: the network model's handle; XS_NONE: not yet */
    uint32_t rtr;   /* sends, algorithm "gloo": the receiver's
                       ready-to-receive notices come so far (send k moves
                       once k < rtr) */
    uint32_t rstep; /* receives: the step of message `rk` */
    union {
        uint32_t rk;    /* receives: messages that came in order */
        uint32_t rconn; /* sends: the receiver's connection + 1, found on
                           a send once the receiver has its executor
                           (0: not yet), carried by the flows so that a
                           delivery does not look it up */
    };
} sim_xconn_t;

#define SIM_SMALL_KEYS 8
#define SIM_SMALL_CH 64

/* (peer, channel) -> nonzero uint32: a direct table for the few peers
 * most schedules talk to, a hash map beyond them. An entry of the table
 * is a peer and a block of 64 channels (16-bit values: the table is as
 * small as 4 peers' 32-bit rows were): the NCCL model's trees receive from
 * up to 8 peers on channels c and c + 64 (sim/nccl_lower.c), which sent
 * every tree member to the hash map. */
typedef struct sim_pcmap {
    int n; /* entries in the table; -1: every value is in h */
    int32_t peer[SIM_SMALL_KEYS];
    uint16_t blk[SIM_SMALL_KEYS]; /* channel / SIM_SMALL_CH */
    uint16_t v[SIM_SMALL_KEYS][SIM_SMALL_CH];
    sim_htab_t h;
} sim_pcmap_t;

/* Fields used per event first: one cache line. */
struct sim_exec {
    const sim_xstep_t *xs; /* shared */
    uint8_t *wait;         /* this member's wait bytes, `ws` apart */
    const uint32_t *cnt;   /* counts in elements (shared when equal) */
    sim_xconn_t *conns;
    sim_world_t *w;
    sim_inst_t *inst;
    const uint32_t *rdeps; /* shared */
    uint32_t ws;           /* 1, or p in the instance's interleaved pool */
    int world_rank;
    uint32_t nleft;
    int member;
    int real;
    int rdv;        /* inst->rdv (algorithm "gloo"), kept here: the hot paths
                       read this cache line anyway */
    uint64_t *wide; /* counts, when one does not fit in 32 bits */
    uint32_t *big;  /* waits of the steps whose byte says XB_BIG */
    size_t esize;
    sim_rank_t *rank;
    sim_req_t *req;
    uint32_t nsteps;
    uint32_t nconns;
    const uint32_t *list;  /* shared: steps of every connection, by
                              connection */
    const uint32_t *ready; /* shared: steps ready at the start, last
                              first */
    uint32_t nready;
    sim_pcmap_t rconn;  /* (peer, channel) -> receive connection + 1 */
    core_sched_t s;     /* kept with real buffers only */
    const uint32_t *w0; /* shared: initial wait words */
    uint8_t *buf[3];
    uint64_t buflen[3];
    void **payload;
    herd_status_t err;
    int zombie;       /* a representative dropped when the symmetry shortcut
                         ended (sim/sym.c): its queued events do nothing */
    uint64_t *t_step; /* HERD_STEPS_DIR: when each step started */
};

/* What members whose schedules are rotations of the instance's first
 * one need from it (sim_exec_keep_rotation): its shared arrays and its
 * connections as built, before it started; where only the counts are not
 * rotations of its (ring all_reduce split unevenly), how to count. */
typedef struct sim_rot {
    int member; /* whose connections these are */
    uint32_t nsteps, nconns, nready;
    sim_xconn_t *conns;
    const sim_xstep_t *xs;
    const uint32_t *rdeps, *list, *cnt, *ready, *w0;
    int own_counts;         /* 1: counts differ by member (from desc) */
    core_sched_desc_t desc; /* own_counts: the collective, any rank */
} sim_rot_t;

static inline uint32_t xw_kind(uint32_t w)
{
    return (w >> XW_KIND_SHIFT) & 3u;
}

static inline uint32_t xb_kind(uint8_t b)
{
    return (b >> XB_KIND_SHIFT) & 3u;
}

static inline uint32_t xb_state(uint8_t b)
{
    return (b >> XB_STATE_SHIFT) & 3u;
}

static inline void xb_set_state(uint8_t *b, uint32_t st)
{
    *b = (uint8_t)((*b & ~(3u << XB_STATE_SHIFT)) | (st << XB_STATE_SHIFT));
}

/* A step's initial wait byte, from its shared word. */
static inline uint8_t xb_init(uint32_t w0)
{
    uint32_t n = w0 & XW_COUNT;
    return (uint8_t)((n < XB_BIG ? n : XB_BIG) |
                     (xw_kind(w0) << XB_KIND_SHIFT));
}

/* Wait bytes: members of a collective run in step, and the events of one
 * instant touch every member's byte for the same step one after another,
 * so members whose schedules have equal lengths keep them interleaved
 * (step-major) in one pool of the instance: one cache line serves 64
 * members instead of one. */
static inline uint8_t *xw(const sim_exec_t *x, uint32_t step)
{
    return &x->wait[(size_t)step * x->ws];
}

static inline uint64_t xs_count(const sim_exec_t *x, uint32_t step)
{
    return x->wide ? x->wide[step] : x->cnt[step];
}

uint32_t sim_pcmap_get(const sim_pcmap_t *m, int peer, int channel);

#endif
