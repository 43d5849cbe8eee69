/* sim/sym.c - the symmetry shortcut (see sim/sym.h for what it is).
 *
 * Why it is exact: on a non-blocking fabric with one NIC per GPU (or
 * none shared), no per-rank or per-link override, no token bucket (its
 * state would carry from before a regime into the replay), no jitter, no
 * fault and no compute_comm_slowdown (links that change with what each
 * rank computes),
 * shifting every rank by one node (g = gpus_per_node ranks) maps the
 * network onto itself. A collective whose members' schedules are
 * rotations of one another, counts included (core_sched_rotational), on
 * the world group, whose members of one class (equal modulo g) all post
 * at the same instant, then runs the same for every member of a class
 * as for its representative (member < g), so only the representatives
 * are simulated: their flows go to the real peer (7 -> 8 crosses 7's and
 * 8's NICs, which nothing else uses) and are delivered to the peer's
 * representative (0, as if from p - 1). When a representative is done,
 * every member of its class is done, at that instant.
 *
 * That holds only while nothing else shares the links, so the shortcut
 * runs in a regime that starts with the network empty and admits only
 * such collectives. Anything else posted during the regime (another
 * algorithm, a point-to-point op, an uneven class, a mismatch), and the
 * end of a run that must be diagnosed, first materialises it: the
 * regime's collectives are simulated again in full, in a fresh network,
 * from the regime's start up to now (their classes start at the instants
 * they started), and the representatives are dropped. That costs what
 * the full simulation would have, never a different result.
 *
 * Posts of a candidate are collected during the instant and decided and
 * started at its end, once every member that posts at that instant has:
 * events at one instant commute (a flow that starts a little later in
 * the same nanosecond moves the same bytes), which tests/sim_identity.c
 * and tests/sim_symmetry.c check on every shipped scenario. What does
 * not commute: flows queued on one connection (FIFO), and a polling
 * rank's look at the next event; so a post that starts at once, a
 * point-to-point op and a poll first start what was deferred
 * (sim_sym_flush). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/exec_impl.h"
#include "sim/sym.h"

#define SIM_INST_POSTED 1
#define SIM_INST_DONE 2

static int grow(void **v, size_t *cap, size_t n, size_t esize)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*v, c * esize);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

herd_status_t sim_sym_init(sim_world_t *w)
{
    const herd_sim_opts_t *o = &w->opts;
    const char *env = getenv("HERD_SIM_SYMMETRY");
    int g = w->gpus_per_node, nics = o->cluster.nics_per_node;
    if ((env && strcmp(env, "0") == 0) || w->steplog || o->real_buffers ||
        o->jitter != HERD_JITTER_NONE || o->nranks_overrides ||
        o->nlink_overrides || o->nfaults || o->cluster.inter.burst ||
        o->cluster.compute_comm_slowdown > 0 ||
        o->cluster.topo != HERD_TOPO_NONBLOCKING || (nics != 0 && nics != g) ||
        g < 1 || w->n % g != 0 || w->n / g < 2)
        return HERD_OK;
    sim_sym_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->cls = calloc((size_t)g, sizeof(*s->cls)))) {
        free(s);
        return HERD_ERR_NO_MEMORY;
    }
    s->g = g;
    s->p = w->n;
    w->sym = s;
    return HERD_OK;
}

void sim_sym_fini(sim_world_t *w)
{
    sim_sym_t *s = w->sym;
    if (!s)
        return;
    const char *env = getenv("HERD_SIM_SYMMETRY");
    if (env && strcmp(env, "stats") == 0) /* tests: did it apply? */
        fprintf(stderr,
                "herd sim: symmetry: %llu collective(s) ran on %d "
                "representatives of %d ranks, %llu materialised\n",
                (unsigned long long)s->nsym, s->g, s->p,
                (unsigned long long)s->nbreaks);
    for (size_t i = 0; i < s->nz; i++)
        sim_exec_destroy(s->zombies[i]);
    free(s->zombies);
    free(s->insts);
    free(s->starts);
    free(s->pend);
    free(s->cls);
    free(s->done);
    free(s);
    w->sym = NULL;
}

/* Some member of an instance other than a symmetric one has an executor
 * (or will never finish: a mismatch): its flows could share links. */
static int full_busy(const sim_world_t *w, const sim_inst_t *self)
{
    for (const sim_inst_t *i = w->all_insts; i; i = i->next_all)
        if (i != self && !(i->sym && i->sym->mode != SIM_SYM_FULL) &&
            i->ndone < i->nposted)
            return 1;
    return 0;
}

/* The network carries nothing and no executor may start a flow. */
static int quiet(sim_world_t *w, const sim_inst_t *self)
{
    return sim_net_next_time(w->net) == UINT64_MAX && !full_busy(w, self);
}

herd_status_t sim_sym_candidate(sim_world_t *w, sim_inst_t *inst,
                                int rotational)
{
    sim_sym_t *s = w->sym;
    if (!rotational || inst->world_ranks || inst->p != s->p)
        return HERD_OK;
    if (s->ninsts == 0 && !quiet(w, inst))
        return HERD_OK; /* as before: started at its post */
    sim_isym_t *y = calloc(1, sizeof(*y));
    if (!y)
        return HERD_ERR_NO_MEMORY;
    y->req = calloc((size_t)inst->p, sizeof(*y->req));
    y->pend = malloc((size_t)inst->p * sizeof(*y->pend));
    if (!y->req || !y->pend) {
        free(y->req);
        free(y->pend);
        free(y);
        return HERD_ERR_NO_MEMORY;
    }
    y->mode = SIM_SYM_UNDECIDED;
    inst->sym = y;
    return HERD_OK;
}

herd_status_t sim_sym_post(sim_world_t *w, sim_inst_t *inst, int m,
                           sim_req_t *req)
{
    sim_sym_t *s = w->sym;
    sim_isym_t *y = inst->sym;
    if (!y->npend && !y->proto.owner)
        y->proto = *req; /* what a replay needs of any member's request */
    y->req[m] = req;
    y->pend[y->npend++] = m;
    if (!y->listed) {
        if (grow((void **)&s->pend, &s->pcap, s->npend, sizeof(*s->pend)))
            return HERD_ERR_NO_MEMORY;
        s->pend[s->npend++] = inst;
        y->listed = 1;
    }
    return HERD_OK;
}

int sim_sym_held(const sim_world_t *w, const sim_inst_t *inst)
{
    if (!inst->sym || !inst->sym->held)
        return 0;
    return w->sym->replaying ? 2 : 1;
}

/* Every class among `m[0..n)` is there whole. */
static int whole_classes(sim_sym_t *s, const int *m, int n)
{
    int ok = 1, per = s->p / s->g;
    for (int i = 0; i < n; i++)
        s->cls[m[i] % s->g]++;
    for (int i = 0; i < n; i++)
        ok &= s->cls[m[i] % s->g] == (uint32_t)per;
    for (int i = 0; i < n; i++)
        s->cls[m[i] % s->g] = 0;
    return ok;
}

static void fail(sim_world_t *w, herd_status_t st)
{
    if (st != HERD_OK && w->end_status == HERD_OK)
        w->end_status = st;
}

/* The representatives of the classes in y->pend start, in the order
 * their first members posted. */
static void start_classes(sim_world_t *w, sim_inst_t *inst, int n)
{
    sim_sym_t *s = w->sym;
    sim_isym_t *y = inst->sym;
    for (int i = 0; i < n; i++) {
        int c = y->pend[i] % s->g;
        if (inst->execs[c] || (inst->posted[c] & SIM_INST_DONE))
            continue;
        if (grow((void **)&s->starts, &s->scap, s->nstarts,
                 sizeof(*s->starts))) {
            fail(w, HERD_ERR_NO_MEMORY);
            return;
        }
        s->starts[s->nstarts++] =
            (sim_sym_start_t){.t = w->now, .inst = inst, .cls = c};
        herd_status_t st = sim_coll_start_member(w, inst, c, y->req[c]);
        if (st != HERD_OK) {
            fail(w, st);
            return;
        }
        /* progress: the class's other members' steps, done as its own */
        if (inst->execs[c])
            w->steps_total +=
                (uint64_t)inst->execs[c]->nsteps * (uint64_t)(s->p / s->g - 1);
    }
}

static void hold(sim_world_t *w, sim_inst_t *inst)
{
    sim_sym_t *s = w->sym;
    if (grow((void **)&s->insts, &s->icap, s->ninsts, sizeof(*s->insts))) {
        fail(w, HERD_ERR_NO_MEMORY);
        return;
    }
    if (s->ninsts == 0)
        s->t0 = w->now;
    s->insts[s->ninsts++] = inst;
    s->nactive++;
    s->nsym++;
    inst->sym->held = 1;
}

void sim_sym_instant_end(sim_world_t *w)
{
    sim_sym_t *s = w->sym;
    for (size_t i = 0; i < s->npend; i++) {
        sim_inst_t *inst = s->pend[i];
        sim_isym_t *y = inst->sym;
        int n = y->npend;
        y->npend = 0;
        y->listed = 0;
        int whole =
            inst->mismatch == SIM_DIAG_NONE && whole_classes(s, y->pend, n);
        if (y->mode == SIM_SYM_UNDECIDED) {
            if (whole && (s->ninsts > 0 || quiet(w, inst))) {
                y->mode = SIM_SYM_ON;
                hold(w, inst);
            } else {
                sim_sym_break(w);
                y->mode = SIM_SYM_FULL;
            }
        } else if (y->mode == SIM_SYM_ON && !whole) {
            sim_sym_break(w); /* now FULL, with the rest of the regime */
        }
        if (y->mode == SIM_SYM_ON) {
            start_classes(w, inst, n);
            continue;
        }
        for (int k = 0; k < n && w->end_status == HERD_OK; k++)
            fail(w, sim_coll_start_member(w, inst, y->pend[k],
                                          y->req[y->pend[k]]));
    }
    s->npend = 0;
}

/* The regime is over: its instances may go. */
static void release(sim_world_t *w)
{
    sim_sym_t *s = w->sym;
    size_t n = s->ninsts;
    s->ninsts = s->nstarts = s->nactive = 0;
    for (size_t i = 0; i < n; i++) {
        s->insts[i]->sym->held = 0;
        sim_inst_maybe_free(w, s->insts[i]); /* may free it */
    }
}

int sim_sym_member_done(sim_world_t *w, sim_inst_t *inst, int m,
                        herd_status_t st)
{
    sim_sym_t *s = w->sym;
    sim_isym_t *y = inst->sym;
    if (s->replaying) {
        sim_exec_destroy(inst->execs[m]);
        inst->execs[m] = NULL;
        if (y->saved[m] & SIM_INST_DONE)
            return 1; /* done in the regime already, at this time */
        if (!grow((void **)&s->done, &s->dcap, s->ndone, sizeof(*s->done)))
            s->done[s->ndone++] = (sim_sym_done_t){inst, m, st};
        return 1;
    }
    if (y->mode != SIM_SYM_ON)
        return 0;
    sim_exec_t *x = inst->execs[m];
    inst->execs[m] = NULL;
    sim_exec_destroy(x);
    for (int q = m; q < inst->p; q += s->g) {
        inst->posted[q] |= SIM_INST_DONE;
        inst->ndone++;
        sim_req_complete(w, y->req[q], st);
    }
    if (inst->ndone == inst->p && --s->nactive == 0)
        release(w);
    else
        sim_inst_maybe_free(w, inst);
    return 1;
}

/* The main queue without the dropped representatives' events, then the
 * replay's (later in the order at equal times: events at one instant
 * commute). */
static herd_status_t merge_queues(sim_world_t *w, sim_evq_t *mainq)
{
    sim_evq_t out;
    memset(&out, 0, sizeof(out));
    out.next_seq =
        mainq->next_seq > w->q.next_seq ? mainq->next_seq : w->q.next_seq;
    herd_status_t st = HERD_OK;
    sim_ev_t ev;
    while (sim_evq_pop(mainq, &ev))
        if (!(ev.type == SIM_EV_STEP_DONE &&
              ((const sim_exec_t *)ev.p)->zombie) &&
            st == HERD_OK)
            st = sim_evq_push(&out, ev.time, ev.type, ev.a, ev.p);
    while (sim_evq_pop(&w->q, &ev))
        if (st == HERD_OK)
            st = sim_evq_push(&out, ev.time, ev.type, ev.a, ev.p);
    sim_evq_fini(mainq);
    sim_evq_fini(&w->q);
    w->q = out;
    return st;
}

/* The regime's collectives from its start to now in a fresh network,
 * every member, with no program running: events up to and at `tv`. */
static void replay(sim_world_t *w, uint64_t tv)
{
    sim_sym_t *s = w->sym;
    size_t i = 0;
    w->now = s->t0;
    while (w->end_status == HERD_OK) {
        uint64_t tn = sim_net_next_time(w->net);
        uint64_t tq = sim_evq_next_time(&w->q);
        uint64_t t = tn < tq ? tn : tq;
        if (i < s->nstarts && t > s->starts[i].t) {
            /* a class started at the end of its instant */
            const sim_sym_start_t *a = &s->starts[i++];
            w->now = a->t;
            sim_isym_t *y = a->inst->sym;
            for (int m = a->cls; m < a->inst->p; m += s->g) {
                sim_req_t *req =
                    (y->saved[m] & SIM_INST_DONE) ? &y->proto : y->req[m];
                a->inst->posted[m] = SIM_INST_POSTED;
                fail(w, sim_coll_start_member(w, a->inst, m, req));
            }
            continue;
        }
        if (t == UINT64_MAX || t > tv)
            break;
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
        if (ev.type == SIM_EV_STEP_DONE) {
            sim_exec_step_done(w, ev.p, ev.a);
            sim_world_drain(w);
        }
    }
}

void sim_sym_break(sim_world_t *w)
{
    sim_sym_t *s = w->sym;
    if (!s || s->ninsts == 0 || s->replaying)
        return;
    s->nbreaks++;
    uint64_t tv = w->now;
    /* the representatives go; what the regime's instances held for them
     * (early messages, wait bytes, shared arrays) too */
    for (size_t i = 0; i < s->ninsts; i++) {
        sim_inst_t *inst = s->insts[i];
        sim_isym_t *y = inst->sym;
        for (int c = 0; c < s->g; c++) {
            sim_exec_t *x = inst->execs[c];
            if (!x)
                continue;
            inst->execs[c] = NULL;
            x->zombie = 1;
            if (grow((void **)&s->zombies, &s->zcap, s->nz,
                     sizeof(*s->zombies))) {
                fail(w, HERD_ERR_NO_MEMORY);
                return;
            }
            s->zombies[s->nz++] = x;
        }
        for (int m = 0; m < inst->p; m++)
            for (sim_early_t *e = inst->early[m], *n; e; e = n) {
                n = e->next;
                free(e->payload);
                free(e);
            }
        memset(inst->early, 0, (size_t)inst->p * sizeof(*inst->early));
        inst->inflight = 0;
        sim_exec_blobs_free(inst);
        y->mode = SIM_SYM_FULL;
        if (!y->saved && !(y->saved = malloc((size_t)inst->p))) {
            fail(w, HERD_ERR_NO_MEMORY);
            return;
        }
        memcpy(y->saved, inst->posted, (size_t)inst->p);
        memset(inst->posted, 0, (size_t)inst->p);
    }
    /* a fresh network; the old one held only the representatives' flows */
    sim_net_t *net = NULL;
    herd_status_t st = sim_net_create(&w->opts, w->n, sim_net_cb, w, &net);
    if (st != HERD_OK) {
        fail(w, st);
        return;
    }
    sim_net_destroy(w->net);
    w->net = net;
    sim_evq_t mainq = w->q;
    memset(&w->q, 0, sizeof(w->q));
    w->q.next_seq = mainq.next_seq;
    sim_exec_t **work = w->work;
    uint32_t *work_step = w->work_step;
    size_t nwork = w->nwork, work_cap = w->work_cap;
    w->work = NULL;
    w->work_step = NULL;
    w->nwork = w->work_cap = 0;
    s->replaying = 1;
    s->ndone = 0;
    replay(w, tv);
    s->replaying = 0;
    free(w->work);
    free(w->work_step);
    w->work = work;
    w->work_step = work_step;
    w->nwork = nwork;
    w->work_cap = work_cap;
    w->now = tv;
    fail(w, merge_queues(w, &mainq));
    /* members posted in the regime keep their flags; those the replay
     * finished at this instant are done now */
    for (size_t i = 0; i < s->ninsts; i++) {
        sim_inst_t *inst = s->insts[i];
        memcpy(inst->posted, inst->sym->saved, (size_t)inst->p);
    }
    size_t n = s->ninsts;
    sim_inst_t **held = s->insts;
    s->insts = NULL;
    s->icap = 0;
    s->ninsts = s->nstarts = s->nactive = 0;
    for (size_t k = 0; k < s->ndone; k++) {
        sim_sym_done_t *d = &s->done[k];
        d->inst->posted[d->m] |= SIM_INST_DONE;
        d->inst->ndone++;
        sim_req_complete(w, d->inst->sym->req[d->m], d->st);
    }
    s->ndone = 0;
    for (size_t i = 0; i < n; i++) {
        held[i]->sym->held = 0;
        sim_inst_maybe_free(w, held[i]);
    }
    free(held);
}

void sim_sym_flush(sim_world_t *w)
{
    sim_sym_t *s = w->sym;
    sim_sym_break(w);
    if (!s->npend)
        return;
    /* the members posted so far this instant start first, as they would
     * have at their posts: flows of one connection keep their order */
    for (size_t i = 0; i < s->npend; i++)
        if (s->pend[i]->sym->mode == SIM_SYM_UNDECIDED)
            s->pend[i]->sym->mode = SIM_SYM_FULL;
    sim_sym_instant_end(w);
}

void sim_sym_settle(sim_world_t *w)
{
    if (w->sym)
        sim_sym_break(w);
}
