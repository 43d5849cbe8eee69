/* workload/ddp/infer.c - infer a DDP model file and bucket_cap_mb from a
 * measured run (see infer.h).
 *
 * Parameters: DDP indexes parameters in module order and, after the
 * rebuild, buckets them in gradient-ready order. A trace names no
 * parameters, so the k-th gradient ready of G is given index G-1-k: the
 * ready order is then exactly what was measured and the rebuilt layout
 * (the one every traced step used) is reproduced. Times are means over
 * every usable step of every traced rank: a parameter's backward time is
 * the gap from the previous ready instant (from the start of backward for
 * the first), forward the time from the step's start to backward minus
 * the time blocked in the forward's collectives (herd simulates those),
 * optimizer everything after the reducer's finalize (copies back into
 * the gradients, the optimizer, the profiler's own step). */
#include "workload/ddp/infer.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "workload/ddp/bucket.h"

static void note(ddp_infer_t *inf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(ddp_infer_t *inf, const char *fmt, ...)
{
    size_t n = strlen(inf->notes);
    if (n + 2 >= sizeof(inf->notes))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(inf->notes + n, sizeof(inf->notes) - n, fmt, ap);
    va_end(ap);
    n = strlen(inf->notes);
    if (n + 1 < sizeof(inf->notes))
        strcat(inf->notes, "\n");
}

const char *ddp_infer_list(const uint64_t *v, size_t n, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (size_t i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%llu", i ? ", " : "",
                              (unsigned long long)v[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

static int usable(const kineto_step_t *s, size_t g)
{
    return s->ngrads && (!g || s->ngrads == g) && s->bwd_end > s->bwd_start;
}

/* The first step with gradients: the reference for parameters and the
 * buckets seen. */
static const kineto_step_t *reference(const kineto_steps_t *steps, size_t n)
{
    /* the last one of the first rank that has any: a trace that starts
     * at the first iteration holds the construction layout there */
    for (size_t r = 0; r < n; r++)
        for (size_t k = steps[r].n; k-- > 0;)
            if (usable(&steps[r].s[k], 0))
                return &steps[r].s[k];
    return NULL;
}

static herd_status_t params_from_trace(const kineto_step_t *ref, ddp_model_t *m)
{
    size_t g = ref->ngrads;
    m->params = calloc(g, sizeof(ddp_param_t));
    m->ready_order = calloc(g, sizeof(size_t));
    if (!m->params || !m->ready_order)
        return HERD_ERR_NO_MEMORY;
    m->nparams = m->nready = g;
    for (size_t k = 0; k < g; k++) {
        const kineto_grad_t *gr = &ref->grads[k];
        size_t idx = g - 1 - k;
        ddp_param_t *p = &m->params[idx];
        char name[48];
        snprintf(name, sizeof(name), "param%zu", idx);
        p->name = strdup(name);
        if (!p->name)
            return HERD_ERR_NO_MEMORY;
        p->ndim = gr->ndim;
        memcpy(p->shape, gr->shape, sizeof(int64_t) * DDP_MAX_DIMS);
        p->dtype = (herd_dtype_t)gr->dtype;
        p->numel = gr->numel;
        p->bytes = gr->numel * herd_dtype_size(p->dtype);
        m->total_bytes += p->bytes;
        m->ready_order[k] = idx;
    }
    return HERD_OK;
}

static herd_status_t params_copy(const ddp_model_t *given, ddp_model_t *m)
{
    m->params = calloc(given->nparams, sizeof(ddp_param_t));
    m->ready_order = calloc(given->nparams, sizeof(size_t));
    if (!m->params || !m->ready_order)
        return HERD_ERR_NO_MEMORY;
    m->nparams = m->nready = given->nparams;
    for (size_t i = 0; i < given->nparams; i++) {
        m->params[i] = given->params[i];
        m->params[i].bwd_s = 0;
        m->params[i].name = strdup(given->params[i].name);
        if (!m->params[i].name)
            return HERD_ERR_NO_MEMORY;
    }
    m->total_bytes = given->total_bytes;
    m->buffer_bytes = given->buffer_bytes;
    ddp_model_ready_order(given, m->ready_order);
    return HERD_OK;
}

static int same_shape(const ddp_param_t *p, const kineto_grad_t *g)
{
    if (p->ndim != g->ndim)
        return 0;
    for (int d = 0; d < p->ndim; d++)
        if (p->shape[d] != g->shape[d])
            return 0;
    return 1;
}

/* With a model file and shapes in the trace: the measured ready order,
 * each gradient matched to the unused parameter of its shape with the
 * highest index (autograd reaches later layers first). */
static herd_status_t order_by_shape(const kineto_step_t *ref, ddp_model_t *m,
                                    char *err, size_t errlen)
{
    unsigned char *used = calloc(m->nparams + 1, 1);
    if (!used)
        return HERD_ERR_NO_MEMORY;
    for (size_t k = 0; k < ref->ngrads; k++) {
        size_t i = m->nparams;
        while (i-- > 0)
            if (!used[i] && same_shape(&m->params[i], &ref->grads[k]))
                break;
        if (i == (size_t)-1) {
            snprintf(err, errlen,
                     "gradient %zu of the backward (%llu elements) matches no "
                     "parameter of the model file by shape",
                     k, (unsigned long long)ref->grads[k].numel);
            free(used);
            return HERD_ERR_PARSE;
        }
        used[i] = 1;
        m->ready_order[k] = i;
    }
    free(used);
    return HERD_OK;
}

/* Time the main thread was held by the forward's blocking collectives:
 * the union of their launch-to-end intervals (DDP launches the buffer
 * broadcasts back to back, then waits for them together). */
static uint64_t blocked_in_forward(const kineto_step_t *s)
{
    uint64_t t = 0, cur_s = 0, cur_e = 0;
    for (size_t c = 0; c < s->ncolls; c++) {
        const kineto_coll_t *k = &s->colls[c];
        if (k->async || (s->bwd_start && k->launch_ns >= s->bwd_start))
            continue;
        uint64_t end =
            k->end_ns > k->launch_end_ns ? k->end_ns : k->launch_end_ns;
        if (k->launch_ns > cur_e) { /* launches come in time order */
            t += cur_e - cur_s;
            cur_s = k->launch_ns;
            cur_e = end;
        } else if (end > cur_e) {
            cur_e = end;
        }
    }
    return t + (cur_e - cur_s);
}

static uint64_t forward_buffer_bytes(const kineto_step_t *s, int *known)
{
    uint64_t b = 0;
    *known = 1;
    for (size_t c = 0; c < s->ncolls; c++) {
        const kineto_coll_t *k = &s->colls[c];
        if (k->async || k->coll != HERD_COLL_BROADCAST ||
            (s->bwd_start && k->launch_ns >= s->bwd_start))
            continue;
        if (!k->has_count)
            *known = 0;
        b += k->count * herd_dtype_size((herd_dtype_t)k->dtype);
    }
    return b;
}

/* Step quantities: medians over the usable steps of every traced rank
 * (a warm-up step or a stall does not shift them). Per-parameter times
 * are medians too, scaled so that they add up to the median backward. */
static void measure(const kineto_steps_t *steps, size_t nranks, size_t g,
                    ddp_infer_t *inf)
{
    ddp_model_t *m = &inf->model;
    size_t most = 0;
    for (size_t r = 0; r < nranks; r++)
        most += steps[r].n;
    double *fwd = calloc(most + 1, sizeof(double));
    double *opt = calloc(most + 1, sizeof(double));
    double *tot = calloc(most + 1, sizeof(double));
    double *gap = calloc((most + 1) * g, sizeof(double)); /* [p][step] */
    double *col = calloc(most + 1, sizeof(double));
    size_t n = 0;
    if (!fwd || !opt || !tot || !gap || !col)
        goto cleanup;
    for (size_t r = 0; r < nranks; r++)
        for (size_t k = 0; k < steps[r].n; k++) {
            const kineto_step_t *s = &steps[r].s[k];
            if (!usable(s, g))
                continue;
            uint64_t blocked = blocked_in_forward(s);
            uint64_t f = s->bwd_start - s->start_ns;
            fwd[n] = f > blocked ? (double)(f - blocked) : 0;
            opt[n] = (double)(s->end_ns - s->fin_end);
            uint64_t prev = s->bwd_start;
            for (size_t p = 0; p < g; p++) {
                uint64_t t = s->grads[p].ready_ns;
                gap[p * (most + 1) + n] = t > prev ? (double)(t - prev) : 0;
                prev = t > prev ? t : prev;
            }
            /* autograd after the last gradient: still backward */
            if (s->bwd_end > prev)
                gap[(g - 1) * (most + 1) + n] += (double)(s->bwd_end - prev);
            tot[n] = (double)((s->bwd_end > prev ? s->bwd_end : prev) -
                              s->bwd_start);
            n++;
        }
    inf->nsteps = n;
    m->fwd_s = core_median(fwd, n) * 1e-9;
    m->opt_s = core_median(opt, n) * 1e-9;
    double sum = 0, want = core_median(tot, n);
    for (size_t p = 0; p < g; p++) {
        memcpy(col, &gap[p * (most + 1)], n * sizeof(double));
        double t = core_median(col, n);
        m->params[m->ready_order[p]].bwd_s = t;
        sum += t;
    }
    for (size_t p = 0; p < g; p++)
        m->params[p].bwd_s *= (sum > 0 ? want / sum : 0) * 1e-9;
cleanup:
    free(fwd);
    free(opt);
    free(tot);
    free(gap);
    free(col);
}

static void seen_buckets(const kineto_step_t *ref, ddp_infer_t *inf)
{
    inf->seen = calloc(ref->ncolls + 1, sizeof(uint64_t));
    if (!inf->seen)
        return;
    inf->seen_sizes = 1;
    for (size_t c = 0; c < ref->ncolls; c++) {
        const kineto_coll_t *k = &ref->colls[c];
        inf->find_unused |= kineto_coll_is_used_map(k);
        if (!kineto_coll_is_bucket(k))
            continue;
        inf->seen[inf->nseen++] =
            k->has_count ? k->count * herd_dtype_size((herd_dtype_t)k->dtype)
                         : 0;
        inf->seen_sizes &= k->has_count;
    }
}

/* The bucket sizes DDP builds for the model at a cap: the rebuilt layout
 * (the ready order), or with find_unused_parameters the construction
 * one, which it keeps. */
static herd_status_t implied(const ddp_infer_t *inf, double first_mb,
                             double cap_mb, uint64_t **out, size_t *n)
{
    ddp_buckets_t bs;
    uint64_t cap = ddp_cap_bytes(cap_mb);
    uint64_t first = first_mb > 0 ? ddp_cap_bytes(first_mb) : cap;
    herd_status_t st = ddp_bucket_for_phase_first(
        &inf->model, inf->find_unused ? DDP_PHASE_INITIAL : DDP_PHASE_REBUILT,
        first, cap, inf->find_unused, 0, NULL, NULL, &bs);
    if (st != HERD_OK)
        return st;
    uint64_t *v = calloc(bs.n + 1, sizeof(uint64_t));
    if (!v) {
        ddp_buckets_fini(&bs);
        return HERD_ERR_NO_MEMORY;
    }
    for (size_t k = 0; k < bs.n; k++)
        v[k] = bs.b[k].bytes;
    *n = bs.n;
    *out = v;
    ddp_buckets_fini(&bs);
    return HERD_OK;
}

static int same(const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                int sizes)
{
    if (na != nb)
        return 0;
    for (size_t k = 0; sizes && k < na; k++)
        if (a[k] != b[k])
            return 0;
    return 1;
}

static int reproduces(const ddp_infer_t *inf, double first_mb, double mb)
{
    uint64_t *v = NULL;
    size_t n = 0;
    if (implied(inf, first_mb, mb, &v, &n) != HERD_OK)
        return 0;
    int ok = same(v, n, inf->seen, inf->nseen, inf->seen_sizes);
    free(v);
    return ok;
}

/* The edge between a cap that reproduces what was seen (yes) and one
 * that does not (no), to a relative 1e-4. */
static double edge(const ddp_infer_t *inf, double first_mb, double yes,
                   double no)
{
    for (int i = 0; i < 60 && fabs(yes - no) > 1e-4 * yes; i++) {
        double mid = (yes + no) / 2;
        if (reproduces(inf, first_mb, mid))
            yes = mid;
        else
            no = mid;
    }
    return yes;
}

/* 3 significant digits, rounded into [lo, hi]. */
static double tidy(double v, double lo, double hi, int up)
{
    double p = pow(10.0, floor(log10(v)) - 2);
    double r = (up ? ceil(v / p) : floor(v / p)) * p;
    return r >= lo && (hi < 0 || r <= hi) ? r : v;
}

/* Caps (MB) whose layout reproduces what was seen: a log grid from
 * 10^-5 to 10^4 MB, its edges refined by bisection, and a round value in
 * the range (25, torch's default, first; the user's value alone when
 * given). */
static int search_cap(ddp_infer_t *inf, double first_mb, double want)
{
    static const double round_mb[] = {25,   10,    5,    1,     100,  50,
                                      2,    250,   1000, 0.5,   0.25, 0.1,
                                      0.05, 0.025, 0.01, 0.005, 0.001};
    double lo = -1, hi = -1, below = -1, above = -1, prev = -1;
    int prev_ok = 0;
    for (int i = -100; i <= 80; i++) {
        double mb = pow(10.0, i / 20.0);
        int ok = reproduces(inf, first_mb, mb);
        if (ok && lo < 0)
            lo = mb, below = prev;
        if (!ok && prev_ok && above < 0)
            above = mb;
        if (ok)
            hi = mb;
        prev = mb;
        prev_ok = ok;
    }
    double pick = -1;
    if (want > 0) {
        pick = reproduces(inf, first_mb, want) ? want : -1;
    } else {
        for (size_t i = 0; i < sizeof(round_mb) / sizeof(round_mb[0]); i++)
            if (reproduces(inf, first_mb, round_mb[i])) {
                pick = round_mb[i];
                break;
            }
    }
    if (want > 0 && pick < 0)
        return 0; /* the user's value does not give what was seen */
    if (lo < 0) { /* between grid points only, or nowhere */
        if (pick < 0)
            return 0;
        lo = hi = pick;
    }
    if (below > 0)
        lo = tidy(edge(inf, first_mb, lo, below), lo * 0.5, hi, 1);
    if (above > 0)
        hi = tidy(edge(inf, first_mb, hi, above), lo, hi * 2, 0);
    if (pick < 0)
        pick = tidy(sqrt(lo * hi), lo, above > 0 ? hi : -1, 0);
    inf->cap_mb = pick;
    inf->cap_lo_mb = lo;
    inf->cap_hi_mb = above > 0 ? hi : -1;
    return 1;
}

static herd_status_t infer_cap(ddp_infer_t *inf, double want, int torch2)
{
    /* the first bucket: torch's 1 MiB, or the cap itself (PyTorch 2.x
     * when bucket_cap_mb is given); the evidence decides, else the
     * trace's generation */
    double rule[2] = {torch2 ? 0 : 1, torch2 ? 1 : 0};
    int found = 0, k;
    for (k = 0; k < 2 && !found; k++)
        found = search_cap(inf, rule[k], want);
    inf->first_bucket_mb = found ? rule[k - 1] : 1;
    if (found) {
        ddp_infer_t other = *inf;
        int both = k == 1 && search_cap(&other, rule[1], want);
        if (inf->first_bucket_mb == 0)
            note(inf,
                 "first bucket capped by bucket_cap_mb too (PyTorch 2.x "
                 "with bucket_cap_mb given): first_bucket_mb: 0%s",
                 both ? " (assumed: the trace fits either rule)" : "");
        else if (both)
            note(inf, "first bucket 1 MiB (torch's default; the trace fits "
                      "either rule)");
    }
    inf->cap_known = found;
    if (!found) {
        inf->cap_mb = want > 0 ? want : 25;
        note(inf,
             "no bucket_cap_mb reproduces the all_reduce %s seen; "
             "using %g",
             inf->seen_sizes ? "sizes" : "count", inf->cap_mb);
    }
    herd_status_t st = implied(inf, inf->first_bucket_mb, inf->cap_mb,
                               &inf->implied, &inf->nimplied);
    if (st == HERD_OK)
        inf->match = same(inf->implied, inf->nimplied, inf->seen, inf->nseen,
                          inf->seen_sizes);
    return st;
}

herd_status_t ddp_infer(const kineto_steps_t *steps, size_t nranks,
                        const ddp_model_t *given, double cap_mb, int torch2,
                        ddp_infer_t *out, char *err, size_t errlen)
{
    ddp_infer_t inf;
    memset(&inf, 0, sizeof(inf));
    herd_status_t st = HERD_OK;
    const kineto_step_t *ref = reference(steps, nranks);
    if (!ref) {
        snprintf(err, errlen,
                 "no backward with gradients in the traced steps (expected "
                 "autograd::engine::evaluate_function: "
                 "torch::autograd::AccumulateGrad events): not a DDP "
                 "training trace, or the profiler did not record CPU ops");
        return HERD_ERR_PARSE;
    }
    int shapes = 1;
    for (size_t k = 0; k < ref->ngrads; k++)
        shapes &= ref->grads[k].has_shape;
    if (given) {
        if (given->nparams != ref->ngrads) {
            snprintf(err, errlen,
                     "the trace shows %zu gradients per backward but the "
                     "model file has %zu parameters",
                     ref->ngrads, given->nparams);
            return HERD_ERR_PARSE;
        }
        st = params_copy(given, &inf.model);
        if (st == HERD_OK && shapes)
            st = order_by_shape(ref, &inf.model, err, errlen);
        if (st == HERD_ERR_PARSE) {
            ddp_infer_fini(&inf);
            return st;
        }
        note(&inf, "parameters from the model file (%zu)%s", given->nparams,
             shapes ? "; ready order measured" : "");
    } else if (shapes) {
        st = params_from_trace(ref, &inf.model);
        inf.from_trace = 1;
    } else {
        snprintf(err, errlen,
                 "the trace has no parameter shapes (PyTorch 1.13, or "
                 "record_shapes=False): %zu gradients per backward; give "
                 "--model FILE (a model file with those %zu parameters, "
                 "e.g. from python -m herd_torch export)",
                 ref->ngrads, ref->ngrads);
        return HERD_ERR_PARSE;
    }
    if (st == HERD_OK) {
        inf.model.name = strdup("imported");
        st = inf.model.name ? HERD_OK : HERD_ERR_NO_MEMORY;
    }
    if (st == HERD_OK) {
        measure(steps, nranks, ref->ngrads, &inf);
        int known = 0;
        uint64_t bb = forward_buffer_bytes(ref, &known);
        if (known)
            inf.model.buffer_bytes = bb;
        else if (!given)
            note(&inf, "buffer broadcast sizes not in the trace: "
                       "buffer_bytes 0");
        seen_buckets(ref, &inf);
        if (inf.find_unused)
            note(&inf, "an integer all_reduce in backward (the used-parameter "
                       "map): find_unused_parameters=True, buckets kept from "
                       "construction");
        if (!inf.seen_sizes)
            note(&inf,
                 "all_reduce sizes not in the trace: buckets checked "
                 "by count only (%zu per backward)",
                 inf.nseen);
        st = inf.seen ? infer_cap(&inf, cap_mb, torch2) : HERD_ERR_NO_MEMORY;
    }
    if (st != HERD_OK) {
        if (st == HERD_ERR_NO_MEMORY)
            snprintf(err, errlen, "out of memory");
        ddp_infer_fini(&inf);
        return st;
    }
    *out = inf;
    return HERD_OK;
}

void ddp_infer_fini(ddp_infer_t *inf)
{
    if (!inf)
        return;
    ddp_model_fini(&inf->model);
    free(inf->seen);
    free(inf->implied);
    memset(inf, 0, sizeof(*inf));
}

static json_t *param_json(const ddp_param_t *p, size_t i)
{
    json_t *shape = json_array();
    for (int d = 0; d < p->ndim; d++)
        json_array_append_new(shape, json_integer(p->shape[d]));
    return json_pack("{s:I, s:s, s:o, s:s, s:I, s:I, s:f}", "index",
                     (json_int_t)i, "name", p->name, "shape", shape, "dtype",
                     herd_dtype_name(p->dtype), "numel", (json_int_t)p->numel,
                     "bytes", (json_int_t)p->bytes, "backward_s", p->bwd_s);
}

herd_status_t ddp_infer_write_model(const ddp_infer_t *inf, const char *path,
                                    char *err, size_t errlen)
{
    const ddp_model_t *m = &inf->model;
    json_t *params = json_array(), *order = json_array();
    for (size_t i = 0; i < m->nparams; i++)
        json_array_append_new(params, param_json(&m->params[i], i));
    for (size_t k = 0; k < m->nready; k++)
        json_array_append_new(order,
                              json_integer((json_int_t)m->ready_order[k]));
    json_t *root = json_pack(
        "{s:s, s:s, s:o, s:{s:f, s:f, s:I}, s:o}", "model", m->name, "source",
        inf->from_trace ? "herd import (PyTorch profiler trace: shapes, "
                          "ready order and times measured)"
                        : "herd import (parameters from the given model "
                          "file; ready order and times measured)",
        "grad_ready_order", order, "compute", "forward_s", m->fwd_s,
        "optimizer_s", m->opt_s, "buffer_bytes", (json_int_t)m->buffer_bytes,
        "params", params);
    if (!root) {
        snprintf(err, errlen, "%s: cannot build the model JSON", path);
        return HERD_ERR_NO_MEMORY;
    }
    int rc =
        json_dump_file(root, path, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
    json_decref(root);
    if (rc) {
        snprintf(err, errlen, "%s: cannot write", path);
        return HERD_ERR_IO;
    }
    return HERD_OK;
}
