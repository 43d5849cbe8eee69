/* workload/fsdp/report.c - FSDP predictions as text and JSON (steps,
 * memory per rank, exposed communication per unit), and the diagnosis of
 * a run that hung or failed: where the ranks blocked (DDP's grouping,
 * ddp_report_stuck), the first collective on which the ranks' programs
 * disagree (their walks compared group by group) and the option that
 * explains it. */
#include <stdlib.h>
#include <string.h>

#include "workload/common/report.h"
#include "workload/fsdp/report.h"

static const double MIB = 1048576.0;

/* Each rank's collectives, recorded from its walk. */
typedef struct rop {
    int group;
    herd_coll_t coll;
    uint64_t count;
    herd_dtype_t dtype;
    char label[32];
} rop_t;

typedef struct rlist {
    rop_t *ops;
    size_t n, cap;
} rlist_t;

static herd_status_t r_coll(void *c, const ddp_emit_coll_t *e, size_t slot)
{
    rlist_t *l = c;
    (void)slot;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        rop_t *g = realloc(l->ops, cap * sizeof(*g));
        if (!g)
            return HERD_ERR_NO_MEMORY;
        l->ops = g;
        l->cap = cap;
    }
    rop_t *o = &l->ops[l->n++];
    *o = (rop_t){e->group, e->coll, e->count, e->dtype, ""};
    snprintf(o->label, sizeof(o->label), "%s", e->label ? e->label : "");
    return HERD_OK;
}
static herd_status_t r_compute(void *c, double s, const char *l)
{
    (void)c, (void)s, (void)l;
    return HERD_OK;
}
static herd_status_t r_mark(void *c, const char *l)
{
    (void)c, (void)l;
    return HERD_OK;
}
static herd_status_t r_wait(void *c, size_t slot)
{
    (void)c, (void)slot;
    return HERD_OK;
}
static const ddp_emit_ops_t rec_ops = {
    .compute = r_compute, .mark = r_mark, .wait = r_wait, .coll = r_coll};

/* The k-th op of `l` in group g, or NULL. */
static const rop_t *nth(const rlist_t *l, int g, size_t k)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->ops[i].group == g && k-- == 0)
            return &l->ops[i];
    return NULL;
}

static int same(const rop_t *a, const rop_t *b)
{
    if (!a || !b)
        return a == b;
    return a->coll == b->coll && a->count == b->count && a->dtype == b->dtype &&
           !strcmp(a->label, b->label);
}

static void describe(const rop_t *o, char *buf, size_t len)
{
    if (!o)
        snprintf(buf, len, "no collective (it has issued all of its own)");
    else
        snprintf(buf, len, "%s '%s' (%llu x %s)", herd_coll_name(o->coll),
                 o->label, (unsigned long long)o->count,
                 herd_dtype_name(o->dtype));
}

/* Compare the members of group g (0: the world) op by op. */
static int group_mismatch(const fsdp_job_t *j, const rlist_t *ls, int g,
                          wl_buf_t *d)
{
    int n = g ? j->groups[g - 1].n : j->world;
    const int *ranks = g ? j->groups[g - 1].ranks : NULL;
    unsigned char *sel = calloc((size_t)j->world, 1);
    if (!sel)
        return 0;
    int found = 0;
    for (size_t k = 0; !found; k++) {
        int r0 = ranks ? ranks[0] : 0, any = 0;
        const rop_t *ref = nth(&ls[r0], g, k);
        any |= ref != NULL;
        for (int i = 1; i < n; i++) {
            const rop_t *o = nth(&ls[ranks ? ranks[i] : i], g, k);
            any |= o != NULL;
            found |= !same(o, ref);
        }
        if (!any)
            break;
        if (!found)
            continue;
        /* one line per distinct op at position k */
        wl_put(d, "collective #%zu on %s disagrees:\n", k + 1,
               g ? "its group" : "the world");
        unsigned char *done = calloc((size_t)j->world, 1);
        for (int i = 0; done && i < n; i++) {
            int r = ranks ? ranks[i] : i;
            if (done[r])
                continue;
            const rop_t *o = nth(&ls[r], g, k);
            memset(sel, 0, (size_t)j->world);
            for (int q = i; q < n; q++) {
                int rq = ranks ? ranks[q] : q;
                if (!done[rq] && same(nth(&ls[rq], g, k), o))
                    sel[rq] = done[rq] = 1;
            }
            char rs[256], what[160];
            ddp_report_ranks(sel, j->world, rs, sizeof(rs));
            describe(o, what, sizeof(what));
            wl_put(d, "  %s: %s\n", rs, what);
        }
        free(done);
    }
    free(sel);
    return found;
}

void fsdp_report_mismatch(const fsdp_job_t *j, char *buf, size_t len)
{
    wl_buf_t d = {buf, len, 0};
    buf[0] = '\0';
    rlist_t *ls = calloc((size_t)j->world, sizeof(rlist_t));
    herd_status_t st = ls ? HERD_OK : HERD_ERR_NO_MEMORY;
    for (int r = 0; st == HERD_OK && r < j->world; r++)
        st = fsdp_job_walk(j, r, &rec_ops, &ls[r]);
    for (int g = 0; st == HERD_OK && g <= j->ngroups; g++)
        if (group_mismatch(j, ls, g, &d))
            break; /* the first disagreement explains what follows */
    for (int r = 0; ls && r < j->world; r++)
        free(ls[r].ops);
    free(ls);
}

static void causes(const fsdp_job_t *j, wl_buf_t *d)
{
    const fsdp_cfg_t *c = &j->cfg;
    unsigned char *sel = calloc((size_t)j->world, 1);
    if (!sel)
        return;
    char rs[256], w1[64], w2[64];
    if (c->bad_wrap_ranks.n) {
        for (int r = 0; r < j->world; r++)
            sel[r] = (unsigned char)ddp_list_has(&c->bad_wrap_ranks, r, 0);
        ddp_report_ranks(sel, j->world, rs, sizeof(rs));
        wl_put(d,
               "cause: %s wrap%s the model with %s into %zu units, the others "
               "with %s into %zu (fsdp.bad_wrap): the ranks' all_gathers no "
               "longer match unit for unit\n",
               rs, c->bad_wrap_ranks.n == 1 ? "s" : "",
               fsdp_wrap_name(&c->bad_wrap, w1, sizeof(w1)), j->bad_units.n,
               fsdp_wrap_name(&c->wrap, w2, sizeof(w2)), j->units.n);
    }
    if (c->skip_units.n) {
        for (int r = 0; r < j->world; r++)
            sel[r] = (unsigned char)ddp_list_has(&c->skip_ranks, r, 1);
        ddp_report_ranks(sel, j->world, rs, sizeof(rs));
        char steps[64] = "every iteration";
        if (c->skip_steps.n)
            snprintf(steps, sizeof(steps), "iteration %ld%s",
                     c->skip_steps.v[0],
                     c->skip_steps.n > 1 ? " and more" : "");
        wl_put(d,
               "cause: %s skip%s the forward of unit %ld%s in %s "
               "(fsdp.skip_units): no all_gather for it, no gradients and so "
               "no reduce_scatter; the later collectives are matched against "
               "the other ranks' for that unit\n",
               rs, c->skip_ranks.n == 1 ? "s" : "", c->skip_units.v[0],
               c->skip_units.n > 1 ? " (and more)" : "", steps);
    }
    if (c->short_ranks.n && c->short_steps < c->steps) {
        for (int r = 0; r < j->world; r++)
            sel[r] = (unsigned char)ddp_list_has(&c->short_ranks, r, 0);
        ddp_report_ranks(sel, j->world, rs, sizeof(rs));
        wl_put(d,
               "cause: %s run%s out of data after %ld iterations, the others "
               "run %ld (uneven inputs, fsdp.short_ranks): the others' next "
               "all_gather has no partner there\n",
               rs, c->short_ranks.n == 1 ? "s" : "", c->short_steps, c->steps);
    }
    free(sel);
}

void fsdp_report_diagnosis(const fsdp_collect_t *c, const fsdp_outcome_t *o,
                           char *buf, size_t len)
{
    wl_buf_t d = {buf, len, 0};
    buf[0] = '\0';
    if (o->status == HERD_OK)
        return;
    wl_diag_outcome(&d, o->status, c->steps.stuck, c->world, o->errors);
    char mm[4096];
    fsdp_report_mismatch(c->job, mm, sizeof(mm));
    if (mm[0])
        wl_put(&d, "the ranks' programs differ: %s", mm);
    causes(c->job, &d);
    if (o->info && o->info->report && *o->info->report)
        wl_put(&d, "engine report:\n%s", o->info->report);
}

static void text_header(const fsdp_collect_t *c, const fsdp_summary_t *s,
                        FILE *f)
{
    const fsdp_job_t *j = c->job;
    char w[64], rf[16];
    if (j->reshard_to)
        snprintf(rf, sizeof(rf), "%d ranks", j->reshard_to);
    else
        snprintf(rf, sizeof(rf), "%s", j->reshard_fwd ? "true" : "false");
    fprintf(f,
            "model %s: %zu parameters, %.1f MiB; %d ranks; %s (sharded over "
            "%d, %d replicas); %zu units (%s); reshard_after_forward %s, "
            "forward_prefetch %s, backward_prefetch %s, limit_all_gathers "
            "%s, %s CPU, %d comm stream%s%s; param %s, reduce %s\n",
            j->model.name, j->model.nparams, (double)j->model.total_bytes / MIB,
            j->world, fsdp_strategy_name(j->cfg.strategy), j->shard,
            j->replicas, j->units.n, fsdp_wrap_name(&j->cfg.wrap, w, sizeof(w)),
            rf, j->cfg.forward_prefetch ? "true" : "false",
            fsdp_bwd_prefetch_name(j->cfg.backward_prefetch),
            j->cfg.limit_all_gathers ? "true" : "false",
            j->cfg.cpu_bound ? "bound" : "ahead", j->cfg.comm_streams,
            j->cfg.comm_streams > 1 ? "s" : "",
            j->cfg.gloo ? " (gloo: blocking)" : "",
            herd_dtype_name(j->param_dtype), herd_dtype_name(j->reduce_dtype));
    const fsdp_memory_t *m = &s->mem;
    fprintf(f, "memory per rank");
    if (m->rank) /* the ranks differ: the one with the most */
        fprintf(f, " (the most: rank %d)", m->rank);
    fprintf(f,
            ": parameters %.1f MiB, gradients %.1f MiB, optimizer %.1f MiB, "
            "unsharded peak %.1f MiB (%d units at once); total on the "
            "device %.1f MiB",
            (double)m->params / MIB, (double)m->grads / MIB,
            (double)m->optimizer / MIB, (double)m->unsharded / MIB,
            m->units_alive, (double)m->total / MIB);
    wl_gpu_mem_verdict(f, "fsdp", j->cfg.gpu_mem_gib, m->rank, m->total);
    fprintf(f, " (activations not included)\n");
    if (m->host)
        fprintf(f,
                "CPU offload: parameters, gradients and optimizer state on "
                "the host (%.1f MiB); the device holds the unsharded units "
                "only\n",
                (double)m->host / MIB);
}

void fsdp_report_text(const fsdp_collect_t *c, const fsdp_outcome_t *o, FILE *f)
{
    fsdp_summary_t s;
    fsdp_collect_summary(c, &s);
    text_header(c, &s, f);
    fprintf(f, "%5s %10s %10s %10s %10s\n", "iter", "step_ms", "exposed_ms",
            "compute_ms", "comm_ms");
    for (long it = 0; it < s.iters; it++) {
        fsdp_step_pred_t p;
        fsdp_collect_step(c, it, &p);
        if (!p.complete)
            fprintf(f, "%5ld %10s (not finished by every rank)\n", it, "-");
        else
            fprintf(f, "%5ld %10.3f %10.3f %10.3f %10.3f\n", it, p.step_s * 1e3,
                    p.exposed_s * 1e3, p.compute_s * 1e3, p.comm_s * 1e3);
    }
    if (s.nsteady)
        fprintf(f,
                "steady state: step %.3f ms, exposed communication %.3f ms "
                "(%.1f%% of the step), overlap %.1f%%\n",
                s.step_s * 1e3, s.exposed_s * 1e3,
                s.step_s > 0 ? 100 * s.exposed_s / s.step_s : 0,
                s.overlap * 100);
    if (s.nsteady && wl_data_on(&c->job->data)) /* workload/common/data.h */
        fprintf(f, "data loading: wait per step %.3f ms (mean over ranks)\n",
                s.data_s * 1e3);
    if (s.nsteady) {
        const fsdp_units_t *us = &c->job->units;
        fprintf(f,
                "\nper unit (rank 0's collectives per step; exposed: mean "
                "wait of the compute stream before the unit, ms):\n"
                "%4s %-22s %9s %4s %4s %4s %9s %9s %9s\n",
                "unit", "name", "MiB", "ag", "rs", "ar", "ag_MiB", "fwd_exp",
                "bwd_exp");
        for (size_t u = 0; u < us->n; u++) {
            fsdp_utime_t t;
            fsdp_collect_unit(c, u, &t);
            fprintf(f, "%4zu %-22.22s %9.2f %4u %4u %4u %9.2f %9.3f %9.3f\n", u,
                    us->u[u].name, (double)us->u[u].bytes / MIB, t.ag, t.rs,
                    t.ar, (double)t.ag_bytes / MIB, t.fwd_gap * 1e3,
                    t.bwd_gap * 1e3);
        }
    }
    char diag[8192];
    fsdp_report_diagnosis(c, o, diag, sizeof(diag));
    if (diag[0])
        fprintf(f, "\n%s", diag);
}

static json_t *json_units(const fsdp_collect_t *c)
{
    json_t *a = json_array();
    const fsdp_units_t *us = &c->job->units;
    for (size_t u = 0; u < us->n; u++) {
        fsdp_utime_t t;
        fsdp_collect_unit(c, u, &t);
        json_array_append_new(
            a, json_pack("{s:I,s:s,s:I,s:I,s:i,s:i,s:i,s:f,s:f}", "unit",
                         (json_int_t)u, "name", us->u[u].name, "params",
                         (json_int_t)us->u[u].numel, "bytes",
                         (json_int_t)us->u[u].bytes, "all_gathers", (int)t.ag,
                         "reduce_scatters", (int)t.rs, "all_reduces", (int)t.ar,
                         "forward_exposed_s", t.fwd_gap, "backward_exposed_s",
                         t.bwd_gap));
    }
    return a;
}

json_t *fsdp_report_json(const fsdp_collect_t *c, const fsdp_outcome_t *o)
{
    fsdp_summary_t s;
    fsdp_collect_summary(c, &s);
    char diag[8192];
    fsdp_report_diagnosis(c, o, diag, sizeof(diag));
    const fsdp_job_t *j = c->job;
    const fsdp_memory_t *m = &s.mem;
    return json_pack(
        "{s:s,s:i,s:s,s:i,s:I,s:s,s:{s:f,s:f,s:f,s:f,s:f},"
        "s:{s:I,s:I,s:I,s:I,s:i,s:I,s:I,s:i,s:f,s:b},s:o,s:s}",
        "model", j->model.name, "world_size", j->world, "strategy",
        fsdp_strategy_name(j->cfg.strategy), "shard", j->shard, "units",
        (json_int_t)j->units.n, "status", herd_status_name(o->status), "steady",
        "step_s", s.step_s, "exposed_s", s.exposed_s, "compute_s", s.compute_s,
        "comm_s", s.comm_s, "overlap", s.overlap, "memory", "params_bytes",
        (json_int_t)m->params, "grads_bytes", (json_int_t)m->grads,
        "optimizer_bytes", (json_int_t)m->optimizer, "unsharded_bytes",
        (json_int_t)m->unsharded, "units_alive", m->units_alive, "total_bytes",
        (json_int_t)m->total, "host_bytes", (json_int_t)m->host, "rank",
        m->rank, "gpu_mem_gib", j->cfg.gpu_mem_gib, "fits", s.fits, "per_unit",
        json_units(c), "diagnosis", diag);
}
