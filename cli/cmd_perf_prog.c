/* cli/cmd_perf_prog.c - the benchmark program of `herd perf`: for each size,
 * warm-up iterations, a barrier, the timed iterations (labelled "perf" in
 * the timeline), a barrier, the optional check, and rank 0 prints the row.
 * It uses only the public API, so every engine runs it unchanged. */
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
                         void *in, void *out)
{
    switch (p->coll) {
    case HERD_COLL_ALL_REDUCE:
        return herd_all_reduce(c, in, out, n, p->dtype, p->op, NULL);
    case HERD_COLL_BROADCAST:
        return herd_broadcast(c, out, n, p->dtype, p->root, NULL);
    case HERD_COLL_REDUCE:
        return herd_reduce(c, in, out, n, p->dtype, p->op, p->root, NULL);
    case HERD_COLL_ALL_GATHER:
        return herd_all_gather(c, in, out, n, p->dtype, NULL);
    case HERD_COLL_GATHER:
        return herd_gather(c, in, out, n, p->dtype, p->root, NULL);
    case HERD_COLL_SCATTER:
        return herd_scatter(c, in, out, n, p->dtype, p->root, NULL);
    case HERD_COLL_REDUCE_SCATTER:
        return herd_reduce_scatter(c, in, out, n, p->dtype, p->op, NULL);
    case HERD_COLL_ALL_TO_ALL:
        return herd_all_to_all(c, in, out, n, p->dtype, NULL);
    default:
        return herd_barrier(c, NULL);
    }
}

/* (last completion - first post) / iters over the ranks this process
 * sees: every rank on sim, its own rank on a real engine. A global span,
 * so ranks that start the next iteration early cannot hide the time the
 * slowest link needs. */
static double avg_time_us(cli_perf_t *p)
{
    uint64_t start = UINT64_MAX, end = 0;
    for (int r = 0; r < p->nspans; r++)
        if (p->spans[r].seen) {
            if (p->spans[r].start < start)
                start = p->spans[r].start;
            if (p->spans[r].end > end)
                end = p->spans[r].end;
        }
    return end > start ? (double)(end - start) / p->iters / 1e3 : 0;
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

static void print_row(cli_perf_t *p, int n, uint64_t count, uint64_t wrong)
{
    size_t es = herd_dtype_size(p->dtype);
    uint64_t bytes = core_coll_algbw_bytes(p->coll, count, es, n);
    double us = avg_time_us(p);
    double algbw = us > 0 ? (double)bytes / (us * 1e3) : 0;
    double busbw = algbw * core_coll_busbw_factor(p->coll, n);
    char w[32] = "N/A";
    if (p->check)
        snprintf(w, sizeof(w), "%llu", (unsigned long long)wrong);
    fprintf(p->out, "%12llu  %12llu  %8s  %6s  %6d  %9.2f  %7.2f  %7.2f  %6s\n",
            (unsigned long long)bytes, (unsigned long long)(bytes / es),
            herd_dtype_name(p->dtype), redop_name(p),
            has_root(p->coll) ? p->root : -1, us, algbw, busbw, w);
    fflush(p->out);
    p->sum_busbw += busbw;
    p->rows++;
    p->wrong_total += wrong;
    for (int r = 0; r < p->nspans; r++)
        p->spans[r].seen = 0;
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

static herd_status_t iterate(herd_comm_t *c, cli_perf_t *p, uint64_t count,
                             void *in, void *out)
{
    herd_status_t st = HERD_OK;
    for (int i = 0; i < p->warmup && st == HERD_OK; i++)
        st = one(c, p, count, in, out);
    if (st == HERD_OK)
        st = herd_barrier(c, NULL);
    herd_comm_set_label(c, PERF_LABEL);
    for (int i = 0; i < p->iters && st == HERD_OK; i++)
        st = one(c, p, count, in, out);
    herd_comm_set_label(c, NULL);
    if (st == HERD_OK)
        st = herd_barrier(c, NULL);
    return st;
}

static herd_status_t run_size(herd_comm_t *c, cli_perf_t *p, uint64_t count,
                              uint64_t *wrong)
{
    int r = herd_comm_rank(c), n = herd_comm_size(c);
    size_t es = herd_dtype_size(p->dtype);
    void *in = NULL, *out = NULL;
    herd_status_t st =
        herd_alloc(c, core_coll_send_count(p->coll, count, n) * es, &in);
    if (st == HERD_OK)
        st = herd_alloc(c, core_coll_recv_count(p->coll, count, n) * es, &out);
    if (st == HERD_OK && p->check)
        cli_perf_fill(p, r, n, count, in, out);
    if (st == HERD_OK)
        st = iterate(c, p, count, in, out);
    *wrong = 0;
    if (st == HERD_OK && p->check) {
        *wrong = cli_perf_verify(p, r, n, count, out);
        st = sum_wrong(c, wrong);
    }
    herd_free(c, in);
    herd_free(c, out);
    return st;
}

static void print_header(const cli_perf_t *p)
{
    fprintf(p->out,
            "#\n#  %12s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s\n"
            "#  %12s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s\n",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
            "#wrong", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
            "(GB/s)", "");
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
        uint64_t count = cli_perf_count(p, b, n), wrong = 0;
        if (count == 0)
            continue;
        herd_status_t st = run_size(c, p, count, &wrong);
        if (st != HERD_OK) {
            /* On a real engine each rank is its own process: each says
             * why (the others would only say "operation aborted"). */
            if (p->report_all)
                fprintf(stderr,
                        "herd perf: rank %d: %s of %llu bytes failed: %s "
                        "(%s)\n",
                        r, herd_coll_name(p->coll), (unsigned long long)b,
                        herd_status_string(st), herd_last_error(c));
            else if (r == 0)
                fprintf(stderr, "herd perf: %s of %llu bytes failed: %s (%s)\n",
                        herd_coll_name(p->coll), (unsigned long long)b,
                        herd_status_string(st), herd_last_error(c));
            return 1;
        }
        if (r == 0)
            print_row(p, n, count, wrong);
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
