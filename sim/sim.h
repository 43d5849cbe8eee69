/* sim/sim.h - the simulator engine's internal structures, shared by the
 * files of sim/ (not by the network model, which sits behind sim/net.h).
 *
 * One sim_world_t per herd_run: every rank is a sim_rank_t with its own
 * ucontext (sim_ctx_t) and world communicator; the scheduler (the caller's
 * stack) pops events in (time, insertion sequence) order and resumes ranks.
 * A rank only runs inside the processing of one event, at world->now, so
 * the whole run is a deterministic function of its inputs and seed. */
#ifndef HERD_SIM_SIM_H
#define HERD_SIM_SIM_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <ucontext.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "core/engine.h"
#include "core/flight.h"
#include "core/sched.h"
#include "core/steplog.h"
#include "sim/diag.h"
#include "sim/nccl_model.h"
#include "sim/net.h"

/* ---- contexts (sim/ctx.c) ---- */
/* Where the ranks' stacks come from. Each stack with its own mapping and
 * guard page costs two of the kernel's vm.max_map_count mappings (65530 by
 * default), which would stop a world at ~32k ranks; so beyond a budget the
 * stacks are carved from large shared mappings without guard pages, and
 * the lowest 64 bytes of each stack, which no frame uses, are checked to
 * be still zero whenever the rank switches out (an overflow ends the run
 * with the rank named). Nothing writes them, so that page is never
 * faulted in: a rank costs only the stack pages it really uses. */
typedef struct sim_stack_pool {
    size_t stack_len; /* usable bytes per stack, page multiple */
    int guarded;      /* one mapping and guard page per stack */
    void **slabs;     /* shared mappings (unguarded mode) */
    size_t nslabs, slab_cap, slab_stacks, used; /* stacks used of the last */
} sim_stack_pool_t;

/* Chooses the mode for `nranks` stacks of `stack_bytes`. */
void sim_stack_pool_init(sim_stack_pool_t *p, size_t stack_bytes,
                         size_t nranks);
void sim_stack_pool_fini(sim_stack_pool_t *p);

typedef void (*sim_ctx_entry_fn)(void *arg);

/* No ucontext_t per rank (968 bytes, a million ranks' worth is a GiB):
 * a rank's first start builds its context in a per-thread scratch one,
 * and every later switch is a jmp_buf. AddressSanitizer builds switch
 * with swapcontext and give each rank its own (`uc`). */
typedef struct sim_ctx {
    ucontext_t *uc; /* ASan builds: this rank's saved context */
    sim_ctx_entry_fn fn;
    void *arg;
    void *map; /* own mapping, guard page first (guarded mode), or NULL */
    size_t map_len;
    void *stack_lo; /* usable stack */
    size_t stack_len;
    void *asan_fake; /* ASan fake stack while switched away */
    jmp_buf jb;      /* where to switch back in (after the first start) */
    int started;
} sim_ctx_t;

herd_status_t sim_ctx_create(sim_ctx_t *c, sim_stack_pool_t *pool,
                             sim_ctx_entry_fn fn, void *arg);
/* 0 while the lowest 64 bytes of the rank's stack are untouched. */
int sim_ctx_overflowed(const sim_ctx_t *c);
void sim_ctx_destroy(sim_ctx_t *c);
/* Scheduler -> rank and back. */
void sim_ctx_resume(sim_ctx_t *sched, sim_ctx_t *rank);
void sim_ctx_yield(sim_ctx_t *rank, sim_ctx_t *sched);
/* The first thing a new context runs (ASan bookkeeping). */
void sim_ctx_started(sim_ctx_t *sched);
/* The last thing a finished context runs; never returns. */
void sim_ctx_exit(sim_ctx_t *rank, sim_ctx_t *sched) __attribute__((noreturn));
/* Default per-rank stack size for this build. */
size_t sim_ctx_default_stack(void);

/* ---- event queue (sim/evq.c) ---- */
typedef enum sim_ev_type {
    SIM_EV_RESUME,    /* a: rank */
    SIM_EV_STEP_DONE, /* p: exec, a: step */
    SIM_EV_DEATH,     /* a: rank */
    SIM_EV_TIMEOUT,   /* p: collective instance */
    SIM_EV_POLL,      /* a: rank; a polling rank looks again */
    SIM_EV_WAKE       /* a: rank, p: timer number; a compute_until ends */
} sim_ev_type_t;

typedef struct sim_ev {
    uint64_t time;
    uint64_t seq;
    void *p;
    uint32_t type;
    uint32_t a;
} sim_ev_t;

/* Events pushed in (time, seq) order go to a lane, a FIFO, in O(1);
 * the rest to the heap. */
#define SIM_EVQ_LANES 4

typedef struct sim_evq_lane {
    sim_ev_t *v;
    size_t head, tail, cap; /* queued: v[head .. tail) */
} sim_evq_lane_t;

typedef struct sim_evq {
    sim_ev_t *heap;
    size_t hn, cap;  /* heap entries, allocated */
    size_t n;        /* events queued, heap and lanes */
    uint64_t next_t; /* the earliest one's time, when n > 0 (asked for at
                        every turn of the loop, so kept, not searched) */
    uint64_t next_seq;
    sim_evq_lane_t lane[SIM_EVQ_LANES];
} sim_evq_t;

herd_status_t sim_evq_push(sim_evq_t *q, uint64_t time, uint32_t type,
                           uint32_t a, void *p);
/* Pops the earliest event into *out; 0 if empty. */
int sim_evq_pop(sim_evq_t *q, sim_ev_t *out);
uint64_t sim_evq_next_time(const sim_evq_t *q);
void sim_evq_fini(sim_evq_t *q);

/* ---- hash map uint64 -> pointer (sim/htab.c) ---- */
typedef struct sim_htab {
    uint64_t *keys;
    void **vals;
    size_t cap, n; /* cap is a power of two; val NULL = empty slot */
} sim_htab_t;

void *sim_htab_get(const sim_htab_t *h, uint64_t key);
herd_status_t sim_htab_put(sim_htab_t *h, uint64_t key, void *val);
void sim_htab_del(sim_htab_t *h, uint64_t key);
void sim_htab_fini(sim_htab_t *h);
uint64_t sim_hash64(uint64_t x);

/* ---- random numbers (sim/rng.c) ---- */
typedef struct sim_rng {
    uint64_t s[4];
} sim_rng_t;

void sim_rng_seed(sim_rng_t *r, uint64_t seed, uint64_t stream);
uint64_t sim_rng_next(sim_rng_t *r);
double sim_rng_uniform(sim_rng_t *r); /* (0, 1) */
double sim_rng_normal(sim_rng_t *r);  /* N(0, 1) */
/* Multiplier for one compute duration under the jitter model. */
double sim_rng_jitter(sim_rng_t *r, herd_jitter_t kind, double sigma);

/* ---- ranks, comms, requests ---- */
typedef struct sim_world sim_world_t;
typedef struct sim_rank sim_rank_t;
typedef struct sim_inst sim_inst_t;
typedef struct sim_exec sim_exec_t;

typedef enum sim_rank_state {
    SIM_RANK_READY,   /* runnable or running */
    SIM_RANK_BLOCKED, /* in herd_req_wait on an unfinished request */
    SIM_RANK_SLEEP,   /* in modelled compute */
    SIM_RANK_EXITED,
    SIM_RANK_DEAD
} sim_rank_state_t;

typedef struct sim_comm {
    herd_comm_t base;
    sim_world_t *w;
    sim_rank_t *r;
    struct sim_comm *next; /* the rank's list of groups it belongs to */
    /* algorithm "gloo": ProcessGroupGloo runs a group's collectives on a
     * pool of SIM_GLOO_THREADS worker threads; the ones posted while all
     * are busy wait here, in posting order (sim/coll.c) */
    int gloo_busy;
    struct sim_req *gloo_head, *gloo_tail;
} sim_comm_t;

typedef enum sim_req_kind {
    SIM_REQ_COLL,
    SIM_REQ_SEND,
    SIM_REQ_RECV
} sim_req_kind_t;

typedef struct sim_req {
    herd_req_t base;
    sim_req_kind_t kind;
    int done;
    herd_status_t status;
    sim_rank_t *owner;
    /* the timeline sink, copied: the group may be destroyed first */
    herd_timeline_cb tl_cb;
    void *tl_arg;
    struct sim_req *next_all, *prev_all; /* owner's list of live requests */
    /* what it is, for the timeline and the diagnosis */
    core_coll_args_t args; /* label points into `label` */
    herd_algo_t algo;      /* resolved */
    int group, gsize;
    int peer_world; /* p2p: the peer's world rank */
    uint64_t t_post;
    uint64_t fr_id; /* its entry in the owner's flight record */
    char label[CORE_LABEL_MAX];
    /* collectives */
    sim_inst_t *inst;
    int member;                 /* group rank in inst */
    struct sim_comm *gloo_comm; /* algorithm "gloo": holds a worker of it */
    struct sim_req *gloo_next;  /* its queue of collectives waiting */
    /* point to point */
    struct sim_req *p2p_next; /* FIFO of unmatched ops */
    struct sim_req *match;    /* matched partner while in flight */
    uint64_t p2p_key;
} sim_req_t;

struct sim_rank {
    sim_world_t *w;
    int id;
    sim_rank_state_t state;
    sim_ctx_t ctx;
    sim_comm_t *world_comm;
    sim_comm_t *groups; /* subgroups not yet destroyed */
    sim_req_t *waiting; /* request it blocks on */
    sim_req_t *reqs;    /* every live request it owns */
    sim_rng_t rng;
    double compute_factor;
    long steps;       /* "step" marks seen */
    long die_at_step; /* -1: none */
    int exit_code;
    uint64_t t_end;
    uint64_t fake_next; /* phantom herd_alloc cursor */
    void **allocs;      /* real herd_alloc blocks */
    size_t nallocs, allocs_cap;
    uint64_t abort_calls;   /* API calls after the run was ended */
    uint32_t poll_streak;   /* herd_req_test calls in a row, unfinished */
    uintptr_t poll_gen;     /* identifies the pending POLL event */
    uintptr_t wake_gen;     /* numbers compute_until timers */
    uintptr_t wake_pending; /* the timer not fired yet, 0: none */
    core_flight_t flight;   /* its last ops (sim/flight.c) */
};

struct sim_world {
    herd_sim_opts_t opts;
    herd_init_t init;
    herd_main_fn fn;
    void *fn_arg;
    int n;
    int gpus_per_node;
    sim_rank_t *ranks;
    uint8_t *dead; /* per rank: 1 once dead (checked per step, so kept
                      apart from the large rank records) */
    sim_ctx_t sched;
    sim_stack_pool_t stacks; /* the ranks' stacks */
    sim_evq_t q;
    uint64_t timeouts_queued; /* TIMEOUT and POLL events in q: these are
                                 not progress */
    sim_net_t *net;
    uint64_t now;
    uint64_t events;
    int live;                 /* ranks not exited or dead */
    int aborting;             /* the run is over: calls fail fast */
    herd_status_t end_status; /* HANG / TIMEOUT once decided */
    sim_inst_t *timed_out;
    sim_htab_t insts;      /* (group, seq) -> live instance */
    sim_inst_t *all_insts; /* every instance not yet freed */
    sim_htab_t p2p;        /* (group, src, dst, tag) -> queue head */
    sim_exec_t **work;     /* zero-cost completions to process */
    uint32_t *work_step;
    size_t nwork, work_cap;
    struct sim_xbuild *xbuild; /* schedule conversion scratch
                                  (sim/exec_build.c) */
    void *flow_free;           /* free list of flow contexts */
    void **flow_slabs;
    size_t nslabs;
    int first_failed;
    int first_exit_code;
    sim_diag_t *diag_out; /* where to put the structured diagnosis */
    /* progress of a long run (opts.progress_cb, opts.stop) */
    uint64_t steps_done, steps_total; /* schedule steps of the collectives
                                         posted */
    double wall0, wall_next;          /* CLOCK_MONOTONIC: start, next report */
    int interrupted;                  /* *opts.stop ended the run */
    /* the memory budget (sim/mem.c); 0: unknown, no guard */
    uint64_t mem_limit, mem_seen; /* peak resident bytes when it ended */
    const char *mem_what;         /* where the limit comes from */
    int mem_over;                 /* the run ended past the limit */
    unsigned mem_posts;           /* posts since the last check */
    struct sim_sym *sym;          /* the symmetry shortcut (sim/sym.h); NULL:
                                     off for this world */
    size_t flight_max; /* HERD_FLIGHT_ENTRIES, read at the first op */
    int flight_read;
    core_steplog_t *steplog; /* HERD_STEPS_DIR's steps.tsv; NULL: none */
};

/* sim/mem.c: the budget, checked up front for the ranks (a refusal with
 * its numbers in info->report) and while running (sim_mem_over: 1 when the
 * peak resident size passed it; the run then ends with
 * HERD_ERR_NO_MEMORY and sim_mem_text heads its report). */
herd_status_t sim_mem_init(sim_world_t *w, herd_run_info_t *info);
int sim_mem_over(sim_world_t *w);
void sim_mem_text(FILE *f, const sim_world_t *w);

/* Counts one event (engine or network); every 4096th checks the memory
 * budget, wherever it is counted (one network instant can hold millions).
 * Returns 1 once the run is past it: nothing more may start. */
static inline int sim_event(sim_world_t *w)
{
    if ((++w->events & 4095) == 0)
        sim_mem_over(w);
    return w->mem_over;
}

/* sim/engine.c */
herd_status_t sim_push(sim_world_t *w, uint64_t t, uint32_t type, uint32_t a,
                       void *p);
/* Block the running rank until req completes; returns its status. */
herd_status_t sim_rank_block(sim_rank_t *r, sim_req_t *req);
/* Mark a request done (scheduler side) and wake its owner if waiting. */
void sim_req_complete(sim_world_t *w, sim_req_t *req, herd_status_t st);
void sim_rank_die(sim_world_t *w, sim_rank_t *r);
sim_req_t *sim_req_new(sim_comm_t *c, sim_req_kind_t kind,
                       const core_coll_args_t *a);
void sim_req_release(sim_req_t *req);
/* Emit the timeline record of a finished op. */
void sim_req_timeline(sim_world_t *w, const sim_req_t *req);
int sim_node_of(const sim_world_t *w, int world_rank);
void sim_world_loop(sim_world_t *w);
void sim_rank_entry(void *arg);
/* sim/diag.c: fill d (zeroed) from the world at the end of a run. */
herd_status_t sim_diag_build(sim_world_t *w, sim_diag_t *d);
void sim_world_abort_ranks(sim_world_t *w);
herd_status_t sim_rank_compute(sim_rank_t *r, double seconds,
                               const char *label);
/* Compute cut short when `req` completes (herd_compute_until): *done_out
 * is the compute time it stood for, in the caller's seconds. */
herd_status_t sim_rank_compute_until(sim_rank_t *r, double seconds,
                                     sim_req_t *req, const char *label,
                                     double *done_out);
herd_status_t sim_rank_park_dead(sim_rank_t *r);
/* 1 (and counts the call) when the run is over and calls must fail. */
int sim_rank_aborting(sim_rank_t *r);
/* An unfinished herd_req_test: a polling loop must let time move on. */
void sim_rank_poll(sim_rank_t *r, sim_req_t *req);
/* Blocked in a wait, or polling a request in a loop. */
int sim_rank_stuck(const sim_rank_t *r);
herd_status_t sim_engine_run_op(const herd_init_t *init, herd_main_fn fn,
                                void *arg, herd_run_info_t *info);

/* sim/rank_ops.c: the engine ops that run on a rank's context */
extern const herd_engine_ops_t sim_engine_ops;
herd_status_t sim_comm_new(sim_world_t *w, sim_rank_t *r, int rank, int size,
                           int group_id, int *world_ranks,
                           const herd_comm_t *parent, sim_comm_t **out);

/* sim/flight.c: every rank's flight record, in virtual time */
/* An op the rank posts (before the engine sees it); its entry id. */
uint64_t sim_flight_post(sim_comm_t *c, const core_coll_args_t *a);
/* The op's end (sim_req_complete), or a post the engine refused. */
void sim_flight_done(sim_world_t *w, const sim_req_t *req, herd_status_t st);
herd_status_t sim_flight_dump_op(herd_comm_t *comm, const char *dir);
/* At the end of a hung or timed-out run: every rank's record to
 * opts.flight_dir (else $HERD_FLIGHT_DIR; neither: nothing), and a line
 * saying so appended to info->report. */
void sim_flight_at_end(sim_world_t *w, herd_run_info_t *info);

/* sim/coll.c: collective instances */
herd_status_t sim_coll_post(sim_comm_t *c, const core_coll_args_t *a,
                            sim_req_t *req);
/* Group c is being destroyed: its gloo collectives no longer hold its
 * workers, and the ones queued for a worker start now (requests outlive
 * their group). */
void sim_coll_gloo_detach(sim_world_t *w, sim_comm_t *c);
void sim_inst_timeout(sim_world_t *w, sim_inst_t *inst);
void sim_inst_free_all(sim_world_t *w);
/* Member flags: 1 posted, 2 done, 4 posted with mismatching arguments. */
int sim_inst_member_state(const sim_inst_t *inst, int m);

/* sim/exec.c: schedule execution */
herd_status_t sim_exec_create(sim_world_t *w, sim_inst_t *inst, int member,
                              sim_req_t *req, core_sched_t *sched,
                              sim_exec_t **out);
void sim_exec_destroy(sim_exec_t *x);
/* Members whose schedules are rotations of the first one's
 * (core_sched_rotational, phantom buffers): sim_exec_keep_rotation
 * records x, freshly created and not started, as the instance's template;
 * sim_exec_create_rotated then builds another member's executor from it
 * without lowering (sim/exec_build.c). `counts`: NULL when the counts
 * are the same for every member, else the descriptor (any rank) that
 * core_sched_counts gives each member's counts from
 * (core_sched_rotational_shape). */
herd_status_t sim_exec_keep_rotation(sim_inst_t *inst, const sim_exec_t *x,
                                     const core_sched_desc_t *counts);
herd_status_t sim_exec_create_rotated(sim_world_t *w, sim_inst_t *inst,
                                      int member, sim_req_t *req,
                                      sim_exec_t **out);
/* Frees the schedule arrays the members of inst shared. */
void sim_exec_blobs_free(sim_inst_t *inst);
void sim_exec_build_fini(sim_world_t *w);
sim_req_t *sim_exec_req(const sim_exec_t *x);
void sim_exec_start(sim_world_t *w, sim_exec_t *x);
void sim_exec_step_done(sim_world_t *w, sim_exec_t *x, uint32_t step);
/* A message for receiver member `dst` of inst arrived (or is buffered).
 * rconn: x's receive connection + 1 when the sender knew it, else 0. */
void sim_exec_deliver(sim_world_t *w, sim_exec_t *x, uint32_t rconn, int src,
                      int channel, uint32_t k, void *payload);
/* Algorithm "gloo" (inst->rdv): member `src` posted a receive from x's
 * member on `channel`, and its notice arrived: x's next send to it on
 * that channel may move (sim/exec.c). */
void sim_exec_rtr(sim_world_t *w, sim_exec_t *x, int src, int channel);
/* ProcessGroupGloo's worker threads (Options::threads: two per gloo
 * device, and PyTorch gives a group one device unless told otherwise):
 * how many of a group's gloo collectives a rank runs at once. */
#define SIM_GLOO_THREADS 2
/* Algorithm "gloo": core/ schedules shaped like gloo's (sim/gloo_lower.c). */
herd_status_t sim_gloo_lower(const core_sched_desc_t *desc, core_sched_t *out);
void sim_world_drain(sim_world_t *w);
void sim_net_cb(void *ctx, uint64_t t, int delivered, void *arg);

/* sim/p2p.c */
herd_status_t sim_p2p_post(sim_comm_t *c, const core_coll_args_t *a,
                           sim_req_t *req);
void sim_p2p_flow_done(sim_world_t *w, void *flow, int delivered);
void sim_p2p_fini(sim_world_t *w);
int sim_p2p_unmatched(const sim_req_t *req);

/* A message that reached a member before it posted the collective. */
typedef struct sim_early {
    int src, channel;
    uint32_t k; /* SIM_EARLY_RTR: a ready-to-receive notice */
    void *payload;
    struct sim_early *next;
} sim_early_t;
#define SIM_EARLY_RTR UINT32_MAX

/* One collective (group, seq), shared by its members. The first poster's
 * arguments are the reference; later posters are checked against them. */
struct sim_inst {
    uint64_t key;
    int group;
    uint64_t seq;
    int p;
    int *world_ranks;      /* group rank -> world rank (copy); NULL: id */
    core_coll_args_t args; /* first poster's (label not kept) */
    herd_algo_t algo;
    int rdv;        /* algorithm "gloo": a send moves only once the receiver's
                       ready-to-receive notice has come (sim/exec.c) */
    int first_rank; /* group rank of the first poster */
    sim_diag_class_t mismatch; /* NONE unless a poster disagreed */
    int nposted, ndone;
    uint8_t *posted; /* per member: 1 posted, 2 done */
    sim_exec_t **execs;
    sim_early_t **early;
    uint64_t t_first;
    double timeout_s;
    uint32_t inflight; /* flows that still reference it */
    int timeout_queued, in_table;
    sim_inst_t *next_all, *prev_all;
    sim_nccl_plan_t nccl;       /* algorithm "nccl": NCCL's choice and protocol
                                   effects (sim/nccl_model.c); zero otherwise */
    struct sim_blob *blobs;     /* schedule arrays its members share
                                   (sim/exec_build.c) */
    uint8_t *wpool;             /* members' wait bytes, interleaved */
    const uint32_t *wpool_tmpl; /* the initial words it was filled from */
    size_t wpool_nbig;          /* steps in them waiting for 7 or more */
    struct sim_rot *rot;        /* template of rotated members; NULL: each
                                   member lowers its own schedule */
    struct sim_isym *sym;       /* a candidate for the symmetry shortcut
                                   (sim/sym.h); NULL: not one */
    size_t *vcounts; /* the *_v kinds: counts to check posters against
                        (sim/coll.c); NULL otherwise */
};

int sim_inst_world_rank(const sim_inst_t *inst, int member);
void sim_inst_maybe_free(sim_world_t *w, sim_inst_t *inst);
void sim_inst_member_done(sim_world_t *w, sim_inst_t *inst, int member,
                          herd_status_t st);

/* Flow contexts (sim/exec.c): what a net callback is about. */
typedef struct sim_flow {
    uint8_t is_p2p; /* 1: point-to-point; SIM_FLOW_RTR: a receiver's
                       ready-to-receive notice (algorithm "gloo") */
    uint8_t pad[3];
    int src, dst;  /* collective: group ranks; p2p unused */
    uint32_t step; /* sender's step */
    uint32_t k;    /* index on the connection */
    int channel;
    sim_exec_t *sx; /* sender's exec (valid until "sent") */
    sim_inst_t *inst;
    union {
        struct {
            sim_req_t *send, *recv; /* p2p */
        };
        uint32_t rconn; /* collective: the receiver's connection + 1 for
                           these messages (0: looked up on delivery) */
    };
    void *payload; /* real buffers: the message */
    struct sim_flow *next_free;
} sim_flow_t;

#define SIM_FLOW_RTR 2

sim_flow_t *sim_flow_get(sim_world_t *w);
void sim_flow_put(sim_world_t *w, sim_flow_t *f);
void sim_flow_fini(sim_world_t *w);

#endif
