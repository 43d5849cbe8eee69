/* core/sched.c - schedule objects: the step builder, lowering dispatch to
 * the algorithm families (core/algo_*.c), which algorithm implements which
 * collective, and the size-based default choice. The same dispatch also
 * runs in a counting mode (core_sched_counts): the algorithms' own
 * arithmetic gives every step's count, but no step is stored. */
#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/sched.h"
#include "core/sched_algo.h"

/* Grow an array geometrically to hold at least `need` elements. */
static int grow(void **arr, uint32_t *cap, uint64_t need, size_t esize)
{
    if (need <= *cap)
        return 0;
    if (need > UINT32_MAX)
        return -1;
    uint64_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    if (ncap > UINT32_MAX)
        ncap = UINT32_MAX;
    void *p = realloc(*arr, (size_t)ncap * esize);
    if (!p)
        return -1;
    *arr = p;
    *cap = (uint32_t)ncap;
    return 0;
}

int64_t core_sched_add(core_sched_t *s, core_step_kind_t kind, int peer,
                       int channel, core_buf_t src_buf, uint64_t src_off,
                       core_buf_t dst_buf, uint64_t dst_off, uint64_t count,
                       const int64_t *deps, int ndeps)
{
    int nd = 0;
    for (int i = 0; i < ndeps; i++)
        nd += deps[i] >= 0;
    if (grow((void **)&s->steps, &s->steps_cap, (uint64_t)s->nsteps + 1,
             sizeof(*s->steps)) ||
        grow((void **)&s->deps, &s->deps_cap, (uint64_t)s->ndeps + nd,
             sizeof(*s->deps)))
        return HERD_ERR_NO_MEMORY;
    core_step_t *st = &s->steps[s->nsteps];
    memset(st, 0, sizeof(*st));
    st->kind = (uint8_t)kind;
    st->src_buf = (uint8_t)src_buf;
    st->dst_buf = (uint8_t)dst_buf;
    st->channel = (uint16_t)channel;
    st->peer = peer;
    st->src_off = src_off;
    st->dst_off = dst_off;
    st->count = count;
    st->dep_off = s->ndeps;
    for (int i = 0; i < ndeps; i++) {
        if (deps[i] < 0)
            continue;
        assert(deps[i] < (int64_t)s->nsteps);
        s->deps[s->ndeps++] = (uint32_t)deps[i];
    }
    st->ndeps = s->ndeps - st->dep_off;
    return s->nsteps++;
}

void core_sched_fini(core_sched_t *sched)
{
    if (!sched)
        return;
    free(sched->steps);
    free(sched->deps);
    memset(sched, 0, sizeof(*sched));
}

int core_sched_supports(herd_algo_t algo, herd_coll_t coll)
{
    if (coll < 0 || coll >= HERD_COLL_COUNT || coll == HERD_COLL_SEND ||
        coll == HERD_COLL_RECV)
        return 0;
    if (coll == HERD_COLL_BARRIER)
        return algo >= HERD_ALGO_AUTO && algo < HERD_ALGO_NCCL;
    if (core_coll_is_v(coll) || coll == HERD_COLL_MONITORED_BARRIER)
        return algo == HERD_ALGO_AUTO || algo == HERD_ALGO_DIRECT;
    switch (algo) {
    case HERD_ALGO_AUTO:
        return 1;
    case HERD_ALGO_RING:
        return coll == HERD_COLL_ALL_REDUCE || coll == HERD_COLL_BROADCAST ||
               coll == HERD_COLL_REDUCE || coll == HERD_COLL_ALL_GATHER ||
               coll == HERD_COLL_REDUCE_SCATTER;
    case HERD_ALGO_TREE:
        return coll == HERD_COLL_ALL_REDUCE;
    case HERD_ALGO_RHD:
        return coll == HERD_COLL_ALL_REDUCE || coll == HERD_COLL_REDUCE_SCATTER;
    case HERD_ALGO_DIRECT:
        return coll == HERD_COLL_ALL_TO_ALL || coll == HERD_COLL_ALL_GATHER ||
               coll == HERD_COLL_GATHER || coll == HERD_COLL_SCATTER ||
               coll == HERD_COLL_REDUCE_SCATTER;
    case HERD_ALGO_BINOMIAL:
        return coll == HERD_COLL_BROADCAST || coll == HERD_COLL_REDUCE ||
               coll == HERD_COLL_GATHER || coll == HERD_COLL_SCATTER;
    case HERD_ALGO_HIER:
    case HERD_ALGO_RD:
        return coll == HERD_COLL_ALL_REDUCE;
    default:
        return 0;
    }
}

/* Small messages are latency bound: fewer rounds (log p) win; large ones
 * are bandwidth bound: the ring moves the minimum 2(p-1)/p * n per rank.
 * Tiny all_reduces take recursive doubling (log2 p rounds of n), medium
 * ones rhd (2 log2 p rounds, 2n in all).
 * `bytes` is the per-rank size of the public call (count * dtype size). */
herd_algo_t core_sched_pick(herd_coll_t coll, int nranks, uint64_t bytes)
{
    const uint64_t small = 64 << 10, tiny = 4 << 10;
    switch (coll) {
    case HERD_COLL_ALL_REDUCE:
        if (bytes <= tiny)
            return HERD_ALGO_RD;
        return bytes <= small && nranks > 2 &&
                       core_sched_supports(HERD_ALGO_RHD, coll)
                   ? HERD_ALGO_RHD
                   : HERD_ALGO_RING;
    case HERD_COLL_BROADCAST:
    case HERD_COLL_REDUCE:
        return bytes <= small ? HERD_ALGO_BINOMIAL : HERD_ALGO_RING;
    case HERD_COLL_ALL_GATHER:
        return bytes * (uint64_t)(nranks > 0 ? nranks : 1) <= small / 2
                   ? HERD_ALGO_DIRECT
                   : HERD_ALGO_RING;
    case HERD_COLL_GATHER:
    case HERD_COLL_SCATTER:
        return HERD_ALGO_BINOMIAL;
    case HERD_COLL_REDUCE_SCATTER:
        return HERD_ALGO_RING;
    case HERD_COLL_ALL_TO_ALL:
        return HERD_ALGO_DIRECT;
    case HERD_COLL_BARRIER:
        return HERD_ALGO_RHD;
    case HERD_COLL_ALL_GATHER_V:
    case HERD_COLL_REDUCE_SCATTER_V:
    case HERD_COLL_ALL_TO_ALL_V:
    case HERD_COLL_MONITORED_BARRIER:
        return HERD_ALGO_DIRECT;
    default:
        return HERD_ALGO_RING;
    }
}

static herd_status_t check_desc(const core_sched_desc_t *d)
{
    if (d->coll < 0 || d->coll >= HERD_COLL_COUNT || d->algo < 0 ||
        d->algo >= HERD_ALGO_COUNT || d->nranks < 1 || d->rank < 0 ||
        d->rank >= d->nranks || d->channels < 1 || d->channels > 65535 ||
        d->ranks_per_node < 0)
        return HERD_ERR_INVALID_ARG;
    if (d->coll != HERD_COLL_BARRIER &&
        d->coll != HERD_COLL_MONITORED_BARRIER && d->elem_size == 0)
        return HERD_ERR_INVALID_ARG;
    if (core_coll_is_v(d->coll) &&
        (!d->counts || (d->coll == HERD_COLL_ALL_TO_ALL_V && !d->recv_counts) ||
         (d->coll != HERD_COLL_ALL_TO_ALL_V && d->counts[d->rank] != d->count)))
        return HERD_ERR_INVALID_ARG;
    int rooted = d->coll == HERD_COLL_BROADCAST ||
                 d->coll == HERD_COLL_REDUCE || d->coll == HERD_COLL_GATHER ||
                 d->coll == HERD_COLL_SCATTER;
    if (rooted && (d->root < 0 || d->root >= d->nranks))
        return HERD_ERR_INVALID_ARG;
    if (d->count > UINT64_MAX / 2 / (uint64_t)d->nranks)
        return HERD_ERR_OVERFLOW;
    return HERD_OK;
}

/* One rank: every collective is a local copy (or nothing). */
static herd_status_t lower_single(core_alg_t *a)
{
    uint64_t n = a->d->count;
    switch (a->d->coll) {
    case HERD_COLL_BROADCAST:
    case HERD_COLL_BARRIER:
    case HERD_COLL_MONITORED_BARRIER:
        return HERD_OK;
    default:
        core_alg_step(a, CORE_STEP_COPY, -1, 0, CORE_BUF_IN, 0, CORE_BUF_OUT, 0,
                      n, NULL, 0);
        return a->err;
    }
}

static herd_status_t dispatch(core_alg_t *a)
{
    if (a->p == 1)
        return lower_single(a);
    if (a->d->coll == HERD_COLL_BARRIER)
        return core_algo_barrier(a);
    if (core_coll_is_v(a->d->coll) || a->d->coll == HERD_COLL_MONITORED_BARRIER)
        return core_algo_v(a);
    switch (a->d->algo) {
    case HERD_ALGO_RING:
        return core_algo_ring(a);
    case HERD_ALGO_BINOMIAL:
        return core_algo_binomial(a);
    case HERD_ALGO_DIRECT:
        return core_algo_direct(a);
    case HERD_ALGO_TREE:
        return core_algo_tree(a);
    case HERD_ALGO_RHD:
        return core_algo_rhd(a);
    case HERD_ALGO_HIER:
        return core_algo_hier(a);
    case HERD_ALGO_RD:
        return core_algo_rd(a);
    default:
        return HERD_ERR_UNSUPPORTED;
    }
}

/* Validates desc, resolves AUTO into *d and sets up a lowering context
 * for it writing into s (which it zeroes). */
static herd_status_t alg_init(const core_sched_desc_t *desc,
                              core_sched_desc_t *d, core_sched_t *s,
                              core_alg_t *a)
{
    herd_status_t st = check_desc(desc);
    if (st != HERD_OK)
        return st;
    *d = *desc;
    if (d->algo == HERD_ALGO_AUTO)
        d->algo = core_sched_pick(d->coll, d->nranks, d->count * d->elem_size);
    if (!core_sched_supports(d->algo, d->coll))
        return HERD_ERR_UNSUPPORTED;
    memset(s, 0, sizeof(*s));
    uint64_t ce = d->elem_size ? d->chunk_bytes / d->elem_size : 0;
    *a = (core_alg_t){.d = d,
                      .s = s,
                      .p = d->nranks,
                      .rank = d->rank,
                      .nch = d->channels,
                      .chunk_elems = d->chunk_bytes == 0 ? UINT64_MAX
                                     : ce                ? ce
                                                         : 1,
                      .err = HERD_OK};
    return HERD_OK;
}

/* all_to_all_v given as a matrix: this rank's row and column. */
static herd_status_t lower_matrix(const core_sched_desc_t *desc,
                                  core_sched_t *out)
{
    size_t p = desc->nranks > 0 ? (size_t)desc->nranks : 1, r = 0;
    if (desc->rank < 0 || desc->rank >= desc->nranks)
        return HERD_ERR_INVALID_ARG;
    r = (size_t)desc->rank;
    size_t *v = malloc(2 * p * sizeof(*v));
    if (!v)
        return HERD_ERR_NO_MEMORY;
    core_sched_desc_t d = *desc;
    d.count = 0; /* as in the API: what this rank sends in all */
    for (size_t q = 0; q < p; q++) {
        v[q] = desc->matrix[r * p + q];
        v[p + q] = desc->matrix[q * p + r];
        d.count += v[q];
    }
    d.matrix = NULL;
    d.counts = v;
    d.recv_counts = v + p;
    herd_status_t st = core_sched_lower(&d, out);
    out->desc = *desc; /* the arrays above are gone after the return */
    free(v);
    return st;
}

herd_status_t core_sched_lower(const core_sched_desc_t *desc, core_sched_t *out)
{
    if (desc->coll == HERD_COLL_ALL_TO_ALL_V && desc->matrix && !desc->counts)
        return lower_matrix(desc, out);
    core_sched_desc_t d;
    core_alg_t a;
    herd_status_t st = alg_init(desc, &d, out, &a);
    if (st != HERD_OK)
        return st;
    out->desc = d;
    a.d = &out->desc;
    st = dispatch(&a);
    if (st == HERD_OK)
        st = a.err;
    if (st != HERD_OK)
        core_sched_fini(out);
    return st;
}

herd_status_t core_sched_counts(const core_sched_desc_t *desc, uint64_t *out,
                                size_t n)
{
    core_sched_desc_t d;
    core_sched_t s; /* receives nothing but scratch_count */
    core_alg_t a;
    herd_status_t st = alg_init(desc, &d, &s, &a);
    if (st != HERD_OK)
        return st;
    uint64_t none;
    a.counts = out ? out : &none; /* non-NULL: counting mode */
    a.counts_cap = out ? n : 0;
    st = dispatch(&a);
    if (st == HERD_OK)
        st = a.err;
    if (st == HERD_OK && a.ncounts != n)
        st = HERD_ERR_INVALID_ARG;
    return st;
}

/* core_sched_rotational and core_sched_rotational_shape. */
static int rotational(const core_sched_desc_t *desc, int except_counts)
{
    core_sched_desc_t d0 = *desc, d;
    core_sched_t s;
    core_alg_t a;
    d0.rank = 0;
    if (alg_init(&d0, &d, &s, &a) != HERD_OK)
        return 0;
    /* mirrors dispatch(): one rank is trivially symmetric, and every
     * algorithm lowers barrier by dissemination (to r + 2^k) */
    if (d.nranks == 1 || d.coll == HERD_COLL_BARRIER)
        return 1;
    return d.algo == HERD_ALGO_RING ? core_ring_rotational(&a, except_counts)
                                    : 0;
}

int core_sched_rotational(const core_sched_desc_t *desc)
{
    return rotational(desc, 0);
}

int core_sched_rotational_shape(const core_sched_desc_t *desc)
{
    return rotational(desc, 1);
}

/* ---- helpers for the algorithm files (declared in sched_algo.h) ---- */

/* core_sched_counts: the step only numbered and its count kept. */
static int64_t alg_count(core_alg_t *a, uint64_t count)
{
    if (a->ncounts < a->counts_cap)
        a->counts[a->ncounts] = count;
    return (int64_t)a->ncounts++;
}

int64_t core_alg_step0(core_alg_t *a, core_step_kind_t kind, int peer,
                       core_buf_t sb, uint64_t so, core_buf_t db, uint64_t dof,
                       uint64_t count, const int64_t *deps, int ndeps)
{
    if (a->err != HERD_OK)
        return -1;
    if (a->counts)
        return alg_count(a, count);
    int64_t i = core_sched_add(a->s, kind, peer, 0, sb, so, db, dof, count,
                               deps, ndeps);
    if (i < 0) {
        a->err = (herd_status_t)i;
        return -1;
    }
    return i;
}

int64_t core_alg_step(core_alg_t *a, core_step_kind_t kind, int peer, int ch,
                      core_buf_t sb, uint64_t so, core_buf_t db, uint64_t dof,
                      uint64_t count, const int64_t *deps, int ndeps)
{
    if (count == 0 || a->err != HERD_OK)
        return -1;
    if (a->counts)
        return alg_count(a, count);
    if (kind == CORE_STEP_SEND)
        db = CORE_BUF_NONE;
    if (kind == CORE_STEP_RECV)
        sb = CORE_BUF_NONE;
    int64_t i = core_sched_add(a->s, kind, peer, ch, sb, so, db, dof, count,
                               deps, ndeps);
    if (i < 0) {
        a->err = (herd_status_t)i;
        return -1;
    }
    return i;
}

uint64_t core_alg_npieces(const core_alg_t *a, uint64_t len)
{
    uint64_t per = (len + (uint64_t)a->nch - 1) / (uint64_t)a->nch;
    return (uint64_t)a->nch * core_alg_nchunks(a, per);
}

uint64_t core_alg_piece(const core_alg_t *a, uint64_t len, uint64_t i, int *ch,
                        uint64_t *off)
{
    uint64_t per = (len + (uint64_t)a->nch - 1) / (uint64_t)a->nch;
    uint64_t nck = core_alg_nchunks(a, per);
    uint64_t c = i / nck, j = i % nck, coff, poff;
    uint64_t clen = core_split(len, (uint64_t)a->nch, c, &coff);
    uint64_t plen = core_split(clen, nck, j, &poff);
    *ch = (int)c;
    *off = coff + poff;
    return plen;
}

int64_t *core_alg_idx(core_alg_t *a, uint64_t n)
{
    int64_t *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v) {
        if (a->err == HERD_OK)
            a->err = HERD_ERR_NO_MEMORY;
        return NULL;
    }
    for (uint64_t i = 0; i < n; i++)
        v[i] = -1;
    return v;
}

void core_wlog_add(core_alg_t *a, core_wlog_t *w, uint64_t off, uint64_t len,
                   int64_t step)
{
    if (step < 0 || len == 0)
        return;
    assert(w->n == 0 || off >= w->off[w->n - 1] + w->len[w->n - 1]);
    if (w->n == w->cap) {
        uint64_t nc = w->cap ? w->cap * 2 : 16;
        uint64_t *o = realloc(w->off, nc * sizeof(*o));
        if (o)
            w->off = o;
        uint64_t *l = realloc(w->len, nc * sizeof(*l));
        if (l)
            w->len = l;
        int64_t *s = realloc(w->step, nc * sizeof(*s));
        if (s)
            w->step = s;
        if (!o || !l || !s) {
            a->err = HERD_ERR_NO_MEMORY;
            return;
        }
        w->cap = nc;
    }
    w->off[w->n] = off;
    w->len[w->n] = len;
    w->step[w->n++] = step;
}

int core_wlog_deps(core_alg_t *a, const core_wlog_t *w, uint64_t off,
                   uint64_t len, int64_t **deps, uint64_t *cap)
{
    uint64_t lo = 0, hi = w->n;
    while (lo < hi) { /* first entry ending after off */
        uint64_t mid = (lo + hi) / 2;
        if (w->off[mid] + w->len[mid] <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    int n = 0;
    for (uint64_t i = lo; i < w->n && w->off[i] < off + len; i++) {
        if ((uint64_t)n == *cap) {
            uint64_t nc = *cap ? *cap * 2 : 16;
            int64_t *d = realloc(*deps, nc * sizeof(*d));
            if (!d) {
                a->err = HERD_ERR_NO_MEMORY;
                return 0;
            }
            *deps = d;
            *cap = nc;
        }
        (*deps)[n++] = w->step[i];
    }
    return n;
}

void core_wlog_clear(core_wlog_t *w)
{
    w->n = 0;
}

void core_wlog_free(core_wlog_t *w)
{
    free(w->off);
    free(w->len);
    free(w->step);
    memset(w, 0, sizeof(*w));
}

int64_t core_alg_next(const core_alg_t *a)
{
    return a->counts ? (int64_t)a->ncounts : (int64_t)a->s->nsteps;
}

/* Appends steps [lo, hi) to deps[n..]; returns the new count. */
static int deps_range(core_alg_t *a, int n, int64_t lo, int64_t hi,
                      int64_t **deps, uint64_t *cap)
{
    uint64_t need = (uint64_t)n + (uint64_t)(hi > lo ? hi - lo : 0);
    if (need > INT_MAX) { /* a step's dependency count is an int */
        a->err = HERD_ERR_OVERFLOW;
        return n;
    }
    if (need > *cap) {
        int64_t *d = realloc(*deps, need * sizeof(*d));
        if (!d) {
            a->err = HERD_ERR_NO_MEMORY;
            return n;
        }
        *deps = d;
        *cap = need;
    }
    for (int64_t s = lo; s < hi; s++)
        (*deps)[n++] = s;
    return n;
}

void core_wlog_msg_after(core_alg_t *a, core_step_kind_t kind, int peer,
                         core_buf_t sb, uint64_t so, core_buf_t db,
                         uint64_t dof, uint64_t len, const core_wlog_t *rd,
                         core_wlog_t *wr, int64_t after_lo, int64_t after_hi,
                         int64_t **deps, uint64_t *cap)
{
    uint64_t np = core_alg_npieces(a, len);
    uint64_t nck = np / (uint64_t)a->nch; /* pieces per channel */
    for (uint64_t i = 0; i < np; i++) {
        int ch;
        uint64_t off, pl = core_alg_piece(a, len, i, &ch, &off);
        int nd = rd ? core_wlog_deps(a, rd, so + off, pl, deps, cap) : 0;
        /* the first piece of a channel opens its connection's queue:
         * the others follow it there */
        if (i % nck == 0)
            nd = deps_range(a, nd, after_lo, after_hi, deps, cap);
        int64_t st = core_alg_step(a, kind, peer, ch, sb, so + off, db,
                                   dof + off, pl, *deps, nd);
        if (wr)
            core_wlog_add(a, wr, dof + off, pl, st);
    }
}

void core_wlog_msg(core_alg_t *a, core_step_kind_t kind, int peer,
                   core_buf_t sb, uint64_t so, core_buf_t db, uint64_t dof,
                   uint64_t len, const core_wlog_t *rd, core_wlog_t *wr,
                   int64_t **deps, uint64_t *cap)
{
    core_wlog_msg_after(a, kind, peer, sb, so, db, dof, len, rd, wr, 0, 0, deps,
                        cap);
}
