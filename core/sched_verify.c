/* core/sched_verify.c - the schedule verifier: lowers every rank of one
 * configuration, checks each step statically (kinds, peers, channels,
 * buffer ranges, no writes to IN), matches sends with receives (FIFO per
 * (src, dst, channel), equal counts, nothing left over), then executes the
 * whole group symbolically under several legal orders (see
 * core/sched_exec.c) and checks every rank's output.
 *
 * Each (rank, element) of the input holds a pseudo-random 64-bit value and
 * reduction is wrapping addition, so a missing or doubled contribution, a
 * block in the wrong place or stale data shows up as a wrong value. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched_verify.h"

void core_verify_fail(core_verify_t *v, const char *fmt, ...)
{
    if (v->failed)
        return;
    v->failed = 1;
    if (!v->why || v->whylen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->why, v->whylen, fmt, ap);
    va_end(ap);
}

const char *core_verify_step_str(const core_verify_t *v, uint32_t g, char *buf,
                                 size_t len)
{
    int r = v->rank_of[g];
    const core_step_t *st = &v->sch[r].steps[g - v->base[r]];
    const char *k = core_step_kind_name(st->kind);
    if (st->kind == CORE_STEP_COPY)
        snprintf(buf, len, "rank %d step %u (copy n=%llu)", r,
                 (unsigned)(g - v->base[r]), (unsigned long long)st->count);
    else
        snprintf(buf, len, "rank %d step %u (%s %s %d ch%u n=%llu)", r,
                 (unsigned)(g - v->base[r]), k,
                 st->kind == CORE_STEP_SEND ? "to" : "from", st->peer,
                 st->channel, (unsigned long long)st->count);
    return buf;
}

uint64_t core_verify_vsum(const size_t *v, int n, int stride)
{
    uint64_t s = 0;
    for (int i = 0; i < n; i++)
        s += v[(size_t)i * (size_t)stride];
    return s;
}

uint64_t core_verify_bufsize(const core_sched_desc_t *d, int rank, int buf)
{
    uint64_t n = d->count, pn = n * (uint64_t)d->nranks;
    int root = rank == d->root, p = d->nranks;
    switch (d->coll) {
    case HERD_COLL_ALL_GATHER_V:
        return buf == CORE_BUF_IN ? d->counts[rank]
                                  : core_verify_vsum(d->counts, p, 1);
    case HERD_COLL_REDUCE_SCATTER_V:
        return buf == CORE_BUF_IN ? core_verify_vsum(d->counts, p, 1)
                                  : d->counts[rank];
    case HERD_COLL_ALL_TO_ALL_V: /* the verifier's matrix form */
        return buf == CORE_BUF_IN
                   ? core_verify_vsum(d->matrix + (size_t)rank * (size_t)p, p,
                                      1)
                   : core_verify_vsum(d->matrix + rank, p, p);
    case HERD_COLL_ALL_REDUCE:
        return n;
    case HERD_COLL_BROADCAST:
        return buf == CORE_BUF_OUT ? n : 0;
    case HERD_COLL_REDUCE:
        return buf == CORE_BUF_IN ? n : root ? n : 0;
    case HERD_COLL_ALL_GATHER:
        return buf == CORE_BUF_IN ? n : pn;
    case HERD_COLL_GATHER:
        return buf == CORE_BUF_IN ? n : root ? pn : 0;
    case HERD_COLL_SCATTER:
        return buf == CORE_BUF_IN ? (root ? pn : 0) : n;
    case HERD_COLL_REDUCE_SCATTER:
        return buf == CORE_BUF_IN ? pn : n;
    case HERD_COLL_ALL_TO_ALL:
        return pn;
    default:
        return 0;
    }
}

static uint64_t limit_of(const core_verify_t *v, int r, int buf)
{
    if (buf == CORE_BUF_SCRATCH)
        return v->sch[r].scratch_count;
    return core_verify_bufsize(v->d, r, buf);
}

static int range_ok(const core_verify_t *v, int r, int buf, uint64_t off,
                    uint64_t n)
{
    if (buf != CORE_BUF_IN && buf != CORE_BUF_OUT && buf != CORE_BUF_SCRATCH)
        return 0;
    uint64_t lim = limit_of(v, r, buf);
    return off <= lim && n <= lim - off;
}

static int check_ranges(core_verify_t *v, uint32_t g, const core_step_t *st)
{
    char sb[128];
    int r = v->rank_of[g];
    int rd = st->kind != CORE_STEP_RECV, wr = st->kind != CORE_STEP_SEND;
    if (rd && !range_ok(v, r, st->src_buf, st->src_off, st->count)) {
        core_verify_fail(v, "%s reads outside its source buffer",
                         core_verify_step_str(v, g, sb, sizeof(sb)));
        return -1;
    }
    if (wr && !range_ok(v, r, st->dst_buf, st->dst_off, st->count)) {
        core_verify_fail(v, "%s writes outside its destination buffer",
                         core_verify_step_str(v, g, sb, sizeof(sb)));
        return -1;
    }
    if (wr && st->dst_buf == CORE_BUF_IN) {
        core_verify_fail(v, "%s writes the input buffer",
                         core_verify_step_str(v, g, sb, sizeof(sb)));
        return -1;
    }
    if (st->kind == CORE_STEP_COPY && st->src_buf == st->dst_buf &&
        st->src_off != st->dst_off && st->src_off < st->dst_off + st->count &&
        st->dst_off < st->src_off + st->count) {
        core_verify_fail(v, "%s copies between overlapping ranges",
                         core_verify_step_str(v, g, sb, sizeof(sb)));
        return -1;
    }
    return 0;
}

static int check_step(core_verify_t *v, uint32_t g, const core_step_t *st,
                      uint32_t local)
{
    char sb[128];
    int r = v->rank_of[g];
    if (st->kind > CORE_STEP_COPY) {
        core_verify_fail(v, "rank %d step %u has an unknown kind %u", r, local,
                         st->kind);
        return -1;
    }
    if (st->kind != CORE_STEP_COPY &&
        (st->peer < 0 || st->peer >= v->p || st->peer == r)) {
        core_verify_fail(v, "%s names an invalid peer",
                         core_verify_step_str(v, g, sb, sizeof(sb)));
        return -1;
    }
    if (st->channel >= v->d->channels) {
        core_verify_fail(v, "%s uses channel %u of %d",
                         core_verify_step_str(v, g, sb, sizeof(sb)),
                         st->channel, v->d->channels);
        return -1;
    }
    const core_sched_t *s = &v->sch[r];
    if (st->dep_off > s->ndeps || st->ndeps > s->ndeps - st->dep_off) {
        core_verify_fail(v, "rank %d step %u has a bad dependency list", r,
                         local);
        return -1;
    }
    for (uint32_t k = 0; k < st->ndeps; k++)
        if (s->deps[st->dep_off + k] >= local) {
            core_verify_fail(v, "rank %d step %u depends on a later step", r,
                             local);
            return -1;
        }
    int barrier = v->d->coll == HERD_COLL_BARRIER ||
                  v->d->coll == HERD_COLL_MONITORED_BARRIER;
    if (barrier && st->count) {
        core_verify_fail(v, "%s: barrier messages carry no data",
                         core_verify_step_str(v, g, sb, sizeof(sb)));
        return -1;
    }
    return barrier ? 0 : check_ranges(v, g, st);
}

static herd_status_t lower_all(core_verify_t *v, core_sched_lower_fn lower)
{
    v->sch = calloc((size_t)v->p, sizeof(*v->sch));
    v->base = calloc((size_t)v->p + 1, sizeof(*v->base));
    if (!v->sch || !v->base)
        return HERD_ERR_NO_MEMORY;
    uint64_t n = 0;
    for (int r = 0; r < v->p; r++) {
        core_sched_desc_t d = *v->d;
        d.rank = r;
        if (d.coll == HERD_COLL_ALL_GATHER_V ||
            d.coll == HERD_COLL_REDUCE_SCATTER_V)
            d.count = d.counts[r];
        herd_status_t st = lower(&d, &v->sch[r]);
        if (st != HERD_OK) {
            core_verify_fail(v, "lowering rank %d failed: %s", r,
                             herd_status_string(st));
            return st;
        }
        v->base[r] = n;
        n += v->sch[r].nsteps;
        if (n >= UINT32_MAX / 2)
            return HERD_ERR_OVERFLOW;
    }
    v->base[v->p] = n;
    v->n = (uint32_t)n;
    v->rank_of = malloc((n ? n : 1) * sizeof(*v->rank_of));
    if (!v->rank_of)
        return HERD_ERR_NO_MEMORY;
    for (int r = 0; r < v->p; r++)
        for (uint64_t g = v->base[r]; g < v->base[r + 1]; g++)
            v->rank_of[g] = r;
    return HERD_OK;
}

static herd_status_t check_all(core_verify_t *v)
{
    for (int r = 0; r < v->p; r++) {
        const core_sched_t *s = &v->sch[r];
        for (uint32_t i = 0; i < s->nsteps; i++)
            if (check_step(v, v->base[r] + i, &s->steps[i], i))
                return HERD_ERR_MISMATCH;
    }
    return HERD_OK;
}

static void verify_free(core_verify_t *v)
{
    if (v->sch)
        for (int r = 0; r < v->p; r++)
            core_sched_fini(&v->sch[r]);
    free(v->sch);
    free(v->base);
    free(v->rank_of);
    core_verify_match_free(v);
}

herd_status_t core_sched_verify(const core_sched_desc_t *desc,
                                core_sched_lower_fn lower, char *why,
                                size_t whylen)
{
    core_verify_t v = {
        .d = desc, .p = desc->nranks, .why = why, .whylen = whylen};
    if (why && whylen)
        why[0] = '\0';
    if (desc->nranks < 1 || desc->nranks > (1 << 20)) {
        core_verify_fail(&v, "bad group size %d", desc->nranks);
        return HERD_ERR_INVALID_ARG;
    }
    herd_status_t st = lower_all(&v, lower ? lower : core_sched_lower);
    if (st == HERD_OK)
        st = check_all(&v);
    if (st == HERD_OK)
        st = core_verify_match(&v);
    if (st == HERD_OK)
        st = core_verify_exec_all(&v);
    if (st != HERD_OK && !v.failed)
        core_verify_fail(&v, "%s", herd_status_string(st));
    verify_free(&v);
    return st;
}
