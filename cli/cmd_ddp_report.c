/* cli/cmd_ddp_report.c - `herd ddp report`: the DDP predictions (step
 * time, exposed communication, overlap, critical rank, bucket times)
 * computed from measured timelines, e.g. the per-rank files `herd replay
 * --engine tcp|nccl` writes for a trace from `herd ddp run --trace`. The
 * DDP program's labels and marks are in those records too, so the same
 * collector reads predicted and measured runs. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"
#include "trace/timeline.h"

static const char usage[] =
    "usage: herd ddp report [SCENARIO] [--set KEY=VALUE]... --from FILE\n"
    "         [--from FILE]... [--json OUT]\n"
    "Reads timelines (Chrome JSON, any engine; one file per rank or one for\n"
    "all) of a DDP job and prints the same report as `herd ddp run`.\n"
    "SCENARIO and --set describe the job (model, bucket_cap_mb, world\n"
    "size, ...) as they did for the run that wrote the trace. A file that\n"
    "is not a herd timeline is refused, naming what it is; timelines with\n"
    "no DDP step are an error (exit 1).\n";

typedef struct report_args {
    const char *scenario, *json;
    char *sets[64];
    int nsets;
    const char *from[1024];
    int nfrom;
} report_args_t;

static int parse(int argc, char **argv, report_args_t *a)
{
    memset(a, 0, sizeof(*a));
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] == '-' && i + 1 >= argc)
            return cli_usage_error("ddp report", "option '%s' needs a value",
                                   s);
        if (!strcmp(s, "--set") && a->nsets < 64)
            a->sets[a->nsets++] = argv[++i];
        else if (!strcmp(s, "--from") && a->nfrom < 1024)
            a->from[a->nfrom++] = argv[++i];
        else if (!strcmp(s, "--json"))
            a->json = argv[++i];
        else if (s[0] == '-')
            return cli_usage_error("ddp report", "bad option '%s'", s);
        else if (!a->scenario)
            a->scenario = s;
        else
            return cli_usage_error("ddp report", "unexpected '%s'", s);
    }
    if (!a->nfrom)
        return cli_usage_error("ddp report", "give at least one --from FILE");
    return 0;
}

/* Feed one timeline file's records to the collector. */
static int feed(const char *path, ddp_collect_t *col)
{
    char err[1024];
    trace_timeline_t *tl = NULL;
    if (cli_format_expect("ddp report", path, CLI_FMT_TIMELINE))
        return 2;
    if (trace_timeline_read_chrome(path, &tl, err, sizeof(err)) != HERD_OK)
        return cli_usage_error("ddp report", "%s", err);
    const herd_tl_rec_t *recs = trace_timeline_recs(tl);
    int rc = 0;
    for (size_t i = 0; i < trace_timeline_count(tl) && !rc; i++) {
        if (recs[i].rank >= col->world)
            rc = cli_usage_error("ddp report",
                                 "%s: rank %d is outside the job's %d ranks "
                                 "(set the world size with --set)",
                                 path, recs[i].rank, col->world);
        else
            ddp_collect_cb(&recs[i], col);
    }
    trace_timeline_destroy(tl);
    return rc;
}

static int print_report(const report_args_t *a, const ddp_collect_t *col)
{
    ddp_outcome_t o = {HERD_OK, NULL, NULL, NULL};
    for (int r = 0; r < col->world; r++)
        if (col->stuck[r].valid)
            o.status = col->stuck[r].status;
    ddp_report_text(col, &o, stdout);
    if (!a->json)
        return 0;
    json_t *j = ddp_report_json(col, &o);
    int bad = !j || json_dump_file(j, a->json, JSON_INDENT(1));
    json_decref(j);
    return bad ? cli_usage_error("ddp report", "cannot write %s", a->json) : 0;
}

int cli_ddp_report_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    report_args_t a;
    trace_scenario_t *sc = NULL;
    ddp_job_t *job = NULL;
    ddp_collect_t *col = NULL;
    int rc = parse(argc, argv, &a);
    if (!rc)
        rc = cli_ddp_load_scenario("ddp report", a.scenario, a.sets, a.nsets,
                                   &sc);
    if (!rc)
        rc = cli_ddp_make_job("ddp report", sc, &job);
    if (!rc && ddp_collect_create(job, &col) != HERD_OK)
        rc = 2;
    for (int i = 0; !rc && i < a.nfrom; i++)
        rc = feed(a.from[i], col);
    ddp_summary_t sum;
    if (!rc) {
        ddp_collect_summary(col, &sum);
        if (sum.iters == 0) {
            fprintf(stderr, "herd ddp report: no DDP step in the timelines "
                            "(no \"step\" marks): give the timelines of a "
                            "DDP job (herd replay of a herd ddp run --trace, "
                            "or herd import of its profiler traces)\n");
            rc = 1;
        }
    }
    if (!rc)
        rc = print_report(&a, col);
    ddp_collect_destroy(col);
    ddp_job_destroy(job);
    trace_scenario_destroy(sc);
    return rc;
}
