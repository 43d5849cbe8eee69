/* cli/cmd_sim.c - `herd sim SCENARIO`: run a scenario's workload (trace,
 * size sweep or DDP model) on the simulator, print a summary and write
 * the timeline (Chrome JSON + TSV) and plots into the output folder. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_plots.h"
#include "cli/cli_simwatch.h"
#include "cli/cmd_ddp.h"
#include "cli/cmd_fsdp.h"
#include "cli/cmd_parallel.h"
#include "cli/cmd_sim.h"
#include "core/sched.h"
#include "trace/plot.h"
#include "trace/replay.h"
#include "trace/sweep_stats.h"
#include "trace/trace.h"

static const char usage[] =
    "usage: herd sim SCENARIO [-o DIR] [--set KEY=VALUE]... [--no-plots]\n"
    "         [--gantt-ranks LIST] [--flight-dir DIR]\n"
    "Runs the scenario's workload (a trace, a collective size sweep or a\n"
    "DDP model) on the simulator in virtual time, prints a summary (and\n"
    "the diagnosis of a hang) and writes into DIR (default out/<name>):\n"
    "timeline.json (Chrome trace: open in ui.perfetto.dev), timeline.tsv,\n"
    "gantt.png/.svg, scenario.yaml (the effective scenario, after --set),\n"
    "for sweeps sweep.tsv and busbw.png/.svg, and for DDP, FSDP and\n"
    "parallel jobs step.dat/.gp/.png/.svg: the last step's Gantt chart, a\n"
    "row per stream and rank, the exposed communication in red.\n"
    "--set overrides any scenario key (cluster.nodes=16, seed=3, ...).\n"
    "--gantt-ranks LIST: the ranks the Gantt charts show (e.g. 0-7,256-263;\n"
    "at most 64; default: ranks 0-31, the step's chart ranks 0, 1, the\n"
    "middle one and the last; the titles say so).\n"
    "--flight-dir DIR: when the run hangs or times out, write every rank's\n"
    "flight record to DIR/rank<r>.json for `herd diagnose DIR` (default:\n"
    "$HERD_FLIGHT_DIR; unset: none).\n"
    "Exit: 0 ok, 1 the run failed or hung, 2 bad usage or input.\n";

typedef struct sim_args {
    const char *scenario;
    const char *out, *gantt_ranks, *flight_dir;
    char *sets[64];
    int nsets, no_plots;
} sim_args_t;

static int sim_parse(int argc, char **argv, sim_args_t *a)
{
    memset(a, 0, sizeof(*a));
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if ((!strcmp(s, "-o") || !strcmp(s, "--out")) && i + 1 < argc)
            a->out = argv[++i];
        else if (!strcmp(s, "--set") && i + 1 < argc && a->nsets < 64)
            a->sets[a->nsets++] = argv[++i];
        else if (!strcmp(s, "--no-plots"))
            a->no_plots = 1;
        else if (!strcmp(s, "--gantt-ranks") && i + 1 < argc)
            a->gantt_ranks = argv[++i];
        else if (!strcmp(s, "--flight-dir") && i + 1 < argc)
            a->flight_dir = argv[++i];
        else if (s[0] == '-' || a->scenario)
            return cli_usage_error("sim",
                                   "unexpected argument '%s' (see "
                                   "--help)",
                                   s);
        else
            a->scenario = s;
    }
    if (!a->scenario)
        return cli_usage_error("sim", "missing SCENARIO (see --help)");
    return 0;
}

int cli_sim_mkdir(const char *cmd, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(path, 0777) && errno != EEXIST) {
            fprintf(stderr, "herd %s: cannot create %s: %s\n", cmd, path,
                    strerror(errno));
            return 2;
        }
        *p = c;
        if (!c)
            return 0;
    }
}

int cli_sim_plot(const char *cmd, const char *script, const char *const *args,
                 int nargs)
{
    char err[1024];
    herd_status_t st =
        trace_plot_run(cli_plots_dir(), script, args, nargs, err, sizeof(err));
    if (st == HERD_ERR_NOT_FOUND && !trace_plot_available()) {
        fprintf(stderr, "herd %s: plots skipped: %s\n", cmd, err);
        return 0;
    }
    if (st) {
        fprintf(stderr, "herd %s: %s\n", cmd, err);
        return 2;
    }
    printf("  %s.png, %s.svg\n", args[1], args[1]);
    return 0;
}

int cli_sim_gantt_rows(const char *cmd, const char *spec, int world, char *rows,
                       size_t len)
{
    int list[SIM_GANTT_MAX_ROWS], n = 0;
    size_t o = 0;
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", spec ? spec : "");
    if (!spec) /* the first ranks */
        for (int r = 0; r < world && n < 32; r++)
            list[n++] = r;
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w;
         w = strtok_r(NULL, ",", &save)) {
        long a, b;
        char *dash = strchr(w + 1, '-');
        if (dash)
            *dash = '\0';
        if (cli_parse_int(w, 0, world - 1, &a) ||
            cli_parse_int(dash ? dash + 1 : w, a, world - 1, &b))
            return cli_usage_error(cmd,
                                   "--gantt-ranks '%s': expected ranks or "
                                   "ranges A-B in [0, %d], comma separated",
                                   spec, world - 1);
        for (long r = a; r <= b; r++) {
            for (int k = 0; k < n; k++)
                if (list[k] == r)
                    return cli_usage_error(cmd,
                                           "--gantt-ranks '%s': rank %ld "
                                           "twice",
                                           spec, r);
            if (n == SIM_GANTT_MAX_ROWS)
                return cli_usage_error(cmd,
                                       "--gantt-ranks '%s': more than %d "
                                       "ranks (a Gantt chart shows at most "
                                       "%d rows)",
                                       spec, SIM_GANTT_MAX_ROWS,
                                       SIM_GANTT_MAX_ROWS);
            list[n++] = (int)r;
        }
    }
    if (!n)
        return cli_usage_error(cmd, "--gantt-ranks '%s': no rank", spec);
    if (rows)
        for (int k = 0; k < n && o < len; k++)
            o += (size_t)snprintf(rows + o, len - o, "%s%d", k ? " " : "",
                                  list[k]);
    return 0;
}

int cli_sim_write_timeline(const char *cmd, trace_timeline_t *tl,
                           const char *dir, const char *title,
                           const char *gantt_ranks, int no_plots)
{
    char json[4096], tsv[4096], gantt[4096], err[1024];
    snprintf(json, sizeof(json), "%s/timeline.json", dir);
    snprintf(tsv, sizeof(tsv), "%s/timeline.tsv", dir);
    snprintf(gantt, sizeof(gantt), "%s/gantt", dir);
    trace_timeline_sort(tl);
    if (trace_timeline_status(tl) ||
        trace_timeline_write_chrome(tl, json, err, sizeof(err)) ||
        trace_timeline_write_tsv(tl, tsv, err, sizeof(err))) {
        fprintf(stderr, "herd %s: %s\n", cmd,
                trace_timeline_status(tl) ? "timeline records lost (out of "
                                            "memory)"
                                          : err);
        return 2;
    }
    printf("wrote:\n  %s (open in ui.perfetto.dev)\n  %s\n", json, tsv);
    size_t n = trace_timeline_count(tl);
    if (no_plots || n == 0)
        return 0;
    int world = 0;
    for (size_t i = 0; i < n; i++)
        if (trace_timeline_recs(tl)[i].rank >= world)
            world = trace_timeline_recs(tl)[i].rank + 1;
    char rows[SIM_GANTT_MAX_ROWS * 8], full[1600];
    if (cli_sim_gantt_rows(cmd, gantt_ranks, world, rows, sizeof(rows)))
        return 2;
    /* the title says which ranks a large run's chart shows */
    if (gantt_ranks)
        snprintf(full, sizeof(full), "%s, ranks %s of %d shown", title,
                 gantt_ranks, world);
    else if (world > 32)
        snprintf(full, sizeof(full),
                 "%s, ranks 0-31 of %d shown (--gantt-ranks LIST chooses)",
                 title, world);
    else
        snprintf(full, sizeof(full), "%s", title);
    const char *args[] = {tsv, gantt, full, rows};
    return cli_sim_plot(cmd, "gantt.gp", args, 4);
}

int cli_sim_write_rank_timeline(trace_timeline_t *tl, const char *dir,
                                const char *rank)
{
    char json[4096], tsv[4096], err[1024];
    snprintf(json, sizeof(json), "%s/timeline-rank%s.json", dir, rank);
    snprintf(tsv, sizeof(tsv), "%s/timeline-rank%s.tsv", dir, rank);
    trace_timeline_sort(tl);
    if (trace_timeline_write_chrome(tl, json, err, sizeof(err)) ||
        trace_timeline_write_tsv(tl, tsv, err, sizeof(err))) {
        fprintf(stderr, "herd replay: %s\n", err);
        return 2;
    }
    printf("rank %s wrote %s\n", rank, json);
    return 0;
}

typedef struct sim_steps {
    uint64_t *lo, *hi; /* per step: first start, last end over ranks */
    size_t n, cap;
} sim_steps_t;

static int sim_steps_put(sim_steps_t *s, size_t k, uint64_t lo, uint64_t hi)
{
    if (k >= s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        uint64_t *a = realloc(s->lo, cap * sizeof(*a));
        if (a)
            s->lo = a;
        uint64_t *b = a ? realloc(s->hi, cap * sizeof(*b)) : NULL;
        if (!b)
            return -1;
        s->hi = b;
        s->cap = cap;
    }
    if (k >= s->n) {
        s->lo[k] = lo, s->hi[k] = hi, s->n = k + 1;
        return 0;
    }
    s->lo[k] = lo < s->lo[k] ? lo : s->lo[k];
    s->hi[k] = hi > s->hi[k] ? hi : s->hi[k];
    return 0;
}

/* One rank's records [i, j): its "step" marks cut its time into steps. */
static int sim_steps_rank(const herd_tl_rec_t *r, size_t i, size_t j,
                          sim_steps_t *s)
{
    uint64_t end = 0;
    for (size_t x = i; x < j; x++)
        end = r[x].end_ns > end ? r[x].end_ns : end;
    size_t k = 0;
    uint64_t prev = 0;
    int open = 0;
    for (size_t x = i; x < j; x++) {
        if (r[x].kind != HERD_TL_MARK || !r[x].label ||
            strcmp(r[x].label, "step"))
            continue;
        if (open && sim_steps_put(s, k++, prev, r[x].start_ns))
            return -1;
        prev = r[x].start_ns;
        open = 1;
    }
    return open ? sim_steps_put(s, k, prev, end) : 0;
}

/* Step times (first start to last end over the ranks), when the run
 * marks its steps. */
static void sim_print_steps(trace_timeline_t *tl, FILE *f)
{
    trace_timeline_sort(tl);
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    size_t n = trace_timeline_count(tl);
    sim_steps_t s = {0};
    int rc = 0;
    for (size_t i = 0, j; i < n && !rc; i = j) {
        for (j = i; j < n && r[j].rank == r[i].rank; j++)
            ;
        rc = sim_steps_rank(r, i, j, &s);
    }
    if (!rc && s.n) {
        double sum = 0, max = 0;
        fprintf(f, "steps (from \"step\" marks):");
        for (size_t k = 0; k < s.n; k++) {
            double ms = (double)(s.hi[k] - s.lo[k]) * 1e-6;
            sum += ms;
            max = ms > max ? ms : max;
            if (k < 8)
                fprintf(f, " %.3f", ms);
        }
        fprintf(f, "%s ms; mean %.3f ms, max %.3f ms over %zu steps\n",
                s.n > 8 ? " ..." : "", sum / (double)s.n, max, s.n);
    }
    free(s.lo);
    free(s.hi);
}

void cli_sim_print_kinds(trace_timeline_t *tl, FILE *f)
{
    sim_print_steps(tl, f);
    enum { K = HERD_COLL_COUNT + 2 };
    struct {
        uint64_t n;
        double sum, max;
    } k[K] = {{0, 0, 0}};
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    for (size_t i = 0; i < trace_timeline_count(tl); i++) {
        int idx = r[i].kind == HERD_TL_COLL      ? (int)r[i].coll
                  : r[i].kind == HERD_TL_COMPUTE ? HERD_COLL_COUNT
                  : r[i].kind == HERD_TL_WAIT    ? HERD_COLL_COUNT + 1
                                                 : -1;
        if (idx < 0)
            continue;
        double d = (double)(r[i].end_ns - r[i].start_ns) * 1e-6;
        k[idx].n++;
        k[idx].sum += d;
        k[idx].max = d > k[idx].max ? d : k[idx].max;
    }
    fprintf(f, "%-16s %10s %14s %14s\n", "op (all ranks)", "count", "mean (ms)",
            "max (ms)");
    for (int i = 0; i < K; i++)
        if (k[i].n)
            fprintf(f, "%-16s %10llu %14.4f %14.4f\n",
                    i < HERD_COLL_COUNT    ? herd_coll_name((herd_coll_t)i)
                    : i == HERD_COLL_COUNT ? "compute"
                                           : "wait",
                    (unsigned long long)k[i].n, k[i].sum / (double)k[i].n,
                    k[i].max);
}

/* Drop the sweep's algorithms that core cannot lower for its collective:
 * a clear note beats a run where every rank fails. */
static int sim_sweep_filter(trace_sweep_t *sw)
{
    int k = 0;
    for (int i = 0; i < sw->nalgos; i++) {
        /* nccl, gloo: the simulator models every collective of theirs */
        if (core_sched_is_library(sw->algos[i]) ||
            core_sched_supports(sw->algos[i], sw->coll))
            sw->algos[k++] = sw->algos[i];
        else
            fprintf(stderr,
                    "herd sim: note: algorithm %s does not implement "
                    "%s in this build; skipped\n",
                    herd_algo_name(sw->algos[i]), herd_coll_name(sw->coll));
    }
    sw->nalgos = k;
    if (k == 0)
        fprintf(stderr, "herd sim: no algorithm of workload.sweep can run %s\n",
                herd_coll_name(sw->coll));
    return k ? 0 : 2;
}

/* The scenario's workload as a trace of the scenario's world size. */
static int sim_workload(trace_scenario_t *sc, trace_t **out)
{
    char err[1024];
    int world = trace_scenario_world_size(sc);
    if (sc->wl_kind == TRACE_WL_SWEEP) {
        if (sim_sweep_filter(&sc->sweep))
            return 2;
        return trace_from_sweep(&sc->sweep, world, out) ? 2 : 0;
    }
    trace_t *t = NULL;
    if (trace_read_json(sc->trace_path, &t, err, sizeof(err))) {
        fprintf(stderr, "herd sim: workload.trace: %s\n", err);
        return 2;
    }
    if (t->world_size != world) {
        trace_t *r = NULL;
        herd_status_t st = trace_rescale(t, world, &r, err, sizeof(err));
        if (!st)
            printf("trace %s: rescaled from %d to %d ranks\n", sc->trace_path,
                   t->world_size, world);
        trace_destroy(t);
        if (st) {
            fprintf(stderr, "herd sim: %s\n", err);
            return 2;
        }
        t = r;
    }
    *out = t;
    return 0;
}

static void sim_header(const trace_scenario_t *sc)
{
    static const char *kinds[] = {"none", "trace", "sweep",
                                  "ddp",  "fsdp",  "parallel"};
    const herd_cluster_t *c = &sc->sim.cluster;
    printf("scenario %s: %d ranks (%d nodes x %d GPUs), workload %s",
           sc->name ? sc->name : sc->path, trace_scenario_world_size(sc),
           c->nodes, c->gpus_per_node, kinds[sc->wl_kind]);
    if (sc->wl_kind == TRACE_WL_TRACE)
        printf(" %s", sc->trace_path);
    if (sc->wl_kind == TRACE_WL_SWEEP)
        printf(" %s", herd_coll_name(sc->sweep.coll));
    printf("\n");
}

static void sim_outcome(herd_status_t st, const herd_run_info_t *info,
                        double wall_s)
{
    printf("result: %s\n", st ? herd_status_string(st) : "ok");
    printf("simulated time: %.6f s, %llu events, %.2f s wall\n",
           (double)info->end_time_ns * 1e-9, (unsigned long long)info->events,
           wall_s);
    if (info->report)
        printf("%s%s", info->report,
               info->report[strlen(info->report) - 1] == '\n' ? "" : "\n");
}

/* The ranks' own errors; after a diagnosed hang they only repeat that
 * each rank was aborted, so they are left out then. */
static void sim_rank_errors(char **errors, int world, int show)
{
    int shown = 0;
    for (int r = 0; r < world; r++) {
        if (!errors[r])
            continue;
        if (show && shown++ < 8)
            printf("rank %d failed: %s\n", r, errors[r]);
        free(errors[r]);
    }
    if (shown > 8)
        printf("... and %d more ranks failed\n", shown - 8);
}

static double sim_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

herd_status_t cli_sim_replay(const trace_scenario_t *sc, const trace_t *t,
                             int steps, trace_timeline_t *tl)
{
    trace_replay_t rp;
    trace_replay_init(&rp, t);
    memcpy(rp.algo, sc->algo, sizeof(rp.algo));
    rp.channels = sc->channels;
    rp.chunk_bytes = sc->chunk_bytes;
    rp.steps = steps ? steps : sc->steps;
    char werr[512];
    if (trace_replay_check_work(t, rp.steps, werr, sizeof(werr)) != HERD_OK) {
        fprintf(stderr, "herd: %s: %s\n", sc->path ? sc->path : "scenario",
                werr);
        return HERD_ERR_INVALID_ARG;
    }
    rp.errors = calloc((size_t)t->world_size, sizeof(char *));
    if (!rp.errors)
        return HERD_ERR_NO_MEMORY;
    herd_sim_opts_t opts = sc->sim; /* with progress and SIGINT */
    cli_simwatch_arm(&opts, 1);
    herd_init_t init = {.backend = "sim",
                        .world_size = t->world_size,
                        .timeout_s = sc->timeout_s,
                        .engine_opts = &opts,
                        .timeline_cb = trace_timeline_collect,
                        .timeline_arg = tl};
    herd_run_info_t info = {0};
    double t0 = sim_clock();
    herd_status_t st = herd_run(&init, trace_replay_main, &rp, &info);
    cli_simwatch_done(&opts);
    sim_outcome(st, &info, sim_clock() - t0);
    sim_rank_errors(rp.errors, t->world_size,
                    !info.report ||
                        (st != HERD_ERR_HANG && st != HERD_ERR_TIMEOUT &&
                         st != HERD_ERR_ABORTED));
    free(rp.errors);
    herd_run_info_clear(&info);
    return st;
}

static int sim_sweep_outputs(const trace_scenario_t *sc, trace_timeline_t *tl,
                             const char *dir, int no_plots)
{
    trace_sweep_row_t *rows = NULL;
    size_t n = 0;
    /* room for the directory (up to 4095 bytes) and the file name */
    char tsv[4096 + 16], prefix[4096 + 16], title[512], err[1024];
    if (trace_sweep_stats(tl, &sc->sweep, trace_scenario_world_size(sc), &rows,
                          &n))
        return 2;
    trace_sweep_print(rows, n, &sc->sweep, stdout);
    snprintf(tsv, sizeof(tsv), "%s/sweep.tsv", dir);
    snprintf(prefix, sizeof(prefix), "%s/busbw", dir);
    snprintf(title, sizeof(title), "%s busbw, %d ranks (%s)",
             herd_coll_name(sc->sweep.coll), trace_scenario_world_size(sc),
             sc->name ? sc->name : sc->path);
    int rc = 0;
    if (trace_sweep_write_tsv(rows, n, tsv, err, sizeof(err))) {
        fprintf(stderr, "herd sim: %s\n", err);
        rc = 2;
    }
    free(rows);
    if (!rc)
        printf("  %s\n", tsv);
    const char *args[] = {tsv, prefix, title};
    return rc || no_plots || n == 0 ? rc
                                    : cli_sim_plot("sim", "busbw.gp", args, 3);
}

/* workload.ddp: the DDP engineer's job and program, our timeline. */
static int sim_ddp(const trace_scenario_t *sc, trace_timeline_t *tl)
{
    ddp_job_t *job = NULL;
    if (cli_ddp_make_job("sim", sc, &job))
        return 2;
    cli_ddp_result_t res;
    double t0 = sim_clock();
    int rc = cli_ddp_simulate(sc, job, trace_timeline_collect, tl, &res);
    if (!rc) {
        sim_outcome(res.status, &res.info, sim_clock() - t0);
        ddp_outcome_t o = {res.status, &res.info, res.prog->raised,
                           res.prog->errors};
        ddp_report_text(res.col, &o, stdout);
        rc = res.status != HERD_OK || res.diagnosis[0] ? 1 : 0;
        cli_ddp_result_fini(&res);
    }
    ddp_job_destroy(job);
    return rc;
}

/* workload.fsdp: the same for an FSDP job (cli/cmd_fsdp.c). */
static int sim_fsdp(const trace_scenario_t *sc, trace_timeline_t *tl)
{
    fsdp_job_t *job = NULL;
    if (cli_fsdp_make_job("sim", sc, &job))
        return 2;
    cli_fsdp_result_t res;
    double t0 = sim_clock();
    int rc = cli_fsdp_simulate(sc, job, trace_timeline_collect, tl, &res);
    if (!rc) {
        sim_outcome(res.status, &res.info, sim_clock() - t0);
        fsdp_outcome_t o = {res.status, &res.info, res.prog->errors};
        fsdp_report_text(res.col, &o, stdout);
        rc = res.status != HERD_OK || res.diagnosis[0] ? 1 : 0;
        cli_fsdp_result_fini(&res);
    }
    fsdp_job_destroy(job);
    return rc;
}

/* workload.parallel: the same for a 3D-parallel job (cmd_parallel.c). */
static int sim_parallel(const trace_scenario_t *sc, trace_timeline_t *tl)
{
    par_job_t *job = NULL;
    if (cli_parallel_make_job("sim", sc, &job))
        return 2;
    cli_parallel_result_t res;
    double t0 = sim_clock();
    int rc = cli_parallel_simulate(sc, job, trace_timeline_collect, tl, &res);
    if (!rc) {
        sim_outcome(res.status, &res.info, sim_clock() - t0);
        par_outcome_t o = {res.status, &res.info, res.prog->errors};
        par_report_text(res.col, &o, stdout);
        rc = res.status != HERD_OK || res.diagnosis[0] ? 1 : 0;
        cli_parallel_result_fini(&res);
    }
    par_job_destroy(job);
    return rc;
}

static int sim_run(trace_scenario_t *sc, trace_timeline_t *tl)
{
    if (sc->wl_kind == TRACE_WL_PARALLEL)
        return sim_parallel(sc, tl);
    if (sc->wl_kind == TRACE_WL_DDP)
        return sim_ddp(sc, tl);
    if (sc->wl_kind == TRACE_WL_FSDP)
        return sim_fsdp(sc, tl);
    trace_t *t = NULL;
    int rc = sim_workload(sc, &t);
    if (rc)
        return rc;
    herd_status_t st = cli_sim_replay(sc, t, 0, tl);
    trace_destroy(t);
    return st == HERD_ERR_NO_MEMORY ? 2 : st ? 1 : 0;
}

/* The effective scenario (after --set), so a run can be repeated. */
static int sim_save_scenario(const trace_scenario_t *sc, const char *dir)
{
    char path[4096 + 16];
    snprintf(path, sizeof(path), "%s/scenario.yaml", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# effective scenario of `herd sim %s`\n", sc->path);
    herd_status_t st = trace_scenario_write(sc, f);
    return fclose(f) || st ? -1 : 0;
}

static int sim_main(const sim_args_t *a, trace_scenario_t *sc)
{
    char dir[4096], title[512], name[128];
    trace_scenario_dirname(sc, name, sizeof(name));
    snprintf(dir, sizeof(dir), "%s", a->out ? a->out : "out");
    if (!a->out)
        snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", name);
    if (sc->wl_kind == TRACE_WL_NONE) {
        fprintf(stderr,
                "herd sim: %s: no workload (expected workload: "
                "{trace: FILE} | {sweep: {...}} | {ddp: {...}})\n",
                sc->path);
        return 2;
    }
    if (a->gantt_ranks &&
        cli_sim_gantt_rows("sim", a->gantt_ranks, trace_scenario_world_size(sc),
                           NULL, 0))
        return 2;
    if (cli_sim_mkdir("sim", dir))
        return 2;
    trace_timeline_t *tl = NULL;
    if (trace_timeline_create(&tl) ||
        trace_timeline_set_meta(tl, "engine", "sim") ||
        trace_timeline_set_meta(tl, "scenario", sc->path) ||
        (sc->name && *sc->name &&
         trace_timeline_set_meta(tl, "name", sc->name))) {
        trace_timeline_destroy(tl);
        return 2;
    }
    sim_header(sc);
    if (sim_save_scenario(sc, dir))
        fprintf(stderr, "herd sim: note: could not record %s/scenario.yaml\n",
                dir);
    int rc = sim_run(sc, tl);
    if (rc != 2) {
        cli_sim_print_kinds(tl, stdout);
        snprintf(title, sizeof(title), "%s: %d ranks (sim)", name,
                 trace_scenario_world_size(sc));
        int wrc = cli_sim_write_timeline("sim", tl, dir, title, a->gantt_ranks,
                                         a->no_plots);
        if (!wrc && sc->wl_kind == TRACE_WL_SWEEP)
            wrc = sim_sweep_outputs(sc, tl, dir, a->no_plots);
        /* a workload's step: its streams per rank, the exposed time */
        if (!wrc && !a->no_plots &&
            (sc->wl_kind == TRACE_WL_DDP || sc->wl_kind == TRACE_WL_FSDP ||
             sc->wl_kind == TRACE_WL_PARALLEL))
            wrc = cli_plot_step("sim", tl, dir, name, a->gantt_ranks);
        rc = wrc ? wrc : rc;
    }
    trace_timeline_destroy(tl);
    return rc;
}

int cli_sim_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    sim_args_t a;
    int rc = sim_parse(argc, argv, &a);
    if (rc)
        return rc;
    trace_scenario_t *sc = NULL;
    if (cli_ddp_load_scenario("sim", a.scenario, a.sets, a.nsets, &sc))
        return 2;
    if (a.flight_dir)
        sc->sim.flight_dir = a.flight_dir;
    rc = sim_main(&a, sc);
    trace_scenario_destroy(sc);
    return rc;
}
