/* workload/ddp/job.c - build a DDP job: load and scale the model, compute the
 * construction and rebuilt bucket layouts, and how many iterations each
 * rank runs (from `steps`, or from the data: DistributedSampler, unpadded
 * shards or explicit shard sizes). */
#include "workload/ddp/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/ddp/sampler.h"

/* The most iterations a rank may run, and rank-iterations a job may
 * ask for: one number in a scenario (a shard of 2^32 samples, a huge
 * dataset) must not silently mean hours of simulation and gigabytes. The
 * first is ddp.steps' own upper bound. */
#define DDP_MAX_ITERS 10000000L
#define DDP_MAX_RANK_ITERS 1000000000.0

static uint64_t iters_for_rank(const ddp_cfg_t *c, int world, int rank)
{
    if (c->dataset_size == 0 && c->shard_sizes.n == 0)
        return (uint64_t)c->steps;
    uint64_t samples;
    if (c->shard_sizes.n)
        samples = (uint64_t)c->shard_sizes.v[rank];
    else if (c->shards)
        samples = ddp_shard_samples(c->dataset_size, world, rank);
    else {
        ddp_sampler_t s = {.dataset_size = c->dataset_size,
                           .replicas = world,
                           .drop_last = c->drop_last};
        samples = ddp_sampler_num_samples(&s);
    }
    uint64_t b =
        ddp_loader_batches(samples, c->batch_size, c->loader_drop_last);
    return b > (uint64_t)DDP_MAX_ITERS ? b : b * (uint64_t)c->epochs;
}

/* Refuse a job larger than the bounds above, naming the key it comes
 * from and the limit. */
static herd_status_t check_work(const ddp_job_t *j, const uint64_t *iters,
                                char *err, size_t errlen)
{
    const ddp_cfg_t *c = &j->cfg;
    const char *key = c->shard_sizes.n  ? "shard_sizes"
                      : c->dataset_size ? "dataset_size"
                                        : "steps";
    double total = 0;
    for (int r = 0; r < j->world; r++) {
        if (iters[r] > (uint64_t)DDP_MAX_ITERS) {
            snprintf(err, errlen,
                     "ddp.%s: rank %d would run %llu iterations (batch_size "
                     "%llu, epochs %ld); the limit is %ld per rank",
                     key, r, (unsigned long long)iters[r],
                     (unsigned long long)c->batch_size, c->epochs,
                     DDP_MAX_ITERS);
            return HERD_ERR_INVALID_ARG;
        }
        total += (double)iters[r];
    }
    if (total > DDP_MAX_RANK_ITERS) {
        snprintf(err, errlen,
                 "ddp.%s: %d ranks would run %.0f iterations in all; the "
                 "limit is %.0f (fewer steps or ranks)",
                 key, j->world, total, DDP_MAX_RANK_ITERS);
        return HERD_ERR_INVALID_ARG;
    }
    return HERD_OK;
}

static herd_status_t make_layouts(ddp_job_t *j)
{
    const ddp_cfg_t *c = &j->cfg;
    const herd_dtype_t *gdt = c->have_grad_dtype ? &c->grad_dtype : NULL;
    uint64_t cap = ddp_cap_bytes(c->bucket_cap_mb);
    uint64_t first =
        c->first_bucket_mb > 0 ? ddp_cap_bytes(c->first_bucket_mb) : cap;
    herd_status_t st = ddp_bucket_for_phase_first(
        &j->model, DDP_PHASE_INITIAL, first, cap, c->find_unused,
        c->static_graph, NULL, gdt, &j->initial);
    j->rebuilds = ddp_rebuilds(c->find_unused, c->static_graph);
    j->rebuild_after = c->static_graph ? 2 : 1;
    if (st == HERD_OK)
        st = ddp_bucket_for_phase_first(
            &j->model, j->rebuilds ? DDP_PHASE_REBUILT : DDP_PHASE_INITIAL,
            first, cap, c->find_unused, c->static_graph, j->ready, gdt,
            &j->rebuilt);
    if (st != HERD_OK)
        return st;
    const ddp_buckets_t *ls[2] = {&j->initial, &j->rebuilt};
    for (int l = 0; l < 2; l++)
        for (size_t k = 0; k < ls[l]->n; k++)
            if (ls[l]->b[k].bytes > j->max_bucket_bytes)
                j->max_bucket_bytes = ls[l]->b[k].bytes;
    size_t nb = j->initial.n > j->rebuilt.n ? j->initial.n : j->rebuilt.n;
    /* PowerSGD: the uncompressed tensors', P's and Q's all_reduce */
    j->max_slots = (j->cfg.hook == DDP_HOOK_POWERSGD ? 3 * nb : nb) + 4;
    /* + unused map, eval, barrier, broadcasts */
    return HERD_OK;
}

static herd_status_t load_model(ddp_job_t *j, const char *dir, char *err,
                                size_t errlen)
{
    char path[2048];
    ddp_model_resolve(j->cfg.model, dir, path, sizeof(path));
    herd_status_t st = ddp_model_load(path, &j->model, err, errlen);
    if (st != HERD_OK)
        return st;
    ddp_model_scale_compute(&j->model, j->cfg.compute_scale);
    j->ready = malloc(j->model.nparams * sizeof(size_t));
    if (!j->ready)
        return HERD_ERR_NO_MEMORY;
    ddp_model_ready_order(&j->model, j->ready);
    st = ddp_cfg_check(&j->cfg, j->world, j->model.nparams, err, errlen);
    return st == HERD_OK ? ddp_grad_delays_check(&j->cfg.grad_delays, &j->model,
                                                 j->world, err, errlen)
                         : st;
}

herd_status_t ddp_job_create(const ddp_cfg_t *cfg, const char *model_dir,
                             int world, ddp_job_t **out, char *err,
                             size_t errlen)
{
    if (!cfg || world <= 0 || !out)
        return HERD_ERR_INVALID_ARG;
    ddp_job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return HERD_ERR_NO_MEMORY;
    j->cfg = *cfg;
    j->world = world;
    herd_status_t st = load_model(j, model_dir, err, errlen);
    if (st == HERD_OK)
        st = make_layouts(j);
    uint64_t *iters = NULL;
    if (st == HERD_OK &&
        (!(j->rank_iters = calloc((size_t)world, sizeof(long))) ||
         !(iters = calloc((size_t)world, sizeof(uint64_t)))))
        st = HERD_ERR_NO_MEMORY;
    for (int r = 0; st == HERD_OK && r < world; r++)
        iters[r] = iters_for_rank(cfg, world, r);
    if (st == HERD_OK)
        st = check_work(j, iters, err, errlen);
    for (int r = 0; st == HERD_OK && r < world; r++)
        j->rank_iters[r] = (long)iters[r];
    free(iters);
    if (st != HERD_OK) {
        if (st == HERD_ERR_NO_MEMORY)
            snprintf(err, errlen, "out of memory");
        ddp_job_destroy(j);
        return st;
    }
    *out = j;
    return HERD_OK;
}

void ddp_job_destroy(ddp_job_t *j)
{
    if (!j)
        return;
    ddp_buckets_fini(&j->initial);
    ddp_buckets_fini(&j->rebuilt);
    ddp_model_fini(&j->model);
    free(j->rank_iters);
    free(j->ready);
    free(j);
}

int ddp_job_is_sync(const ddp_job_t *job, long iter)
{
    return (iter + 1) % job->cfg.grad_accum == 0;
}

const ddp_buckets_t *ddp_job_layout(const ddp_job_t *job, long iter)
{
    if (!job->rebuilds)
        return &job->initial;
    /* the rebuild comes at the forward after `rebuild_after` syncs */
    long syncs = iter / job->cfg.grad_accum;
    return syncs >= job->rebuild_after ? &job->rebuilt : &job->initial;
}

uint64_t ddp_job_wire_bytes(const ddp_job_t *job, const ddp_bucket_t *b)
{
    if ((job->cfg.hook == DDP_HOOK_FP16 || job->cfg.hook == DDP_HOOK_BF16) &&
        herd_dtype_size(b->dtype) > 2)
        return b->bytes / herd_dtype_size(b->dtype) * 2;
    return b->bytes;
}
