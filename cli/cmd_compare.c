/* cli/cmd_compare.c - `herd compare PREDICTED MEASURED...`: match two
 * timelines op by op (the measured side may be one file per rank) and
 * print per op kind the median and p95 relative error of durations and
 * the end-to-end error; write the pairs and a scatter plot. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_sim.h"
#include "trace/compare.h"

static const char usage[] =
    "usage: herd compare PREDICTED MEASURED... [-o DIR] [--no-plots]\n"
    "       herd compare PERF_TABLE NCCL_TESTS_LOG [--in-place]\n"
    "       herd compare STEPS MEASURED_STEPS... [-o DIR]\n"
    "Matches the ops of two timelines (Chrome trace JSON written by herd):\n"
    "collectives by (rank, group, sequence), compute by (rank, order).\n"
    "MEASURED may be several files (one per rank, from herd replay on tcp\n"
    "or nccl); they are merged. Prints per op kind the median and p95 of\n"
    "|predicted - measured| / measured, the median signed error, and the\n"
    "end-to-end error; writes DIR/compare.tsv and DIR/compare.png/.svg\n"
    "(predicted against measured, with y = x). Default DIR: out/compare.\n"
    "Tables: a `herd perf` prediction (its output saved to a file) against\n"
    "an nccl-tests log (all_reduce_perf ...; out-of-place columns, or the\n"
    "in-place ones with --in-place), matched by collective, size, type and\n"
    "reduction: time, busbw and error per size, then the median and max.\n"
    "Step records (HERD_STEPS_DIR's steps.tsv from herd sim or replay on\n"
    "sim, steps-rank<r>.tsv from a real engine): matched by (rank, group,\n"
    "sequence, step); per collective, algorithm, size, rank and step, when\n"
    "the step started and ended after the rank posted the op (medians over\n"
    "the ops), predicted and measured; written to DIR/steps.tsv.\n"
    "A file that is not a herd timeline nor a table (a PyTorch profiler\n"
    "trace: convert it with herd import) is refused, naming what it is.\n"
    "Exit: 0 ok, 1 no op or size matched, 2 bad usage or input.\n";

/* Read one timeline, or append another file's records to *tl. */
static int cmp_read(const char *path, trace_timeline_t **tl)
{
    char err[1024];
    trace_timeline_t *t = NULL;
    if (cli_format_expect("compare", path, CLI_FMT_TIMELINE))
        return 2;
    if (trace_timeline_read_chrome(path, &t, err, sizeof(err))) {
        fprintf(stderr, "herd compare: %s\n", err);
        return 2;
    }
    if (!*tl) {
        *tl = t;
        return 0;
    }
    const herd_tl_rec_t *r = trace_timeline_recs(t);
    int rc = 0;
    for (size_t i = 0; i < trace_timeline_count(t) && !rc; i++)
        rc = trace_timeline_add(*tl, &r[i]) ? 2 : 0;
    trace_timeline_destroy(t);
    return rc;
}

static int cmp_run(const char *pred_path, trace_timeline_t *pred,
                   trace_timeline_t *meas, const char *dir, int no_plots)
{
    char tsv[4096], prefix[4096], title[512], err[1024];
    snprintf(tsv, sizeof(tsv), "%s/compare.tsv", dir);
    snprintf(prefix, sizeof(prefix), "%s/compare", dir);
    trace_timeline_sort(meas);
    trace_cmp_t c;
    if (cli_sim_mkdir("compare", dir) ||
        trace_compare(pred, meas, &c, tsv, err, sizeof(err))) {
        fprintf(stderr, "herd compare: %s\n", err);
        return 2;
    }
    trace_compare_print(&c, stdout);
    if (c.matched == 0) {
        fprintf(stderr, "herd compare: no op matched: are these timelines "
                        "of the same trace?\n");
        return 1;
    }
    printf("wrote:\n  %s\n", tsv);
    /* titled with the run's name (its scenario or trace), else the file's */
    const char *name = trace_timeline_get_meta(pred, "name");
    const char *base = strrchr(pred_path, '/');
    base = base ? base + 1 : pred_path;
    int len = (int)strlen(base);
    if (len > 5 && !strcmp(base + len - 5, ".json"))
        len -= 5;
    if (name)
        snprintf(title, sizeof(title), "%s: predicted vs measured", name);
    else
        snprintf(title, sizeof(title), "%.*s: predicted vs measured", len,
                 base);
    const char *args[] = {tsv, prefix, title};
    return no_plots ? 0 : cli_sim_plot("compare", "compare.gp", args, 3);
}

int cli_compare_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    const char *dir = "out/compare", *files[256];
    int nfiles = 0, no_plots = 0, in_place = 0;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) &&
            i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--no-plots"))
            no_plots = 1;
        else if (!strcmp(argv[i], "--in-place"))
            in_place = 1;
        else if (argv[i][0] == '-' || nfiles == 256)
            return cli_usage_error("compare", "unexpected argument '%s'",
                                   argv[i]);
        else
            files[nfiles++] = argv[i];
    }
    if (nfiles < 2)
        return cli_usage_error("compare", "expected PREDICTED and MEASURED "
                                          "timelines (see --help)");
    if (cli_compare_is_steps(files[0]))
        return cli_compare_steps(files, nfiles, dir);
    if (cli_compare_is_perf_table(files[0]) ||
        cli_compare_is_perf_table(files[1])) {
        if (nfiles != 2)
            return cli_usage_error("compare", "tables compare one PREDICTED "
                                              "with one MEASURED file");
        return cli_compare_perf(files[0], files[1], in_place);
    }
    trace_timeline_t *pred = NULL, *meas = NULL;
    int rc = cmp_read(files[0], &pred);
    for (int i = 1; i < nfiles && !rc; i++)
        rc = cmp_read(files[i], &meas);
    if (!rc)
        rc = cmp_run(files[0], pred, meas, dir, no_plots);
    trace_timeline_destroy(meas);
    trace_timeline_destroy(pred);
    return rc;
}
