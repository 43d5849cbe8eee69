/* cli/cmd_fsdp.c - `herd fsdp`: simulate FSDP training steps from a
 * scenario and print the predictions (step time, exposed communication
 * per unit, memory per rank) or the diagnosis of a hang; `herd fsdp
 * units` shows how a model is wrapped. The runner is shared with
 * `herd sweep` (cli_fsdp_simulate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_plots.h"
#include "cli/cli_workload.h"
#include "cli/cmd_ddp.h"
#include "cli/cmd_fsdp.h"
#include "trace/timeline.h"

static const char usage[] =
    "usage: herd fsdp run [SCENARIO] [--set KEY=VALUE]... [--gpu-mem GIB]\n"
    "         [--json FILE] [--timeline FILE.json|FILE.tsv] [--trace FILE]\n"
    "         [--plots DIR] [--quiet]\n"
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
    "job as a herd trace for `herd replay`; --plots DIR draws the last\n"
    "step's streams per rank (DIR/step.*) and the memory (DIR/memory.*);\n"
    "--gpu-mem GIB (= fsdp.gpu_mem) says whether the memory of the rank\n"
    "with the most fits a device of GIB GiB, and by how much it does not.\n"
    "units: the units and their\n"
    "sizes, without simulating. strategies: every sharding strategy's\n"
    "memory and step time side by side (see its --help).\n"
    "Exit: 0 ok, 1 hang/error or over fsdp.gpu_mem, 2 input.\n"
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
        cli_wl_option_error(cmd, sc, kv, why);
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
    if (cli_ddp_grad_delays(cmd, sc, &(*out)->model, &(*out)->grad_delays)) {
        fsdp_job_destroy(*out);
        *out = NULL;
        return 2;
    }
    (*out)->data = wl_data_of(sc); /* borrows sc's arrays */
    static int warned;
    cli_wl_warn_no_compute(cmd, &(*out)->model, &warned);
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
    cli_wl_comm_settings(sc, prog->algo, &prog->channels, &prog->chunk_bytes);
    /* backend gloo: gloo's own algorithms and transport (sim/gloo_lower.c)
     * wherever the scenario names no algorithm */
    for (int c = 0; job->cfg.gloo && c < HERD_COLL_COUNT; c++)
        if (prog->algo[c] == HERD_ALGO_AUTO)
            prog->algo[c] = HERD_ALGO_GLOO;
    col->next_cb = extra_cb;
    col->next_arg = extra_arg;
    herd_init_t init = cli_wl_sim_init(sc, job->world, fsdp_collect_cb, col);
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

static int write_outputs(const cli_wl_args_t *a, const cli_fsdp_result_t *res,
                         trace_timeline_t *tl)
{
    fsdp_outcome_t o = {res->status, &res->info, res->prog->errors};
    if (!a->quiet)
        fsdp_report_text(res->col, &o, stdout);
    if (a->json &&
        cli_wl_write_json("fsdp run", fsdp_report_json(res->col, &o), a->json))
        return 2;
    if (tl && a->timeline)
        return cli_wl_write_timeline("fsdp run", tl, a->timeline);
    return 0;
}

/* --plots DIR: the step's Gantt chart and the memory of the rank with the
 * most, by part, against fsdp.gpu_mem. */
static int write_plots(const cli_wl_args_t *a, const trace_scenario_t *sc,
                       const fsdp_job_t *job, const cli_fsdp_result_t *res,
                       trace_timeline_t *tl)
{
    const fsdp_memory_t *m = &res->summary.mem;
    trace_mem_bar_t bar = {fsdp_strategy_name(job->cfg.strategy),
                           {0, 0, 0, (double)m->unsharded, 0},
                           res->summary.step_s * 1e3,
                           res->summary.fits,
                           0,
                           res->status == HERD_OK};
    if (!m->host) { /* cpu_offload: the shards live on the host */
        bar.bytes[TRACE_MEM_PARAMS] = (double)m->params;
        bar.bytes[TRACE_MEM_GRADS] = (double)m->grads;
        bar.bytes[TRACE_MEM_OPTIM] = (double)m->optimizer;
    }
    char name[128];
    trace_scenario_dirname(sc, name, sizeof(name));
    if (!a->scenario) /* the defaults */
        snprintf(name, sizeof(name), "defaults");
    return cli_plot_run("fsdp run", tl, a->plots, name, &bar,
                        "unsharded units (params + grads)",
                        wl_gpu_mem_bytes(job->cfg.gpu_mem_gib));
}

static int write_trace(const fsdp_job_t *job, const char *path)
{
    trace_t *t = NULL;
    herd_status_t st = fsdp_trace_build(job, &t);
    return cli_wl_write_trace("fsdp run", st, t, path);
}

static int run_main(int argc, char **argv)
{
    cli_wl_args_t a;
    trace_scenario_t *sc = NULL;
    fsdp_job_t *job = NULL;
    trace_timeline_t *tl = NULL;
    int rc = cli_wl_parse_args("fsdp run", "fsdp.gpu_mem", CLI_WL_SET_LIMIT,
                               argc, argv, &a);
    if (!rc)
        rc =
            cli_ddp_load_scenario("fsdp run", a.scenario, a.sets, a.nsets, &sc);
    if (!rc)
        rc = cli_fsdp_make_job("fsdp run", sc, &job);
    if (!rc && a.trace)
        rc = write_trace(job, a.trace);
    if (!rc && (a.timeline || a.plots) && trace_timeline_create(&tl))
        rc = 2;
    cli_fsdp_result_t res;
    if (!rc && !(rc = cli_fsdp_simulate(
                     sc, job, tl ? trace_timeline_collect : NULL, tl, &res))) {
        rc = write_outputs(&a, &res, tl);
        if (!rc && a.plots)
            rc = write_plots(&a, sc, job, &res, tl);
        if (!rc &&
            (res.status != HERD_OK || res.diagnosis[0] || !res.summary.fits))
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
    cli_wl_args_t a;
    trace_scenario_t *sc = NULL;
    fsdp_job_t *job = NULL;
    int rc =
        cli_wl_parse_args("fsdp units", NULL, CLI_WL_SET_LIMIT, argc, argv, &a);
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
