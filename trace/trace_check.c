/* trace/trace_check.c - checks that need the whole trace: each rank posts
 * an async id only when the previous op under that id was waited, waits
 * only for posted ids, and names roots and peers inside its group.
 * Ranks that no rank filter, variant or per-rank list names all behave
 * alike, so one of them stands for all: the check stays cheap at 1M
 * ranks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "trace/trace.h"

static herd_status_t tc_fail(const trace_t *t, char *err, size_t errlen,
                             int rank, uint32_t i, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static herd_status_t tc_fail(const trace_t *t, char *err, size_t errlen,
                             int rank, uint32_t i, const char *fmt, ...)
{
    int k =
        snprintf(err, errlen,
                 "%s: rank %d, op %u: ", t->name ? t->name : "trace", rank, i);
    if (k >= 0 && (size_t)k < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    core_escape_msg(err, errlen); /* names and async ids from the file */
    return HERD_ERR_PARSE;
}

/* Group size and this rank's index in group g (-1: not a member). */
static int tc_group_rank(const trace_t *t, uint32_t g, int rank, int *size)
{
    if (g == 0) {
        *size = t->world_size;
        return rank;
    }
    trace_span_t s = trace_group(t, g);
    *size = (int)s.n;
    for (uint32_t k = 0; k < s.n; k++)
        if (t->rank_pool[s.off + k] == rank)
            return (int)k;
    return -1;
}

static herd_status_t tc_op(const trace_t *t, const trace_op_t *op, int rank,
                           uint32_t i, uint8_t *posted, char *err,
                           size_t errlen)
{
    int size, me = tc_group_rank(t, op->group, rank, &size);
    if (op->kind == TRACE_OP_COLL && me >= 0) {
        int peer = trace_op_peer(op, me, size);
        if (op->peer >= 0 && peer >= size)
            return tc_fail(t, err, errlen, rank, i,
                           "%s names rank %d of a "
                           "group of %d",
                           herd_coll_name(op->coll), peer, size);
        if ((op->coll == HERD_COLL_SEND || op->coll == HERD_COLL_RECV) &&
            peer == me)
            return tc_fail(t, err, errlen, rank, i, "%s to itself",
                           herd_coll_name(op->coll));
        if (op->async != TRACE_NONE && posted[op->async])
            return tc_fail(t, err, errlen, rank, i,
                           "async id '%s' posted "
                           "again before it was waited",
                           t->async_names[op->async]);
        if (op->async != TRACE_NONE)
            posted[op->async] = 1;
    }
    if (op->kind == TRACE_OP_WAIT) {
        if (!posted[op->async])
            return tc_fail(t, err, errlen, rank, i,
                           "wait for async id '%s' "
                           "that is not outstanding",
                           t->async_names[op->async]);
        posted[op->async] = 0;
    }
    if (op->kind == TRACE_OP_WAIT_ALL)
        memset(posted, 0, t->nasync);
    return HERD_OK;
}

static herd_status_t tc_rank(const trace_t *t, int rank, uint8_t *posted,
                             char *err, size_t errlen)
{
    const trace_op_t *ops;
    uint32_t n;
    trace_rank_ops(t, rank, &ops, &n);
    memset(posted, 0, t->nasync);
    for (uint32_t i = 0; i < n; i++) {
        trace_op_t op;
        if (!trace_op_for_rank(t, &ops[i], rank, &op))
            continue;
        herd_status_t st = tc_op(t, &op, rank, i, posted, err, errlen);
        if (st)
            return st;
    }
    return HERD_OK;
}

/* 1 for ranks that something in the trace names specifically. */
static void tc_mark_named(const trace_t *t, uint8_t *named)
{
    for (uint32_t s = 0; s < t->nranksets; s++)
        for (uint32_t k = 0; k < t->ranksets[s].n; k++)
            named[t->rank_pool[t->ranksets[s].off + k]] = 1;
    for (uint32_t g = 0; g < t->ngroups; g++)
        for (uint32_t k = 0; k < t->groups[g].n; k++)
            named[t->rank_pool[t->groups[g].off + k]] = 1;
    for (uint32_t v = 0; v < t->nvariants; v++)
        named[t->variants[v].rank] = 1;
    for (uint32_t l = 0; l < t->nrank_lists; l++)
        named[t->rank_lists[l].rank] = 1;
}

herd_status_t trace_validate(const trace_t *t, char *err, size_t errlen)
{
    uint8_t *named = calloc((size_t)t->world_size, 1);
    uint8_t *posted = malloc(t->nasync ? t->nasync : 1);
    herd_status_t st = named && posted ? HERD_OK : HERD_ERR_NO_MEMORY;
    if (!st)
        tc_mark_named(t, named);
    int plain_done = 0;
    for (int r = 0; r < t->world_size && !st; r++) {
        if (!named[r] && plain_done)
            continue;
        plain_done |= !named[r];
        st = tc_rank(t, r, posted, err, errlen);
    }
    free(posted);
    free(named);
    return st;
}
