/* workload/common/loader.c - the DataLoader model and the emitter that
 * puts its waits into a walk (loader.h). */
#include "workload/common/loader.h"

#include <stdlib.h>
#include <string.h>

herd_status_t wl_loader_init(wl_loader_t *l, const wl_data_t *d, int rank,
                             const ddp_emit_ops_t *ops, void *ctx,
                             double (*now)(void *), void *now_arg)
{
    size_t w = (size_t)d->cfg.num_workers;
    size_t ahead = w * (size_t)d->cfg.prefetch_factor;
    *l = (wl_loader_t){.d = d,
                       .rank = rank,
                       .ops = ops,
                       .ctx = ctx,
                       .now = now,
                       .now_arg = now_arg,
                       .scale = 1};
    if (w) {
        l->cons = calloc(ahead, sizeof(double));
        l->free_at = calloc(w, sizeof(double));
        if (!l->cons || !l->free_at) {
            wl_loader_fini(l);
            return HERD_ERR_NO_MEMORY;
        }
    }
    /* the simulator scales compute by the rank's factor: undo it, the
     * loader is not the rank's device */
    for (size_t i = 0; now && i < d->ncompute; i++)
        if (d->compute[i].rank == rank && d->compute[i].compute_factor > 0)
            l->scale = 1 / d->compute[i].compute_factor;
    l->t0 = now ? now(now_arg) : 0;
    return HERD_OK;
}

void wl_loader_fini(wl_loader_t *l)
{
    free(l->cons);
    free(l->free_at);
    l->cons = l->free_at = NULL;
}

double wl_loader_next(wl_loader_t *l, double need)
{
    const wl_data_t *d = l->d;
    long w = d->cfg.num_workers, ahead = w * d->cfg.prefetch_factor;
    double load = d->cfg.load_s * wl_data_factor(d, l->rank, l->taken);
    double wait = load;
    if (l->k == 0) { /* a new iterator: its workers start now */
        l->start = need;
        for (long i = 0; i < w; i++)
            l->free_at[i] = need;
    }
    if (w > 0) {
        /* batch k is asked for when the iterator starts (the first
         * prefetch * W) or when the loop takes batch k - prefetch * W */
        double sent = l->k < ahead ? l->start : l->cons[l->k % ahead];
        double *worker = &l->free_at[l->k % w];
        double begin = sent > *worker ? sent : *worker;
        *worker = begin + load;
        wait = *worker > need ? *worker - need : 0;
        l->cons[l->k % ahead] = need + wait;
    }
    l->k++;
    l->taken++;
    long per = d->rank_batches && d->epochs > 0
                   ? d->rank_batches[l->rank] / d->epochs
                   : 0;
    if (per > 0 && l->k >= per)
        l->k = 0; /* the next epoch makes a new iterator */
    return wait;
}

static double clock_s(const wl_loader_t *l)
{
    return l->now ? l->now(l->now_arg) - l->t0 : l->emitted;
}

static herd_status_t d_compute(void *c, double s, const char *label)
{
    wl_loader_t *l = c;
    l->emitted += s > 0 ? s : 0;
    return l->ops->compute(l->ctx, s, label);
}

static herd_status_t d_mark(void *c, const char *label)
{
    wl_loader_t *l = c;
    herd_status_t st = l->ops->mark(l->ctx, label);
    if (st != HERD_OK || !label || strcmp(label, "step"))
        return st;
    if (l->d->rank_batches && l->taken >= l->d->rank_batches[l->rank])
        return HERD_OK; /* out of data (a joined rank's shadow step) */
    double wait = wl_loader_next(l, clock_s(l));
    if (!(wait > 0))
        return HERD_OK;
    l->emitted += wait;
    l->waited += wait;
    return l->ops->compute(l->ctx, l->now ? wait * l->scale : wait, "data");
}

static herd_status_t d_all_reduce(void *c, uint64_t count, herd_dtype_t dt,
                                  size_t slot, const char *label)
{
    wl_loader_t *l = c;
    if (!l->ops->all_reduce)
        return HERD_ERR_UNSUPPORTED;
    return l->ops->all_reduce(l->ctx, count, dt, slot, label);
}

static herd_status_t d_broadcast(void *c, uint64_t count, herd_dtype_t dt,
                                 int root, size_t slot, const char *label)
{
    wl_loader_t *l = c;
    if (!l->ops->broadcast)
        return HERD_ERR_UNSUPPORTED;
    return l->ops->broadcast(l->ctx, count, dt, root, slot, label);
}

static herd_status_t d_barrier(void *c, size_t slot, const char *label)
{
    wl_loader_t *l = c;
    if (!l->ops->barrier)
        return HERD_ERR_UNSUPPORTED;
    return l->ops->barrier(l->ctx, slot, label);
}

static herd_status_t d_wait(void *c, size_t slot)
{
    wl_loader_t *l = c;
    return l->ops->wait(l->ctx, slot);
}

static herd_status_t d_coll(void *c, const ddp_emit_coll_t *op, size_t slot)
{
    wl_loader_t *l = c;
    return l->ops->coll ? l->ops->coll(l->ctx, op, slot) : HERD_ERR_UNSUPPORTED;
}

const ddp_emit_ops_t wl_data_ops = {
    .compute = d_compute,
    .mark = d_mark,
    .all_reduce = d_all_reduce,
    .broadcast = d_broadcast,
    .barrier = d_barrier,
    .wait = d_wait,
    .coll = d_coll,
};

herd_status_t wl_data_walk(const wl_data_t *d, ddp_walk_fn walk,
                           const void *job, int rank, const ddp_emit_ops_t *ops,
                           void *ctx, double (*now)(void *), void *now_arg)
{
    if (!wl_data_on(d))
        return walk(job, rank, ops, ctx);
    wl_loader_t l;
    herd_status_t st = wl_loader_init(&l, d, rank, ops, ctx, now, now_arg);
    if (st == HERD_OK)
        st = walk(job, rank, &wl_data_ops, &l);
    wl_loader_fini(&l);
    return st;
}
