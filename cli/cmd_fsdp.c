/* cli/cmd_fsdp.c - `herd fsdp`: simulate FSDP training steps from a
 * scenario and print the predictions (step time, exposed communication
 * per unit, memory per rank) or the diagnosis of a hang; `herd fsdp
 * units` shows how a model is wrapped. The runner is shared with
 * `herd sweep` (cli_fsdp_simulate). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"
#include "cli/cmd_fsdp.h"
#include "trace/timeline.h"

static const char usage[] =
    "usage: herd fsdp run [SCENARIO] [--set KEY=VALUE]... [--json FILE]\n"
    "         [--timeline FILE.json|FILE.tsv] [--trace FILE] [--quiet]\n"
    "       herd fsdp units [SCENARIO] [--set KEY=VALUE]...\n"
    "       herd fsdp strategies [SCENARIO] [--set KEY=VALUE]... [--gpu-mem "
    "GIB]\n"
    "run: simulates the FSDP job of SCENARIO's `workload: fsdp:` section\n"
    "(or the defaults: gpt2_small, FULL_SHARD, one unit per transformer\n"
    "block, on one node of 8 GPUs) and prints the step time, the exposed\n"
    "communication per unit, memory per rank (parameters, gradients,\n"
    "optimizer state, unsharded units alive at once) and the diagnosis of\n"
    "a hang. --set takes any scenario key (fsdp.strategy=HYBRID_SHARD,\n"
    "fsdp.backward_prefetch=none, cluster.nodes=4, ...); --trace writes the\n"
    "job as a herd trace for `herd replay`. units: the units and their\n"
    "sizes, without simulating. strategies: every sharding strategy's\n"
    "memory and step time side by side (see its --help).\n"
    "Exit: 0 ok, 1 hang/error, 2 input.\n"
    "Options: docs/fsdp.md.\n";

int cli_fsdp_make_job(const char *cmd, const trace_scenario_t *sc,
                      fsdp_job_t **out)
{
    fsdp_cfg_t cfg;
    char err[1024], why[768], dir[1024];
    fsdp_cfg_init(&cfg);
    for (size_t i = 0; i < sc->nfsdp; i++) {
        const trace_kv_t *kv = &sc->fsdp[i];
        if (fsdp_cfg_set(&cfg, kv->key, kv->value, why, sizeof(why)) == HERD_OK)
            continue;
        if (kv->line > 0)
            fprintf(stderr, "herd %s: %s:%d:%d: %s\n", cmd, sc->path, kv->line,
                    kv->column, why);
        else
            fprintf(stderr, "herd %s: --set %s\n", cmd, why);
        fsdp_cfg_fini(&cfg);
        return 2;
    }
    cli_ddp_resolve_model(sc, cfg.model, sizeof(cfg.model));
    herd_status_t st =
        fsdp_job_create(&cfg, cli_ddp_models_dir(dir, sizeof(dir)),
                        trace_scenario_world_size(sc),
                        sc->sim.cluster.gpus_per_node, out, err, sizeof(err));
    fsdp_cfg_fini(&cfg);
    if (st != HERD_OK) {
        fprintf(stderr, "herd %s: %s\n", cmd, err);
        return 2;
    }
    static int warned;
    if (!ddp_model_has_compute(&(*out)->model) && !warned++)
        fprintf(stderr,
                "herd %s: WARNING: model '%s' has no compute: step times are "
                "communication alone (docs/ddp.md, model files)\n",
                cmd, (*out)->model.name ? (*out)->model.name : "?");
    return 0;
}

int cli_fsdp_simulate(const trace_scenario_t *sc, const fsdp_job_t *job,
                      herd_timeline_cb extra_cb, void *extra_arg,
                      cli_fsdp_result_t *res)
{
    fsdp_prog_t *prog = NULL;
    fsdp_collect_t *col = NULL;
    memset(res, 0, sizeof(*res));
    if (fsdp_prog_create(job, &prog) || fsdp_collect_create(job, &col)) {
        fsdp_prog_destroy(prog);
        return 2;
    }
    for (int c = 0; c < HERD_COLL_COUNT; c++)
        prog->algo[c] = sc->algo[c];
    prog->channels = sc->channels;
    prog->chunk_bytes = sc->chunk_bytes;
    col->next_cb = extra_cb;
    col->next_arg = extra_arg;
    herd_init_t init = {.backend = "sim",
                        .world_size = job->world,
                        .timeout_s = sc->timeout_s,
                        .engine_opts = &sc->sim,
                        .timeline_cb = fsdp_collect_cb,
                        .timeline_arg = col};
    res->status = herd_run(&init, fsdp_prog_main, prog, &res->info);
    res->prog = prog;
    res->col = col;
    fsdp_collect_summary(col, &res->summary);
    fsdp_outcome_t o = {res->status, &res->info, prog->errors};
    fsdp_report_diagnosis(col, &o, res->diagnosis, sizeof(res->diagnosis));
    return 0;
}

void cli_fsdp_result_fini(cli_fsdp_result_t *res)
{
    fsdp_collect_destroy(res->col);
    fsdp_prog_destroy(res->prog);
    herd_run_info_clear(&res->info);
    memset(res, 0, sizeof(*res));
}

typedef struct run_args {
    const char *scenario, *json, *timeline, *trace;
    char *sets[64];
    int nsets, quiet;
} run_args_t;

static int parse_args(const char *cmd, int argc, char **argv, run_args_t *a)
{
    memset(a, 0, sizeof(*a));
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--quiet"))
            a->quiet = 1;
        else if (s[0] == '-' && i + 1 >= argc)
            return cli_usage_error(cmd, "option '%s' needs a value", s);
        else if (!strcmp(s, "--set") && a->nsets < 64)
            a->sets[a->nsets++] = argv[++i];
        else if (!strcmp(s, "--set"))
            return cli_usage_error(cmd, "at most 64 --set options");
        else if (!strcmp(s, "--json"))
            a->json = argv[++i];
        else if (!strcmp(s, "--timeline"))
            a->timeline = argv[++i];
        else if (!strcmp(s, "--trace"))
            a->trace = argv[++i];
        else if (s[0] == '-')
            return cli_usage_error(cmd, "unknown option '%s'", s);
        else if (!a->scenario)
            a->scenario = s;
        else
            return cli_usage_error(cmd, "unexpected '%s'", s);
    }
    return 0;
}

static int write_outputs(const run_args_t *a, const cli_fsdp_result_t *res,
                         trace_timeline_t *tl)
{
    char err[1024];
    fsdp_outcome_t o = {res->status, &res->info, res->prog->errors};
    if (!a->quiet)
        fsdp_report_text(res->col, &o, stdout);
    if (a->json) {
        json_t *j = fsdp_report_json(res->col, &o);
        int bad = !j || json_dump_file(j, a->json, JSON_INDENT(1));
        json_decref(j);
        if (bad)
            return cli_usage_error("fsdp run", "cannot write %s", a->json);
    }
    if (tl) {
        size_t n = strlen(a->timeline);
        trace_timeline_sort(tl);
        herd_status_t st =
            n > 4 && !strcmp(a->timeline + n - 4, ".tsv")
                ? trace_timeline_write_tsv(tl, a->timeline, err, sizeof(err))
                : trace_timeline_write_chrome(tl, a->timeline, err,
                                              sizeof(err));
        if (st != HERD_OK)
            return cli_usage_error("fsdp run", "%s", err);
    }
    return 0;
}

static int write_trace(const fsdp_job_t *job, const char *path)
{
    char err[1024];
    trace_t *t = NULL;
    herd_status_t st = fsdp_trace_build(job, &t);
    if (st == HERD_OK)
        st = trace_write_json(t, path, err, sizeof(err));
    else
        snprintf(err, sizeof(err), "%s", herd_status_string(st));
    trace_destroy(t);
    if (st != HERD_OK)
        return cli_usage_error("fsdp run", "--trace %s: %s", path, err);
    return 0;
}

static int run_main(int argc, char **argv)
{
    run_args_t a;
    trace_scenario_t *sc = NULL;
    fsdp_job_t *job = NULL;
    trace_timeline_t *tl = NULL;
    int rc = parse_args("fsdp run", argc, argv, &a);
    if (!rc)
        rc =
            cli_ddp_load_scenario("fsdp run", a.scenario, a.sets, a.nsets, &sc);
    if (!rc)
        rc = cli_fsdp_make_job("fsdp run", sc, &job);
    if (!rc && a.trace)
        rc = write_trace(job, a.trace);
    if (!rc && a.timeline && trace_timeline_create(&tl) != HERD_OK)
        rc = 2;
    cli_fsdp_result_t res;
    if (!rc && !(rc = cli_fsdp_simulate(
                     sc, job, tl ? trace_timeline_collect : NULL, tl, &res))) {
        rc = write_outputs(&a, &res, tl);
        if (!rc && (res.status != HERD_OK || res.diagnosis[0]))
            rc = 1;
        cli_fsdp_result_fini(&res);
    }
    trace_timeline_destroy(tl);
    fsdp_job_destroy(job);
    trace_scenario_destroy(sc);
    return rc;
}

static void print_units(const fsdp_job_t *j, const fsdp_units_t *us)
{
    printf("%4s %-28s %7s %12s %10s %12s\n", "unit", "name", "params",
           "elements", "MiB", "shard_elems");
    for (size_t u = 0; u < us->n; u++)
        printf("%4zu %-28.28s %7zu %12llu %10.2f %12llu\n", u, us->u[u].name,
               us->u[u].nparams, (unsigned long long)us->u[u].numel,
               (double)us->u[u].bytes / 1048576.0,
               (unsigned long long)fsdp_job_shard_numel(j, &us->u[u]));
}

static int units_main(int argc, char **argv)
{
    run_args_t a;
    trace_scenario_t *sc = NULL;
    fsdp_job_t *job = NULL;
    int rc = parse_args("fsdp units", argc, argv, &a);
    if (!rc)
        rc = cli_ddp_load_scenario("fsdp units", a.scenario, a.sets, a.nsets,
                                   &sc);
    if (!rc)
        rc = cli_fsdp_make_job("fsdp units", sc, &job);
    if (!rc) {
        char w[64];
        printf("model %s: %zu units (%s), sharded over %d ranks\n",
               job->model.name, job->units.n,
               fsdp_wrap_name(&job->cfg.wrap, w, sizeof(w)), job->shard);
        print_units(job, &job->units);
        if (job->cfg.bad_wrap_ranks.n) {
            printf("fsdp.bad_wrap_ranks wrap with %s: %zu units\n",
                   fsdp_wrap_name(&job->cfg.bad_wrap, w, sizeof(w)),
                   job->bad_units.n);
            print_units(job, &job->bad_units);
        }
    }
    fsdp_job_destroy(job);
    trace_scenario_destroy(sc);
    return rc;
}

int cli_fsdp_main(int argc, char **argv)
{
    if (argc < 2 || (argv[1][0] == '-' && cli_wants_help(argc, argv, usage)))
        return argc < 2 ? cli_usage_error("fsdp", "expected run, units or "
                                                  "strategies (see --help)")
                        : 0;
    if (!strcmp(argv[1], "run")) {
        if (cli_wants_help(argc - 1, argv + 1, usage))
            return 0;
        return run_main(argc - 1, argv + 1);
    }
    if (!strcmp(argv[1], "units")) {
        if (cli_wants_help(argc - 1, argv + 1, usage))
            return 0;
        return units_main(argc - 1, argv + 1);
    }
    if (!strcmp(argv[1], "strategies"))
        return cli_fsdp_strategies_main(argc - 1, argv + 1);
    return cli_usage_error(
        "fsdp", "unknown subcommand '%s' (run, units, strategies)", argv[1]);
}
