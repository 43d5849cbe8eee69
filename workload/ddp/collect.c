/* workload/ddp/collect.c - gather a DDP run's timeline records per rank and
 * iteration, and turn them into step predictions (see ddp_report.h for the
 * definitions). Records arrive from the engine's timeline callback; the
 * labels and marks the DDP program sets say what each record is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/common/collect.h"
#include "workload/ddp/report.h"

herd_status_t ddp_collect_create(const ddp_job_t *job, ddp_collect_t **out)
{
    ddp_collect_t *c = calloc(1, sizeof(*c));
    if (!c)
        return HERD_ERR_NO_MEMORY;
    size_t w = (size_t)job->world, it = DDP_REC_MAX_ITERS;
    c->job = job;
    c->world = job->world;
    c->nb = job->initial.n > job->rebuilt.n ? job->initial.n : job->rebuilt.n;
    c->steps = calloc(w * it, sizeof(ddp_rstep_t));
    c->bt = calloc(w * it * c->nb, sizeof(ddp_btime_t));
    if (!c->steps || !c->bt ||
        wl_collect_ranks(job->world, &c->iter, &c->last, &c->stuck) !=
            HERD_OK) {
        ddp_collect_destroy(c);
        return HERD_ERR_NO_MEMORY;
    }
    *out = c;
    return HERD_OK;
}

void ddp_collect_destroy(ddp_collect_t *c)
{
    if (!c)
        return;
    free(c->steps);
    free(c->bt);
    wl_collect_ranks_free(c->iter, c->last, c->stuck);
    free(c);
}

static ddp_rstep_t *rstep(const ddp_collect_t *c, int r, long it)
{
    return &c->steps[(size_t)r * DDP_REC_MAX_ITERS + (size_t)it];
}

static ddp_btime_t *btime(const ddp_collect_t *c, int r, long it, size_t k)
{
    return &c->bt[((size_t)r * DDP_REC_MAX_ITERS + (size_t)it) * c->nb + k];
}

/* "bucket 12" -> 12; PowerSGD's "bucket 12 P" / "bucket 12 Q" too, with
 * *part 1; -1 otherwise. */
static long bucket_index(const char *label, int *part)
{
    static const char prefix[] = "bucket ";
    if (!label || strncmp(label, prefix, sizeof(prefix) - 1))
        return -1;
    const char *p = label + sizeof(prefix) - 1;
    char *end;
    long k = strtol(p, &end, 10);
    if (end == p)
        return -1;
    *part = !strcmp(end, " P") || !strcmp(end, " Q");
    return !*end || *part ? k : -1;
}

static void on_mark(ddp_collect_t *c, const herd_tl_rec_t *rec, long it)
{
    int r = rec->rank;
    if (rec->label && !strcmp(rec->label, "step")) {
        if (it >= 0 && it < DDP_REC_MAX_ITERS)
            rstep(c, r, it)->end = rec->start_ns;
        it = ++c->iter[r];
        if (it < DDP_REC_MAX_ITERS)
            rstep(c, r, it)->start = rec->start_ns;
        return;
    }
    if (it < 0 || it >= DDP_REC_MAX_ITERS)
        return;
    long k = wl_label_index(rec->label, "ready b");
    long l = wl_label_index(rec->label, "launch bucket ");
    if (k >= 0 && (size_t)k < c->nb)
        btime(c, r, it, (size_t)k)->ready = rec->start_ns;
    else if (l >= 0 && (size_t)l < c->nb)
        btime(c, r, it, (size_t)l)->launch = rec->start_ns;
    else if (rec->label && !strcmp(rec->label, "finalize"))
        rstep(c, r, it)->fin_end = rec->start_ns;
}

void ddp_stuck_note(ddp_stuck_t *s, const herd_tl_rec_t *rec, long it)
{
    if (s->valid)
        return; /* the first failed op is the one the rank blocked in */
    s->valid = 1;
    s->coll = rec->coll;
    s->seq = rec->seq;
    s->count = rec->count;
    s->dtype = rec->dtype;
    s->status = rec->status;
    s->iter = it;
    snprintf(s->label, sizeof(s->label), "%s", rec->label ? rec->label : "");
}

void ddp_collect_cb(const herd_tl_rec_t *rec, void *arg)
{
    ddp_collect_t *c = arg;
    if (c->next_cb)
        c->next_cb(rec, c->next_arg);
    if (rec->rank < 0 || rec->rank >= c->world)
        return;
    int r = rec->rank;
    long it = c->iter[r];
    if (rec->end_ns > c->last[r])
        c->last[r] = rec->end_ns;
    if (rec->kind == HERD_TL_MARK) {
        on_mark(c, rec, it);
        return;
    }
    if (rec->kind == HERD_TL_COLL && rec->status != HERD_OK)
        ddp_stuck_note(&c->stuck[r], rec, it);
    if (it < 0 || it >= DDP_REC_MAX_ITERS)
        return;
    if (rec->kind == HERD_TL_COMPUTE && rec->label &&
        !strcmp(rec->label, "data"))
        rstep(c, r, it)->data += rec->end_ns - rec->start_ns;
    else if (rec->kind == HERD_TL_COMPUTE && rec->label &&
             !strcmp(rec->label, "backward"))
        rstep(c, r, it)->bwd_end = rec->end_ns;
    else if (rec->kind == HERD_TL_COMPUTE && rec->label &&
             !strcmp(rec->label, "forward"))
        rstep(c, r, it)->fwd_end = rec->end_ns;
    int part = 0;
    long k = bucket_index(rec->label, &part);
    if (rec->kind == HERD_TL_COLL && k >= 0 && (size_t)k < c->nb &&
        rec->status == HERD_OK) {
        ddp_btime_t *b = btime(c, r, it, (size_t)k);
        /* PowerSGD's P and Q all_reduces end the bucket; a bucket
         * without uncompressed tensors starts with P */
        if (!part || !b->end) {
            b->start = rec->start_ns;
            b->end = rec->end_ns;
        } else if (rec->end_ns > b->end) {
            b->end = rec->end_ns;
        }
        if (!b->launch) /* a timeline without launch marks */
            b->launch = b->start;
    }
}

/* Time covered by the union of bucket all_reduce intervals. */
static uint64_t comm_busy(const ddp_collect_t *c, int r, long it, size_t nb)
{
    uint64_t busy = 0, cur_s = 0, cur_e = 0;
    for (size_t k = 0; k < nb; k++) {
        const ddp_btime_t *b = btime(c, r, it, k);
        if (!b->end)
            continue;
        if (b->start > cur_e) {
            busy += cur_e - cur_s;
            cur_s = b->start;
            cur_e = b->end;
        } else if (b->end > cur_e) {
            cur_e = b->end;
        }
    }
    return busy + (cur_e - cur_s);
}

/* End of a rank's backward compute; a model without backward (or without
 * any compute) records none, and then its gradients are ready when the
 * forward (or the step) starts, not at time 0. */
static uint64_t compute_end(const ddp_rstep_t *s)
{
    if (s->bwd_end)
        return s->bwd_end;
    return s->fwd_end > s->start ? s->fwd_end : s->start;
}

static uint64_t step_end(const ddp_collect_t *c, int r, long it)
{
    const ddp_rstep_t *s = rstep(c, r, it);
    if (s->end)
        return s->end;
    return c->iter[r] == it ? c->last[r] : 0;
}

void ddp_collect_step(const ddp_collect_t *c, long it, ddp_step_pred_t *o)
{
    memset(o, 0, sizeof(*o));
    o->iter = it;
    o->critical_rank = -1;
    o->sync = ddp_job_is_sync(c->job, it);
    o->nbuckets = ddp_job_layout(c->job, it)->n;
    if (it < 0 || it >= DDP_REC_MAX_ITERS)
        return;
    uint64_t worst_compute = 0; /* latest end of backward */
    double sum = 0;
    int n = 0;
    o->complete = 1;
    for (int r = 0; r < c->world; r++) {
        const ddp_rstep_t *s = rstep(c, r, it);
        uint64_t end = step_end(c, r, it);
        if (c->iter[r] < it || !end || (o->sync && !s->fin_end)) {
            o->complete = 0;
            continue;
        }
        double d = (double)(end - s->start) * 1e-9;
        sum += d;
        n++;
        o->data_s += (double)s->data * 1e-9;
        if ((double)s->data * 1e-9 > o->max_data_s)
            o->max_data_s = (double)s->data * 1e-9;
        o->max_step_s = d > o->max_step_s ? d : o->max_step_s;
        /* the rank whose backward ends last: the others wait for it */
        if (o->critical_rank < 0 || compute_end(s) > worst_compute) {
            worst_compute = compute_end(s);
            o->critical_rank = r;
        }
    }
    o->step_s = n ? sum / n : 0;
    o->data_s = n ? o->data_s / n : 0;
    if (o->critical_rank < 0 || !o->sync)
        return;
    const ddp_rstep_t *s = rstep(c, o->critical_rank, it);
    uint64_t be = compute_end(s);
    if (s->fin_end > be)
        o->exposed_s = (double)(s->fin_end - be) * 1e-9;
    /* never more than the step itself (a rank's wait is inside its step) */
    if (o->exposed_s > o->max_step_s)
        o->exposed_s = o->max_step_s;
    o->comm_s = (double)comm_busy(c, o->critical_rank, it, o->nbuckets) * 1e-9;
    o->overlap = o->comm_s > 0 ? 1.0 - o->exposed_s / o->comm_s : 0;
    o->overlap = o->overlap < 0 ? 0 : o->overlap > 1 ? 1 : o->overlap;
}

static long recorded_iters(const ddp_collect_t *c)
{
    long most = 0;
    for (int r = 0; r < c->world; r++)
        if (c->iter[r] + 1 > most)
            most = c->iter[r] + 1;
    return most < DDP_REC_MAX_ITERS ? most : DDP_REC_MAX_ITERS;
}

/* Mean time of the complete accumulation windows from first_steady on. */
static double optimizer_step(const ddp_collect_t *c, const ddp_summary_t *o)
{
    long n = c->job->cfg.grad_accum, windows = 0;
    double total = 0;
    for (long w = o->first_steady - o->first_steady % n; w + n <= o->iters;
         w += n) {
        double sum = 0;
        int ok = 1;
        for (long it = w; it < w + n && ok; it++) {
            ddp_step_pred_t p;
            ddp_collect_step(c, it, &p);
            ok = p.complete;
            sum += p.step_s;
        }
        if (ok)
            total += sum, windows++;
    }
    return windows ? total / (double)windows : 0;
}

void ddp_collect_summary(const ddp_collect_t *c, ddp_summary_t *o)
{
    memset(o, 0, sizeof(*o));
    o->iters = recorded_iters(c);
    o->critical_rank = -1;
    const ddp_job_t *j = c->job;
    o->first_steady =
        j->rebuilds ? (long)j->rebuild_after * j->cfg.grad_accum : 0;
    /* PowerSGD: the steady state is the compressed one */
    long psgd = j->cfg.psgd.start_iter * j->cfg.grad_accum;
    if (j->cfg.hook == DDP_HOOK_POWERSGD && psgd > o->first_steady)
        o->first_steady = psgd;
    if (o->first_steady >= o->iters)
        o->first_steady = 0; /* too few iterations: use them all */
    int *votes = calloc((size_t)(c->world > 0 ? c->world : 1), sizeof(int));
    for (long it = o->first_steady; it < o->iters; it++) {
        ddp_step_pred_t p;
        ddp_collect_step(c, it, &p);
        if (!p.complete || !p.sync)
            continue;
        o->step_s += p.step_s;
        o->exposed_s += p.exposed_s;
        o->comm_s += p.comm_s;
        o->data_s += p.data_s;
        o->max_data_s += p.max_data_s;
        o->nsteady++;
        if (votes && p.critical_rank >= 0 &&
            ++votes[p.critical_rank] >
                (o->critical_rank >= 0 ? votes[o->critical_rank] : 0))
            o->critical_rank = p.critical_rank;
    }
    free(votes);
    o->opt_step_s = optimizer_step(c, o);
    if (o->nsteady) {
        o->step_s /= (double)o->nsteady;
        o->exposed_s /= (double)o->nsteady;
        o->comm_s /= (double)o->nsteady;
        o->data_s /= (double)o->nsteady;
        o->max_data_s /= (double)o->nsteady;
        o->overlap = o->comm_s > 0 ? 1.0 - o->exposed_s / o->comm_s : 0;
        o->overlap = o->overlap < 0 ? 0 : o->overlap;
    }
}
