/* sim/coll.c - collective instances: the ranks of a group that post the
 * collective with the same sequence number meet in one sim_inst_t. The
 * first poster's arguments are the reference (op, count, dtype, root,
 * algorithm, channels, chunk), later posters are checked against them
 * like TORCH_DISTRIBUTED_DEBUG=DETAIL does, and a mismatched collective is
 * never executed. Each member lowers its own schedule when it posts,
 * except where the members' schedules are rotations of one another and
 * offsets do not matter (phantom buffers): then only the first poster
 * lowers, and the others' executors are derived from its (far cheaper
 * for a large ring; the results are the same), with their own counts
 * where those alone differ (ring all_reduce split unevenly). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sym.h"

#define SIM_INST_POSTED 1
#define SIM_INST_DONE 2
#define SIM_INST_BAD 4

static uint64_t inst_key(int group, uint64_t seq)
{
    return ((uint64_t)(uint32_t)group << 40) ^ seq;
}

int sim_inst_world_rank(const sim_inst_t *inst, int member)
{
    return inst->world_ranks ? inst->world_ranks[member] : member;
}

static int has_root(herd_coll_t c)
{
    return c == HERD_COLL_BROADCAST || c == HERD_COLL_REDUCE ||
           c == HERD_COLL_GATHER || c == HERD_COLL_SCATTER;
}

static int has_op(herd_coll_t c)
{
    return c == HERD_COLL_ALL_REDUCE || c == HERD_COLL_REDUCE ||
           c == HERD_COLL_REDUCE_SCATTER;
}

static void inst_free(sim_inst_t *inst)
{
    for (int m = 0; m < inst->p; m++) {
        if (inst->execs[m])
            sim_exec_destroy(inst->execs[m]);
        for (sim_early_t *e = inst->early[m], *n; e; e = n) {
            n = e->next;
            free(e->payload);
            free(e);
        }
    }
    sim_exec_blobs_free(inst);
    if (inst->sym) {
        free(inst->sym->req);
        free(inst->sym->pend);
        free(inst->sym->saved);
        free(inst->sym);
    }
    free(inst->world_ranks);
    free(inst->vcounts);
    free(inst->posted);
    free(inst->execs);
    free(inst->early);
    free(inst);
}

static herd_algo_t resolve_algo(const sim_comm_t *c, const core_coll_args_t *a)
{
    /* the *_v kinds and monitored_barrier have one schedule (direct),
     * which the NCCL model stands for too (NCCL runs them as grouped
     * send/recv) */
    if ((core_coll_is_v(a->coll) || a->coll == HERD_COLL_MONITORED_BARRIER) &&
        (a->algo == HERD_ALGO_AUTO || a->algo == HERD_ALGO_NCCL))
        return HERD_ALGO_DIRECT;
    /* gloo runs them as direct sends and receives too, under its own
     * transport: the "gloo" algorithm keeps it (sim/gloo_lower.c) */
    if (a->algo != HERD_ALGO_AUTO)
        return a->algo;
    if (c->w->opts.nccl_model) /* AUTO means NCCL (sim/nccl_model.c) */
        return HERD_ALGO_NCCL;
    uint64_t bytes = a->count * herd_dtype_size(a->dtype);
    return core_sched_pick(a->coll, c->base.size, bytes);
}

static int vcounts_init(sim_inst_t *inst, const core_coll_args_t *a);
static int sym_rotational(sim_world_t *w, sim_inst_t *inst);

static herd_status_t inst_new(sim_world_t *w, sim_comm_t *c,
                              const core_coll_args_t *a, sim_inst_t **out)
{
    int p = c->base.size;
    herd_algo_t algo = resolve_algo(c, a);
    if (!core_sched_is_library(algo) && !core_sched_supports(algo, a->coll))
        return core_comm_error(&c->base, HERD_ERR_UNSUPPORTED,
                               "%s: algorithm %s does not implement it",
                               herd_coll_name(a->coll), herd_algo_name(algo));
    sim_inst_t *inst = calloc(1, sizeof(*inst));
    if (!inst)
        return HERD_ERR_NO_MEMORY;
    inst->posted = calloc((size_t)p, 1);
    inst->execs = calloc((size_t)p, sizeof(*inst->execs));
    inst->early = calloc((size_t)p, sizeof(*inst->early));
    if (c->base.world_ranks) {
        inst->world_ranks = malloc((size_t)p * sizeof(int));
        if (inst->world_ranks)
            memcpy(inst->world_ranks, c->base.world_ranks,
                   (size_t)p * sizeof(int));
    }
    inst->p = p;
    inst->group = c->base.group_id;
    inst->seq = a->seq;
    inst->key = inst_key(inst->group, inst->seq);
    inst->args = *a;
    inst->args.label = NULL;
    inst->args.vcounts = inst->args.vrecv = NULL; /* the caller's */
    inst->algo = algo;
    inst->rdv = algo == HERD_ALGO_GLOO;
    inst->first_rank = c->base.rank;
    inst->t_first = w->now;
    inst->timeout_s = a->timeout_s > 0 ? a->timeout_s : c->base.timeout_s;
    herd_status_t st = HERD_ERR_NO_MEMORY;
    int vok = vcounts_init(inst, a);
    if (inst->posted && inst->execs && inst->early && vok &&
        (inst->world_ranks || !c->base.world_ranks))
        st = sim_htab_put(&w->insts, inst->key, inst);
    if (st != HERD_OK) {
        inst_free(inst);
        return st;
    }
    inst->in_table = 1;
    inst->next_all = w->all_insts;
    if (w->all_insts)
        w->all_insts->prev_all = inst;
    w->all_insts = inst;
    double t = inst->timeout_s * 1e9;
    if (t < 1.8e19 && sim_push(w, w->now + (uint64_t)llround(t), SIM_EV_TIMEOUT,
                               0, inst) == HERD_OK)
        inst->timeout_queued = 1;
    if (w->sym &&
        sim_sym_candidate(w, inst, sym_rotational(w, inst)) != HERD_OK)
        return HERD_ERR_NO_MEMORY; /* the instance stays for the teardown */
    *out = inst;
    return HERD_OK;
}

/* The *_v kinds' counts, kept to check later posters against:
 * all_gather_v and reduce_scatter_v need the same array on every rank;
 * all_to_all_v's sends and receives must pair up (what a sends b is what
 * b expects from a), checked while both are known: the matrices of sends
 * and receives (rows: members), for groups up to SIM_V_MATRIX ranks. */
#define SIM_V_MATRIX 1024

static int vcounts_init(sim_inst_t *inst, const core_coll_args_t *a)
{
    size_t p = (size_t)inst->p, n = 0;
    if (a->coll == HERD_COLL_ALL_GATHER_V ||
        a->coll == HERD_COLL_REDUCE_SCATTER_V)
        n = p;
    else if (a->coll == HERD_COLL_ALL_TO_ALL_V && p <= SIM_V_MATRIX)
        n = 2 * p * p;
    if (!n)
        return 1;
    inst->vcounts = calloc(n, sizeof(size_t));
    if (!inst->vcounts)
        return 0;
    if (n == p)
        memcpy(inst->vcounts, a->vcounts, p * sizeof(size_t));
    return 1;
}

static sim_diag_class_t compare_v(sim_inst_t *inst, int m,
                                  const core_coll_args_t *a)
{
    size_t p = (size_t)inst->p;
    if (!inst->vcounts)
        return SIM_DIAG_NONE;
    if (a->coll != HERD_COLL_ALL_TO_ALL_V)
        return memcmp(inst->vcounts, a->vcounts, p * sizeof(size_t))
                   ? SIM_DIAG_SIZE_MISMATCH
                   : SIM_DIAG_NONE;
    size_t *snd = inst->vcounts, *rcv = inst->vcounts + p * p;
    for (size_t j = 0; j < p; j++) {
        if (!(inst->posted[j] & 1) || (inst->posted[j] & 4))
            continue;
        if (snd[j * p + (size_t)m] != a->vrecv[j] ||
            rcv[j * p + (size_t)m] != a->vcounts[j])
            return SIM_DIAG_SIZE_MISMATCH;
    }
    memcpy(snd + (size_t)m * p, a->vcounts, p * sizeof(size_t));
    memcpy(rcv + (size_t)m * p, a->vrecv, p * sizeof(size_t));
    return SIM_DIAG_NONE;
}

static sim_diag_class_t compare_args(sim_inst_t *inst, int m,
                                     const core_coll_args_t *a)
{
    const core_coll_args_t *ref = &inst->args;
    if (ref->coll != a->coll)
        return SIM_DIAG_COLL_MISMATCH;
    if (core_coll_is_v(a->coll))
        return ref->dtype != a->dtype                ? SIM_DIAG_DTYPE_MISMATCH
               : has_op(a->coll) && ref->op != a->op ? SIM_DIAG_COLL_MISMATCH
                                                     : compare_v(inst, m, a);
    if (ref->count != a->count)
        return SIM_DIAG_SIZE_MISMATCH;
    if (ref->dtype != a->dtype)
        return SIM_DIAG_DTYPE_MISMATCH;
    if (has_op(a->coll) && ref->op != a->op)
        return SIM_DIAG_COLL_MISMATCH;
    if (has_root(a->coll) && ref->root != a->root)
        return SIM_DIAG_COLL_MISMATCH;
    return SIM_DIAG_NONE;
}

/* `a`: the member's own call (the *_v kinds' counts are its own). */
static core_sched_desc_t sched_desc(const sim_world_t *w,
                                    const sim_inst_t *inst,
                                    const core_coll_args_t *a, int rank)
{
    core_sched_desc_t d = {.coll = a->coll,
                           .algo = inst->algo,
                           .nranks = inst->p,
                           .rank = rank,
                           .root = a->root,
                           .count = a->count,
                           .elem_size = herd_dtype_size(a->dtype),
                           .channels = a->channels > 0 ? a->channels : 1,
                           .chunk_bytes = a->chunk_bytes,
                           .ranks_per_node =
                               inst->world_ranks ? 0 : w->gpus_per_node,
                           .counts = a->vcounts,
                           .recv_counts = a->vrecv};
    return d;
}

/* Whether later members may be built from the first one's executor: the
 * simulator reads no offsets with phantom buffers, and the NCCL model
 * lowers outside core/. 2: the members' schedules are rotations of one
 * another; 1: so but for the counts (each member counts its own with
 * core_sched_counts); 0: neither. */
static int rotational(const sim_world_t *w, const sim_inst_t *inst)
{
    if (w->opts.real_buffers || w->opts.no_rotation ||
        core_sched_is_library(inst->algo))
        return 0;
    core_sched_desc_t d = sched_desc(w, inst, &inst->args, 0);
    if (core_sched_rotational(&d))
        return 2;
    return core_sched_rotational_shape(&d);
}

/* The symmetry shortcut (sim/sym.c) needs every member's schedule to be
 * a rotation of every other's, counts included, whatever no_rotation
 * says (that only decides whether members lower their own). */
static int sym_rotational(sim_world_t *w, sim_inst_t *inst)
{
    if (w->opts.real_buffers || core_coll_is_v(inst->args.coll) || inst->p < 2)
        return 0;
    if (inst->algo == HERD_ALGO_NCCL)
        return sim_nccl_sym_ok(w, inst);
    if (inst->rdv) /* who waits for whom depends on arrival order */
        return 0;
    core_sched_desc_t d = sched_desc(w, inst, &inst->args, 0);
    return core_sched_rotational(&d);
}

static herd_status_t lower(sim_world_t *w, sim_comm_t *c, sim_inst_t *inst,
                           const core_coll_args_t *a, core_sched_t *s)
{
    core_sched_desc_t d = sched_desc(w, inst, a, c->base.rank);
    memset(s, 0, sizeof(*s));
    /* Algorithm "nccl": NCCL's choice, channels and chunking lowered by
     * the NCCL model (sim/nccl_model.c). */
    herd_status_t st = inst->algo == HERD_ALGO_NCCL
                           ? sim_nccl_lower(w, inst, c->base.rank, s)
                       : inst->algo == HERD_ALGO_GLOO ? sim_gloo_lower(&d, s)
                                                      : core_sched_lower(&d, s);
    if (st != HERD_OK)
        return core_comm_error(
            &c->base, st, "%s: lowering with algorithm %s failed (%s)",
            herd_coll_name(a->coll), herd_algo_name(inst->algo),
            herd_status_string(st));
    return HERD_OK;
}

static void apply_early(sim_world_t *w, sim_inst_t *inst, int m, sim_exec_t *x)
{
    sim_early_t *e = inst->early[m];
    inst->early[m] = NULL;
    while (e) {
        sim_early_t *n = e->next;
        if (e->k == SIM_EARLY_RTR)
            sim_exec_rtr(w, x, e->src, e->channel);
        else
            sim_exec_deliver(w, x, 0, e->src, e->channel, e->k, e->payload);
        free(e);
        e = n;
    }
}

/* Member m's executor: derived from the first poster's when the
 * instance kept it as a template, else lowered and converted (and kept as
 * the template when the members are rotations of one another). It must
 * be kept before it starts or receives anything. */
static herd_status_t make_exec(sim_world_t *w, sim_comm_t *c, sim_inst_t *inst,
                               const core_coll_args_t *a, sim_req_t *req,
                               sim_exec_t **out)
{
    int m = c->base.rank;
    if (inst->rot)
        return sim_exec_create_rotated(w, inst, m, req, out);
    core_sched_t s;
    sim_exec_t *x = NULL;
    herd_status_t st = lower(w, c, inst, a, &s);
    if (st == HERD_OK)
        st = sim_exec_create(w, inst, m, req, &s, &x);
    if (st != HERD_OK) {
        core_sched_fini(&s);
        return st;
    }
    int rot = inst->p > 1 ? rotational(w, inst) : 0;
    if (rot) {
        core_sched_desc_t d = sched_desc(w, inst, &inst->args, 0);
        st = sim_exec_keep_rotation(inst, x, rot == 1 ? &d : NULL);
    }
    if (st != HERD_OK) {
        sim_exec_destroy(x);
        return st;
    }
    *out = x;
    return HERD_OK;
}

/* Member c->base.rank's executor made and started (the caller counts
 * its post); its first steps run now, or with drain 0 when the caller's
 * loop drains the work list: a member ends (and gloo_next starts the
 * next) only while a step completes, and every place a step completes
 * is drained after (a step's event, a network instant, a start). */
static herd_status_t start_member(sim_world_t *w, sim_comm_t *c,
                                  sim_inst_t *inst, const core_coll_args_t *a,
                                  sim_req_t *req, int drain)
{
    int m = c->base.rank;
    sim_exec_t *x = NULL;
    herd_status_t st = make_exec(w, c, inst, a, req, &x);
    if (st != HERD_OK)
        return st;
    inst->execs[m] = x;
    apply_early(w, inst, m, x);
    sim_exec_start(w, x);
    if (drain)
        sim_world_drain(w);
    return HERD_OK;
}

/* Algorithm "gloo": ProcessGroupGloo hands each collective to a worker
 * thread, SIM_GLOO_THREADS of them per group; with all of them busy the
 * collective waits in the group's queue, and its time from the post
 * includes that wait (as PyTorch's work does, from launch to end). 1:
 * queued, nothing to start now. */
static int gloo_queue(sim_comm_t *c, sim_req_t *req)
{
    if (c->gloo_busy < SIM_GLOO_THREADS) {
        c->gloo_busy++;
        req->gloo_comm = c;
        return 0;
    }
    req->gloo_next = NULL;
    if (c->gloo_tail)
        c->gloo_tail->gloo_next = req;
    else
        c->gloo_head = req;
    c->gloo_tail = req;
    return 1;
}

/* A gloo worker of c is free: the next collective queued takes it. */
static void gloo_next(sim_world_t *w, sim_comm_t *c)
{
    c->gloo_busy--;
    sim_req_t *req = c->gloo_head;
    if (!req)
        return;
    c->gloo_head = req->gloo_next;
    if (!c->gloo_head)
        c->gloo_tail = NULL;
    c->gloo_busy++;
    req->gloo_comm = c;
    if (w->sym)
        sim_sym_flush(w);
    herd_status_t st = start_member(w, c, req->inst, &req->args, req, 0);
    if (st != HERD_OK)
        sim_req_complete(w, req, st);
}

void sim_coll_gloo_detach(sim_world_t *w, sim_comm_t *c)
{
    for (sim_req_t *q = c->r->reqs; q; q = q->next_all)
        if (q->gloo_comm == c)
            q->gloo_comm = NULL;
    while (c->gloo_head) {
        sim_req_t *req = c->gloo_head;
        c->gloo_head = req->gloo_next;
        herd_status_t st = start_member(w, c, req->inst, &req->args, req, 1);
        if (st != HERD_OK)
            sim_req_complete(w, req, st);
    }
    c->gloo_tail = NULL;
    c->gloo_busy = 0;
}

herd_status_t sim_coll_start_member(sim_world_t *w, sim_inst_t *inst, int m,
                                    sim_req_t *req)
{
    /* symmetric instances are world ones: member m is world rank m */
    return start_member(w, w->ranks[m].world_comm, inst, &inst->args, req, 1);
}

herd_status_t sim_coll_post(sim_comm_t *c, const core_coll_args_t *a,
                            sim_req_t *req)
{
    sim_world_t *w = c->w;
    int m = c->base.rank;
    /* a world of many ranks can post far more state than one loop turn
     * of events shows: the budget is checked here too */
    if ((++w->mem_posts & 255) == 0 && sim_mem_over(w))
        return core_comm_error(&c->base, HERD_ERR_NO_MEMORY,
                               "%s: the simulation passed its memory limit",
                               herd_coll_name(a->coll));
    sim_inst_t *inst =
        sim_htab_get(&w->insts, inst_key(c->base.group_id, a->seq));
    herd_status_t st;
    if (!inst) {
        st = inst_new(w, c, a, &inst);
        if (st != HERD_OK)
            return st;
    }
    req->inst = inst;
    req->member = m;
    req->algo = inst->algo;
    if (inst->posted[m])
        return core_comm_error(&c->base, HERD_ERR_INTERNAL,
                               "%s: sequence number %llu posted twice",
                               herd_coll_name(a->coll),
                               (unsigned long long)a->seq);
    sim_diag_class_t bad = compare_args(inst, m, a);
    if (bad != SIM_DIAG_NONE && inst->sym) {
        sim_sym_break(w); /* a mismatch is diagnosed member by member */
        inst->sym->mode = SIM_SYM_FULL;
    }
    if (bad != SIM_DIAG_NONE) {
        if (inst->mismatch == SIM_DIAG_NONE)
            inst->mismatch = bad;
        inst->posted[m] = SIM_INST_POSTED | SIM_INST_BAD;
        inst->nposted++;
        return HERD_OK; /* never executed: the diagnosis reports it */
    }
    if (inst->sym && inst->sym->mode != SIM_SYM_FULL) {
        /* decided, and started, at the end of the instant */
        inst->posted[m] = SIM_INST_POSTED;
        inst->nposted++;
        return sim_sym_post(w, inst, m, req);
    }
    if (inst->rdv && gloo_queue(c, req)) {
        inst->posted[m] = SIM_INST_POSTED; /* started by gloo_next */
        inst->nposted++;
        return HERD_OK;
    }
    if (w->sym)
        sim_sym_flush(w); /* it would share links with the regime's */
    st = start_member(w, c, inst, a, req, 1);
    if (st != HERD_OK)
        return st;
    inst->posted[m] = SIM_INST_POSTED;
    inst->nposted++;
    return HERD_OK;
}

void sim_inst_maybe_free(sim_world_t *w, sim_inst_t *inst)
{
    if (inst->nposted < inst->p || inst->ndone < inst->p)
        return;
    int held = inst->sym ? sim_sym_held(w, inst) : 0;
    if (held == 2)
        return; /* a replay still runs its members */
    if (inst->in_table) {
        sim_htab_del(&w->insts, inst->key);
        inst->in_table = 0;
    }
    /* Every member is done, so nothing reads what they shared any more
     * (schedule arrays, wait bytes): it goes now. The record itself waits
     * for its timeout event, which is usually after the run's end: a DDP
     * run kept every bucket's arrays to the end (1.2 GB at 2048 ranks). */
    sim_exec_blobs_free(inst);
    if (inst->inflight || inst->timeout_queued || held)
        return;
    if (inst->prev_all)
        inst->prev_all->next_all = inst->next_all;
    else
        w->all_insts = inst->next_all;
    if (inst->next_all)
        inst->next_all->prev_all = inst->prev_all;
    inst_free(inst);
}

void sim_inst_member_done(sim_world_t *w, sim_inst_t *inst, int m,
                          herd_status_t st)
{
    if (inst->sym && sim_sym_member_done(w, inst, m, st))
        return;
    sim_exec_t *x = inst->execs[m];
    inst->execs[m] = NULL;
    inst->posted[m] |= SIM_INST_DONE;
    inst->ndone++;
    sim_req_t *req = sim_exec_req(x);
    sim_comm_t *gloo = req->gloo_comm;
    req->gloo_comm = NULL;
    sim_exec_destroy(x);
    sim_req_complete(w, req, st);
    sim_inst_maybe_free(w, inst);
    if (gloo)
        gloo_next(w, gloo);
}

/* A monitored_barrier that timed out: rank 0 names the members that
 * did not arrive (never posted, or died), the others learn that rank 0
 * did not release them; each in its comm's last error. */
static void monitored_fail(sim_world_t *w, sim_inst_t *inst)
{
    int *absent = malloc((size_t)inst->p * sizeof(int)), n = 0;
    if (!absent)
        return;
    for (int m = 0; m < inst->p; m++)
        if (!(inst->posted[m] & 1) || w->dead[sim_inst_world_rank(inst, m)])
            absent[n++] = m;
    for (int m = 0; m < inst->p; m++) {
        sim_req_t *q = inst->execs[m] ? sim_exec_req(inst->execs[m]) : NULL;
        if (q && q->base.comm)
            core_monitored_barrier_error(q->base.comm, &inst->args,
                                         m == 0 ? absent : NULL, n,
                                         HERD_ERR_TIMEOUT);
    }
    free(absent);
}

void sim_inst_timeout(sim_world_t *w, sim_inst_t *inst)
{
    inst->timeout_queued = 0;
    if (inst->sym && inst->sym->held && inst->ndone == inst->p)
        return; /* freed when the regime ends */
    if (inst->ndone == inst->p) {
        sim_inst_maybe_free(w, inst);
        return;
    }
    if (w->end_status == HERD_OK) {
        w->end_status = HERD_ERR_TIMEOUT;
        w->timed_out = inst;
        if (inst->args.coll == HERD_COLL_MONITORED_BARRIER)
            monitored_fail(w, inst);
    }
}

void sim_inst_free_all(sim_world_t *w)
{
    while (w->all_insts) {
        sim_inst_t *inst = w->all_insts;
        w->all_insts = inst->next_all;
        inst_free(inst);
    }
}

int sim_inst_member_state(const sim_inst_t *inst, int m)
{
    return inst->posted[m];
}
