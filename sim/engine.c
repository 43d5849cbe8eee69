/* sim/engine.c - the simulator's run loop: world set-up, rank contexts,
 * the event loop that interleaves the event queue with the network model,
 * blocking and waking ranks, and the end of a run (normal, hang, timeout)
 * including the teardown that lets every unfinished rank unwind. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/sim.h"
#include "sim/sym.h"

/* After the run ended, a rank that keeps calling the API (ignoring the
 * errors) is abandoned after this many calls, never looped on forever. */
#define SIM_ABORT_CALL_LIMIT 100000

herd_status_t sim_push(sim_world_t *w, uint64_t t, uint32_t type, uint32_t a,
                       void *p)
{
    if (type == SIM_EV_TIMEOUT || type == SIM_EV_POLL)
        w->timeouts_queued++;
    return sim_evq_push(&w->q, t, type, a, p);
}

int sim_node_of(const sim_world_t *w, int world_rank)
{
    return world_rank / w->gpus_per_node;
}

void sim_rank_entry(void *arg)
{
    sim_rank_t *r = arg;
    sim_world_t *w = r->w;
    sim_ctx_started(&w->sched);
    int rc = w->fn(&r->world_comm->base, w->fn_arg);
    if (r->state != SIM_RANK_DEAD && r->state != SIM_RANK_EXITED) {
        r->state = SIM_RANK_EXITED;
        r->exit_code = rc;
        r->t_end = w->now;
        if (!w->aborting) {
            w->live--;
            if (rc != 0 && w->first_failed < 0) {
                w->first_failed = r->id;
                w->first_exit_code = rc;
            }
        }
    }
    sim_ctx_exit(&r->ctx, &w->sched);
}

/* A rank that ran past its stack has clobbered memory that is not its
 * own (in the pooled mode, without guard pages): nothing after is to be
 * trusted, so the run ends here, naming the rank and the remedy. */
static void stack_check(sim_world_t *w, sim_rank_t *r)
{
    if (!sim_ctx_overflowed(&r->ctx))
        return;
    fprintf(stderr,
            "herd sim: rank %d overflowed its %zu KiB stack; raise "
            "herd_sim_opts_t.stack_bytes\n",
            r->id, w->stacks.stack_len >> 10);
    abort();
}

static void resume(sim_world_t *w, sim_rank_t *r)
{
    r->state = SIM_RANK_READY;
    sim_ctx_resume(&w->sched, &r->ctx);
    stack_check(w, r);
}

/* In abort mode every call fails fast; a rank that never stops calling is
 * parked for good. */
static int abort_check(sim_rank_t *r)
{
    if (!r->w->aborting)
        return 0;
    if (++r->abort_calls > SIM_ABORT_CALL_LIMIT)
        for (;;)
            sim_ctx_yield(&r->ctx, &r->w->sched);
    return 1;
}

static herd_status_t aborted_status(sim_world_t *w, sim_req_t *req)
{
    if (req->done)
        return req->status;
    if (w->end_status == HERD_ERR_TIMEOUT && req->inst &&
        req->inst == w->timed_out)
        return HERD_ERR_TIMEOUT;
    return HERD_ERR_ABORTED;
}

static void wait_record(sim_world_t *w, sim_rank_t *r, const sim_req_t *req,
                        uint64_t t0)
{
    herd_tl_rec_t rec = {.kind = HERD_TL_WAIT,
                         .rank = r->id,
                         .node = sim_node_of(w, r->id),
                         .group = req->group,
                         .seq = req->args.seq,
                         .coll = req->args.coll,
                         .algo = req->algo,
                         .dtype = req->args.dtype,
                         .op = req->args.op,
                         .count = req->args.count,
                         .peer = req->args.root,
                         .start_ns = t0,
                         .end_ns = w->now,
                         .label = req->args.label,
                         .status = req->status};
    rec.bytes = rec.count * herd_dtype_size(rec.dtype);
    if (req->tl_cb)
        req->tl_cb(&rec, req->tl_arg);
}

herd_status_t sim_rank_block(sim_rank_t *r, sim_req_t *req)
{
    sim_world_t *w = r->w;
    if (abort_check(r))
        return aborted_status(w, req);
    if (req->done)
        return req->status;
    uint64_t t0 = w->now;
    while (!req->done) {
        r->waiting = req;
        r->state = SIM_RANK_BLOCKED;
        sim_ctx_yield(&r->ctx, &w->sched);
        if (abort_check(r))
            return aborted_status(w, req);
    }
    r->waiting = NULL;
    if (w->now > t0)
        wait_record(w, r, req, t0);
    return req->status;
}

void sim_req_complete(sim_world_t *w, sim_req_t *req, herd_status_t st)
{
    if (req->done)
        return;
    req->done = 1;
    req->status = st;
    sim_flight_done(w, req, st);
    sim_req_timeline(w, req);
    sim_rank_t *r = req->owner;
    if (r->waiting == req &&
        (r->state == SIM_RANK_BLOCKED || r->state == SIM_RANK_SLEEP)) {
        /* a polling rank wakes now; its pending POLL becomes stale */
        r->poll_gen++;
        r->waiting = NULL;
        r->state = SIM_RANK_READY;
        sim_push(w, w->now, SIM_EV_RESUME, (uint32_t)r->id, NULL);
    }
}

void sim_req_timeline(sim_world_t *w, const sim_req_t *req)
{
    const core_coll_args_t *a = &req->args;
    herd_tl_rec_t rec = {.kind = HERD_TL_COLL,
                         .rank = req->owner->id,
                         .node = sim_node_of(w, req->owner->id),
                         .group = req->group,
                         .seq = a->seq,
                         .coll = a->coll,
                         .algo = req->algo,
                         .dtype = a->dtype,
                         .op = a->op,
                         .count = a->count,
                         .peer = a->root,
                         .start_ns = req->t_post,
                         .end_ns = w->now,
                         .label = a->label,
                         .status = req->status};
    rec.bytes = core_args_send_count(a, req->gsize) * herd_dtype_size(a->dtype);
    if (req->kind != SIM_REQ_COLL)
        rec.peer = req->peer_world;
    if (req->tl_cb)
        req->tl_cb(&rec, req->tl_arg);
}

void sim_rank_die(sim_world_t *w, sim_rank_t *r)
{
    if (r->state == SIM_RANK_DEAD || r->state == SIM_RANK_EXITED)
        return;
    r->state = SIM_RANK_DEAD;
    w->dead[r->id] = 1;
    r->t_end = w->now;
    w->live--;
    if (w->first_failed < 0) {
        w->first_failed = r->id;
        w->first_exit_code = -9; /* as if killed */
    }
}

static void handle_event(sim_world_t *w, const sim_ev_t *ev)
{
    switch (ev->type) {
    case SIM_EV_RESUME: {
        sim_rank_t *r = &w->ranks[ev->a];
        if (r->state == SIM_RANK_READY || r->state == SIM_RANK_SLEEP)
            resume(w, r);
        break;
    }
    case SIM_EV_STEP_DONE:
        sim_exec_step_done(w, ev->p, ev->a);
        sim_world_drain(w);
        break;
    case SIM_EV_DEATH:
        sim_rank_die(w, &w->ranks[ev->a]);
        break;
    case SIM_EV_TIMEOUT:
        w->timeouts_queued--;
        sim_inst_timeout(w, ev->p);
        break;
    case SIM_EV_WAKE: {
        sim_rank_t *r = &w->ranks[ev->a];
        if ((uintptr_t)ev->p != r->wake_pending) {
            w->timeouts_queued--; /* abandoned by an early wake */
            break;
        }
        r->wake_pending = 0;
        if (r->state == SIM_RANK_SLEEP)
            resume(w, r);
        break;
    }
    case SIM_EV_POLL: {
        w->timeouts_queued--;
        sim_rank_t *r = &w->ranks[ev->a];
        if (r->state == SIM_RANK_SLEEP &&
            (uintptr_t)ev->p == (uintptr_t)r->poll_gen)
            resume(w, r);
        break;
    }
    }
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every few thousand events: an interrupt asked for
 * (opts.stop) ends the run; the progress callback is due. Never in the
 * loop's cost otherwise. */
static void watch(sim_world_t *w)
{
    const herd_sim_opts_t *o = &w->opts;
    if (o->stop && *o->stop) {
        w->interrupted = 1;
        w->end_status = HERD_ERR_ABORTED;
        return;
    }
    if (!o->progress_cb)
        return;
    double now = wall_s();
    if (now < w->wall_next)
        return;
    w->wall_next = now + (o->progress_s > 0 ? o->progress_s : 0.5);
    int done = 0;
    for (int i = 0; i < w->n; i++)
        done += w->ranks[i].state == SIM_RANK_EXITED || w->dead[i];
    herd_sim_progress_t p = {.events = w->events,
                             .now_ns = w->now,
                             .steps_done = w->steps_done,
                             .steps_total = w->steps_total,
                             .ranks = w->n,
                             .ranks_done = done,
                             .wall_s = now - w->wall0};
    o->progress_cb(&p, o->progress_arg);
}

static void run_loop(sim_world_t *w)
{
    w->wall0 = wall_s();
    w->wall_next =
        w->wall0 + (w->opts.progress_s > 0 ? w->opts.progress_s : 0.5);
    int watched = w->opts.stop || w->opts.progress_cb;
    uint64_t next_watch = 4096;
    while (w->live > 0 && w->end_status == HERD_OK) {
        if (watched && w->events >= next_watch) {
            next_watch = w->events + 4096;
            watch(w);
            if (w->end_status != HERD_OK)
                break;
        }
        uint64_t tn = sim_net_next_time(w->net);
        uint64_t tq = sim_evq_next_time(&w->q);
        if (w->sym && w->sym->npend && (tn < tq ? tn : tq) > w->now) {
            /* the instant is over: collectives posted in it start */
            sim_sym_instant_end(w);
            continue;
        }
        if (tn == UINT64_MAX && w->q.n <= w->timeouts_queued) {
            w->end_status = HERD_ERR_HANG;
            break;
        }
        if (tn <= tq) {
            w->now = tn;
            sim_net_advance(w->net, tn);
            sim_world_drain(w);
            continue;
        }
        sim_ev_t ev;
        sim_evq_pop(&w->q, &ev);
        w->now = ev.time;
        if (sim_event(w))
            break; /* past the memory budget */
        handle_event(w, &ev);
    }
}

sim_req_t *sim_req_new(sim_comm_t *c, sim_req_kind_t kind,
                       const core_coll_args_t *a)
{
    sim_req_t *req = calloc(1, sizeof(*req));
    if (!req)
        return NULL;
    sim_rank_t *r = c->r;
    req->base.ops = &sim_engine_ops;
    req->base.comm = &c->base;
    req->kind = kind;
    req->owner = r;
    req->tl_cb = c->base.tl_cb;
    req->tl_arg = c->base.tl_arg;
    req->args = *a;
    if (a->label)
        snprintf(req->label, sizeof(req->label), "%s", a->label);
    req->args.label = req->label[0] ? req->label : NULL;
    req->algo = a->algo;
    req->group = c->base.group_id;
    req->gsize = c->base.size;
    req->peer_world = -1;
    req->t_post = c->w->now;
    req->member = -1;
    req->next_all = r->reqs;
    if (r->reqs)
        r->reqs->prev_all = req;
    r->reqs = req;
    return req;
}

void sim_req_release(sim_req_t *req)
{
    sim_rank_t *r = req->owner;
    if (req->prev_all)
        req->prev_all->next_all = req->next_all;
    else
        r->reqs = req->next_all;
    if (req->next_all)
        req->next_all->prev_all = req->prev_all;
    free(req);
}

/* The end of a run: every rank that has not returned is resumed with the
 * run marked over, so its calls fail and it can unwind and free what it
 * holds (dead ranks too: the simulated process is gone either way). */
void sim_world_abort_ranks(sim_world_t *w)
{
    w->aborting = 1;
    for (int i = 0; i < w->n; i++) {
        sim_rank_t *r = &w->ranks[i];
        if (r->state == SIM_RANK_EXITED || !r->ctx.stack_lo)
            continue;
        if (r->abort_calls > SIM_ABORT_CALL_LIMIT)
            continue;
        sim_ctx_resume(&w->sched, &r->ctx);
        stack_check(w, r);
    }
}

void sim_world_loop(sim_world_t *w)
{
    run_loop(w);
    /* a diagnosis needs every member's state, not a representative's */
    if (w->sym)
        sim_sym_settle(w);
}

/* A compute of `seconds`: virtual ns scaled by the rank's slowdown and
 * a seeded jitter draw (the factor used goes to *f). */
static uint64_t compute_ns(sim_rank_t *r, double seconds, double *f)
{
    const herd_sim_opts_t *o = &r->w->opts;
    *f =
        r->compute_factor * sim_rng_jitter(&r->rng, o->jitter, o->jitter_sigma);
    double ns = seconds * 1e9 * *f;
    return ns >= 1.8e19 ? UINT64_MAX / 2 : (uint64_t)llround(ns);
}

static void compute_record(sim_rank_t *r, uint64_t t0, const char *label)
{
    herd_tl_rec_t rec = {.kind = HERD_TL_COMPUTE,
                         .rank = r->id,
                         .node = sim_node_of(r->w, r->id),
                         .peer = -1,
                         .start_ns = t0,
                         .end_ns = r->w->now,
                         .label = label};
    core_comm_timeline(&r->world_comm->base, &rec);
}

/* A request of r still in flight (posted, not complete), or NULL: on a
 * CPU backend its progress takes cycles from compute
 * (cluster.comm_cpu_slowdown, docs/network-model.md). */
static sim_req_t *inflight(const sim_rank_t *r)
{
    for (sim_req_t *q = r->reqs; q; q = q->next_all)
        if (!q->done)
            return q;
    return NULL;
}

/* Sleep until now + dur, or until q completes if that is sooner (q NULL:
 * the full dur). Returns the status of the rank afterwards. */
static herd_status_t sleep_or_req(sim_rank_t *r, uint64_t dur, sim_req_t *q)
{
    sim_world_t *w = r->w;
    uintptr_t gen = ++r->wake_gen;
    herd_status_t st =
        sim_push(w, w->now + dur, q ? SIM_EV_WAKE : SIM_EV_RESUME,
                 (uint32_t)r->id, q ? (void *)gen : NULL);
    if (st != HERD_OK)
        return st;
    if (q) {
        r->wake_pending = gen;
        r->waiting = q;
    }
    r->state = SIM_RANK_SLEEP;
    sim_ctx_yield(&r->ctx, &w->sched);
    r->waiting = NULL;
    if (q && r->wake_pending == gen) {
        /* woken by the request: the timer left queued is not progress */
        r->wake_pending = 0;
        w->timeouts_queued++;
    }
    return abort_check(r) ? HERD_ERR_ABORTED : HERD_OK;
}

/* The rank starts or stops computing: on a CPU backend its network
 * processing is slower meanwhile (cluster.compute_comm_slowdown;
 * sim_net_rank_busy). */
static herd_status_t net_busy(sim_rank_t *r, int busy)
{
    if (!(r->w->opts.cluster.compute_comm_slowdown > 0))
        return HERD_OK;
    return sim_net_rank_busy(r->w->net, r->w->now, r->id, busy);
}

static uint64_t ns_of(double ns)
{
    return ns >= 1.8e19 ? UINT64_MAX / 2 : (uint64_t)llround(ns);
}

/* Compute while communication may be in flight: at 1/(1 + slowdown) of
 * the speed as long as any request of the rank is, at full speed once
 * none is. Requests only complete while the rank computes (it posts
 * none), so waking at each completion and taking the next one in flight
 * follows the rate exactly. */
static herd_status_t compute_slowed(sim_rank_t *r, double seconds,
                                    const char *label, double slowdown)
{
    double f;
    uint64_t t0 = r->w->now;
    double left = (double)compute_ns(r, seconds, &f); /* at full speed */
    herd_status_t st = net_busy(r, 1);
    if (st != HERD_OK)
        return st;
    while (st == HERD_OK && left >= 0.5) {
        sim_req_t *q = inflight(r);
        double k = q ? 1 + slowdown : 1;
        uint64_t t1 = r->w->now;
        st = sleep_or_req(r, ns_of(left * k), q);
        left = q ? left - (double)(r->w->now - t1) / k : 0;
    }
    herd_status_t idle = net_busy(r, 0);
    if (st == HERD_OK)
        st = idle;
    if (st == HERD_OK)
        compute_record(r, t0, label);
    return st;
}

herd_status_t sim_rank_compute(sim_rank_t *r, double seconds, const char *label)
{
    sim_world_t *w = r->w;
    if (abort_check(r))
        return HERD_ERR_ABORTED;
    double slow = w->opts.cluster.comm_cpu_slowdown;
    if (slow > 0 && inflight(r))
        return compute_slowed(r, seconds, label, slow);
    double f;
    uint64_t t0 = w->now, dur = compute_ns(r, seconds, &f);
    herd_status_t st = net_busy(r, 1);
    if (st != HERD_OK)
        return st;
    if ((st = sim_push(w, t0 + dur, SIM_EV_RESUME, (uint32_t)r->id, NULL))) {
        net_busy(r, 0);
        return st;
    }
    r->state = SIM_RANK_SLEEP;
    sim_ctx_yield(&r->ctx, &w->sched);
    st = net_busy(r, 0);
    if (abort_check(r))
        return HERD_ERR_ABORTED;
    if (st != HERD_OK)
        return st;
    compute_record(r, t0, label);
    return HERD_OK;
}

/* Like sim_rank_compute, but the rank wakes as soon as `req` completes
 * (sim_req_complete wakes a sleeping rank that waits on it; the timer
 * then left queued is recognised by its number and ignored). Only the
 * compute time that elapsed is recorded and reported. */
herd_status_t sim_rank_compute_until(sim_rank_t *r, double seconds,
                                     sim_req_t *req, const char *label,
                                     double *done_out)
{
    sim_world_t *w = r->w;
    if (abort_check(r))
        return HERD_ERR_ABORTED;
    if (req->done) {
        *done_out = 0;
        return HERD_OK;
    }
    double f;
    uint64_t t0 = w->now, dur = compute_ns(r, seconds, &f);
    /* the request it waits on is in flight all along: slower compute on a
     * CPU backend (see compute_slowed) */
    double slow = w->opts.cluster.comm_cpu_slowdown;
    if (slow > 0) {
        dur = ns_of((double)dur * (1 + slow));
        f *= 1 + slow;
    }
    uintptr_t gen = ++r->wake_gen;
    herd_status_t st = net_busy(r, 1);
    if (st != HERD_OK)
        return st;
    if ((st = sim_push(w, t0 + dur, SIM_EV_WAKE, (uint32_t)r->id,
                       (void *)gen))) {
        net_busy(r, 0);
        return st;
    }
    r->wake_pending = gen;
    r->waiting = req;
    r->state = SIM_RANK_SLEEP;
    sim_ctx_yield(&r->ctx, &w->sched);
    r->waiting = NULL;
    st = net_busy(r, 0);
    if (r->wake_pending == gen) {
        /* woken by the request: the timer still queued changes nothing,
         * so it must not hold off the hang check */
        r->wake_pending = 0;
        w->timeouts_queued++;
    }
    if (abort_check(r))
        return HERD_ERR_ABORTED;
    if (st != HERD_OK)
        return st;
    uint64_t el = w->now - t0;
    if (el > 0)
        compute_record(r, t0, label);
    *done_out = el >= dur || !(f > 0) ? seconds : (double)el / (1e9 * f);
    return HERD_OK;
}

/* Park a rank that died inside one of its own calls. */
herd_status_t sim_rank_park_dead(sim_rank_t *r)
{
    while (!r->w->aborting)
        sim_ctx_yield(&r->ctx, &r->w->sched);
    abort_check(r);
    return HERD_ERR_ABORTED;
}

int sim_rank_aborting(sim_rank_t *r)
{
    return abort_check(r);
}

/* The first unfinished test is free; in a polling loop the rank sleeps
 * until the next thing happens (at least 1 us), so time moves on and a
 * loop that can never finish is still found as a hang. */
void sim_rank_poll(sim_rank_t *r, sim_req_t *req)
{
    sim_world_t *w = r->w;
    if (++r->poll_streak < 2)
        return;
    if (w->sym) /* the next event depends on what was posted before */
        sim_sym_flush(w);
    uint64_t tn = sim_net_next_time(w->net), tq = sim_evq_next_time(&w->q);
    uint64_t next = tn < tq ? tn : tq;
    uint64_t t = w->now + 1000;
    if (next != UINT64_MAX && next > t)
        t = next;
    if (sim_push(w, t, SIM_EV_POLL, (uint32_t)r->id,
                 (void *)(uintptr_t)++r->poll_gen) != HERD_OK)
        return;
    /* waiting is set so a diagnosis shows what the poller waits for */
    r->state = SIM_RANK_SLEEP;
    r->waiting = req;
    sim_ctx_yield(&r->ctx, &w->sched);
    r->waiting = NULL;
}

int sim_rank_stuck(const sim_rank_t *r)
{
    return r->waiting && !r->waiting->done &&
           (r->state == SIM_RANK_BLOCKED || r->state == SIM_RANK_SLEEP);
}
