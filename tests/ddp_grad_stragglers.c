/* tests/ddp_grad_stragglers.c - stragglers on one gradient
 * (`stragglers.grads`, or the short form `stragglers: [{rank, param,
 * delay}]`): the scenario fields and their errors (file:line:column, close
 * parameter names), the walk's two kinds (`affects: backward` moves this
 * gradient and the rest of backward, `affects: grad` only this gradient's
 * ready instant), and on the simulator a delay that one bucket size hides
 * and another shows; FSDP's unit that holds the parameter waits too. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/scenario.h"
#include "workload/ddp/job.h"

/* ---- the scenario fields ---- */

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
    /* the short form of the issue, and the mapping form beside ranks */
    trace_scenario_t *sc =
        load_ok("cluster: {nodes: 2, gpus_per_node: 1}\n"
                "stragglers: [{rank: 1, param: conv1.weight, delay: 200ms}]\n");
    ck_assert_uint_eq(sc->ngrads, 1);
    ck_assert_int_eq(sc->grads[0].rank, 1);
    ck_assert_str_eq(sc->grads[0].param, "conv1.weight");
    ck_assert_double_eq_tol(sc->grads[0].delay_s, 0.2, 1e-12);
    ck_assert_int_eq(sc->grads[0].only_grad, 0);
    ck_assert_int_eq(sc->grads[0].line, 2);
    ck_assert_int_eq(sc->grads[0].column, 31);
    trace_scenario_destroy(sc);

    sc = load_ok("cluster: {nodes: 4, gpus_per_node: 1}\n"
                 "stragglers:\n"
                 "  ranks: [{rank: 2, compute: 1.5}]\n"
                 "  grads:\n"
                 "    - {rank: 3, param: fc.bias, delay: 5ms, affects: grad}\n"
                 "    - {rank: 0, param: 7, delay: 1s}\n");
    ck_assert_uint_eq(sc->nrank_ovr, 1);
    ck_assert_uint_eq(sc->ngrads, 2);
    ck_assert_int_eq(sc->grads[0].only_grad, 1);
    ck_assert_str_eq(sc->grads[1].param, "7");
    /* written and read back: the same delays */
    char *dir = tu_tmpdir(), path[1024];
    snprintf(path, sizeof(path), "%s/w.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_int_eq(trace_scenario_write(sc, f), HERD_OK);
    fclose(f);
    trace_scenario_t *back = NULL;
    char err[1024];
    ck_assert_msg(trace_scenario_load(path, &back, err, sizeof(err)) == HERD_OK,
                  "%s", err);
    ck_assert_uint_eq(back->ngrads, 2);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(back->grads[i].rank, sc->grads[i].rank);
        ck_assert_str_eq(back->grads[i].param, sc->grads[i].param);
        ck_assert_double_eq(back->grads[i].delay_s, sc->grads[i].delay_s);
        ck_assert_int_eq(back->grads[i].only_grad, sc->grads[i].only_grad);
    }
    /* --set replaces the list */
    ck_assert_int_eq(trace_scenario_set(back, "stragglers.grads",
                                        "[{rank: 1, param: a, delay: 1ms}]",
                                        err, sizeof(err)),
                     HERD_OK);
    ck_assert_uint_eq(back->ngrads, 1);
    ck_assert_int_eq(back->grads[0].line, 0);
    trace_scenario_destroy(back);
    trace_scenario_destroy(sc);
    remove(path);
    remove(dir);
    free(dir);
}
END_TEST

START_TEST(test_field_errors)
{
    load_err("stragglers: [{rank: 1, param: a}]\n",
             "s.yaml:1:15: stragglers: expected rank, param and delay in "
             "item 0");
    load_err("stragglers:\n  grads: [{rank: 1, param: a, delay: 2ms, "
             "affects: later}]\n",
             "s.yaml:2:52: stragglers.grads[0].affects: unknown value 'later'");
    load_err("stragglers:\n  grads: [{rank: 1, param: a, delay: 2parsecs}]\n",
             "s.yaml:2:38: stragglers.grads[0].delay: bad value '2parsecs'");
    load_err("stragglers: [{rank: 1, param: a, delay: 1ms, speed: 3}]\n",
             "stragglers[0]: unknown key 'speed'; expected one of: rank, "
             "param, delay, affects");
    load_err("cluster: {nodes: 2, gpus_per_node: 1}\n"
             "stragglers: [{rank: 2, param: a, delay: 1ms}]\n",
             "stragglers.grads[0]: rank 2 does not exist (world size 2)");
    load_err("stragglers: {grads: {rank: 1}}\n",
             "expected a sequence of mappings");
}
END_TEST

/* ---- the walk ---- */

/* Marks and compute with a clock, as the rank's program would see them. */
typedef struct rec {
    char label[256][48];
    double t[256];
    size_t n;
    double now;
} rec_t;

static herd_status_t f_compute(void *c, double s, const char *l)
{
    rec_t *r = c;
    ck_assert_uint_lt(r->n, 256);
    snprintf(r->label[r->n], 48, "c %s", l);
    r->t[r->n++] = r->now;
    r->now += s;
    return HERD_OK;
}
static herd_status_t f_mark(void *c, const char *l)
{
    rec_t *r = c;
    ck_assert_uint_lt(r->n, 256);
    snprintf(r->label[r->n], 48, "m %s", l);
    r->t[r->n++] = r->now;
    return HERD_OK;
}
static herd_status_t f_ar(void *c, uint64_t n, herd_dtype_t dt, size_t slot,
                          const char *l)
{
    (void)c, (void)n, (void)dt, (void)slot, (void)l;
    return HERD_OK;
}
static herd_status_t f_bc(void *c, uint64_t n, herd_dtype_t dt, int root,
                          size_t slot, const char *l)
{
    (void)c, (void)n, (void)dt, (void)root, (void)slot, (void)l;
    return HERD_OK;
}
static herd_status_t f_barrier(void *c, size_t slot, const char *l)
{
    (void)c, (void)slot, (void)l;
    return HERD_OK;
}
static herd_status_t f_wait(void *c, size_t slot)
{
    (void)c, (void)slot;
    return HERD_OK;
}
static const ddp_emit_ops_t fake = {f_compute, f_mark, f_ar, f_bc,
                                    f_barrier, f_wait, NULL};

/* Four 1 MiB float32 parameters p0..p3, 1 ms of backward each, ready
 * p3 first; one bucket each once rebuilt (bucket k holds p(3-k)). */
static ddp_job_t *four_job(ddp_grad_delays_t *dl, char *err, size_t errlen)
{
    char *dir = tu_tmpdir(), path[1024];
    snprintf(path, sizeof(path), "%s/m.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\":\"four\",\"compute\":{\"forward_s\":0.002},\"params\":[",
          f);
    for (int i = 0; i < 4; i++)
        fprintf(f,
                "%s{\"name\":\"layer%d.weight\",\"shape\":[262144],"
                "\"backward_s\":0.001}",
                i ? "," : "", i);
    fputs("]}", f);
    fclose(f);
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    snprintf(cfg.model, sizeof(cfg.model), "%s", path);
    cfg.bucket_cap_mb = 1;
    cfg.first_bucket_mb = 1;
    cfg.steps = 2;
    cfg.init_sync = 0;
    cfg.broadcast_buffers = 0;
    if (dl)
        cfg.grad_delays = *dl;
    ddp_job_t *job = NULL;
    herd_status_t st = ddp_job_create(&cfg, NULL, 2, &job, err, errlen);
    remove(path);
    remove(dir);
    free(dir);
    return st == HERD_OK ? job : NULL;
}

/* Time of the n-th record with this label in iteration 1 (after the
 * second "m step"), relative to that iteration's backward start. */
static double at(const rec_t *r, const char *label)
{
    size_t i = 0;
    int steps = 0;
    for (; i < r->n && steps < 2; i++)
        steps += !strcmp(r->label[i], "m step");
    double start = -1;
    for (; i < r->n; i++) {
        if (start < 0 && !strcmp(r->label[i], "c backward"))
            start = r->t[i];
        if (!strcmp(r->label[i], label))
            return r->t[i] - start;
    }
    ck_abort_msg("no '%s' in iteration 1", label);
    return -1;
}

static double end_of(const rec_t *r, const char *label)
{
    /* the instant after the last compute with this label */
    double t = -1;
    for (size_t i = 0; i + 1 < r->n; i++)
        if (!strcmp(r->label[i], label))
            t = r->t[i + 1];
    return t;
}

static void walk(const ddp_job_t *job, int rank, rec_t *r)
{
    int raised = 0;
    char msg[DDP_ERR_MSG_MAX];
    memset(r, 0, sizeof(*r));
    ck_assert_int_eq(ddp_job_walk(job, rank, &fake, r, &raised, msg), HERD_OK);
    ck_assert_int_eq(raised, 0);
}

START_TEST(test_walk_backward_kind)
{
    char err[512];
    ddp_grad_delays_t dl = {.n = 0};
    /* a slow layer: p2 (ready second) takes 5 ms more on rank 1 */
    ck_assert_int_eq(ddp_grad_delays_add(&dl, 1, "layer2.weight", 0.005, 0, err,
                                         sizeof(err)),
                     HERD_OK);
    ddp_job_t *job = four_job(&dl, err, sizeof(err));
    ck_assert_msg(job, "%s", err);
    rec_t r0, r1;
    walk(job, 0, &r0);
    walk(job, 1, &r1);
    ck_assert_uint_eq(job->rebuilt.n, 4);
    /* rank 0 as without the delay: bucket k at (k + 1) ms */
    ck_assert_double_eq_tol(at(&r0, "m ready b1"), 0.002, 1e-12);
    ck_assert_double_eq_tol(at(&r0, "m ready b3"), 0.004, 1e-12);
    /* rank 1: p3 on time, p2 and every later gradient 5 ms late */
    ck_assert_double_eq_tol(at(&r1, "m ready b0"), 0.001, 1e-12);
    ck_assert_double_eq_tol(at(&r1, "m ready b1"), 0.007, 1e-12);
    ck_assert_double_eq_tol(at(&r1, "m ready b2"), 0.008, 1e-12);
    ck_assert_double_eq_tol(at(&r1, "m ready b3"), 0.009, 1e-12);
    ddp_job_destroy(job);
}
END_TEST

START_TEST(test_walk_grad_kind)
{
    char err[512];
    ddp_grad_delays_t dl = {.n = 0};
    /* only p3's ready instant moves, by 2.5 ms: the reducer gets it
     * during p1's compute; buckets 1 and 2 filled before, but launch
     * waits for bucket 0 (launch order) */
    ck_assert_int_eq(ddp_grad_delays_add(&dl, 1, "layer3.weight", 0.0025, 1,
                                         err, sizeof(err)),
                     HERD_OK);
    ddp_job_t *job = four_job(&dl, err, sizeof(err));
    ck_assert_msg(job, "%s", err);
    rec_t r;
    walk(job, 1, &r);
    ck_assert_double_eq_tol(at(&r, "m ready b1"), 0.002, 1e-12);
    ck_assert_double_eq_tol(at(&r, "m ready b0"), 0.0035, 1e-12);
    ck_assert_double_eq_tol(at(&r, "m launch bucket 0"), 0.0035, 1e-12);
    ck_assert_double_eq_tol(at(&r, "m launch bucket 2"), 0.0035, 1e-12);
    ck_assert_double_eq_tol(at(&r, "m ready b3"), 0.004, 1e-12);
    ck_assert_double_eq_tol(at(&r, "m finalize"), 0.004, 1e-12);
    ddp_job_destroy(job);

    /* past the end of backward: the rank idles until the gradient comes */
    dl.d[0].delay_s = 0.010;
    job = four_job(&dl, err, sizeof(err));
    ck_assert_msg(job, "%s", err);
    walk(job, 1, &r);
    ck_assert_double_eq_tol(at(&r, "m ready b0"), 0.011, 1e-12);
    ck_assert_double_eq_tol(at(&r, "m finalize"), 0.011, 1e-12);
    ck_assert_double_eq_tol(at(&r, "c grad delay"), 0.004, 1e-12);
    ck_assert(end_of(&r, "c grad delay") > 0);
    ddp_job_destroy(job);
}
END_TEST

START_TEST(test_unknown_param)
{
    char err[512];
    ddp_grad_delays_t dl = {.n = 0};
    ddp_grad_delays_add(&dl, 1, "layer2.weigth", 0.005, 0, err, sizeof(err));
    ck_assert_ptr_null(four_job(&dl, err, sizeof(err)));
    ck_assert_msg(strstr(err, "stragglers.grads[0].param: no parameter "
                              "'layer2.weigth' in model 'four' (4 "
                              "parameters); close names: layer2.weight"),
                  "%s", err);
    dl.n = 0;
    ddp_grad_delays_add(&dl, 0, "4", 0.005, 0, err, sizeof(err));
    ck_assert_ptr_null(four_job(&dl, err, sizeof(err)));
    ck_assert_msg(strstr(err, "none with a close name"), "%s", err);
    dl.n = 0;
    ddp_grad_delays_add(&dl, 0, "3", 0.005, 0, err, sizeof(err));
    ddp_job_t *job = four_job(&dl, err, sizeof(err));
    ck_assert_msg(job, "%s", err); /* an index names a parameter too */
    ddp_job_destroy(job);
}
END_TEST

/* ---- on the simulator, through herd ddp run ---- */

/* Eight 4 MiB float32 parameters, 10 ms of backward each (80 ms), on two
 * ranks over a 1 Gbit/s link: one bucket's all_reduce takes ~34 ms, so
 * with 4 MiB buckets the job is communication-bound (~270 ms of
 * all_reduce behind 80 ms of backward) and with 100 MiB buckets nearly
 * everything goes in one bucket launched at the end of backward. */
static char *sim_dir(void)
{
    char *dir = tu_tmpdir(), path[1024];
    snprintf(path, sizeof(path), "%s/m.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\":\"eight\",\"compute\":{\"forward_s\":0.01,"
          "\"optimizer_s\":0.001},\"params\":[",
          f);
    for (int i = 0; i < 8; i++)
        fprintf(f,
                "%s{\"name\":\"l%d.weight\",\"shape\":[1048576],"
                "\"backward_s\":0.01}",
                i ? "," : "", i);
    fputs("]}", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/s.yaml", dir);
    f = fopen(path, "w");
    fputs("cluster:\n  nodes: 2\n  gpus_per_node: 1\n"
          "  inter: {bandwidth: 1Gbps, latency: 50us}\n"
          "collectives: {algorithm: ring}\n"
          "workload:\n  ddp: {model: m.json, steps: 4, "
          "gradient_as_bucket_view: true}\n",
          f);
    fclose(f);
    return dir;
}

/* The steady step time of `herd ddp run` with these --set flags. */
static double step_s(const char *dir, const char *sets)
{
    char args[2048], *out = NULL;
    snprintf(args, sizeof(args),
             "ddp run %s/s.yaml --quiet --json %s/r.json %s", dir, dir, sets);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0, "herd %s: rc %d: %s", args, rc, out);
    free(out);
    snprintf(args, sizeof(args), "%s/r.json", dir);
    json_error_t je;
    json_t *j = json_load_file(args, 0, &je);
    ck_assert_msg(j, "%s: %s", args, je.text);
    double s = json_real_value(
        json_object_get(json_object_get(j, "steady"), "step_s"));
    json_decref(j);
    remove(args);
    return s;
}

static void sim_done(char *dir)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/m.json", dir);
    remove(p);
    snprintf(p, sizeof(p), "%s/s.yaml", dir);
    remove(p);
    remove(dir);
    free(dir);
}

START_TEST(test_slow_layer_hidden_then_visible)
{
    char *dir = sim_dir();
    /* l0 is the last gradient; a 50 ms slow layer there on rank 1 */
    const char *late =
        "--set 'stragglers=[{rank: 1, param: l0.weight, delay: 50ms}]'";
    char sets[512];
    snprintf(sets, sizeof(sets), "--set ddp.bucket_cap_mb=4");
    double small0 = step_s(dir, sets);
    snprintf(sets, sizeof(sets), "--set ddp.bucket_cap_mb=4 %s", late);
    double small1 = step_s(dir, sets);
    snprintf(sets, sizeof(sets), "--set ddp.bucket_cap_mb=100");
    double big0 = step_s(dir, sets);
    snprintf(sets, sizeof(sets), "--set ddp.bucket_cap_mb=100 %s", late);
    double big1 = step_s(dir, sets);
    /* small buckets: its bucket waits behind the others' all_reduces
     * anyway, so the delay is hidden; one big bucket: it launches at the
     * end of backward, and every millisecond shows */
    ck_assert_msg(fabs(small1 - small0) < 1e-4, "small: %g -> %g", small0,
                  small1);
    ck_assert_msg(fabs(big1 - big0 - 0.050) < 1e-3, "big: %g -> %g", big0,
                  big1);
    sim_done(dir);
}
END_TEST

START_TEST(test_late_grad_visible_then_hidden)
{
    char *dir = sim_dir();
    /* l6, the second gradient, reaches the reducer 50 ms late on rank 1,
     * backward's compute going on */
    const char *late = "--set 'stragglers=[{rank: 1, param: l6.weight, "
                       "delay: 50ms, affects: grad}]'";
    char sets[512];
    snprintf(sets, sizeof(sets), "--set ddp.bucket_cap_mb=4");
    double small0 = step_s(dir, sets);
    snprintf(sets, sizeof(sets), "--set ddp.bucket_cap_mb=4 %s", late);
    double small1 = step_s(dir, sets);
    snprintf(sets, sizeof(sets), "--set ddp.bucket_cap_mb=100");
    double big0 = step_s(dir, sets);
    snprintf(sets, sizeof(sets), "--set ddp.bucket_cap_mb=100 %s", late);
    double big1 = step_s(dir, sets);
    /* small buckets: its bucket (and every later one, in order) launches
     * late and the stream idles meanwhile; one big bucket: it is ready
     * (at 70 ms) before the bucket's last gradient (80 ms) */
    ck_assert_msg(small1 - small0 > 0.010, "small: %g -> %g", small0, small1);
    ck_assert_msg(fabs(big1 - big0) < 1e-4, "big: %g -> %g", big0, big1);
    sim_done(dir);
}
END_TEST

START_TEST(test_cli_place)
{
    char *dir = sim_dir(), args[2048], *out = NULL, p[1024];
    snprintf(p, sizeof(p), "%s/g.yaml", dir);
    FILE *f = fopen(p, "w");
    fputs("cluster: {nodes: 2, gpus_per_node: 1}\n"
          "workload:\n  ddp: {model: m.json}\n"
          "stragglers:\n"
          "  - {rank: 1, param: l3.wieght, delay: 5ms}\n",
          f);
    fclose(f);
    snprintf(args, sizeof(args), "ddp run %s --quiet", p);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_msg(strstr(out, "g.yaml:5:22: stragglers.grads[0].param: no "
                              "parameter 'l3.wieght' in model 'eight' (8 "
                              "parameters); close names: l3.weight"),
                  "%s", out);
    free(out);
    remove(p);
    sim_done(dir);
}
END_TEST

/* FSDP: the delay holds up the unit that holds the parameter (its
 * backward compute, then its reduce_scatter) on that rank */
static double fsdp_step_s(const char *extra)
{
    char scn[1024], args[4096], *out = NULL, *dir = tu_tmpdir(), js[1100];
    snprintf(js, sizeof(js), "%s/f.json", dir);
    snprintf(args, sizeof(args),
             "fsdp run %s --quiet --json %s --set cluster.nodes=1 "
             "--set fsdp.model=gpt2_small %s",
             tu_src_path(scn, sizeof(scn), "scenarios/fsdp-gpt2-8n.yaml"), js,
             extra);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0, "herd %s: rc %d: %s", args, rc, out);
    free(out);
    json_error_t je;
    json_t *j = json_load_file(js, 0, &je);
    ck_assert_msg(j, "%s: %s", js, je.text);
    double s = json_real_value(
        json_object_get(json_object_get(j, "steady"), "step_s"));
    json_decref(j);
    remove(js);
    remove(dir);
    free(dir);
    return s;
}

START_TEST(test_fsdp)
{
    double base = fsdp_step_s("");
    double late = fsdp_step_s("--set 'stragglers=[{rank: 3, param: "
                              "transformer.h.5.mlp.c_fc.weight, delay: "
                              "200ms}]'");
    /* 200 ms of compute on one rank's unit: every rank waits for its
     * reduce_scatter, so most of it shows */
    ck_assert_msg(late - base > 0.1 && late - base < 0.2 + 1e-6, "%g -> %g",
                  base, late);
    char *out = NULL;
    char scn[1024], args[2048];
    snprintf(args, sizeof(args),
             "fsdp run %s --quiet --set cluster.nodes=1 --set "
             "fsdp.model=gpt2_small --set 'stragglers=[{rank: 3, param: "
             "transformer.h.5.mlp.c_fc.weigth, delay: 1ms}]'",
             tu_src_path(scn, sizeof(scn), "scenarios/fsdp-gpt2-8n.yaml"));
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_msg(strstr(out, "stragglers.grads[0].param: no parameter "
                              "'transformer.h.5.mlp.c_fc.weigth'"),
                  "%s", out);
    ck_assert_msg(strstr(out, "close names: transformer.h.5.mlp.c_fc.weight"),
                  "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_grad_stragglers");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_fields);
    tcase_add_test(tc, test_field_errors);
    tcase_add_test(tc, test_walk_backward_kind);
    tcase_add_test(tc, test_walk_grad_kind);
    tcase_add_test(tc, test_unknown_param);
    tcase_add_test(tc, test_slow_layer_hidden_then_visible);
    tcase_add_test(tc, test_late_grad_visible_then_hidden);
    tcase_add_test(tc, test_cli_place);
    tcase_add_test(tc, test_fsdp);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
