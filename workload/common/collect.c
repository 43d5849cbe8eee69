/* workload/common/collect.c - the per-rank state of the workloads'
 * collectors and the per-rank step arrays of fsdp's and parallel's
 * (collect.h). */
#include "workload/common/collect.h"

#include <stdlib.h>
#include <string.h>

herd_status_t wl_collect_ranks(int world, long **iter, uint64_t **last,
                               ddp_stuck_t **stuck)
{
    size_t w = (size_t)world;
    long *it = malloc(w * sizeof(long));
    uint64_t *l = calloc(w, sizeof(uint64_t));
    ddp_stuck_t *s = calloc(w, sizeof(ddp_stuck_t));
    if (!it || !l || !s) {
        wl_collect_ranks_free(it, l, s);
        return HERD_ERR_NO_MEMORY;
    }
    for (size_t r = 0; r < w; r++)
        it[r] = -1;
    *iter = it;
    *last = l;
    *stuck = s;
    return HERD_OK;
}

void wl_collect_ranks_free(long *iter, uint64_t *last, ddp_stuck_t *stuck)
{
    free(iter);
    free(last);
    free(stuck);
}

long wl_label_index(const char *label, const char *prefix)
{
    size_t n = strlen(prefix);
    if (!label || strncmp(label, prefix, n))
        return -1;
    char *end;
    long k = strtol(label + n, &end, 10);
    return end != label + n && !*end ? k : -1;
}

herd_status_t wl_steps_init(wl_steps_t *s, int world)
{
    size_t n = (size_t)world * WL_REC_MAX_ITERS;
    s->start = calloc(n, sizeof(uint64_t));
    s->end = calloc(n, sizeof(uint64_t));
    s->compute = calloc(n, sizeof(double));
    s->data = calloc(n, sizeof(double));
    if (!s->start || !s->end || !s->compute || !s->data ||
        wl_collect_ranks(world, &s->iter, &s->last, &s->stuck) != HERD_OK) {
        wl_steps_fini(s);
        return HERD_ERR_NO_MEMORY;
    }
    return HERD_OK;
}

void wl_steps_fini(wl_steps_t *s)
{
    free(s->start);
    free(s->end);
    free(s->compute);
    free(s->data);
    wl_collect_ranks_free(s->iter, s->last, s->stuck);
    memset(s, 0, sizeof(*s));
}

int wl_steps_take(wl_steps_t *s, const herd_tl_rec_t *rec, long *it)
{
    int r = rec->rank;
    *it = s->iter[r];
    if (rec->end_ns > s->last[r])
        s->last[r] = rec->end_ns;
    if (rec->kind == HERD_TL_MARK && rec->label &&
        !strcmp(rec->label, "step")) {
        long i = *it;
        if (i >= 0 && i < WL_REC_MAX_ITERS)
            s->end[wl_steps_at(i, r)] = rec->start_ns;
        i = ++s->iter[r];
        if (i < WL_REC_MAX_ITERS)
            s->start[wl_steps_at(i, r)] = rec->start_ns;
        return 1;
    }
    if (rec->kind == HERD_TL_COLL && rec->status != HERD_OK)
        ddp_stuck_note(&s->stuck[r], rec, *it);
    return 0;
}

uint64_t wl_steps_end(const wl_steps_t *s, int r, long it, long steps)
{
    if (s->end[wl_steps_at(it, r)])
        return s->end[wl_steps_at(it, r)];
    /* the last iteration ends with the rank's last record */
    return s->iter[r] == it && it + 1 == steps ? s->last[r] : 0;
}

long wl_steps_recorded(const wl_steps_t *s, int world)
{
    long most = 0;
    for (int r = 0; r < world; r++)
        most = s->iter[r] + 1 > most ? s->iter[r] + 1 : most;
    return most < WL_REC_MAX_ITERS ? most : WL_REC_MAX_ITERS;
}
