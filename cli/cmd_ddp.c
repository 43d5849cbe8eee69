/* cli/cmd_ddp.c - `herd ddp`: DDP model tools.
 *
 *   herd ddp buckets MODEL ...   the reducer's bucket assignment as JSON
 *   herd ddp sampler ...         DistributedSampler shards
 *                                (cmd_ddp_sampler.c)
 *   herd ddp run ...             simulate DDP steps (cmd_ddp_run.c)
 *   herd ddp report ...          the same from measured timelines
 *                                (cmd_ddp_report.c)
 *
 * MODEL is a file, or a name looked up in the models/ folder
 * (HERD_MODELS_DIR overrides where that is). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"
#include "workload/ddp/bucket.h"

static const char buckets_usage[] =
    "usage: herd ddp buckets MODEL [--bucket-cap-mb X] "
    "[--phase initial|rebuilt]\n"
    "         [--find-unused-parameters] [--static-graph] "
    "[--ready-order FILE]\n"
    "         [--grad-dtype float32|float16|bfloat16]\n"
    "Prints DDP's bucket assignment as JSON in the reducer's order (bucket 0\n"
    "is reduced first): bucket_indices, per_bucket_size_limits, "
    "bucket_bytes.\n"
    "FILE is a JSON array of parameter indices in gradient-ready order\n"
    "(default: the model's grad_ready_order, else reverse index order).\n";

const char *cli_ddp_models_dir(char *buf, size_t len)
{
    const char *env = getenv("HERD_MODELS_DIR");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else
        snprintf(buf, len, "%s/../models", cli_plots_dir());
    return buf;
}

int cli_ddp_load_model(const char *cmd, const char *arg, ddp_model_t *m)
{
    char dir[1024], path[2048], err[1024];
    cli_ddp_models_dir(dir, sizeof(dir));
    ddp_model_resolve(arg, dir, path, sizeof(path));
    if (ddp_model_load(path, m, err, sizeof(err)) != HERD_OK) {
        fprintf(stderr, "herd %s: %s\n", cmd, err);
        return 2;
    }
    return 0;
}

/* A JSON array of parameter indices, checked against the model. */
static int load_ready_order(const char *path, const ddp_model_t *m,
                            size_t **out)
{
    json_error_t je;
    json_t *a = json_load_file(path, JSON_DECODE_ANY, &je);
    if (!a)
        return cli_usage_error("ddp buckets", "%s:%d:%d: %s", path, je.line,
                               je.column, je.text);
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    size_t *order = calloc(n + 1, sizeof(size_t));
    int rc = order ? 0 : 2;
    if (!json_is_array(a))
        rc = cli_usage_error("ddp buckets",
                             "%s: expected a JSON array of "
                             "parameter indices",
                             path);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            rc = cli_usage_error("ddp buckets",
                                 "%s: entry %zu is not a "
                                 "parameter index",
                                 path, i);
        else
            order[i] = (size_t)json_integer_value(v);
    }
    char why[256];
    if (rc == 0 && ddp_model_check_order(m, order, n, why, sizeof(why)))
        rc = cli_usage_error("ddp buckets", "%s: %s", path, why);
    json_decref(a);
    if (rc)
        free(order);
    else
        *out = order;
    return rc;
}

json_t *cli_ddp_buckets_json(const ddp_buckets_t *bs)
{
    json_t *idx = json_array(), *lim = json_array(), *bytes = json_array();
    for (size_t k = 0; k < bs->n; k++) {
        json_t *one = json_array();
        for (size_t j = 0; j < bs->b[k].nparams; j++)
            json_array_append_new(one,
                                  json_integer((json_int_t)bs->b[k].params[j]));
        json_array_append_new(idx, one);
        json_array_append_new(lim, json_integer((json_int_t)bs->b[k].limit));
        json_array_append_new(bytes, json_integer((json_int_t)bs->b[k].bytes));
    }
    return json_pack("{s:i,s:o,s:o,s:o}", "num_buckets", (json_int_t)bs->n,
                     "bucket_indices", idx, "per_bucket_size_limits", lim,
                     "bucket_bytes", bytes);
}

typedef struct buckets_args {
    const char *model, *ready_file;
    double cap_mb;
    int rebuilt, find_unused, static_graph, have_gdt;
    herd_dtype_t gdt;
} buckets_args_t;

static int parse_flag_value(buckets_args_t *a, const char *flag, const char *v)
{
    if (!strcmp(flag, "--bucket-cap-mb")) {
        if (cli_parse_double(v, &a->cap_mb) || !(a->cap_mb > 0))
            return cli_usage_error("ddp buckets", "bad --bucket-cap-mb '%s'",
                                   v);
    } else if (!strcmp(flag, "--phase")) {
        if (strcmp(v, "initial") && strcmp(v, "rebuilt"))
            return cli_usage_error("ddp buckets",
                                   "--phase: expected "
                                   "initial or rebuilt, got '%s'",
                                   v);
        a->rebuilt = !strcmp(v, "rebuilt");
    } else if (!strcmp(flag, "--ready-order")) {
        a->ready_file = v;
    } else if (!strcmp(flag, "--grad-dtype")) {
        if (herd_dtype_parse(v, &a->gdt))
            return cli_usage_error("ddp buckets", "unknown dtype '%s'", v);
        a->have_gdt = 1;
    } else {
        return cli_usage_error("ddp buckets", "unknown option '%s'", flag);
    }
    return 0;
}

static int parse_buckets_args(int argc, char **argv, buckets_args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->cap_mb = 25;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int rc = 0;
        if (!strcmp(s, "--find-unused-parameters"))
            a->find_unused = 1;
        else if (!strcmp(s, "--static-graph"))
            a->static_graph = 1;
        else if (s[0] == '-' && i + 1 < argc)
            rc = parse_flag_value(a, s, argv[++i]);
        else if (s[0] == '-')
            rc = cli_usage_error("ddp buckets", "option '%s' needs a value", s);
        else if (!a->model)
            a->model = s;
        else
            rc = cli_usage_error("ddp buckets", "unexpected '%s'", s);
        if (rc)
            return rc;
    }
    if (!a->model)
        return cli_usage_error("ddp buckets", "missing MODEL (see --help)");
    return 0;
}

static void print_buckets(const ddp_model_t *m, const buckets_args_t *a,
                          const ddp_buckets_t *bs, int rebuilt)
{
    json_t *o = cli_ddp_buckets_json(bs);
    json_object_set_new(o, "model", json_string(m->name));
    json_object_set_new(o, "phase",
                        json_string(rebuilt ? "rebuilt" : "initial"));
    json_object_set_new(o, "bucket_cap_mb", json_real(a->cap_mb));
    json_object_set_new(o, "bucket_bytes_cap",
                        json_integer((json_int_t)ddp_cap_bytes(a->cap_mb)));
    char *s = json_dumps(o, JSON_COMPACT);
    if (s)
        printf("%s\n", s);
    free(s);
    json_decref(o);
}

static int cmd_buckets(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, buckets_usage))
        return 0;
    buckets_args_t a;
    int rc = parse_buckets_args(argc, argv, &a);
    ddp_model_t m = {0};
    size_t *ready = NULL;
    if (rc || (rc = cli_ddp_load_model("ddp buckets", a.model, &m)))
        return rc;
    if (a.ready_file && (rc = load_ready_order(a.ready_file, &m, &ready))) {
        ddp_model_fini(&m);
        return rc;
    }
    int rebuilt = a.rebuilt && ddp_rebuilds(a.find_unused, a.static_graph);
    if (a.rebuilt && !rebuilt)
        fprintf(stderr, "herd ddp buckets: find_unused_parameters=True "
                        "never rebuilds; printing the initial buckets\n");
    ddp_buckets_t bs;
    herd_status_t st = ddp_bucket_for_phase(
        &m, rebuilt ? DDP_PHASE_REBUILT : DDP_PHASE_INITIAL,
        ddp_cap_bytes(a.cap_mb), a.find_unused, a.static_graph, ready,
        a.have_gdt ? &a.gdt : NULL, &bs);
    if (st == HERD_OK) {
        print_buckets(&m, &a, &bs, rebuilt);
        ddp_buckets_fini(&bs);
    } else {
        fprintf(stderr, "herd ddp buckets: %s\n", herd_status_string(st));
        rc = 1;
    }
    free(ready);
    ddp_model_fini(&m);
    return rc;
}

static const char ddp_usage[] =
    "usage: herd ddp <command> [options]   (--help on each)\n"
    "  buckets   the reducer's bucket assignment of a model (JSON)\n"
    "  sampler   DistributedSampler / per-rank shards: samples and batches\n"
    "  run       simulate DDP steps: predictions, hangs and errors\n"
    "  report    the same report from measured timelines\n";

int cli_ddp_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(ddp_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "buckets"))
        return cmd_buckets(argc - 1, argv + 1);
    if (!strcmp(argv[1], "sampler"))
        return cli_ddp_sampler_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "run"))
        return cli_ddp_run_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "report"))
        return cli_ddp_report_main(argc - 1, argv + 1);
    return cli_usage_error("ddp", "unknown subcommand '%s'", argv[1]);
}
