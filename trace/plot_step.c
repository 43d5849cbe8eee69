/* trace/plot_step.c - the Gantt chart of one training step (plot_wl.h):
 * for each rank drawn, a row per stream (compute, data loading,
 * all_gather, reduce_scatter, all_reduce, send, ... as the workload's
 * classifier names them), and on the compute row the time the compute
 * stream sat idle while communication was in flight: the exposed
 * communication, what the step pays for the collectives it did not hide.
 *
 * The step is cut by the ranks' "step" marks (every workload program
 * marks them); the window drawn runs from the earliest drawn rank's
 * mark to the latest rank's next mark (or its last record), on one time
 * axis so pipeline stages line up.
 *
 * A stream's ops run one at a time, so a row must never hold two bars at
 * once: records do not say which stream (or which of several
 * communicators of one kind) ran them, so where a rank has ops of one
 * kind in flight together (DDP's comm_streams > 1, a pipeline's posted
 * sends), the kind gets a row per op in flight at once ("all_reduce #1",
 * "all_reduce #2"), each op on the first of them that is free. */
#include <stdlib.h>
#include <string.h>

#include "trace/plot_wl.h"
#include "trace/plot_wl_int.h"

#define STEP_MAX_STREAMS 16
/* rows of one kind per rank; beyond, ops in flight share the last row */
#define STEP_MAX_LANES 32

typedef struct ival {
    uint64_t a, b;
} ival_t;

typedef struct span {
    size_t i, j; /* the rank's records */
} span_t;

static int is_step(const herd_tl_rec_t *r)
{
    return r->kind == HERD_TL_MARK && r->label && !strcmp(r->label, "step");
}

/* The rank's records in recs (sorted by rank). */
static span_t rank_span(const trace_step_plot_t *p, int rank)
{
    span_t s = {0, 0};
    while (s.i < p->nrecs && p->recs[s.i].rank != rank)
        s.i++;
    for (s.j = s.i; s.j < p->nrecs && p->recs[s.j].rank == rank; s.j++)
        ;
    return s;
}

/* Start of the rank's k-th step mark (0: none), and of the next one or
 * its last record's end in *end. Returns the number of marks. */
static long step_bounds(const trace_step_plot_t *p, span_t s, long k,
                        uint64_t *start, uint64_t *end)
{
    long n = 0;
    uint64_t last = 0;
    *start = *end = 0;
    for (size_t x = s.i; x < s.j; x++) {
        const herd_tl_rec_t *r = &p->recs[x];
        last = r->end_ns > last ? r->end_ns : last;
        if (!is_step(r))
            continue;
        if (n == k)
            *start = r->start_ns;
        else if (n == k + 1)
            *end = r->start_ns;
        n++;
    }
    if (n > k && !*end)
        *end = last;
    return n;
}

static int ival_cmp(const void *x, const void *y)
{
    const ival_t *a = x, *b = y;
    return a->a < b->a ? -1 : a->a > b->a;
}

/* Sort and merge overlapping intervals in place; returns the count. */
static size_t merge(ival_t *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), ival_cmp);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].a <= v[k].b) {
            v[k].b = v[i].b > v[k].b ? v[i].b : v[k].b;
            continue;
        }
        v[++k] = v[i];
    }
    return k + 1;
}

/* The rank's records of `kind` clipped to [lo, hi), merged. */
static size_t union_of(const trace_step_plot_t *p, span_t s,
                       herd_tl_kind_t kind, uint64_t lo, uint64_t hi, ival_t *v)
{
    size_t n = 0;
    for (size_t x = s.i; x < s.j; x++) {
        const herd_tl_rec_t *r = &p->recs[x];
        if (r->kind != kind || r->end_ns <= lo || r->start_ns >= hi ||
            r->end_ns <= r->start_ns)
            continue;
        v[n].a = r->start_ns < lo ? lo : r->start_ns;
        v[n].b = r->end_ns > hi ? hi : r->end_ns;
        n++;
    }
    return merge(v, n);
}

typedef struct rows {
    const char *name[STEP_MAX_STREAMS]; /* kinds of stream, sorted */
    int order[STEP_MAX_STREAMS];
    int lanes[STEP_MAX_STREAMS]; /* rows of the kind: most ops at once */
    int first[STEP_MAX_STREAMS]; /* row of its first lane in a rank */
    int n, per_rank;             /* kinds, rows per rank */
    int compute;                 /* the row the exposed time is drawn on */
    int *lane;                   /* [nrecs]: a bar's lane in its kind */
} rows_t;

static int row_find(const rows_t *rw, const char *name)
{
    for (int k = 0; k < rw->n; k++)
        if (!strcmp(rw->name[k], name))
            return k;
    return -1;
}

/* Whether the record is a bar of the window (clipped to [lo, hi)). */
static int drawn(const herd_tl_rec_t *r, uint64_t lo, uint64_t hi)
{
    return r->end_ns > lo && r->start_ns < hi && r->end_ns > r->start_ns;
}

/* The kind of a drawn record: its index in rw, or -1. */
static int kind_of(const trace_step_plot_t *p, const rows_t *rw,
                   const herd_tl_rec_t *r)
{
    int order = 0;
    const char *nm = p->stream(r, &order, p->stream_arg);
    return nm ? row_find(rw, nm) : -1;
}

/* The streams present in the window on any drawn rank, sorted. */
static void find_kinds(const trace_step_plot_t *p, uint64_t lo, uint64_t hi,
                       rows_t *rw)
{
    for (int i = 0; i < p->nranks; i++) {
        span_t s = rank_span(p, p->ranks[i]);
        for (size_t x = s.i; x < s.j; x++) {
            const herd_tl_rec_t *r = &p->recs[x];
            int order = 0;
            if (r->end_ns < lo || r->start_ns >= hi)
                continue;
            const char *nm = p->stream(r, &order, p->stream_arg);
            if (!nm || row_find(rw, nm) >= 0 || rw->n == STEP_MAX_STREAMS)
                continue;
            int k = rw->n++;
            for (; k > 0 && (rw->order[k - 1] > order ||
                             (rw->order[k - 1] == order &&
                              strcmp(rw->name[k - 1], nm) > 0));
                 k--) {
                rw->name[k] = rw->name[k - 1];
                rw->order[k] = rw->order[k - 1];
            }
            rw->name[k] = nm;
            rw->order[k] = order;
        }
    }
}

typedef struct bar {
    uint64_t a, b;
    size_t x; /* the record */
} bar_t;

static int bar_cmp(const void *x, const void *y)
{
    const bar_t *a = x, *b = y;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return a->b < b->b ? -1 : a->b > b->b;
}

/* Lanes of kind k on one rank: its bars in start order, each on the
 * first lane free by then (the fewest lanes: the most bars at once).
 * v holds the rank's record count. Returns the lanes used. */
static int rank_lanes(const trace_step_plot_t *p, rows_t *rw, span_t s, int k,
                      uint64_t lo, uint64_t hi, bar_t *v)
{
    uint64_t free_at[STEP_MAX_LANES];
    size_t n = 0;
    int used = 0;
    for (size_t x = s.i; x < s.j; x++) {
        const herd_tl_rec_t *r = &p->recs[x];
        if (drawn(r, lo, hi) && kind_of(p, rw, r) == k)
            v[n++] = (bar_t){r->start_ns < lo ? lo : r->start_ns,
                             r->end_ns > hi ? hi : r->end_ns, x};
    }
    qsort(v, n, sizeof(*v), bar_cmp);
    for (size_t m = 0; m < n; m++) {
        int l = 0;
        while (l < used && free_at[l] > v[m].a)
            l++;
        if (l == used && used < STEP_MAX_LANES)
            free_at[used++] = 0;
        l = l < used ? l : used - 1; /* all taken: the last one */
        free_at[l] = v[m].b > free_at[l] ? v[m].b : free_at[l];
        rw->lane[v[m].x] = l;
    }
    return used;
}

/* The kinds of stream and, per kind, its lanes (the most over the drawn
 * ranks, at least one), each drawn record's lane, and the rows. */
static herd_status_t find_rows(const trace_step_plot_t *p, uint64_t lo,
                               uint64_t hi, rows_t *rw)
{
    memset(rw, 0, sizeof(*rw));
    find_kinds(p, lo, hi, rw);
    size_t most = 0;
    for (int i = 0; i < p->nranks; i++) {
        span_t s = rank_span(p, p->ranks[i]);
        most = s.j - s.i > most ? s.j - s.i : most;
    }
    rw->lane = calloc(p->nrecs ? p->nrecs : 1, sizeof(*rw->lane));
    bar_t *v = calloc(most ? most : 1, sizeof(*v));
    if (!rw->lane || !v) {
        free(v);
        free(rw->lane);
        rw->lane = NULL;
        return HERD_ERR_NO_MEMORY;
    }
    for (int k = 0; k < rw->n; k++) {
        rw->lanes[k] = 1;
        for (int i = 0; i < p->nranks; i++) {
            int l = rank_lanes(p, rw, rank_span(p, p->ranks[i]), k, lo, hi, v);
            rw->lanes[k] = l > rw->lanes[k] ? l : rw->lanes[k];
        }
        rw->first[k] = rw->per_rank;
        rw->per_rank += rw->lanes[k];
    }
    free(v);
    int c = row_find(rw, "compute");
    rw->compute = c >= 0 ? rw->first[c] : 0;
    return HERD_OK;
}

static unsigned row_colour(const char *name, int *next)
{
    static const unsigned pal[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0x9467bd,
                                   0xe377c2, 0x17becf, 0xbcbd22, 0x7f7f7f};
    if (!strcmp(name, "compute"))
        return 0xaaaaaa;
    if (strstr(name, "data"))
        return 0x8c564b;
    return pal[(*next)++ % 8];
}

static void step_preamble(const trace_step_plot_t *p, const char *name,
                          const rows_t *rw, long step, double ms, FILE *f)
{
    int nrows = rw->per_rank * p->nranks, next = 0;
    char t[1024];
    snprintf(t, sizeof(t), "%s, step %ld", p->title, step);
    fprintf(f, "data = '%s.dat'\nout = '%s'\nttl = ", name, name);
    plot_gp_string(f, t);
    fprintf(f, "\nsub = ");
    plot_gp_string(f, p->subtitle ? p->subtitle : "");
    fprintf(f, "\nnrows = %d\nnranks = %d\nstep_ms = %.6f\n", nrows, p->nranks,
            ms);
    fprintf(f, "nst = %d\narray sn[%d]\narray sc[%d]\n", rw->n + 1, rw->n + 1,
            rw->n + 1);
    for (int k = 0; k < rw->n; k++) {
        fprintf(f, "sn[%d] = ", k + 1);
        plot_gp_string(f, rw->name[k]);
        fprintf(f, "\nsc[%d] = 0x%06x\n", k + 1,
                row_colour(rw->name[k], &next));
    }
    fprintf(f,
            "sn[%d] = 'exposed communication (compute idle)'\n"
            "sc[%d] = 0xd62728\n",
            rw->n + 1, rw->n + 1);
    fprintf(f, "set ytics (");
    for (int i = 0; i < p->nranks; i++)
        for (int k = 0; k < rw->n; k++)
            for (int l = 0; l < rw->lanes[k]; l++) {
                char lab[256], lane[32] = "";
                int row = i * rw->per_rank + rw->first[k] + l;
                if (rw->lanes[k] > 1)
                    snprintf(lane, sizeof(lane), " #%d", l + 1);
                snprintf(lab, sizeof(lab), "rank %d %s%s", p->ranks[i],
                         rw->name[k], lane);
                fprintf(f, "%s", row ? ", " : "");
                plot_gp_string(f, lab);
                fprintf(f, " %d", row);
            }
    fprintf(f, ")\n");
    /* a line between ranks */
    for (int i = 1; i < p->nranks; i++)
        fprintf(f,
                "set arrow from graph 0, first %g to graph 1, first %g "
                "nohead lw 1 lc rgb 'black'\n",
                i * rw->per_rank - 0.5, i * rw->per_rank - 0.5);
}

/* One rank's lines of the .dat: its records on their rows, then its
 * exposed intervals on the compute row. */
static herd_status_t step_rank(const trace_step_plot_t *p, int i,
                               const rows_t *rw, uint64_t lo, uint64_t hi,
                               FILE *f)
{
    span_t s = rank_span(p, p->ranks[i]);
    int base = i * rw->per_rank;
    for (size_t x = s.i; x < s.j; x++) {
        const herd_tl_rec_t *r = &p->recs[x];
        int k = drawn(r, lo, hi) ? kind_of(p, rw, r) : -1;
        if (k < 0)
            continue;
        uint64_t a = r->start_ns < lo ? lo : r->start_ns;
        uint64_t b = r->end_ns > hi ? hi : r->end_ns;
        fprintf(f, "%d\t%.6f\t%.6f\t%d\t%d\t",
                base + rw->first[k] + rw->lane[x], (double)(a - lo) * 1e-6,
                (double)(b - lo) * 1e-6, k, p->ranks[i]);
        plot_dat_field(f, r->label ? r->label : rw->name[k]);
        fputc('\n', f);
    }
    size_t n = s.j - s.i;
    ival_t *comp = calloc(n ? n : 1, sizeof(*comp));
    ival_t *comm = calloc(n ? n : 1, sizeof(*comm));
    if (!comp || !comm) {
        free(comp);
        free(comm);
        return HERD_ERR_NO_MEMORY;
    }
    size_t nc = union_of(p, s, HERD_TL_COMPUTE, lo, hi, comp);
    size_t nm = union_of(p, s, HERD_TL_COLL, lo, hi, comm);
    /* communication in flight while no compute runs */
    for (size_t m = 0, c = 0; m < nm; m++) {
        uint64_t a = comm[m].a;
        while (c < nc && comp[c].b <= a)
            c++;
        for (size_t d = c; a < comm[m].b;) {
            if (d < nc && comp[d].a <= a) { /* computing: skip it */
                a = comp[d++].b;
                continue;
            }
            uint64_t b =
                d < nc && comp[d].a < comm[m].b ? comp[d].a : comm[m].b;
            fprintf(f, "%d\t%.6f\t%.6f\t%d\t%d\texposed\n", base + rw->compute,
                    (double)(a - lo) * 1e-6, (double)(b - lo) * 1e-6, rw->n,
                    p->ranks[i]);
            a = b;
        }
    }
    free(comp);
    free(comm);
    return HERD_OK;
}

herd_status_t trace_plot_step(const trace_step_plot_t *p, const char *dir,
                              const char *name, const char *plots_dir,
                              long *step_out, char *err, size_t errlen)
{
    long k = p->step;
    uint64_t lo = UINT64_MAX, hi = 0, a, b;
    if (p->nranks < 1 || !p->stream)
        return HERD_ERR_INVALID_ARG;
    if (k < 0) { /* the last step every drawn rank started */
        for (int i = 0; i < p->nranks; i++) {
            long n = step_bounds(p, rank_span(p, p->ranks[i]), 0, &a, &b);
            k = i == 0 || n - 1 < k ? n - 1 : k;
        }
    }
    for (int i = 0; k >= 0 && i < p->nranks; i++) {
        if (step_bounds(p, rank_span(p, p->ranks[i]), k, &a, &b) <= k) {
            k = -1;
            break;
        }
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
    if (k < 0 || hi <= lo) {
        snprintf(err, errlen,
                 "no step to draw: the ranks drawn have no \"step\" mark%s",
                 p->step >= 0 ? " of that number" : "");
        return HERD_ERR_NOT_FOUND;
    }
    rows_t rw;
    herd_status_t st = find_rows(p, lo, hi, &rw);
    if (st != HERD_OK)
        return st;
    if (!rw.n) {
        free(rw.lane);
        snprintf(err, errlen, "no compute or communication in step %ld", k);
        return HERD_ERR_NOT_FOUND;
    }
    FILE *f = NULL, *m = NULL;
    char *pre = NULL;
    size_t prelen = 0;
    st = plot_open(dir, name, "dat", &f, err, errlen);
    if (st != HERD_OK) {
        free(rw.lane);
        return st;
    }
    fprintf(f, "# herd: step %ld of %s, %.6f ms; times in ms from its start\n",
            k, p->title, (double)(hi - lo) * 1e-6);
    fprintf(f, "# row\tstart_ms\tend_ms\tstream\trank\tlabel\n");
    for (int i = 0; i < p->nranks && st == HERD_OK; i++)
        st = step_rank(p, i, &rw, lo, hi, f);
    herd_status_t cst = plot_close(f, dir, name, "dat", err, errlen);
    free(rw.lane); /* the preamble needs the rows, not the lanes */
    rw.lane = NULL;
    st = st ? st : cst;
    if (st != HERD_OK)
        return st;
    if (!(m = open_memstream(&pre, &prelen)))
        return HERD_ERR_NO_MEMORY;
    step_preamble(p, name, &rw, k, (double)(hi - lo) * 1e-6, m);
    if (fclose(m)) {
        free(pre);
        return HERD_ERR_NO_MEMORY;
    }
    st = trace_plot_write_gp(dir, name, pre, plots_dir, "wl_step.gp", err,
                             errlen);
    free(pre);
    if (st == HERD_OK && step_out)
        *step_out = k;
    return st;
}
