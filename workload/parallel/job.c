/* workload/parallel/job.c - build a 3D-parallel job: load and scale the
 * model (DDP's loader), cut it into layers with FSDP's transformer-block
 * units, infer the activation shapes, split the layers over the pipeline
 * stages, lay the ranks out into TP and DP groups (see job.h), size the
 * buffers and request slots; and the job's trace export through DDP's
 * recorder. */
#include "workload/parallel/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/ddp/trace.h"
#include "workload/fsdp/unit.h"

void par_job_coords(const par_job_t *j, int rank, int *t, int *d, int *p)
{
    *t = rank % j->tp;
    *d = rank / j->tp % j->dp;
    *p = rank / (j->tp * j->dp);
}

int par_job_tp_group(const par_job_t *j, int rank)
{
    int t, d, p;
    par_job_coords(j, rank, &t, &d, &p);
    return j->tp_group0 ? j->tp_group0 + p * j->dp + d : 0;
}

int par_job_dp_group(const par_job_t *j, int rank)
{
    int t, d, p;
    par_job_coords(j, rank, &t, &d, &p);
    return j->dp_group0 ? j->dp_group0 + p * j->tp + t : 0;
}

uint64_t par_job_layer_numel(const par_job_t *j, int l)
{
    return (j->layers[l].numel + (uint64_t)j->tp - 1) / (uint64_t)j->tp;
}

uint64_t par_job_stage_numel(const par_job_t *j, int s)
{
    uint64_t n = 0;
    for (int c = 0; c < j->vstages; c++) {
        int q = c * j->pp + s;
        for (int l = j->chunk_first[q]; l < j->chunk_first[q + 1]; l++)
            n += par_job_layer_numel(j, l);
    }
    return n + (s == j->pp - 1 ? par_job_layer_numel(j, j->nlayers) : 0);
}

int par_job_chunk_layers(const par_job_t *j, int q)
{
    return j->chunk_first[q + 1] - j->chunk_first[q];
}

uint64_t par_job_act_bytes(const par_job_t *j)
{
    double s = (double)j->seq, b = j->cfg.micro_batch_size,
           h = (double)j->hidden, a = (double)j->heads, t = j->tp;
    double attn = 5 * a * s / (h * t);
    double per = j->cfg.sequence_parallel ? 34 / t + attn : 10 + 24 / t + attn;
    return (uint64_t)(s * b * h * per);
}

static herd_status_t add_group(par_job_t *j, int first, int stride, int n)
{
    return wl_groups_add(&j->groups, &j->ngroups, first, stride, n);
}

/* TP groups (per stage and replica), then DP groups (per stage and TP
 * index); pipeline p2p runs on the world with world ranks. */
static herd_status_t make_groups(par_job_t *j)
{
    herd_status_t st = HERD_OK;
    int t = j->tp, d = j->dp, p = j->pp;
    if (t > 1)
        j->tp_group0 = j->ngroups + 1;
    for (int pi = 0; t > 1 && pi < p; pi++)
        for (int di = 0; di < d && st == HERD_OK; di++)
            st = add_group(j, pi * d * t + di * t, 1, t);
    if (d > 1 && st == HERD_OK)
        j->dp_group0 = j->ngroups + 1;
    for (int pi = 0; d > 1 && pi < p; pi++)
        for (int ti = 0; ti < t && st == HERD_OK; ti++)
            st = add_group(j, pi * d * t + ti, t, d);
    if (j->vstages > 1 && st == HERD_OK) {
        st = add_group(j, 0, 1, j->world);
        j->grad_group = j->ngroups;
    }
    return st;
}

/* seq and hidden from a position embedding [seq, hidden], hidden from a
 * token embedding [vocab, hidden]; heads default to hidden / 128. */
static herd_status_t infer_shapes(par_job_t *j, char *err, size_t len)
{
    long seq = 0, hidden = 0;
    for (size_t i = 0; i < j->model.nparams; i++) {
        const ddp_param_t *p = &j->model.params[i];
        const char *n = p->name ? p->name : "";
        if (p->ndim == 2 && (strstr(n, "wpe.") || strstr(n, "position_emb")))
            seq = (long)p->shape[0], hidden = (long)p->shape[1];
        else if (p->ndim == 2 && !hidden &&
                 (strstr(n, "wte.") || strstr(n, "word_emb") ||
                  strstr(n, "embed_tokens")))
            hidden = (long)p->shape[1];
    }
    j->seq = j->cfg.seq ? j->cfg.seq : seq;
    j->hidden = j->cfg.hidden ? j->cfg.hidden : hidden;
    if (!j->seq || !j->hidden) {
        snprintf(err, len,
                 "model '%s' has no position/token embedding to take the %s "
                 "from: set parallel.%s",
                 j->model.name ? j->model.name : "?",
                 !j->seq ? "sequence length" : "hidden size",
                 !j->seq ? "seq" : "hidden");
        return HERD_ERR_INVALID_ARG;
    }
    j->heads = j->cfg.heads       ? j->cfg.heads
               : j->hidden >= 128 ? j->hidden / 128
                                  : 1;
    return HERD_OK;
}

/* Layers from the model's transformer blocks; with parallel.layers set
 * to another count (or no blocks), the blocks' parameters and compute
 * spread evenly over that many layers. */
static herd_status_t make_layers(par_job_t *j, char *err, size_t len)
{
    fsdp_units_t us = {0};
    fsdp_wrap_t wrap = {FSDP_WRAP_BLOCK, 0};
    herd_status_t st =
        fsdp_units_build(&j->model, &wrap, NULL, 0, &us, err, len);
    if (st != HERD_OK)
        return st;
    long blocks = (long)us.n - 1;
    long n = j->cfg.layers ? j->cfg.layers : blocks;
    if (n < 1) {
        snprintf(err, len,
                 "model '%s' has no transformer blocks: set parallel.layers",
                 j->model.name ? j->model.name : "?");
        fsdp_units_fini(&us);
        return HERD_ERR_INVALID_ARG;
    }
    j->nlayers = (int)n;
    j->layers = calloc((size_t)n + 1, sizeof(par_layer_t));
    if (!j->layers) {
        fsdp_units_fini(&us);
        return HERD_ERR_NO_MEMORY;
    }
    par_layer_t all = {0};
    for (size_t u = 1; u < us.n; u++) {
        all.numel += us.u[u].numel;
        all.fwd_s += us.u[u].fwd_s;
        all.bwd_s += us.u[u].bwd_s;
    }
    for (long l = 0; l < n; l++) {
        if (n == blocks)
            j->layers[l] = (par_layer_t){us.u[l + 1].numel, us.u[l + 1].fwd_s,
                                         us.u[l + 1].bwd_s};
        else
            j->layers[l] =
                (par_layer_t){all.numel / (uint64_t)n, all.fwd_s / (double)n,
                              all.bwd_s / (double)n};
    }
    j->layers[n] = (par_layer_t){us.u[0].numel, us.u[0].fwd_s, us.u[0].bwd_s};
    fsdp_units_fini(&us);
    return HERD_OK;
}

/* pp * vstages chunks of layers, split evenly; the interleaved
 * schedule's own constraints (Megatron's). */
static herd_status_t make_stages(par_job_t *j, char *err, size_t len)
{
    const par_cfg_t *c = &j->cfg;
    int inter = c->schedule == PAR_INTERLEAVED;
    j->vstages = inter ? c->virtual_stages : 1;
    if (inter && j->vstages < 2) {
        snprintf(err, len,
                 "parallel.virtual_stages = %d: parallel.schedule: "
                 "interleaved needs 2 or more model chunks per rank",
                 j->vstages);
        return HERD_ERR_INVALID_ARG;
    }
    if (inter && (j->pp < 2 || c->micro_batches % j->pp)) {
        snprintf(err, len,
                 "parallel.schedule: interleaved needs parallel.pp >= 2 "
                 "and parallel.micro_batches (%d) a multiple of it (%d)",
                 c->micro_batches, j->pp);
        return HERD_ERR_INVALID_ARG;
    }
    int nq = j->pp * j->vstages;
    if (nq > j->nlayers) {
        snprintf(err, len,
                 "parallel.pp = %d stages%s but the model has %d layers "
                 "(parallel.layers): a stage needs at least one",
                 j->pp, j->vstages > 1 ? " x parallel.virtual_stages" : "",
                 j->nlayers);
        return HERD_ERR_INVALID_ARG;
    }
    if (!(j->chunk_first = malloc((size_t)(nq + 1) * sizeof(int))))
        return HERD_ERR_NO_MEMORY;
    for (int q = 0; q <= nq; q++)
        j->chunk_first[q] = (int)((long)q * j->nlayers / nq);
    return HERD_OK;
}

static void sizes(par_job_t *j)
{
    size_t dt = herd_dtype_size(j->cfg.dtype);
    uint64_t most = j->act_count * dt;
    for (int s = 0; s < j->pp; s++) {
        uint64_t b = par_job_stage_numel(j, s) * dt;
        most = b > most ? b : most;
    }
    j->max_buf_bytes = most;
    /* recv, TP, sends of F and B per micro-batch, DP buckets (reductions
     * and all_gathers, at most one per layer each), ZeRO-3 gathers */
    size_t m = (size_t)j->cfg.micro_batches * (size_t)j->vstages,
           l = (size_t)j->nlayers + 1;
    j->max_slots = 2 + 2 * m + 2 * (l + 1) + l;
}

static herd_status_t setup(par_job_t *j, const char *dir, char *err, size_t len)
{
    char path[2048];
    const par_cfg_t *c = &j->cfg;
    herd_status_t st =
        par_cfg_layout(c, j->world, &j->tp, &j->pp, &j->dp, err, len);
    if (st != HERD_OK)
        return st;
    ddp_model_resolve(c->model, dir, path, sizeof(path));
    if ((st = ddp_model_load(path, &j->model, err, len)) != HERD_OK)
        return st;
    if (c->global_batch_size) {
        long per = (long)j->dp * c->micro_batch_size;
        if (c->global_batch_size % per || c->global_batch_size / per > 65536) {
            snprintf(err, len,
                     "parallel.global_batch_size %ld is not a multiple of "
                     "parallel.dp x parallel.micro_batch_size = %d x %d "
                     "(at most 65536 micro-batches)",
                     c->global_batch_size, j->dp, c->micro_batch_size);
            return HERD_ERR_INVALID_ARG;
        }
        j->cfg.micro_batches = (int)(c->global_batch_size / per);
    }
    /* the model file's compute is for compute_batch samples */
    ddp_model_scale_compute(&j->model, c->compute_scale * c->micro_batch_size /
                                           (double)(c->compute_batch
                                                        ? c->compute_batch
                                                        : c->micro_batch_size));
    if ((st = infer_shapes(j, err, len)) == HERD_OK &&
        (st = make_layers(j, err, len)) == HERD_OK &&
        (st = make_stages(j, err, len)) == HERD_OK)
        st = make_groups(j);
    if (st != HERD_OK)
        return st;
    if (c->sequence_parallel && j->seq % j->tp) {
        snprintf(err, len,
                 "parallel.sequence_parallel: the sequence (%ld) does not "
                 "split over parallel.tp = %d ranks",
                 j->seq, j->tp);
        return HERD_ERR_INVALID_ARG;
    }
    j->act_count =
        (uint64_t)c->micro_batch_size * (uint64_t)j->seq * (uint64_t)j->hidden;
    sizes(j);
    return HERD_OK;
}

herd_status_t par_job_create(const par_cfg_t *cfg, const char *model_dir,
                             int world, int node_size, par_job_t **out,
                             char *err, size_t errlen)
{
    if (!cfg || world <= 0 || !out)
        return HERD_ERR_INVALID_ARG;
    par_job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return HERD_ERR_NO_MEMORY;
    j->cfg = *cfg;
    j->world = world;
    j->node_size = node_size > 0 ? node_size : world;
    herd_status_t st = setup(j, model_dir, err, errlen);
    if (st != HERD_OK) {
        if (st == HERD_ERR_NO_MEMORY)
            snprintf(err, errlen, "out of memory");
        par_job_destroy(j);
        return st;
    }
    *out = j;
    return HERD_OK;
}

void par_job_destroy(par_job_t *j)
{
    if (!j)
        return;
    wl_groups_free(j->groups, j->ngroups);
    free(j->layers);
    free(j->chunk_first);
    ddp_model_fini(&j->model);
    free(j);
}

herd_status_t par_trace_build(const par_job_t *job, trace_t **out)
{
    return wl_trace_build(
        job->world, job->model.name ? job->model.name : "parallel", job->groups,
        job->ngroups, par_job_walk, job, &job->data, out);
}
