/* workload/parallel/walk.c - one rank's training step as Megatron-LM with
 * DeepSpeed-style data parallelism runs it.
 *
 * The rank is one tensor-parallel slice of one pipeline stage of one
 * replica (job.h's layout). A step is the pipeline schedule over M
 * micro-batches: GPipe (all forwards, then all backwards, newest first)
 * or 1F1B (min(P - 1 - stage, M) warm-up forwards, then one forward and
 * one backward in turn, then the remaining backwards) or Megatron's
 * interleaved 1F1B, where each rank holds virtual_stages model chunks
 * (chunk c of stage s is the model's chunk c * P + s, its activations
 * passed from the last stage back to the first between chunks) and runs
 * forward micro-step k on chunk (k mod P*v) / P of micro-batch
 * (k / (P*v)) * P + k mod P, after (P - s - 1) * 2 + (v - 1) * P warm-up
 * forwards. A forward receives
 * the activations from the previous stage (p2p on the world), runs the
 * stage's layers and sends its output on (asynchronously); a backward
 * receives the output's gradient from the next stage, runs the layers in
 * reverse and sends the input's gradient back.
 *
 * Each layer is Megatron's two blocks (attention, MLP), each half the
 * layer's compute divided by tp, followed by an all_reduce of the
 * micro-batch's activations over the TP group in forward and in backward
 * (Megatron's g and f); with sequence_parallel an all_gather before and a
 * reduce_scatter after each block instead, of 1/tp of the activations.
 * The root (embeddings, final norm, head) runs on the last stage without
 * TP collectives.
 *
 * Data parallelism over the DP group, once per step in the last
 * micro-batch's backward: gradients in buckets of reduce_bucket_size
 * elements (a bucket closes at a layer boundary), all_reduced (zero_stage
 * 0, DDP / Megatron) or reduce_scattered (ZeRO 1-3); with overlap_comm a
 * bucket is reduced as soon as it is full, behind the remaining backward,
 * else after the backward. ZeRO 1 and 2 all_gather the updated parameters
 * after the optimizer in buckets of allgather_bucket_size; ZeRO 3 instead
 * all_gathers each layer before its forward and its backward (every
 * micro-batch) and frees it after use, prefetching the following layers
 * up to stage3_prefetch_bucket_size elements. Reductions and ZeRO's
 * all_gathers share the DP group's one communicator (one stream).
 *
 * The walk tracks the micro-batches whose activations are stashed and
 * ZeRO-3's gathered layers, for the memory prediction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/parallel/job.h"

typedef struct pwalk {
    const par_job_t *job;
    const ddp_emit_ops_t *ops;
    void *ctx;
    int rank, ti, di, pi, tpg, dpg, m, v;
    int **order; /* per chunk: its layers, forward order (root last) */
    int *n;
    int *bdone;        /* per chunk: backwards done this step */
    unsigned char *z3; /* per layer: 0 sharded, 1 issued, 2 gathered */
    uint64_t *bucket;  /* per gradient bucket: elements */
    int nbuckets, nlaunched;
    uint64_t pending;    /* gradient elements not yet in a bucket */
    unsigned char *sent; /* per send slot: launched, not waited */
    int inflight, peak_inflight;
    uint64_t gathered, peak_gathered; /* bytes */
} pwalk_t;

#define SLOT_TP 0
#define SLOT_RECV 1
static size_t nsends(const pwalk_t *w)
{
    return 2 * (size_t)w->m * (size_t)w->v;
}
static size_t slot_send(const pwalk_t *w, int fwd, int c, int m)
{
    return 2 + (fwd ? 0 : nsends(w) / 2) + (size_t)c * (size_t)w->m + (size_t)m;
}
static size_t slot_dp(const pwalk_t *w, int k)
{
    return 2 + nsends(w) + (size_t)k;
}
static size_t slot_z3(const pwalk_t *w, int l)
{
    return 2 + nsends(w) + 2 * ((size_t)w->job->nlayers + 2) + (size_t)l;
}

/* World ranks of chunk c's neighbours in the model (-1: none). */
static int prev_of(const pwalk_t *w, int c)
{
    int step = w->job->dp * w->job->tp;
    return w->pi > 0 ? w->rank - step
           : c > 0   ? w->rank + (w->job->pp - 1) * step
                     : -1;
}
static int next_of(const pwalk_t *w, int c)
{
    int step = w->job->dp * w->job->tp;
    return w->pi < w->job->pp - 1 ? w->rank + step
           : c < w->v - 1         ? w->rank - (w->job->pp - 1) * step
                                  : -1;
}
static int zero(const pwalk_t *w)
{
    return w->job->dp > 1 ? w->job->cfg.zero_stage : 0;
}

static herd_status_t emit(pwalk_t *w, herd_coll_t coll, uint64_t count,
                          int group, int peer, int stream, size_t slot,
                          const char *label)
{
    ddp_emit_coll_t op = {coll,   count, w->job->cfg.dtype, peer, group,
                          stream, label};
    return w->ops->coll ? w->ops->coll(w->ctx, &op, slot)
                        : HERD_ERR_UNSUPPORTED;
}

static herd_status_t compute(pwalk_t *w, double s, const char *what, int l)
{
    char label[48];
    snprintf(label, sizeof(label), "%s L%d", what, l);
    return s > 0 ? w->ops->compute(w->ctx, s, label) : HERD_OK;
}

/* One TP collective, waited at once: the next kernel needs it. */
static herd_status_t tp_coll(pwalk_t *w, herd_coll_t c, uint64_t count,
                             const char *what, int l)
{
    char label[48];
    snprintf(label, sizeof(label), "tp %s L%d", what, l);
    herd_status_t st =
        emit(w, c, count, w->tpg, -1, PAR_STREAM_TP, SLOT_TP, label);
    return st == HERD_OK ? w->ops->wait(w->ctx, SLOT_TP) : st;
}

/* Megatron's block: (SP: all_gather) compute (all_reduce | SP:
 * reduce_scatter). */
static herd_status_t tp_block(pwalk_t *w, double s, const char *what, int l)
{
    const par_job_t *j = w->job;
    uint64_t shard = j->act_count / (uint64_t)j->tp;
    int sp = j->cfg.sequence_parallel && j->tp > 1;
    herd_status_t st = HERD_OK;
    if (sp)
        st = tp_coll(w, HERD_COLL_ALL_GATHER, shard, what, l);
    if (st == HERD_OK)
        st = compute(w, s, what, l);
    if (st == HERD_OK && j->tp > 1)
        st = sp ? tp_coll(w, HERD_COLL_REDUCE_SCATTER, shard, what, l)
                : tp_coll(w, HERD_COLL_ALL_REDUCE, j->act_count, what, l);
    return st;
}

static uint64_t dt_size(const pwalk_t *w)
{
    return herd_dtype_size(w->job->cfg.dtype);
}

/* ZeRO-3: all_gather position k's layer of chunk c from the DP group. */
static herd_status_t z3_issue(pwalk_t *w, int c, int k)
{
    if (zero(w) < 3 || k < 0 || k >= w->n[c] || w->z3[w->order[c][k]])
        return HERD_OK;
    const par_job_t *j = w->job;
    int l = w->order[c][k];
    uint64_t numel = par_job_layer_numel(j, l);
    char label[48];
    w->z3[l] = 1;
    w->gathered += numel * dt_size(w);
    if (w->gathered > w->peak_gathered)
        w->peak_gathered = w->gathered;
    snprintf(label, sizeof(label), "zero3 L%d", l);
    return emit(w, HERD_COLL_ALL_GATHER,
                (numel + (uint64_t)j->dp - 1) / (uint64_t)j->dp, w->dpg, -1,
                PAR_STREAM_DP, slot_z3(w, l), label);
}

/* The layer at position k of chunk c gathered, the next ones (step dir)
 * prefetched up to stage3_prefetch_bucket_size elements. */
static herd_status_t z3_ready(pwalk_t *w, int c, int k, int dir)
{
    if (zero(w) < 3)
        return HERD_OK;
    int l = w->order[c][k];
    herd_status_t st = z3_issue(w, c, k);
    double ahead = 0;
    for (int q = k + dir; st == HERD_OK && q >= 0 && q < w->n[c]; q += dir) {
        ahead += (double)par_job_layer_numel(w->job, w->order[c][q]);
        if (ahead > w->job->cfg.stage3_prefetch_bucket_size)
            break;
        st = z3_issue(w, c, q);
    }
    if (st == HERD_OK && w->z3[l] == 1) {
        st = w->ops->wait(w->ctx, slot_z3(w, l));
        w->z3[l] = 2;
    }
    return st;
}

static void z3_release(pwalk_t *w, int l)
{
    if (zero(w) < 3 || !w->z3[l])
        return;
    w->z3[l] = 0;
    w->gathered -= par_job_layer_numel(w->job, l) * dt_size(w);
}

/* Pipeline p2p; the interleaved schedule's backward runs on its own copy
 * of the world (job.h's grad_group). */
static herd_status_t p2p(pwalk_t *w, herd_coll_t c, int peer, size_t slot,
                         const char *what, int m)
{
    const par_job_t *j = w->job;
    char label[48];
    int group = what[0] == 'g' ? j->grad_group : 0;
    snprintf(label, sizeof(label), "pp %s m%d", what, m);
    uint64_t count =
        j->act_count / (uint64_t)(j->cfg.sequence_parallel ? j->tp : 1);
    herd_status_t st = emit(
        w, c, count, group, peer,
        c == HERD_COLL_RECV ? PAR_STREAM_PP : PAR_STREAM_PP_SEND, slot, label);
    if (st == HERD_OK && c == HERD_COLL_RECV)
        st = w->ops->wait(w->ctx, slot);
    return st;
}

static herd_status_t forward(pwalk_t *w, int c, int m)
{
    const par_job_t *j = w->job;
    herd_status_t st = HERD_OK;
    int prev = prev_of(w, c), next = next_of(w, c);
    if (prev >= 0)
        st = p2p(w, HERD_COLL_RECV, prev, SLOT_RECV, "act", m);
    for (int k = 0; k < w->n[c] && st == HERD_OK; k++) {
        int l = w->order[c][k];
        double f = j->layers[l].fwd_s / j->tp;
        st = z3_ready(w, c, k, 1);
        if (st == HERD_OK && l == j->nlayers)
            st = compute(w, f, "forward", l);
        else if (st == HERD_OK)
            st = tp_block(w, f / 2, "forward", l);
        if (st == HERD_OK && l != j->nlayers)
            st = tp_block(w, f / 2, "forward", l);
        z3_release(w, l);
    }
    if (st == HERD_OK && next >= 0) {
        st = p2p(w, HERD_COLL_SEND, next, slot_send(w, 1, c, m), "act", m);
        w->sent[slot_send(w, 1, c, m)] = 1;
    }
    if (++w->inflight > w->peak_inflight)
        w->peak_inflight = w->inflight;
    return st;
}

static herd_status_t launch_bucket(pwalk_t *w, int k)
{
    const par_job_t *j = w->job;
    char label[48];
    snprintf(label, sizeof(label), "dp grads b%d", k);
    w->nlaunched = k + 1;
    if (zero(w) == 0)
        return emit(w, HERD_COLL_ALL_REDUCE, w->bucket[k], w->dpg, -1,
                    PAR_STREAM_DP, slot_dp(w, k), label);
    return emit(w, HERD_COLL_REDUCE_SCATTER,
                (w->bucket[k] + (uint64_t)j->dp - 1) / (uint64_t)j->dp, w->dpg,
                -1, PAR_STREAM_DP, slot_dp(w, k), label);
}

/* A layer's gradients are final (its chunk's last backward of the step):
 * bucket them; `last`: the step's last layer closes the bucket. */
static herd_status_t grads_ready(pwalk_t *w, int l, int last)
{
    if (w->job->dp < 2)
        return HERD_OK;
    w->pending += par_job_layer_numel(w->job, l);
    if (w->pending &&
        ((double)w->pending >= w->job->cfg.reduce_bucket_size || last)) {
        w->bucket[w->nbuckets++] = w->pending;
        w->pending = 0;
        if (w->job->cfg.overlap_comm)
            return launch_bucket(w, w->nbuckets - 1);
    }
    return HERD_OK;
}

static herd_status_t backward(pwalk_t *w, int c, int m)
{
    const par_job_t *j = w->job;
    int final = ++w->bdone[c] == j->cfg.micro_batches, all = final;
    for (int q = 0; q < w->v; q++)
        all &= w->bdone[q] == j->cfg.micro_batches;
    int prev = prev_of(w, c), next = next_of(w, c);
    herd_status_t st = HERD_OK;
    if (next >= 0)
        st = p2p(w, HERD_COLL_RECV, next, SLOT_RECV, "grad", m);
    for (int k = w->n[c]; k-- > 0 && st == HERD_OK;) {
        int l = w->order[c][k];
        double b = j->layers[l].bwd_s / j->tp;
        st = z3_ready(w, c, k, -1);
        if (st == HERD_OK && l == j->nlayers)
            st = compute(w, b, "backward", l);
        else if (st == HERD_OK)
            st = tp_block(w, b / 2, "backward", l);
        if (st == HERD_OK && l != j->nlayers)
            st = tp_block(w, b / 2, "backward", l);
        z3_release(w, l);
        if (st == HERD_OK && final)
            st = grads_ready(w, l, all && k == 0);
    }
    if (st == HERD_OK && prev >= 0) {
        st = p2p(w, HERD_COLL_SEND, prev, slot_send(w, 0, c, m), "grad", m);
        w->sent[slot_send(w, 0, c, m)] = 1;
    }
    w->inflight--;
    return st;
}

/* Megatron's micro-step k: its model chunk (forward or backward) and
 * micro-batch; with one chunk, micro-batch k. */
static int micro_chunk(const pwalk_t *w, int k, int fwd)
{
    int P = w->job->pp, c = (k % (P * w->v)) / P;
    return fwd ? c : w->v - 1 - c;
}
static int micro_batch(const pwalk_t *w, int k)
{
    int P = w->job->pp;
    return w->v > 1 ? k / (P * w->v) * P + k % P : k;
}

static herd_status_t schedule(pwalk_t *w)
{
    int M = w->job->cfg.micro_batches, P = w->job->pp, v = w->v;
    herd_status_t st = HERD_OK;
    if (w->job->cfg.schedule == PAR_GPIPE) {
        for (int m = 0; m < M && st == HERD_OK; m++)
            st = forward(w, 0, m);
        for (int m = M; m-- > 0 && st == HERD_OK;)
            st = backward(w, 0, m);
        return st;
    }
    /* 1F1B is the interleaved schedule with one chunk, but for its
     * warm-up of P - 1 - s forwards */
    int total = M * v;
    int warm = v > 1 ? (P - w->pi - 1) * 2 + (v - 1) * P : P - 1 - w->pi;
    warm = warm < total ? warm : total;
    for (int k = 0; k < warm && st == HERD_OK; k++)
        st = forward(w, micro_chunk(w, k, 1), micro_batch(w, k));
    for (int i = 0; i < total - warm && st == HERD_OK; i++) {
        int k = warm + i;
        st = forward(w, micro_chunk(w, k, 1), micro_batch(w, k));
        if (st == HERD_OK)
            st = backward(w, micro_chunk(w, i, 0), micro_batch(w, i));
    }
    for (int i = total - warm; i < total && st == HERD_OK; i++)
        st = backward(w, micro_chunk(w, i, 0), micro_batch(w, i));
    return st;
}

/* ZeRO 1/2: the updated parameter shards back to every replica, in
 * buckets of allgather_bucket_size elements closed at layer boundaries. */
static herd_status_t gather_params(pwalk_t *w)
{
    const par_job_t *j = w->job;
    herd_status_t st = HERD_OK;
    uint64_t fill = 0;
    int nb = 0, nl = 0, done = 0;
    for (int c = 0; c < w->v; c++)
        nl += w->n[c];
    for (int c = 0; c < w->v; c++)
        for (int k = 0; k < w->n[c] && st == HERD_OK; k++) {
            fill += par_job_layer_numel(j, w->order[c][k]);
            done++;
            if ((double)fill < j->cfg.allgather_bucket_size && done < nl)
                continue;
            char label[48];
            snprintf(label, sizeof(label), "dp params b%d", nb);
            st =
                emit(w, HERD_COLL_ALL_GATHER,
                     (fill + (uint64_t)j->dp - 1) / (uint64_t)j->dp, w->dpg, -1,
                     PAR_STREAM_DP, slot_dp(w, j->nlayers + 2 + nb), label);
            nb++;
            fill = 0;
        }
    for (int b = 0; b < nb && st == HERD_OK; b++)
        st = w->ops->wait(w->ctx, slot_dp(w, j->nlayers + 2 + b));
    return st;
}

static herd_status_t finalize(pwalk_t *w)
{
    const par_job_t *j = w->job;
    herd_status_t st = HERD_OK;
    if (w->pending) { /* the last bucket, not full */
        w->bucket[w->nbuckets++] = w->pending;
        w->pending = 0;
    }
    for (int k = w->nlaunched; k < w->nbuckets && st == HERD_OK; k++)
        st = launch_bucket(w, k);
    for (int k = 0; k < w->nbuckets && st == HERD_OK; k++)
        st = w->ops->wait(w->ctx, slot_dp(w, k));
    for (size_t s = 0; s < 2 + nsends(w) && st == HERD_OK; s++)
        if (w->sent[s]) {
            w->sent[s] = 0;
            st = w->ops->wait(w->ctx, s);
        }
    if (st == HERD_OK)
        st = w->ops->mark(w->ctx, "finalize");
    uint64_t total = 0;
    for (int l = 0; l <= j->nlayers; l++)
        total += j->layers[l].numel;
    double opt = total
                     ? j->model.opt_s * (double)par_job_stage_numel(j, w->pi) /
                           (double)total / (zero(w) >= 1 ? j->dp : 1)
                     : 0;
    if (st == HERD_OK && opt > 0)
        st = w->ops->compute(w->ctx, opt, "optimizer");
    if (st == HERD_OK && (zero(w) == 1 || zero(w) == 2))
        st = gather_params(w);
    return st;
}

static void walk_free(pwalk_t *w)
{
    for (int c = 0; w->order && c < w->v; c++)
        free(w->order[c]);
    free(w->order);
    free(w->n);
    free(w->bdone);
    free(w->z3);
    free(w->bucket);
    free(w->sent);
}

/* This rank's chunks: chunk c is the model's chunk c * pp + stage; the
 * root ends the last one of the last stage. */
static herd_status_t walk_init(pwalk_t *w)
{
    const par_job_t *j = w->job;
    size_t nl = (size_t)j->nlayers + 1;
    w->order = calloc((size_t)w->v, sizeof(int *));
    w->n = calloc((size_t)w->v, sizeof(int));
    w->bdone = calloc((size_t)w->v, sizeof(int));
    w->z3 = calloc(nl, 1);
    w->bucket = calloc(nl + 1, sizeof(uint64_t));
    w->sent = calloc(2 + nsends(w), 1);
    if (!w->order || !w->n || !w->bdone || !w->z3 || !w->bucket || !w->sent)
        return HERD_ERR_NO_MEMORY;
    for (int c = 0; c < w->v; c++) {
        int q = c * j->pp + w->pi;
        int lo = j->chunk_first[q], hi = j->chunk_first[q + 1];
        if (!(w->order[c] = malloc(((size_t)(hi - lo) + 1) * sizeof(int))))
            return HERD_ERR_NO_MEMORY;
        for (int l = lo; l < hi; l++)
            w->order[c][w->n[c]++] = l;
    }
    if (w->pi == j->pp - 1)
        w->order[w->v - 1][w->n[w->v - 1]++] = j->nlayers;
    return HERD_OK;
}

static herd_status_t walk_rank(const par_job_t *j, int rank,
                               const ddp_emit_ops_t *ops, void *ctx, pwalk_t *w)
{
    *w = (pwalk_t){.job = j, .ops = ops, .ctx = ctx, .rank = rank};
    par_job_coords(j, rank, &w->ti, &w->di, &w->pi);
    w->tpg = par_job_tp_group(j, rank);
    w->dpg = par_job_dp_group(j, rank);
    w->m = j->cfg.micro_batches;
    w->v = j->vstages;
    herd_status_t st = walk_init(w);
    for (long it = 0; st == HERD_OK && it < j->cfg.steps; it++) {
        w->nbuckets = w->nlaunched = 0;
        w->pending = 0;
        memset(w->bdone, 0, (size_t)w->v * sizeof(int));
        st = ops->mark(ctx, "step");
        if (st == HERD_OK)
            st = schedule(w);
        if (st == HERD_OK)
            st = finalize(w);
    }
    walk_free(w);
    return st;
}
herd_status_t par_job_walk(const void *job, int rank, const ddp_emit_ops_t *ops,
                           void *ctx)
{
    pwalk_t w;
    return walk_rank(job, rank, ops, ctx, &w);
}

static herd_status_t stage_memory(const par_job_t *j, int s, par_memory_t *m)
{
    pwalk_t w;
    int rank = s * j->dp * j->tp;
    herd_status_t st = walk_rank(j, rank, &wl_null_ops, NULL, &w);
    if (st != HERD_OK)
        return st;
    uint64_t n = par_job_stage_numel(j, s), d = (uint64_t)j->dp;
    uint64_t dt = herd_dtype_size(j->cfg.dtype);
    int z = j->dp > 1 ? j->cfg.zero_stage : 0;
    *m = (par_memory_t){0};
    m->params = (z >= 3 ? (n + d - 1) / d : n) * dt;
    m->grads = (z >= 2 ? (n + d - 1) / d : n) * dt;
    m->optimizer = (uint64_t)((double)(z >= 1 ? (n + d - 1) / d : n) *
                              j->cfg.optimizer_bytes);
    m->gathered = w.peak_gathered;
    m->inflight = w.peak_inflight;
    int most = 0; /* a micro-step holds one chunk's activations */
    for (int c = 0; c < j->vstages; c++) {
        int n = par_job_chunk_layers(j, c * j->pp + s);
        most = n > most ? n : most;
    }
    m->activations =
        (uint64_t)w.peak_inflight * par_job_act_bytes(j) * (uint64_t)most;
    m->total =
        m->params + m->grads + m->optimizer + m->gathered + m->activations;
    m->rank = rank;
    return HERD_OK;
}

herd_status_t par_job_memory(const par_job_t *j, par_memory_t *out)
{
    par_memory_t best = {0}, m;
    for (int s = 0; s < j->pp; s++) {
        herd_status_t st = stage_memory(j, s, &m);
        if (st != HERD_OK)
            return st;
        if (!s || m.total > best.total)
            best = m;
    }
    *out = best;
    return HERD_OK;
}

int par_job_fits(const par_job_t *j, const par_memory_t *m)
{
    return wl_gpu_mem_fits(j->cfg.gpu_mem_gib, m->total);
}
