/* workload/common/job.c - group release and trace export shared by the
 * workloads with rank groups, and the emitter that does nothing
 * (job.h). */
#include "workload/common/job.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "workload/ddp/trace.h"

static herd_status_t n_compute(void *c, double s, const char *l)
{
    (void)c, (void)s, (void)l;
    return HERD_OK;
}
static herd_status_t n_mark(void *c, const char *l)
{
    (void)c, (void)l;
    return HERD_OK;
}
static herd_status_t n_wait(void *c, size_t slot)
{
    (void)c, (void)slot;
    return HERD_OK;
}
static herd_status_t n_coll(void *c, const ddp_emit_coll_t *op, size_t slot)
{
    (void)c, (void)op, (void)slot;
    return HERD_OK;
}
const ddp_emit_ops_t wl_null_ops = {
    .compute = n_compute, .mark = n_mark, .wait = n_wait, .coll = n_coll};

herd_status_t wl_groups_add(wl_group_t **groups, int *ngroups, int first,
                            int stride, int n)
{
    wl_group_t *g = realloc(*groups, (size_t)(*ngroups + 1) * sizeof(*g));
    if (!g)
        return HERD_ERR_NO_MEMORY;
    *groups = g;
    wl_group_t *ng = &g[*ngroups];
    if (!(ng->ranks = malloc((size_t)n * sizeof(int))))
        return HERD_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++)
        ng->ranks[i] = first + i * stride;
    ng->n = n;
    (*ngroups)++;
    return HERD_OK;
}

void wl_groups_free(wl_group_t *groups, int n)
{
    for (int g = 0; groups && g < n; g++)
        free(groups[g].ranks);
    free(groups);
}

herd_status_t wl_trace_build(int world, const char *name,
                             const wl_group_t *groups, int ngroups,
                             ddp_walk_fn walk, const void *job,
                             const wl_data_t *data, trace_t **out)
{
    trace_t *t = NULL;
    herd_status_t st = trace_create(world, &t);
    if (st != HERD_OK)
        return st;
    free(t->name);
    t->name = strdup(name);
    for (int g = 0; st == HERD_OK && g < ngroups; g++) {
        int32_t *r = malloc((size_t)groups[g].n * sizeof(int32_t));
        if (!r) {
            st = HERD_ERR_NO_MEMORY;
            break;
        }
        for (int i = 0; i < groups[g].n; i++)
            r[i] = groups[g].ranks[i];
        st = trace_add_group(t, r, (uint32_t)groups[g].n);
        free(r);
    }
    if (st == HERD_OK)
        st = ddp_trace_record(t, walk, job, data);
    if (st != HERD_OK) {
        trace_destroy(t);
        return st;
    }
    *out = t;
    return HERD_OK;
}
