/* workload/ddp/report.c - DDP predictions as text and JSON, and the
 * diagnosis of a run that hung or failed: which ranks raised PyTorch's
 * reduction error, which ranks blocked in which collective, which ranks
 * ran out of data, and what in the job's options explains it. */
#include <stdlib.h>
#include <string.h>

#include "workload/common/report.h"
#include "workload/ddp/report.h"

void ddp_report_ranks(const unsigned char *sel, int n, char *buf, size_t len)
{
    int count = 0;
    for (int r = 0; r < n; r++)
        count += sel[r] != 0;
    size_t o = (size_t)snprintf(buf, len, count == 1 ? "rank " : "ranks ");
    int first = 1;
    for (int r = 0; r < n && o < len; r++) {
        if (!sel[r])
            continue;
        int e = r;
        while (e + 1 < n && sel[e + 1])
            e++;
        o += (size_t)snprintf(buf + o, len - o, e > r ? "%s%d-%d" : "%s%d",
                              first ? "" : ",", r, e);
        first = 0;
        r = e;
    }
}

static void diag_raised(const ddp_collect_t *c, const ddp_outcome_t *o,
                        unsigned char *sel, wl_buf_t *d)
{
    int first = -1, n = 0;
    for (int r = 0; r < c->world; r++) {
        sel[r] = o->raised && o->raised[r];
        n += sel[r];
        if (sel[r] && first < 0)
            first = r;
    }
    if (first < 0)
        return;
    char ranks[256];
    ddp_report_ranks(sel, c->world, ranks, sizeof(ranks));
    wl_put(d, "%s raised at the next forward: %s\n", ranks,
           o->errors && o->errors[first] ? o->errors[first] : "(no message)");
    if (n == c->world)
        wl_put(d, "every rank raised the same error: the job fails at once, "
                  "nobody is left waiting\n");
}

/* Ranks whose program failed on an engine error, grouped by message. */
static void diag_failed(const ddp_collect_t *c, const ddp_outcome_t *o,
                        unsigned char *sel, wl_buf_t *d)
{
    if (!o->errors)
        return;
    unsigned char *done = calloc((size_t)(c->world > 0 ? c->world : 1), 1);
    for (int r = 0; done && r < c->world; r++) {
        const char *m = o->errors[r];
        if (!m || done[r] || (o->raised && o->raised[r]))
            continue;
        for (int q = 0; q < c->world; q++) {
            sel[q] = !done[q] && o->errors[q] && !strcmp(o->errors[q], m) &&
                     !(o->raised && o->raised[q]);
            done[q] |= sel[q];
        }
        char ranks[256];
        ddp_report_ranks(sel, c->world, ranks, sizeof(ranks));
        wl_put(d, "%s stopped on an error: %s\n", ranks, m);
    }
    free(done);
}

/* Group ranks by the op they blocked in. */
static void diag_stuck_list(const ddp_stuck_t *stuck, int world,
                            unsigned char *sel, wl_buf_t *d)
{
    unsigned char *done = calloc((size_t)(world > 0 ? world : 1), 1);
    for (int r = 0; done && r < world; r++) {
        const ddp_stuck_t *s = &stuck[r];
        if (!s->valid || done[r])
            continue;
        for (int q = 0; q < world; q++) {
            const ddp_stuck_t *t = &stuck[q];
            sel[q] = t->valid && !done[q] && t->seq == s->seq &&
                     t->coll == s->coll && !strcmp(t->label, s->label);
            done[q] |= sel[q];
        }
        char ranks[256];
        ddp_report_ranks(sel, world, ranks, sizeof(ranks));
        wl_put(d,
               "%s blocked in %s '%s' (seq %llu, %llu x %s) of "
               "iteration %ld: %s\n",
               ranks, herd_coll_name(s->coll), s->label,
               (unsigned long long)s->seq, (unsigned long long)s->count,
               herd_dtype_name(s->dtype), s->iter,
               herd_status_string(s->status));
    }
    free(done);
}

static void diag_stuck(const ddp_collect_t *c, unsigned char *sel, wl_buf_t *d)
{
    diag_stuck_list(c->stuck, c->world, sel, d);
}

size_t ddp_report_stuck(const ddp_stuck_t *stuck, int world, char *buf,
                        size_t len)
{
    wl_buf_t d = {buf, len, 0};
    unsigned char *sel = calloc((size_t)(world > 0 ? world : 1), 1);
    if (len)
        buf[0] = '\0';
    if (sel)
        diag_stuck_list(stuck, world, sel, &d);
    free(sel);
    return d.off < len ? d.off : len;
}

static void diag_finished(const ddp_collect_t *c, const ddp_outcome_t *o,
                          unsigned char *sel, wl_buf_t *d)
{
    long lo = c->job->rank_iters[0], hi = lo;
    int any = 0;
    for (int r = 0; r < c->world; r++) {
        long n = c->job->rank_iters[r];
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
        sel[r] = !c->stuck[r].valid && !(o->raised && o->raised[r]) &&
                 !(o->errors && o->errors[r]);
        any |= sel[r];
    }
    char ranks[256];
    ddp_report_ranks(sel, c->world, ranks, sizeof(ranks));
    if (any && lo != hi)
        wl_put(d,
               "%s finished their data; ranks run %ld to %ld "
               "iterations (uneven batches per rank): the ranks with more "
               "data wait for collectives the others never call\n",
               ranks, lo, hi);
}

static void diag_options(const ddp_collect_t *c, wl_buf_t *d)
{
    const ddp_cfg_t *cfg = &c->job->cfg;
    if (cfg->eval_collective && cfg->eval_every > 0)
        wl_put(d, "cause: rank 0's evaluation calls all_reduce 'eval metric' "
                  "that no other rank calls; their next collective is matched "
                  "against it\n");
    if (cfg->ckpt_every > 0 && cfg->ckpt_barrier == DDP_CKPT_RANK0_BARRIER)
        wl_put(d, "cause: barrier() inside `if rank == 0:` after the "
                  "checkpoint: only rank 0 calls it\n");
    if (cfg->unused_params.n && !cfg->find_unused)
        wl_put(d, "cause: parameters without gradients and "
                  "find_unused_parameters=False: their buckets never launch\n");
}

void ddp_report_diagnosis(const ddp_collect_t *c, const ddp_outcome_t *o,
                          char *buf, size_t len)
{
    wl_buf_t d = {buf, len, 0};
    buf[0] = '\0';
    int any_raised = 0;
    for (int r = 0; o->raised && r < c->world; r++)
        any_raised |= o->raised[r];
    if (o->status == HERD_OK && !any_raised)
        return;
    unsigned char *sel = calloc((size_t)(c->world > 0 ? c->world : 1), 1);
    if (!sel)
        return;
    wl_put(&d, "outcome: %s\n",
           o->status == HERD_OK ? "error raised"
                                : herd_status_string(o->status));
    diag_raised(c, o, sel, &d);
    diag_stuck(c, sel, &d);
    diag_failed(c, o, sel, &d);
    diag_finished(c, o, sel, &d);
    diag_options(c, &d);
    if (o->info && o->info->report && *o->info->report)
        wl_put(&d, "engine report:\n%s", o->info->report);
    free(sel);
}

static double rel_ms(uint64_t t, uint64_t start)
{
    return t > start ? (double)(t - start) * 1e-6 : 0;
}

/* held: launch - ready (bucket order); queued: start - launch (the
 * stream was busy with earlier buckets). */
static void text_buckets(const ddp_collect_t *c, long it, int r, FILE *f)
{
    const ddp_buckets_t *bs = ddp_job_layout(c->job, it);
    const ddp_rstep_t *s = &c->steps[(size_t)r * DDP_REC_MAX_ITERS + it];
    fprintf(f,
            "\nbuckets of iteration %ld on rank %d (ms from step start):\n"
            "%6s %7s %9s %9s %9s %9s %9s %8s %8s\n",
            it, r, "bucket", "params", "MiB", "ready", "launch", "start", "end",
            "held", "queued");
    for (size_t k = 0; k < bs->n; k++) {
        const ddp_btime_t *b =
            &c->bt[((size_t)r * DDP_REC_MAX_ITERS + it) * c->nb + k];
        double rd = rel_ms(b->ready, s->start),
               la = rel_ms(b->launch, s->start);
        double st = rel_ms(b->start, s->start), en = rel_ms(b->end, s->start);
        fprintf(f, "%6zu %7zu %9.2f %9.3f %9.3f %9.3f %9.3f %8.3f %8.3f\n", k,
                bs->b[k].nparams, (double)bs->b[k].bytes / 1048576.0, rd, la,
                st, en, la > rd ? la - rd : 0, st > la ? st - la : 0);
    }
}

void ddp_report_text(const ddp_collect_t *c, const ddp_outcome_t *o, FILE *f)
{
    ddp_summary_t s;
    ddp_collect_summary(c, &s);
    const ddp_cfg_t *cfg = &c->job->cfg;
    fprintf(f,
            "model %s: %zu parameters, %.1f MiB of gradients; %d ranks; "
            "bucket_cap_mb %g: %zu buckets (%zu at construction)\n",
            c->job->model.name, c->job->model.nparams,
            (double)c->job->model.total_bytes / 1048576.0, c->world,
            cfg->bucket_cap_mb, c->job->rebuilt.n, c->job->initial.n);
    int data = wl_data_on(&c->job->data); /* a data_ms column */
    fprintf(f, "%5s %5s %8s %10s %10s %10s %8s %6s%s\n", "iter", "sync",
            "buckets", "step_ms", "exposed_ms", "comm_ms", "overlap", "crit",
            data ? "    data_ms" : "");
    long last_ok = -1;
    for (long it = 0; it < s.iters; it++) {
        ddp_step_pred_t p;
        ddp_collect_step(c, it, &p);
        if (!p.complete) {
            fprintf(f, "%5ld %5d %8zu %10s (not finished by every rank)\n", it,
                    p.sync, p.nbuckets, "-");
            continue;
        }
        last_ok = p.sync ? it : last_ok;
        fprintf(f, "%5ld %5d %8zu %10.3f %10.3f %10.3f %8.3f %6d", it, p.sync,
                p.nbuckets, p.step_s * 1e3, p.exposed_s * 1e3, p.comm_s * 1e3,
                p.overlap, p.critical_rank);
        if (data)
            fprintf(f, " %10.3f", p.data_s * 1e3);
        fputc('\n', f);
    }
    if (s.nsteady)
        fprintf(f,
                "steady state (iterations %ld..): step %.3f ms, exposed "
                "communication %.3f ms, overlap %.1f%%, critical rank %d\n",
                s.first_steady, s.step_s * 1e3, s.exposed_s * 1e3,
                s.overlap * 100, s.critical_rank);
    if (s.nsteady && data)
        fprintf(f,
                "data loading (load %.3f ms, %d workers, prefetch_factor %d): "
                "wait per step %.3f ms (mean over ranks), %.3f ms on the "
                "rank that waited most\n",
                c->job->data.cfg.load_s * 1e3, c->job->data.cfg.num_workers,
                c->job->data.cfg.prefetch_factor, s.data_s * 1e3,
                s.max_data_s * 1e3);
    if (s.nsteady && cfg->grad_accum > 1)
        fprintf(f, "optimizer step (%d iterations, no_sync for %d): %.3f ms\n",
                cfg->grad_accum, cfg->grad_accum - 1, s.opt_step_s * 1e3);
    if (last_ok >= 0) {
        ddp_step_pred_t p;
        ddp_collect_step(c, last_ok, &p);
        text_buckets(c, last_ok, p.critical_rank, f);
    }
    char diag[8192];
    ddp_report_diagnosis(c, o, diag, sizeof(diag));
    if (diag[0])
        fprintf(f, "\n%s", diag);
}

static json_t *json_bucket_times(const ddp_collect_t *c, long it, int r)
{
    const ddp_buckets_t *bs = ddp_job_layout(c->job, it);
    const ddp_rstep_t *s = &c->steps[(size_t)r * DDP_REC_MAX_ITERS + it];
    json_t *a = json_array();
    for (size_t k = 0; k < bs->n; k++) {
        const ddp_btime_t *b =
            &c->bt[((size_t)r * DDP_REC_MAX_ITERS + it) * c->nb + k];
        json_array_append_new(
            a, json_pack("{s:I,s:I,s:f,s:f,s:f,s:f}", "bucket", (json_int_t)k,
                         "bytes", (json_int_t)bs->b[k].bytes, "ready_s",
                         rel_ms(b->ready, s->start) * 1e-3, "launch_s",
                         rel_ms(b->launch, s->start) * 1e-3, "start_s",
                         rel_ms(b->start, s->start) * 1e-3, "end_s",
                         rel_ms(b->end, s->start) * 1e-3));
    }
    return a;
}

static json_t *json_steps(const ddp_collect_t *c, long iters)
{
    json_t *a = json_array();
    for (long it = 0; it < iters; it++) {
        ddp_step_pred_t p;
        ddp_collect_step(c, it, &p);
        json_t *o = json_pack(
            "{s:I,s:b,s:b,s:I,s:f,s:f,s:f,s:f,s:f,s:i}", "iter", (json_int_t)it,
            "complete", p.complete, "sync", p.sync, "buckets",
            (json_int_t)p.nbuckets, "step_s", p.step_s, "max_step_s",
            p.max_step_s, "exposed_s", p.exposed_s, "comm_s", p.comm_s,
            "overlap", p.overlap, "critical_rank", p.critical_rank);
        if (wl_data_on(&c->job->data))
            json_object_set_new(o, "data_s", json_real(p.data_s));
        if (p.complete && p.sync && p.critical_rank >= 0)
            json_object_set_new(o, "bucket_times",
                                json_bucket_times(c, it, p.critical_rank));
        json_array_append_new(a, o);
    }
    return a;
}

json_t *ddp_report_json(const ddp_collect_t *c, const ddp_outcome_t *o)
{
    ddp_summary_t s;
    ddp_collect_summary(c, &s);
    char diag[8192];
    ddp_report_diagnosis(c, o, diag, sizeof(diag));
    json_t *raised = json_array();
    for (int r = 0; o->raised && r < c->world; r++)
        if (o->raised[r])
            json_array_append_new(raised, json_integer(r));
    json_t *j = json_pack(
        "{s:s,s:i,s:f,s:I,s:I,s:s,s:{s:I,s:f,s:f,s:f,s:f,s:i,s:f},s:o,s:o,s:s}",
        "model", c->job->model.name, "world_size", c->world, "bucket_cap_mb",
        c->job->cfg.bucket_cap_mb, "buckets", (json_int_t)c->job->rebuilt.n,
        "initial_buckets", (json_int_t)c->job->initial.n, "status",
        herd_status_name(o->status), "steady", "first_iter",
        (json_int_t)s.first_steady, "step_s", s.step_s, "exposed_s",
        s.exposed_s, "comm_s", s.comm_s, "overlap", s.overlap, "critical_rank",
        s.critical_rank, "optimizer_step_s", s.opt_step_s, "steps",
        json_steps(c, s.iters), "raised_ranks", raised, "diagnosis", diag);
    json_t *steady = json_object_get(j, "steady");
    if (steady && wl_data_on(&c->job->data)) {
        json_object_set_new(steady, "data_s", json_real(s.data_s));
        json_object_set_new(steady, "max_data_s", json_real(s.max_data_s));
    }
    return j;
}
