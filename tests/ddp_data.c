/* tests/ddp_data.c - the data-loading phase (`data: {load_s, num_workers,
 * prefetch_factor, jitter}`, `stragglers.data`): the scenario fields and
 * their errors, the DataLoader model on its own (warm-up, workers,
 * prefetch, epochs, the seeded jitter), and on the simulator for DDP, FSDP
 * and the 3D-parallel job: a loader in the training process adds exactly
 * load_s to every step, enough workers hide it, a slow loader on one rank
 * makes it the straggler; the trace export carries the waits and sweeps
 * take data.num_workers. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/scenario.h"
#include "workload/common/job.h"
#include "workload/common/loader.h"

static trace_scenario_t *load_ok(const char *text)
{
    trace_scenario_t *sc = NULL;
    char err[1024];
    ck_assert_msg(trace_scenario_load_string(text, "s.yaml", &sc, err,
                                             sizeof(err)) == HERD_OK,
                  "%s", err);
    return sc;
}

static void load_err(const char *text, const char *want)
{
    trace_scenario_t *sc = NULL;
    char err[1024] = "";
    ck_assert_int_ne(
        trace_scenario_load_string(text, "s.yaml", &sc, err, sizeof(err)),
        HERD_OK);
    ck_assert_msg(strstr(err, want), "error '%s' lacks '%s'", err, want);
}

START_TEST(test_fields)
{
    trace_scenario_t *sc = load_ok("cluster: {nodes: 4, gpus_per_node: 1}\n");
    /* the defaults: nothing modelled, DataLoader's prefetch_factor */
    ck_assert_double_eq(sc->data.load_s, 0);
    ck_assert_int_eq(sc->data.num_workers, 0);
    ck_assert_int_eq(sc->data.prefetch_factor, 2);
    wl_data_t d = wl_data_of(sc);
    ck_assert(!wl_data_on(&d));
    trace_scenario_destroy(sc);

    sc = load_ok("cluster: {nodes: 4, gpus_per_node: 1}\n"
                 "data: {load_s: 50ms, num_workers: 4, prefetch_factor: 3, "
                 "jitter: 0.2}\n"
                 "stragglers:\n  data: [{rank: 3, factor: 4}]\n");
    ck_assert_double_eq_tol(sc->data.load_s, 0.05, 1e-15);
    ck_assert_int_eq(sc->data.num_workers, 4);
    ck_assert_int_eq(sc->data.prefetch_factor, 3);
    ck_assert_double_eq_tol(sc->data.jitter, 0.2, 1e-15);
    ck_assert_uint_eq(sc->ndata_slow, 1);
    ck_assert_int_eq(sc->data_slow[0].rank, 3);
    /* written and read back: the same settings */
    char *dir = tu_tmpdir(), path[1024], err[1024];
    snprintf(path, sizeof(path), "%s/w.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_int_eq(trace_scenario_write(sc, f), HERD_OK);
    fclose(f);
    trace_scenario_t *back = NULL;
    ck_assert_msg(trace_scenario_load(path, &back, err, sizeof(err)) == HERD_OK,
                  "%s", err);
    ck_assert_double_eq(back->data.load_s, sc->data.load_s);
    ck_assert_int_eq(back->data.num_workers, 4);
    ck_assert_int_eq(back->data.prefetch_factor, 3);
    ck_assert_double_eq(back->data.jitter, sc->data.jitter);
    ck_assert_uint_eq(back->ndata_slow, 1);
    ck_assert_double_eq(back->data_slow[0].factor, 4);
    /* --set, as herd sweep uses it; a bare number is seconds */
    ck_assert_int_eq(
        trace_scenario_set(back, "data.num_workers", "2", err, sizeof(err)),
        HERD_OK);
    ck_assert_int_eq(back->data.num_workers, 2);
    ck_assert_int_eq(
        trace_scenario_set(back, "data.load_s", "0.125", err, sizeof(err)),
        HERD_OK);
    ck_assert_double_eq(back->data.load_s, 0.125);
    trace_scenario_destroy(back);
    trace_scenario_destroy(sc);
    remove(path);
    remove(dir);
    free(dir);
}
END_TEST

START_TEST(test_field_errors)
{
    load_err("data: {load_s: -1}\n", "s.yaml:1:16: data.load_s: -1 is out of "
                                     "range");
    load_err("data:\n  load_s: 2 fortnights\n",
             "s.yaml:2:11: data.load_s: bad value '2 fortnights'");
    load_err("data: {num_workers: -2}\n", "s.yaml:1:21: data.num_workers: -2 "
                                          "is out of range");
    load_err("data: {prefetch_factor: 0}\n",
             "s.yaml:1:25: data.prefetch_factor: 0 is out of range");
    load_err("data: {jitter: 11}\n", "s.yaml:1:16: data.jitter: 11 is out of "
                                     "range");
    load_err("data: {workers: 2}\n",
             "s.yaml:1:8: data: unknown key 'workers'; expected one of: "
             "load_s, num_workers, prefetch_factor, jitter");
    load_err("data: 5\n", "s.yaml:1:7: data: expected a mapping");
    load_err("stragglers:\n  data: [{rank: 1, factor: 0}]\n",
             "s.yaml:2:28: stragglers.data.factor: 0 is out of range");
    load_err("cluster: {nodes: 2, gpus_per_node: 1}\n"
             "stragglers:\n  data: [{rank: 2, factor: 3}]\n",
             "stragglers.data[0]: rank 2 does not exist (world size 2)");
}
END_TEST

/* ---- the loader on its own ---- */

static wl_data_t data(double load, int workers, int prefetch)
{
    wl_data_t d = {.cfg = {.load_s = load,
                           .num_workers = workers,
                           .prefetch_factor = prefetch}};
    return d;
}

START_TEST(test_loader_in_process)
{
    /* num_workers 0: every batch's load is on the critical path */
    wl_data_t d = data(0.2, 0, 2);
    wl_loader_t l;
    ck_assert_int_eq(wl_loader_init(&l, &d, 0, &wl_null_ops, NULL, NULL, NULL),
                     HERD_OK);
    for (int k = 0; k < 10; k++)
        ck_assert_double_eq(wl_loader_next(&l, 0.5 * k), 0.2);
    wl_loader_fini(&l);
}
END_TEST

START_TEST(test_loader_workers)
{
    /* 2 workers, 100 ms a batch, the loop asks every 30 ms: the first
     * batch costs its load (the warm-up), then the loader delivers two
     * per 100 ms (both workers finish together) and the loop waits 40 ms
     * for every other batch, 20 ms a step on average */
    wl_data_t d = data(0.1, 2, 2);
    wl_loader_t l;
    ck_assert_int_eq(wl_loader_init(&l, &d, 0, &wl_null_ops, NULL, NULL, NULL),
                     HERD_OK);
    double t = 0, waits[12];
    for (int k = 0; k < 12; k++) {
        waits[k] = wl_loader_next(&l, t);
        t += waits[k] + 0.03;
    }
    ck_assert_double_eq_tol(waits[0], 0.1, 1e-12);
    ck_assert_double_eq_tol(waits[1], 0, 1e-12); /* worker 1's, ready */
    for (int k = 2; k < 12; k++)
        ck_assert_msg(fabs(waits[k] - (k % 2 ? 0 : 0.04)) < 1e-9,
                      "step %d waits %g", k, waits[k]);
    wl_loader_fini(&l);

    /* enough workers: after the warm-up nothing waits (steady state
     * max(0, load/W - step)) */
    d = data(0.1, 4, 2);
    ck_assert_int_eq(wl_loader_init(&l, &d, 0, &wl_null_ops, NULL, NULL, NULL),
                     HERD_OK);
    t = 0;
    for (int k = 0; k < 50; k++) {
        double w = wl_loader_next(&l, t);
        if (k == 0)
            ck_assert_double_eq_tol(w, 0.1, 1e-12);
        else
            ck_assert_msg(w == 0, "step %d waits %g", k, w);
        t += w + 0.03;
    }
    wl_loader_fini(&l);
}
END_TEST

START_TEST(test_loader_prefetch)
{
    /* one worker, one batch ahead: the next batch is asked for only when
     * the loop takes this one, so a slow step does not bank a batch */
    wl_data_t d = data(0.1, 1, 1);
    wl_loader_t l;
    ck_assert_int_eq(wl_loader_init(&l, &d, 0, &wl_null_ops, NULL, NULL, NULL),
                     HERD_OK);
    ck_assert_double_eq_tol(wl_loader_next(&l, 0), 0.1, 1e-12);
    /* batch 1 asked for at 0.1, ready at 0.2; the loop asks at 0.5 */
    ck_assert_double_eq_tol(wl_loader_next(&l, 0.5), 0, 1e-12);
    /* batch 2 asked for at 0.5, ready at 0.6 */
    ck_assert_double_eq_tol(wl_loader_next(&l, 0.55), 0.05, 1e-12);
    wl_loader_fini(&l);
    /* prefetch 4: batches 1..3 were asked for at the start */
    d = data(0.1, 1, 4);
    ck_assert_int_eq(wl_loader_init(&l, &d, 0, &wl_null_ops, NULL, NULL, NULL),
                     HERD_OK);
    ck_assert_double_eq_tol(wl_loader_next(&l, 0), 0.1, 1e-12);
    ck_assert_double_eq_tol(wl_loader_next(&l, 0.5), 0, 1e-12);
    ck_assert_double_eq_tol(wl_loader_next(&l, 0.55), 0, 1e-12);
    wl_loader_fini(&l);
}
END_TEST

START_TEST(test_loader_epochs_and_jitter)
{
    /* 3 batches an epoch: every epoch's iterator starts cold */
    long batches[1] = {6};
    wl_data_t d = data(0.1, 4, 2);
    d.rank_batches = batches;
    d.epochs = 2;
    wl_loader_t l;
    ck_assert_int_eq(wl_loader_init(&l, &d, 0, &wl_null_ops, NULL, NULL, NULL),
                     HERD_OK);
    double t = 0;
    for (int k = 0; k < 6; k++) {
        double w = wl_loader_next(&l, t);
        ck_assert_double_eq_tol(w, k % 3 == 0 ? 0.1 : 0, 1e-12);
        t += w + 0.2;
    }
    wl_loader_fini(&l);
    /* jitter: a deterministic factor per (seed, rank, batch), mean 1 */
    wl_data_t j = data(0.1, 0, 2);
    j.cfg.jitter = 0.3;
    j.seed = 7;
    double sum = 0;
    for (long n = 0; n < 20000; n++) {
        double f = wl_data_factor(&j, 1, n);
        ck_assert(f > 0);
        ck_assert_double_eq(f, wl_data_factor(&j, 1, n));
        sum += f;
    }
    ck_assert_msg(fabs(sum / 20000 - 1) < 0.02, "mean %g", sum / 20000);
    ck_assert(wl_data_factor(&j, 1, 5) != wl_data_factor(&j, 2, 5));
    j.seed = 8;
    double other = wl_data_factor(&j, 1, 5);
    j.seed = 7;
    ck_assert(other != wl_data_factor(&j, 1, 5));
    /* a slow loader: its factor */
    trace_data_straggler_t slow = {1, 4};
    wl_data_t s = data(0.1, 0, 2);
    s.slow = &slow;
    s.nslow = 1;
    ck_assert_double_eq(wl_data_factor(&s, 1, 3), 4);
    ck_assert_double_eq(wl_data_factor(&s, 0, 3), 1);
}
END_TEST

/* ---- on the simulator ---- */

/* A model of 8 gradients of 4 MiB, 10 ms forward, 80 ms backward, on
 * 2 ranks of 1 Gb/s; `extra` is appended to the scenario. */
static char *sim_dir(const char *extra)
{
    char *dir = tu_tmpdir(), path[1024];
    snprintf(path, sizeof(path), "%s/m.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\":\"eight\",\"compute\":{\"forward_s\":0.01,"
          "\"optimizer_s\":0.001},\"params\":[",
          f);
    for (int i = 0; i < 8; i++)
        fprintf(f,
                "%s{\"name\":\"h.%d.weight\",\"shape\":[1024,1024],"
                "\"backward_s\":0.01}",
                i ? "," : "", i);
    fputs("]}", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/s.yaml", dir);
    f = fopen(path, "w");
    fprintf(f,
            "cluster:\n  nodes: 2\n  gpus_per_node: 1\n"
            "  inter: {bandwidth: 1Gbps, latency: 50us}\n"
            "collectives: {algorithm: ring}\n%s",
            extra);
    fclose(f);
    return dir;
}

static void sim_done(char *dir)
{
    const char *names[] = {"m.json", "s.yaml", "r.json", "t.json", "sw"};
    char p[1024];
    for (size_t i = 0; i < 5; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        if (i == 4) {
            char cmd[1200];
            snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
            ck_assert_int_eq(system(cmd), 0);
        } else {
            remove(p);
        }
    }
    remove(dir);
    free(dir);
}

/* `herd CMD run` with --json: the report, and its text output. */
static json_t *run_json(const char *dir, const char *cmd, const char *sets,
                        char **text)
{
    char args[2048], *out = NULL;
    snprintf(args, sizeof(args), "%s run %s/s.yaml --json %s/r.json %s", cmd,
             dir, dir, sets);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0, "herd %s: rc %d: %s", args, rc, out);
    if (text)
        *text = out;
    else
        free(out);
    snprintf(args, sizeof(args), "%s/r.json", dir);
    json_error_t je;
    json_t *j = json_load_file(args, 0, &je);
    ck_assert_msg(j, "%s: %s", args, je.text);
    return j;
}

static double steady(json_t *j, const char *key)
{
    return json_real_value(json_object_get(json_object_get(j, "steady"), key));
}

static const char ddp_wl[] = "workload:\n  ddp: {model: m.json, steps: 6}\n";

START_TEST(test_ddp_in_process_adds_load)
{
    char *dir = sim_dir(ddp_wl), *text = NULL;
    json_t *base = run_json(dir, "ddp", "--quiet", NULL);
    json_t *slow = run_json(dir, "ddp", "--set data.load_s=0.2", &text);
    /* exactly load_s more per step, reported as the data wait */
    double b = steady(base, "step_s"), s = steady(slow, "step_s");
    ck_assert_msg(fabs(s - b - 0.2) < 1e-9, "%g -> %g", b, s);
    ck_assert_double_eq_tol(steady(slow, "data_s"), 0.2, 1e-9);
    ck_assert_ptr_null(json_object_get(json_object_get(base, "steady"),
                                       "data_s")); /* off: as before */
    ck_assert_msg(strstr(text, "data_ms"), "%s", text);
    ck_assert_msg(strstr(text, "data loading (load 200.000 ms, 0 workers, "
                               "prefetch_factor 2): wait per step 200.000 ms"),
                  "%s", text);
    /* the exposed communication and the bucket times do not move */
    ck_assert_double_eq_tol(steady(slow, "exposed_s"),
                            steady(base, "exposed_s"), 1e-9);
    json_decref(base);
    json_decref(slow);
    free(text);
    sim_done(dir);
}
END_TEST

START_TEST(test_ddp_workers_hide_it)
{
    char *dir = sim_dir(ddp_wl);
    json_t *base = run_json(dir, "ddp", "--quiet", NULL);
    double b = steady(base, "step_s");
    /* a batch takes about three steps of one worker (1 s against 0.33 s):
     * with one worker the loader sets the pace (a step of 1 s once the
     * batches asked for at the start are used up), four hide it after
     * the warm-up */
    json_t *one =
        run_json(dir, "ddp",
                 "--quiet --set data.load_s=1 --set data.num_workers=1 "
                 "--set ddp.steps=12",
                 NULL);
    json_t *four =
        run_json(dir, "ddp",
                 "--quiet --set data.load_s=1 --set data.num_workers=4", NULL);
    ck_assert_msg(steady(one, "step_s") > b + 0.3, "%g vs %g",
                  steady(one, "step_s"), b);
    json_t *s11 = json_array_get(json_object_get(one, "steps"), 11);
    ck_assert_double_eq_tol(json_real_value(json_object_get(s11, "step_s")),
                            1.0, 1e-6);
    ck_assert_msg(fabs(steady(four, "step_s") - b) < 1e-9, "%g vs %g",
                  steady(four, "step_s"), b);
    ck_assert_double_eq(steady(four, "data_s"), 0);
    /* the first step pays the warm-up: one batch's load */
    json_t *s0 = json_array_get(json_object_get(four, "steps"), 0);
    ck_assert_double_eq_tol(json_real_value(json_object_get(s0, "data_s")), 1.0,
                            1e-9);
    json_decref(base);
    json_decref(one);
    json_decref(four);
    sim_done(dir);
}
END_TEST

START_TEST(test_ddp_slow_loader_is_the_straggler)
{
    char *dir = sim_dir("workload:\n  ddp: {model: m.json, steps: 6}\n"
                        "data: {load_s: 10ms}\n"
                        "stragglers:\n  data: [{rank: 1, factor: 5}]\n");
    json_t *j = run_json(dir, "ddp", "--quiet", NULL);
    json_t *base = run_json(dir, "ddp", "--quiet --set data.load_s=0", NULL);
    /* rank 1 loads in 50 ms, rank 0 in 10 ms: rank 0 waits for rank 1 in
     * the all_reduces, so the step grows by 50 ms and rank 1 is the
     * critical rank */
    ck_assert_msg(fabs(steady(j, "step_s") - steady(base, "step_s") - 0.05) <
                      1e-3,
                  "%g vs %g", steady(j, "step_s"), steady(base, "step_s"));
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(j, "steady"), "critical_rank")),
                     1);
    ck_assert_double_eq_tol(steady(j, "data_s"), 0.03, 1e-9);
    ck_assert_double_eq_tol(steady(j, "max_data_s"), 0.05, 1e-9);
    json_decref(j);
    json_decref(base);
    /* a slow device (compute: 2) does not slow its loader */
    char *dir2 = sim_dir("workload:\n  ddp: {model: m.json, steps: 6}\n"
                         "stragglers:\n  ranks: [{rank: 1, compute: 2}]\n");
    json_t *a = run_json(dir2, "ddp", "--quiet", NULL);
    json_t *b = run_json(dir2, "ddp", "--quiet --set data.load_s=0.3", NULL);
    ck_assert_msg(fabs(steady(b, "step_s") - steady(a, "step_s") - 0.3) < 1e-6,
                  "%g vs %g", steady(b, "step_s"), steady(a, "step_s"));
    json_decref(a);
    json_decref(b);
    sim_done(dir2);
    sim_done(dir);
}
END_TEST

START_TEST(test_ddp_jitter_seeded)
{
    char *dir = sim_dir("workload:\n  ddp: {model: m.json, steps: 6}\n"
                        "data: {load_s: 20ms, jitter: 0.5}\nseed: 3\n");
    json_t *a = run_json(dir, "ddp", "--quiet", NULL);
    json_t *b = run_json(dir, "ddp", "--quiet", NULL);
    json_t *c = run_json(dir, "ddp", "--quiet --set seed=4", NULL);
    ck_assert_double_eq(steady(a, "step_s"), steady(b, "step_s"));
    ck_assert(steady(a, "step_s") != steady(c, "step_s"));
    ck_assert(steady(a, "max_data_s") > steady(a, "data_s"));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    sim_done(dir);
}
END_TEST

START_TEST(test_ddp_trace_and_sweep)
{
    char *dir = sim_dir(ddp_wl), args[2048], *out = NULL;
    /* the trace carries the waits as compute "data" */
    snprintf(args, sizeof(args),
             "ddp run %s/s.yaml --quiet --set data.load_s=0.2 --trace "
             "%s/t.json",
             dir, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    free(out);
    snprintf(args, sizeof(args), "%s/t.json", dir);
    char *t = tu_read_file(args);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(strstr(t, "\"data\""), "no data op in the trace");
    free(t);
    /* herd sweep over the workers */
    snprintf(args, sizeof(args),
             "sweep %s/s.yaml --set data.load_s=0.2 --set "
             "data.num_workers=0,1,2,4 --jobs 1 --out %s/sw",
             dir, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "num_workers"), "%s", out);
    ck_assert_msg(strstr(out, "recommendation: data.num_workers=4") ||
                      strstr(out, "data.num_workers=4"),
                  "%s", out);
    free(out);
    sim_done(dir);
}
END_TEST

START_TEST(test_fsdp_and_parallel)
{
    char *dir = sim_dir("workload:\n  fsdp: {model: m.json, steps: 3}\n");
    char *text = NULL;
    json_t *a = run_json(dir, "fsdp", "--quiet", NULL);
    json_t *b = run_json(dir, "fsdp", "--set data.load_s=0.25", &text);
    ck_assert_msg(fabs(steady(b, "step_s") - steady(a, "step_s") - 0.25) < 1e-9,
                  "%g vs %g", steady(b, "step_s"), steady(a, "step_s"));
    /* the wait is not exposed communication */
    ck_assert_double_eq_tol(steady(b, "exposed_s"), steady(a, "exposed_s"),
                            1e-9);
    ck_assert_msg(strstr(text, "data loading: wait per step 250.000 ms"), "%s",
                  text);
    free(text);
    json_decref(a);
    json_decref(b);
    sim_done(dir);

    dir = sim_dir("workload:\n  parallel: {model: m.json, seq: 128, "
                  "hidden: 1024, heads: 8, layers: 8, steps: 3}\n");
    char args[2048], *o1 = NULL, *o2 = NULL;
    snprintf(args, sizeof(args), "parallel run %s/s.yaml", dir);
    ck_assert_int_eq(tu_herd(args, &o1), 0);
    snprintf(args, sizeof(args),
             "parallel run %s/s.yaml --set data.load_s=0.25", dir);
    ck_assert_int_eq(tu_herd(args, &o2), 0);
    double s1 = 0, s2 = 0, i1 = -1, i2 = -2;
    const char *p1 = strstr(o1, "step: "), *p2 = strstr(o2, "step: ");
    ck_assert_msg(p1 && p2, "%s\n%s", o1, o2);
    sscanf(p1, "step: %lf", &s1);
    sscanf(p2, "step: %lf", &s2);
    ck_assert_msg(fabs(s2 - s1 - 250) < 1e-3, "%g -> %g", s1, s2);
    /* idle (bubble and exposed communication) unchanged */
    sscanf(strstr(p1, "idle "), "idle %lf", &i1);
    sscanf(strstr(p2, "idle "), "idle %lf", &i2);
    ck_assert_double_eq_tol(i1, i2, 1e-3);
    ck_assert_msg(strstr(o2, "data loading: wait per step 250.000 ms"), "%s",
                  o2);
    free(o1);
    free(o2);
    sim_done(dir);
}
END_TEST

/* The diagnosis without its times ("t=0.06 s", "(7781 events)"): data
 * loading moves when things happen, not what hangs or why. */
static char *untimed(const char *d)
{
    char *o = malloc(strlen(d) + 1), *w = o;
    for (const char *p = d; *p;) {
        if (!strncmp(p, "t=", 2)) {
            for (p += 2; (*p >= '0' && *p <= '9') || *p == '.'; p++)
                ;
            continue;
        }
        if (*p == '(' && p[1] >= '0' && p[1] <= '9' && strstr(p, " events)") &&
            strspn(p + 1, "0123456789") ==
                (size_t)(strstr(p, " events)") - p - 1)) {
            p = strstr(p, " events)") + 8;
            continue;
        }
        *w++ = *p++;
    }
    *w = '\0';
    return o;
}

START_TEST(test_hang_diagnosis_unaffected)
{
    const char *cases[][2] = {{"ddp", "ddp-uneven-shards"},
                              {"ddp", "ddp-unused-param-rank"},
                              {"fsdp", "fsdp-skip-forward"}};
    char *dir = tu_tmpdir();
    for (size_t i = 0; i < 3; i++) {
        char args[2048], src[1024], *out = NULL, *diag[2];
        tu_src_path(src, sizeof(src), "scenarios");
        for (int d = 0; d < 2; d++) {
            snprintf(args, sizeof(args),
                     "%s run %s/%s.yaml --quiet --json %s/r.json %s",
                     cases[i][0], src, cases[i][1], dir,
                     d ? "--set data.load_s=10ms --set data.num_workers=1"
                       : "");
            ck_assert_int_eq(tu_herd(args, &out), 1);
            free(out);
            snprintf(args, sizeof(args), "%s/r.json", dir);
            json_error_t je;
            json_t *j = json_load_file(args, 0, &je);
            ck_assert_msg(j, "%s: %s", args, je.text);
            diag[d] =
                untimed(json_string_value(json_object_get(j, "diagnosis")));
            json_decref(j);
        }
        ck_assert_msg(diag[0][0] && !strcmp(diag[0], diag[1]),
                      "%s:\n%s\n---\n%s", cases[i][1], diag[0], diag[1]);
        free(diag[0]);
        free(diag[1]);
    }
    char p[1100];
    snprintf(p, sizeof(p), "%s/r.json", dir);
    remove(p);
    remove(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_data");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_fields);
    tcase_add_test(tc, test_field_errors);
    tcase_add_test(tc, test_loader_in_process);
    tcase_add_test(tc, test_loader_workers);
    tcase_add_test(tc, test_loader_prefetch);
    tcase_add_test(tc, test_loader_epochs_and_jitter);
    tcase_add_test(tc, test_ddp_in_process_adds_load);
    tcase_add_test(tc, test_ddp_workers_hide_it);
    tcase_add_test(tc, test_ddp_slow_loader_is_the_straggler);
    tcase_add_test(tc, test_ddp_jitter_seeded);
    tcase_add_test(tc, test_ddp_trace_and_sweep);
    tcase_add_test(tc, test_fsdp_and_parallel);
    tcase_add_test(tc, test_hang_diagnosis_unaffected);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
