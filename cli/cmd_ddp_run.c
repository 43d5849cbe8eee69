/* cli/cmd_ddp_run.c - `herd ddp run`: simulate DDP training steps from a
 * scenario (or the defaults) and print the predictions, and the runner
 * `herd sweep` shares (cli_ddp_simulate). */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_plots.h"
#include "cli/cli_simwatch.h"
#include "cli/cli_workload.h"
#include "cli/cmd_ddp.h"
#include "trace/timeline.h"
#include "workload/ddp/prog.h"
#include "workload/ddp/report.h"
#include "workload/ddp/trace.h"

static const char usage[] =
    "usage: herd ddp run [SCENARIO] [--set KEY=VALUE]... [--json FILE]\n"
    "         [--timeline FILE.json|FILE.tsv] [--trace FILE] [--plots DIR]\n"
    "         [--quiet]\n"
    "Simulates the DDP job of SCENARIO's `workload: ddp:` section (or the\n"
    "defaults: gpt2_small on one node of 8 GPUs) and prints per-step\n"
    "predictions: step time, exposed communication, overlap, critical\n"
    "rank, per-bucket ready/launch/end times, and the diagnosis of a hang\n"
    "or error. --set takes any scenario key (cluster.nodes=64,\n"
    "ddp.bucket_cap_mb=5, ...). --trace writes the job as a herd trace\n"
    "for `herd replay` on tcp or nccl. --plots DIR draws the last step's\n"
    "streams per rank (DIR/step.*: compute, all_reduce, broadcast, the\n"
    "exposed communication). Exit: 0 ok, 1 hang/error, 2 input.\n";

/* Model names resolve in the models dir; paths relative to the scenario
 * file's folder. */
void cli_ddp_resolve_model(const trace_scenario_t *sc, char *model, size_t len)
{
    if (!strchr(model, '/') && !strstr(model, ".json"))
        return;
    if (model[0] == '/' || !sc->path || !*sc->path || access(model, R_OK) == 0)
        return;
    char tmp[1024], joined[1024];
    snprintf(tmp, sizeof(tmp), "%s", sc->path);
    int n = snprintf(joined, sizeof(joined), "%s/%s", dirname(tmp), model);
    if (n > 0 && (size_t)n < sizeof(joined) && (size_t)n < len &&
        access(joined, R_OK) == 0)
        memcpy(model, joined, (size_t)n + 1);
}

int cli_ddp_cfg_from_scenario(const trace_scenario_t *sc, ddp_cfg_t *cfg,
                              char *err, size_t errlen)
{
    ddp_cfg_init(cfg);
    for (size_t i = 0; i < sc->nddp; i++) {
        char why[512];
        const trace_kv_t *kv = &sc->ddp[i];
        if (ddp_cfg_set(cfg, kv->key, kv->value, why, sizeof(why)) == HERD_OK)
            continue;
        if (kv->line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", sc->path, kv->line,
                     kv->column, why);
        else
            snprintf(err, errlen, "--set %s", why);
        return 2;
    }
    for (size_t i = 0; i < sc->ngrads; i++) {
        const trace_grad_straggler_t *g = &sc->grads[i];
        char why[512];
        if (ddp_grad_delays_add(&cfg->grad_delays, g->rank, g->param,
                                g->delay_s, g->only_grad, why, sizeof(why))) {
            snprintf(err, errlen, "%s: %s", sc->path, why);
            return 2;
        }
    }
    cli_ddp_resolve_model(sc, cfg->model, sizeof(cfg->model));
    return 0;
}

/* Progress of a long simulation on stderr ("step 1200 of 50000"), at most
 * twice a second: on a terminal, or wherever with HERD_PROGRESS=1
 * (HERD_PROGRESS=0 turns it off). Rank 0's "step" marks count. */
typedef struct ddp_progress {
    herd_timeline_cb next;
    void *next_arg;
    long done, total;
    double start, last;
    int tty, shown;
} ddp_progress_t;

static double ddp_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void ddp_progress_cb(const herd_tl_rec_t *rec, void *arg)
{
    ddp_progress_t *p = arg;
    if (p->next)
        p->next(rec, p->next_arg);
    if (rec->kind != HERD_TL_MARK || rec->rank != 0 || !rec->label ||
        strcmp(rec->label, "step"))
        return;
    p->done++;
    double now = ddp_wall_s();
    if (now - p->last < 0.5)
        return;
    p->last = now;
    p->shown = 1;
    double left =
        p->done && p->total > p->done
            ? (now - p->start) / (double)p->done * (double)(p->total - p->done)
            : 0;
    fprintf(stderr,
            "%sherd: simulating step %ld of %ld (%.0f%%, about %.0fs "
            "left)%s",
            p->tty ? "\r" : "", p->done, p->total,
            p->total ? 100.0 * (double)p->done / (double)p->total : 0.0, left,
            p->tty ? "" : "\n");
}

static int ddp_progress_off;

void cli_ddp_progress_off(void)
{
    ddp_progress_off = 1;
}

static int ddp_progress_wanted(void)
{
    if (ddp_progress_off)
        return 0;
    const char *e = getenv("HERD_PROGRESS");
    if (e && *e)
        return strcmp(e, "0") != 0;
    return isatty(STDERR_FILENO);
}

int cli_ddp_simulate(const trace_scenario_t *sc, const ddp_job_t *job,
                     herd_timeline_cb extra_cb, void *extra_arg,
                     cli_ddp_result_t *res)
{
    ddp_prog_t *prog = NULL;
    ddp_collect_t *col = NULL;
    memset(res, 0, sizeof(*res));
    if (ddp_prog_create(job, &prog) || ddp_collect_create(job, &col)) {
        ddp_prog_destroy(prog);
        return 2;
    }
    cli_wl_comm_settings(sc, prog->algo, &prog->channels, &prog->chunk_bytes);
    ddp_progress_t prg = {.next = extra_cb,
                          .next_arg = extra_arg,
                          .total = job->rank_iters[0],
                          .start = ddp_wall_s(),
                          .last = 0, /* the first step is shown at once */
                          .tty = isatty(STDERR_FILENO)};
    if (ddp_progress_wanted()) {
        col->next_cb = ddp_progress_cb;
        col->next_arg = &prg;
    } else {
        col->next_cb = extra_cb;
        col->next_arg = extra_arg;
    }
    /* SIGINT ends the run with a partial report (not inside herd sweep,
     * whose workers the interrupt reaches too) */
    herd_sim_opts_t opts = sc->sim;
    if (!ddp_progress_off)
        cli_simwatch_arm(&opts, 0);
    herd_init_t init = cli_wl_sim_init(sc, job->world, ddp_collect_cb, col);
    init.engine_opts = &opts;
    res->status = herd_run(&init, ddp_prog_main, prog, &res->info);
    if (!ddp_progress_off)
        cli_simwatch_done(&opts);
    if (prg.shown && prg.tty) /* clear the progress line */
        fprintf(stderr, "\r%*s\r", 60, "");
    res->prog = prog;
    res->col = col;
    ddp_collect_summary(col, &res->summary);
    ddp_outcome_t o = {res->status, &res->info, prog->raised, prog->errors};
    ddp_report_diagnosis(col, &o, res->diagnosis, sizeof(res->diagnosis));
    return 0;
}

void cli_ddp_result_fini(cli_ddp_result_t *res)
{
    ddp_collect_destroy(res->col);
    ddp_prog_destroy(res->prog);
    herd_run_info_clear(&res->info);
    memset(res, 0, sizeof(*res));
}

int cli_ddp_load_scenario(const char *cmd, const char *path, char **sets,
                          int nsets, trace_scenario_t **out)
{
    char err[1024];
    trace_scenario_t *sc = NULL;
    herd_status_t st = path ? trace_scenario_load(path, &sc, err, sizeof(err))
                            : trace_scenario_create(&sc);
    for (int i = 0; st == HERD_OK && i < nsets; i++) {
        char *eq = strchr(sets[i], '=');
        if (!eq) {
            snprintf(err, sizeof(err), "--set %s: expected KEY=VALUE", sets[i]);
            st = HERD_ERR_PARSE;
            break;
        }
        *eq = '\0';
        st = trace_scenario_set(sc, sets[i], eq + 1, err, sizeof(err));
        *eq = '=';
    }
    if (st == HERD_OK)
        st = trace_scenario_validate(sc, err, sizeof(err));
    if (st != HERD_OK) {
        if (st == HERD_ERR_NO_MEMORY)
            snprintf(err, sizeof(err), "out of memory");
        fprintf(stderr, "herd %s: %s\n", cmd, err);
        trace_scenario_destroy(sc);
        return 2;
    }
    *out = sc;
    return 0;
}

/* Where in the scenario the setting a job error is about was written:
 * "file:line:col: " for "ddp.KEY: ..." errors, "file:line:col: ddp.model: "
 * for the model file's own; "" for a setting from --set or a default. */
static const char *ddp_err_place(const trace_scenario_t *sc, const char *err,
                                 char *buf, size_t len)
{
    const char *key = "model";
    size_t klen = 5;
    unsigned long gi;
    buf[0] = '\0';
    /* a delayed gradient's parameter: the place of its `param` */
    if (sscanf(err, "stragglers.grads[%lu]", &gi) == 1) {
        if (gi < sc->ngrads && sc->grads[gi].line > 0)
            snprintf(buf, len, "%s:%d:%d: ", sc->path, sc->grads[gi].line,
                     sc->grads[gi].column);
        return buf;
    }
    if (!strncmp(err, "ddp.", 4)) {
        key = err + 4;
        klen = strcspn(key, ":[ ");
    }
    buf[0] = '\0';
    for (size_t i = 0; i < sc->nddp; i++) {
        const trace_kv_t *kv = &sc->ddp[i];
        if (strlen(kv->key) != klen || strncmp(kv->key, key, klen) ||
            kv->line <= 0)
            continue;
        snprintf(buf, len, "%s:%d:%d: %s", sc->path, kv->line, kv->column,
                 key == err + 4 ? "" : "ddp.model: ");
    }
    return buf;
}

int cli_ddp_grad_delays(const char *cmd, const trace_scenario_t *sc,
                        const ddp_model_t *m, ddp_grad_delays_t *out)
{
    char err[1024], place[1200];
    ddp_grad_delays_t dl = {.n = 0};
    herd_status_t st = HERD_OK;
    for (size_t i = 0; st == HERD_OK && i < sc->ngrads; i++)
        st = ddp_grad_delays_add(&dl, sc->grads[i].rank, sc->grads[i].param,
                                 sc->grads[i].delay_s, sc->grads[i].only_grad,
                                 err, sizeof(err));
    if (st == HERD_OK)
        st = ddp_grad_delays_check(&dl, m, trace_scenario_world_size(sc), err,
                                   sizeof(err));
    if (st != HERD_OK) {
        fprintf(stderr, "herd %s: %s%s\n", cmd,
                ddp_err_place(sc, err, place, sizeof(place)), err);
        return 2;
    }
    *out = dl;
    return 0;
}

int cli_ddp_make_job(const char *cmd, const trace_scenario_t *sc,
                     ddp_job_t **out)
{
    ddp_cfg_t cfg;
    char err[1024], dir[1024];
    if (cli_ddp_cfg_from_scenario(sc, &cfg, err, sizeof(err))) {
        fprintf(stderr, "herd %s: %s\n", cmd, err);
        return 2;
    }
    if (ddp_job_create(&cfg, cli_ddp_models_dir(dir, sizeof(dir)),
                       trace_scenario_world_size(sc), out, err,
                       sizeof(err)) != HERD_OK) {
        char place[1200];
        fprintf(stderr, "herd %s: %s%s\n", cmd,
                ddp_err_place(sc, err, place, sizeof(place)), err);
        return 2;
    }
    wl_data_t data = wl_data_of(sc); /* borrows sc's arrays */
    ddp_job_set_data(*out, &data);
    /* a model without compute predicts communication alone: say so, once
     * per process (a sweep builds many jobs); measured timelines (ddp
     * report) need none */
    static int warned;
    if (!ddp_model_has_compute(&(*out)->model) && strcmp(cmd, "ddp report") &&
        !warned++)
        fprintf(stderr,
                "herd %s: WARNING: model '%s' has no compute (no forward, "
                "backward or optimizer time): every step simulates zero "
                "compute, so step times are communication alone. Give the "
                "model a \"compute\" section (docs/ddp.md), or measure it: "
                "herd import (a profiler trace) or python3 -m herd_torch "
                "export.\n",
                cmd, (*out)->model.name ? (*out)->model.name : cfg.model);
    return 0;
}

static int write_outputs(const cli_wl_args_t *a, const trace_scenario_t *sc,
                         const cli_ddp_result_t *res, trace_timeline_t *tl)
{
    ddp_outcome_t o = {res->status, &res->info, res->prog->raised,
                       res->prog->errors};
    if (!a->quiet)
        ddp_report_text(res->col, &o, stdout);
    if (a->json &&
        cli_wl_write_json("ddp run", ddp_report_json(res->col, &o), a->json))
        return 2;
    int rc = tl && a->timeline
                 ? cli_wl_write_timeline("ddp run", tl, a->timeline)
                 : 0;
    if (!rc && tl && a->plots) { /* the step's Gantt (DDP is not sharded) */
        char name[128];
        trace_scenario_dirname(sc, name, sizeof(name));
        if (!a->scenario) /* the defaults */
            snprintf(name, sizeof(name), "defaults");
        rc = cli_plot_run("ddp run", tl, a->plots, name, NULL, NULL, 0);
    }
    return rc;
}

static int write_trace(const ddp_job_t *job, const char *path)
{
    trace_t *t = NULL;
    herd_status_t st = ddp_trace_build(job, &t);
    return cli_wl_write_trace("ddp run", st, t, path);
}

int cli_ddp_run_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    cli_wl_args_t a;
    trace_scenario_t *sc = NULL;
    ddp_job_t *job = NULL;
    trace_timeline_t *tl = NULL;
    /* more than 64 --set: "unknown option" (as before) */
    int rc = cli_wl_parse_args("ddp run", NULL, 0, argc, argv, &a);
    if (!rc)
        rc = cli_ddp_load_scenario("ddp run", a.scenario, a.sets, a.nsets, &sc);
    if (!rc)
        rc = cli_ddp_make_job("ddp run", sc, &job);
    if (!rc && a.trace)
        rc = write_trace(job, a.trace);
    if (!rc && (a.timeline || a.plots) && trace_timeline_create(&tl))
        rc = 2;
    cli_ddp_result_t res;
    if (!rc && !(rc = cli_ddp_simulate(
                     sc, job, tl ? trace_timeline_collect : NULL, tl, &res))) {
        rc = write_outputs(&a, sc, &res, tl);
        if (!rc && (res.status != HERD_OK || res.diagnosis[0]))
            rc = 1;
        cli_ddp_result_fini(&res);
    }
    trace_timeline_destroy(tl);
    ddp_job_destroy(job);
    trace_scenario_destroy(sc);
    return rc;
}
