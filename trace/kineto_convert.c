/* trace/kineto_convert.c - turn the steps of PyTorch profiler traces into
 * a herd trace (what every rank did: collectives in order, the measured
 * compute between them, step marks) and the measured herd timeline.
 *
 * One walk per rank and step yields both: the trace's ops and the
 * timeline's records carry the same labels and marks as the DDP program
 * ("step", "forward", "backward", "ready bK", "launch bucket K", "bucket
 * K", "finalize", "optimizer"), so `herd ddp report --from` reads the
 * measured timeline and a replay of the trace alike, and `herd compare`
 * matches a replay against the measurement op by op.
 *
 * Compute between two collectives is the main thread's time between them
 * on CPU jobs (less the time a blocking collective held it), and the GPU
 * compute kernels' busy time on GPU jobs, where a collective is placed
 * after the last compute kernel that ended before it started. Collectives
 * launched during backward are asynchronous (DDP's buckets) and waited
 * for at the reducer's finalize; the others block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/kineto_import.h"

typedef struct walk {
    const kineto_rank_t *r;
    const kineto_step_t *s;
    const kineto_import_opts_t *o;
    trace_t *t;           /* NULL: timeline only */
    trace_timeline_t *tl; /* NULL: trace only */
    uint64_t origin;      /* the timeline's zero on this rank's clock */
    uint64_t *seq;        /* per group: collectives so far */
    size_t kcur;          /* GPU: first kernel that may still overlap */
    uint64_t cursor;      /* where compute resumes */
    uint64_t bcast_left;  /* broadcast bytes still to assign */
    size_t bcast_unknown; /* broadcasts without a size still to come */
    int fwd_done;         /* the step's forward compute is out */
    size_t nasync_other;  /* async ops of a step that are not buckets */
    uint64_t *ends;       /* GPU compute kernels' end times, sorted */
    size_t nends;
    char *err;
    size_t errlen;
} walk_t;

/* GPU compute kernels' busy time in (a, b]. */
static uint64_t gpu_busy(walk_t *w, uint64_t a, uint64_t b)
{
    const kineto_rank_t *r = w->r;
    uint64_t busy = 0, covered = a;
    while (w->kcur < r->nev &&
           (r->ev[w->kcur].kind != KINETO_EV_KERNEL ||
            r->ev[w->kcur].ts_ns + r->ev[w->kcur].dur_ns <= a))
        w->kcur++;
    for (size_t i = w->kcur; i < r->nev && r->ev[i].ts_ns < b; i++) {
        const kineto_ev_t *e = &r->ev[i];
        if (e->kind != KINETO_EV_KERNEL)
            continue;
        uint64_t s = e->ts_ns > covered ? e->ts_ns : covered;
        uint64_t end = e->ts_ns + e->dur_ns < b ? e->ts_ns + e->dur_ns : b;
        if (end > s) { /* streams may overlap: count the union */
            busy += end - s;
            covered = end;
        }
    }
    return busy;
}

/* GPU: where the compute stream was when collective c could start: the
 * latest compute kernel end at or before its start (binary search over
 * the sorted kernel ends), not before the cursor. */
static uint64_t gpu_issue(const walk_t *w, const kineto_coll_t *c)
{
    size_t lo = 0, hi = w->nends;
    while (lo < hi) { /* first end after the start */
        size_t mid = (lo + hi) / 2;
        if (w->ends[mid] <= c->start_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t t = lo ? w->ends[lo - 1] : 0;
    return t > w->cursor ? t : w->cursor;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static herd_status_t rec(walk_t *w, herd_tl_kind_t kind, uint64_t a, uint64_t b,
                         const char *label, const kineto_coll_t *c)
{
    if (!w->tl)
        return HERD_OK;
    herd_tl_rec_t x;
    memset(&x, 0, sizeof(x));
    x.kind = kind;
    x.rank = w->r->rank;
    x.node = w->o->ranks_per_node > 0 ? x.rank / w->o->ranks_per_node : 0;
    x.start_ns = a > w->origin ? a - w->origin : 0;
    x.end_ns = b > w->origin ? b - w->origin : 0;
    x.label = label;
    x.peer = -1;
    x.status = HERD_OK;
    if (c) {
        int g = c->group + 1;
        x.group = g;
        x.seq = ++w->seq[g];
        x.coll = (herd_coll_t)c->coll;
        x.dtype = (herd_dtype_t)c->dtype;
        x.op = HERD_SUM;
        x.count = c->count;
        x.bytes = c->count * herd_dtype_size(x.dtype);
        x.peer = c->coll == HERD_COLL_BROADCAST ? 0 : -1;
    }
    return trace_timeline_add(w->tl, &x);
}

static herd_status_t op_mark(walk_t *w, uint64_t t, const char *label)
{
    herd_status_t st = rec(w, HERD_TL_MARK, t, t, label, NULL);
    if (st != HERD_OK || !w->t)
        return st;
    trace_op_t op = trace_op_default(TRACE_OP_MARK);
    st = trace_intern(w->t, label, &op.label);
    return st == HERD_OK ? trace_add_op(w->t, &op) : st;
}

static herd_status_t op_compute(walk_t *w, uint64_t a, uint64_t b,
                                const char *label)
{
    uint64_t d = b <= a ? 0 : w->r->gpu ? gpu_busy(w, a, b) : b - a;
    herd_status_t st =
        rec(w, HERD_TL_COMPUTE, a, w->r->gpu ? a + d : b, label, NULL);
    if (st != HERD_OK || !w->t)
        return st;
    trace_op_t op = trace_op_default(TRACE_OP_COMPUTE);
    op.dur_ns = d;
    st = trace_intern(w->t, label, &op.label);
    return st == HERD_OK ? trace_add_op(w->t, &op) : st;
}

/* Compute up to t. The gap in which backward starts is split into
 * "forward" and "backward" (either may be empty) so that every rank's
 * ops have the same shape whatever its timing. */
static herd_status_t compute_to(walk_t *w, uint64_t t, int in_bwd,
                                int after_fin)
{
    const kineto_step_t *s = w->s;
    herd_status_t st = HERD_OK;
    uint64_t a = w->cursor;
    t = t > a ? t : a;
    if (after_fin) {
        st = op_compute(w, a, t, "optimizer");
    } else if (in_bwd && !w->fwd_done) {
        uint64_t mid = s->bwd_start < a   ? a
                       : s->bwd_start > t ? t
                                          : s->bwd_start;
        st = op_compute(w, a, mid, "forward");
        if (st == HERD_OK)
            st = op_compute(w, mid, t, "backward");
        w->fwd_done = 1;
    } else {
        st = op_compute(w, a, t, in_bwd ? "backward" : "forward");
    }
    w->cursor = t;
    return st;
}

/* The size of a collective the trace gave none: DDP's bucket k, or a
 * share of the buffers broadcast in the forward. */
static herd_status_t fill_count(walk_t *w, kineto_coll_t *c, long bucket)
{
    const kineto_import_opts_t *o = w->o;
    if (c->has_count)
        return HERD_OK;
    if (bucket >= 0 && (size_t)bucket < o->nbuckets) {
        c->count =
            o->bucket_bytes[bucket] / herd_dtype_size((herd_dtype_t)c->dtype);
        return HERD_OK;
    }
    if (c->coll == HERD_COLL_BROADCAST && !c->async && w->bcast_unknown) {
        c->dtype = HERD_UINT8;
        c->count = w->bcast_left / w->bcast_unknown--;
        w->bcast_left -= c->count;
        return HERD_OK;
    }
    if (c->coll == HERD_COLL_BARRIER)
        return HERD_OK;
    snprintf(
        w->err, w->errlen, "%s: step %ld: a %s %s has no size in the trace%s",
        w->r->path, w->s->number, c->async ? "backward" : "blocking",
        herd_coll_name((herd_coll_t)c->coll),
        bucket >= 0 ? " and no model gives its bucket: give --model FILE" : "");
    return HERD_ERR_PARSE;
}

static herd_status_t op_coll(walk_t *w, kineto_coll_t c, long bucket)
{
    char label[48] = "", mark[64];
    herd_status_t st = fill_count(w, &c, bucket);
    if (st != HERD_OK)
        return st;
    if (bucket >= 0) {
        snprintf(label, sizeof(label), "bucket %ld", bucket);
        snprintf(mark, sizeof(mark), "ready b%ld", bucket);
        st = op_mark(w, w->cursor, mark);
        snprintf(mark, sizeof(mark), "launch bucket %ld", bucket);
        if (st == HERD_OK)
            st = op_mark(w, w->cursor, mark);
    }
    if (kineto_coll_is_used_map(&c))
        snprintf(label, sizeof(label), "unused_map");
    if (st == HERD_OK)
        st = rec(w, HERD_TL_COLL, c.start_ns, c.end_ns, *label ? label : NULL,
                 &c);
    if (st != HERD_OK || !w->t)
        return st;
    trace_op_t op = trace_op_default(TRACE_OP_COLL);
    op.coll = c.coll;
    op.dtype = c.dtype;
    op.redop = HERD_SUM;
    op.count = c.count;
    op.group = (uint16_t)(c.group + 1);
    op.peer = c.coll == HERD_COLL_BROADCAST ? 0 : -1;
    if (c.coll == HERD_COLL_SEND || c.coll == HERD_COLL_RECV) {
        snprintf(w->err, w->errlen,
                 "%s: step %ld: point-to-point %s: peers are not in the "
                 "trace; not supported yet",
                 w->r->path, w->s->number, herd_coll_name(op.coll));
        return HERD_ERR_UNSUPPORTED;
    }
    if (*label && (st = trace_intern(w->t, label, &op.label)) != HERD_OK)
        return st;
    if (c.async) { /* waited for at finalize */
        char id[32];
        if (bucket >= 0)
            snprintf(id, sizeof(id), "b%ld", bucket);
        else
            snprintf(id, sizeof(id), "a%zu", w->nasync_other++);
        if ((st = trace_async_slot(w->t, id, &op.async)) != HERD_OK)
            return st;
    }
    return trace_add_op(w->t, &op);
}

static herd_status_t finalize(walk_t *w, uint64_t last_issue)
{
    const kineto_step_t *s = w->s;
    herd_status_t st = HERD_OK;
    if (!w->r->gpu)
        st = compute_to(w, s->bwd_end, 1, 0);
    if (st == HERD_OK)
        st = rec(w, HERD_TL_WAIT, w->cursor, s->fin_end, NULL, NULL);
    if (st == HERD_OK && w->t) {
        trace_op_t op = trace_op_default(TRACE_OP_WAIT_ALL);
        st = trace_add_op(w->t, &op);
    }
    if (st == HERD_OK)
        st = op_mark(w, s->fin_end, "finalize");
    /* CPU: the main thread resumes when the wait ends; GPU: compute
     * kernels after the last bucket count from there */
    w->cursor = w->r->gpu ? last_issue : s->fin_end;
    return st;
}

static herd_status_t walk_step(walk_t *w)
{
    const kineto_step_t *s = w->s;
    long bucket = 0;
    size_t nasync = 0, last_async = 0;
    for (size_t c = 0; c < s->ncolls; c++)
        if (s->colls[c].async)
            nasync++, last_async = c;
    w->cursor = s->start_ns;
    w->fwd_done = 0;
    w->nasync_other = 0;
    w->bcast_unknown = 0;
    for (size_t c = 0; c < s->ncolls; c++)
        w->bcast_unknown += !s->colls[c].has_count && !s->colls[c].async &&
                            s->colls[c].coll == HERD_COLL_BROADCAST;
    w->bcast_left = w->o->buffer_bytes;
    herd_status_t st = op_mark(w, s->start_ns, "step");
    int fin_done = !nasync;
    for (size_t c = 0; c < s->ncolls && st == HERD_OK; c++) {
        kineto_coll_t k = s->colls[c];
        if (!fin_done && !w->r->gpu && k.launch_ns >= s->bwd_end)
            st = finalize(w, 0), fin_done = 1;
        uint64_t at = w->r->gpu ? gpu_issue(w, &k) : k.launch_ns;
        int in_bwd = !fin_done &&
                     (k.async || (s->bwd_start && k.launch_ns >= s->bwd_start));
        if (st == HERD_OK)
            st = compute_to(w, at, in_bwd, fin_done && nasync);
        if (st == HERD_OK)
            st = op_coll(w, k, kineto_coll_is_bucket(&k) ? bucket++ : -1);
        /* a blocking collective holds the main thread until it ends */
        if (!k.async && !w->r->gpu) {
            uint64_t end =
                k.end_ns > k.launch_end_ns ? k.end_ns : k.launch_end_ns;
            w->cursor = end > w->cursor ? end : w->cursor;
        } else if (!w->r->gpu) {
            w->cursor =
                k.launch_end_ns > w->cursor ? k.launch_end_ns : w->cursor;
        }
        if (st == HERD_OK && !fin_done && w->r->gpu && c == last_async)
            st = finalize(w, w->cursor), fin_done = 1;
    }
    if (st == HERD_OK && !fin_done)
        st = finalize(w, w->cursor);
    if (st == HERD_OK)
        st = compute_to(w, s->end_ns, 0, nasync > 0);
    return st;
}

herd_status_t kineto_convert(const kineto_rank_t *r, const kineto_steps_t *ss,
                             const kineto_import_opts_t *o, uint64_t origin,
                             trace_t *t, trace_timeline_t *tl, char *err,
                             size_t errlen)
{
    walk_t w = {.r = r,
                .o = o,
                .t = t,
                .tl = tl,
                .origin = origin,
                .err = err,
                .errlen = errlen};
    w.seq = calloc((size_t)r->ngroups + 2, sizeof(uint64_t));
    w.ends = calloc(r->nev + 1, sizeof(uint64_t));
    if (!w.seq || !w.ends) {
        free(w.seq);
        free(w.ends);
        return HERD_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < r->nev; i++)
        if (r->ev[i].kind == KINETO_EV_KERNEL)
            w.ends[w.nends++] = r->ev[i].ts_ns + r->ev[i].dur_ns;
    qsort(w.ends, w.nends, sizeof(uint64_t), u64_cmp);
    herd_status_t st = HERD_OK;
    for (size_t k = 0; k < ss->n && st == HERD_OK; k++) {
        w.s = &ss->s[k];
        st = walk_step(&w);
    }
    free(w.seq);
    free(w.ends);
    if (st == HERD_ERR_NO_MEMORY)
        snprintf(err, errlen, "out of memory");
    return st;
}
