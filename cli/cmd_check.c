/* cli/cmd_check.c - `herd check FILE...`: validate scenarios (YAML, and
 * the trace or DDP model their workload names), traces and timelines
 * (JSON) without running anything. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"
#include "trace/scenario.h"
#include "trace/timeline.h"
#include "trace/trace.h"

static const char usage[] =
    "usage: herd check FILE...\n"
    "Validates each file without running it: a scenario (.yaml/.yml, with\n"
    "the trace or DDP model its workload names), a trace (herd-trace JSON)\n"
    "or a timeline (Chrome trace JSON written by herd). Errors name the\n"
    "file, line and column (YAML) or the field (JSON), and the expected\n"
    "form. Exit: 0 all valid, 2 a file is invalid.\n";

static int check_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), e = strlen(ext);
    return n > e && !strcmp(path + n - e, ext);
}

/* A timeline JSON says "traceEvents" near its start. */
static int check_is_timeline(const char *path)
{
    char head[4096];
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(head, 1, sizeof(head) - 1, f);
    fclose(f);
    head[n] = '\0';
    return strstr(head, "\"traceEvents\"") != NULL;
}

static int check_trace(const char *path)
{
    char err[1024];
    trace_t *t = NULL;
    if (trace_read_json(path, &t, err, sizeof(err))) {
        fprintf(stderr, "herd check: %s\n", err);
        return 2;
    }
    printf("%s: ok (trace, %d ranks, %u shared ops, %u per-rank lists)\n", path,
           t->world_size, t->nspmd, t->nrank_lists);
    trace_destroy(t);
    return 0;
}

static int check_timeline(const char *path)
{
    char err[1024];
    trace_timeline_t *tl = NULL;
    if (trace_timeline_read_chrome(path, &tl, err, sizeof(err))) {
        fprintf(stderr, "herd check: %s\n", err);
        return 2;
    }
    const char *engine = trace_timeline_get_meta(tl, "engine");
    printf("%s: ok (timeline, %zu records, engine %s)\n", path,
           trace_timeline_count(tl), engine ? engine : "unknown");
    trace_timeline_destroy(tl);
    return 0;
}

static int check_scenario(const char *path)
{
    char err[1024];
    trace_scenario_t *sc = NULL;
    if (trace_scenario_load(path, &sc, err, sizeof(err))) {
        fprintf(stderr, "herd check: %s\n", err);
        return 2;
    }
    int rc = 0;
    if (sc->wl_kind == TRACE_WL_TRACE) {
        trace_t *t = NULL;
        if (trace_read_json(sc->trace_path, &t, err, sizeof(err))) {
            fprintf(stderr, "herd check: %s: workload.trace: %s\n", path, err);
            rc = 2;
        }
        trace_destroy(t);
    } else if (sc->wl_kind == TRACE_WL_DDP) {
        ddp_job_t *job = NULL;
        rc = cli_ddp_make_job("check", sc, &job);
        ddp_job_destroy(job);
    }
    if (!rc)
        printf("%s: ok (scenario, %d ranks)\n", path,
               trace_scenario_world_size(sc));
    trace_scenario_destroy(sc);
    return rc;
}

int cli_check_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    if (argc < 2)
        return cli_usage_error("check", "missing FILE (see --help)");
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *p = argv[i];
        int r;
        if (check_ext(p, ".yaml") || check_ext(p, ".yml"))
            r = check_scenario(p);
        else if (check_is_timeline(p))
            r = check_timeline(p);
        else
            r = check_trace(p);
        rc = r ? r : rc;
    }
    return rc;
}
