/* core/sched_exec.c - verifier, part three: symbolic execution of all
 * ranks' schedules and the output check.
 *
 * A step runs once its dependencies and the earlier steps on its
 * connection have run; a receive also needs its message. Which ready step
 * runs next is the order policy: in order, sends first, sends last and
 * newest first, random, and rendezvous (a send runs only together with its
 * receive, as with unbuffered transports). Sends snapshot their data when
 * they run, so a missing dependency shows up under some order as stale or
 * overwritten data; a missing message or a cycle shows up as a deadlock.
 * all_reduce and reduce are also run with IN and OUT aliased (in place). */
#include <stdlib.h>
#include <string.h>

#include "core/sched_verify.h"

enum { POL_ORDER, POL_SENDS_FIRST, POL_SENDS_LAST, POL_RANDOM, POL_RDV };
static const char *const pol_names[] = {"in order", "sends first",
                                        "sends last, newest first", "random",
                                        "rendezvous"};

typedef struct vexec {
    core_verify_t *v;
    int pol, alias;
    uint64_t rng, seed;
    uint32_t *pend;
    uint8_t *done, *armed;
    uint32_t *q[2];
    uint32_t qh[2], qt[2];
    uint64_t **mem; /* p * 3: IN, OUT, SCRATCH per rank */
    uint64_t *store, *pool, *sums;
    uint64_t *know; /* barrier: ranks each step has heard from */
    uint32_t W;
} vexec_t;

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t val(uint64_t seed, int r, uint64_t e)
{
    return mix(mix(seed + (uint64_t)r) + e);
}

static uint64_t rnd(vexec_t *x)
{
    x->rng ^= x->rng << 13;
    x->rng ^= x->rng >> 7;
    x->rng ^= x->rng << 17;
    return x->rng;
}

static void push(vexec_t *x, uint32_t g)
{
    int qi = 1;
    if ((x->pol == POL_SENDS_FIRST || x->pol == POL_SENDS_LAST) &&
        core_verify_step(x->v, g)->kind == CORE_STEP_SEND)
        qi = 0;
    x->q[qi][x->qt[qi]++] = g;
}

static int pop(vexec_t *x, uint32_t *g)
{
    int first = x->pol == POL_SENDS_FIRST ? 0 : 1;
    for (int k = 0; k < 2; k++) {
        int qi = k == 0 ? first : 1 - first;
        if (x->qh[qi] == x->qt[qi])
            continue;
        if (x->pol == POL_SENDS_LAST) {
            *g = x->q[qi][--x->qt[qi]];
        } else if (x->pol == POL_RANDOM) {
            uint32_t n = x->qt[qi] - x->qh[qi];
            uint32_t i = x->qh[qi] + (uint32_t)(rnd(x) % n);
            *g = x->q[qi][i];
            x->q[qi][i] = x->q[qi][--x->qt[qi]];
        } else {
            *g = x->q[qi][x->qh[qi]++];
        }
        return 1;
    }
    return 0;
}

static void ready(vexec_t *x, uint32_t g)
{
    const core_step_t *st = core_verify_step(x->v, g);
    if (x->pol != POL_RDV || st->kind == CORE_STEP_COPY) {
        push(x, g);
        return;
    }
    x->armed[g] = 1;
    uint32_t m = x->v->match[g];
    if (x->armed[m])
        push(x, st->kind == CORE_STEP_SEND ? g : m);
}

static uint64_t *bufp(vexec_t *x, int r, int buf, uint64_t off)
{
    return x->mem[(size_t)r * 3 + (size_t)buf] + off;
}

static void learn(vexec_t *x, uint32_t g)
{
    core_verify_t *v = x->v;
    const core_step_t *st = core_verify_step(v, g);
    int r = v->rank_of[g];
    uint64_t *k = x->know + (size_t)g * x->W;
    k[r / 64] |= 1ull << (r % 64);
    const uint32_t *deps = v->sch[r].deps + st->dep_off;
    for (uint32_t i = 0; i <= st->ndeps; i++) {
        uint32_t from = i < st->ndeps ? (uint32_t)v->base[r] + deps[i]
                        : st->kind == CORE_STEP_SEND ? CORE_VERIFY_NONE
                                                     : v->match[g];
        if (from == CORE_VERIFY_NONE)
            continue;
        for (uint32_t w = 0; w < x->W; w++)
            k[w] |= x->know[(size_t)from * x->W + w];
    }
}

static void exec_step(vexec_t *x, uint32_t g)
{
    core_verify_t *v = x->v;
    const core_step_t *st = core_verify_step(v, g);
    int r = v->rank_of[g];
    size_t n = (size_t)st->count;
    x->done[g] = 1;
    if (x->know)
        learn(x, g);
    if (n == 0)
        return;
    const uint64_t *src = st->kind == CORE_STEP_RECV
                              ? x->pool + v->payload[v->match[g]]
                              : bufp(x, r, st->src_buf, st->src_off);
    if (st->kind == CORE_STEP_SEND) {
        memcpy(x->pool + v->payload[g], src, n * sizeof(*src));
        return;
    }
    uint64_t *dst = bufp(x, r, st->dst_buf, st->dst_off);
    if (st->kind == CORE_STEP_RECV_REDUCE) {
        const uint64_t *msg = x->pool + v->payload[v->match[g]];
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i] + msg[i];
    } else if (dst != src) {
        memmove(dst, src, n * sizeof(*dst));
    }
}

static void release(vexec_t *x, uint32_t g)
{
    core_verify_t *v = x->v;
    for (uint32_t e = v->out_off[g]; e < v->out_off[g + 1]; e++)
        if (--x->pend[v->out_idx[e]] == 0)
            ready(x, v->out_idx[e]);
    if (x->pol != POL_RDV && core_verify_step(v, g)->kind == CORE_STEP_SEND &&
        --x->pend[v->match[g]] == 0)
        ready(x, v->match[g]);
}

/* Why step g cannot run (for the deadlock report). */
static void blocked_reason(vexec_t *x, uint32_t g, char *buf, size_t len)
{
    core_verify_t *v = x->v;
    const core_step_t *st = core_verify_step(v, g);
    int r = v->rank_of[g];
    char a[128], b[128];
    core_verify_step_str(v, g, a, sizeof(a));
    for (uint32_t i = 0; i < st->ndeps; i++) {
        uint32_t d = (uint32_t)v->base[r] + v->sch[r].deps[st->dep_off + i];
        if (!x->done[d]) {
            snprintf(buf, len, "%s waits for its step %u", a,
                     (unsigned)(d - v->base[r]));
            return;
        }
    }
    if (v->prev[g] != CORE_VERIFY_NONE && !x->done[v->prev[g]])
        snprintf(buf, len,
                 "%s waits for the earlier step %u on its "
                 "connection",
                 a, (unsigned)(v->prev[g] - v->base[r]));
    else if (st->kind != CORE_STEP_COPY)
        snprintf(buf, len, "%s waits for its peer: %s", a,
                 core_verify_step_str(v, v->match[g], b, sizeof(b)));
    else
        snprintf(buf, len, "%s cannot start", a);
}

static void report_deadlock(vexec_t *x, uint32_t ran)
{
    core_verify_t *v = x->v;
    char why[3][400];
    int nw = 0;
    for (int r = 0; r < v->p && nw < 3; r++)
        for (uint64_t g = v->base[r]; g < v->base[r + 1]; g++)
            if (!x->done[g]) {
                blocked_reason(x, (uint32_t)g, why[nw++], sizeof(why[0]));
                break;
            }
    core_verify_fail(v, "deadlock (order '%s'): %u of %u steps ran; %s%s%s%s%s",
                     pol_names[x->pol], ran, v->n, why[0], nw > 1 ? "; " : "",
                     nw > 1 ? why[1] : "", nw > 2 ? "; " : "",
                     nw > 2 ? why[2] : "");
}

static void init_data(vexec_t *x)
{
    core_verify_t *v = x->v;
    const core_sched_desc_t *d = v->d;
    for (int r = 0; r < v->p; r++)
        for (int b = 0; b < 3; b++) {
            uint64_t n = b == CORE_BUF_SCRATCH ? v->sch[r].scratch_count
                                               : core_verify_bufsize(d, r, b);
            uint64_t *m = x->mem[(size_t)r * 3 + (size_t)b];
            if (x->alias && b == CORE_BUF_OUT)
                continue; /* same memory as IN */
            int data = b == CORE_BUF_IN ||
                       (d->coll == HERD_COLL_BROADCAST && r == d->root);
            for (uint64_t e = 0; e < n; e++)
                m[e] =
                    data ? val(x->seed,
                               d->coll == HERD_COLL_BROADCAST ? d->root : r, e)
                         : val(x->seed ^ (0x100u + (unsigned)b), r, e);
        }
}

/* Expected value of rank r's OUT[i]. */
/* The uneven kinds: out[i] of rank r. Blocks are found by walking the
 * counts (the verifier's configurations are small). */
static uint64_t expect_v(const vexec_t *x, int r, uint64_t i)
{
    const core_sched_desc_t *d = x->v->d;
    int p = d->nranks;
    size_t pp = (size_t)p;
    if (d->coll == HERD_COLL_REDUCE_SCATTER_V)
        return x->sums[core_verify_vsum(d->counts, r, 1) + i];
    for (int q = 0; q < p; q++) {
        uint64_t len = d->coll == HERD_COLL_ALL_GATHER_V
                           ? d->counts[q]
                           : d->matrix[(size_t)q * pp + (size_t)r];
        if (i < len)
            return d->coll == HERD_COLL_ALL_GATHER_V
                       ? val(x->seed, q, i)
                       : val(x->seed, q,
                             core_verify_vsum(d->matrix + (size_t)q * pp, r,
                                              1) +
                                 i);
        i -= len;
    }
    return 0;
}

static uint64_t expect(const vexec_t *x, int r, uint64_t i)
{
    const core_sched_desc_t *d = x->v->d;
    uint64_t n = d->count;
    switch (d->coll) {
    case HERD_COLL_ALL_GATHER_V:
    case HERD_COLL_REDUCE_SCATTER_V:
    case HERD_COLL_ALL_TO_ALL_V:
        return expect_v(x, r, i);
    case HERD_COLL_ALL_REDUCE:
    case HERD_COLL_REDUCE:
        return x->sums[i];
    case HERD_COLL_REDUCE_SCATTER:
        return x->sums[(uint64_t)r * n + i];
    case HERD_COLL_BROADCAST:
        return val(x->seed, d->root, i);
    case HERD_COLL_ALL_GATHER:
    case HERD_COLL_GATHER:
        return val(x->seed, (int)(i / n), i % n);
    case HERD_COLL_SCATTER:
        return val(x->seed, d->root, (uint64_t)r * n + i);
    case HERD_COLL_ALL_TO_ALL:
        return val(x->seed, (int)(i / n), (uint64_t)r * n + i % n);
    default:
        return 0;
    }
}

static void check_barrier(vexec_t *x)
{
    core_verify_t *v = x->v;
    uint64_t *all = calloc(x->W, sizeof(*all));
    if (!all) {
        core_verify_fail(v, "out of memory");
        return;
    }
    for (int r = 0; r < v->p && !v->failed; r++) {
        memset(all, 0, x->W * sizeof(*all));
        all[r / 64] |= 1ull << (r % 64);
        for (uint64_t g = v->base[r]; g < v->base[r + 1]; g++)
            for (uint32_t w = 0; w < x->W; w++)
                all[w] |= x->know[g * x->W + w];
        for (int q = 0; q < v->p; q++)
            if (!(all[q / 64] >> (q % 64) & 1)) {
                core_verify_fail(v,
                                 "barrier: rank %d can finish without "
                                 "hearing from rank %d",
                                 r, q);
                break;
            }
    }
    free(all);
}

static void check_outputs(vexec_t *x)
{
    core_verify_t *v = x->v;
    if (x->know) {
        check_barrier(x);
        return;
    }
    for (int r = 0; r < v->p; r++) {
        uint64_t n = core_verify_bufsize(v->d, r, CORE_BUF_OUT);
        const uint64_t *out = bufp(x, r, CORE_BUF_OUT, 0);
        for (uint64_t i = 0; i < n; i++)
            if (out[i] != expect(x, r, i)) {
                core_verify_fail(v,
                                 "order '%s'%s: rank %d out[%llu] is "
                                 "wrong (missing, doubled or stale data)",
                                 pol_names[x->pol], x->alias ? " in place" : "",
                                 r, (unsigned long long)i);
                return;
            }
    }
}

static void run(vexec_t *x, int pol, int alias, uint64_t rng)
{
    core_verify_t *v = x->v;
    x->pol = pol;
    x->alias = alias;
    x->rng = rng | 1;
    memset(x->done, 0, v->n);
    memset(x->armed, 0, v->n);
    memset(x->qh, 0, sizeof(x->qh));
    memset(x->qt, 0, sizeof(x->qt));
    if (x->know)
        memset(x->know, 0, (size_t)v->n * x->W * sizeof(*x->know));
    for (int r = 0; r < v->p; r++)
        x->mem[(size_t)r * 3 + CORE_BUF_OUT] =
            alias ? x->mem[(size_t)r * 3 + CORE_BUF_IN]
                  : x->mem[(size_t)v->p * 3 + (size_t)r];
    init_data(x);
    for (uint32_t g = 0; g < v->n; g++) {
        const core_step_t *st = core_verify_step(v, g);
        x->pend[g] = st->ndeps + (v->prev[g] != CORE_VERIFY_NONE) +
                     (pol != POL_RDV && (st->kind == CORE_STEP_RECV ||
                                         st->kind == CORE_STEP_RECV_REDUCE));
    }
    for (uint32_t g = 0; g < v->n; g++)
        if (x->pend[g] == 0)
            ready(x, g);
    uint32_t ran = 0, g;
    while (pop(x, &g)) {
        exec_step(x, g);
        release(x, g);
        ran++;
        if (pol == POL_RDV && core_verify_step(v, g)->kind == CORE_STEP_SEND) {
            exec_step(x, v->match[g]);
            release(x, v->match[g]);
            ran++;
        }
    }
    if (ran < v->n)
        report_deadlock(x, ran);
    else
        check_outputs(x);
}

static uint64_t total_mem(const core_verify_t *v)
{
    uint64_t t = 0;
    for (int r = 0; r < v->p; r++)
        t += core_verify_bufsize(v->d, r, CORE_BUF_IN) +
             core_verify_bufsize(v->d, r, CORE_BUF_OUT) +
             v->sch[r].scratch_count;
    return t;
}

static herd_status_t setup(vexec_t *x)
{
    core_verify_t *v = x->v;
    const core_sched_desc_t *d = v->d;
    size_t n = v->n ? v->n : 1;
    uint64_t tm = total_mem(v);
    if (tm > (1ull << 28) || v->pool_n > (1ull << 28)) {
        core_verify_fail(v, "configuration too large to verify");
        return HERD_ERR_INVALID_ARG;
    }
    x->pend = malloc(n * sizeof(*x->pend));
    x->done = malloc(n);
    x->armed = malloc(n);
    x->q[0] = malloc(n * sizeof(*x->q[0]));
    x->q[1] = malloc(n * sizeof(*x->q[1]));
    x->mem = calloc((size_t)v->p * 4, sizeof(*x->mem));
    x->store = malloc((tm ? tm : 1) * sizeof(*x->store));
    x->pool = malloc((v->pool_n ? v->pool_n : 1) * sizeof(*x->pool));
    if (!x->pend || !x->done || !x->armed || !x->q[0] || !x->q[1] || !x->mem ||
        !x->store || !x->pool)
        return HERD_ERR_NO_MEMORY;
    uint64_t *m = x->store;
    for (int r = 0; r < v->p; r++) {
        x->mem[(size_t)r * 3 + CORE_BUF_IN] = m;
        m += core_verify_bufsize(d, r, CORE_BUF_IN);
        x->mem[(size_t)v->p * 3 + (size_t)r] = m;
        m += core_verify_bufsize(d, r, CORE_BUF_OUT);
        x->mem[(size_t)r * 3 + CORE_BUF_SCRATCH] = m;
        m += v->sch[r].scratch_count;
    }
    if (d->coll == HERD_COLL_BARRIER ||
        d->coll == HERD_COLL_MONITORED_BARRIER) {
        x->W = (uint32_t)((v->p + 63) / 64);
        x->know = malloc(n * x->W * sizeof(*x->know));
        if (!x->know)
            return HERD_ERR_NO_MEMORY;
    }
    return HERD_OK;
}

/* Sums over ranks of every input index, for the reducing collectives. */
static herd_status_t make_sums(vexec_t *x)
{
    const core_sched_desc_t *d = x->v->d;
    uint64_t n = d->count;
    if (d->coll == HERD_COLL_REDUCE_SCATTER)
        n *= (uint64_t)d->nranks;
    else if (d->coll == HERD_COLL_REDUCE_SCATTER_V)
        n = core_verify_vsum(d->counts, d->nranks, 1);
    else if (d->coll != HERD_COLL_ALL_REDUCE && d->coll != HERD_COLL_REDUCE)
        return HERD_OK;
    x->sums = calloc(n ? n : 1, sizeof(*x->sums));
    if (!x->sums)
        return HERD_ERR_NO_MEMORY;
    for (int r = 0; r < d->nranks; r++)
        for (uint64_t e = 0; e < n; e++)
            x->sums[e] += val(x->seed, r, e);
    return HERD_OK;
}

static void vexec_free(vexec_t *x)
{
    free(x->pend);
    free(x->done);
    free(x->armed);
    free(x->q[0]);
    free(x->q[1]);
    free(x->mem);
    free(x->store);
    free(x->pool);
    free(x->sums);
    free(x->know);
}

herd_status_t core_verify_exec_all(core_verify_t *v)
{
    const core_sched_desc_t *d = v->d;
    vexec_t x = {.v = v};
    x.seed = mix(0x6865726475ull ^ ((uint64_t)d->nranks << 32) ^ d->count ^
                 ((uint64_t)d->coll << 20) ^ ((uint64_t)d->algo << 24));
    herd_status_t st = setup(&x);
    if (st == HERD_OK)
        st = make_sums(&x);
    int can_alias =
        d->coll == HERD_COLL_ALL_REDUCE || d->coll == HERD_COLL_REDUCE;
    static const int runs[][2] = {
        {POL_ORDER, 0},       {POL_SENDS_FIRST, 0}, {POL_SENDS_LAST, 0},
        {POL_RANDOM, 0},      {POL_RANDOM, 0},      {POL_RDV, 0},
        {POL_SENDS_FIRST, 1}, {POL_SENDS_LAST, 1},  {POL_RANDOM, 1}};
    for (size_t i = 0; st == HERD_OK && i < sizeof(runs) / sizeof(runs[0]);
         i++) {
        if (runs[i][1] && !can_alias)
            continue;
        run(&x, runs[i][0], runs[i][1], mix(x.seed + i));
        if (v->failed)
            st = HERD_ERR_MISMATCH;
    }
    vexec_free(&x);
    return st;
}
