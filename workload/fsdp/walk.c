/* workload/fsdp/walk.c - one rank's training loop as FSDP runs it.
 *
 * Forward, unit by unit (the root first): all_gather the unit's shards
 * (unless still unsharded), the forward compute, then free the unsharded
 * parameters when resharding after forward (never the root's). The CPU
 * runs ahead of the GPU, so the next unit's all_gather is issued while
 * this unit computes: with limit_all_gathers one unit ahead (at most two
 * units unsharded), without it every all_gather of the forward at once
 * (and every unit unsharded at once). With cpu_bound the CPU is in step
 * with the GPU and only forward_prefetch issues the next all_gather
 * before this unit's compute.
 *
 * Backward, in reverse: all_gather again what was freed, the next unit's
 * all_gather before (BACKWARD_PRE) or after (BACKWARD_POST) this unit's
 * gradient compute, or when its own backward starts (none; with one
 * communication stream it then queues behind this unit's reduce_scatter);
 * then the reduce_scatter of the gradients (all_reduce for NO_SHARD, and
 * for HYBRID_SHARD the all_reduce of the shard across replicas after it)
 * on the reduce_scatter stream, and the unit is resharded. The step ends
 * by waiting for every reduction and the optimizer on the shard.
 *
 * On gloo (CPU) FSDP's own work in its hooks (fsdp.hook_s) is on the one
 * thread too: before a unit's forward and backward (its unshard) and after
 * them (its reshard; after backward, the gradient's reduction and copy).
 * It also decides which rank posts a collective first, which gloo's
 * transport is sensitive to (sim/gloo_lower.c). And ProcessGroupGloo
 * copies what it gathers and reduces through buffers of its own
 * (gloo_copy_s), at the model's copy rate.
 *
 * The walk also tracks the unsharded parameters and gradients alive, for
 * the memory prediction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/fsdp/job.h"

/* U_PARTIAL: resharded after forward to reshard_after_forward=N ranks
 * (FSDP2's int): this rank keeps 1/N of the unit until backward. */
enum { U_SHARDED, U_ISSUED, U_GATHERED, U_PARTIAL };

typedef struct fwalk {
    const fsdp_job_t *job;
    const fsdp_units_t *us;
    int rank;
    const ddp_emit_ops_t *ops;
    void *ctx;
    unsigned char *state; /* per unit */
    unsigned char *ran;   /* per unit: its forward ran this iteration */
    unsigned char *rs;    /* per unit: reductions to wait for */
    uint64_t alive, peak; /* unsharded bytes */
    int nalive, peak_units;
    uint64_t grad_prev; /* unsharded gradient still being reduced */
    double *bwd_delay;  /* per unit: this rank's delayed gradients in it
                           (stragglers.grads; NULL: none) */
} fwalk_t;

static int no_shard(const fwalk_t *w)
{
    return w->job->cfg.strategy == FSDP_NO_SHARD;
}

/* The ranks a unit's gradient is reduced over (FSDP's world_size: its
 * process group, the shard group but for NO_SHARD). */
static uint64_t reduce_world(const fwalk_t *w)
{
    return (uint64_t)(no_shard(w) ? w->job->world : w->job->shard);
}

static uint64_t unsharded_bytes(const fwalk_t *w, size_t u)
{
    return fsdp_job_shard_numel(w->job, &w->us->u[u]) *
           (uint64_t)w->job->shard * herd_dtype_size(w->job->param_dtype);
}

static uint64_t partial_bytes(const fwalk_t *w, size_t u)
{
    return unsharded_bytes(w, u) / (uint64_t)w->job->reshard_to;
}

/* Seconds to copy `numel` master elements between host and device. */
static double offload_s(const fwalk_t *w, uint64_t numel)
{
    return (double)(numel * herd_dtype_size(w->job->master_dtype)) /
           (w->job->cfg.offload_gbps * 1e9);
}

static herd_status_t compute(fwalk_t *w, double s, const char *what, size_t u);

/* The memory copies ProcessGroupGloo makes around a collective of p
 * shards of `shard` elements of `dt`, at the model's copy rate (none when
 * it gives none). all_gather_into_tensor: the input flattened into a
 * buffer, gloo's copy of it into the gathered buffer, and the p blocks
 * copied out to the output (p + 2 shards); reduce_scatter_tensor: the
 * whole input cloned before the all_reduce and this rank's chunk copied
 * out after it (p + 1 shards). */
static double gloo_copy_s(const fwalk_t *w, herd_coll_t coll, uint64_t shard,
                          herd_dtype_t dt)
{
    double bw = w->job->model.copy_bw;
    uint64_t p = (uint64_t)w->job->shard;
    uint64_t n = coll == HERD_COLL_ALL_GATHER ? p + 2 : p + 1;
    return bw > 0 ? (double)(n * shard * herd_dtype_size(dt)) / bw : 0;
}

/* FSDP's _get_gradient_predivide_factor for a reduction over `world`
 * ranks: the gradient is divided by f before it and by world / f after
 * it, each division a pass over the tensor (none for a factor of 1). */
static uint64_t predivide_factor(uint64_t world)
{
    uint64_t f = 1;
    while (world % f == 0 && world / f > f)
        f *= 2;
    return f;
}

/* One such division of `numel` gradient elements by `factor`. On gloo it
 * runs on the autograd thread, at the model's copy rate (a read and a
 * write, as a copy); on GPUs it is a kernel on FSDP's post-backward
 * stream beside the compute, not charged. */
static double divide_s(const fwalk_t *w, uint64_t numel, uint64_t factor)
{
    double bw = w->job->model.copy_bw;
    if (!w->job->cfg.gloo || factor <= 1 || bw <= 0)
        return 0;
    return (double)(numel * herd_dtype_size(w->job->reduce_dtype)) / bw;
}

static void note_peak(fwalk_t *w)
{
    if (w->alive > w->peak) {
        w->peak = w->alive;
        w->peak_units = w->nalive;
    }
}

/* group -1: the strategy's group for `coll` */
static herd_status_t emit(fwalk_t *w, herd_coll_t coll, uint64_t count,
                          herd_dtype_t dt, int group, int stream, size_t slot,
                          const char *what, size_t u)
{
    char label[64];
    snprintf(label, sizeof(label), "%s u%zu", what, u);
    ddp_emit_coll_t op = {coll,
                          count,
                          dt,
                          -1,
                          group >= 0 ? group
                                     : fsdp_job_group(w->job, w->rank, coll),
                          stream,
                          label};
    return w->ops->coll ? w->ops->coll(w->ctx, &op, slot)
                        : HERD_ERR_UNSUPPORTED;
}

static herd_status_t gather(fwalk_t *w, size_t u)
{
    if (w->state[u] != U_SHARDED && w->state[u] != U_PARTIAL)
        return HERD_OK;
    if (no_shard(w) || !w->us->u[u].numel) {
        w->state[u] = U_GATHERED;
        return HERD_OK;
    }
    uint64_t count = fsdp_job_shard_numel(w->job, &w->us->u[u]);
    int group = -1;
    herd_status_t st = HERD_OK;
    /* CPU offload: the shard comes from the host before its all_gather
     * (on the compute stream here: herd has one per rank) */
    if (w->job->cfg.cpu_offload && w->state[u] == U_SHARDED)
        st = compute(w, offload_s(w, count), "h2d", u);
    if (st != HERD_OK)
        return st;
    if (w->state[u] == U_PARTIAL) { /* from the post-forward shard */
        w->alive -= partial_bytes(w, u);
        count = count * (uint64_t)w->job->shard / (uint64_t)w->job->reshard_to;
        group = fsdp_job_post_forward_group(w->job, w->rank);
    }
    w->state[u] = U_ISSUED;
    w->alive += unsharded_bytes(w, u);
    w->nalive++;
    note_peak(w);
    st = emit(w, HERD_COLL_ALL_GATHER, count, w->job->param_dtype, group,
              FSDP_STREAM_AG, u, "all_gather", u);
    if (st == HERD_OK && w->job->cfg.gloo) { /* the call blocks */
        st = w->ops->wait(w->ctx, u);
        w->state[u] = U_GATHERED;
        if (st == HERD_OK && group < 0) /* not the post-forward regather */
            st = compute(w,
                         gloo_copy_s(w, HERD_COLL_ALL_GATHER, count,
                                     w->job->param_dtype),
                         "gloo copies", u);
    }
    return st;
}

static herd_status_t ready(fwalk_t *w, size_t u)
{
    herd_status_t st = gather(w, u);
    if (st == HERD_OK && w->state[u] == U_ISSUED) {
        st = w->ops->wait(w->ctx, u);
        w->state[u] = U_GATHERED;
    }
    return st;
}

static void reshard(fwalk_t *w, size_t u)
{
    if (w->state[u] == U_SHARDED || no_shard(w) || !w->us->u[u].numel) {
        w->state[u] = U_SHARDED;
        return;
    }
    if (w->state[u] == U_PARTIAL) {
        w->alive -= partial_bytes(w, u);
    } else {
        w->alive -= unsharded_bytes(w, u);
        w->nalive--;
    }
    w->state[u] = U_SHARDED;
}

/* FSDP2's reshard_after_forward=N: keep 1/N of the unit for backward. */
static void reshard_partial(fwalk_t *w, size_t u)
{
    if (no_shard(w) || !w->us->u[u].numel || w->state[u] != U_GATHERED)
        return;
    w->alive -= unsharded_bytes(w, u);
    w->alive += partial_bytes(w, u);
    w->nalive--;
    w->state[u] = U_PARTIAL;
}

/* The rate limiter: at most two non-root units unsharded. */
static herd_status_t prefetch(fwalk_t *w, long v)
{
    if (v < 0 || (size_t)v >= w->us->n ||
        (w->state[v] != U_SHARDED && w->state[v] != U_PARTIAL))
        return HERD_OK;
    int live = 0;
    for (size_t u = 1; u < w->us->n; u++)
        live += (w->state[u] == U_ISSUED || w->state[u] == U_GATHERED) &&
                w->us->u[u].numel;
    if (w->job->cfg.limit_all_gathers && live >= 2)
        return HERD_OK;
    return gather(w, (size_t)v);
}

static herd_status_t compute(fwalk_t *w, double s, const char *what, size_t u)
{
    char label[64];
    snprintf(label, sizeof(label), "%s u%zu", what, u);
    return s > 0 ? w->ops->compute(w->ctx, s, label) : HERD_OK;
}

/* FSDP's hook `what` for unit u on gloo (fsdp.hook_s; none elsewhere). */
static herd_status_t hook(fwalk_t *w, const char *what, size_t u)
{
    return w->job->cfg.gloo ? compute(w, w->job->cfg.hook_s, what, u) : HERD_OK;
}

static herd_status_t forward(fwalk_t *w, long it)
{
    const fsdp_units_t *us = w->us;
    herd_status_t st = HERD_OK;
    for (size_t u = 0; u < us->n && st == HERD_OK; u++) {
        w->ran[u] = !fsdp_job_skips(w->job, w->rank, u, it);
        if (!w->ran[u])
            continue;
        st = hook(w, "pre_forward", u);
        if (st == HERD_OK)
            st = gather(w, u);
        long next = (long)u + 1;
        while ((size_t)next < us->n &&
               fsdp_job_skips(w->job, w->rank, (size_t)next, it))
            next++;
        const fsdp_cfg_t *c = &w->job->cfg;
        if (st == HERD_OK && (c->forward_prefetch || !c->cpu_bound))
            st = prefetch(w, next);
        /* run-ahead without the rate limiter: every all_gather now */
        for (size_t v = (size_t)next + 1; st == HERD_OK && !c->cpu_bound &&
                                          !c->limit_all_gathers && v < us->n;
             v++)
            if (!fsdp_job_skips(w->job, w->rank, v, it))
                st = gather(w, v);
        if (st == HERD_OK)
            st = ready(w, u);
        if (st == HERD_OK)
            st = compute(w, us->u[u].fwd_s, "forward", u);
        if (st == HERD_OK)
            st = hook(w, "post_forward", u);
        if (st == HERD_OK && w->job->reshard_to && u != 0)
            reshard_partial(w, u);
        else if (st == HERD_OK && w->job->reshard_fwd && u != 0)
            reshard(w, u);
    }
    return st;
}

/* The unit's gradient reductions, issued on the reduce_scatter stream
 * and waited for at the end of the step; on gloo each call blocks. */
static herd_status_t reduce_issue(fwalk_t *w, size_t u)
{
    const fsdp_job_t *j = w->job;
    size_t n = w->us->n;
    const fsdp_unit_t *un = &w->us->u[u];
    uint64_t shard = fsdp_job_shard_numel(j, un);
    herd_status_t pre = compute(
        w,
        divide_s(w, no_shard(w) ? un->numel : shard * (uint64_t)j->shard,
                 predivide_factor(reduce_world(w))),
        "grad divide", u);
    if (pre != HERD_OK)
        return pre;
    if (no_shard(w))
        return emit(w, HERD_COLL_ALL_REDUCE, un->numel, j->reduce_dtype, -1,
                    FSDP_STREAM_RS, n + u, "all_reduce", u);
    /* gloo's reduce_scatter_tensor is an all_reduce of the whole (padded)
     * gradient, then a copy of this rank's chunk */
    herd_status_t st =
        j->cfg.gloo ? emit(w, HERD_COLL_ALL_REDUCE, shard * (uint64_t)j->shard,
                           j->reduce_dtype,
                           fsdp_job_group(j, w->rank, HERD_COLL_REDUCE_SCATTER),
                           FSDP_STREAM_RS, n + u, "reduce_scatter", u)
                    : emit(w, HERD_COLL_REDUCE_SCATTER, shard, j->reduce_dtype,
                           -1, FSDP_STREAM_RS, n + u, "reduce_scatter", u);
    int hybrid = j->cfg.strategy == FSDP_HYBRID_SHARD && j->replicas > 1;
    if (st == HERD_OK && j->cfg.gloo && hybrid) /* it blocks */
        st = w->ops->wait(w->ctx, n + u);
    if (st == HERD_OK && hybrid)
        st = emit(w, HERD_COLL_ALL_REDUCE, shard, j->reduce_dtype, -1,
                  FSDP_STREAM_RS, 2 * n + u, "all_reduce", u);
    return st;
}

static herd_status_t reduce(fwalk_t *w, size_t u)
{
    if (!w->us->u[u].numel)
        return HERD_OK;
    w->rs[u] = 1;
    herd_status_t st = reduce_issue(w, u);
    if (st != HERD_OK || !w->job->cfg.gloo)
        return st;
    /* gloo: the last call issued blocks too, nothing is left to wait for
     * at the end of the step */
    w->rs[u] = 0;
    size_t n = w->us->n;
    int hybrid = w->job->cfg.strategy == FSDP_HYBRID_SHARD &&
                 w->job->replicas > 1 && !no_shard(w);
    st = w->ops->wait(w->ctx, hybrid ? 2 * n + u : n + u);
    uint64_t shard = fsdp_job_shard_numel(w->job, &w->us->u[u]);
    if (st == HERD_OK && !no_shard(w))
        st = compute(w,
                     gloo_copy_s(w, HERD_COLL_REDUCE_SCATTER, shard,
                                 w->job->reduce_dtype),
                     "gloo copies", u);
    uint64_t world = reduce_world(w);
    if (st == HERD_OK)
        st = compute(w,
                     divide_s(w, no_shard(w) ? w->us->u[u].numel : shard,
                              world / predivide_factor(world)),
                     "grad divide", u);
    return st;
}

static long prev_ran(const fwalk_t *w, size_t u)
{
    long v = (long)u - 1;
    while (v >= 0 && !w->ran[v])
        v--;
    return v;
}

static herd_status_t backward(fwalk_t *w)
{
    const fsdp_bwd_prefetch_t pf = w->job->cfg.backward_prefetch;
    herd_status_t st = HERD_OK;
    for (size_t u = w->us->n; u-- > 0 && st == HERD_OK;) {
        if (!w->ran[u])
            continue; /* no forward, no gradients: no reduction either */
        st = hook(w, "pre_backward", u);
        if (st == HERD_OK)
            st = gather(w, u);
        if (st == HERD_OK && pf == FSDP_BWD_PRE)
            st = prefetch(w, prev_ran(w, u));
        if (st == HERD_OK)
            st = ready(w, u);
        uint64_t grad = no_shard(w) ? 0 : unsharded_bytes(w, u);
        w->alive += grad;
        note_peak(w);
        if (st == HERD_OK)
            st = compute(
                w, w->us->u[u].bwd_s + (w->bwd_delay ? w->bwd_delay[u] : 0),
                "backward", u);
        /* FSDP frees the unit's parameters, then (BACKWARD_POST) issues
         * the next all_gather ahead of this unit's reduce_scatter */
        if (st == HERD_OK && !no_shard(w))
            reshard(w, u);
        if (st == HERD_OK && pf == FSDP_BWD_POST)
            st = prefetch(w, prev_ran(w, u));
        if (st == HERD_OK)
            st = hook(w, "post_backward", u);
        if (st == HERD_OK)
            st = reduce(w, u);
        w->alive -= w->grad_prev; /* the previous reduction is done */
        w->grad_prev = grad;
    }
    return st;
}

static herd_status_t finalize(fwalk_t *w)
{
    size_t n = w->us->n;
    int hybrid =
        w->job->cfg.strategy == FSDP_HYBRID_SHARD && w->job->replicas > 1;
    herd_status_t st = HERD_OK;
    for (size_t u = n; u-- > 0 && st == HERD_OK;) {
        if (!w->rs[u])
            continue;
        w->rs[u] = 0;
        st = w->ops->wait(w->ctx, n + u);
        if (st == HERD_OK && hybrid && !no_shard(w))
            st = w->ops->wait(w->ctx, 2 * n + u);
    }
    w->alive -= w->grad_prev;
    w->grad_prev = 0;
    if (st == HERD_OK)
        st = w->ops->mark(w->ctx, "finalize");
    const fsdp_cfg_t *c = &w->job->cfg;
    uint64_t shard = 0;
    for (size_t u = 0; c->cpu_offload && u < n; u++)
        shard += w->ran[u] ? fsdp_job_shard_numel(w->job, &w->us->u[u]) : 0;
    /* CPU offload: the gradient shards go to the host, the optimizer
     * runs there */
    if (st == HERD_OK && c->cpu_offload && shard)
        st = w->ops->compute(w->ctx, offload_s(w, shard), "d2h");
    double opt = w->job->model.opt_s / (double)w->job->shard *
                 (c->cpu_offload ? c->cpu_optimizer_scale : 1);
    if (st == HERD_OK && opt > 0)
        st = w->ops->compute(w->ctx, opt, "optimizer");
    return st;
}

/* Per unit, the delays of this rank's straggling gradients in it: FSDP
 * reduces a unit once all its gradients are ready, after its whole
 * backward, so both kinds (docs/ddp.md) hold up the unit's reduction:
 * the delay is added to the unit's backward compute. */
static herd_status_t unit_delays(fwalk_t *w)
{
    ddp_rank_delays_t rd;
    herd_status_t st = ddp_rank_delays_make(&w->job->grad_delays,
                                            &w->job->model, w->rank, &rd);
    if (st != HERD_OK || (!rd.layer && !rd.grad))
        return st;
    w->bwd_delay = calloc(w->us->n + 1, sizeof(double));
    for (size_t u = 0; w->bwd_delay && u < w->us->n; u++)
        for (size_t i = 0; i < w->us->u[u].nparams; i++) {
            size_t p = w->us->u[u].params[i];
            w->bwd_delay[u] +=
                (rd.layer ? rd.layer[p] : 0) + (rd.grad ? rd.grad[p] : 0);
        }
    ddp_rank_delays_fini(&rd);
    return w->bwd_delay ? HERD_OK : HERD_ERR_NO_MEMORY;
}

static herd_status_t walk_rank(const fsdp_job_t *job, int rank,
                               const ddp_emit_ops_t *ops, void *ctx, fwalk_t *w)
{
    *w = (fwalk_t){.job = job,
                   .us = fsdp_job_units(job, rank),
                   .rank = rank,
                   .ops = ops,
                   .ctx = ctx};
    size_t n = w->us->n + 1;
    w->state = calloc(n, 1);
    w->ran = calloc(n, 1);
    w->rs = calloc(n, 1);
    herd_status_t st =
        w->state && w->ran && w->rs ? HERD_OK : HERD_ERR_NO_MEMORY;
    if (st == HERD_OK)
        st = unit_delays(w);
    for (long it = 0; st == HERD_OK && it < fsdp_job_steps(job, rank); it++) {
        st = ops->mark(ctx, "step");
        if (st == HERD_OK)
            st = forward(w, it);
        if (st == HERD_OK)
            st = backward(w);
        if (st == HERD_OK)
            st = finalize(w);
    }
    free(w->state);
    free(w->ran);
    free(w->rs);
    free(w->bwd_delay);
    return st;
}

herd_status_t fsdp_job_walk(const void *job, int rank,
                            const ddp_emit_ops_t *ops, void *ctx)
{
    fwalk_t w;
    return walk_rank(job, rank, ops, ctx, &w);
}

herd_status_t fsdp_job_memory(const fsdp_job_t *job, int rank,
                              fsdp_memory_t *out)
{
    fwalk_t w;
    herd_status_t st = walk_rank(job, rank, &wl_null_ops, NULL, &w);
    if (st != HERD_OK)
        return st;
    const fsdp_units_t *us = fsdp_job_units(job, rank);
    uint64_t shard = 0;
    for (size_t u = 0; u < us->n; u++)
        shard += fsdp_job_shard_numel(job, &us->u[u]);
    fsdp_memory_t m = {0};
    m.params = shard * herd_dtype_size(job->master_dtype);
    m.grads = m.params;
    m.optimizer = (uint64_t)((double)m.params * job->cfg.optim_states);
    m.unsharded = w.peak;
    m.units_alive = w.peak_units;
    m.total = m.params + m.grads + m.optimizer + m.unsharded;
    if (job->cfg.cpu_offload) { /* the shards live on the host */
        m.host = m.params + m.grads + m.optimizer;
        m.total = m.unsharded;
    }
    *out = m;
    return HERD_OK;
}
