/* cli/cmd_parallel.c - `herd parallel`: simulate a 3D-parallel training
 * step (Megatron tensor and pipeline parallelism, data parallelism or
 * DeepSpeed ZeRO across replicas) from a scenario and print the step,
 * the idle time against the pipeline bubble, the communication by kind
 * and the memory per rank; `herd parallel layout` shows the rank groups
 * and stages without simulating. The runner is shared with `herd sweep`
 * and `herd sim` (cli_parallel_simulate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_plots.h"
#include "cli/cli_workload.h"
#include "cli/cmd_ddp.h"
#include "cli/cmd_parallel.h"
#include "trace/timeline.h"

static const char usage[] =
    "usage: herd parallel run [SCENARIO] [--set KEY=VALUE]... [--gpu-mem GIB]\n"
    "         [--json FILE] [--timeline FILE.json|FILE.tsv] [--trace FILE]\n"
    "         [--plots DIR] [--quiet]\n"
    "       herd parallel layout [SCENARIO] [--set KEY=VALUE]... [--gpu-mem "
    "GIB]\n"
    "run: simulates the job of SCENARIO's `workload: parallel:` section (or\n"
    "the defaults: gpt2_small, tp 1, pp 1, dp over one node of 8 GPUs, 1F1B\n"
    "with 8 micro-batches) and prints the step time, the idle time (pipeline\n"
    "bubble and exposed communication) next to the schedule's bubble\n"
    "(P-1)/(M+P-1), the communication per kind (tp, pp, dp, zero3), rank 0's\n"
    "collectives per step, and the memory per rank (parameters, gradients,\n"
    "optimizer state with ZeRO's sharding, activations of the micro-batches\n"
    "in flight). Ranks are laid out as Megatron does, tp fastest, then dp,\n"
    "then pp: rank = pp_idx*(dp*tp) + dp_idx*tp + tp_idx.\n"
    "--set takes any scenario key (parallel.tp=4, parallel.schedule=gpipe,\n"
    "parallel.zero_stage=2, cluster.nodes=4, ...); --gpu-mem GIB is\n"
    "parallel.gpu_mem: a layout over it is marked (and never recommended\n"
    "by herd sweep); --trace writes the job as a herd trace for `herd\n"
    "replay`; --plots DIR draws the last step's streams per rank\n"
    "(DIR/step.*) and the memory (DIR/memory.*). layout: the groups of\n"
    "rank 0, the layers per stage and the\n"
    "memory, without simulating.\n"
    "Exit: 0 ok, 1 hang/error or does not fit --gpu-mem, 2 input.\n"
    "Options: docs/parallel.md.\n";

int cli_parallel_make_job(const char *cmd, const trace_scenario_t *sc,
                          par_job_t **out)
{
    par_cfg_t cfg;
    char err[1024], why[768], dir[1024];
    par_cfg_init(&cfg);
    for (size_t i = 0; i < sc->nparallel; i++) {
        const trace_kv_t *kv = &sc->parallel[i];
        if (par_cfg_set(&cfg, kv->key, kv->value, why, sizeof(why)) == HERD_OK)
            continue;
        cli_wl_option_error(cmd, sc, kv, why);
        return 2;
    }
    cli_ddp_resolve_model(sc, cfg.model, sizeof(cfg.model));
    herd_status_t st =
        par_job_create(&cfg, cli_ddp_models_dir(dir, sizeof(dir)),
                       trace_scenario_world_size(sc),
                       sc->sim.cluster.gpus_per_node, out, err, sizeof(err));
    if (st != HERD_OK) { /* a check across keys: the file, no line */
        fprintf(stderr, "herd %s: %s%s%s\n", cmd, sc->path ? sc->path : "",
                sc->path && *sc->path ? ": " : "", err);
        return 2;
    }
    (*out)->data = wl_data_of(sc); /* borrows sc's arrays */
    static int warned;
    cli_wl_warn_no_compute(cmd, &(*out)->model, &warned);
    return 0;
}

int cli_parallel_simulate(const trace_scenario_t *sc, const par_job_t *job,
                          herd_timeline_cb extra_cb, void *extra_arg,
                          cli_parallel_result_t *res)
{
    par_prog_t *prog = NULL;
    par_collect_t *col = NULL;
    memset(res, 0, sizeof(*res));
    if (par_prog_create(job, &prog) || par_collect_create(job, &col)) {
        par_prog_destroy(prog);
        return 2;
    }
    cli_wl_comm_settings(sc, prog->algo, &prog->channels, &prog->chunk_bytes);
    col->next_cb = extra_cb;
    col->next_arg = extra_arg;
    herd_init_t init = cli_wl_sim_init(sc, job->world, par_collect_cb, col);
    res->status = herd_run(&init, par_prog_main, prog, &res->info);
    res->prog = prog;
    res->col = col;
    par_collect_summary(col, &res->summary);
    par_outcome_t o = {res->status, &res->info, prog->errors};
    par_report_diagnosis(col, &o, res->diagnosis, sizeof(res->diagnosis));
    return 0;
}

void cli_parallel_result_fini(cli_parallel_result_t *res)
{
    par_collect_destroy(res->col);
    par_prog_destroy(res->prog);
    herd_run_info_clear(&res->info);
    memset(res, 0, sizeof(*res));
}

static int write_outputs(const cli_wl_args_t *a,
                         const cli_parallel_result_t *res, trace_timeline_t *tl)
{
    par_outcome_t o = {res->status, &res->info, res->prog->errors};
    if (!a->quiet)
        par_report_text(res->col, &o, stdout);
    if (a->json && cli_wl_write_json("parallel run",
                                     par_report_json(res->col, &o), a->json))
        return 2;
    if (tl && a->timeline)
        return cli_wl_write_timeline("parallel run", tl, a->timeline);
    return 0;
}

/* --plots DIR: the step's Gantt chart and the memory of the rank with
 * the most, by part, against parallel.gpu_mem. */
static int write_plots(const cli_wl_args_t *a, const trace_scenario_t *sc,
                       const par_job_t *job, const cli_parallel_result_t *res,
                       trace_timeline_t *tl)
{
    const par_summary_t *s = &res->summary;
    char label[64], name[128];
    snprintf(label, sizeof(label), "tp %d x pp %d x dp %d", job->tp, job->pp,
             job->dp);
    trace_mem_bar_t bar = {label,
                           {(double)s->mem.params, (double)s->mem.grads,
                            (double)s->mem.optimizer, (double)s->mem.gathered,
                            (double)s->mem.activations},
                           s->step_s * 1e3,
                           s->fits,
                           0,
                           res->status == HERD_OK};
    trace_scenario_dirname(sc, name, sizeof(name));
    if (!a->scenario) /* the defaults */
        snprintf(name, sizeof(name), "defaults");
    return cli_plot_run("parallel run", tl, a->plots, name, &bar,
                        "ZeRO-3 gathered",
                        wl_gpu_mem_bytes(job->cfg.gpu_mem_gib));
}

static int write_trace(const par_job_t *job, const char *path)
{
    trace_t *t = NULL;
    herd_status_t st = par_trace_build(job, &t);
    return cli_wl_write_trace("parallel run", st, t, path);
}

static int run_main(int argc, char **argv)
{
    cli_wl_args_t a;
    trace_scenario_t *sc = NULL;
    par_job_t *job = NULL;
    trace_timeline_t *tl = NULL;
    int rc = cli_wl_parse_args("parallel run", "parallel.gpu_mem",
                               CLI_WL_SET_LIMIT, argc, argv, &a);
    if (!rc)
        rc = cli_ddp_load_scenario("parallel run", a.scenario, a.sets, a.nsets,
                                   &sc);
    if (!rc)
        rc = cli_parallel_make_job("parallel run", sc, &job);
    if (!rc && a.trace)
        rc = write_trace(job, a.trace);
    if (!rc && (a.timeline || a.plots) && trace_timeline_create(&tl))
        rc = 2;
    cli_parallel_result_t res;
    if (!rc && !(rc = cli_parallel_simulate(
                     sc, job, tl ? trace_timeline_collect : NULL, tl, &res))) {
        rc = write_outputs(&a, &res, tl);
        if (!rc && a.plots)
            rc = write_plots(&a, sc, job, &res, tl);
        if (!rc &&
            (res.status != HERD_OK || res.diagnosis[0] || !res.summary.fits))
            rc = 1;
        cli_parallel_result_fini(&res);
    }
    trace_timeline_destroy(tl);
    par_job_destroy(job);
    trace_scenario_destroy(sc);
    return rc;
}

static void print_group(const par_job_t *j, const char *what, int g)
{
    printf("  %s group:", what);
    if (!g) {
        printf(" rank 0 alone\n");
        return;
    }
    for (int i = 0; i < j->groups[g - 1].n; i++)
        printf(" %d", j->groups[g - 1].ranks[i]);
    printf("\n");
}

static int layout_main(int argc, char **argv)
{
    cli_wl_args_t a;
    trace_scenario_t *sc = NULL;
    par_job_t *job = NULL;
    int rc = cli_wl_parse_args("parallel layout", "parallel.gpu_mem",
                               CLI_WL_SET_LIMIT, argc, argv, &a);
    if (!rc)
        rc = cli_ddp_load_scenario("parallel layout", a.scenario, a.sets,
                                   a.nsets, &sc);
    if (!rc)
        rc = cli_parallel_make_job("parallel layout", sc, &job);
    if (!rc) {
        const par_job_t *j = job;
        printf("%d ranks = tp %d x pp %d x dp %d; rank = pp_idx*%d + "
               "dp_idx*%d + tp_idx\n",
               j->world, j->tp, j->pp, j->dp, j->dp * j->tp, j->tp);
        printf("rank 0:\n");
        print_group(j, "tensor-parallel", par_job_tp_group(j, 0));
        print_group(j, "data-parallel", par_job_dp_group(j, 0));
        printf("  pipeline:");
        for (int s = 0; s < j->pp; s++)
            printf(" %d", s * j->dp * j->tp);
        printf("\n");
        for (int s = 0; s < j->pp; s++) {
            printf("stage %d: layers", s);
            for (int c = 0; c < j->vstages; c++) {
                int q = c * j->pp + s;
                printf("%s %d-%d", c ? "," : "", j->chunk_first[q],
                       j->chunk_first[q + 1] - 1);
            }
            printf("%s, %.1f M parameters per rank\n",
                   s == j->pp - 1 ? " + root (embeddings, head)" : "",
                   (double)par_job_stage_numel(j, s) / 1e6);
        }
        par_memory_t m;
        if (par_job_memory(j, &m) == HERD_OK) {
            printf("memory per rank (most: rank %d): %.2f GiB", m.rank,
                   (double)m.total / 1073741824.0);
            wl_gpu_mem_verdict(stdout, "parallel", j->cfg.gpu_mem_gib, m.rank,
                               m.total);
            printf("\n");
        }
    }
    par_job_destroy(job);
    trace_scenario_destroy(sc);
    return rc;
}

int cli_parallel_main(int argc, char **argv)
{
    if (argc < 2 || (argv[1][0] == '-' && cli_wants_help(argc, argv, usage)))
        return argc < 2 ? cli_usage_error("parallel",
                                          "expected run or layout (see --help)")
                        : 0;
    if (cli_wants_help(argc - 1, argv + 1, usage))
        return 0;
    if (!strcmp(argv[1], "run"))
        return run_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "layout"))
        return layout_main(argc - 1, argv + 1);
    return cli_usage_error("parallel", "unknown subcommand '%s' (run, layout)",
                           argv[1]);
}
