/* workload/fsdp/unit.c - build FSDP units from a model's parameter names
 * and a wrap policy (see fsdp/unit.h). */
#include "workload/fsdp/unit.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int all_digits(const char *s, size_t n)
{
    if (!n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

/* A component that holds blocks by index: `h.3`, `layer.3`, ... */
static int is_container(const char *s, size_t n)
{
    static const char *const names[] = {"h",      "layer", "layers",
                                        "blocks", "block", "encoder_layers"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == n && !strncmp(s, names[i], n))
            return 1;
    return 0;
}

int fsdp_block_key(const char *name, char *buf, size_t len)
{
    const char *prev = NULL, *p = name;
    size_t prevn = 0;
    while (*p) {
        size_t n = strcspn(p, ".");
        int hit =
            (all_digits(p, n) && prev && is_container(prev, prevn)) ||
            (n > 5 && !strncmp(p, "layer", 5) && all_digits(p + 5, n - 5));
        if (hit && p[n] == '.') {
            snprintf(buf, len, "%.*s", (int)(p + n - name), name);
            return 1;
        }
        prev = p;
        prevn = n;
        p += n + (p[n] == '.');
    }
    return 0;
}

/* unit_of[p] for every parameter, units numbered 1.. in first-seen
 * order; 0: the root. Names of units into names[] (owned). */
typedef struct assign {
    size_t *unit_of;
    char **names;
    size_t n; /* units besides the root */
} assign_t;

static herd_status_t add_name(assign_t *a, const char *name)
{
    char **g = realloc(a->names, (a->n + 2) * sizeof(char *));
    if (!g)
        return HERD_ERR_NO_MEMORY;
    a->names = g;
    if (!(a->names[a->n + 1] = strdup(name)))
        return HERD_ERR_NO_MEMORY;
    a->n++;
    return HERD_OK;
}

static herd_status_t by_block(const ddp_model_t *m, assign_t *a)
{
    char key[512];
    herd_status_t st = HERD_OK;
    for (size_t p = 0; p < m->nparams && st == HERD_OK; p++) {
        if (!m->params[p].name ||
            !fsdp_block_key(m->params[p].name, key, sizeof(key)))
            continue;
        size_t u = 1;
        while (u <= a->n && strcmp(a->names[u], key))
            u++;
        if (u > a->n)
            st = add_name(a, key);
        a->unit_of[p] = u;
    }
    return st;
}

static herd_status_t by_size(const ddp_model_t *m, uint64_t min, assign_t *a)
{
    uint64_t acc = 0;
    size_t first = 0;
    herd_status_t st = HERD_OK;
    for (size_t p = 0; p < m->nparams && st == HERD_OK; p++) {
        acc += m->params[p].numel;
        a->unit_of[p] = a->n + 1;
        if (acc < min)
            continue;
        char name[64];
        snprintf(name, sizeof(name), "params %zu-%zu", first, p);
        st = add_name(a, name);
        acc = 0;
        first = p + 1;
    }
    for (size_t p = first; p < m->nparams; p++)
        a->unit_of[p] = 0; /* the rest stays with the root */
    return st;
}

static herd_status_t by_prefix(const ddp_model_t *m, char *const *pre,
                               size_t npre, assign_t *a, char *err, size_t len)
{
    herd_status_t st = HERD_OK;
    for (size_t i = 0; i < npre && st == HERD_OK; i++) {
        size_t k = strlen(pre[i]), hits = 0;
        if ((st = add_name(a, pre[i])) != HERD_OK)
            break;
        for (size_t p = 0; p < m->nparams; p++)
            if (m->params[p].name && !a->unit_of[p] &&
                !strncmp(m->params[p].name, pre[i], k))
                a->unit_of[p] = a->n, hits++;
        if (!hits) {
            snprintf(err, len,
                     "fsdp.units: '%s' matches no parameter of model '%s' "
                     "(not yet claimed by an earlier prefix)",
                     pre[i], m->name ? m->name : "?");
            st = HERD_ERR_INVALID_ARG;
        }
    }
    return st;
}

static herd_status_t fill(const ddp_model_t *m, const assign_t *a,
                          fsdp_units_t *us)
{
    us->n = a->n + 1;
    us->u = calloc(us->n, sizeof(fsdp_unit_t));
    if (!us->u)
        return HERD_ERR_NO_MEMORY;
    for (size_t u = 0; u < us->n; u++) {
        us->u[u].name = strdup(u ? a->names[u] : "root");
        us->u[u].params = malloc((m->nparams + 1) * sizeof(size_t));
        if (!us->u[u].name || !us->u[u].params)
            return HERD_ERR_NO_MEMORY;
    }
    double bwd = ddp_model_bwd_total(m);
    for (size_t p = 0; p < m->nparams; p++) {
        fsdp_unit_t *u = &us->u[a->unit_of[p]];
        u->params[u->nparams++] = p;
        u->numel += m->params[p].numel;
        u->bytes += m->params[p].bytes;
        u->bwd_s += m->params[p].bwd_s;
    }
    for (size_t u = 0; u < us->n; u++) {
        double share = bwd > 0
                           ? us->u[u].bwd_s / bwd
                           : (double)us->u[u].bytes /
                                 (double)(m->total_bytes ? m->total_bytes : 1);
        us->u[u].fwd_s = m->fwd_s * share;
    }
    return HERD_OK;
}

herd_status_t fsdp_units_build(const ddp_model_t *m, const fsdp_wrap_t *wrap,
                               char *const *prefixes, size_t nprefixes,
                               fsdp_units_t *out, char *err, size_t errlen)
{
    assign_t a = {calloc(m->nparams + 1, sizeof(size_t)),
                  calloc(1, sizeof(char *)), 0};
    herd_status_t st = a.unit_of && a.names ? HERD_OK : HERD_ERR_NO_MEMORY;
    fsdp_units_t us = {NULL, 0};
    if (st == HERD_OK && wrap->kind == FSDP_WRAP_BLOCK)
        st = by_block(m, &a);
    else if (st == HERD_OK && wrap->kind == FSDP_WRAP_MIN_PARAMS)
        st = by_size(m, wrap->min_params, &a);
    else if (st == HERD_OK && wrap->kind == FSDP_WRAP_PREFIXES)
        st = by_prefix(m, prefixes, nprefixes, &a, err, errlen);
    if (st == HERD_OK)
        st = fill(m, &a, &us);
    for (size_t i = 1; a.names && i <= a.n; i++)
        free(a.names[i]);
    free(a.names);
    free(a.unit_of);
    if (st != HERD_OK) {
        if (st == HERD_ERR_NO_MEMORY)
            snprintf(err, errlen, "out of memory");
        fsdp_units_fini(&us);
        return st;
    }
    *out = us;
    return HERD_OK;
}

void fsdp_units_fini(fsdp_units_t *us)
{
    for (size_t u = 0; us->u && u < us->n; u++) {
        free(us->u[u].name);
        free(us->u[u].params);
    }
    free(us->u);
    us->u = NULL;
    us->n = 0;
}
