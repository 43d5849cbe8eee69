/* workload/ddp/straggle.c - stragglers on one gradient (see straggle.h):
 * the scenario's delays checked against the model (an unknown name lists
 * the close ones), and laid out per rank and parameter for the walkers. */
#include "workload/ddp/straggle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

herd_status_t ddp_grad_delays_add(ddp_grad_delays_t *l, int rank,
                                  const char *param, double delay_s,
                                  int only_grad, char *err, size_t errlen)
{
    if (l->n >= DDP_GRAD_DELAY_MAX) {
        snprintf(err, errlen,
                 "stragglers.grads[%zu]: at most %d delayed gradients", l->n,
                 DDP_GRAD_DELAY_MAX);
        return HERD_ERR_INVALID_ARG;
    }
    if (strlen(param) >= DDP_GRAD_NAME_MAX) {
        snprintf(err, errlen,
                 "stragglers.grads[%zu].param: a name of %zu characters; "
                 "expected at most %d",
                 l->n, strlen(param), DDP_GRAD_NAME_MAX - 1);
        return HERD_ERR_INVALID_ARG;
    }
    ddp_grad_delay_t *d = &l->d[l->n++];
    d->rank = rank;
    snprintf(d->param, sizeof(d->param), "%s", param);
    d->delay_s = delay_s;
    d->only_grad = only_grad;
    return HERD_OK;
}

/* Edit distance (insert, delete, substitute), capped: names past `cap`
 * are not close anyway. */
static size_t edit_distance(const char *a, const char *b, size_t cap)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 255 || lb > 255)
        return cap + 1;
    size_t row[256];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0], best = i;
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t v = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < v)
                v = up + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
            if (v < best)
                best = v;
        }
        if (best > cap)
            return cap + 1;
    }
    return row[lb];
}

/* The names close to `want`: a small edit distance, or one holding the
 * other ("conv1" -> "conv1.weight"); at most 5, closest first. */
static void close_names(const ddp_model_t *m, const char *want, char *buf,
                        size_t len)
{
    size_t cap = strlen(want) / 4 > 2 ? strlen(want) / 4 : 2;
    size_t n = 0;
    buf[0] = '\0';
    for (size_t d = 0; d <= cap + 1 && n < 5; d++)
        for (size_t p = 0; p < m->nparams && n < 5; p++) {
            const char *name = m->params[p].name ? m->params[p].name : "";
            size_t dist = edit_distance(want, name, cap);
            int holds = *want && (strstr(name, want) || strstr(want, name));
            /* substrings rank after every real near-miss (d = cap + 1) */
            if (!((dist == d && d <= cap) ||
                  (holds && dist > cap && d == cap + 1)))
                continue;
            size_t k = strlen(buf);
            snprintf(buf + k, len - k, "%s%s", n ? ", " : "", name);
            n++;
        }
}

herd_status_t ddp_grad_delay_index(const ddp_model_t *m, const char *param,
                                   size_t item, size_t *out, char *err,
                                   size_t errlen)
{
    for (size_t p = 0; p < m->nparams; p++)
        if (m->params[p].name && !strcmp(m->params[p].name, param)) {
            *out = p;
            return HERD_OK;
        }
    char *end;
    unsigned long long v = strtoull(param, &end, 10);
    if (*param >= '0' && *param <= '9' && !*end && v < m->nparams) {
        *out = (size_t)v;
        return HERD_OK;
    }
    char close[512];
    close_names(m, param, close, sizeof(close));
    if (close[0])
        snprintf(err, errlen,
                 "stragglers.grads[%zu].param: no parameter '%s' in model "
                 "'%s' (%zu parameters); close names: %s",
                 item, param, m->name ? m->name : "?", m->nparams, close);
    else
        snprintf(err, errlen,
                 "stragglers.grads[%zu].param: no parameter '%s' in model "
                 "'%s' (%zu parameters, none with a close name); expected "
                 "a name such as '%s' or an index below %zu",
                 item, param, m->name ? m->name : "?", m->nparams,
                 m->nparams && m->params[0].name ? m->params[0].name : "",
                 m->nparams);
    return HERD_ERR_INVALID_ARG;
}

herd_status_t ddp_grad_delays_check(const ddp_grad_delays_t *l,
                                    const ddp_model_t *m, int world, char *err,
                                    size_t errlen)
{
    for (size_t i = 0; i < l->n; i++) {
        size_t p;
        herd_status_t st =
            ddp_grad_delay_index(m, l->d[i].param, i, &p, err, errlen);
        if (st)
            return st;
        if (l->d[i].rank < 0 || l->d[i].rank >= world) {
            snprintf(err, errlen,
                     "stragglers.grads[%zu]: rank %d does not exist (world "
                     "size %d)",
                     i, l->d[i].rank, world);
            return HERD_ERR_INVALID_ARG;
        }
    }
    return HERD_OK;
}

herd_status_t ddp_rank_delays_make(const ddp_grad_delays_t *l,
                                   const ddp_model_t *m, int rank,
                                   ddp_rank_delays_t *out)
{
    ddp_rank_delays_t rd = {NULL, NULL};
    char err[8];
    for (size_t i = 0; i < l->n; i++) {
        const ddp_grad_delay_t *d = &l->d[i];
        size_t p;
        if (d->rank != rank ||
            ddp_grad_delay_index(m, d->param, i, &p, err, sizeof(err)))
            continue;
        double **arr = d->only_grad ? &rd.grad : &rd.layer;
        if (!*arr && !(*arr = calloc(m->nparams, sizeof(double)))) {
            ddp_rank_delays_fini(&rd);
            return HERD_ERR_NO_MEMORY;
        }
        (*arr)[p] += d->delay_s;
    }
    *out = rd;
    return HERD_OK;
}

void ddp_rank_delays_fini(ddp_rank_delays_t *rd)
{
    free(rd->layer);
    free(rd->grad);
    rd->layer = rd->grad = NULL;
}
