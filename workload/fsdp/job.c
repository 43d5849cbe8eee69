/* workload/fsdp/job.c - build an FSDP job: load and scale the model
 * (DDP's loader), wrap it into units (per rank when a rank wraps
 * differently), the shard and replica groups of the strategy, sizes of
 * the buffers and request slots; the job's trace export through DDP's
 * recorder; and the memory of the rank with the most, against the
 * device's (fsdp.gpu_mem). */
#include "workload/fsdp/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/ddp/trace.h"

static herd_status_t add_group(fsdp_job_t *j, int first, int stride, int n)
{
    return wl_groups_add(&j->groups, &j->ngroups, first, stride, n);
}

/* HYBRID_SHARD: shard groups [k*S, (k+1)*S), then replica groups {i,
 * i+S, ...}; with two streams, the reduce_scatter stream's own copy of
 * the shard group (or of the world): a group has its own sequence
 * numbers, so the two streams can never be matched against each other. */
static herd_status_t make_groups(fsdp_job_t *j)
{
    herd_status_t st = HERD_OK;
    int s = j->shard, r = j->replicas;
    int hybrid = j->cfg.strategy == FSDP_HYBRID_SHARD;
    for (int k = 0; hybrid && st == HERD_OK && k < r; k++)
        st = add_group(j, k * s, 1, s);
    for (int i = 0; hybrid && st == HERD_OK && i < s; i++)
        st = add_group(j, i, s, r);
    if (j->cfg.comm_streams == 2) {
        for (int k = 0; hybrid && st == HERD_OK && k < r; k++)
            st = add_group(j, k * s, 1, s);
        if (!hybrid && st == HERD_OK)
            st = add_group(j, 0, 1, j->world);
    }
    /* reshard_after_forward=N: consecutive groups of N inside a shard
     * group, for the backward all_gathers */
    j->post_group0 = j->ngroups + 1;
    for (int k = 0;
         j->reshard_to && st == HERD_OK && k < j->world / j->reshard_to; k++)
        st = add_group(j, k * j->reshard_to, 1, j->reshard_to);
    return st;
}

int fsdp_job_post_forward_group(const fsdp_job_t *j, int rank)
{
    return j->reshard_to ? j->post_group0 + rank / j->reshard_to : -1;
}

int fsdp_job_group(const fsdp_job_t *j, int rank, herd_coll_t coll)
{
    int hybrid = j->cfg.strategy == FSDP_HYBRID_SHARD;
    int s = j->shard, r = j->replicas, two = j->cfg.comm_streams == 2;
    if (coll == HERD_COLL_ALL_GATHER)
        return hybrid ? 1 + rank / s : 0;
    if (coll == HERD_COLL_REDUCE_SCATTER || j->cfg.strategy == FSDP_NO_SHARD)
        return !two ? (hybrid ? 1 + rank / s : 0)
                    : (hybrid ? 1 + r + s + rank / s : 1);
    return hybrid ? 1 + r + rank % s : -1; /* the replicas' all_reduce */
}

uint64_t fsdp_job_shard_numel(const fsdp_job_t *j, const fsdp_unit_t *u)
{
    return (u->numel + (uint64_t)j->shard - 1) / (uint64_t)j->shard;
}

const fsdp_units_t *fsdp_job_units(const fsdp_job_t *j, int rank)
{
    return ddp_list_has(&j->cfg.bad_wrap_ranks, rank, 0) ? &j->bad_units
                                                         : &j->units;
}

int fsdp_job_skips(const fsdp_job_t *j, int rank, size_t u, long iter)
{
    const fsdp_cfg_t *c = &j->cfg;
    return ddp_list_has(&c->skip_units, (long)u, 0) &&
           ddp_list_has(&c->skip_ranks, rank, 1) &&
           ddp_list_has(&c->skip_steps, iter, 1);
}

long fsdp_job_steps(const fsdp_job_t *j, int rank)
{
    const fsdp_cfg_t *c = &j->cfg;
    return ddp_list_has(&c->short_ranks, rank, 0) && c->short_steps < c->steps
               ? c->short_steps
               : c->steps;
}

static void sizes(fsdp_job_t *j)
{
    const fsdp_units_t *all[2] = {&j->units, &j->bad_units};
    size_t most = 0;
    size_t big =
        herd_dtype_size(j->param_dtype) > herd_dtype_size(j->reduce_dtype)
            ? herd_dtype_size(j->param_dtype)
            : herd_dtype_size(j->reduce_dtype);
    for (int k = 0; k < 2; k++) {
        most = all[k]->n > most ? all[k]->n : most;
        for (size_t u = 0; u < all[k]->n; u++) {
            uint64_t b = fsdp_job_shard_numel(j, &all[k]->u[u]) *
                         (uint64_t)j->shard * big;
            j->max_buf_bytes = b > j->max_buf_bytes ? b : j->max_buf_bytes;
        }
    }
    j->max_slots = 3 * most + 2; /* all_gather, reduce_scatter, all_reduce */
}

static herd_status_t copy_cfg(fsdp_job_t *j, const fsdp_cfg_t *cfg)
{
    j->cfg = *cfg;
    for (size_t i = 0; i < cfg->nprefixes; i++)
        if (!(j->cfg.prefixes[i] = strdup(cfg->prefixes[i]))) {
            j->cfg.nprefixes = i;
            return HERD_ERR_NO_MEMORY;
        }
    return HERD_OK;
}

static herd_status_t setup(fsdp_job_t *j, const char *dir, char *err,
                           size_t len)
{
    char path[2048];
    const fsdp_cfg_t *c = &j->cfg;
    herd_status_t st = fsdp_cfg_check(c, j->world, j->node_size, err, len);
    if (st != HERD_OK)
        return st;
    ddp_model_resolve(c->model, dir, path, sizeof(path));
    if ((st = ddp_model_load(path, &j->model, err, len)) != HERD_OK)
        return st;
    ddp_model_scale_compute(&j->model, c->compute_scale);
    j->master_dtype =
        j->model.nparams ? j->model.params[0].dtype : HERD_FLOAT32;
    j->param_dtype = c->have_param_dtype ? c->param_dtype : j->master_dtype;
    j->reduce_dtype = c->have_reduce_dtype ? c->reduce_dtype : j->param_dtype;
    j->shard =
        c->strategy == FSDP_NO_SHARD ? 1
        : c->strategy == FSDP_HYBRID_SHARD
            ? (c->shard_group_size > 0 ? c->shard_group_size : j->node_size)
            : j->world;
    j->replicas = j->world / j->shard;
    j->reshard_fwd = fsdp_cfg_reshard_fwd(c);
    if (j->reshard_fwd > 1) {
        j->reshard_to = j->reshard_fwd;
        if (j->reshard_to >= j->shard || j->shard % j->reshard_to) {
            snprintf(err, len,
                     "fsdp.reshard_after_forward: %d is not a divisor of the "
                     "%d ranks a unit is sharded over (other than 1 and %d "
                     "itself)",
                     j->reshard_to, j->shard, j->shard);
            return HERD_ERR_INVALID_ARG;
        }
    }
    st = fsdp_units_build(&j->model, &c->wrap, c->prefixes, c->nprefixes,
                          &j->units, err, len);
    if (st == HERD_OK)
        st = fsdp_units_build(
            &j->model, c->bad_wrap_ranks.n ? &c->bad_wrap : &c->wrap,
            c->prefixes, c->nprefixes, &j->bad_units, err, len);
    if (st == HERD_OK)
        st = make_groups(j);
    if (st == HERD_OK)
        sizes(j);
    return st;
}

herd_status_t fsdp_job_create(const fsdp_cfg_t *cfg, const char *model_dir,
                              int world, int node_size, fsdp_job_t **out,
                              char *err, size_t errlen)
{
    if (!cfg || world <= 0 || !out)
        return HERD_ERR_INVALID_ARG;
    fsdp_job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return HERD_ERR_NO_MEMORY;
    j->world = world;
    j->node_size = node_size > 0 ? node_size : world;
    herd_status_t st = copy_cfg(j, cfg);
    if (st == HERD_OK)
        st = setup(j, model_dir, err, errlen);
    if (st != HERD_OK) {
        if (st == HERD_ERR_NO_MEMORY)
            snprintf(err, errlen, "out of memory");
        fsdp_job_destroy(j);
        return st;
    }
    *out = j;
    return HERD_OK;
}

void fsdp_job_destroy(fsdp_job_t *j)
{
    if (!j)
        return;
    fsdp_units_fini(&j->units);
    fsdp_units_fini(&j->bad_units);
    wl_groups_free(j->groups, j->ngroups);
    ddp_model_fini(&j->model);
    fsdp_cfg_fini(&j->cfg);
    free(j);
}

herd_status_t fsdp_trace_build(const fsdp_job_t *job, trace_t **out)
{
    return wl_trace_build(
        job->world, job->model.name ? job->model.name : "fsdp", job->groups,
        job->ngroups, fsdp_job_walk, job, &job->data, out);
}

herd_status_t fsdp_job_memory_most(const fsdp_job_t *job, fsdp_memory_t *out)
{
    fsdp_memory_t most = {0}, m;
    for (int r = 0; r < job->world; r++) {
        herd_status_t st = fsdp_job_memory(job, r, &m);
        if (st != HERD_OK)
            return st;
        if (r == 0 || m.total > most.total) {
            most = m;
            most.rank = r;
        }
    }
    *out = most;
    return HERD_OK;
}

int fsdp_job_fits(const fsdp_job_t *job, const fsdp_memory_t *m)
{
    return wl_gpu_mem_fits(job->cfg.gpu_mem_gib, m->total);
}
