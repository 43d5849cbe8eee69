/* cli/cmd_validate_steps.c - the steps of `herd validate` after set-up:
 * calibrate the links, turn the workload into traces, replay each on the
 * simulator and on the real engine, compare, and write the report. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cmd_sim.h"
#include "cli/cmd_validate.h"
#include "core/sched.h"
#include "real/testbed/testbed.h"
#include "trace/trace.h"

typedef struct vwork {
    char name[64];
    char trace[1024];
} vwork_t;

/* a/b into buf; a path too long for buf is cut (and will then fail to
 * open with a message naming it). */
static void path_join(char *buf, size_t len, const char *a, const char *b)
{
    int n = snprintf(buf, len, "%s/%s", a, b);
    if (n < 0)
        buf[0] = '\0';
}

/* What TCP carries on a link tbf shapes to a rate: a full segment's 1448
 * bytes of data (MTU 1500 less the IP header and TCP's with timestamps)
 * in the 1514 bytes tbf counts (with the Ethernet header). */
#define V_TCP_GOODPUT (1448.0 / 1514.0)

/* The testbed's inter link as TCP sees it, bytes/s; 0 when the hosts'
 * rates differ (nic_factor) or the link is intra-node. */
static double shaped_goodput(const vopts_t *o, const trace_scenario_t *sc)
{
    if (o->nproc)
        return 0;
    for (size_t k = 0; k < sc->nrank_ovr && o->rate_bps <= 0; k++)
        if (sc->rank_ovr[k].nic_factor > 0)
            return 0;
    double bps =
        o->rate_bps > 0 ? o->rate_bps : sc->sim.cluster.inter.bandwidth * 8;
    return bps / 8 * V_TCP_GOODPUT;
}

/* Runs calibrate into `out` and loads it; 0 on success. */
static int calibrate_once(vopts_t *o, const trace_scenario_t *sc,
                          const char *out, const char *log,
                          trace_scenario_t **cal)
{
    char slow[512], err[512];
    char *argv[32];
    int n = validate_real_argv(o, sc, argv, slow, sizeof(slow));
    argv[n++] = "calibrate";
    if (o->comm_cpu)
        argv[n++] = "--comm-cpu";
    if (o->cal_bytes[0]) {
        argv[n++] = "-e";
        argv[n++] = o->cal_bytes;
    }
    argv[n++] = "-o";
    argv[n++] = (char *)out;
    argv[n] = NULL;
    if (!o->calibration) {
        printf("validate: calibrating the links (log: %s)\n", log);
        fflush(stdout);
        if (validate_run_self(argv, log) != 0) {
            fprintf(stderr, "herd validate: calibration failed, see %s\n", log);
            return 1;
        }
    }
    if (trace_scenario_load(out, cal, err, sizeof(err)) != HERD_OK) {
        fprintf(stderr, "herd validate: %s\n", err);
        return 1;
    }
    return 0;
}

/* A fresh calibration whose bandwidth is more than 5 % off what TCP gets
 * on the testbed's shaped link was disturbed (on a shared machine, a busy
 * moment during the sweep read 84.8 MB/s for 800 Mbit/s' 95.6), or its
 * sweep stayed inside tbf's burst; it is measured once more, and a
 * second miss is kept with a warning. Returns
 * 1 when the caller should calibrate again. */
static int disturbed(const vopts_t *o, const trace_scenario_t *sc,
                     const herd_link_t *l, int attempt)
{
    double want = shaped_goodput(o, sc);
    if (o->calibration || want <= 0 || fabs(l->bandwidth / want - 1) <= 0.05)
        return 0;
    printf("validate: %sthe calibrated bandwidth, %.3f MB/s, is %+.1f %% off "
           "TCP's %.3f MB/s on the shaped link (a busy machine, or a "
           "--calibrate-bytes too small to see the rate?)%s\n",
           attempt ? "warning: " : "", l->bandwidth / 1e6,
           (l->bandwidth / want - 1) * 100, want / 1e6,
           attempt ? ": kept" : ": calibrating again");
    return !attempt;
}

/* Run calibrate on the real side and turn its cluster section into
 * --set overrides for the simulator. With validate's --comm-cpu it
 * measures what compute costs the links too (compute_comm_slowdown),
 * which the prediction then takes; not what communication costs compute
 * (comm_cpu_slowdown): the real side's compute (herd_compute on the real
 * engines, herd_torch's layers) runs on a schedule, making up lost
 * cycles, so on that side communication cannot slow it. Off by default:
 * calibrate's work thread (passes over memory) contends harder than that
 * compute, and with four hosts on two cores the factor it measured made
 * the tcp engine's DDP steps 5 % slower than measured (BENCHMARKS.md). */
static int calibrate(vopts_t *o, const trace_scenario_t *sc)
{
    char out[1024], log[1024];
    path_join(out, sizeof(out), o->out, "calibration.yaml");
    path_join(log, sizeof(log), o->out, "calibration.log");
    if (o->calibration) /* --calibration: an earlier run's, as measured */
        snprintf(out, sizeof(out), "%s", o->calibration);
    trace_scenario_t *cal = NULL;
    const herd_link_t *l = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        trace_scenario_destroy(cal);
        cal = NULL;
        if (calibrate_once(o, sc, out, log, &cal) != 0)
            return 1;
        l = o->nproc ? &cal->sim.cluster.intra : &cal->sim.cluster.inter;
        if (!disturbed(o, sc, l, attempt))
            break;
    }
    const char *cls = o->nproc ? "intra" : "inter";
    snprintf(o->cal_sets[0], sizeof(o->cal_sets[0]),
             "cluster.%s.bandwidth=%.6fMB/s", cls, l->bandwidth / 1e6);
    snprintf(o->cal_sets[1], sizeof(o->cal_sets[1]),
             "cluster.%s.latency=%.3fus", cls, l->latency * 1e6);
    o->ncal = 2;
    if (!o->nproc) /* the token bucket, as measured (0: none) */
        snprintf(o->cal_sets[o->ncal++], sizeof(o->cal_sets[0]),
                 "cluster.inter.burst=%lluB", (unsigned long long)l->burst);
    double ccs = o->comm_cpu ? cal->sim.cluster.compute_comm_slowdown : 0;
    if (ccs > 0)
        snprintf(o->cal_sets[o->ncal++], sizeof(o->cal_sets[0]),
                 "cluster.compute_comm_slowdown=%.3f", ccs);
    printf("validate: calibrated %s link: %.3f MB/s, %.2f us", cls,
           l->bandwidth / 1e6, l->latency * 1e6);
    if (!o->nproc && l->burst)
        printf(", burst %llu B", (unsigned long long)l->burst);
    if (ccs > 0)
        printf(", %.1f %% slower beside compute", ccs * 100);
    printf("\n");
    trace_scenario_destroy(cal);
    return 0;
}

static int sweep_traces(const vopts_t *o, const trace_scenario_t *sc,
                        vwork_t *wl, int *nwl)
{
    char list[256];
    snprintf(list, sizeof(list), "%s",
             o->colls[0] ? o->colls : herd_coll_name(sc->sweep.coll));
    for (char *save = NULL, *c = strtok_r(list, ",", &save);
         c && *nwl < V_MAX_WL; c = strtok_r(NULL, ",", &save)) {
        trace_sweep_t sw = sc->sweep;
        if (herd_coll_parse(c, &sw.coll) != HERD_OK)
            return cli_usage_error("validate", "unknown collective '%s'", c);
        sw.nalgos = 0;
        for (int i = 0; i < sc->sweep.nalgos; i++)
            if (core_sched_supports(sc->sweep.algos[i], sw.coll))
                sw.algos[sw.nalgos++] = sc->sweep.algos[i];
        if (sw.nalgos == 0)
            sw.algos[sw.nalgos++] = HERD_ALGO_RING;
        vwork_t *w = &wl[(*nwl)++];
        char dir[1024], err[512];
        snprintf(w->name, sizeof(w->name), "%s", herd_coll_name(sw.coll));
        path_join(dir, sizeof(dir), o->out, w->name);
        mkdir(dir, 0755);
        path_join(w->trace, sizeof(w->trace), dir, "trace.json");
        trace_t *t = NULL;
        herd_status_t st = trace_from_sweep(&sw, o->world, &t);
        if (st == HERD_OK)
            st = trace_write_json(t, w->trace, err, sizeof(err));
        trace_destroy(t);
        if (st != HERD_OK) {
            fprintf(stderr, "herd validate: sweep trace: %s\n",
                    herd_status_string(st));
            return 1;
        }
    }
    return 0;
}

static int ddp_trace(const vopts_t *o, vwork_t *w)
{
    char dir[1024], log[1024];
    snprintf(w->name, sizeof(w->name), "ddp");
    path_join(dir, sizeof(dir), o->out, w->name);
    mkdir(dir, 0755);
    path_join(w->trace, sizeof(w->trace), dir, "trace.json");
    path_join(log, sizeof(log), dir, "ddp.log");
    char *argv[8 + 2 * V_MAX_SETS];
    int n = 0;
    argv[n++] = "herd";
    argv[n++] = "ddp";
    argv[n++] = "run";
    argv[n++] = (char *)o->scenario;
    for (int i = 0; i < o->nsets; i++) {
        argv[n++] = "--set";
        argv[n++] = (char *)o->sets[i];
    }
    argv[n++] = "--trace";
    argv[n++] = w->trace;
    argv[n++] = "--quiet";
    argv[n] = NULL;
    if (validate_run_self(argv, log) > 1) {
        fprintf(stderr, "herd validate: herd ddp run failed, see %s\n", log);
        return 1;
    }
    return 0;
}

static int workloads(const vopts_t *o, const trace_scenario_t *sc, vwork_t *wl,
                     int *nwl)
{
    *nwl = 0;
    if (sc->wl_kind == TRACE_WL_SWEEP)
        return sweep_traces(o, sc, wl, nwl);
    if (sc->wl_kind == TRACE_WL_DDP) {
        *nwl = 1;
        return ddp_trace(o, &wl[0]);
    }
    if (sc->wl_kind == TRACE_WL_TRACE) {
        char copy[1024];
        snprintf(copy, sizeof(copy), "%s", o->scenario);
        snprintf(wl[0].name, sizeof(wl[0].name), "trace");
        if (sc->trace_path[0] == '/')
            snprintf(wl[0].trace, sizeof(wl[0].trace), "%s", sc->trace_path);
        else
            snprintf(wl[0].trace, sizeof(wl[0].trace), "%s/%s", dirname(copy),
                     sc->trace_path);
        *nwl = 1;
        return 0;
    }
    return cli_usage_error("validate", "%s has no workload section",
                           o->scenario);
}

/* The simulator's prediction: replay with the scenario, the user's
 * overrides, the real side's shape and the calibrated link. */
static int predict(const vopts_t *o, const vwork_t *w, const char *dir,
                   const char *log)
{
    char shape[2][64], pdir[1024];
    char *argv[16 + 2 * (V_MAX_SETS + 6)];
    int n = 0;
    snprintf(shape[0], sizeof(shape[0]), "cluster.nodes=%d",
             o->nproc ? 1 : o->world);
    snprintf(shape[1], sizeof(shape[1]), "cluster.gpus_per_node=%d",
             o->nproc ? o->nproc : 1);
    path_join(pdir, sizeof(pdir), dir, "predicted");
    argv[n++] = "herd";
    argv[n++] = "replay";
    argv[n++] = (char *)w->trace;
    argv[n++] = "--engine";
    argv[n++] = "sim";
    argv[n++] = "--scenario";
    argv[n++] = (char *)o->scenario;
    for (int i = 0; i < o->nsets; i++)
        argv[n++] = "--set", argv[n++] = (char *)o->sets[i];
    for (int i = 0; i < 2; i++)
        argv[n++] = "--set", argv[n++] = shape[i];
    for (int i = 0; i < o->ncal; i++)
        argv[n++] = "--set", argv[n++] = (char *)o->cal_sets[i];
    argv[n++] = "-o";
    argv[n++] = pdir;
    argv[n++] = "--no-plots";
    argv[n] = NULL;
    return validate_run_self(argv, log);
}

static int measure(const vopts_t *o, const trace_scenario_t *sc,
                   const vwork_t *w, const char *dir, const char *log)
{
    char slow[512], mdir[1024];
    char *argv[32];
    path_join(mdir, sizeof(mdir), dir, "measured");
    int n = validate_real_argv(o, sc, argv, slow, sizeof(slow));
    argv[n++] = "replay";
    argv[n++] = (char *)w->trace;
    argv[n++] = "--engine";
    argv[n++] = "tcp";
    argv[n++] = "-o";
    argv[n++] = mdir;
    argv[n++] = "--no-plots";
    argv[n] = NULL;
    return validate_run_self(argv, log);
}

static int compare(const vopts_t *o, const char *dir, const char *log)
{
    char pred[1024], cdir[1024];
    char meas[64][1024];
    char *argv[8 + 64];
    int n = 0;
    path_join(pred, sizeof(pred), dir, "predicted/timeline.json");
    path_join(cdir, sizeof(cdir), dir, "compare");
    argv[n++] = "herd";
    argv[n++] = "compare";
    argv[n++] = pred;
    for (int r = 0; r < o->world && r < 64; r++) {
        if (snprintf(meas[r], sizeof(meas[r]),
                     "%s/measured/timeline-rank%d.json", dir, r) < 0)
            return 1;
        argv[n++] = meas[r];
    }
    argv[n++] = "-o";
    argv[n++] = cdir;
    argv[n] = NULL;
    return validate_run_self(argv, log);
}

/* The runs started next write step records into dir/sub (HERD_STEPS_DIR,
 * docs/formats.md; sub NULL: none); not with --torch, whose measured side
 * is PyTorch. */
static void steps_env(const vopts_t *o, const char *dir, const char *sub)
{
    char d[1024];
    if (o->torch || !sub) {
        unsetenv("HERD_STEPS_DIR");
        return;
    }
    path_join(d, sizeof(d), dir, sub);
    mkdir(d, 0755);
    setenv("HERD_STEPS_DIR", d, 1);
}

/* The steps of both sides compared: dir/steps.tsv and dir/steps.md. A
 * failure here is a note, not a failed validation. */
static void steps_report(const vopts_t *o, const vwork_t *w, const char *dir,
                         FILE *sum)
{
    char pdir[1024], mdir[1024], tsv[1024], md[1024], err[512];
    if (o->torch)
        return;
    path_join(pdir, sizeof(pdir), dir, "predicted");
    path_join(mdir, sizeof(mdir), dir, "measured");
    path_join(tsv, sizeof(tsv), dir, "steps.tsv");
    path_join(md, sizeof(md), dir, "steps.md");
    if (cli_steps_validate(pdir, mdir, o->world, tsv, md, err, sizeof(err)))
        printf("validate: %s: no step comparison: %s\n", w->name, err);
    else
        fprintf(sum, "; steps: [%s/steps.md](%s/steps.md)", w->name, w->name);
}

static int run_workload(const vopts_t *o, const trace_scenario_t *sc,
                        const vwork_t *w, validate_rows_t *rows, FILE *sum)
{
    char dir[1024], log[1024], pred[1024], mdir[1024], err[512];
    path_join(dir, sizeof(dir), o->out, w->name);
    mkdir(dir, 0755);
    path_join(log, sizeof(log), dir, "run.log");
    printf("validate: %s: predicting, %s, comparing (log: %s)\n", w->name,
           o->from ? "taking the earlier measurements" : "measuring", log);
    fflush(stdout);
    steps_env(o, dir, "predicted");
    int bad = predict(o, w, dir, log);
    steps_env(o, dir, NULL);
    if (bad) {
        fprintf(stderr, "herd validate: %s failed, see %s\n", w->name, log);
        return 1;
    }
    /* --torch: real PyTorch measures, its records aligned to the
     * prediction's, so that compare and the report read them as any. */
    steps_env(o, dir, "measured");
    if (o->from) /* DIR's records; PyTorch's aligned with this prediction */
        bad = validate_from_measured(o, w->name, dir) != 0 ||
              (o->torch && validate_torch_realign(o, dir, log) != 0);
    else
        bad = o->torch ? validate_torch_measure(o, sc, dir, log) != 0
                       : measure(o, sc, w, dir, log) != 0;
    steps_env(o, dir, NULL);
    if (bad) {
        fprintf(stderr, "herd validate: %s failed, see %s\n", w->name, log);
        return 1;
    }
    if (compare(o, dir, log) != 0) {
        fprintf(stderr, "herd validate: %s failed, see %s\n", w->name, log);
        return 1;
    }
    double e2e[4] = {0, 0, 0, 0};
    path_join(pred, sizeof(pred), dir, "predicted/timeline.json");
    path_join(mdir, sizeof(mdir), dir, "measured");
    herd_status_t st = validate_collect(pred, mdir, o->world, o->torch, rows,
                                        e2e, err, sizeof(err));
    if (st == HERD_OK && o->torch)
        st = validate_torch_step_rows(pred, mdir, o->world, rows, err,
                                      sizeof(err));
    if (st != HERD_OK) {
        fprintf(stderr, "herd validate: %s: %s\n", w->name, err);
        return 1;
    }
    fprintf(sum,
            "- `%s`: end to end%s predicted %.3f s, measured %.3f s "
            "(%+.1f%%)",
            w->name, o->torch ? " (from the first step)" : "", e2e[0], e2e[1],
            e2e[1] > 0 ? (e2e[0] - e2e[1]) / e2e[1] * 100 : 0);
    if (e2e[2] > 0 && e2e[3] > 0)
        fprintf(sum, "; step time predicted %.3f s, measured %.3f s (%+.1f%%)",
                e2e[2], e2e[3], (e2e[2] - e2e[3]) / e2e[3] * 100);
    fprintf(sum, "; plot: [%s/compare/compare.png](%s/compare/compare.png)",
            w->name, w->name);
    steps_report(o, w, dir, sum);
    fputc('\n', sum);
    if (e2e[2] > 0 && e2e[3] > 0)
        printf("validate: %s: step time predicted %.3f s, measured %.3f s "
               "(%+.1f%%)\n",
               w->name, e2e[2], e2e[3], (e2e[2] - e2e[3]) / e2e[3] * 100);
    return 0;
}

int validate_steps(vopts_t *o, const trace_scenario_t *sc,
                   validate_rows_t *all_rows)
{
    vwork_t wl[V_MAX_WL];
    int nwl = 0, rc;
    if (cli_sim_mkdir("validate", o->out))
        return 2;
    if (o->torch && (rc = validate_torch_probe(o, sc)) != 0)
        return rc;
    if (o->from && validate_from_apart(o))
        return 2;
    if (!o->nproc && !o->from && (rc = validate_setup_testbed(o, sc)) != 0)
        return rc;
    if ((rc = workloads(o, sc, wl, &nwl)) != 0)
        return rc;
    /* what herd's engine replayed; PyTorch ran the job itself, and the
     * prediction is of the DDP model as it is now */
    for (int i = 0; o->from && !o->torch && i < nwl; i++)
        if (validate_from_trace(o, wl[i].name, wl[i].trace,
                                sizeof(wl[i].trace)))
            return 1;
    if (o->from)
        validate_from_calibration(o);
    if (o->calibrate && (rc = calibrate(o, sc)) != 0)
        return rc;
    validate_rows_t rows = {0};
    char setup[4096];
    FILE *sum = fmemopen(setup, sizeof(setup), "w");
    if (!sum)
        return 1;
    if (o->from)
        fprintf(sum, "Measured earlier (`--from %s`, not run again); ",
                o->from);
    fprintf(sum, "Real side: %s%s%s%s%s with %d ranks%s; simulator: %s",
            o->nproc ? "local processes (herd launch)" : "the testbed",
            o->cc_used[0] ? " (TCP congestion control " : "", o->cc_used,
            !o->cc_used[0] ? ""
            : o->idle_used == TESTBED_IDLE_RESTART_OFF
                ? ", slow start after idle off"
            : o->idle_used == TESTBED_IDLE_RESTART_ON
                ? ", slow start after idle on"
                : "",
            o->cc_used[0] ? ")" : "", o->world,
            o->torch ? ", measured by real PyTorch DDP (gloo)" : "",
            o->ncal ? "calibrated link" : "the scenario's links");
    for (int i = 0; i < o->ncal; i++) /* every setting the prediction got */
        fprintf(sum, "%s %s", i ? "," : "", o->cal_sets[i]);
    fprintf(sum, ".\n\n");
    for (int i = 0; i < nwl && rc == 0; i++)
        rc = run_workload(o, sc, &wl[i], &rows, sum);
    if (rc == 0 && o->torch) {
        char mdir[1024], ver[64];
        snprintf(mdir, sizeof(mdir), "%s/%s/measured", o->out, wl[0].name);
        validate_torch_version(mdir, ver, sizeof(ver));
        fprintf(sum,
                "- measured with %s (%s), one rank per host; the "
                "model: the scenario's parameters, computing for the "
                "times herd models\n",
                ver, o->from ? "recorded earlier" : o->python);
    }
    fclose(sum);
    if (rc == 0) {
        char path[1024];
        double med = 0, p95 = 0;
        path_join(path, sizeof(path), o->out, "report.md");
        FILE *f = fopen(path, "w");
        if (!f)
            rc = 1;
        else {
            validate_write_report(f, o->scenario, &rows, setup, &med, &p95);
            fclose(f);
            printf("validate: report in %s\n", path);
            if (o->from) /* a note: the report itself stands */
                validate_from_compare(o);
            printf("validate: %zu rows, median |error| %.1f%%, p95 |error| "
                   "%.1f%%\n",
                   rows.n, med * 100, p95 * 100);
        }
    }
    for (size_t i = 0; rc == 0 && all_rows && i < rows.n; i++)
        if (validate_rows_add(all_rows, &rows.rows[i]) != HERD_OK)
            rc = 1;
    free(rows.rows);
    return rc;
}
