/* sim/diag.c - the diagnosis at the end of a hung or timed-out run: what
 * each rank was doing, the stuck collective (its waiting, missing and
 * mismatched ranks), point-to-point wait-for cycles, the class, and the
 * text (with the watchdog error a real PyTorch job would raise). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

const char *sim_diag_class_name(sim_diag_class_t cls)
{
    switch (cls) {
    case SIM_DIAG_MISSING_RANK:
        return "missing rank";
    case SIM_DIAG_COLL_MISMATCH:
        return "collective mismatch";
    case SIM_DIAG_SIZE_MISMATCH:
        return "size mismatch";
    case SIM_DIAG_DTYPE_MISMATCH:
        return "dtype mismatch";
    case SIM_DIAG_P2P_CYCLE:
        return "point-to-point cycle";
    default:
        return "none";
    }
}

void sim_diag_clear(sim_diag_t *d)
{
    if (!d)
        return;
    free(d->ranks);
    free(d->waiting);
    free(d->missing);
    free(d->cycle);
    free(d->mismatched);
    free(d->text);
    memset(d, 0, sizeof(*d));
}

static void rank_state(const sim_world_t *w, int i, sim_diag_rank_t *o)
{
    const sim_rank_t *r = &w->ranks[i];
    memset(o, 0, sizeof(*o));
    o->peer = -1;
    if (r->state == SIM_RANK_EXITED) {
        o->state = SIM_DIAG_EXITED;
        o->exit_code = r->exit_code;
    } else if (r->state == SIM_RANK_DEAD) {
        o->state = SIM_DIAG_DEAD;
    } else if (r->waiting) {
        const sim_req_t *q = r->waiting;
        o->state = SIM_DIAG_WAITING;
        o->coll = q->args.coll;
        o->group = q->group;
        o->seq = q->args.seq;
        o->count = q->args.count;
        o->dtype = q->args.dtype;
        o->op = q->args.op;
        o->peer = q->kind == SIM_REQ_COLL ? q->args.root : q->peer_world;
        o->since_ns = q->t_post;
    } else {
        o->state = SIM_DIAG_RUNNING;
    }
}

/* The collective to report: the timed-out one, else a mismatched one a
 * rank waits in, else one with members that never posted, else any. */
static sim_inst_t *stuck_inst(const sim_world_t *w)
{
    if (w->timed_out)
        return w->timed_out;
    sim_inst_t *best = NULL;
    int best_score = -1;
    for (int i = 0; i < w->n; i++) {
        const sim_req_t *q = w->ranks[i].waiting;
        if (!sim_rank_stuck(&w->ranks[i]) || !q->inst)
            continue;
        sim_inst_t *inst = q->inst;
        int score = inst->mismatch != SIM_DIAG_NONE ? 2
                    : inst->nposted < inst->p       ? 1
                                                    : 0;
        if (score > best_score) {
            best = inst;
            best_score = score;
        }
    }
    return best;
}

static int push_int(int **v, int *n, int x)
{
    int *a = realloc(*v, (size_t)(*n + 1) * sizeof(int));
    if (!a)
        return -1;
    a[(*n)++] = x;
    *v = a;
    return 0;
}

static int inst_lists(sim_diag_t *d, const sim_inst_t *inst)
{
    d->group = inst->group;
    d->seq = inst->seq;
    d->coll = inst->args.coll;
    d->cls = inst->mismatch != SIM_DIAG_NONE ? inst->mismatch : d->cls;
    for (int m = 0; m < inst->p; m++) {
        int st = sim_inst_member_state(inst, m);
        int wr = sim_inst_world_rank(inst, m);
        int rc = 0;
        /* a member that died inside the collective never finishes it */
        if (!st || (!(st & 2) && d->ranks[wr].state == SIM_DIAG_DEAD))
            rc = push_int(&d->missing, &d->nmissing, wr);
        else if (!(st & 2))
            rc = push_int(&d->waiting, &d->nwaiting, wr);
        if (rc == 0 && (st & 4))
            rc = push_int(&d->mismatched, &d->nmismatched, wr);
        if (rc)
            return -1;
    }
    if (d->cls == SIM_DIAG_NONE && d->nmissing)
        d->cls = SIM_DIAG_MISSING_RANK;
    return 0;
}

/* The last collective waits_for looked into and its first missing member:
 * most blocked ranks wait in the same one, and a scan per rank would make
 * the diagnosis of a 131,072-rank world O(p^2) (minutes). Valid while one
 * diagnosis is built: nothing runs meanwhile. */
typedef struct wf_memo {
    const sim_inst_t *inst;
    int v;
} wf_memo_t;

/* Whom a blocked rank waits for: its unmatched p2p peer, or the first
 * member missing from its collective; -1 if nobody in particular. */
static int waits_for(const sim_world_t *w, int i, int *is_p2p, wf_memo_t *memo)
{
    const sim_rank_t *r = &w->ranks[i];
    const sim_req_t *q = r->waiting;
    *is_p2p = 0;
    if (!sim_rank_stuck(r))
        return -1;
    if (q->kind != SIM_REQ_COLL) {
        *is_p2p = 1;
        return sim_p2p_unmatched(q) ? q->peer_world : -1;
    }
    if (memo->inst == q->inst)
        return memo->v;
    memo->inst = q->inst;
    memo->v = -1;
    for (int m = 0; m < q->inst->p; m++)
        if (!sim_inst_member_state(q->inst, m)) {
            memo->v = sim_inst_world_rank(q->inst, m);
            break;
        }
    return memo->v;
}

/* Follows wait-for edges from each blocked rank; a cycle made only of
 * p2p edges is a point-to-point deadlock. */
static int find_p2p_cycle(const sim_world_t *w, sim_diag_t *d)
{
    int *mark = w->n > 0 ? calloc((size_t)(unsigned)w->n, sizeof(int)) : NULL;
    if (!mark)
        return -1;
    int found = 0;
    wf_memo_t memo = {0};
    for (int s = 0; s < w->n && !found; s++) {
        int v = s, p2p;
        while (v >= 0 && !mark[v]) {
            mark[v] = s + 1;
            v = waits_for(w, v, &p2p, &memo);
        }
        if (v < 0 || mark[v] != s + 1)
            continue;
        int all_p2p = 1, u = v;
        do {
            u = waits_for(w, u, &p2p, &memo);
            all_p2p &= p2p;
        } while (u != v);
        if (!all_p2p)
            continue;
        found = 1;
        do {
            if (push_int(&d->cycle, &d->ncycle, u)) {
                free(mark);
                return -1;
            }
            u = waits_for(w, u, &p2p, &memo);
        } while (u != v);
    }
    free(mark);
    return found;
}

static void print_ranks(FILE *f, const int *v, int n)
{
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        fprintf(f, "%s%d", i ? "," : "", v[i]);
        if (j > i)
            fprintf(f, "-%d", v[j]);
        i = j + 1;
    }
    if (n == 0)
        fprintf(f, "none");
}

static const char *op_type(herd_coll_t c)
{
    /* torch's OpType names; the *_v kinds are what torch runs them as */
    static const char *const names[HERD_COLL_COUNT] = {
        "ALLREDUCE",      "BROADCAST",     "REDUCE",         "ALLGATHER",
        "GATHER",         "SCATTER",       "REDUCE_SCATTER", "ALLTOALL",
        "BARRIER",        "SEND",          "RECV",           "ALLGATHER",
        "REDUCE_SCATTER", "ALLTOALL_BASE", "BARRIER"};
    return (unsigned)c < HERD_COLL_COUNT ? names[c] : "UNKNOWN";
}

static void describe(FILE *f, const sim_diag_rank_t *o)
{
    switch (o->state) {
    case SIM_DIAG_EXITED:
        fprintf(f, "exited (code %d)", o->exit_code);
        break;
    case SIM_DIAG_DEAD:
        fprintf(f, "dead (fault)");
        break;
    case SIM_DIAG_WAITING:
        fprintf(f, "waiting in %s (group %d, seq %llu, count %llu %s",
                herd_coll_name(o->coll), o->group, (unsigned long long)o->seq,
                (unsigned long long)o->count, herd_dtype_name(o->dtype));
        if (o->peer >= 0)
            fprintf(f, ", %s %d",
                    o->coll == HERD_COLL_SEND || o->coll == HERD_COLL_RECV
                        ? "peer"
                        : "root",
                    o->peer);
        fprintf(f, ") since t=%.9f s", o->since_ns / 1e9);
        break;
    default:
        fprintf(f, "running (not blocked)");
    }
}

static int same_desc(const sim_diag_rank_t *a, const sim_diag_rank_t *b)
{
    return a->state == b->state && a->exit_code == b->exit_code &&
           (a->state != SIM_DIAG_WAITING ||
            (a->coll == b->coll && a->group == b->group && a->seq == b->seq &&
             a->count == b->count && a->dtype == b->dtype &&
             a->since_ns == b->since_ns &&
             (a->coll != HERD_COLL_SEND && a->coll != HERD_COLL_RECV)));
}

/* gloo's monitored_barrier error, raised on rank 0: the first rank that
 * did not arrive, or all of them with wait_all_ranks. */
static void monitored_text(FILE *f, const sim_diag_t *d, const sim_inst_t *inst)
{
    int n = inst->args.wait_all ? d->nmissing : d->nmissing > 0;
    fprintf(f, "[Rank %d]: %s ", sim_inst_world_rank(inst, 0),
            n > 1 ? "Ranks" : "Rank");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? ", " : "", d->missing[i]);
    fprintf(f, "%s failed to pass monitoredBarrier in %.0f ms\n",
            n ? "" : "(none)", inst->timeout_s * 1e3);
}

static void watchdog_text(FILE *f, const sim_world_t *w, const sim_diag_t *d,
                          const sim_inst_t *inst)
{
    if (inst->args.coll == HERD_COLL_MONITORED_BARRIER) {
        monitored_text(f, d, inst);
        return;
    }
    double tmo_ms = inst->timeout_s * 1e3;
    double ran_ms = (double)(w->now - inst->t_first) / 1e6;
    if (d->status != HERD_ERR_TIMEOUT)
        ran_ms = tmo_ms;
    int who = d->nwaiting ? d->waiting[0] : sim_inst_world_rank(inst, 0);
    fprintf(f,
            "[Rank %d] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=%llu, OpType=%s, NumelIn=%llu, NumelOut=%llu, "
            "Timeout(ms)=%.0f) ran for %.0f milliseconds before timing out.\n",
            who, (unsigned long long)inst->seq, op_type(inst->args.coll),
            (unsigned long long)core_args_send_count(&inst->args, inst->p),
            (unsigned long long)core_args_recv_count(&inst->args, inst->p),
            tmo_ms, ran_ms);
}

static void summary_text(FILE *f, const sim_world_t *w, const sim_diag_t *d,
                         const sim_inst_t *inst)
{
    if (d->status == HERD_ERR_TIMEOUT)
        fprintf(f, "herd sim: collective timeout at t=%.9f s (%llu events)\n",
                d->time_ns / 1e9, (unsigned long long)d->events);
    else
        fprintf(f,
                "herd sim: hang at t=%.9f s (%llu events): no rank can make "
                "progress\n",
                d->time_ns / 1e9, (unsigned long long)d->events);
    fprintf(f, "class: %s\n", sim_diag_class_name(d->cls));
    if (inst) {
        const core_coll_args_t *a = &inst->args;
        fprintf(f, "stuck: %s on group %d, seq %llu (count %llu %s",
                herd_coll_name(a->coll), inst->group,
                (unsigned long long)inst->seq, (unsigned long long)a->count,
                herd_dtype_name(a->dtype));
        if (a->coll == HERD_COLL_ALL_REDUCE || a->coll == HERD_COLL_REDUCE ||
            a->coll == HERD_COLL_REDUCE_SCATTER)
            fprintf(f, " %s", herd_op_name(a->op));
        fprintf(f, ", algorithm %s, first posted at t=%.9f s)\n",
                herd_algo_name(inst->algo), inst->t_first / 1e9);
        fprintf(f, "waiting ranks (%d): ", d->nwaiting);
        print_ranks(f, d->waiting, d->nwaiting);
        fprintf(f, "\nmissing ranks (%d): ", d->nmissing);
        print_ranks(f, d->missing, d->nmissing);
        fprintf(f, "\n");
        if (d->nmismatched) {
            fprintf(f, "mismatched ranks (%d): ", d->nmismatched);
            print_ranks(f, d->mismatched, d->nmismatched);
            fprintf(f,
                    " (their arguments differ from rank %d's, which "
                    "posted first)\n",
                    sim_inst_world_rank(inst, inst->first_rank));
        }
    }
    if (d->ncycle) {
        fprintf(f, "point-to-point cycle: ");
        for (int i = 0; i < d->ncycle; i++)
            fprintf(f, "%d -> ", d->cycle[i]);
        fprintf(f, "%d (each waits for the next to match its send/recv)\n",
                d->cycle[0]);
    }
    if (inst) {
        fprintf(f, d->status == HERD_ERR_TIMEOUT
                       ? "error: "
                       : "a real job would fail after its timeout with: ");
        watchdog_text(f, w, d, inst);
    }
}

/* A run ended by opts.stop (an interrupt): where it was, not a class. */
static void interrupted_text(FILE *f, const sim_world_t *w, const sim_diag_t *d,
                             const sim_inst_t *inst)
{
    if (w->mem_over)
        sim_mem_text(f, w);
    else
        fprintf(f,
                "herd sim: interrupted at t=%.9f s (%llu events): a partial "
                "report\n",
                d->time_ns / 1e9, (unsigned long long)d->events);
    if (w->steps_total)
        fprintf(f,
                "collective steps: %llu of %llu posted so far done "
                "(%.1f%%)\n",
                (unsigned long long)w->steps_done,
                (unsigned long long)w->steps_total,
                100.0 * (double)w->steps_done / (double)w->steps_total);
    if (inst) {
        const core_coll_args_t *a = &inst->args;
        fprintf(f,
                "in progress: %s on group %d, seq %llu (count %llu %s, "
                "algorithm %s, first posted at t=%.9f s), %d of %d "
                "members done\n",
                herd_coll_name(a->coll), inst->group,
                (unsigned long long)inst->seq, (unsigned long long)a->count,
                herd_dtype_name(a->dtype), herd_algo_name(inst->algo),
                inst->t_first / 1e9, inst->ndone, inst->p);
        fprintf(f, "waiting ranks (%d): ", d->nwaiting);
        print_ranks(f, d->waiting, d->nwaiting);
        fprintf(f, "\nnot yet posted (%d): ", d->nmissing);
        print_ranks(f, d->missing, d->nmissing);
        fprintf(f, "\n");
    }
}

static void ranks_text(FILE *f, const sim_diag_t *d)
{
    fprintf(f, "ranks:\n");
    for (int i = 0; i < d->nranks;) {
        int j = i;
        while (j + 1 < d->nranks && same_desc(&d->ranks[i], &d->ranks[j + 1]))
            j++;
        if (j > i)
            fprintf(f, "  ranks %d-%d: ", i, j);
        else
            fprintf(f, "  rank %d: ", i);
        describe(f, &d->ranks[i]);
        fprintf(f, "\n");
        i = j + 1;
    }
}

herd_status_t sim_diag_build(sim_world_t *w, sim_diag_t *d)
{
    memset(d, 0, sizeof(*d));
    d->status = w->end_status;
    d->time_ns = w->now;
    d->events = w->events;
    d->group = -1;
    d->nranks = w->n;
    d->ranks = calloc((size_t)(unsigned)w->n, sizeof(*d->ranks));
    if (!d->ranks)
        return HERD_ERR_NO_MEMORY;
    for (int i = 0; i < w->n; i++)
        rank_state(w, i, &d->ranks[i]);
    sim_inst_t *inst = stuck_inst(w);
    if (inst && inst_lists(d, inst))
        return HERD_ERR_NO_MEMORY;
    if (d->cls == SIM_DIAG_NONE || d->cls == SIM_DIAG_MISSING_RANK) {
        int c = find_p2p_cycle(w, d);
        if (c < 0)
            return HERD_ERR_NO_MEMORY;
        if (c > 0 && !(inst && d->nmissing))
            d->cls = SIM_DIAG_P2P_CYCLE;
    }
    for (int i = 0; !inst && i < w->n; i++)
        if (d->ranks[i].state == SIM_DIAG_WAITING &&
            push_int(&d->waiting, &d->nwaiting, i))
            return HERD_ERR_NO_MEMORY;
    if (d->cls == SIM_DIAG_NONE && !inst) {
        /* blocked on p2p ops whose peers are gone */
        wf_memo_t memo = {0};
        for (int i = 0; i < w->n; i++) {
            int p2p, v = waits_for(w, i, &p2p, &memo);
            if (v >= 0 && !sim_rank_stuck(&w->ranks[v])) {
                d->cls = SIM_DIAG_MISSING_RANK;
                if (push_int(&d->missing, &d->nmissing, v))
                    return HERD_ERR_NO_MEMORY;
            }
        }
    }
    size_t len = 0;
    FILE *f = open_memstream(&d->text, &len);
    if (!f)
        return HERD_ERR_NO_MEMORY;
    if (w->interrupted || w->mem_over) {
        d->cls = SIM_DIAG_NONE; /* not a hang: the run was stopped */
        interrupted_text(f, w, d, inst);
    } else {
        summary_text(f, w, d, inst);
    }
    ranks_text(f, d);
    fclose(f);
    return HERD_OK;
}
