/* trace/kineto_steps.c - cut one rank's profiler events into training
 * steps: each collective's launch on the main thread matched with the
 * communication itself (a gloo worker thread's annotation, an NCCL
 * kernel), gradient-ready instants, forward, backward, finalize and
 * optimizer times. Matching is by collective kind and order (the backends
 * run a group's work in FIFO order), and by element count when both sides
 * carry one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/kineto.h"

/* How far ahead among unmatched works a launch looks for its own. */
#define MATCH_WINDOW 64

typedef struct match_ctx {
    const kineto_rank_t *r;
    unsigned char *used; /* per event: a work already matched */
    size_t next[HERD_COLL_COUNT];
} match_ctx_t;

static int same_size(const kineto_ev_t *l, const kineto_ev_t *w)
{
    return !l->has_count || !w->has_count || l->count == w->count;
}

/* The work event of launch `l`, or NULL (a collective done inline). */
static const kineto_ev_t *match(match_ctx_t *m, const kineto_ev_t *l)
{
    const kineto_rank_t *r = m->r;
    size_t *nx = &m->next[l->coll];
    while (*nx < r->nev && (m->used[*nx] || r->ev[*nx].kind != KINETO_EV_WORK ||
                            r->ev[*nx].coll != l->coll))
        (*nx)++;
    size_t seen = 0;
    for (size_t i = *nx; i < r->nev && seen < MATCH_WINDOW; i++) {
        const kineto_ev_t *w = &r->ev[i];
        if (m->used[i] || w->kind != KINETO_EV_WORK || w->coll != l->coll)
            continue;
        seen++;
        /* work starts after its launch began (tolerate clock rounding) */
        if (w->ts_ns + 1000 < l->ts_ns || !same_size(l, w))
            continue;
        m->used[i] = 1;
        return w;
    }
    return NULL;
}

static herd_status_t push_coll(kineto_step_t *s, size_t *cap,
                               const kineto_coll_t *c)
{
    if (s->ncolls == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        kineto_coll_t *n = realloc(s->colls, nc * sizeof(*n));
        if (!n)
            return HERD_ERR_NO_MEMORY;
        s->colls = n;
        *cap = nc;
    }
    s->colls[s->ncolls++] = *c;
    return HERD_OK;
}

static herd_status_t push_grad(kineto_step_t *s, size_t *cap,
                               const kineto_grad_t *g)
{
    if (s->ngrads == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        kineto_grad_t *n = realloc(s->grads, nc * sizeof(*n));
        if (!n)
            return HERD_ERR_NO_MEMORY;
        s->grads = n;
        *cap = nc;
    }
    s->grads[s->ngrads++] = *g;
    return HERD_OK;
}

static uint64_t ev_end(const kineto_ev_t *e)
{
    return e->ts_ns + e->dur_ns;
}

/* Step boundaries: the main thread's ProfilerStep ranges; without them
 * (a profiler run without schedule and step()) one step per DDP forward,
 * from its start to the next one's; else one step over everything. */
static herd_status_t cut(const kineto_rank_t *r, kineto_steps_t *out)
{
    size_t n = 0, nf = 0;
    for (size_t i = 0; i < r->nev; i++) {
        n += r->ev[i].kind == KINETO_EV_STEP && r->ev[i].tid == r->main_tid;
        nf += r->ev[i].kind == KINETO_EV_FORWARD;
    }
    out->s = calloc((n ? n : nf ? nf : 1), sizeof(kineto_step_t));
    if (!out->s)
        return HERD_ERR_NO_MEMORY;
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < r->nev; i++) {
        const kineto_ev_t *e = &r->ev[i];
        if (!kineto_is_worker(r, e->tid) && e->kind != KINETO_EV_KERNEL) {
            first = e->ts_ns < first ? e->ts_ns : first;
            last = ev_end(e) > last ? ev_end(e) : last;
        }
        int want = n ? e->kind == KINETO_EV_STEP && e->tid == r->main_tid
                     : nf && e->kind == KINETO_EV_FORWARD;
        if (!want)
            continue;
        kineto_step_t *s = &out->s[out->n++];
        s->number = n ? e->number : (long)out->n - 1;
        s->start_ns = e->ts_ns;
        s->end_ns = ev_end(e);
        if (!n && out->n > 1)
            out->s[out->n - 2].end_ns = e->ts_ns;
    }
    if (!n && nf)
        out->s[out->n - 1].end_ns = last; /* the last forward's step */
    if (!n && !nf) {
        kineto_step_t *s = &out->s[out->n++];
        s->start_ns = first == UINT64_MAX ? 0 : first;
        s->end_ns = last;
    }
    return HERD_OK;
}

/* The step holding instant t (steps are sorted and disjoint). */
static kineto_step_t *step_of(kineto_steps_t *ss, uint64_t t)
{
    size_t lo = 0, hi = ss->n;
    while (lo < hi) { /* first step starting after t */
        size_t mid = (lo + hi) / 2;
        if (ss->s[mid].start_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return NULL;
    kineto_step_t *s = &ss->s[lo - 1];
    return t < s->end_ns ? s : NULL;
}

static void step_times(const kineto_rank_t *r, kineto_steps_t *ss)
{
    for (size_t i = 0; i < r->nev; i++) {
        const kineto_ev_t *e = &r->ev[i];
        kineto_step_t *s = step_of(ss, e->ts_ns);
        if (!s)
            continue;
        if (e->kind == KINETO_EV_KERNEL) {
            s->gpu_busy_ns += e->dur_ns;
            continue;
        }
        if (kineto_is_worker(r, e->tid))
            continue;
        switch (e->kind) {
        case KINETO_EV_FORWARD:
            if (!s->fwd_start) {
                s->fwd_start = e->ts_ns;
                s->fwd_end = ev_end(e);
            }
            break;
        case KINETO_EV_OPT:
            if (!s->opt_start)
                s->opt_start = e->ts_ns;
            s->opt_end = ev_end(e);
            break;
        case KINETO_EV_BWD:
        case KINETO_EV_GRAD:
            if (e->ts_ns < s->fwd_end)
                break; /* autograd inside the forward (rare) */
            if (!s->bwd_start)
                s->bwd_start = e->ts_ns;
            if (ev_end(e) > s->bwd_end)
                s->bwd_end = ev_end(e);
            break;
        default:
            break;
        }
    }
}

static void gpu_pos(const kineto_rank_t *r, uint64_t *t)
{
    if (*t)
        *t = kineto_gpu_pos(r, *t);
}

/* GPU jobs whose kernels carry their launch: the step's instants where
 * the GPU was then, not where the CPU (running ahead) was. A gradient is
 * ready when the kernels launched before its hook have run. */
static void to_gpu_clock(const kineto_rank_t *r, kineto_steps_t *ss)
{
    for (size_t k = 0; k < ss->n; k++) {
        kineto_step_t *s = &ss->s[k];
        uint64_t *t[] = {&s->start_ns,  &s->end_ns,    &s->fwd_start,
                         &s->fwd_end,   &s->bwd_start, &s->bwd_end,
                         &s->opt_start, &s->opt_end};
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
            gpu_pos(r, t[i]);
        for (size_t g = 0; g < s->ngrads; g++)
            gpu_pos(r, &s->grads[g].ready_ns);
    }
}

herd_status_t kineto_steps(const kineto_rank_t *r, kineto_steps_t *out,
                           char *err, size_t errlen)
{
    kineto_steps_t ss = {0};
    match_ctx_t m = {.r = r};
    size_t *ccap = NULL, *gcap = NULL;
    herd_status_t st = cut(r, &ss);
    if (st != HERD_OK)
        goto cleanup;
    m.used = calloc(r->nev ? r->nev : 1, 1);
    ccap = calloc(ss.n, sizeof(size_t));
    gcap = calloc(ss.n, sizeof(size_t));
    if (!m.used || !ccap || !gcap) {
        st = HERD_ERR_NO_MEMORY;
        goto cleanup;
    }
    step_times(r, &ss);
    for (size_t i = 0; i < r->nev && st == HERD_OK; i++) {
        const kineto_ev_t *e = &r->ev[i];
        if (kineto_is_worker(r, e->tid) ||
            (e->kind != KINETO_EV_LAUNCH && e->kind != KINETO_EV_GRAD))
            continue;
        if (e->kind == KINETO_EV_LAUNCH) {
            const kineto_ev_t *w = match(&m, e);
            kineto_step_t *s = step_of(&ss, e->ts_ns);
            if (!s)
                continue; /* outside the traced steps */
            kineto_coll_t c = {.coll = e->coll,
                               .dtype = HERD_FLOAT32,
                               .has_count = e->has_count,
                               .group = e->group,
                               .count = e->count,
                               .launch_ns = e->ts_ns,
                               .launch_end_ns = ev_end(e)};
            if (e->has_dtype)
                c.dtype = e->dtype;
            else if (w && w->has_dtype)
                c.dtype = w->dtype;
            if (!c.has_count && w && w->has_count) {
                c.has_count = 1;
                c.count = w->count;
            }
            c.start_ns = w ? w->ts_ns : e->ts_ns;
            c.end_ns = w ? ev_end(w) : ev_end(e);
            c.async = s->bwd_start && e->ts_ns >= s->bwd_start &&
                      e->ts_ns <= s->bwd_end;
            st = push_coll(s, &ccap[s - ss.s], &c);
        } else {
            kineto_step_t *s = step_of(&ss, e->ts_ns);
            if (!s || e->ts_ns < s->fwd_end)
                continue;
            kineto_grad_t g = {.ready_ns = ev_end(e),
                               .has_shape = e->has_count,
                               .dtype = e->has_dtype ? e->dtype : HERD_FLOAT32,
                               .ndim = e->ndim,
                               .numel = e->count};
            memcpy(g.shape, e->shape, sizeof(g.shape));
            /* a launch inside the gradient's function: DDP's hook fired
             * there, so the gradient was ready by then */
            for (size_t k = i + 1; k < r->nev && r->ev[k].ts_ns < ev_end(e);
                 k++)
                if (r->ev[k].kind == KINETO_EV_LAUNCH &&
                    r->ev[k].tid == e->tid) {
                    g.ready_ns = r->ev[k].ts_ns;
                    break;
                }
            st = push_grad(s, &gcap[s - ss.s], &g);
        }
    }
    if (st == HERD_OK && r->ngpu)
        to_gpu_clock(r, &ss);
    /* finalize: the reducer waited for every bucket of the backward */
    for (size_t k = 0; k < ss.n && st == HERD_OK; k++) {
        kineto_step_t *s = &ss.s[k];
        s->fin_end = s->bwd_end;
        for (size_t c = 0; c < s->ncolls; c++)
            if (s->colls[c].async && s->colls[c].end_ns > s->fin_end)
                s->fin_end = s->colls[c].end_ns;
        if (s->fin_end > s->end_ns)
            s->fin_end = s->end_ns;
    }
    if (st == HERD_OK && !ss.n)
        st = HERD_ERR_PARSE;
    if (st == HERD_ERR_PARSE)
        snprintf(err, errlen, "%s: no steps found", r->path);
cleanup:
    free(m.used);
    free(ccap);
    free(gcap);
    if (st != HERD_OK) {
        kineto_steps_fini(&ss);
        return st;
    }
    *out = ss;
    return HERD_OK;
}

static int is_float(uint8_t dt)
{
    return dt == HERD_FLOAT16 || dt == HERD_BFLOAT16 || dt == HERD_FLOAT32 ||
           dt == HERD_FLOAT64;
}

int kineto_coll_is_bucket(const kineto_coll_t *c)
{
    return c->async && c->coll == HERD_COLL_ALL_REDUCE && is_float(c->dtype);
}

int kineto_coll_is_used_map(const kineto_coll_t *c)
{
    return c->async && c->coll == HERD_COLL_ALL_REDUCE && !is_float(c->dtype);
}

void kineto_steps_fini(kineto_steps_t *s)
{
    if (!s)
        return;
    for (size_t k = 0; k < s->n; k++) {
        free(s->s[k].colls);
        free(s->s[k].grads);
    }
    free(s->s);
    memset(s, 0, sizeof(*s));
}
