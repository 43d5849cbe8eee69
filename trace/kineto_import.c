/* trace/kineto_import.c - assemble the traced ranks' conversions into one
 * SPMD herd trace and one measured timeline (see kineto_import.h). Each
 * rank is first converted into a trace of its own; the job's trace takes
 * the lowest traced rank's ops for everyone and records how the others
 * differ. */
#include "trace/kineto_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Same op apart from its duration: a per-rank variant is enough. */
static int same_shape(const trace_op_t *a, const trace_op_t *b)
{
    return a->kind == b->kind && a->coll == b->coll && a->dtype == b->dtype &&
           a->count == b->count && a->group == b->group && a->peer == b->peer &&
           (a->async == TRACE_NONE) == (b->async == TRACE_NONE);
}

static int same_ops(const trace_t *a, const trace_t *b)
{
    if (a->nops != b->nops)
        return 0;
    for (uint32_t i = 0; i < a->nops; i++)
        if (!same_shape(&a->ops[i], &b->ops[i]))
            return 0;
    return 1;
}

/* Copy op `src` of `from` (strings and async ids re-interned, group
 * renumbered by gmap) into t. */
static herd_status_t copy_op(trace_t *t, const trace_t *from,
                             const trace_op_t *src, const uint16_t *gmap)
{
    trace_op_t op = *src;
    herd_status_t st = HERD_OK;
    op.group = src->group ? gmap[src->group] : 0;
    if (src->label != TRACE_NONE)
        st = trace_intern(t, trace_string(from, src->label), &op.label);
    if (st == HERD_OK && src->async != TRACE_NONE)
        st = trace_async_slot(t, from->async_names[src->async], &op.async);
    return st == HERD_OK ? trace_add_op(t, &op) : st;
}

/* The process groups the ops use (not the world), in order of the
 * rank's pg_config; gmap[g + 1] = the trace's group number. */
static herd_status_t add_groups(trace_t *t, const kineto_rank_t *r,
                                trace_t *const *per, size_t n, int world_size,
                                uint16_t *gmap, char *err, size_t errlen)
{
    for (int g = 0; g < r->ngroups; g++) {
        int used = 0;
        for (size_t i = 0; i < n && !used; i++)
            for (uint32_t k = 0; k < per[i]->nops && !used; k++)
                used = per[i]->ops[k].group == g + 1;
        if (!used)
            continue;
        const kineto_group_t *grp = &r->groups[g];
        int32_t *ranks = calloc((size_t)grp->n + 1, sizeof(int32_t));
        if (!ranks)
            return HERD_ERR_NO_MEMORY;
        for (int k = 0; k < grp->n; k++) {
            if (grp->ranks[k] < 0 || grp->ranks[k] >= world_size) {
                snprintf(err, errlen,
                         "%s: process group '%s' names rank %d, outside the "
                         "world of %d",
                         r->path, grp->name, grp->ranks[k], world_size);
                free(ranks);
                return HERD_ERR_PARSE;
            }
            ranks[k] = grp->ranks[k];
        }
        herd_status_t st = trace_add_group(t, ranks, (uint32_t)grp->n);
        free(ranks);
        if (st != HERD_OK)
            return st;
        gmap[g + 1] = (uint16_t)t->ngroups;
    }
    return HERD_OK;
}

herd_status_t kineto_build_trace(const kineto_rank_t *ranks,
                                 const kineto_steps_t *steps, size_t n,
                                 int world_size, const char *name,
                                 const kineto_import_opts_t *o, trace_t **out,
                                 char *err, size_t errlen)
{
    trace_t *t = NULL, **per = calloc(n ? n : 1, sizeof(trace_t *));
    herd_status_t st = per ? trace_create(world_size, &t) : HERD_ERR_NO_MEMORY;
    for (size_t i = 0; i < n && st == HERD_OK; i++) {
        st = trace_create(world_size, &per[i]);
        if (st == HERD_OK)
            st = kineto_convert(&ranks[i], &steps[i], o, 0, per[i], NULL, err,
                                errlen);
    }
    if (st == HERD_OK) {
        t->ranks_per_node = o->ranks_per_node;
        t->name = strdup(name ? name : "imported");
        st = t->name ? HERD_OK : HERD_ERR_NO_MEMORY;
    }
    int most = 0; /* groups are global; size the map for any rank's */
    for (size_t i = 0; i < n; i++)
        most = ranks[i].ngroups > most ? ranks[i].ngroups : most;
    uint16_t *gmap = calloc((size_t)most + 2, sizeof(uint16_t));
    if (st == HERD_OK && !gmap)
        st = HERD_ERR_NO_MEMORY;
    if (st == HERD_OK && n)
        st = add_groups(t, &ranks[0], per, n, world_size, gmap, err, errlen);
    /* the reference rank's ops, other ranks' durations as variants */
    const trace_t *ref = n ? per[0] : NULL;
    for (uint32_t i = 0; ref && i < ref->nops && st == HERD_OK; i++) {
        st = copy_op(t, ref, &ref->ops[i], gmap);
        for (size_t r = 1; r < n && st == HERD_OK; r++) {
            if (!same_ops(ref, per[r]) || ranks[r].rank >= world_size ||
                per[r]->ops[i].dur_ns == ref->ops[i].dur_ns)
                continue;
            trace_variant_t v = {.rank = ranks[r].rank,
                                 .fields = TRACE_VAR_DUR,
                                 .dur_ns = per[r]->ops[i].dur_ns,
                                 .peer = -1,
                                 .label = TRACE_NONE};
            st = trace_add_variant(t, t->nops - 1, &v);
        }
    }
    /* ranks whose collectives differ play their own list */
    for (size_t r = 1; r < n && st == HERD_OK; r++) {
        if (same_ops(ref, per[r]) || ranks[r].rank >= world_size)
            continue;
        st = trace_begin_rank_list(t, ranks[r].rank);
        for (uint32_t i = 0; i < per[r]->nops && st == HERD_OK; i++)
            st = copy_op(t, per[r], &per[r]->ops[i], gmap);
        trace_end_rank_list(t);
    }
    if (st == HERD_OK)
        st = trace_validate(t, err, errlen);
    for (size_t i = 0; per && i < n; i++)
        trace_destroy(per[i]);
    free(per);
    free(gmap);
    if (st != HERD_OK) {
        if (st == HERD_ERR_NO_MEMORY)
            snprintf(err, errlen, "out of memory");
        trace_destroy(t);
        return st;
    }
    *out = t;
    return HERD_OK;
}

static uint64_t first_start(const kineto_steps_t *s)
{
    return s->n ? s->s[0].start_ns : 0;
}

herd_status_t kineto_build_timeline(const kineto_rank_t *ranks,
                                    const kineto_steps_t *steps, size_t n,
                                    const kineto_import_opts_t *o,
                                    trace_timeline_t **out, char *err,
                                    size_t errlen)
{
    trace_timeline_t *tl = NULL;
    herd_status_t st = trace_timeline_create(&tl);
    int shared = 1; /* one clock for all: PyTorch 2.x epoch time */
    uint64_t origin = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        shared &= ranks[i].has_dist_info;
        if (first_start(&steps[i]) < origin)
            origin = first_start(&steps[i]);
    }
    for (size_t i = 0; i < n && st == HERD_OK; i++)
        st = kineto_convert(&ranks[i], &steps[i], o,
                            shared ? origin : first_start(&steps[i]), NULL, tl,
                            err, errlen);
    if (st == HERD_OK)
        st = trace_timeline_set_meta(tl, "engine", "pytorch");
    if (st == HERD_OK)
        st = trace_timeline_set_meta(tl, "source", "herd import");
    if (st != HERD_OK) {
        if (st == HERD_ERR_NO_MEMORY)
            snprintf(err, errlen, "out of memory");
        trace_timeline_destroy(tl);
        return st;
    }
    trace_timeline_sort(tl);
    *out = tl;
    return HERD_OK;
}
