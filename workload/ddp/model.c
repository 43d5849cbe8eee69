/* workload/ddp/model.c - load a DDP model description (JSON, jansson).
 *
 * Checks every field against the reference schema (bytes = numel * dtype
 * size, numel = product of the shape, indices 0..n-1 in order) so a bad
 * file fails with a message naming the file and field, never later with
 * nonsense timings. Compute is given in seconds or FLOPs (with a device
 * throughput); backward time not given per parameter is spread over the
 * remaining parameters in proportion to their size. */
#include "workload/ddp/model.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/escape.h"

typedef struct load_ctx {
    const char *path;
    char *err;
    size_t errlen;
} load_ctx_t;

static herd_status_t fail(const load_ctx_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static herd_status_t fail(const load_ctx_t *c, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(c->err, c->errlen, "%s: ", c->path);
    if (n < 0 || (size_t)n >= c->errlen)
        return HERD_ERR_PARSE;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    core_escape_msg(c->err, c->errlen); /* names from the file */
    return HERD_ERR_PARSE;
}

/* A non-negative number field; absent leaves *out unchanged. */
static herd_status_t get_num(const load_ctx_t *c, json_t *obj, const char *key,
                             const char *where, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return HERD_OK;
    if (!json_is_number(v) || json_number_value(v) < 0)
        return fail(c, "%s.%s: expected a non-negative number", where, key);
    *out = json_number_value(v);
    return HERD_OK;
}

static herd_status_t get_u64(const load_ctx_t *c, json_t *obj, const char *key,
                             const char *where, int required, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return fail(c, "%s: missing \"%s\"", where, key);
        return HERD_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return fail(c, "%s.%s: expected a non-negative integer", where, key);
    *out = (uint64_t)json_integer_value(v);
    return HERD_OK;
}

static herd_status_t parse_shape(const load_ctx_t *c, json_t *p,
                                 const char *where, ddp_param_t *out)
{
    json_t *shape = json_object_get(p, "shape");
    if (!json_is_array(shape) || json_array_size(shape) > DDP_MAX_DIMS)
        return fail(c, "%s.shape: expected an array of at most %d sizes", where,
                    DDP_MAX_DIMS);
    uint64_t prod = 1;
    for (size_t d = 0; d < json_array_size(shape); d++) {
        json_t *v = json_array_get(shape, d);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return fail(c, "%s.shape[%zu]: expected a size", where, d);
        out->shape[d] = json_integer_value(v);
        prod *= (uint64_t)out->shape[d];
    }
    out->ndim = (int)json_array_size(shape);
    if (!json_object_get(p, "numel"))
        out->numel = prod;
    else if (out->numel != prod)
        return fail(c, "%s.numel: %llu is not the product of the shape (%llu)",
                    where, (unsigned long long)out->numel,
                    (unsigned long long)prod);
    return HERD_OK;
}

static herd_status_t parse_dtype(const load_ctx_t *c, json_t *p,
                                 const char *where, ddp_param_t *out)
{
    json_t *v = json_object_get(p, "dtype");
    out->dtype = HERD_FLOAT32;
    if (!v)
        return HERD_OK;
    if (!json_is_string(v) ||
        herd_dtype_parse(json_string_value(v), &out->dtype) != HERD_OK)
        return fail(c, "%s.dtype: unknown dtype", where);
    return HERD_OK;
}

/* Per-parameter backward time; *given = 0 when the file leaves it to the
 * model-wide total. */
static herd_status_t parse_param_bwd(const load_ctx_t *c, json_t *p,
                                     const char *where, double rate,
                                     ddp_param_t *out, int *given)
{
    double s = -1, flops = -1;
    herd_status_t st = get_num(c, p, "backward_s", where, &s);
    if (st == HERD_OK)
        st = get_num(c, p, "backward_flops", where, &flops);
    if (st != HERD_OK)
        return st;
    if (flops >= 0 && rate <= 0)
        return fail(c, "%s.backward_flops needs compute.device_tflops", where);
    *given = s >= 0 || flops >= 0;
    out->bwd_s = s >= 0 ? s : flops >= 0 ? flops / rate : 0;
    return HERD_OK;
}

static herd_status_t parse_param(const load_ctx_t *c, json_t *p, size_t i,
                                 double rate, ddp_param_t *out, int *given)
{
    char where[48];
    snprintf(where, sizeof(where), "params[%zu]", i);
    if (!json_is_object(p))
        return fail(c, "%s: expected an object", where);
    uint64_t index = i;
    herd_status_t st = get_u64(c, p, "index", where, 0, &index);
    if (st == HERD_OK && index != i)
        return fail(c, "%s.index: %llu, expected %zu (params in DDP order)",
                    where, (unsigned long long)index, i);
    json_t *name = json_object_get(p, "name");
    if (st == HERD_OK && name && !json_is_string(name))
        return fail(c, "%s.name: expected a string", where);
    if (st == HERD_OK)
        st = get_u64(c, p, "numel", where, 0, &out->numel);
    if (st == HERD_OK)
        st = parse_shape(c, p, where, out);
    if (st == HERD_OK)
        st = parse_dtype(c, p, where, out);
    if (st != HERD_OK)
        return st;
    uint64_t want = out->numel * herd_dtype_size(out->dtype);
    out->bytes = want;
    if ((st = get_u64(c, p, "bytes", where, 0, &out->bytes)) != HERD_OK)
        return st;
    if (out->bytes != want)
        return fail(c, "%s.bytes: %llu, expected numel * dtype size = %llu",
                    where, (unsigned long long)out->bytes,
                    (unsigned long long)want);
    out->sparse = json_is_true(json_object_get(p, "sparse"));
    out->name = strdup(name ? json_string_value(name) : where);
    if (!out->name)
        return HERD_ERR_NO_MEMORY;
    return parse_param_bwd(c, p, where, rate, out, given);
}

typedef struct compute_spec {
    double rate;      /* FLOP/s (device_tflops * efficiency), 0 if unset */
    double bwd_total; /* seconds; < 0 if unset */
    double overhead;  /* seconds per parameter gradient (kernel launches) */
} compute_spec_t;

static herd_status_t seconds_or_flops(const load_ctx_t *c, json_t *cj,
                                      const char *what, double rate,
                                      double *out)
{
    char key[32];
    double s = -1, flops = -1;
    snprintf(key, sizeof(key), "%s_s", what);
    herd_status_t st = get_num(c, cj, key, "compute", &s);
    snprintf(key, sizeof(key), "%s_flops", what);
    if (st == HERD_OK)
        st = get_num(c, cj, key, "compute", &flops);
    if (st != HERD_OK)
        return st;
    if (flops >= 0 && rate <= 0)
        return fail(c, "compute.%s needs compute.device_tflops", key);
    *out = s >= 0 ? s : flops >= 0 ? flops / rate : -1;
    return HERD_OK;
}

/* The gradient <-> bucket copy rate in GB/s (gigabytes): copy_GBps, or
 * copy_bytes_per_s; copy_gbps, read as gigabytes too, is the old name
 * (it reads as gigabits: kept for files that have it, documented). */
static herd_status_t parse_copy_rate(const load_ctx_t *c, json_t *cj,
                                     double *gbytes_per_s)
{
    double GBps = -1, Bps = -1, old = -1;
    herd_status_t st = get_num(c, cj, "copy_GBps", "compute", &GBps);
    if (st == HERD_OK)
        st = get_num(c, cj, "copy_bytes_per_s", "compute", &Bps);
    if (st == HERD_OK)
        st = get_num(c, cj, "copy_gbps", "compute", &old);
    if (st != HERD_OK)
        return st;
    int n = (GBps >= 0) + (Bps >= 0) + (old >= 0);
    if (n > 1)
        return fail(c, "compute: give the copy rate once (copy_GBps, "
                       "copy_bytes_per_s or the old copy_gbps)");
    *gbytes_per_s = GBps >= 0  ? GBps
                    : Bps >= 0 ? Bps / 1e9
                    : old >= 0 ? old
                               : 0;
    return HERD_OK;
}

static herd_status_t parse_compute(const load_ctx_t *c, json_t *root,
                                   ddp_model_t *m, compute_spec_t *spec)
{
    json_t *cj = json_object_get(root, "compute");
    double tflops = 0, eff = 1, fwd = 0, opt = 0, gbps = 0;
    m->bwd_tail_s = 0;
    spec->rate = 0;
    spec->bwd_total = -1;
    spec->overhead = 0;
    if (!cj)
        return HERD_OK;
    if (!json_is_object(cj))
        return fail(c, "compute: expected an object");
    herd_status_t st = get_num(c, cj, "device_tflops", "compute", &tflops);
    if (st == HERD_OK)
        st = get_num(c, cj, "efficiency", "compute", &eff);
    if (st == HERD_OK && (eff <= 0 || eff > 1))
        return fail(c, "compute.efficiency: expected a value in (0, 1]");
    spec->rate = tflops * 1e12 * eff;
    if (st == HERD_OK)
        st = seconds_or_flops(c, cj, "forward", spec->rate, &fwd);
    if (st == HERD_OK)
        st = seconds_or_flops(c, cj, "backward", spec->rate, &spec->bwd_total);
    if (st == HERD_OK)
        st = seconds_or_flops(c, cj, "optimizer", spec->rate, &opt);
    if (st == HERD_OK)
        st = get_num(c, cj, "kernel_overhead_s", "compute", &spec->overhead);
    if (st == HERD_OK)
        st = parse_copy_rate(c, cj, &gbps);
    if (st == HERD_OK)
        st = get_num(c, cj, "backward_tail_s", "compute", &m->bwd_tail_s);
    if (st == HERD_OK && m->bwd_tail_s < 0)
        m->bwd_tail_s = 0;
    if (st == HERD_OK)
        st = get_u64(c, cj, "buffer_bytes", "compute", 0, &m->buffer_bytes);
    m->fwd_s = fwd > 0 ? fwd : 0;
    m->opt_s = opt > 0 ? opt : 0;
    m->copy_bw = gbps * 1e9;
    m->flop_rate = spec->rate;
    return st;
}

/* Spread the model-wide backward total over parameters without their own
 * time, by size; add the per-parameter overhead everywhere. */
static void spread_backward(ddp_model_t *m, const int *given,
                            const compute_spec_t *spec)
{
    double explicit_s = 0, free_numel = 0;
    for (size_t i = 0; i < m->nparams; i++) {
        if (given[i])
            explicit_s += m->params[i].bwd_s;
        else
            free_numel += (double)m->params[i].numel;
    }
    double rest =
        spec->bwd_total > explicit_s ? spec->bwd_total - explicit_s : 0;
    for (size_t i = 0; i < m->nparams; i++) {
        if (!given[i] && free_numel > 0)
            m->params[i].bwd_s = rest * (double)m->params[i].numel / free_numel;
        m->params[i].bwd_s += spec->overhead;
    }
}

static herd_status_t parse_ready(const load_ctx_t *c, json_t *root,
                                 ddp_model_t *m)
{
    json_t *r = json_object_get(root, "grad_ready_order");
    if (!r)
        return HERD_OK;
    if (!json_is_array(r))
        return fail(c, "grad_ready_order: expected an array of indices");
    if (m->ready_order) { /* from grad_ready_offsets_s: they must agree */
        if (json_array_size(r) != m->nready)
            return fail(c,
                        "grad_ready_order: %zu indices for a model of %zu "
                        "parameters",
                        json_array_size(r), m->nready);
        for (size_t i = 0; i < json_array_size(r) && i < m->nready; i++)
            if (json_integer_value(json_array_get(r, i)) !=
                (json_int_t)m->ready_order[i])
                return fail(c,
                            "grad_ready_order[%zu]: %lld, but "
                            "grad_ready_offsets_s puts parameter %zu there",
                            i,
                            (long long)json_integer_value(json_array_get(r, i)),
                            m->ready_order[i]);
        return HERD_OK;
    }
    m->ready_order = calloc(json_array_size(r) + 1, sizeof(size_t));
    if (!m->ready_order)
        return HERD_ERR_NO_MEMORY;
    m->nready = json_array_size(r);
    for (size_t i = 0; i < m->nready; i++) {
        json_t *v = json_array_get(r, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return fail(c, "grad_ready_order[%zu]: expected an index", i);
        m->ready_order[i] = (size_t)json_integer_value(v);
    }
    char why[160];
    if (ddp_model_check_order(m, m->ready_order, m->nready, why, sizeof(why)) !=
        HERD_OK)
        return fail(c, "grad_ready_order: %s", why);
    return HERD_OK;
}

/* One entry of "layers": {"params": [i, ...], "backward_s" | "backward_flops"}:
 * the layer's backward time, shared by its parameters by size. */
static herd_status_t parse_layer(const load_ctx_t *c, json_t *l, size_t li,
                                 double rate, ddp_model_t *m, int *given)
{
    char where[48];
    ddp_param_t tmp = {0};
    int has = 0;
    snprintf(where, sizeof(where), "layers[%zu]", li);
    json_t *idx = json_object_get(l, "params");
    if (!json_is_object(l) || !json_is_array(idx) || !json_array_size(idx))
        return fail(c,
                    "%s: expected {\"params\": [indices], "
                    "\"backward_s\": seconds}",
                    where);
    herd_status_t st = parse_param_bwd(c, l, where, rate, &tmp, &has);
    if (st == HERD_OK && !has)
        return fail(c, "%s: missing backward_s or backward_flops", where);
    double numel = 0;
    for (size_t j = 0; st == HERD_OK && j < json_array_size(idx); j++) {
        json_t *v = json_array_get(idx, j);
        json_int_t p = json_is_integer(v) ? json_integer_value(v) : -1;
        if (p < 0 || (size_t)p >= m->nparams || given[p])
            return fail(c,
                        "%s.params[%zu]: not a parameter index, or one "
                        "that already has a backward time",
                        where, j);
        numel += (double)m->params[p].numel;
        given[p] = 1;
    }
    for (size_t j = 0; st == HERD_OK && j < json_array_size(idx); j++) {
        ddp_param_t *p = &m->params[json_integer_value(json_array_get(idx, j))];
        p->bwd_s = numel > 0 ? tmp.bwd_s * (double)p->numel / numel : 0;
    }
    return st;
}

static herd_status_t parse_layers(const load_ctx_t *c, json_t *root,
                                  double rate, ddp_model_t *m, int *given)
{
    json_t *layers = json_object_get(root, "layers");
    if (!layers)
        return HERD_OK;
    if (!json_is_array(layers))
        return fail(c, "layers: expected an array");
    herd_status_t st = HERD_OK;
    for (size_t i = 0; i < json_array_size(layers) && st == HERD_OK; i++)
        st = parse_layer(c, json_array_get(layers, i), i, rate, m, given);
    return st;
}

typedef struct off_ent {
    double t;
    size_t p;
} off_ent_t;

static int off_cmp(const void *a, const void *b)
{
    const off_ent_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->p < y->p ? -1 : x->p > y->p;
}

/* Fills order[] from offsets: the timed parameters by their offsets, then
 * those without one (unused: no gradient) last, by index. Sets each timed
 * parameter's backward time to the gap since the gradient before it. */
static void offsets_apply(ddp_model_t *m, off_ent_t *e, size_t n, size_t *order,
                          int *given)
{
    qsort(e, n, sizeof(*e), off_cmp);
    double prev = 0;
    size_t k = 0;
    for (; k < n; k++) {
        m->params[e[k].p].bwd_s = e[k].t - prev;
        prev = e[k].t;
        given[e[k].p] = 1;
        order[k] = e[k].p;
    }
    for (size_t p = 0; p < m->nparams; p++)
        if (!given[p])
            order[k++] = p;
}

/* "grad_ready_offsets_s": per parameter (by index) the seconds from the
 * start of backward until its gradient is ready, as measured (null for a
 * parameter without a gradient). Taken as measured: the ready order is
 * the offsets' order and each backward time the gap to the previous
 * gradient; compute.backward_tail_s is what backward computes after the
 * last one. */
static herd_status_t parse_offsets(const load_ctx_t *c, json_t *root,
                                   ddp_model_t *m, int *given)
{
    json_t *o = json_object_get(root, "grad_ready_offsets_s");
    if (!o)
        return HERD_OK;
    if (!json_is_array(o) || json_array_size(o) != m->nparams)
        return fail(c,
                    "grad_ready_offsets_s: expected an array of %zu "
                    "entries (seconds from the start of backward, or "
                    "null), one per parameter",
                    m->nparams);
    off_ent_t *e = calloc(m->nparams, sizeof(*e));
    m->ready_order = calloc(m->nparams + 1, sizeof(size_t));
    if (!e || !m->ready_order) {
        free(e);
        return HERD_ERR_NO_MEMORY;
    }
    size_t n = 0;
    for (size_t p = 0; p < m->nparams; p++) {
        json_t *v = json_array_get(o, p);
        if (json_is_null(v))
            continue;
        double t = json_number_value(v);
        if (!json_is_number(v) || !(t >= 0) || t > 1e6) {
            free(e);
            return fail(c,
                        "grad_ready_offsets_s[%zu]: expected seconds in "
                        "[0, 1e6] or null",
                        p);
        }
        if (given[p]) {
            free(e);
            return fail(c,
                        "grad_ready_offsets_s[%zu]: params[%zu] has a "
                        "backward time too; give one or the other",
                        p, p);
        }
        e[n++] = (off_ent_t){t, p};
    }
    offsets_apply(m, e, n, m->ready_order, given);
    m->nready = m->nparams;
    free(e);
    return HERD_OK;
}

static herd_status_t parse_params(const load_ctx_t *c, json_t *root,
                                  ddp_model_t *m)
{
    json_t *params = json_object_get(root, "params");
    if (!json_is_array(params) || json_array_size(params) == 0)
        return fail(c, "\"params\": expected a non-empty array");
    compute_spec_t spec;
    herd_status_t st = parse_compute(c, root, m, &spec);
    if (st != HERD_OK)
        return st;
    size_t n = json_array_size(params);
    int *given = calloc(n, sizeof(int));
    m->params = calloc(n, sizeof(ddp_param_t));
    if (!given || !m->params) {
        free(given);
        return HERD_ERR_NO_MEMORY;
    }
    m->nparams = n;
    for (size_t i = 0; i < n && st == HERD_OK; i++) {
        st = parse_param(c, json_array_get(params, i), i, spec.rate,
                         &m->params[i], &given[i]);
        m->total_bytes += m->params[i].bytes;
    }
    if (st == HERD_OK)
        st = parse_layers(c, root, spec.rate, m, given);
    if (st == HERD_OK)
        st = parse_offsets(c, root, m, given);
    if (st == HERD_OK)
        spread_backward(m, given, &spec);
    free(given);
    return st;
}

herd_status_t ddp_model_load(const char *path, ddp_model_t *out, char *err,
                             size_t errlen)
{
    load_ctx_t c = {path, err, errlen};
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (access(path, R_OK)) {
            snprintf(err, errlen,
                     "%s: cannot read the model file (%m); expected a "
                     "model name from models/ or a path to a model JSON",
                     path);
            return HERD_ERR_IO;
        }
        if (je.line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column,
                     je.text);
        else
            snprintf(err, errlen, "%s: %s", path, je.text);
        core_escape_msg(err, errlen); /* jansson quotes the bad text */
        return HERD_ERR_PARSE;
    }
    ddp_model_t m = {0};
    herd_status_t st = HERD_OK;
    if (!json_is_object(root))
        st = fail(&c, "expected a JSON object");
    json_t *name = json_object_get(root, "model");
    if (st == HERD_OK)
        m.name = strdup(json_is_string(name) ? json_string_value(name) : path);
    if (st == HERD_OK)
        st = parse_params(&c, root, &m);
    if (st == HERD_OK)
        st = parse_ready(&c, root, &m);
    json_decref(root);
    if (st != HERD_OK) {
        ddp_model_fini(&m);
        return st;
    }
    *out = m;
    return HERD_OK;
}

void ddp_model_fini(ddp_model_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nparams; i++)
        free(m->params[i].name);
    free(m->params);
    free(m->ready_order);
    free(m->name);
    memset(m, 0, sizeof(*m));
}

double ddp_model_bwd_total(const ddp_model_t *m)
{
    double t = m->bwd_tail_s;
    for (size_t i = 0; i < m->nparams; i++)
        t += m->params[i].bwd_s;
    return t;
}

void ddp_model_ready_order(const ddp_model_t *m, size_t *order)
{
    for (size_t i = 0; i < m->nparams; i++)
        order[i] =
            m->nready == m->nparams ? m->ready_order[i] : m->nparams - 1 - i;
}

herd_status_t ddp_model_check_order(const ddp_model_t *m, const size_t *order,
                                    size_t n, char *err, size_t errlen)
{
    if (n != m->nparams) {
        snprintf(err, errlen, "%zu indices for a model of %zu parameters", n,
                 m->nparams);
        return HERD_ERR_INVALID_ARG;
    }
    unsigned char *seen = calloc(n, 1);
    if (!seen)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = HERD_OK;
    for (size_t i = 0; i < n && st == HERD_OK; i++) {
        if (order[i] >= n || seen[order[i]]) {
            snprintf(err, errlen, "entry %zu (%zu) is %s", i, order[i],
                     order[i] >= n ? "out of range" : "repeated");
            st = HERD_ERR_INVALID_ARG;
        } else {
            seen[order[i]] = 1;
        }
    }
    free(seen);
    return st;
}

int ddp_model_has_compute(const ddp_model_t *m)
{
    return m->fwd_s > 0 || m->opt_s > 0 || ddp_model_bwd_total(m) > 0;
}

void ddp_model_scale_compute(ddp_model_t *m, double factor)
{
    m->fwd_s *= factor;
    m->opt_s *= factor;
    m->bwd_tail_s *= factor;
    m->flop_rate = factor > 0 ? m->flop_rate / factor : m->flop_rate;
    for (size_t i = 0; i < m->nparams; i++)
        m->params[i].bwd_s *= factor;
}

const char *ddp_model_resolve(const char *arg, const char *dir, char *buf,
                              size_t len)
{
    size_t n = strlen(arg);
    int has_ext = n >= 5 && !strcmp(arg + n - 5, ".json");
    if (access(arg, R_OK) == 0 || strchr(arg, '/') || !dir)
        snprintf(buf, len, "%s", arg);
    else /* "gpt2_small" or "gpt2_small.json" in the models folder */
        snprintf(buf, len, "%s/%s%s", dir, arg, has_ext ? "" : ".json");
    return buf;
}
