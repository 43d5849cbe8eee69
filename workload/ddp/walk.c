/* workload/ddp/walk.c - one rank's training loop as PyTorch DDP runs it.
 *
 * Per iteration: the forward (with the bucket rebuild's broadcasts and the
 * buffer broadcast where DDP does them, and the "Expected to have finished
 * reduction" check), the backward as compute chunks between the moments a
 * bucket fills up, bucket all_reduces launched strictly in bucket-index
 * order, the used-parameter map with find_unused_parameters, finalize
 * waiting on every bucket, the optimizer, then rank 0's evaluation and
 * checkpoint. A straggler on one gradient (straggle.h) adds compute before
 * it, or moves only its ready instant: the walk then keeps the backward's
 * clock and hands the gradient to the reducer when its time comes. See
 * docs/ddp.md for the rules and their sources. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/ddp/job.h"
#include "workload/ddp/powersgd.h"

#define BUFFER_CHUNK_BYTES (250ull << 20) /* DDP's broadcast_bucket_size */

/* A gradient held back until `at` on the backward's clock. */
typedef struct walk_pend {
    double at;
    size_t param;
} walk_pend_t;

typedef struct walk {
    const ddp_job_t *job;
    int rank;
    const ddp_emit_ops_t *ops;
    void *ctx;
    long syncs;         /* synchronising backwards done */
    int fwd_param_sync; /* the last backward synchronised */
    int pending_error;  /* buckets of the last sync backward not launched */
    char *msg;
    size_t *left;         /* per bucket: gradients not yet ready */
    size_t next;          /* next bucket to launch */
    unsigned char *used;  /* per parameter, this iteration */
    double acc;           /* backward compute not yet emitted */
    unsigned char *parts; /* per bucket: all_reduces launched (1 the
                             bucket or PowerSGD's uncompressed, 2 P, 4 Q) */
    /* stragglers on one gradient (straggle.h) */
    ddp_rank_delays_t dl; /* this rank's delayed gradients */
    double t0;            /* backward compute emitted (affects: grad) */
    walk_pend_t *pend;    /* gradients whose ready instant is delayed */
    size_t npend;         /* (sorted by time) */
} walk_t;

static size_t slot_map(const walk_t *w)
{
    return w->job->max_slots - 4;
}
static size_t slot_misc(const walk_t *w)
{
    return w->job->max_slots - 3;
}

static double copy_s(const walk_t *w, uint64_t bytes)
{
    double bw = w->job->model.copy_bw;
    return bw > 0 ? (double)bytes / bw : 0;
}

static herd_status_t flush(walk_t *w)
{
    herd_status_t st = HERD_OK;
    if (w->acc > 0)
        st = w->ops->compute(w->ctx, w->acc, "backward");
    w->t0 += w->acc;
    w->acc = 0;
    return st;
}

/* PowerSGD from its start_iter on (counted in synchronising iterations,
 * as PowerSGDState.iter is): the hook's compute, then the uncompressed
 * tensors, P and Q all_reduced one after another (slots k, nb+k, 2nb+k). */
static herd_status_t launch_powersgd(walk_t *w, const ddp_buckets_t *bs,
                                     size_t k, const char *label)
{
    const ddp_job_t *j = w->job;
    ddp_psgd_plan_t pl;
    ddp_psgd_plan(&j->model, &bs->b[k], &j->cfg.psgd, &pl);
    size_t nb = (j->max_slots - 4) / 3;
    const uint64_t count[3] = {pl.unc, pl.p, pl.q};
    static const char *const suffix[3] = {"", " P", " Q"};
    char mark[64], part[64];
    herd_status_t st = w->ops->compute(
        w->ctx, ddp_psgd_compute_s(&j->model, bs, k, &j->cfg.psgd), "powersgd");
    snprintf(mark, sizeof(mark), "launch %s", label);
    if (st == HERD_OK)
        st = w->ops->mark(w->ctx, mark);
    for (int i = 0; i < 3 && st == HERD_OK; i++) {
        if (!count[i])
            continue; /* torch all_reduces an empty tensor: nothing moves */
        snprintf(part, sizeof(part), "%s%s", label, suffix[i]);
        st = w->ops->all_reduce(w->ctx, count[i], bs->b[k].dtype,
                                k + (size_t)i * nb, part);
        w->parts[k] |= (unsigned char)(1u << i);
    }
    return st;
}

static herd_status_t launch(walk_t *w, const ddp_buckets_t *bs, size_t k)
{
    const ddp_bucket_t *b = &bs->b[k];
    char label[48];
    herd_dtype_t dt = b->dtype;
    herd_status_t st = HERD_OK;
    const ddp_cfg_t *c = &w->job->cfg;
    snprintf(label, sizeof(label), "bucket %zu", k);
    if (c->hook == DDP_HOOK_POWERSGD && w->syncs >= c->psgd.start_iter)
        return launch_powersgd(w, bs, k, label);
    if ((c->hook == DDP_HOOK_FP16 || c->hook == DDP_HOOK_BF16) &&
        herd_dtype_size(dt) > 2) {
        dt = c->hook == DDP_HOOK_FP16 ? HERD_FLOAT16 : HERD_BFLOAT16;
        st = w->ops->compute(w->ctx, copy_s(w, b->bytes), "compress");
    }
    uint64_t count = ddp_job_wire_bytes(w->job, b) / herd_dtype_size(dt);
    char mark[64];
    snprintf(mark, sizeof(mark), "launch %s", label);
    /* DDP's launch; on one stream it may start later */
    if (st == HERD_OK)
        st = w->ops->mark(w->ctx, mark);
    if (st == HERD_OK)
        st = w->ops->all_reduce(w->ctx, count, dt, k, label);
    w->parts[k] = 1;
    return st;
}

/* Wait for bucket k's all_reduces (PowerSGD's three, in order). */
static herd_status_t wait_bucket(walk_t *w, size_t k)
{
    size_t nb =
        w->job->cfg.hook == DDP_HOOK_POWERSGD ? (w->job->max_slots - 4) / 3 : 0;
    herd_status_t st = HERD_OK;
    for (int i = 0; i < 3 && st == HERD_OK; i++)
        if (w->parts[k] & (1u << i))
            st = w->ops->wait(w->ctx, k + (size_t)i * nb);
    w->parts[k] = 0;
    return st;
}

/* Bucket k just filled: mark it and launch every bucket now in order. */
static herd_status_t bucket_ready(walk_t *w, const ddp_buckets_t *bs, size_t k)
{
    char label[48];
    snprintf(label, sizeof(label), "ready b%zu", k);
    herd_status_t st = flush(w);
    if (st == HERD_OK)
        st = w->ops->mark(w->ctx, label);
    while (st == HERD_OK && w->next < bs->n && w->left[w->next] == 0)
        st = launch(w, bs, w->next++);
    return st;
}

/* Parameter p's gradient reached the reducer (mark_variable_ready). */
static herd_status_t grad_ready(walk_t *w, const ddp_buckets_t *bs, size_t p)
{
    size_t k = bs->bucket_of[p];
    return --w->left[k] == 0 ? bucket_ready(w, bs, k) : HERD_OK;
}

/* Backward computes x more seconds; delayed gradients that become ready
 * meanwhile reach the reducer at their instant. Without them this is
 * acc += x, as it always was. */
static herd_status_t advance(walk_t *w, const ddp_buckets_t *bs, double x)
{
    herd_status_t st = HERD_OK;
    while (st == HERD_OK && w->npend && w->pend[0].at <= w->t0 + w->acc + x) {
        double part = w->pend[0].at - (w->t0 + w->acc);
        if (part > 0) {
            w->acc += part;
            x -= part;
        }
        size_t p = w->pend[0].param;
        memmove(w->pend, w->pend + 1, --w->npend * sizeof(*w->pend));
        st = grad_ready(w, bs, p);
    }
    w->acc += x;
    return st;
}

/* Hold p's gradient until `at` on the backward's clock (affects: grad). */
static void defer(walk_t *w, size_t p, double at)
{
    size_t i = w->npend;
    while (i > 0 && w->pend[i - 1].at > at) {
        w->pend[i] = w->pend[i - 1];
        i--;
    }
    w->pend[i] = (walk_pend_t){at, p};
    w->npend++;
}

/* After backward's compute: the delayed gradients still held arrive, the
 * rank idling until each one's instant. */
static herd_status_t drain(walk_t *w, const ddp_buckets_t *bs)
{
    herd_status_t st = w->npend ? flush(w) : HERD_OK;
    while (st == HERD_OK && w->npend) {
        double wait = w->pend[0].at - w->t0;
        if (wait > 0)
            st = w->ops->compute(w->ctx, wait, "grad delay");
        if (wait > 0)
            w->t0 += wait;
        size_t p = w->pend[0].param;
        memmove(w->pend, w->pend + 1, --w->npend * sizeof(*w->pend));
        if (st == HERD_OK)
            st = grad_ready(w, bs, p);
    }
    return st;
}

static int param_used(const walk_t *w, size_t p, long iter)
{
    const ddp_cfg_t *c = &w->job->cfg;
    return !(ddp_list_has(&c->unused_params, (long)p, 0) &&
             ddp_list_has(&c->unused_ranks, w->rank, 1) &&
             ddp_list_has(&c->unused_steps, iter, 1));
}

static herd_status_t start_backward(walk_t *w, const ddp_buckets_t *bs,
                                    long iter, int sync)
{
    const ddp_cfg_t *c = &w->job->cfg;
    int mark_unused = sync && (c->find_unused || c->static_graph);
    herd_status_t st = HERD_OK;
    for (size_t k = 0; k < bs->n; k++)
        w->left[k] = bs->b[k].nparams;
    w->next = 0;
    w->acc = 0;
    w->t0 = 0;
    w->npend = 0;
    for (size_t p = 0; p < w->job->model.nparams; p++) {
        w->used[p] = (unsigned char)param_used(w, p, iter);
        /* the reducer marks unused parameters ready as backward starts */
        if (!w->used[p] && mark_unused && --w->left[bs->bucket_of[p]] == 0)
            st = bucket_ready(w, bs, bs->bucket_of[p]);
    }
    return st;
}

static herd_status_t backward(walk_t *w, const ddp_buckets_t *bs, long iter,
                              int sync)
{
    const ddp_model_t *m = &w->job->model;
    herd_status_t st = start_backward(w, bs, iter, sync);
    int copy_in = sync && !w->job->cfg.grad_as_bucket_view;
    for (size_t i = 0; st == HERD_OK && i < m->nparams; i++) {
        size_t p = w->job->ready[i];
        if (!w->used[p])
            continue;
        if (w->dl.layer) /* a slow layer: before its gradient is ready */
            st = advance(w, bs, w->dl.layer[p]);
        if (st == HERD_OK)
            st = advance(w, bs, m->params[p].bwd_s);
        if (st == HERD_OK && copy_in)
            st = advance(w, bs, copy_s(w, m->params[p].bytes));
        if (st != HERD_OK || !sync)
            continue;
        if (w->dl.grad && w->dl.grad[p] > 0)
            defer(w, p, w->t0 + w->acc + w->dl.grad[p]);
        else
            st = grad_ready(w, bs, p);
    }
    if (st == HERD_OK) /* computed after the last gradient */
        st = advance(w, bs, m->bwd_tail_s);
    if (st == HERD_OK)
        st = drain(w, bs);
    return st == HERD_OK ? flush(w) : st;
}

static void describe_unused(walk_t *w, const ddp_buckets_t *bs)
{
    size_t n = (size_t)snprintf(
        w->msg, DDP_ERR_MSG_MAX,
        "RuntimeError: Expected to have finished reduction in the prior "
        "iteration before starting a new one. This error indicates that "
        "your module has parameters that were not used in producing loss "
        "(find_unused_parameters=True would handle them). Parameter "
        "indices which did not receive grad for rank %d:",
        w->rank);
    for (size_t p = 0; p < w->job->model.nparams && n < DDP_ERR_MSG_MAX; p++)
        if (!w->used[p])
            n += (size_t)snprintf(w->msg + n, DDP_ERR_MSG_MAX - n, " %zu", p);
    if (n < DDP_ERR_MSG_MAX)
        snprintf(w->msg + n, DDP_ERR_MSG_MAX - n,
                 " (buckets %zu..%zu never launched)", w->next, bs->n - 1);
}

/* After a synchronising backward: the used map, then finalize. */
static herd_status_t finalize(walk_t *w, const ddp_buckets_t *bs)
{
    const ddp_cfg_t *c = &w->job->cfg;
    herd_status_t st = HERD_OK;
    if (w->next < bs->n) {
        /* some bucket never filled: no finalize; the next forward raises */
        w->pending_error = 1;
        describe_unused(w, bs);
        return HERD_OK;
    }
    /* dynamic_graph_find_unused() || static_graph_first_iteration() */
    int map = (c->find_unused && !c->static_graph) ||
              (c->static_graph && w->syncs == 0);
    if (map)
        st = w->ops->all_reduce(w->ctx, w->job->model.nparams, HERD_INT32,
                                slot_map(w), "unused_map");
    for (size_t k = 0; st == HERD_OK && k < bs->n; k++)
        st = wait_bucket(w, k);
    if (st == HERD_OK && map)
        st = w->ops->wait(w->ctx, slot_map(w));
    if (st == HERD_OK)
        st = w->ops->mark(w->ctx, "finalize");
    if (st == HERD_OK && !c->grad_as_bucket_view && w->job->model.copy_bw > 0)
        st = w->ops->compute(w->ctx, copy_s(w, w->job->model.total_bytes),
                             "copy_out");
    return st;
}

static herd_status_t bcast(walk_t *w, uint64_t count, herd_dtype_t dt,
                           const char *label)
{
    herd_status_t st =
        w->ops->broadcast(w->ctx, count, dt, 0, slot_misc(w), label);
    return st == HERD_OK ? w->ops->wait(w->ctx, slot_misc(w)) : st;
}

/* The collectives of a forward: the bucket rebuild, the buffers. */
static herd_status_t forward_comm(walk_t *w, long iter)
{
    const ddp_job_t *j = w->job;
    herd_status_t st = HERD_OK;
    long before = (iter / j->cfg.grad_accum) * j->cfg.grad_accum;
    /* Reducer::rebuild_buckets at the first forward after enough syncs:
     * rank 0's layout goes to everyone in two int32 broadcasts. */
    if (j->rebuilds && iter > 0 && w->syncs == j->rebuild_after &&
        before == iter) {
        st = bcast(w, j->model.nparams + 1, HERD_INT32, "rebuild_buckets");
        if (st == HERD_OK)
            st = bcast(w, j->rebuilt.n, HERD_INT32, "rebuild_buckets");
    }
    if (j->cfg.broadcast_buffers && w->fwd_param_sync) {
        for (uint64_t off = 0; st == HERD_OK && off < j->model.buffer_bytes;
             off += BUFFER_CHUNK_BYTES) {
            uint64_t n = j->model.buffer_bytes - off;
            st = bcast(w, n < BUFFER_CHUNK_BYTES ? n : BUFFER_CHUNK_BYTES,
                       HERD_UINT8, "buffers");
        }
    }
    return st;
}

static herd_status_t forward(walk_t *w, long iter)
{
    herd_status_t st = forward_comm(w, iter);
    return st == HERD_OK
               ? w->ops->compute(w->ctx, w->job->model.fwd_s, "forward")
               : st;
}

static herd_status_t blocking_all_reduce(walk_t *w, uint64_t count,
                                         herd_dtype_t dt, const char *label)
{
    herd_status_t st =
        w->ops->all_reduce(w->ctx, count, dt, slot_misc(w), label);
    return st == HERD_OK ? w->ops->wait(w->ctx, slot_misc(w)) : st;
}

/* Join (torch.distributed.algorithms.Join) at each forward: the
 * notification all_reduce (ones from ranks with data, zeros from joined
 * ones) and DDP's global require_backward_grad_sync flag. */
static herd_status_t join_flags(walk_t *w)
{
    herd_status_t st = blocking_all_reduce(w, 1, HERD_INT32, "join notify");
    return st == HERD_OK
               ? blocking_all_reduce(w, 1, HERD_INT32, "join require_sync")
               : st;
}

/* A joined rank shadows an iteration of the others: their forward's
 * collectives, then every bucket's all_reduce (zeros) in order. */
static herd_status_t shadow_iteration(walk_t *w, long iter)
{
    const ddp_job_t *j = w->job;
    int sync = ddp_job_is_sync(j, iter);
    const ddp_buckets_t *bs = ddp_job_layout(j, iter);
    herd_status_t st = w->ops->mark(w->ctx, "step");
    if (st == HERD_OK)
        st = join_flags(w);
    if (st == HERD_OK)
        st = forward_comm(w, iter);
    for (size_t k = 0; sync && st == HERD_OK && k < bs->n; k++)
        st = launch(w, bs, k);
    int map = j->cfg.find_unused && !j->cfg.static_graph;
    if (sync && map && st == HERD_OK)
        st = w->ops->all_reduce(w->ctx, j->model.nparams, HERD_INT32,
                                slot_map(w), "unused_map");
    for (size_t k = 0; sync && st == HERD_OK && k < bs->n; k++)
        st = wait_bucket(w, k);
    if (sync && map && st == HERD_OK)
        st = w->ops->wait(w->ctx, slot_map(w));
    if (sync && st == HERD_OK)
        st = w->ops->mark(w->ctx, "finalize");
    w->syncs += sync;
    w->fwd_param_sync = sync;
    return st;
}

/* After its own data: shadow the others until every rank has joined,
 * the last notification, then the last joiner's model broadcast. */
static herd_status_t join_tail(walk_t *w, long own)
{
    const ddp_job_t *j = w->job;
    long most = 0;
    int last = 0;
    for (int r = 0; r < j->world; r++)
        if (j->rank_iters[r] >= most)
            most = j->rank_iters[r], last = r;
    herd_status_t st = HERD_OK;
    for (long it = own; st == HERD_OK && it < most; it++)
        st = shadow_iteration(w, it);
    if (st == HERD_OK)
        st = blocking_all_reduce(w, 1, HERD_INT32, "join notify");
    uint64_t total = j->model.total_bytes + j->model.buffer_bytes;
    for (uint64_t off = 0; st == HERD_OK && off < total;
         off += BUFFER_CHUNK_BYTES) {
        uint64_t n = total - off;
        st = w->ops->broadcast(
            w->ctx, n < BUFFER_CHUNK_BYTES ? n : BUFFER_CHUNK_BYTES, HERD_UINT8,
            last, slot_misc(w), "join final sync");
        if (st == HERD_OK)
            st = w->ops->wait(w->ctx, slot_misc(w));
    }
    return st;
}

static herd_status_t rank0_extras(walk_t *w, long iter)
{
    const ddp_cfg_t *c = &w->job->cfg;
    herd_status_t st = HERD_OK;
    if (c->eval_every > 0 && (iter + 1) % c->eval_every == 0 && w->rank == 0) {
        st = w->ops->compute(w->ctx, c->eval_s, "eval");
        if (st == HERD_OK && c->eval_collective)
            st = w->ops->all_reduce(w->ctx, 1, HERD_FLOAT32, slot_misc(w),
                                    "eval metric");
        if (st == HERD_OK && c->eval_collective)
            st = w->ops->wait(w->ctx, slot_misc(w));
    }
    if (st != HERD_OK || c->ckpt_every <= 0 || (iter + 1) % c->ckpt_every)
        return st;
    if (w->rank == 0)
        st = w->ops->compute(w->ctx, c->ckpt_s, "checkpoint");
    int barrier = c->ckpt_barrier == DDP_CKPT_BARRIER ||
                  (c->ckpt_barrier == DDP_CKPT_RANK0_BARRIER && w->rank == 0);
    if (st == HERD_OK && barrier)
        st = w->ops->barrier(w->ctx, slot_misc(w), "checkpoint barrier");
    if (st == HERD_OK && barrier)
        st = w->ops->wait(w->ctx, slot_misc(w));
    return st;
}

static herd_status_t iteration(walk_t *w, long iter, int *raised)
{
    const ddp_job_t *j = w->job;
    herd_status_t st = w->ops->mark(w->ctx, "step");
    if (st == HERD_OK && w->pending_error) {
        *raised =
            1; /* prepare_for_forward: the prior reduction is unfinished */
        return HERD_OK;
    }
    if (st == HERD_OK && j->cfg.join)
        st = join_flags(w);
    if (st == HERD_OK)
        st = forward(w, iter);
    int sync = ddp_job_is_sync(j, iter);
    const ddp_buckets_t *bs = ddp_job_layout(j, iter);
    if (st == HERD_OK)
        st = backward(w, bs, iter, sync);
    if (st == HERD_OK && sync)
        st = finalize(w, bs);
    /* GradScaler.step: unscale every gradient in place and check it for
     * inf/NaN on each device; with one process group it issues no
     * collective (the found_inf .item() only syncs with the device) */
    if (st == HERD_OK && sync && j->cfg.amp.grad_scaler)
        st = w->ops->compute(w->ctx, copy_s(w, 2 * j->model.total_bytes),
                             "unscale");
    if (st == HERD_OK && sync)
        st = w->ops->compute(w->ctx, j->model.opt_s, "optimizer");
    w->syncs += sync;
    w->fwd_param_sync = sync;
    return st == HERD_OK ? rank0_extras(w, iter) : st;
}

/* The DDP constructor's _sync_module_states: parameters and buffers
 * broadcast from rank 0 in 250 MiB chunks, before the first iteration. */
static herd_status_t init_sync(walk_t *w)
{
    const ddp_model_t *m = &w->job->model;
    uint64_t total = m->total_bytes + m->buffer_bytes;
    herd_status_t st = HERD_OK;
    for (uint64_t off = 0; st == HERD_OK && off < total;
         off += BUFFER_CHUNK_BYTES) {
        uint64_t n = total - off;
        st = bcast(w, n < BUFFER_CHUNK_BYTES ? n : BUFFER_CHUNK_BYTES,
                   HERD_UINT8, "init_sync");
    }
    return st;
}

herd_status_t ddp_job_walk(const ddp_job_t *job, int rank,
                           const ddp_emit_ops_t *ops, void *ctx, int *raised,
                           char *msg)
{
    walk_t w = {.job = job,
                .rank = rank,
                .ops = ops,
                .ctx = ctx,
                .fwd_param_sync = 1,
                .msg = msg};
    size_t nb =
        job->initial.n > job->rebuilt.n ? job->initial.n : job->rebuilt.n;
    w.left = calloc(nb + 1, sizeof(size_t));
    w.used = calloc(job->model.nparams + 1, 1);
    w.parts = calloc(nb + 1, 1);
    herd_status_t st =
        w.left && w.used && w.parts ? HERD_OK : HERD_ERR_NO_MEMORY;
    if (st == HERD_OK)
        st = ddp_rank_delays_make(&job->cfg.grad_delays, &job->model, rank,
                                  &w.dl);
    if (st == HERD_OK && w.dl.grad &&
        !(w.pend = calloc(job->model.nparams, sizeof(*w.pend))))
        st = HERD_ERR_NO_MEMORY;
    *raised = 0;
    msg[0] = '\0';
    if (st == HERD_OK && job->cfg.init_sync)
        st = init_sync(&w);
    for (long it = 0; st == HERD_OK && !*raised && it < job->rank_iters[rank];
         it++)
        st = iteration(&w, it, raised);
    if (st == HERD_OK && !*raised && job->cfg.join)
        st = join_tail(&w, job->rank_iters[rank]);
    if (!*raised)
        msg[0] = '\0';
    free(w.left);
    free(w.used);
    free(w.parts);
    free(w.pend);
    ddp_rank_delays_fini(&w.dl);
    return st;
}
