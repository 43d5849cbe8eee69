/* core/sched_run.c - a transport-agnostic executor of one rank's
 * schedule (see sched_run.h): lowering, buffers, dependency counting,
 * per-connection posting order, staged receive-reduces and completion.
 *
 * Every step passes through one work list, so nothing recurses however
 * long the dependency chains: a step is (re)examined when it is first
 * seen, when its dependencies are done, when the previous step of its
 * connection has been posted, and when its message arrives. */
#include <stdlib.h>
#include <string.h>

#include "core/reduce.h"
#include "core/sched_run.h"

enum { DIR_NONE = -1, DIR_OUT = 0, DIR_IN = 1 };

static int step_dir(const core_step_t *st)
{
    switch (st->kind) {
    case CORE_STEP_SEND:
        return DIR_OUT;
    case CORE_STEP_RECV:
    case CORE_STEP_RECV_REDUCE:
        return DIR_IN;
    default:
        return DIR_NONE;
    }
}

static char *src_ptr(core_run_t *r, const core_step_t *st)
{
    char *b = r->buf[st->src_buf < 3 ? st->src_buf : 0];
    return b ? b + st->src_off * r->esize : NULL;
}

static char *dst_ptr(core_run_t *r, const core_step_t *st)
{
    char *b = r->buf[st->dst_buf < 3 ? st->dst_buf : 0];
    return b ? b + st->dst_off * r->esize : NULL;
}

herd_status_t core_sched_lower_call(herd_comm_t *c, const core_coll_args_t *a,
                                    herd_algo_t algo, size_t esize,
                                    int ranks_per_node, core_sched_t *out)
{
    core_sched_desc_t d = {.coll = a->coll,
                           .algo = algo,
                           .nranks = c->size,
                           .rank = c->rank,
                           .root = a->root < 0 ? 0 : a->root,
                           .count = a->count,
                           .elem_size = esize,
                           .channels = a->channels > 0 ? a->channels : 1,
                           .chunk_bytes = a->chunk_bytes,
                           .ranks_per_node = ranks_per_node,
                           .counts = a->vcounts,
                           .recv_counts = a->vrecv};
    if (!core_sched_supports(algo, a->coll))
        return core_comm_error(c, HERD_ERR_UNSUPPORTED,
                               "%s: algorithm %s does not implement it",
                               herd_coll_name(a->coll), herd_algo_name(algo));
    herd_status_t st = core_sched_lower(&d, out);
    if (st != HERD_OK)
        return core_comm_error(c, st, "%s: lowering algorithm %s failed (%s)",
                               herd_coll_name(a->coll), herd_algo_name(algo),
                               herd_status_string(st));
    return HERD_OK;
}

static int overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return a && b && alen && blen && a < b + blen && b < a + alen;
}

/* IN, OUT and SCRATCH as the schedule sees them. all_reduce and reduce
 * are verified safe with IN and OUT aliased (core_sched_verify); any other
 * overlap gets a private copy of the input, as the tcp engine does. */
static herd_status_t buffers(core_run_t *r, const core_coll_args_t *a)
{
    size_t sb = core_args_send_count(a, r->nranks) * r->esize;
    size_t rb = core_args_recv_count(a, r->nranks) * r->esize;
    size_t scratch = r->sched.scratch_count * r->esize;
    int alias_ok =
        (a->coll == HERD_COLL_ALL_REDUCE || a->coll == HERD_COLL_REDUCE) &&
        a->sendbuf == a->recvbuf;
    int copy = a->coll != HERD_COLL_BROADCAST && !alias_ok &&
               overlaps(a->sendbuf, sb, a->recvbuf, rb);
    r->buf[CORE_BUF_IN] =
        (char *)(a->coll == HERD_COLL_BROADCAST ? a->recvbuf : a->sendbuf);
    r->buf[CORE_BUF_OUT] = a->recvbuf;
    if (!scratch && !copy)
        return HERD_OK;
    r->own = malloc(scratch + (copy ? sb : 0) + 1);
    if (!r->own)
        return HERD_ERR_NO_MEMORY;
    r->buf[CORE_BUF_SCRATCH] = r->own;
    if (copy) {
        memcpy(r->own + scratch, a->sendbuf, sb);
        r->buf[CORE_BUF_IN] = r->own + scratch;
    }
    return HERD_OK;
}

/* Per-step arrays in one block; reverse dependencies as CSR. */
static herd_status_t index_steps(core_run_t *r)
{
    const core_sched_t *s = &r->sched;
    size_t n = s->nsteps ? s->nsteps : 1, nd = s->ndeps ? s->ndeps : 1;
    size_t words = 3 * n + 1 + nd + 4 * n;
    char *a = calloc(1, words * sizeof(uint32_t) + n * sizeof(uint64_t) +
                            n * sizeof(int32_t) + 4 * n);
    if (!a)
        return HERD_ERR_NO_MEMORY;
    r->arena = a;
    r->stage = (uint64_t *)a;
    r->next_conn = (int32_t *)(r->stage + n);
    r->ndeps_left = (uint32_t *)(r->next_conn + n);
    r->dep_off = r->ndeps_left + n;
    r->dependents = r->dep_off + n + 1;
    r->ready = r->dependents + nd;
    r->posted = (uint8_t *)(r->ready + 4 * n + n);
    r->arrived = r->posted + n;
    r->done = r->arrived + n;
    r->blocked = r->done + n;
    uint32_t *fill = r->ready; /* scratch until the run starts */
    for (uint32_t i = 0; i < s->nsteps; i++) {
        r->ndeps_left[i] = s->steps[i].ndeps;
        for (uint32_t j = 0; j < s->steps[i].ndeps; j++)
            r->dep_off[s->deps[s->steps[i].dep_off + j] + 1]++;
    }
    for (uint32_t i = 0; i < s->nsteps; i++)
        r->dep_off[i + 1] += r->dep_off[i];
    for (uint32_t i = 0; i < s->nsteps; i++)
        for (uint32_t j = 0; j < s->steps[i].ndeps; j++) {
            uint32_t d = s->deps[s->steps[i].dep_off + j];
            r->dependents[r->dep_off[d] + fill[d]++] = i;
        }
    memset(fill, 0, n * sizeof(uint32_t));
    uint64_t staged = 0;
    for (uint32_t i = 0; i < s->nsteps; i++) {
        const core_step_t *st = &s->steps[i];
        r->next_conn[i] = -1;
        if (st->kind == CORE_STEP_RECV_REDUCE) {
            r->stage[i] = staged;
            staged += st->count;
        }
        int dir = step_dir(st);
        if (dir == DIR_NONE)
            continue;
        for (int64_t j = (int64_t)i - 1; j >= 0; j--) {
            const core_step_t *o = &s->steps[j];
            if (step_dir(o) == dir && o->peer == st->peer &&
                o->channel == st->channel) {
                r->next_conn[j] = (int32_t)i;
                r->blocked[i] = 1;
                break;
            }
        }
    }
    r->staging = malloc(staged * r->esize + 1);
    return r->staging ? HERD_OK : HERD_ERR_NO_MEMORY;
}

herd_status_t core_run_init(core_run_t *r, herd_comm_t *c,
                            const core_coll_args_t *a, herd_algo_t algo,
                            int ranks_per_node, const core_run_ops_t *ops,
                            void *ctx)
{
    memset(r, 0, sizeof(*r));
    r->ops = ops;
    r->ctx = ctx;
    r->args = *a;
    r->args.label = NULL;
    r->nranks = c->size;
    r->rank = c->rank;
    r->esize = herd_dtype_size(a->dtype);
    herd_status_t st =
        core_sched_lower_call(c, a, algo, r->esize, ranks_per_node, &r->sched);
    if (st != HERD_OK)
        return st;
    st = buffers(r, a);
    if (st == HERD_OK)
        st = index_steps(r);
    if (st != HERD_OK) {
        core_run_fini(r);
        return core_comm_error(c, st, "%s: out of memory for its schedule",
                               herd_coll_name(a->coll));
    }
    return HERD_OK;
}

static void push(core_run_t *r, uint32_t s)
{
    r->ready[r->ready_n++] = s;
}

static void finish(core_run_t *r, uint32_t s)
{
    r->done[s] = 1;
    r->ndone++;
    for (uint32_t i = r->dep_off[s]; i < r->dep_off[s + 1]; i++)
        if (--r->ndeps_left[r->dependents[i]] == 0)
            push(r, r->dependents[i]);
}

static herd_status_t post(core_run_t *r, uint32_t s)
{
    const core_step_t *st = &r->sched.steps[s];
    size_t bytes = st->count * r->esize;
    herd_status_t rc = HERD_OK;
    r->posted[s] = 1;
    switch (st->kind) {
    case CORE_STEP_SEND:
        r->inflight++;
        rc = r->ops->send(r->ctx, s, st, src_ptr(r, st), bytes);
        break;
    case CORE_STEP_RECV:
        r->inflight++;
        rc = r->ops->recv(r->ctx, s, st, dst_ptr(r, st), bytes);
        break;
    case CORE_STEP_RECV_REDUCE:
        r->inflight++;
        rc = r->ops->recv(r->ctx, s, st, r->staging + r->stage[s] * r->esize,
                          bytes);
        break;
    default: {
        char *src = src_ptr(r, st), *dst = dst_ptr(r, st);
        if (src != dst && bytes)
            memmove(dst, src, bytes);
        finish(r, s);
    }
    }
    if (r->next_conn[s] >= 0) {
        r->blocked[r->next_conn[s]] = 0;
        push(r, (uint32_t)r->next_conn[s]);
    }
    return rc;
}

/* Examine one step: post it, or reduce its arrived message. */
static herd_status_t examine(core_run_t *r, uint32_t s)
{
    const core_step_t *st = &r->sched.steps[s];
    if (r->done[s])
        return HERD_OK;
    int rr = st->kind == CORE_STEP_RECV_REDUCE;
    if (!r->posted[s]) {
        if (r->blocked[s] || (r->ndeps_left[s] && !rr))
            return HERD_OK;
        return post(r, s);
    }
    if (rr && r->arrived[s] && r->ndeps_left[s] == 0) {
        core_reduce(dst_ptr(r, st), src_ptr(r, st),
                    r->staging + r->stage[s] * r->esize, st->count,
                    r->args.dtype, r->args.op);
        finish(r, s);
    }
    return HERD_OK;
}

static void complete(core_run_t *r)
{
    const core_coll_args_t *a = &r->args;
    int reduced = a->coll == HERD_COLL_ALL_REDUCE ||
                  a->coll == HERD_COLL_REDUCE_SCATTER ||
                  a->coll == HERD_COLL_REDUCE_SCATTER_V ||
                  (a->coll == HERD_COLL_REDUCE && r->rank == a->root);
    if (reduced && a->op == HERD_AVG && a->count)
        core_reduce_avg_finish(a->recvbuf, a->count, a->dtype, r->nranks);
    r->finished = 1;
}

static herd_status_t drain(core_run_t *r)
{
    uint32_t head = 0;
    while (head < r->ready_n && r->status == HERD_OK)
        r->status = examine(r, r->ready[head++]);
    r->ready_n = 0;
    if (r->status == HERD_OK && r->ndone == r->sched.nsteps && !r->finished)
        complete(r);
    return r->status;
}

herd_status_t core_run_start(core_run_t *r)
{
    for (uint32_t i = 0; i < r->sched.nsteps; i++)
        push(r, i);
    return drain(r);
}

herd_status_t core_run_step_done(core_run_t *r, uint32_t s)
{
    if (r->status != HERD_OK || s >= r->sched.nsteps || r->done[s])
        return r->status;
    r->inflight--;
    if (r->sched.steps[s].kind == CORE_STEP_RECV_REDUCE) {
        r->arrived[s] = 1;
        push(r, s);
    } else {
        r->arrived[s] = 1;
        finish(r, s);
    }
    return drain(r);
}

int core_run_awaits(const core_run_t *r, uint32_t s)
{
    return s < r->sched.nsteps && r->posted[s] && !r->arrived[s] &&
           step_dir(&r->sched.steps[s]) == DIR_IN;
}

void core_run_fini(core_run_t *r)
{
    core_sched_fini(&r->sched);
    free(r->arena);
    free(r->own);
    free(r->staging);
    r->arena = r->own = NULL;
    r->staging = NULL;
}
