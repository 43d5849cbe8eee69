/* workload/fsdp/collect.c - gather an FSDP run's timeline records per
 * rank, iteration and unit, and turn them into step predictions (see
 * fsdp/report.h for the definitions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/common/collect.h"
#include "workload/fsdp/report.h"

herd_status_t fsdp_collect_create(const fsdp_job_t *job, fsdp_collect_t **out)
{
    fsdp_collect_t *c = calloc(1, sizeof(*c));
    if (!c)
        return HERD_ERR_NO_MEMORY;
    size_t w = (size_t)job->world, it = FSDP_REC_MAX_ITERS;
    c->job = job;
    c->world = job->world;
    c->nu = job->units.n > job->bad_units.n ? job->units.n : job->bad_units.n;
    c->comm = calloc(w * it, sizeof(double));
    c->ut = calloc(it * c->nu, sizeof(fsdp_utime_t));
    c->tail = calloc(it, sizeof(double));
    c->prev = calloc(w, sizeof(uint64_t));
    if (!c->comm || !c->ut || !c->tail || !c->prev ||
        wl_steps_init(&c->steps, job->world) != HERD_OK) {
        fsdp_collect_destroy(c);
        return HERD_ERR_NO_MEMORY;
    }
    /* from the job alone: once, not per summary */
    herd_status_t st = fsdp_job_memory_most(job, &c->mem);
    if (st != HERD_OK) {
        fsdp_collect_destroy(c);
        return st;
    }
    *out = c;
    return HERD_OK;
}

void fsdp_collect_destroy(fsdp_collect_t *c)
{
    if (!c)
        return;
    free(c->comm);
    free(c->ut);
    free(c->tail);
    free(c->prev);
    wl_steps_fini(&c->steps);
    free(c);
}

static void on_compute(fsdp_collect_t *c, const herd_tl_rec_t *rec, long it)
{
    int r = rec->rank;
    double gap = rec->start_ns > c->prev[r]
                     ? (double)(rec->start_ns - c->prev[r]) * 1e-9
                     : 0;
    c->prev[r] = rec->end_ns;
    double d = (double)(rec->end_ns - rec->start_ns) * 1e-9;
    if (rec->label && !strcmp(rec->label, "data")) {
        /* the DataLoader, not the device */
        c->steps.data[wl_steps_at(it, r)] += d;
        return;
    }
    c->steps.compute[wl_steps_at(it, r)] += d;
    long f = wl_label_index(rec->label, "forward u"),
         b = wl_label_index(rec->label, "backward u");
    if (f >= 0 && (size_t)f < c->nu)
        c->ut[(size_t)it * c->nu + (size_t)f].fwd_gap += gap;
    else if (b >= 0 && (size_t)b < c->nu)
        c->ut[(size_t)it * c->nu + (size_t)b].bwd_gap += gap;
    else if (rec->label && !strcmp(rec->label, "optimizer"))
        c->tail[it] += gap;
}

static void on_coll(fsdp_collect_t *c, const herd_tl_rec_t *rec, long it)
{
    int r = rec->rank;
    c->comm[wl_steps_at(it, r)] += (double)(rec->end_ns - rec->start_ns) * 1e-9;
    if (r != 0)
        return;
    long g = wl_label_index(rec->label, "all_gather u"),
         s = wl_label_index(rec->label, "reduce_scatter u"),
         a = wl_label_index(rec->label, "all_reduce u");
    fsdp_utime_t *ut = c->ut + (size_t)it * c->nu;
    if (g >= 0 && (size_t)g < c->nu)
        ut[g].ag++, ut[g].ag_bytes += rec->bytes;
    else if (s >= 0 && (size_t)s < c->nu)
        ut[s].rs++, ut[s].rs_bytes += rec->bytes;
    else if (a >= 0 && (size_t)a < c->nu)
        ut[a].ar++;
}

void fsdp_collect_cb(const herd_tl_rec_t *rec, void *arg)
{
    fsdp_collect_t *c = arg;
    if (c->next_cb)
        c->next_cb(rec, c->next_arg);
    if (rec->rank < 0 || rec->rank >= c->world)
        return;
    int r = rec->rank;
    long it;
    if (wl_steps_take(&c->steps, rec, &it)) {
        c->prev[r] = rec->start_ns;
        return;
    }
    if (it < 0 || it >= FSDP_REC_MAX_ITERS)
        return;
    if (rec->kind == HERD_TL_COMPUTE)
        on_compute(c, rec, it);
    else if (rec->kind == HERD_TL_COLL && rec->status == HERD_OK)
        on_coll(c, rec, it);
}

static uint64_t step_end(const fsdp_collect_t *c, int r, long it)
{
    return wl_steps_end(&c->steps, r, it, fsdp_job_steps(c->job, r));
}

void fsdp_collect_step(const fsdp_collect_t *c, long it, fsdp_step_pred_t *o)
{
    memset(o, 0, sizeof(*o));
    o->iter = it;
    if (it < 0 || it >= FSDP_REC_MAX_ITERS)
        return;
    int n = 0;
    o->complete = 1;
    for (int r = 0; r < c->world; r++) {
        uint64_t end = step_end(c, r, it);
        if (c->steps.iter[r] < it || !end || c->steps.stuck[r].valid) {
            o->complete = 0;
            continue;
        }
        size_t i = wl_steps_at(it, r);
        double d = (double)(end - c->steps.start[i]) * 1e-9;
        o->step_s += d;
        o->max_step_s = d > o->max_step_s ? d : o->max_step_s;
        o->compute_s += c->steps.compute[i];
        o->data_s += c->steps.data[i];
        o->comm_s += c->comm[i];
        n++;
    }
    if (!n)
        return;
    o->step_s /= n;
    o->compute_s /= n;
    o->comm_s /= n;
    o->data_s /= n;
    double busy = o->compute_s + o->data_s;
    o->exposed_s = o->step_s > busy ? o->step_s - busy : 0;
}

void fsdp_collect_summary(const fsdp_collect_t *c, fsdp_summary_t *o)
{
    memset(o, 0, sizeof(*o));
    o->iters = wl_steps_recorded(&c->steps, c->world);
    for (long it = 0; it < o->iters; it++) {
        fsdp_step_pred_t p;
        fsdp_collect_step(c, it, &p);
        if (!p.complete)
            continue;
        o->step_s += p.step_s;
        o->exposed_s += p.exposed_s;
        o->compute_s += p.compute_s;
        o->comm_s += p.comm_s;
        o->data_s += p.data_s;
        o->nsteady++;
    }
    if (o->nsteady) {
        double n = (double)o->nsteady;
        o->step_s /= n;
        o->exposed_s /= n;
        o->compute_s /= n;
        o->comm_s /= n;
        o->data_s /= n;
        o->overlap = o->comm_s > 0 ? 1.0 - o->exposed_s / o->comm_s : 0;
        o->overlap = o->overlap < 0 ? 0 : o->overlap > 1 ? 1 : o->overlap;
    }
    o->mem = c->mem;
    o->fits = fsdp_job_fits(c->job, &c->mem);
}

void fsdp_collect_unit(const fsdp_collect_t *c, size_t u, fsdp_utime_t *o)
{
    memset(o, 0, sizeof(*o));
    long n = 0, iters = wl_steps_recorded(&c->steps, c->world);
    for (long it = 0; u < c->nu && it < iters; it++) {
        fsdp_step_pred_t p;
        fsdp_collect_step(c, it, &p);
        if (!p.complete)
            continue;
        const fsdp_utime_t *t = &c->ut[(size_t)it * c->nu + u];
        o->fwd_gap += t->fwd_gap / c->world;
        o->bwd_gap += t->bwd_gap / c->world;
        o->ag = t->ag, o->rs = t->rs, o->ar = t->ar;
        o->ag_bytes = t->ag_bytes, o->rs_bytes = t->rs_bytes;
        n++;
    }
    if (n)
        o->fwd_gap /= (double)n, o->bwd_gap /= (double)n;
}
