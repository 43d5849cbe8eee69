/* tests/trace_plot_workloads.c - the workload plots' data and scripts
 * (trace/plot_wl.h), read back without gnuplot: a sweep over a named
 * knob gets a categorical axis and over decades a log axis; the best,
 * the ties and the layouts that do not fit are marked; two keys give a
 * line per value of the second; memory parts add up to the total and
 * the device's memory is a line; the step Gantt has a row per stream and
 * rank and the compute stream's idle time under communication as
 * "exposed". Then the same through the CLI: herd sweep (FSDP, parallel
 * tp x pp), herd fsdp strategies and herd sim write them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/plot_wl.h"

static char *dir;
static char plots[1024];

static void setup(void)
{
    dir = tu_tmpdir();
    tu_src_path(plots, sizeof(plots), "plots");
}

static void teardown(void)
{
    tu_tmpdir_free(dir);
}

static char *file(const char *name)
{
    return tu_read_in(dir, name);
}

static void has(const char *s, const char *want)
{
    ck_assert_msg(strstr(s, want), "'%s' not in:\n%s", want, s);
}

/* The data lines (not comments, not blank) of a .dat, as tab fields:
 * field `col` of line `k`, or NULL. */
static int dat_field(const char *s, int k, int col, char *out, size_t len)
{
    const char *p = s;
    for (int n = 0; *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l && *p != '#' && n++ == k) {
            for (int c = 0; c < col; c++) {
                const char *t = memchr(p, '\t', l);
                if (!t)
                    return 0;
                l -= (size_t)(t + 1 - p);
                p = t + 1;
            }
            const char *t = memchr(p, '\t', l);
            size_t fl = t ? (size_t)(t - p) : l;
            snprintf(out, len, "%.*s", (int)fl, p);
            return 1;
        }
        p += l + (e != NULL);
    }
    return 0;
}

static double dat_num(const char *s, int k, int col)
{
    char f[64];
    ck_assert_msg(dat_field(s, k, col, f, sizeof(f)), "no line %d col %d", k,
                  col);
    return atof(f);
}

static int dat_lines(const char *s)
{
    char f[8];
    int n = 0;
    while (dat_field(s, n, 0, f, sizeof(f)))
        n++;
    return n;
}

/* Columns of sweep.dat: x value step exposed comm ok fits within best
 * current. */
enum { SX, SVAL, SSTEP, SEXP, SCOMM, SOK, SFITS, SWITHIN, SBEST, SCUR };

START_TEST(test_sweep_named_knob)
{
    const char *vals[] = {"BACKWARD_PRE", "BACKWARD_POST", "none"};
    const char *keys[] = {"fsdp.backward_prefetch"};
    const char *const *v[] = {vals};
    int nvals[] = {3}, vidx[] = {0, 1, 2};
    trace_sweep_pt_t pts[] = {{0, 1, 1, 1, 1, 1, 828, 349, 811},
                              {1, 1, 1, 1, 0, 0, 836, 357, 811},
                              {2, 1, 1, 0, 0, 0, 1124, 646, 811}};
    trace_sweep_plot_t p = {"fsdp-x", 1, keys, nvals, v, vidx,
                            pts,      3, 2.0,  NULL,  0};
    char err[512] = "";
    ck_assert_int_eq(trace_plot_axis_kind(vals, 3), TRACE_AXIS_CAT);
    ck_assert_msg(trace_plot_sweep(&p, dir, "sweep", plots, err, sizeof(err)) ==
                      HERD_OK,
                  "%s", err);
    char *dat = file("sweep.dat"), *gp = file("sweep.gp"), f[64];
    ck_assert_int_eq(dat_lines(dat), 3);
    /* categorical: positions 0, 1, 2 in the order given, ticks named */
    for (int k = 0; k < 3; k++) {
        ck_assert_double_eq(dat_num(dat, k, SX), k);
        ck_assert(dat_field(dat, k, SVAL, f, sizeof(f)));
        ck_assert_str_eq(f, vals[k]);
    }
    ck_assert_double_eq(dat_num(dat, 0, SBEST), 1);
    ck_assert_double_eq(dat_num(dat, 1, SBEST), 0);
    /* the ties: the best and BACKWARD_POST, not none */
    ck_assert_double_eq(dat_num(dat, 1, SWITHIN), 1);
    ck_assert_double_eq(dat_num(dat, 2, SWITHIN), 0);
    ck_assert_double_eq(dat_num(dat, 2, SSTEP), 1124);
    ck_assert_double_eq(dat_num(dat, 2, SEXP), 646);
    has(gp, "cat = 1\n");
    has(gp, "logx = 0\n");
    has(gp, "tol = 2\n");
    has(gp, "best_text = 'BACKWARD_PRE'\n");
    has(gp, "set xtics ('BACKWARD_PRE' 0, 'BACKWARD_POST' 1, 'none' 2)");
    has(gp, "cd <this folder> && gnuplot sweep.gp");
    has(gp, "# ---- plots/wl_sweep.gp ----");
    has(gp, "(ties)"); /* the script itself follows */
    free(dat);
    free(gp);
}
END_TEST

/* Numbers over decades: a log axis, sorted by value whatever the order
 * given; a failed run stays as a line with NaN times; a trace workload's
 * sweep (time only) says so to the script. */
START_TEST(test_sweep_log_axis_failed_run)
{
    const char *vals[] = {"100", "1", "10"};
    const char *keys[] = {"ddp.bucket_cap_mb"};
    const char *const *v[] = {vals};
    int nvals[] = {3}, vidx[] = {0, 1, 2};
    trace_sweep_pt_t pts[] = {{0, 1, 1, 0, 0, 0, 12, 5, 8},
                              {1, 0, 1, 0, 0, 0, 0, 0, 0},
                              {2, 1, 1, 1, 1, 1, 10, 3, 8}};
    trace_sweep_plot_t p = {"ddp-x", 1, keys, nvals, v, vidx,
                            pts,     3, 2.0,  NULL,  1};
    char err[512] = "";
    ck_assert_int_eq(trace_plot_axis_kind(vals, 3), TRACE_AXIS_LOG);
    const char *lin[] = {"1", "2", "8"};
    ck_assert_int_eq(trace_plot_axis_kind(lin, 3), TRACE_AXIS_LIN);
    ck_assert_msg(trace_plot_sweep(&p, dir, "s", plots, err, sizeof(err)) ==
                      HERD_OK,
                  "%s", err);
    char *dat = file("s.dat"), *gp = file("s.gp"), f[64];
    ck_assert_double_eq(dat_num(dat, 0, SX), 1);
    ck_assert_double_eq(dat_num(dat, 1, SX), 10);
    ck_assert_double_eq(dat_num(dat, 2, SX), 100);
    ck_assert(dat_field(dat, 0, SSTEP, f, sizeof(f)));
    ck_assert_str_eq(f, "NaN"); /* value 1 failed */
    ck_assert_double_eq(dat_num(dat, 0, SOK), 0);
    ck_assert_double_eq(dat_num(dat, 1, SBEST), 1);
    has(gp, "logx = 1\n");
    has(gp, "have_failed = 1\n");
    has(gp, "time_only = 1\n"); /* a makespan: no exposed line */
    has(gp, "cur_x = 10\n");
    free(dat);
    free(gp);
}
END_TEST

/* tp x pp: a block per pp value (a line each), the layout over the
 * memory marked and not the best. */
START_TEST(test_sweep_two_keys_unfit)
{
    const char *tp[] = {"1", "2", "4"}, *pp[] = {"1", "2"};
    const char *keys[] = {"parallel.tp", "parallel.pp"};
    const char *const *v[] = {tp, pp};
    int nvals[] = {3, 2};
    int vidx[12];
    trace_sweep_pt_t pts[6];
    for (int c = 0; c < 6; c++) {
        vidx[c * 2] = c / 2;
        vidx[c * 2 + 1] = c % 2;
        pts[c] = (trace_sweep_pt_t){c, 1, 1, 0, 0, 0, 100 + c, 10, 50};
    }
    pts[0].fits = 0;
    pts[0].step_ms = 50; /* fastest, but does not fit */
    pts[4].best = pts[4].within = 1;
    pts[5].within = 1;
    trace_sweep_plot_t p = {"par", 2, keys, nvals,     v, vidx,
                            pts,   6, 2.0,  "gpu_mem", 0};
    char err[512] = "";
    ck_assert_msg(trace_plot_sweep(&p, dir, "sweep", plots, err, sizeof(err)) ==
                      HERD_OK,
                  "%s", err);
    char *dat = file("sweep.dat"), *gp = file("sweep.gp");
    ck_assert_int_eq(dat_lines(dat), 6);
    has(dat, "# series 0: pp=1\n");
    has(dat, "# series 1: pp=2\n");
    has(dat, "\n\n\n# series 1"); /* blocks: two blank lines */
    /* block pp=1: tp 1, 2, 4 = combos 0, 2, 4 */
    ck_assert_double_eq(dat_num(dat, 0, SFITS), 0);
    ck_assert_double_eq(dat_num(dat, 0, SBEST), 0);
    ck_assert_double_eq(dat_num(dat, 2, SBEST), 1);
    ck_assert_double_eq(dat_num(dat, 2, SX), 4);
    ck_assert_double_eq(dat_num(dat, 3, SSTEP), 101);
    has(gp, "nser = 2\n");
    has(gp, "ser[1] = 'pp=1'\n");
    has(gp, "ser[2] = 'pp=2'\n");
    has(gp, "have_unfit = 1\n");
    has(gp, "mem_key = 'gpu_mem'\n");
    has(gp, "best_text = 'tp=4, pp=1'\n");
    free(dat);
    free(gp);
}
END_TEST

/* Columns of memory.dat: x label params grads optimizer unsharded
 * activations total step fits best ok. */
START_TEST(test_memory_parts_add_up)
{
    const double G = 1073741824.0;
    trace_mem_bar_t bars[] = {
        {"tp=1", {12 * G, 12 * G, 0.6 * G, 0, 57 * G}, 1700, 0, 0, 1},
        {"tp=4", {3 * G, 3 * G, 0.2 * G, 0, 18 * G}, 1367, 1, 1, 1}};
    trace_mem_plot_t p = {"par", "parallel.tp", {NULL}, bars, 2, 80 * G, NULL};
    char err[512] = "";
    ck_assert_msg(trace_plot_memory(&p, dir, "memory", plots, err,
                                    sizeof(err)) == HERD_OK,
                  "%s", err);
    char *dat = file("memory.dat"), *gp = file("memory.gp");
    ck_assert_int_eq(dat_lines(dat), 2);
    for (int k = 0; k < 2; k++) {
        double sum = 0;
        for (int c = 2; c <= 6; c++)
            sum += dat_num(dat, k, c);
        ck_assert_double_eq_tol(sum, dat_num(dat, k, 7), 1e-5);
    }
    ck_assert_double_eq_tol(dat_num(dat, 0, 7), 81.6, 1e-5); /* GiB */
    ck_assert_double_eq(dat_num(dat, 0, 9), 0);              /* no fit */
    ck_assert_double_eq(dat_num(dat, 1, 10), 1);             /* best */
    has(gp, "unit = 'GiB'\n");
    has(gp, "lim = 80.000000\n");
    /* the ZeRO-3 part is zero in both: left out of the legend */
    has(gp, "nparts = 4\n");
    has(gp, "pname[4] = 'activations'\n");
    has(gp, "pcol[4] = 7\n");
    free(dat);
    free(gp);
}
END_TEST

static herd_tl_rec_t rec(int rank, herd_tl_kind_t kind, herd_coll_t coll,
                         double a_ms, double b_ms, const char *label)
{
    herd_tl_rec_t r;
    memset(&r, 0, sizeof(r));
    r.rank = rank;
    r.kind = kind;
    r.coll = coll;
    r.start_ns = (uint64_t)(a_ms * 1e6);
    r.end_ns = (uint64_t)(b_ms * 1e6);
    r.label = label;
    r.peer = -1;
    return r;
}

static const char *streams(const herd_tl_rec_t *r, int *order, void *arg)
{
    (void)arg;
    if (r->kind == HERD_TL_COMPUTE)
        return *order = 0, "compute";
    if (r->kind != HERD_TL_COLL)
        return NULL;
    *order = r->coll == HERD_COLL_ALL_GATHER ? 1 : 2;
    return r->coll == HERD_COLL_ALL_GATHER ? "all_gather" : "reduce_scatter";
}

/* streams() with all_reduce as a third stream */
static const char *streams3(const herd_tl_rec_t *r, int *order, void *arg)
{
    if (r->kind == HERD_TL_COLL && r->coll == HERD_COLL_ALL_REDUCE)
        return *order = 3, "all_reduce";
    return streams(r, order, arg);
}

/* Two ranks, two steps: the last is drawn from 100 ms; rank 1's compute
 * waits for its all_gather from 110 to 120 ms (exposed), while rank 0's
 * all_gather hides behind compute. */
START_TEST(test_step_gantt)
{
    herd_tl_rec_t r[] = {
        rec(0, HERD_TL_MARK, 0, 0, 0, "step"),
        rec(0, HERD_TL_COMPUTE, 0, 0, 90, "forward u0"),
        rec(0, HERD_TL_MARK, 0, 100, 100, "step"),
        rec(0, HERD_TL_COMPUTE, 0, 100, 130, "forward u0"),
        rec(0, HERD_TL_COLL, HERD_COLL_ALL_GATHER, 105, 120, "all_gather u1"),
        rec(0, HERD_TL_COLL, HERD_COLL_REDUCE_SCATTER, 130, 140,
            "reduce_scatter u1"),
        rec(0, HERD_TL_WAIT, 0, 130, 140, NULL),
        rec(1, HERD_TL_MARK, 0, 0, 0, "step"),
        rec(1, HERD_TL_MARK, 0, 100, 100, "step"),
        rec(1, HERD_TL_COMPUTE, 0, 100, 110, "forward u0"),
        rec(1, HERD_TL_COLL, HERD_COLL_ALL_GATHER, 105, 120, "all_gather u1"),
        rec(1, HERD_TL_COMPUTE, 0, 120, 150, "forward u1"),
    };
    int ranks[] = {0, 1};
    trace_step_plot_t p = {"job", "ranks 0,1", r,       12,  ranks,
                           2,     -1,          streams, NULL};
    char err[512] = "";
    long step = -1;
    ck_assert_msg(trace_plot_step(&p, dir, "step", plots, &step, err,
                                  sizeof(err)) == HERD_OK,
                  "%s", err);
    ck_assert_int_eq(step, 1);
    char *dat = file("step.dat"), *gp = file("step.gp"), f[64];
    has(gp, "ttl = 'job, step 1'\n");
    has(gp, "sub = 'ranks 0,1'\n");
    has(gp, "'rank 0 compute' 0, 'rank 0 all_gather' 1, 'rank 0 "
            "reduce_scatter' 2, 'rank 1 compute' 3, 'rank 1 all_gather' 4");
    has(gp, "sn[4] = 'exposed communication (compute idle)'\n");
    has(gp, "step_ms = 50.000000\n"); /* 100 .. rank 1's last end, 150 */
    /* rows per stream; rank 0's exposed: the reduce_scatter, 30-40 ms;
     * rank 1's: the wait for its all_gather, 10-20 ms */
    int n = dat_lines(dat), found = 0;
    for (int k = 0; k < n; k++) {
        ck_assert(dat_field(dat, k, 5, f, sizeof(f)));
        if (strcmp(f, "exposed"))
            continue;
        double a = dat_num(dat, k, 1), b = dat_num(dat, k, 2);
        int row = (int)dat_num(dat, k, 0), rank = (int)dat_num(dat, k, 4);
        ck_assert_int_eq(row, rank * 3); /* on the compute row */
        ck_assert_double_eq_tol(a, rank ? 10 : 30, 1e-9);
        ck_assert_double_eq_tol(b, rank ? 20 : 40, 1e-9);
        found++;
    }
    ck_assert_int_eq(found, 2);
    /* the reduce_scatter on its own row (2), the first step not drawn */
    has(dat, "2\t30.000000\t40.000000\t2\t0\treduce_scatter u1\n");
    ck_assert_ptr_null(strstr(dat, "\t90.000000\t"));
    free(dat);
    free(gp);
    /* a run without steps: a clear error, no file */
    trace_step_plot_t q = {"job", NULL, r + 1, 1, ranks, 1, -1, streams, NULL};
    ck_assert_int_eq(
        trace_plot_step(&q, dir, "none", plots, NULL, err, sizeof(err)),
        HERD_ERR_NOT_FOUND);
    has(err, "no \"step\" mark");
}
END_TEST

/* ---- every stream on a row of its own ------------------------------- */

#define MAX_ROWS 256

typedef struct bar {
    int row, kind, rank;
    double a, b;
    int exposed;
} bar_t;

/* The step chart's row labels (the y tics) into lab[row]; returns the
 * rows, each labelled exactly once. */
static int gantt_labels(const char *gp, char lab[][128])
{
    const char *p = strstr(gp, "set ytics (");
    ck_assert_ptr_nonnull(p);
    p += strlen("set ytics (");
    int n = 0, seen[MAX_ROWS] = {0};
    while (*p == '\'') {
        const char *e = strchr(p + 1, '\'');
        ck_assert_ptr_nonnull(e);
        int row = atoi(e + 1);
        ck_assert_msg(row >= 0 && row < MAX_ROWS && !seen[row],
                      "row %d labelled twice or out of range", row);
        seen[row] = 1;
        snprintf(lab[row], 128, "%.*s", (int)(e - p - 1), p + 1);
        n++;
        p = strpbrk(e + 1, ",)");
        ck_assert_ptr_nonnull(p);
        p += *p == ',' ? 2 : 1;
    }
    for (int r = 0; r < n; r++)
        ck_assert_msg(seen[r], "row %d has no label", r);
    return n;
}

/* The chart's bars (step.dat's lines); *n their count. */
static bar_t *gantt_bars(const char *dat, size_t *n)
{
    size_t cap = 64;
    bar_t *v = malloc(cap * sizeof(*v));
    ck_assert_ptr_nonnull(v);
    *n = 0;
    for (const char *p = dat; *p;) {
        const char *e = strchr(p, '\n');
        char label[128] = "";
        bar_t b = {0};
        if (*p != '#' && *p != '\n' &&
            sscanf(p, "%d\t%lf\t%lf\t%d\t%d\t%127[^\n]", &b.row, &b.a, &b.b,
                   &b.kind, &b.rank, label) == 6) {
            b.exposed = !strcmp(label, "exposed");
            if (*n == cap) {
                cap *= 2;
                v = realloc(v, cap * sizeof(*v));
                ck_assert_ptr_nonnull(v);
            }
            v[(*n)++] = b;
        }
        p = e ? e + 1 : p + strlen(p);
    }
    return v;
}

/* Every bar on a labelled row named after its own stream ("rank R NAME"
 * or "rank R NAME #k"; exposed time on "rank R compute"), and no two
 * bars of a row at once: two streams never share a row. Returns the
 * number of bars (not exposed). */
static int gantt_rows_apart(const char *dat, const char *gp)
{
    static char lab[MAX_ROWS][128];
    char sn[32][96] = {{0}};
    int nrows = gantt_labels(gp, lab), nst = 0, bars = 0;
    for (const char *p = gp; (p = strstr(p, "\nsn[")) != NULL; p++) {
        int k = atoi(p + 4);
        const char *q = strchr(p, '\'');
        const char *e = q ? strchr(q + 1, '\'') : NULL;
        ck_assert(k >= 1 && k <= 32 && e);
        snprintf(sn[k - 1], sizeof(sn[0]), "%.*s", (int)(e - q - 1), q + 1);
        nst = k > nst ? k : nst;
    }
    size_t n;
    bar_t *v = gantt_bars(dat, &n);
    for (size_t i = 0; i < n; i++) {
        const bar_t *b = &v[i];
        ck_assert_msg(b->row >= 0 && b->row < nrows, "row %d of %d", b->row,
                      nrows);
        ck_assert(b->kind >= 0 && b->kind < nst);
        char want[160];
        size_t wl = (size_t)snprintf(want, sizeof(want), "rank %d %s", b->rank,
                                     b->exposed ? "compute" : sn[b->kind]);
        const char *l = lab[b->row];
        ck_assert_msg(
            !strncmp(l, want, wl) &&
                (!l[wl] || (!b->exposed && l[wl] == ' ' && l[wl + 1] == '#')),
            "a bar of '%s' on row %d '%s'", want, b->row, l);
        bars += !b->exposed;
        for (size_t j = i + 1; j < n && !b->exposed; j++)
            ck_assert_msg(v[j].exposed || v[j].row != b->row ||
                              v[j].a >= b->b || b->a >= v[j].b,
                          "row %d '%s': bars %.6f-%.6f and %.6f-%.6f at once",
                          b->row, l, b->a, b->b, v[j].a, v[j].b);
    }
    free(v);
    return bars;
}

/* A bar of stream `kind` (sn[kind + 1]) on rank 0 while one of `other`
 * runs: the two streams side by side. */
static int side_by_side(const char *dat, int kind, int other)
{
    size_t n;
    int found = 0;
    bar_t *v = gantt_bars(dat, &n);
    for (size_t i = 0; i < n && !found; i++)
        for (size_t j = 0; j < n && !found && v[i].kind == kind && !v[i].rank;
             j++)
            found = v[j].kind == other && !v[j].rank && !v[j].exposed &&
                    v[j].a < v[i].b && v[i].a < v[j].b;
    free(v);
    return found;
}

/* Ops of one kind in flight together (DDP's comm_streams 2, a
 * pipeline's posted sends) get a row each, the kind's name numbered;
 * FSDP's all_gather and reduce_scatter streams side by side keep a row
 * each. */
START_TEST(test_step_gantt_streams)
{
    herd_tl_rec_t r[] = {
        rec(0, HERD_TL_MARK, 0, 0, 0, "step"),
        rec(0, HERD_TL_COMPUTE, 0, 0, 50, "backward"),
        rec(0, HERD_TL_COLL, HERD_COLL_ALL_GATHER, 5, 25, "all_gather u2"),
        rec(0, HERD_TL_COLL, HERD_COLL_REDUCE_SCATTER, 10, 30,
            "reduce_scatter u3"),
        rec(0, HERD_TL_COLL, HERD_COLL_REDUCE_SCATTER, 30, 40,
            "reduce_scatter u2"),
        rec(0, HERD_TL_COLL, HERD_COLL_ALL_REDUCE, 10, 20, "bucket 0"),
        rec(0, HERD_TL_COLL, HERD_COLL_ALL_REDUCE, 15, 35, "bucket 1"),
        rec(0, HERD_TL_COLL, HERD_COLL_ALL_REDUCE, 20, 30, "bucket 2"),
        rec(1, HERD_TL_MARK, 0, 0, 0, "step"),
        rec(1, HERD_TL_COMPUTE, 0, 0, 45, "backward"),
        rec(1, HERD_TL_COLL, HERD_COLL_ALL_REDUCE, 10, 20, "bucket 0"),
    };
    int ranks[] = {0, 1};
    trace_step_plot_t p = {
        "job", NULL, r, sizeof(r) / sizeof(r[0]), ranks, 2, -1, streams3, NULL};
    char err[512] = "";
    ck_assert_msg(trace_plot_step(&p, dir, "step", plots, NULL, err,
                                  sizeof(err)) == HERD_OK,
                  "%s", err);
    char *dat = file("step.dat"), *gp = file("step.gp");
    /* rank 0 has two all_reduces at once (buckets 0 and 1, then 1 and 2):
     * two all_reduce rows for both ranks, buckets 0 and 2 on the first */
    has(gp, "nrows = 10\n");
    has(gp, "'rank 0 compute' 0, 'rank 0 all_gather' 1, 'rank 0 "
            "reduce_scatter' 2, 'rank 0 all_reduce #1' 3, 'rank 0 "
            "all_reduce #2' 4, 'rank 1 compute' 5");
    has(dat, "3\t10.000000\t20.000000\t3\t0\tbucket 0\n");
    has(dat, "4\t15.000000\t35.000000\t3\t0\tbucket 1\n");
    has(dat, "3\t20.000000\t30.000000\t3\t0\tbucket 2\n");
    has(dat, "2\t30.000000\t40.000000\t2\t0\treduce_scatter u2\n");
    has(dat, "8\t10.000000\t20.000000\t3\t1\tbucket 0\n");
    ck_assert_int_eq(gantt_rows_apart(dat, gp), 9);
    free(dat);
    free(gp);
}
END_TEST

/* ---- through the CLI (no gnuplot needed: --no-plot writes .dat/.gp) */

static char *herd_in(const char *fmt, const char *scenario, int want)
{
    char args[4096], src[1024], cmd[8192], *out = NULL;
    snprintf(args, sizeof(args), fmt, tu_src_path(src, sizeof(src), scenario));
    snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s 2>&1", dir, tu_herd_binary(),
             args);
    int rc = tu_run(cmd, &out);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(rc == want, "herd %s: exit %d\n%s", args, rc, out);
    return out;
}

START_TEST(test_cli_fsdp_sweep)
{
    free(herd_in("sweep '%s' --set fsdp.backward_prefetch=BACKWARD_PRE,none "
                 "--set fsdp.steps=2 --jobs 1 --no-plot --out o",
                 "scenarios/fsdp-gpt2-8n.yaml", 0));
    char *dat = file("o/sweep.dat"), *gp = file("o/sweep.gp");
    char *mem = file("o/memory.dat"), f[64];
    ck_assert_int_eq(dat_lines(dat), 2);
    ck_assert(dat_field(dat, 1, SVAL, f, sizeof(f)));
    ck_assert_str_eq(f, "none");
    ck_assert_double_eq(dat_num(dat, 0, SBEST), 1);
    ck_assert_double_eq(dat_num(dat, 0, SCUR), 1); /* the scenario's */
    ck_assert_double_eq(dat_num(dat, 1, SWITHIN), 0);
    ck_assert_double_gt(dat_num(dat, 1, SEXP), dat_num(dat, 0, SEXP));
    has(gp, "cat = 1\n");
    has(gp, "ttl = 'fsdp-gpt2-8n: predicted step time vs "
            "fsdp.backward_prefetch'\n");
    /* FSDP memory: parameters, gradients, optimizer, unsharded units */
    for (int k = 0; k < 2; k++) {
        double sum = 0;
        for (int c = 2; c <= 6; c++)
            sum += dat_num(mem, k, c);
        ck_assert_double_eq_tol(sum, dat_num(mem, k, 7), 1e-4);
        ck_assert_double_gt(dat_num(mem, k, 5), 0);
    }
    /* BACKWARD_PRE holds one more unit unsharded than none */
    ck_assert_double_gt(dat_num(mem, 0, 5), dat_num(mem, 1, 5));
    free(dat);
    free(gp);
    free(mem);
}
END_TEST

/* tp x pp of gpt2_small on one node of 8 GPUs with 1 GiB of device
 * memory: plain data parallelism (1.3 GiB) does not fit. */
START_TEST(test_cli_parallel_layouts)
{
    char *out = herd_in("sweep '%s' --set parallel.tp=1,2 --set "
                        "parallel.pp=1,2 --set parallel.gpu_mem=1 --set "
                        "cluster.nodes=1 --set parallel.model=gpt2_small "
                        "--set parallel.global_batch_size=32 --set "
                        "parallel.micro_batch_size=1 --set "
                        "parallel.compute_batch=1 --jobs 1 --no-plot --out o",
                        "scenarios/parallel-gpt-7b-16n.yaml", 0);
    has(out, "does not fit gpu_mem");
    char *dat = file("o/sweep.dat"), *gp = file("o/sweep.gp");
    char *mem = file("o/memory.dat"), *mgp = file("o/memory.gp");
    ck_assert_int_eq(dat_lines(dat), 4);
    has(dat, "# series 1: pp=2\n");
    int unfit = 0, best = 0;
    for (int k = 0; k < 4; k++) {
        unfit += dat_num(dat, k, SFITS) == 0;
        best += dat_num(dat, k, SBEST) == 1;
        ck_assert(!(dat_num(dat, k, SFITS) == 0 && dat_num(dat, k, SBEST)));
    }
    ck_assert_int_ge(unfit, 1);
    ck_assert_int_eq(best, 1);
    has(gp, "have_unfit = 1\n");
    has(mgp, "unit = 'MiB'\nlim = 1024.000000\n");
    for (int k = 0; k < 4; k++) {
        double sum = 0;
        for (int c = 2; c <= 6; c++)
            sum += dat_num(mem, k, c);
        ck_assert_double_eq_tol(sum, dat_num(mem, k, 7), 1e-4);
        ck_assert_int_eq(dat_num(mem, k, 7) > 1024, dat_num(mem, k, 9) == 0);
    }
    free(dat);
    free(gp);
    free(mem);
    free(mgp);
    free(out);
}
END_TEST

/* herd fsdp strategies: a bar per strategy, the --gpu-mem line, the
 * strategies over it marked, the fastest that fits the best. */
START_TEST(test_cli_fsdp_strategies)
{
    free(herd_in("fsdp strategies '%s' --set fsdp.steps=2 --gpu-mem 2.5 "
                 "--no-plot --out st",
                 "scenarios/fsdp-gpt2-8n.yaml", 0));
    char *mem = file("st/strategies.dat"), *gp = file("st/strategies.gp");
    char f[64];
    ck_assert_int_eq(dat_lines(mem), 4);
    ck_assert(dat_field(mem, 0, 1, f, sizeof(f)));
    ck_assert_str_eq(f, "FULL_SHARD");
    ck_assert_double_eq(dat_num(mem, 0, 10), 1); /* best: fits */
    ck_assert_double_eq(dat_num(mem, 3, 9), 0);  /* NO_SHARD: no fit */
    for (int k = 0; k < 4; k++) {
        double sum = 0;
        for (int c = 2; c <= 6; c++)
            sum += dat_num(mem, k, c);
        ck_assert_double_eq_tol(sum, dat_num(mem, k, 7), 1e-4);
    }
    has(gp, "lim = 2.500000\n");
    has(gp, "unit = 'GiB'\n");
    has(gp, "pname[4] = 'unsharded units (params + grads)'\n");
    free(mem);
    free(gp);
}
END_TEST

/* herd sim of an FSDP job: the step's Gantt chart has rows for compute,
 * all_gather and reduce_scatter of each rank shown, and exposed time. */
START_TEST(test_cli_sim_step)
{
    char *out = herd_in("sim '%s' -o s --set fsdp.steps=2 --set "
                        "cluster.nodes=1 --gantt-ranks 0,5",
                        "scenarios/fsdp-gpt2-8n.yaml", 0);
    char *dat = file("s/step.dat"), *gp = file("s/step.gp");
    has(gp, "ttl = 'fsdp-gpt2-8n, step 1'\n");
    has(gp, "sub = 'ranks 0,5 of 8 shown'\n");
    has(gp, "'rank 0 compute' 0, 'rank 0 all_gather' 1, 'rank 0 "
            "reduce_scatter' 2, 'rank 5 compute' 3, 'rank 5 all_gather' 4, "
            "'rank 5 reduce_scatter' 5)");
    has(dat, "\tall_gather u1\n");
    has(dat, "\treduce_scatter u1\n");
    has(dat, "\texposed\n");
    free(dat);
    free(gp);
    free(out);
}
END_TEST

/* herd ddp|parallel run --plots DIR: the step's chart; a sharded job's
 * memory bar, marked when it does not fit --gpu-mem (exit 1). */
START_TEST(test_cli_run_plots)
{
    free(herd_in("ddp run '%s' --set ddp.steps=2 --quiet --plots d",
                 "scenarios/ddp-gpt2-4n.yaml", 0));
    char *dat = file("d/step.dat"), *gp = file("d/step.gp");
    has(gp, "ttl = 'ddp-gpt2-4n, step 1'\n");
    has(gp, "'rank 0 compute' 0, 'rank 0 all_reduce' 1");
    has(dat, "\tbucket 0\n");
    free(dat);
    free(gp);
    char *out = herd_in("parallel run --set parallel.tp=2 --set "
                        "parallel.pp=2 --gpu-mem 0.5 --quiet --plots p",
                        "models", 1); /* no scenario: the defaults */
    dat = file("p/step.dat");
    gp = file("p/step.gp");
    char *mem = file("p/memory.dat"), f[64];
    has(gp, "'rank 0 tp all_reduce'");
    has(gp, "'rank 0 pp send"); /* sends and receives: streams apart */
    has(gp, "'rank 0 pp recv'");
    ck_assert_int_gt(gantt_rows_apart(dat, gp), 0);
    ck_assert_int_eq(dat_lines(mem), 1);
    ck_assert(dat_field(mem, 0, 1, f, sizeof(f)));
    ck_assert_str_eq(f, "tp 2 x pp 2 x dp 2");
    ck_assert_double_eq(dat_num(mem, 0, 9), 0); /* over 0.5 GiB */
    free(dat);
    free(gp);
    free(mem);
    free(out);
}
END_TEST

/* herd fsdp run --plots with fsdp.comm_streams 2: the all_gather and
 * reduce_scatter streams run side by side, each on its own row of every
 * rank drawn (and the hybrid all_reduce after the reduce_scatter); DDP
 * with two streams gets two all_reduce rows. */
START_TEST(test_cli_step_streams)
{
    free(herd_in("fsdp run '%s' --set fsdp.steps=2 --set cluster.nodes=1 "
                 "--set fsdp.comm_streams=2 --quiet --plots f",
                 "scenarios/fsdp-gpt2-8n.yaml", 0));
    char *dat = file("f/step.dat"), *gp = file("f/step.gp");
    has(gp, "'rank 0 compute' 0, 'rank 0 all_gather' 1, 'rank 0 "
            "reduce_scatter' 2, 'rank 1 compute' 3, 'rank 1 all_gather' 4, "
            "'rank 1 reduce_scatter' 5, 'rank 4 compute' 6");
    has(gp, "sn[2] = 'all_gather'\n");
    has(gp, "sn[3] = 'reduce_scatter'\n");
    ck_assert_int_gt(gantt_rows_apart(dat, gp), 0);
    ck_assert(side_by_side(dat, 1, 2));
    free(dat);
    free(gp);
    free(herd_in("fsdp run '%s' --set fsdp.steps=2 --set cluster.nodes=1 "
                 "--set fsdp.comm_streams=2 --set fsdp.strategy=HYBRID_SHARD "
                 "--set fsdp.shard_group_size=4 --quiet --plots h",
                 "scenarios/fsdp-gpt2-8n.yaml", 0));
    dat = file("h/step.dat");
    gp = file("h/step.gp");
    has(gp, "'rank 0 reduce_scatter' 2, 'rank 0 all_reduce' 3, 'rank 1 "
            "compute' 4");
    ck_assert_int_gt(gantt_rows_apart(dat, gp), 0);
    free(dat);
    free(gp);
    free(herd_in("ddp run '%s' --set ddp.steps=2 --set ddp.comm_streams=2 "
                 "--quiet --plots d",
                 "scenarios/ddp-gpt2-4n.yaml", 0));
    dat = file("d/step.dat");
    gp = file("d/step.gp");
    has(gp, "'rank 0 all_reduce #1' 1, 'rank 0 all_reduce #2' 2");
    ck_assert_int_gt(gantt_rows_apart(dat, gp), 0);
    free(dat);
    free(gp);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_plot_workloads");
    TCase *tc = tcase_create("data");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_sweep_named_knob);
    tcase_add_test(tc, test_sweep_log_axis_failed_run);
    tcase_add_test(tc, test_sweep_two_keys_unfit);
    tcase_add_test(tc, test_memory_parts_add_up);
    tcase_add_test(tc, test_step_gantt);
    tcase_add_test(tc, test_step_gantt_streams);
    suite_add_tcase(s, tc);
    TCase *cli = tcase_create("cli");
    tcase_set_timeout(cli, 300);
    tcase_add_checked_fixture(cli, setup, teardown);
    tcase_add_test(cli, test_cli_fsdp_sweep);
    tcase_add_test(cli, test_cli_parallel_layouts);
    tcase_add_test(cli, test_cli_fsdp_strategies);
    tcase_add_test(cli, test_cli_sim_step);
    tcase_add_test(cli, test_cli_run_plots);
    tcase_add_test(cli, test_cli_step_streams);
    suite_add_tcase(s, cli);
    return tu_run_suite(s);
}
