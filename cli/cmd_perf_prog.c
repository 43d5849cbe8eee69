/* cli/cmd_perf_prog.c - the benchmark program of `herd perf`: for each size,
 * out of place then in place: warm-up iterations, a barrier, the timed
 * iterations (labelled "perf" in the timeline; -m operations each, -z
 * blocking), the ranks' times combined (-a), the optional check, and
 * rank 0 prints the row with both column groups.
 * It uses only the public API, so every engine runs it unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_perf.h"
#include "core/engine.h"

#define PERF_LABEL "perf"

void cli_perf_timeline(const herd_tl_rec_t *rec, void *arg)
{
    cli_perf_t *p = arg;
    if (rec->kind != HERD_TL_COLL || rec->coll != p->coll || !rec->label ||
        strcmp(rec->label, PERF_LABEL) != 0 || rec->rank < 0)
        return;
    if (rec->rank >= p->nspans) {
        int n = rec->rank + 1 > 2 * p->nspans ? rec->rank + 1 : 2 * p->nspans;
        cli_perf_span_t *s = realloc(p->spans, (size_t)n * sizeof(*s));
        if (!s) {
            p->failed = 1;
            return;
        }
        memset(s + p->nspans, 0, (size_t)(n - p->nspans) * sizeof(*s));
        p->spans = s;
        p->nspans = n;
    }
    cli_perf_span_t *s = &p->spans[rec->rank];
    if (!s->seen || rec->start_ns < s->start)
        s->start = rec->start_ns;
    if (!s->seen || rec->end_ns > s->end)
        s->end = rec->end_ns;
    s->seen = 1;
}

uint64_t cli_perf_count(const cli_perf_t *p, uint64_t bytes, int n)
{
    size_t es = herd_dtype_size(p->dtype);
    uint64_t total = core_coll_algbw_bytes(p->coll, 1, es, n); /* es or es*n */
    return total ? bytes / total : 0;
}

static herd_status_t one(herd_comm_t *c, const cli_perf_t *p, uint64_t n,
                         void *in, void *out, herd_req_t **req)
{
    switch (p->coll) {
    case HERD_COLL_ALL_REDUCE:
        return herd_all_reduce(c, in, out, n, p->dtype, p->op, req);
    case HERD_COLL_BROADCAST:
        return herd_broadcast(c, out, n, p->dtype, p->root, req);
    case HERD_COLL_REDUCE:
        return herd_reduce(c, in, out, n, p->dtype, p->op, p->root, req);
    case HERD_COLL_ALL_GATHER:
        return herd_all_gather(c, in, out, n, p->dtype, req);
    case HERD_COLL_GATHER:
        return herd_gather(c, in, out, n, p->dtype, p->root, req);
    case HERD_COLL_SCATTER:
        return herd_scatter(c, in, out, n, p->dtype, p->root, req);
    case HERD_COLL_REDUCE_SCATTER:
        return herd_reduce_scatter(c, in, out, n, p->dtype, p->op, req);
    case HERD_COLL_ALL_TO_ALL:
        return herd_all_to_all(c, in, out, n, p->dtype, req);
    default:
        return herd_barrier(c, req);
    }
}

/* This rank's time per operation in the group just timed, in us: from
 * `start` (its own first post, or on sim the first post of any rank) to
 * its last completion; its span is cleared for the next group. */
static double rank_time_us(cli_perf_t *p, int r, const uint64_t *start)
{
    if (r >= p->nspans || !p->spans[r].seen)
        return 0;
    cli_perf_span_t *s = &p->spans[r];
    uint64_t from = start ? *start : s->start;
    s->seen = 0;
    return s->end > from
               ? (double)(s->end - from) / ((double)p->iters * p->agg) / 1e3
               : 0;
}

static double combine(const cli_perf_t *p, double acc, double t)
{
    return p->average == 2   ? (t < acc ? t : acc)
           : p->average == 3 ? (t > acc ? t : acc)
                             : acc + t;
}

/* The ranks' times combined as nccl-tests' -a: 0 rank 0's, 1 the mean,
 * 2 the least, 3 the greatest. Rank 0 gets the result. On sim every
 * rank's records reach this process, and its all_reduce moves no data
 * without real buffers: after a barrier (every timed operation done)
 * rank 0 reads them all. Their clocks start together, at the first post
 * of any rank: a real barrier lets the ranks go within microseconds, the
 * simulated one as its messages arrive, which would flatter the ranks
 * that leave it last (a bus bandwidth above the links'). A real
 * engine's rank sees its own: the times meet in an all_reduce. */
static herd_status_t combine_time(herd_comm_t *c, cli_perf_t *p, double *out)
{
    int r = herd_comm_rank(c), n = herd_comm_size(c);
    if (p->shared) {
        herd_status_t st = herd_barrier(c, NULL);
        if (st != HERD_OK || r != 0)
            return st;
        uint64_t start = UINT64_MAX;
        for (int k = 0; k < n && k < p->nspans; k++)
            if (p->spans[k].seen && p->spans[k].start < start)
                start = p->spans[k].start;
        double acc = rank_time_us(p, 0, &start);
        for (int k = 1; k < n && p->average; k++)
            acc = combine(p, acc, rank_time_us(p, k, &start));
        for (int k = 1; k < p->nspans; k++)
            p->spans[k].seen = 0;
        *out = p->average == 1 ? acc / n : acc;
        return HERD_OK;
    }
    double t = rank_time_us(p, r, NULL);
    if (p->average == 0) {
        *out = t;
        return HERD_OK;
    }
    herd_op_t op = p->average == 2   ? HERD_MIN
                   : p->average == 3 ? HERD_MAX
                                     : HERD_SUM;
    herd_status_t st = herd_all_reduce(c, &t, &t, 1, HERD_FLOAT64, op, NULL);
    if (st == HERD_OK)
        *out = p->average == 1 ? t / herd_comm_size(c) : t;
    return st;
}

static const char *redop_name(const cli_perf_t *p)
{
    return p->coll == HERD_COLL_ALL_REDUCE || p->coll == HERD_COLL_REDUCE ||
                   p->coll == HERD_COLL_REDUCE_SCATTER
               ? herd_op_name(p->op)
               : "none";
}

static int has_root(herd_coll_t c)
{
    return c == HERD_COLL_BROADCAST || c == HERD_COLL_REDUCE ||
           c == HERD_COLL_GATHER || c == HERD_COLL_SCATTER;
}

/* nccl-tests' number cells: as many decimals as the width leaves; a
 * value too wide for it keeps its digits (nccl-tests would write 1.2e+06)
 * and widens the column, which token-based readers do not mind. */
static void cell(char *buf, size_t len, double v, int width)
{
    int digits = 0;
    for (double x = 1; v >= x && digits < 30; x *= 10)
        digits++;
    if (digits < width - 2)
        snprintf(buf, len, "%*.2f", width, v);
    else if (digits < width - 1)
        snprintf(buf, len, "%*.1f", width, v);
    else
        snprintf(buf, len, "%*.0f", width, v);
}

/* One size: results[g] of group g (0 out-of-place, 1 in-place). */
typedef struct perf_result {
    double us;
    uint64_t wrong;
} perf_result_t;

static void print_row(cli_perf_t *p, int n, uint64_t count,
                      const perf_result_t res[2])
{
    size_t es = herd_dtype_size(p->dtype);
    uint64_t bytes = core_coll_algbw_bytes(p->coll, count, es, n);
    fprintf(p->out, "%12llu  %12llu  %8s  %6s  %6d", (unsigned long long)bytes,
            (unsigned long long)(bytes / es), herd_dtype_name(p->dtype),
            redop_name(p), has_root(p->coll) ? p->root : -1);
    double busbw = 0;
    for (int g = 0; g < 2; g++) {
        double us = res[g].us;
        double algbw = us > 0 ? (double)bytes / (us * 1e3) : 0;
        busbw = algbw * core_coll_busbw_factor(p->coll, n);
        char t[32], a[32], b[32];
        cell(t, sizeof(t), us, 7);
        cell(a, sizeof(a), algbw, 6);
        cell(b, sizeof(b), busbw, 6);
        if (p->check)
            fprintf(p->out, "  %7s  %6s  %6s  %6llu", t, a, b,
                    (unsigned long long)res[g].wrong);
        else
            fprintf(p->out, "  %7s  %6s  %6s     N/A", t, a, b);
        p->wrong_total += res[g].wrong;
    }
    fputc('\n', p->out);
    fflush(p->out);
    p->sum_busbw += busbw; /* nccl-tests averages the in-place busbw */
    p->rows++;
}

/* Wrong elements over all ranks (the check runs with real buffers). */
static herd_status_t sum_wrong(herd_comm_t *c, uint64_t *wrong)
{
    int64_t w = (int64_t)*wrong;
    herd_status_t st =
        herd_all_reduce(c, &w, &w, 1, HERD_INT64, HERD_SUM, NULL);
    if (st == HERD_OK)
        *wrong = (uint64_t)w;
    return st;
}

/* -m operations back to back (or blocking, -z, one at a time), then a
 * wait for all of them. `reqs` holds p->agg requests. */
static herd_status_t iteration(herd_comm_t *c, const cli_perf_t *p, uint64_t n,
                               void *in, void *out, herd_req_t **reqs)
{
    herd_status_t st = HERD_OK;
    int posted = 0;
    for (int k = 0; k < p->agg && st == HERD_OK; k++) {
        st = one(c, p, n, in, out, p->blocking ? NULL : &reqs[k]);
        posted += st == HERD_OK && !p->blocking;
    }
    for (int k = 0; k < posted; k++) {
        herd_status_t w = herd_req_wait(reqs[k]);
        herd_req_free(reqs[k]);
        st = st == HERD_OK ? w : st;
    }
    return st;
}

/* Warm-up, a barrier, the timed iterations (labelled), this rank's
 * time combined over the ranks, and the check: as nccl-tests, a separate
 * run on fresh inputs, so overlapping timed operations on one buffer
 * cannot spoil it. */
static herd_status_t group(herd_comm_t *c, cli_perf_t *p, uint64_t count,
                           void *in, void *out, perf_result_t *res)
{
    int r = herd_comm_rank(c), n = herd_comm_size(c);
    herd_req_t **reqs = calloc((size_t)p->agg, sizeof(*reqs));
    if (!reqs)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = HERD_OK;
    for (int i = 0; i < p->warmup && st == HERD_OK; i++)
        st = iteration(c, p, count, in, out, reqs);
    if (st == HERD_OK)
        st = herd_barrier(c, NULL);
    herd_comm_set_label(c, PERF_LABEL);
    for (int i = 0; i < p->iters && st == HERD_OK; i++)
        st = iteration(c, p, count, in, out, reqs);
    herd_comm_set_label(c, NULL);
    free(reqs);
    res->us = 0;
    if (st == HERD_OK)
        st = combine_time(c, p, &res->us);
    res->wrong = 0;
    if (st == HERD_OK && p->check) {
        cli_perf_fill(p, r, n, count, in, out);
        st = one(c, p, count, in, out, NULL);
        if (st == HERD_OK) {
            res->wrong = cli_perf_verify(p, r, n, count, out);
            st = sum_wrong(c, &res->wrong);
        }
    }
    return st;
}

/* In place as NCCL places it: all_gather and gather send from the
 * rank's block of the output, reduce_scatter and scatter receive into
 * the rank's block of the input, the others use one buffer for both. */
static void in_place(const cli_perf_t *p, int r, uint64_t count, char *buf,
                     void **in, void **out)
{
    size_t off = (size_t)r * count * herd_dtype_size(p->dtype);
    *in = *out = buf;
    if (p->coll == HERD_COLL_ALL_GATHER || p->coll == HERD_COLL_GATHER)
        *in = buf + off;
    else if (p->coll == HERD_COLL_REDUCE_SCATTER ||
             p->coll == HERD_COLL_SCATTER)
        *out = buf + off;
}

static herd_status_t run_size(herd_comm_t *c, cli_perf_t *p, uint64_t count,
                              perf_result_t res[2])
{
    int r = herd_comm_rank(c), n = herd_comm_size(c);
    size_t es = herd_dtype_size(p->dtype);
    uint64_t ns = core_coll_send_count(p->coll, count, n);
    uint64_t nr = core_coll_recv_count(p->coll, count, n);
    void *in = NULL, *out = NULL, *ipin, *ipout;
    herd_status_t st = herd_alloc(c, ns * es, &in);
    if (st == HERD_OK)
        st = herd_alloc(c, nr * es, &out);
    if (st == HERD_OK)
        st = group(c, p, count, in, out, &res[0]);
    /* in place: the out-of-place output buffer is large enough for
     * every collective's combined layout but scatter/reduce_scatter,
     * whose input is the larger one */
    void *buf = ns > nr ? in : out;
    in_place(p, r, count, buf, &ipin, &ipout);
    if (st == HERD_OK)
        st = group(c, p, count, ipin, ipout, &res[1]);
    herd_free(c, in);
    herd_free(c, out);
    return st;
}

/* nccl-tests' header, the column groups' line included, so that tools
 * that read its logs read this table. */
static void print_header(const cli_perf_t *p)
{
    fprintf(p->out,
            "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place    "
            "                   in-place          \n",
            "", "", "", "", "");
    fprintf(p->out,
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
            "%6s\n",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
            "#wrong", "time", "algbw", "busbw", "#wrong");
    fprintf(p->out,
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
            "%6s\n",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
            "(us)", "(GB/s)", "(GB/s)", "");
}

static uint64_t next_size(const cli_perf_t *p, uint64_t b)
{
    if (p->stepfactor > 1) {
        double x = (double)b * p->stepfactor;
        return x > (double)b + 1 ? (uint64_t)x : b + 1;
    }
    return b + (p->stepbytes ? p->stepbytes : 1);
}

int cli_perf_program(herd_comm_t *c, void *arg)
{
    cli_perf_t *p = arg;
    int r = herd_comm_rank(c), n = herd_comm_size(c);
    if (herd_comm_set_algo(c, p->coll, p->algo) != HERD_OK ||
        herd_comm_set_channels(c, p->channels, (size_t)p->chunk) != HERD_OK)
        return 2;
    if (r == 0)
        print_header(p);
    for (uint64_t b = p->minbytes; b <= p->maxbytes; b = next_size(p, b)) {
        uint64_t count = cli_perf_count(p, b, n);
        if (count == 0)
            continue;
        perf_result_t res[2];
        herd_status_t st = run_size(c, p, count, res);
        if (st != HERD_OK) {
            /* On a real engine each rank is its own process: each says
             * why (the others would only say "operation aborted"). */
            const char *why = herd_last_error(c);
            int has_why = why && *why;
            if (p->report_all)
                fprintf(stderr,
                        "herd perf: rank %d: %s of %llu bytes failed: "
                        "%s%s%s%s\n",
                        r, herd_coll_name(p->coll), (unsigned long long)b,
                        herd_status_string(st), has_why ? " (" : "",
                        has_why ? why : "", has_why ? ")" : "");
            else if (r == 0)
                fprintf(stderr,
                        "herd perf: %s of %llu bytes failed: %s%s%s%s\n",
                        herd_coll_name(p->coll), (unsigned long long)b,
                        herd_status_string(st), has_why ? " (" : "",
                        has_why ? why : "", has_why ? ")" : "");
            return 1;
        }
        if (r == 0)
            print_row(p, n, count, res);
        if (p->failed)
            return 1;
    }
    if (r == 0 && p->rows)
        fprintf(p->out,
                "# Out of bounds values : %llu %s\n"
                "# Avg bus bandwidth    : %g\n#\n",
                (unsigned long long)p->wrong_total,
                p->wrong_total ? "FAILED" : "OK", p->sum_busbw / p->rows);
    return r == 0 && p->check && p->wrong_total ? 3 : 0;
}
