/* core/coll_v.c - the entry points of the uneven collectives
 * (all_gather_v, reduce_scatter_v, all_to_all_v) and of
 * monitored_barrier: their own argument checks (counts that overflow,
 * look negative or do not add up, splits that do not divide evenly), then
 * the common checks and dispatch of core/coll.c. Engines lower them like
 * any collective (core/algo_v.c has their schedules). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

/* A count past PTRDIFF_MAX is almost surely a negative int converted to
 * size_t: say so rather than "too large". */
static herd_status_t check_counts(herd_comm_t *c, const char *name,
                                  const char *what, const size_t *v,
                                  herd_dtype_t dtype, uint64_t *sum_out)
{
    size_t es = herd_dtype_size(dtype);
    if (es == 0)
        return core_comm_error(c, HERD_ERR_INVALID_ARG, "%s: unknown dtype %d",
                               name, (int)dtype);
    if (!v)
        return core_comm_error(c, HERD_ERR_INVALID_ARG, "%s: NULL %s", name,
                               what);
    uint64_t sum = 0;
    for (int r = 0; r < c->size; r++) {
        if (v[r] > (size_t)PTRDIFF_MAX)
            return core_comm_error(
                c, HERD_ERR_INVALID_ARG,
                "%s: %s[%d] = %zu is negative or oversized (a negative "
                "number converted to size_t?)",
                name, what, r, v[r]);
        if (v[r] > (SIZE_MAX / es - sum))
            return core_comm_error(c, HERD_ERR_OVERFLOW,
                                   "%s: %s add up past %zu bytes", name, what,
                                   (size_t)SIZE_MAX);
        sum += v[r];
    }
    *sum_out = sum;
    return HERD_OK;
}

static herd_status_t need_buf(herd_comm_t *c, const char *name, const void *buf,
                              uint64_t n, const char *which)
{
    if (n > 0 && !buf)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "%s: NULL %s buffer with %llu elements", name,
                               which, (unsigned long long)n);
    return HERD_OK;
}

herd_status_t herd_all_gather_v(herd_comm_t *c, const void *s, void *r,
                                const size_t *counts, herd_dtype_t d,
                                herd_req_t **req)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    const char *name = "all_gather_v";
    uint64_t sum = 0;
    herd_status_t st = check_counts(c, name, "counts", counts, d, &sum);
    if (st == HERD_OK)
        st = need_buf(c, name, r, sum, "receive");
    if (st != HERD_OK)
        return st;
    core_coll_args_t a = {.coll = HERD_COLL_ALL_GATHER_V,
                          .sendbuf = s,
                          .recvbuf = r,
                          .count = counts[c->rank],
                          .dtype = d,
                          .root = -1,
                          .vcounts = counts,
                          .vtotal = sum};
    return core_coll_post(c, &a, req);
}

herd_status_t herd_reduce_scatter_v(herd_comm_t *c, const void *s, void *r,
                                    const size_t *counts, herd_dtype_t d,
                                    herd_op_t op, herd_req_t **req)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    const char *name = "reduce_scatter_v";
    uint64_t sum = 0;
    herd_status_t st = check_counts(c, name, "counts", counts, d, &sum);
    if (st == HERD_OK)
        st = need_buf(c, name, s, sum, "send");
    if (st != HERD_OK)
        return st;
    core_coll_args_t a = {.coll = HERD_COLL_REDUCE_SCATTER_V,
                          .sendbuf = s,
                          .recvbuf = r,
                          .count = counts[c->rank],
                          .dtype = d,
                          .op = op,
                          .root = -1,
                          .vcounts = counts,
                          .vtotal = sum};
    return core_coll_post(c, &a, req);
}

/* all_to_all_v's splits of one side: given, or count split evenly into
 * `even` (then count must divide). */
static herd_status_t a2a_side(herd_comm_t *c, const char *what, size_t count,
                              const size_t *splits, herd_dtype_t d,
                              size_t *even, const size_t **out)
{
    const char *name = "all_to_all_v";
    if (!splits) {
        if (count % (size_t)c->size)
            return core_comm_error(c, HERD_ERR_INVALID_ARG,
                                   "%s: %s count %zu does not split evenly "
                                   "over %d ranks (give the split sizes)",
                                   name, what, count, c->size);
        for (int r = 0; r < c->size; r++)
            even[r] = count / (size_t)c->size;
        *out = even;
        return HERD_OK;
    }
    char label[32];
    snprintf(label, sizeof(label), "%s_splits", what);
    uint64_t sum = 0;
    herd_status_t st = check_counts(c, name, label, splits, d, &sum);
    if (st != HERD_OK)
        return st;
    if (sum != count)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "%s: %s add up to %llu elements but the %s "
                               "count is %zu",
                               name, label, (unsigned long long)sum, what,
                               count);
    *out = splits;
    return HERD_OK;
}

herd_status_t herd_all_to_all_v(herd_comm_t *c, const void *s,
                                size_t send_count, const size_t *send_splits,
                                void *r, size_t recv_count,
                                const size_t *recv_splits, herd_dtype_t d,
                                herd_req_t **req)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    const char *name = "all_to_all_v";
    if (herd_dtype_size(d) == 0)
        return core_comm_error(c, HERD_ERR_INVALID_ARG, "%s: unknown dtype %d",
                               name, (int)d);
    /* even splits are built here; one rank's pair fits the stack up to a
     * few thousand ranks, beyond that on the heap */
    size_t stack_even[2][256];
    size_t *even = c->size <= 256 ? stack_even[0] : NULL;
    size_t *even_r = c->size <= 256 ? stack_even[1] : NULL;
    herd_status_t st = HERD_OK;
    if (!even && (!send_splits || !recv_splits)) {
        even = calloc(2 * (size_t)c->size, sizeof(size_t));
        if (!even)
            return HERD_ERR_NO_MEMORY;
        even_r = even + c->size;
    }
    const size_t *ss = NULL, *rs = NULL;
    st = a2a_side(c, "send", send_count, send_splits, d, even, &ss);
    if (st == HERD_OK)
        st = a2a_side(c, "recv", recv_count, recv_splits, d, even_r, &rs);
    if (st == HERD_OK)
        st = need_buf(c, name, r, recv_count, "receive");
    if (st == HERD_OK && ss[c->rank] != rs[c->rank])
        st = core_comm_error(c, HERD_ERR_MISMATCH,
                             "%s: rank %d sends itself %zu elements but "
                             "expects %zu from itself",
                             name, c->rank, ss[c->rank], rs[c->rank]);
    if (st == HERD_OK) {
        core_coll_args_t a = {.coll = HERD_COLL_ALL_TO_ALL_V,
                              .sendbuf = s,
                              .recvbuf = r,
                              .count = send_count,
                              .dtype = d,
                              .root = -1,
                              .vcounts = ss,
                              .vrecv = rs,
                              .vtotal = recv_count};
        st = core_coll_post(c, &a, req);
    }
    if (c->size > 256)
        free(even);
    return st;
}

herd_status_t herd_monitored_barrier(herd_comm_t *c, double timeout_s,
                                     int wait_all_ranks)
{
    if (!c)
        return HERD_ERR_INVALID_ARG;
    if (timeout_s != timeout_s || timeout_s > 1e9)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "monitored_barrier: timeout %g s is not in "
                               "(0, 1e9] (0 or less: the comm's)",
                               timeout_s);
    core_coll_args_t a = {.coll = HERD_COLL_MONITORED_BARRIER,
                          .dtype = HERD_UINT8,
                          .root = 0,
                          .timeout_s = timeout_s > 0 ? timeout_s : 0,
                          .wait_all = wait_all_ranks != 0};
    return core_coll_post(c, &a, NULL);
}

herd_status_t core_monitored_barrier_error(herd_comm_t *c,
                                           const core_coll_args_t *a,
                                           const int *absent, int n,
                                           herd_status_t status)
{
    double t = a->timeout_s > 0 ? a->timeout_s : c->timeout_s;
    if (!absent || n <= 0)
        return core_comm_error(c, status,
                               "monitored_barrier (group %d, seq %llu): rank "
                               "0 did not release rank %d within %.0f ms "
                               "(a rank did not arrive; rank 0 names it)",
                               c->group_id, (unsigned long long)a->seq,
                               c->world_rank, t * 1e3);
    char list[256];
    size_t len = 0;
    int shown = a->wait_all ? n : 1;
    list[0] = '\0';
    for (int i = 0; i < shown && len + 16 < sizeof(list); i++)
        len +=
            (size_t)snprintf(list + len, sizeof(list) - len, "%s%d",
                             i ? ", " : "", herd_comm_world_rank(c, absent[i]));
    /* gloo's words: "Rank 2 failed to pass monitoredBarrier in 5000 ms" */
    return core_comm_error(c, status,
                           "monitored_barrier (group %d, seq %llu): %s %s "
                           "failed to pass monitoredBarrier in %.0f ms",
                           c->group_id, (unsigned long long)a->seq,
                           shown > 1 ? "ranks" : "rank", list, t * 1e3);
}
