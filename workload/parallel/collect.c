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
    c->comm = calloc(w * it * PAR_NCAT, sizeof(double));
    c->counts = calloc(it, sizeof(par_counts_t));
    if (!c->comm || !c->counts ||
        wl_steps_init(&c->steps, job->world) != HERD_OK) {
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
    free(c->comm);
    free(c->counts);
    wl_steps_fini(&c->steps);
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

void par_collect_cb(const herd_tl_rec_t *rec, void *arg)
{
    par_collect_t *c = arg;
    if (c->next_cb)
        c->next_cb(rec, c->next_arg);
    if (rec->rank < 0 || rec->rank >= c->world)
        return;
    int r = rec->rank;
    long it;
    if (wl_steps_take(&c->steps, rec, &it))
        return;
    if (it < 0 || it >= PAR_REC_MAX_ITERS)
        return;
    double d = (double)(rec->end_ns - rec->start_ns) * 1e-9;
    if (rec->kind == HERD_TL_COMPUTE) {
        /* the DataLoader's wait is not the device's compute */
        int data = rec->label && !strcmp(rec->label, "data");
        size_t i = wl_steps_at(it, r);
        *(data ? &c->steps.data[i] : &c->steps.compute[i]) += d;
        return;
    }
    int k = cat_of(rec->label);
    if (rec->kind != HERD_TL_COLL || rec->status != HERD_OK || k < 0)
        return;
    c->comm[wl_steps_at(it, r) * PAR_NCAT + (size_t)k] += d;
    if (r == 0 && rec->coll < HERD_COLL_COUNT) {
        c->counts[it].n[k][rec->coll]++;
        c->counts[it].bytes[k][rec->coll] += rec->bytes;
    }
}

static uint64_t step_end(const par_collect_t *c, int r, long it)
{
    return wl_steps_end(&c->steps, r, it, c->job->cfg.steps);
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
    o->iters = wl_steps_recorded(&c->steps, c->world);
    double n = 0;
    /* the first step is not steady when there are others: the later
     * stages start it with the pipeline's fill already behind them, so
     * their step reads short */
    for (long it = o->iters > 1; it < o->iters; it++) {
        int complete = 1;
        for (int r = 0; r < c->world && complete; r++)
            complete = c->steps.iter[r] >= it && step_end(c, r, it) &&
                       !c->steps.stuck[r].valid;
        if (!complete)
            continue;
        o->nsteady++;
        for (int r = 0; r < c->world; r++) {
            size_t i = wl_steps_at(it, r);
            double d = (double)(step_end(c, r, it) - c->steps.start[i]) * 1e-9;
            o->step_s += d;
            o->max_step_s = d > o->max_step_s ? d : o->max_step_s;
            o->compute_s += c->steps.compute[i];
            o->data_s += c->steps.data[i];
            for (int k = 0; k < PAR_NCAT; k++)
                o->comm_s[k] += c->comm[i * PAR_NCAT + (size_t)k];
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
