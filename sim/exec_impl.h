/* sim/exec_impl.h - the schedule executor's per-member state, shared by
 * sim/exec_build.c (conversion of a core/ schedule) and sim/exec.c
 * (execution in virtual time).
 *
 * A 512-rank ring at chunk granularity has 16.7 M steps and every network
 * event touches one or two of them, spread over all ranks: the executor
 * is bound by memory traffic, so everything it touches per step is packed
 * into 16 bytes, and what is known per connection (peer, channel, the
 * network model's handle, how many of its steps have started) is kept
 * once per connection instead of once per step. */
#ifndef HERD_SIM_EXEC_IMPL_H
#define HERD_SIM_EXEC_IMPL_H

#include <stdint.h>

#include "sim/sim.h"

#define XS_NONE UINT32_MAX

/* sim_xstep_t.wait: the low bits count what the step still waits for
 * (dependencies not done, plus its connection predecessor not started);
 * the top bits hold its kind, state and whether its message arrived. */
#define XW_COUNT 0x07ffffffu
#define XW_KIND_SHIFT 27  /* 2 bits: core_step_kind_t */
#define XW_STATE_SHIFT 29 /* 2 bits: XS_IDLE, XS_STARTED, XS_DONE */
#define XW_ARRIVED 0x80000000u

enum { XS_IDLE, XS_STARTED, XS_DONE };

/* Most steps have at most one dependent and one successor on their
 * connection: both are kept inline, so finishing a step and starting
 * the next touches one record each. */
typedef struct sim_xstep {
    uint32_t count; /* elements (in wide[] when that exists) */
    uint32_t conn;  /* index in conns; XS_NONE for COPY */
    uint32_t wait;  /* XW_* above */
    uint32_t next;  /* next step on the same connection, or XS_NONE */
    uint32_t ndep;  /* number of dependents */
    uint32_t dep;   /* the dependent if ndep == 1, else rdeps[dep ..+ndep) */
} sim_xstep_t;

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
    uint32_t rstep; /* receives: the step of message `rk` */
    uint32_t rk;    /* receives: messages that came in order */
} sim_xconn_t;

#define SIM_SMALL_PEERS 4
#define SIM_SMALL_CH 64

/* (peer, channel) -> nonzero uint32: a direct table for the few peers
 * most schedules talk to, a hash map beyond them. */
typedef struct sim_pcmap {
    int n; /* peers in the table; -1: every entry is in h */
    int32_t peer[SIM_SMALL_PEERS];
    uint32_t v[SIM_SMALL_PEERS][SIM_SMALL_CH];
    sim_htab_t h;
} sim_pcmap_t;

/* Fields used per event first: one cache line. */
struct sim_exec {
    sim_xstep_t *xs;
    sim_xconn_t *conns;
    sim_world_t *w;
    sim_inst_t *inst;
    sim_rank_t *rank;
    uint32_t *rdeps;
    uint32_t nleft;
    int member;
    uint64_t *wide; /* counts, when one does not fit in 32 bits */
    size_t esize;
    int real;
    int world_rank;
    sim_req_t *req;
    uint32_t nsteps;
    uint32_t nconns;
    uint32_t *list;    /* steps of every connection, by connection */
    sim_pcmap_t rconn; /* (peer, channel) -> receive connection + 1 */
    core_sched_t s;    /* kept with real buffers only */
    uint8_t *buf[3];
    uint64_t buflen[3];
    void **payload;
    herd_status_t err;
};

static inline uint32_t xs_kind(const sim_xstep_t *p)
{
    return (p->wait >> XW_KIND_SHIFT) & 3u;
}

static inline uint32_t xs_state(const sim_xstep_t *p)
{
    return (p->wait >> XW_STATE_SHIFT) & 3u;
}

static inline void xs_set_state(sim_xstep_t *p, uint32_t st)
{
    p->wait = (p->wait & ~(3u << XW_STATE_SHIFT)) | (st << XW_STATE_SHIFT);
}

static inline uint64_t xs_count(const sim_exec_t *x, uint32_t step)
{
    return x->wide ? x->wide[step] : x->xs[step].count;
}

uint32_t sim_pcmap_get(const sim_pcmap_t *m, int peer, int channel);

#endif
