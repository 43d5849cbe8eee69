/* cli/cmd_calibrate_from.c - `herd calibrate --from LOG...`: fit link
 * parameters to nccl-tests output instead of measuring. Each table (one per
 * collective run) gets an alpha-beta fit per size regime, printed as
 * comments; the scenario's cluster section takes its link from the
 * all_reduce table (else the first): bandwidth = the fitted bus bandwidth
 * of the large-size regime (a ring's busbw is what each link carries), and
 * latency = the small-size alpha divided by the ring's steps, so the
 * simulator's ring reproduces the latency floor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "trace/nccltests.h"

#define CF_MAX_FILES 64

static const char usage[] =
    "usage: herd calibrate --from LOG... [--coll NAME] [--in-place]\n"
    "                      [--nodes N --gpus-per-node G] [-o FILE]\n"
    "Reads nccl-tests output (all_reduce_perf, all_gather_perf, ...: the\n"
    "out-of-place columns, or the in-place ones with --in-place; -g and\n"
    "multi-process runs alike) and fits, per collective, time = alpha +\n"
    "bus_bytes / beta for small and large sizes. Writes the cluster section\n"
    "of a scenario to FILE (default: stdout), the fits as comments.\n"
    "The collective comes from the log's header, the binary's name, the\n"
    "file name, or --coll; ranks and nodes from its `#  Rank` lines, or\n"
    "--nodes and --gpus-per-node.\n";

typedef struct cf_args {
    const char *files[CF_MAX_FILES];
    int nfiles, in_place, nodes, gpn;
    herd_coll_t coll;
    int have_coll;
    const char *out_path;
} cf_args_t;

static int cf_parse(int argc, char **argv, cf_args_t *a)
{
    for (int i = 1; i < argc; i++) {
        long v;
        if (!strcmp(argv[i], "--from")) {
            while (i + 1 < argc && argv[i + 1][0] != '-') {
                if (a->nfiles == CF_MAX_FILES)
                    return cli_usage_error("calibrate", "at most %d logs",
                                           CF_MAX_FILES);
                a->files[a->nfiles++] = argv[++i];
            }
        } else if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
            if (herd_coll_parse(argv[++i], &a->coll) != HERD_OK)
                return cli_usage_error("calibrate",
                                       "--coll: unknown "
                                       "collective '%s'",
                                       argv[i]);
            a->have_coll = 1;
        } else if (!strcmp(argv[i], "--in-place"))
            a->in_place = 1;
        else if (!strcmp(argv[i], "--nodes") && i + 1 < argc) {
            if (cli_parse_int(argv[++i], 1, 1 << 20, &v))
                return cli_usage_error("calibrate", "--nodes must be 1..%d",
                                       1 << 20);
            a->nodes = (int)v;
        } else if (!strcmp(argv[i], "--gpus-per-node") && i + 1 < argc) {
            if (cli_parse_int(argv[++i], 1, 1024, &v))
                return cli_usage_error("calibrate",
                                       "--gpus-per-node must be 1..1024");
            a->gpn = (int)v;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            a->out_path = argv[++i];
        else
            return cli_usage_error("calibrate", "unknown option '%s'", argv[i]);
    }
    if (a->nfiles == 0)
        return cli_usage_error("calibrate", "--from needs at least one log");
    return 0;
}

static void cf_bw(double bps, char *buf, size_t len)
{
    if (bps >= 1e9)
        snprintf(buf, len, "%.3fGB/s", bps / 1e9);
    else
        snprintf(buf, len, "%.3fMB/s", bps / 1e6);
}

/* Ranks and nodes: the log's, else the options'. */
static int cf_shape(const cf_args_t *a, trace_ncclt_table_t *t,
                    const char *path)
{
    if (a->have_coll && !t->have_coll)
        t->coll = a->coll, t->have_coll = 1, t->coll_from = "option";
    if (a->nodes && a->gpn)
        t->nnodes = a->nodes, t->nranks = a->nodes * a->gpn;
    if (!t->have_coll) {
        fprintf(stderr,
                "herd calibrate: %s:%u: cannot tell which collective "
                "this table measured (no `Collective test starting` line, no "
                "*_perf binary name, file name or all_reduce bandwidth "
                "ratio): pass --coll\n",
                path, t->line);
        return 2;
    }
    if (t->nranks < 1) {
        fprintf(stderr,
                "herd calibrate: %s:%u: the log names no ranks (no "
                "`#  Rank` lines): pass --nodes and --gpus-per-node\n",
                path, t->line);
        return 2;
    }
    if (t->nnodes < 1)
        t->nnodes = 1;
    return 0;
}

/* Ring steps the latency floor is spread over. */
static double cf_ring_steps(herd_coll_t coll, int p)
{
    if (p < 2)
        return 1;
    return coll == HERD_COLL_ALL_REDUCE ? 2.0 * (p - 1) : (double)(p - 1);
}

static void cf_print_fit(FILE *out, const char *path,
                         const trace_ncclt_table_t *t,
                         const trace_ncclt_fit_t *f, int group)
{
    fprintf(out,
            "# %s (%s:%u, %d ranks on %d node(s), %s, collective from "
            "%s):\n",
            herd_coll_name(t->coll), path, t->line, t->nranks, t->nnodes,
            group ? "in-place" : "out-of-place", t->coll_from);
    for (int r = 0; r < f->nregimes; r++) {
        const trace_ncclt_regime_t *g = &f->regime[r];
        char bw[32];
        cf_bw(g->beta_Bps, bw, sizeof(bw));
        fprintf(out,
                "#   %llu B .. %llu B: alpha %.2f us, bus bandwidth %s, "
                "max residual %.1f%% (%zu sizes)\n",
                (unsigned long long)g->lo, (unsigned long long)g->hi,
                g->alpha_s * 1e6, g->beta_Bps > 0 ? bw : "-",
                g->max_resid * 100, g->n);
    }
    char peak[32];
    cf_bw(f->peak_busbw_Bps, peak, sizeof(peak));
    fprintf(out, "#   peak busbw measured: %s\n", peak);
}

static void cf_cluster(FILE *out, const trace_ncclt_table_t *t,
                       const trace_ncclt_fit_t *f)
{
    const trace_ncclt_regime_t *small = &f->regime[0];
    const trace_ncclt_regime_t *large = &f->regime[f->nregimes - 1];
    double beta = large->beta_Bps > 0 ? large->beta_Bps : f->peak_busbw_Bps;
    double steps = cf_ring_steps(t->coll, t->nranks);
    double lat = small->alpha_s / steps;
    int gpn = t->nranks / t->nnodes > 0 ? t->nranks / t->nnodes : 1;
    const char *cls = t->nnodes > 1 ? "inter" : "intra";
    char bw[32];
    cf_bw(beta, bw, sizeof(bw));
    fprintf(out, "cluster:\n  nodes: %d\n  gpus_per_node: %d\n", t->nnodes,
            gpn);
    fprintf(out,
            "  # ring equivalent of %s: bus bandwidth of the large "
            "sizes; alpha %.2f us over %.0f ring steps\n",
            herd_coll_name(t->coll), small->alpha_s * 1e6, steps);
    fprintf(out, "  %s: {bandwidth: %s, latency: %.3fus}\n", cls, bw,
            lat * 1e6);
}

static int cf_run(const cf_args_t *a, FILE *out)
{
    char err[1024];
    int rc = 0, have_cluster = 0;
    trace_ncclt_table_t best = {0};
    trace_ncclt_fit_t best_fit = {0};
    fprintf(out, "# herd calibrate --from: link parameters fitted to "
                 "nccl-tests output\n");
    for (int i = 0; i < a->nfiles && !rc; i++) {
        trace_ncclt_t log = {0};
        if (trace_ncclt_load(a->files[i], &log, err, sizeof(err))) {
            fprintf(stderr, "herd calibrate: %s\n", err);
            return 2;
        }
        for (size_t k = 0; k < log.ntables && !rc; k++) {
            trace_ncclt_table_t *t = &log.tables[k];
            trace_ncclt_fit_t f;
            int group = a->in_place && t->groups > 1;
            if ((rc = cf_shape(a, t, a->files[i])))
                break;
            if (trace_ncclt_fit(t, group, &f, err, sizeof(err))) {
                fprintf(stderr, "herd calibrate: %s: %s\n", a->files[i], err);
                rc = 2;
                break;
            }
            cf_print_fit(out, a->files[i], t, &f, group);
            if (!have_cluster || (t->coll == HERD_COLL_ALL_REDUCE &&
                                  best.coll != HERD_COLL_ALL_REDUCE)) {
                best = *t;
                best.rows = NULL;
                best_fit = f;
                have_cluster = 1;
            }
        }
        trace_ncclt_free(&log);
    }
    if (!rc)
        cf_cluster(out, &best, &best_fit);
    return rc;
}

int cli_calibrate_from_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    cf_args_t a = {0};
    int rc = cf_parse(argc, argv, &a);
    if (rc)
        return rc;
    FILE *out = a.out_path ? fopen(a.out_path, "w") : stdout;
    if (!out) {
        fprintf(stderr, "herd calibrate: cannot write %s\n", a.out_path);
        return 2;
    }
    rc = cf_run(&a, out);
    if (out != stdout && fclose(out) != 0 && !rc) {
        fprintf(stderr, "herd calibrate: cannot write %s\n", a.out_path);
        rc = 2;
    }
    return rc;
}
