/* sim/exec_build.c - turns one member's core/ schedule into the
 * executor's compact form (sim/exec_impl.h): 16-byte step records, the
 * dependency lists inverted (who waits for each step), and the steps of
 * every connection listed in schedule order, which is both the order
 * they start in and the order messages on the connection match in.
 *
 * When the members' schedules are rotations of one another
 * (core_sched_rotational) and offsets are never read (phantom buffers),
 * only the first member's is converted: the others share its arrays and
 * get its connections with the peers rotated (sim_exec_create_rotated),
 * O(connections) instead of O(steps) each. Where only the counts differ
 * (core_sched_rotational_shape: ring all_reduce split unevenly), each
 * member also counts its own (core_sched_counts), O(steps) but without
 * lowering or converting a schedule. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/exec_impl.h"
#include "sim/sym.h"

/* Large per-exec arrays live in huge pages where the kernel allows it: a
 * big run touches them in many places at once and TLB misses dominate. */
static void hint_huge(void *p, size_t n)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(huge - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

static void *big_alloc(size_t n, size_t size, int zero)
{
    void *p = zero ? calloc(n, size) : malloc(n * size);
    if (p && n * size >= ((size_t)4 << 20))
        hint_huge(p, n * size);
    return p;
}

static uint64_t conn_key(int channel, int peer)
{
    return ((uint64_t)(uint32_t)channel << 32) | (uint32_t)peer;
}

uint32_t sim_pcmap_get(const sim_pcmap_t *m, int peer, int channel)
{
    if (m->n < 0)
        return (uint32_t)(uintptr_t)sim_htab_get(&m->h,
                                                 conn_key(channel, peer));
    unsigned blk = (unsigned)channel / SIM_SMALL_CH;
    for (int i = 0; i < m->n; i++)
        if (m->peer[i] == peer && m->blk[i] == blk)
            return m->v[i][(unsigned)channel % SIM_SMALL_CH];
    return 0; /* blk beyond 16 bits was never put: the table spilled */
}

static herd_status_t pcmap_spill(sim_pcmap_t *m)
{
    for (int i = 0; i < m->n; i++)
        for (int c = 0; c < SIM_SMALL_CH; c++)
            if (m->v[i][c] &&
                sim_htab_put(&m->h,
                             conn_key(m->blk[i] * SIM_SMALL_CH + c, m->peer[i]),
                             (void *)(uintptr_t)m->v[i][c]) != HERD_OK)
                return HERD_ERR_NO_MEMORY;
    m->n = -1;
    return HERD_OK;
}

static herd_status_t pcmap_put(sim_pcmap_t *m, int peer, int channel,
                               uint32_t v)
{
    unsigned blk = (unsigned)channel / SIM_SMALL_CH;
    if (m->n >= 0 && blk <= UINT16_MAX && v <= UINT16_MAX) {
        int i = 0;
        while (i < m->n && !(m->peer[i] == peer && m->blk[i] == blk))
            i++;
        if (i < m->n || m->n < SIM_SMALL_KEYS) {
            if (i == m->n) {
                m->peer[m->n] = peer;
                m->blk[m->n++] = (uint16_t)blk;
            }
            m->v[i][(unsigned)channel % SIM_SMALL_CH] = (uint16_t)v;
            return HERD_OK;
        }
    }
    if (m->n >= 0 && pcmap_spill(m) != HERD_OK)
        return HERD_ERR_NO_MEMORY;
    return sim_htab_put(&m->h, conn_key(channel, peer), (void *)(uintptr_t)v);
}

void sim_exec_destroy(sim_exec_t *x)
{
    if (!x)
        return;
    if (x->payload) {
        for (uint32_t i = 0; i < x->nsteps; i++)
            free(x->payload[i]);
        free(x->payload);
    }
    core_sched_fini(&x->s);
    if (x->ws == 1)
        free(x->wait);
    free(x->big);
    free(x->wide);
    free(x->t_step);
    free(x->conns);
    sim_htab_fini(&x->rconn.h);
    free(x->buf[CORE_BUF_SCRATCH]);
    free(x);
}

/* The arrays being built, before they are shared: scratch kept by the
 * world, so that members whose arrays equal another's (most of them)
 * cost no allocation. */
typedef struct sim_xbuild {
    sim_xstep_t *xs;
    uint32_t *rdeps, *list, *cnt, *w0, *ready;
    uint64_t *c64; /* a rotated member's counts (core_sched_counts) */
    size_t nrdeps, nready;
    size_t xcap, lcap, ccap, rcap, wcap, dcap, c64cap; /* elements */
} xbuild_t;

void sim_exec_build_fini(sim_world_t *w)
{
    xbuild_t *b = w->xbuild;
    if (!b)
        return;
    free(b->xs);
    free(b->rdeps);
    free(b->list);
    free(b->cnt);
    free(b->w0);
    free(b->ready);
    free(b->c64);
    free(b);
    w->xbuild = NULL;
}

static int grow(void **p, size_t *cap, size_t need, size_t esize)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 1024;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * esize);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Scratch for n steps, xs zeroed. */
static herd_status_t xbuild_get(sim_world_t *w, size_t n, xbuild_t **out)
{
    if (!w->xbuild && !(w->xbuild = calloc(1, sizeof(xbuild_t))))
        return HERD_ERR_NO_MEMORY;
    xbuild_t *b = w->xbuild;
    if (grow((void **)&b->xs, &b->xcap, n + 1, sizeof(*b->xs)) ||
        grow((void **)&b->list, &b->lcap, n + 1, sizeof(uint32_t)) ||
        grow((void **)&b->cnt, &b->ccap, n + 1, sizeof(uint32_t)) ||
        grow((void **)&b->w0, &b->wcap, n + 1, sizeof(uint32_t)) ||
        grow((void **)&b->ready, &b->dcap, n + 1, sizeof(uint32_t)))
        return HERD_ERR_NO_MEMORY;
    memset(b->xs, 0, (n + 1) * sizeof(*b->xs));
    *out = b;
    return HERD_OK;
}

/* Dependents of each step: inline when there is one, else a run of
 * rdeps (filled in step order, `dep` counting up and then rewound). */
static herd_status_t build_rdeps(xbuild_t *b, const core_sched_t *s)
{
    uint32_t multi = 0;
    for (uint32_t i = 0; i < s->nsteps; i++)
        if (b->xs[i].ndep > 1) {
            b->xs[i].dep = multi;
            multi += b->xs[i].ndep;
        }
    b->nrdeps = multi;
    if (grow((void **)&b->rdeps, &b->rcap, (size_t)multi + 1, sizeof(uint32_t)))
        return HERD_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < s->nsteps; i++) {
        const core_step_t *st = &s->steps[i];
        for (uint32_t j = 0; j < st->ndeps; j++) {
            sim_xstep_t *d = &b->xs[s->deps[st->dep_off + j]];
            if (d->ndep == 1)
                d->dep = i;
            else
                b->rdeps[d->dep++] = i;
        }
    }
    for (uint32_t i = 0; i < s->nsteps; i++)
        if (b->xs[i].ndep > 1)
            b->xs[i].dep -= b->xs[i].ndep;
    return HERD_OK;
}

/* 64-bit counts, when one does not fit in the shared 32-bit array. */
static herd_status_t build_wide(sim_exec_t *x, const core_sched_t *s)
{
    x->wide = malloc((size_t)s->nsteps * sizeof(*x->wide) + 1);
    if (!x->wide)
        return HERD_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < s->nsteps; i++)
        x->wide[i] = s->steps[i].count;
    return HERD_OK;
}

/* The connection of step i (send and receive directions apart), made on
 * first sight. */
static herd_status_t conn_of(sim_exec_t *x, sim_pcmap_t *m, uint32_t *cap,
                             const core_step_t *st, uint32_t *out)
{
    uint32_t c = sim_pcmap_get(m, st->peer, st->channel);
    if (c) {
        *out = c - 1;
        return HERD_OK;
    }
    if (x->nconns == *cap) {
        uint32_t ncap = *cap ? 2 * *cap : 8;
        sim_xconn_t *v = realloc(x->conns, (size_t)ncap * sizeof(*v));
        if (!v)
            return HERD_ERR_NO_MEMORY;
        x->conns = v;
        *cap = ncap;
    }
    x->conns[x->nconns] = (sim_xconn_t){.peer = st->peer,
                                        .channel = st->channel,
                                        .net = XS_NONE,
                                        .rstep = XS_NONE};
    *out = x->nconns++;
    return pcmap_put(m, st->peer, st->channel, *out + 1);
}

/* Step i on its connection: numbered, chained to its predecessor (which
 * it then waits for to start). k->rstep holds the last step so far. */
static herd_status_t chain(sim_exec_t *x, xbuild_t *b, sim_pcmap_t *send,
                           uint32_t *cap, const core_step_t *p, uint32_t i)
{
    /* receive connections are looked up through rconn itself */
    sim_pcmap_t *m = p->kind == CORE_STEP_SEND ? send : &x->rconn;
    uint32_t c;
    herd_status_t st = conn_of(x, m, cap, p, &c);
    if (st != HERD_OK)
        return st;
    b->xs[i].conn = c;
    sim_xconn_t *k = &x->conns[c];
    if (k->n++ > 0) {
        b->xs[k->rstep].next = i;
        b->w0[i]++;
    }
    k->rstep = i;
    return HERD_OK;
}

/* One pass over the schedule: wait words, counts, dependents counted,
 * connections numbered and chained. */
static herd_status_t build_pass(sim_exec_t *x, xbuild_t *b,
                                const core_sched_t *s, sim_pcmap_t *send)
{
    uint32_t cap = 0;
    int wide = 0;
    for (uint32_t i = 0; i < s->nsteps; i++) {
        const core_step_t *st = &s->steps[i];
        if (st->ndeps >= XW_COUNT)
            return HERD_ERR_OVERFLOW;
        b->w0[i] = st->ndeps | ((uint32_t)st->kind << XW_KIND_SHIFT);
        b->cnt[i] = (uint32_t)st->count;
        wide |= st->count > UINT32_MAX;
        /* dependencies point back, so xs[i] is complete here */
        for (uint32_t j = 0; j < st->ndeps; j++)
            b->xs[s->deps[st->dep_off + j]].ndep++;
        b->xs[i].conn = XS_NONE;
        b->xs[i].next = XS_NONE;
        herd_status_t e = st->kind == CORE_STEP_COPY
                              ? HERD_OK
                              : chain(x, b, send, &cap, st, i);
        if (e != HERD_OK)
            return e;
    }
    return wide ? build_wide(x, s) : HERD_OK;
}

/* Each connection's steps in schedule order, for out-of-order
 * deliveries. */
static void build_lists(sim_exec_t *x, xbuild_t *b)
{
    uint32_t off = 0;
    for (uint32_t c = 0; c < x->nconns; c++) {
        x->conns[c].off = off;
        off += x->conns[c].n;
        x->conns[c].n = 0;
        x->conns[c].rstep = XS_NONE;
    }
    for (uint32_t i = 0; i < x->nsteps; i++) {
        uint32_t c = b->xs[i].conn;
        if (c == XS_NONE)
            continue;
        sim_xconn_t *k = &x->conns[c];
        if (k->n == 0)
            k->rstep = i;
        b->list[k->off + k->n++] = i;
    }
}

/* Steps ready at the start (waiting for nothing), in reverse order:
 * the work list is a stack, so they start in schedule order. */
static void build_ready(xbuild_t *b, uint32_t nsteps)
{
    b->nready = 0;
    for (uint32_t i = nsteps; i-- > 0;)
        if ((b->w0[i] & XW_COUNT) == 0)
            b->ready[b->nready++] = i;
}

/* Waits of the steps that wait for XB_BIG or more (`nbig` of them),
 * counted apart; none in most schedules, and then no array. */
static herd_status_t big_counts(sim_exec_t *x, const uint32_t *w0, size_t nbig)
{
    if (nbig == 0)
        return HERD_OK;
    x->big = calloc((size_t)x->nsteps + 1, sizeof(*x->big));
    if (!x->big)
        return HERD_ERR_NO_MEMORY;
    for (size_t i = 0; i < x->nsteps; i++)
        if ((w0[i] & XW_COUNT) >= XB_BIG)
            x->big[i] = w0[i] & XW_COUNT;
    return HERD_OK;
}

/* Initial wait bytes from w0, `stride` apart, `copies` side by side;
 * returns how many steps wait for XB_BIG or more. */
static size_t fill_wait(uint8_t *wait, const uint32_t *w0, size_t n,
                        size_t stride, size_t copies)
{
    size_t nbig = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = xb_init(w0[i]);
        if (copies == 1)
            wait[i * stride] = b;
        else
            memset(wait + i * stride, b, copies);
        nbig += (w0[i] & XW_COUNT) >= XB_BIG;
    }
    return nbig;
}

/* The member's wait bytes, from the shared initial words `w0`: a column
 * of the instance's interleaved pool when w0 is the pool's template (the
 * pool is filled for every member at once, row by row, and what it holds
 * is known from then on: a rotated member costs no pass over the steps),
 * else its own. */
static herd_status_t wait_bytes(sim_exec_t *x, const uint32_t *w0)
{
    sim_inst_t *inst = x->inst;
    /* a symmetric instance runs one node's members, the representatives */
    size_t n = x->nsteps,
           p = (size_t)(sim_sym_on(inst) ? x->w->sym->g : inst->p);
    if (!inst->wpool && n > 0 && p > 1) {
        inst->wpool = big_alloc(n * p, 1, 0);
        inst->wpool_tmpl = w0;
        if (inst->wpool)
            inst->wpool_nbig = fill_wait(inst->wpool, w0, n, p, p);
    }
    if (inst->wpool && inst->wpool_tmpl == w0) {
        x->wait = inst->wpool + x->member;
        x->ws = (uint32_t)p;
        return big_counts(x, w0, inst->wpool_nbig);
    }
    x->wait = big_alloc(n + 1, 1, 0);
    if (!x->wait)
        return HERD_ERR_NO_MEMORY;
    x->ws = 1;
    return big_counts(x, w0, fill_wait(x->wait, w0, n, 1, 1));
}

/* Copies what the executor needs from the schedule. */
static herd_status_t build_steps(sim_exec_t *x, xbuild_t *b,
                                 const core_sched_t *s)
{
    sim_pcmap_t *send = calloc(1, sizeof(*send));
    herd_status_t st = send ? build_pass(x, b, s, send) : HERD_ERR_NO_MEMORY;
    if (send)
        sim_htab_fini(&send->h);
    free(send);
    if (st == HERD_OK)
        st = build_rdeps(b, s);
    if (st == HERD_OK) {
        build_lists(x, b);
        build_ready(b, x->nsteps);
    }
    return st;
}

/* A hash of a sample of the words (memcmp decides): arrays that differ
 * usually differ everywhere, e.g. the rotated block sizes of a ring. */
static uint64_t blob_hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL ^ len, w;
    size_t words = len / 8, step = words / 64 + 1;
    for (size_t i = 0; i < words; i += step) {
        memcpy(&w, p + 8 * i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    for (size_t i = 8 * words; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* The instance's copy of `data` (len bytes): an equal array already
 * shared, else a new copy. */
static herd_status_t share(sim_inst_t *inst, const void *data, size_t len,
                           const void **out)
{
    uint64_t h = blob_hash(data, len);
    for (sim_blob_t *b = inst->blobs; b; b = b->next)
        if (b->hash == h && b->len == len && memcmp(b->data, data, len) == 0) {
            *out = b->data;
            return HERD_OK;
        }
    sim_blob_t *b = malloc(sizeof(*b));
    void *copy = big_alloc(len + 1, 1, 0);
    if (!b || !copy) {
        free(b);
        free(copy);
        return HERD_ERR_NO_MEMORY;
    }
    memcpy(copy, data, len);
    *b = (sim_blob_t){.next = inst->blobs, .hash = h, .len = len, .data = copy};
    inst->blobs = b;
    *out = copy;
    return HERD_OK;
}

static herd_status_t share_all(sim_exec_t *x, xbuild_t *b,
                               const uint32_t **w0_out)
{
    size_t n = x->nsteps;
    const void *xs, *rd, *list, *cnt, *w0, *ready;
    herd_status_t st = share(x->inst, b->xs, n * sizeof(*b->xs), &xs);
    if (st == HERD_OK)
        st = share(x->inst, b->rdeps, b->nrdeps * sizeof(uint32_t), &rd);
    if (st == HERD_OK)
        st = share(x->inst, b->list, n * sizeof(uint32_t), &list);
    if (st == HERD_OK)
        st = share(x->inst, b->cnt, n * sizeof(uint32_t), &cnt);
    if (st == HERD_OK)
        st = share(x->inst, b->w0, n * sizeof(uint32_t), &w0);
    if (st == HERD_OK)
        st = share(x->inst, b->ready, b->nready * sizeof(uint32_t), &ready);
    if (st != HERD_OK)
        return st;
    x->ready = ready;
    x->nready = (uint32_t)b->nready;
    x->xs = xs;
    x->rdeps = rd;
    x->list = list;
    x->cnt = cnt;
    *w0_out = w0;
    return wait_bytes(x, w0);
}

void sim_exec_blobs_free(sim_inst_t *inst)
{
    if (inst->rot) {
        free(inst->rot->conns);
        free(inst->rot);
        inst->rot = NULL;
    }
    free(inst->wpool);
    inst->wpool = NULL;
    for (sim_blob_t *b = inst->blobs, *n; b; b = n) {
        n = b->next;
        free(b->data);
        free(b);
    }
    inst->blobs = NULL;
}

static herd_status_t setup_buffers(sim_exec_t *x, const sim_req_t *req)
{
    const core_coll_args_t *a = &req->args;
    int p = x->inst->p;
    x->buf[CORE_BUF_IN] = (uint8_t *)(uintptr_t)a->sendbuf;
    x->buf[CORE_BUF_OUT] = a->recvbuf;
    x->buflen[CORE_BUF_IN] = a->sendbuf ? core_args_send_count(a, p) : 0;
    x->buflen[CORE_BUF_OUT] = a->recvbuf ? core_args_recv_count(a, p) : 0;
    x->buflen[CORE_BUF_SCRATCH] = x->s.scratch_count; /* real only */
    if (!x->real)
        return HERD_OK;
    /* In place: the schedules of all_reduce and reduce are verified safe
     * with IN and OUT aliased; the others may write OUT before they have
     * read all of IN (all_to_all, reduce_scatter), so IN gets a private
     * copy after the scratch, as the real engines do. */
    size_t sb = (size_t)x->buflen[CORE_BUF_IN] * x->esize,
           rb = (size_t)x->buflen[CORE_BUF_OUT] * x->esize,
           scr = (size_t)x->s.scratch_count * x->esize;
    const uint8_t *in = a->sendbuf, *out = a->recvbuf;
    int alias_ok =
        (a->coll == HERD_COLL_ALL_REDUCE || a->coll == HERD_COLL_REDUCE) &&
        in == out;
    int copy = a->coll != HERD_COLL_BROADCAST && !alias_ok && sb && rb &&
               in < out + rb && out < in + sb;
    if (scr || copy) {
        x->buf[CORE_BUF_SCRATCH] = calloc(scr + (copy ? sb : 0), 1);
        if (!x->buf[CORE_BUF_SCRATCH])
            return HERD_ERR_NO_MEMORY;
        if (copy) {
            memcpy(x->buf[CORE_BUF_SCRATCH] + scr, in, sb);
            x->buf[CORE_BUF_IN] = x->buf[CORE_BUF_SCRATCH] + scr;
        }
    }
    x->payload = calloc((size_t)x->nsteps + 1, sizeof(void *));
    return x->payload ? HERD_OK : HERD_ERR_NO_MEMORY;
}

/* A member's executor with nothing built yet. */
static sim_exec_t *exec_new(sim_world_t *w, sim_inst_t *inst, int member,
                            sim_req_t *req, uint32_t nsteps)
{
    sim_exec_t *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->w = w;
    x->inst = inst;
    x->member = member;
    x->req = req;
    x->world_rank = sim_inst_world_rank(inst, member);
    x->rank = &w->ranks[x->world_rank];
    x->esize = herd_dtype_size(inst->args.dtype);
    x->real = w->opts.real_buffers != 0;
    x->rdv = inst->rdv;
    x->nsteps = x->nleft = nsteps;
    w->steps_total += nsteps; /* progress (herd_sim_progress_t) */
    if (w->steplog && nsteps) /* no room: this one has no records */
        x->t_step = calloc(nsteps, sizeof(*x->t_step));
    return x;
}

herd_status_t sim_exec_create(sim_world_t *w, sim_inst_t *inst, int member,
                              sim_req_t *req, core_sched_t *sched,
                              sim_exec_t **out)
{
    sim_exec_t *x = exec_new(w, inst, member, req, sched->nsteps);
    if (!x)
        return HERD_ERR_NO_MEMORY;
    xbuild_t *b = NULL;
    const uint32_t *w0 = NULL;
    herd_status_t st = xbuild_get(w, sched->nsteps, &b);
    if (st == HERD_OK)
        st = build_steps(x, b, sched);
    if (st == HERD_OK)
        st = share_all(x, b, &w0);
    if (x->real) {
        x->s = *sched; /* taken over: offsets and buffers */
        memset(sched, 0, sizeof(*sched));
    } else {
        core_sched_fini(sched);
    }
    if (st == HERD_OK)
        st = setup_buffers(x, req);
    if (st != HERD_OK) {
        sim_exec_destroy(x);
        return st;
    }
    x->w0 = w0;
    *out = x;
    return HERD_OK;
}

herd_status_t sim_exec_keep_rotation(sim_inst_t *inst, const sim_exec_t *x,
                                     const core_sched_desc_t *counts)
{
    /* offsets (real buffers) are per member, and so are 64-bit counts
     * unless every member counts its own */
    if (inst->rot || x->real || (x->wide && !counts))
        return HERD_OK;
    sim_rot_t *t = calloc(1, sizeof(*t));
    size_t n = x->nconns;
    sim_xconn_t *c = malloc((n ? n : 1) * sizeof(*c));
    if (!t || !c) {
        free(t);
        free(c);
        return HERD_ERR_NO_MEMORY;
    }
    memcpy(c, x->conns, n * sizeof(*c));
    *t = (sim_rot_t){.member = x->member,
                     .nsteps = x->nsteps,
                     .nconns = x->nconns,
                     .nready = x->nready,
                     .conns = c,
                     .xs = x->xs,
                     .rdeps = x->rdeps,
                     .list = x->list,
                     .cnt = x->cnt,
                     .ready = x->ready,
                     .w0 = x->w0,
                     .own_counts = counts != NULL};
    if (counts)
        t->desc = *counts;
    inst->rot = t;
    return HERD_OK;
}

/* The template's connections with peers rotated from its member to x's;
 * receive connections (those whose first step is not a send) entered in
 * rconn in connection order, as the build pass does. */
static herd_status_t rotate_conns(sim_exec_t *x, const sim_rot_t *t)
{
    int p = x->inst->p, shift = x->member - t->member + p;
    x->conns = malloc((t->nconns ? t->nconns : 1) * sizeof(*x->conns));
    if (!x->conns)
        return HERD_ERR_NO_MEMORY;
    x->nconns = t->nconns;
    for (uint32_t c = 0; c < t->nconns; c++) {
        sim_xconn_t *k = &x->conns[c];
        *k = t->conns[c];
        k->peer = (k->peer + shift) % p;
        if (xw_kind(t->w0[t->list[k->off]]) != CORE_STEP_SEND &&
            pcmap_put(&x->rconn, k->peer, (int)k->channel, c + 1) != HERD_OK)
            return HERD_ERR_NO_MEMORY;
    }
    return HERD_OK;
}

/* Member x's counts where they differ from the template's: counted by
 * core/ into 64-bit scratch, then shared in 32 bits with any member's
 * equal ones, or x's own 64-bit array when one does not fit. */
static herd_status_t rotated_counts(sim_exec_t *x, const sim_rot_t *t)
{
    size_t n = t->nsteps;
    sim_world_t *w = x->w;
    if (!w->xbuild && !(w->xbuild = calloc(1, sizeof(xbuild_t))))
        return HERD_ERR_NO_MEMORY;
    xbuild_t *b = w->xbuild;
    if (grow((void **)&b->c64, &b->c64cap, n + 1, sizeof(uint64_t)) ||
        grow((void **)&b->cnt, &b->ccap, n + 1, sizeof(uint32_t)))
        return HERD_ERR_NO_MEMORY;
    core_sched_desc_t d = t->desc;
    d.rank = x->member;
    herd_status_t st = core_sched_counts(&d, b->c64, n);
    if (st != HERD_OK)
        return st;
    int wide = 0;
    for (size_t i = 0; i < n; i++) {
        b->cnt[i] = (uint32_t)b->c64[i];
        wide |= b->c64[i] > UINT32_MAX;
    }
    const void *cnt = t->cnt; /* not read when wide */
    if (!wide)
        st = share(x->inst, b->cnt, n * sizeof(uint32_t), &cnt);
    x->cnt = cnt;
    if (!wide || st != HERD_OK)
        return st;
    x->wide = malloc(n * sizeof(*x->wide) + 1);
    if (!x->wide)
        return HERD_ERR_NO_MEMORY;
    memcpy(x->wide, b->c64, n * sizeof(*x->wide));
    return HERD_OK;
}

herd_status_t sim_exec_create_rotated(sim_world_t *w, sim_inst_t *inst,
                                      int member, sim_req_t *req,
                                      sim_exec_t **out)
{
    const sim_rot_t *t = inst->rot;
    sim_exec_t *x = exec_new(w, inst, member, req, t->nsteps);
    if (!x)
        return HERD_ERR_NO_MEMORY;
    x->xs = t->xs;
    x->rdeps = t->rdeps;
    x->list = t->list;
    x->cnt = t->cnt;
    x->ready = t->ready;
    x->nready = t->nready;
    x->w0 = t->w0;
    herd_status_t st = rotate_conns(x, t);
    if (st == HERD_OK && t->own_counts)
        st = rotated_counts(x, t);
    if (st == HERD_OK)
        st = wait_bytes(x, t->w0);
    if (st == HERD_OK)
        st = setup_buffers(x, req);
    if (st != HERD_OK) {
        sim_exec_destroy(x);
        return st;
    }
    *out = x;
    return HERD_OK;
}
