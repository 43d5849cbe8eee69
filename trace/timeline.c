/* trace/timeline.c - the timeline collector: a mutex-protected growable
 * array of records with copied labels, plus a few metadata strings. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trace/timeline_int.h"

herd_status_t trace_timeline_create(trace_timeline_t **out)
{
    trace_timeline_t *tl = calloc(1, sizeof(*tl));
    if (!tl)
        return HERD_ERR_NO_MEMORY;
    if (pthread_mutex_init(&tl->mu, NULL)) {
        free(tl);
        return HERD_ERR_INTERNAL;
    }
    *out = tl;
    return HERD_OK;
}

void trace_timeline_destroy(trace_timeline_t *tl)
{
    if (!tl)
        return;
    for (size_t i = 0; i < tl->labels_cap; i++)
        free(tl->labels[i]);
    free(tl->labels);
    for (size_t i = 0; i < tl->nmeta; i++) {
        free(tl->meta[i].key);
        free(tl->meta[i].value);
    }
    free(tl->recs);
    pthread_mutex_destroy(&tl->mu);
    free(tl);
}

static size_t tl_hash(const char *s)
{
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static char **tl_slot(char **table, size_t cap, const char *s)
{
    size_t i = tl_hash(s) & (cap - 1);
    while (table[i] && strcmp(table[i], s))
        i = (i + 1) & (cap - 1);
    return &table[i];
}

static herd_status_t tl_labels_grow(trace_timeline_t *tl)
{
    size_t cap = tl->labels_cap ? tl->labels_cap * 2 : 64;
    char **table = calloc(cap, sizeof(*table));
    if (!table)
        return HERD_ERR_NO_MEMORY;
    for (size_t i = 0; i < tl->labels_cap; i++)
        if (tl->labels[i])
            *tl_slot(table, cap, tl->labels[i]) = tl->labels[i];
    free(tl->labels);
    tl->labels = table;
    tl->labels_cap = cap;
    return HERD_OK;
}

/* Labels repeat (bucket names, phases): keep one copy of each. */
static const char *tl_intern(trace_timeline_t *tl, const char *s)
{
    if ((tl->nlabels + 1) * 2 > tl->labels_cap && tl_labels_grow(tl))
        return NULL;
    char **slot = tl_slot(tl->labels, tl->labels_cap, s);
    if (!*slot) {
        if (!(*slot = strdup(s)))
            return NULL;
        tl->nlabels++;
    }
    return *slot;
}

static herd_status_t tl_add_locked(trace_timeline_t *tl,
                                   const herd_tl_rec_t *rec)
{
    if (tl->n == tl->cap) {
        size_t ncap = tl->cap ? tl->cap * 2 : 1024;
        herd_tl_rec_t *p = realloc(tl->recs, ncap * sizeof(*p));
        if (!p)
            return HERD_ERR_NO_MEMORY;
        tl->recs = p;
        tl->cap = ncap;
    }
    const char *label = NULL;
    if (rec->label && !(label = tl_intern(tl, rec->label)))
        return HERD_ERR_NO_MEMORY;
    tl->recs[tl->n] = *rec;
    tl->recs[tl->n].label = label;
    tl->n++;
    return HERD_OK;
}

herd_status_t trace_timeline_add(trace_timeline_t *tl, const herd_tl_rec_t *rec)
{
    pthread_mutex_lock(&tl->mu);
    herd_status_t st = tl_add_locked(tl, rec);
    if (st)
        tl->lost++;
    pthread_mutex_unlock(&tl->mu);
    return st;
}

void trace_timeline_collect(const herd_tl_rec_t *rec, void *arg)
{
    (void)trace_timeline_add(arg, rec);
}

herd_status_t trace_timeline_status(const trace_timeline_t *tl)
{
    return tl->lost ? HERD_ERR_NO_MEMORY : HERD_OK;
}

size_t trace_timeline_count(const trace_timeline_t *tl)
{
    return tl->n;
}

const herd_tl_rec_t *trace_timeline_recs(const trace_timeline_t *tl)
{
    return tl->recs;
}

static int tl_cmp(const void *a, const void *b)
{
    const herd_tl_rec_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

void trace_timeline_sort(trace_timeline_t *tl)
{
    if (tl->n > 1)
        qsort(tl->recs, tl->n, sizeof(*tl->recs), tl_cmp);
}

herd_status_t trace_timeline_set_meta(trace_timeline_t *tl, const char *key,
                                      const char *value)
{
    size_t i = 0;
    while (i < tl->nmeta && strcmp(tl->meta[i].key, key))
        i++;
    if (i == tl->nmeta && i == TL_META_MAX)
        return HERD_ERR_NO_MEMORY;
    char *k = strdup(key), *v = value ? strdup(value) : NULL;
    if (!k || (value && !v)) {
        free(k);
        free(v);
        return HERD_ERR_NO_MEMORY;
    }
    if (i < tl->nmeta) {
        free(tl->meta[i].key);
        free(tl->meta[i].value);
    } else {
        tl->nmeta++;
    }
    tl->meta[i].key = k;
    tl->meta[i].value = v;
    return HERD_OK;
}

const char *trace_timeline_get_meta(const trace_timeline_t *tl, const char *key)
{
    for (size_t i = 0; i < tl->nmeta; i++)
        if (!strcmp(tl->meta[i].key, key))
            return tl->meta[i].value;
    return NULL;
}

const char *trace_tl_category(herd_tl_kind_t kind)
{
    switch (kind) {
    case HERD_TL_COLL:
        return "coll";
    case HERD_TL_COMPUTE:
        return "compute";
    case HERD_TL_WAIT:
        return "wait";
    default:
        return "mark";
    }
}

const char *trace_tl_name(const herd_tl_rec_t *rec)
{
    switch (rec->kind) {
    case HERD_TL_COLL:
        return herd_coll_name(rec->coll);
    case HERD_TL_COMPUTE:
        return rec->label ? rec->label : "compute";
    case HERD_TL_WAIT:
        return "wait";
    default:
        return rec->label ? rec->label : "mark";
    }
}
