/* workload/parallel/collect.c - gather a 3D-parallel run's timeline
 * records per rank and iteration (compute, communication by kind, rank
 * 0's ops) and turn them into the step prediction (see report.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/common/collect.h"
#include "workload/parallel/report.h"

herd_status_t par_collect_create(const par_job_t *job, par_collect_t **out)
{
    par_collect_t *c = calloc(1, sizeof(*c));
    if (!c)
        return HERD_ERR_NO_MEMORY;
    size_t w = (size_t)job->world, it = PAR_REC_MAX_ITERS;
    c->job = job;
    c->world = job->world;
    c->start = calloc(w * it, sizeof(uint64_t));
    c->end = calloc(w * it, sizeof(uint64_t));
    c->compute = calloc(w * it, sizeof(double));
    c->data = calloc(w * it, sizeof(double));
    c->comm = calloc(w * it * PAR_NCAT, sizeof(double));
    c->counts = calloc(it, sizeof(par_counts_t));
    if (!c->start || !c->end || !c->compute || !c->data || !c->comm || !c->counts ||
        wl_collect_ranks(job->world, &c->iter, &c->last, &c->stuck) !=
            HERD_OK) {
        par_collect_destroy(c);
        return HERD_ERR_NO_MEMORY;
    }
    *out = c;
    return HERD_OK;
}

void par_collect_destroy(par_collect_t *c)
{
    if (!c)
        return;
    free(c->start);
    free(c->end);
    free(c->compute);
    free(c->data);
    free(c->comm);
    free(c->counts);
    wl_collect_ranks_free(c->iter, c->last, c->stuck);
    free(c);
}

const char *par_cat_name(par_cat_t cat)
{
    static const char *const names[PAR_NCAT] = {"tp", "pp", "dp", "zero3"};
    return cat < PAR_NCAT ? names[cat] : "?";
}

static int cat_of(const char *label)
{
    for (int k = 0; label && k < PAR_NCAT; k++) {
        size_t n = strlen(par_cat_name((par_cat_t)k));
        if (!strncmp(label, par_cat_name((par_cat_t)k), n) && label[n] == ' ')
            return k;
    }
    return -1;
}

static size_t at(long it, int r)
{
    return (size_t)r * PAR_REC_MAX_ITERS + (size_t)it;
}

void par_collect_cb(const herd_tl_rec_t *rec, void *arg)
{
    par_collect_t *c = arg;
    if (c->next_cb)
        c->next_cb(rec, c->next_arg);
    if (rec->rank < 0 || rec->rank >= c->world)
        return;
    int r = rec->rank;
    long it = c->iter[r];
    if (rec->end_ns > c->last[r])
        c->last[r] = rec->end_ns;
    if (rec->kind == HERD_TL_MARK && rec->label &&
        !strcmp(rec->label, "step")) {
        if (it >= 0 && it < PAR_REC_MAX_ITERS)
            c->end[at(it, r)] = rec->start_ns;
        it = ++c->iter[r];
        if (it < PAR_REC_MAX_ITERS)
            c->start[at(it, r)] = rec->start_ns;
        return;
    }
    if (rec->kind == HERD_TL_COLL && rec->status != HERD_OK)
        ddp_stuck_note(&c->stuck[r], rec, it);
    if (it < 0 || it >= PAR_REC_MAX_ITERS)
        return;
    double d = (double)(rec->end_ns - rec->start_ns) * 1e-9;
    if (rec->kind == HERD_TL_COMPUTE) {
        /* the DataLoader's wait is not the device's compute */
        int data = rec->label && !strcmp(rec->label, "data");
        *(data ? &c->data[at(it, r)] : &c->compute[at(it, r)]) += d;
        return;
    }
    int k = cat_of(rec->label);
    if (rec->kind != HERD_TL_COLL || rec->status != HERD_OK || k < 0)
        return;
    c->comm[at(it, r) * PAR_NCAT + (size_t)k] += d;
    if (r == 0 && rec->coll < HERD_COLL_COUNT) {
        c->counts[it].n[k][rec->coll]++;
        c->counts[it].bytes[k][rec->coll] += rec->bytes;
    }
}

static uint64_t step_end(const par_collect_t *c, int r, long it)
{
    if (c->end[at(it, r)])
        return c->end[at(it, r)];
    /* the last iteration ends with the rank's last record */
    return c->iter[r] == it && it + 1 == c->job->cfg.steps ? c->last[r] : 0;
}

void par_collect_counts(const par_collect_t *c, long it, par_counts_t *o)
{
    memset(o, 0, sizeof(*o));
    if (it >= 0 && it < PAR_REC_MAX_ITERS)
        *o = c->counts[it];
}

void par_collect_summary(const par_collect_t *c, par_summary_t *o)
{
    memset(o, 0, sizeof(*o));
    for (int r = 0; r < c->world; r++)
        o->iters = c->iter[r] + 1 > o->iters ? c->iter[r] + 1 : o->iters;
    o->iters = o->iters < PAR_REC_MAX_ITERS ? o->iters : PAR_REC_MAX_ITERS;
    double n = 0;
    /* the first step is not steady when there are others: the later
     * stages start it with the pipeline's fill already behind them, so
     * their step reads short */
    for (long it = o->iters > 1; it < o->iters; it++) {
        int complete = 1;
        for (int r = 0; r < c->world && complete; r++)
            complete =
                c->iter[r] >= it && step_end(c, r, it) && !c->stuck[r].valid;
        if (!complete)
            continue;
        o->nsteady++;
        for (int r = 0; r < c->world; r++) {
            double d =
                (double)(step_end(c, r, it) - c->start[at(it, r)]) * 1e-9;
            o->step_s += d;
            o->max_step_s = d > o->max_step_s ? d : o->max_step_s;
            o->compute_s += c->compute[at(it, r)];
            o->data_s += c->data[at(it, r)];
            for (int k = 0; k < PAR_NCAT; k++)
                o->comm_s[k] += c->comm[at(it, r) * PAR_NCAT + (size_t)k];
            n++;
        }
    }
    if (n > 0) {
        o->step_s /= n;
        o->compute_s /= n;
        o->data_s /= n;
        for (int k = 0; k < PAR_NCAT; k++)
            o->comm_s[k] /= n;
        double busy = o->compute_s + o->data_s;
        o->idle_s = o->step_s > busy ? o->step_s - busy : 0;
    }
    double P = c->job->pp, M = c->job->cfg.micro_batches, v = c->job->vstages;
    o->bubble = (P - 1) / (v * M + P - 1);
    if (par_job_memory(c->job, &o->mem) == HERD_OK)
        o->fits = par_job_fits(c->job, &o->mem);
}
