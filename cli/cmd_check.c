/* cli/cmd_check.c - `herd check FILE...`: validate any herd file without
 * running anything, and say which format it is (cli_format.c recognises
 * it from its content): scenarios (YAML, with the trace or DDP model
 * their workload names), traces, timelines, DDP models, ready orders and
 * flight records (JSON). A foreign file is named as what it is. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"
#include "cli/cmd_fsdp.h"
#include "cli/cmd_parallel.h"
#include "trace/scenario.h"
#include "trace/timeline.h"
#include "trace/trace.h"

static const char usage[] =
    "usage: herd check FILE...\n"
    "Validates each file without running it and says which herd format it\n"
    "is: a scenario (.yaml/.yml, with the trace or DDP model its workload\n"
    "names), a trace (herd-trace JSON), a timeline (Chrome trace JSON\n"
    "written by herd), a DDP model (models/*.json), a ready order (JSON\n"
    "array of parameter indices, for ddp buckets --ready-order) or a flight\n"
    "record (tcp engine dump, for herd diagnose). Errors name the file,\n"
    "line and column (YAML) or the field (JSON), and the expected form.\n"
    "Exit: 0 all valid, 2 a file is invalid or of no herd format.\n";

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
    } else if (sc->wl_kind == TRACE_WL_FSDP) {
        fsdp_job_t *job = NULL;
        rc = cli_fsdp_make_job("check", sc, &job);
        fsdp_job_destroy(job);
    } else if (sc->wl_kind == TRACE_WL_PARALLEL) {
        par_job_t *job = NULL;
        rc = cli_parallel_make_job("check", sc, &job);
        par_job_destroy(job);
    }
    if (!rc)
        printf("%s: ok (scenario, %d ranks; name %s)\n", path,
               trace_scenario_world_size(sc),
               sc->name && *sc->name ? sc->name : "(none)");
    trace_scenario_destroy(sc);
    return rc;
}

static int check_model(const char *path)
{
    char err[1024];
    ddp_model_t m = {0};
    if (ddp_model_load(path, &m, err, sizeof(err)) != HERD_OK) {
        fprintf(stderr, "herd check: %s\n", err);
        return 2;
    }
    printf("%s: ok (model %s, %zu parameters, %llu bytes, %s)\n", path,
           m.name ? m.name : "?", m.nparams, (unsigned long long)m.total_bytes,
           ddp_model_has_compute(&m) ? "with compute"
                                     : "no compute: communication only");
    ddp_model_fini(&m);
    return 0;
}

/* Indices 0..n-1, each once: the model it belongs to has n parameters
 * (herd ddp buckets MODEL --ready-order FILE checks that). */
static int check_ready_order(const char *path)
{
    json_error_t je;
    json_t *a = json_load_file(path, JSON_DECODE_ANY, &je);
    size_t n = json_array_size(a), i;
    unsigned char *seen = calloc(n + 1, 1);
    int rc = 0;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        json_int_t x = json_integer_value(v);
        if (rc || !seen)
            break;
        if (x < 0 || (size_t)x >= n || seen[x])
            rc = cli_usage_error("check",
                                 "%s: entry %zu: %lld is %s; expected each "
                                 "of 0..%zu once",
                                 path, i, (long long)x,
                                 x >= 0 && (size_t)x < n ? "repeated"
                                                         : "out of range",
                                 n ? n - 1 : 0);
        else
            seen[x] = 1;
    }
    if (!rc && seen)
        printf("%s: ok (ready order of %zu parameters; herd ddp buckets "
               "MODEL --ready-order %s checks it against a model)\n",
               path, n, path);
    free(seen);
    json_decref(a);
    return rc ? rc : seen ? 0 : 2;
}

/* The fields herd diagnose relies on. */
static int check_flight(const char *path)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je), *e;
    json_int_t r = json_integer_value(json_object_get(root, "rank"));
    json_int_t w = json_integer_value(json_object_get(root, "world_size"));
    json_t *entries = json_object_get(root, "entries");
    int rc = 0;
    size_t i;
    if (r < 0 || w < 1 || r >= w)
        rc = cli_usage_error("check",
                             "%s: rank %lld of world_size %lld; expected "
                             "0 <= rank < world_size",
                             path, (long long)r, (long long)w);
    json_array_foreach(entries, i, e) if (!rc && !json_is_object(e)) rc =
        cli_usage_error("check", "%s: entries[%zu]: expected an object", path,
                        i);
    if (!rc)
        printf("%s: ok (flight record of rank %lld of %lld, %zu entries; "
               "herd diagnose DIR analyses a folder of them)\n",
               path, (long long)r, (long long)w, json_array_size(entries));
    json_decref(root);
    return rc;
}

#define CHECK_EXPECTED                                                         \
    "expected a herd scenario (.yaml), or a trace, timeline, model, ready "    \
    "order or flight record (JSON)"

/* JSON that is none of herd's formats, or no JSON at all: where the JSON
 * breaks, or the keys it has. */
static int check_foreign_json(const char *path)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_DECODE_ANY, &je);
    if (!root)
        return cli_usage_error("check", "%s:%d:%d: not JSON (%s); %s", path,
                               je.line, je.column, je.text, CHECK_EXPECTED);
    char keys[256] = "";
    size_t o = 0;
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) if (o < sizeof(keys)) o +=
        (size_t)snprintf(keys + o, sizeof(keys) - o, "%s%s", o ? ", " : "", k);
    json_decref(root);
    return cli_usage_error("check", "%s: JSON of no herd format%s%s%s; %s",
                           path, *keys ? " (keys: " : "", keys,
                           *keys ? ")" : "", CHECK_EXPECTED);
}

static int check_one(const char *path)
{
    cli_format_t f = cli_format_sniff(path);
    switch (f) {
    case CLI_FMT_SCENARIO:
        return check_scenario(path);
    case CLI_FMT_TIMELINE:
        return check_timeline(path);
    case CLI_FMT_MODEL:
        return check_model(path);
    case CLI_FMT_READY_ORDER:
        return check_ready_order(path);
    case CLI_FMT_FLIGHT:
        return check_flight(path);
    case CLI_FMT_TRACE:
    case CLI_FMT_UNREADABLE:
        /* the trace reader names the file, line and column or field */
        return check_trace(path);
    case CLI_FMT_NOT_JSON:
    case CLI_FMT_OTHER_JSON:
        return check_foreign_json(path);
    default:
        return cli_usage_error(
            "check", "%s: a %s, not a herd file%s", path, cli_format_name(f),
            f == CLI_FMT_PROFILER || f == CLI_FMT_GZIP
                ? " (`herd import` converts a PyTorch profiler trace)"
                : "");
    }
}

int cli_check_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    if (argc < 2)
        return cli_usage_error("check", "missing FILE (see --help)");
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        int r = check_one(argv[i]);
        rc = r ? r : rc;
    }
    return rc;
}
