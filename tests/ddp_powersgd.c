/* tests/ddp_powersgd.c - DDP's communication hooks beyond the default:
 * PowerSGD (`ddp.comm_hook: {type: powersgd, rank, start_iter, ...}`) -
 * which gradients it compresses and the sizes of its uncompressed, P and
 * Q all_reduces as powerSGD_hook computes them, the plain all_reduce
 * before start_iter, the bytes on the wire cut by the expected ratio, the
 * trace export with the P/Q all_reduces replaying on the simulator, the
 * option errors; fp16_compress (half the bytes); and GradScaler under AMP
 * (`ddp.amp: {grad_scaler: true}`: compute, no collective). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/scenario.h"
#include "workload/ddp/job.h"
#include "workload/ddp/powersgd.h"

/* A model: 4 weights of 1024 x 1024, their 1024 biases, a 4 x 4 matrix
 * and a 64 x 3 x 7 x 7 convolution, 10 ms of backward each weight. */
static char *model_dir(void)
{
    char *dir = tu_tmpdir(), path[1024];
    snprintf(path, sizeof(path), "%s/m.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\":\"mixed\",\"compute\":{\"forward_s\":0.01,"
          "\"optimizer_s\":0.001,\"device_tflops\":100,\"efficiency\":0.5,"
          "\"copy_GBps\":500},\"params\":[",
          f);
    for (int i = 0; i < 4; i++)
        fprintf(f,
                "{\"name\":\"h.%d.weight\",\"shape\":[1024,1024],"
                "\"backward_s\":0.01},"
                "{\"name\":\"h.%d.bias\",\"shape\":[1024]},",
                i, i);
    fputs("{\"name\":\"small\",\"shape\":[4,4]},"
          "{\"name\":\"conv.weight\",\"shape\":[64,3,7,7]}]}",
          f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/s.yaml", dir);
    f = fopen(path, "w");
    fputs("cluster:\n  nodes: 2\n  gpus_per_node: 1\n"
          "  inter: {bandwidth: 1Gbps, latency: 50us}\n"
          "collectives: {algorithm: ring}\n"
          "workload:\n  ddp:\n    model: m.json\n    steps: 5\n"
          "    comm_hook: {type: powersgd, rank: 4, start_iter: 3}\n",
          f);
    fclose(f);
    return dir;
}

static void dir_done(char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}

static ddp_job_t *job_of(const char *dir, const char *hook)
{
    ddp_cfg_t cfg;
    char err[1024];
    ddp_cfg_init(&cfg);
    snprintf(cfg.model, sizeof(cfg.model), "%s/m.json", dir);
    ck_assert_int_eq(ddp_cfg_set(&cfg, "comm_hook", hook, err, sizeof(err)),
                     HERD_OK);
    cfg.bucket_cap_mb = 1000; /* one bucket: every gradient */
    ddp_job_t *job = NULL;
    ck_assert_msg(ddp_job_create(&cfg, dir, 2, &job, err, sizeof(err)) ==
                      HERD_OK,
                  "%s", err);
    return job;
}

START_TEST(test_plan)
{
    char *dir = model_dir();
    ddp_job_t *job = job_of(dir, "{type: powersgd, rank: 4, start_iter: 3}");
    ck_assert_uint_eq(job->initial.n, 1); /* construction: one bucket */
    ddp_psgd_plan_t pl;
    ddp_psgd_plan(&job->model, &job->initial.b[0], &job->cfg.psgd, &pl);
    /* the weights: P 1024 x 4 and Q 1024 x 4 each; the conv viewed as
     * 64 x 147: P 64 x 4, Q 147 x 4; biases (1-D) and the 4 x 4 matrix
     * ((4 + 4) * 4 * 2 > 16) go uncompressed */
    ck_assert_uint_eq(pl.p, 4 * 1024 * 4 + 64 * 4);
    ck_assert_uint_eq(pl.q, 4 * 1024 * 4 + 147 * 4);
    ck_assert_uint_eq(pl.unc, 4 * 1024 + 16);
    ck_assert_uint_eq(pl.numel, 4 * 1024 * 1024 + 4 * 1024 + 16 + 64 * 147);
    ck_assert(pl.flops > 6.0 * 4 * 1024 * 1024 * 4);
    /* min_compression_rate: at 1000 the weights stay uncompressed too */
    ddp_powersgd_t c = job->cfg.psgd;
    c.min_compression_rate = 1000;
    ddp_psgd_plan(&job->model, &job->initial.b[0], &c, &pl);
    ck_assert_uint_eq(pl.p, 0);
    ck_assert_uint_eq(pl.unc, pl.numel);
    /* the compute: the FLOPs at the model's rate plus the memory passes,
     * or a given time per iteration */
    double s =
        ddp_psgd_compute_s(&job->model, &job->initial, 0, &job->cfg.psgd);
    ck_assert(s > 0);
    c = job->cfg.psgd;
    c.compute_s = 0.004;
    ck_assert_double_eq_tol(
        ddp_psgd_compute_s(&job->model, &job->initial, 0, &c), 0.004, 1e-15);
    ddp_job_destroy(job);
    dir_done(dir);
}
END_TEST

/* Elements all_reduced per iteration (labels "bucket ..."), from a
 * trace; *dtype gets the last one's dtype. */
static int bucket_counts(const char *path, double *per_iter, int max,
                         char *dtype, size_t dlen, int *pq)
{
    json_error_t je;
    json_t *t = json_load_file(path, 0, &je);
    ck_assert_msg(t, "%s: %s", path, je.text);
    json_t *ops = json_object_get(t, "ops"), *op;
    size_t i;
    int it = -1;
    *pq = 0;
    json_array_foreach(ops, i, op)
    {
        const char *kind = json_string_value(json_object_get(op, "op"));
        const char *label = json_string_value(json_object_get(op, "label"));
        if (!strcmp(kind, "mark") && label && !strcmp(label, "step")) {
            if (++it < max)
                per_iter[it] = 0;
            continue;
        }
        if (strcmp(kind, "all_reduce") || !label ||
            strncmp(label, "bucket ", 7) || it < 0 || it >= max)
            continue;
        per_iter[it] +=
            (double)json_integer_value(json_object_get(op, "count"));
        *pq += strstr(label, " P") || strstr(label, " Q");
        snprintf(dtype, dlen, "%s",
                 json_string_value(json_object_get(op, "dtype")));
    }
    json_decref(t);
    return it + 1;
}

START_TEST(test_bytes_and_trace)
{
    char *dir = model_dir(), args[2048], *out = NULL, path[1024], dt[32];
    snprintf(args, sizeof(args), "ddp run %s/s.yaml --quiet --trace %s/t.json",
             dir, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    free(out);
    snprintf(path, sizeof(path), "%s/t.json", dir);
    double n[8];
    int pq = 0;
    ck_assert_int_eq(bucket_counts(path, n, 8, dt, sizeof(dt), &pq), 5);
    double numel = 4 * 1024 * 1024 + 4 * 1024 + 16 + 64 * 147;
    double comp =
        (4 * 1024 + 16) + (4 * 1024 * 4 + 64 * 4) + (4 * 1024 * 4 + 147 * 4);
    /* iterations 0-2: the plain all_reduce of every gradient; from
     * start_iter 3 on: uncompressed + P + Q */
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq(n[i], numel);
    for (int i = 3; i < 5; i++)
        ck_assert_double_eq(n[i], comp);
    ck_assert_int_eq(pq, 2 * 2 * 2); /* P and Q of each bucket (2 after the
                                        rebuild), two iterations */
    ck_assert_str_eq(dt, "float32");
    ck_assert(numel / comp > 100); /* the compression ratio */
    /* the trace replays on the simulator */
    snprintf(path, sizeof(path), "%s/r.yaml", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "cluster: {nodes: 2, gpus_per_node: 1, inter: {bandwidth: "
               "1Gbps}}\nworkload: {trace: t.json}\n");
    fclose(f);
    snprintf(args, sizeof(args), "sim %s", path);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, out);
    free(out);
    /* a higher rank moves more: --set ddp.comm_hook.rank */
    snprintf(args, sizeof(args),
             "ddp run %s/s.yaml --quiet --set ddp.comm_hook.rank=8 --trace "
             "%s/t.json",
             dir, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    free(out);
    snprintf(path, sizeof(path), "%s/t.json", dir);
    bucket_counts(path, n, 8, dt, sizeof(dt), &pq);
    ck_assert_double_eq(n[4], (4 * 1024 + 16) + (4 * 1024 * 8 + 64 * 8) +
                                  (4 * 1024 * 8 + 147 * 8));
    /* fp16_compress: the same elements in float16, half the bytes */
    snprintf(args, sizeof(args),
             "ddp run %s/s.yaml --quiet --set ddp.comm_hook=fp16_compress "
             "--trace %s/t.json",
             dir, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    free(out);
    bucket_counts(path, n, 8, dt, sizeof(dt), &pq);
    ck_assert_double_eq(n[4], numel);
    ck_assert_str_eq(dt, "float16");
    ck_assert_int_eq(pq, 0);
    dir_done(dir);
}
END_TEST

/* The report of `herd ddp run` with these --set flags. */
static json_t *run_json(const char *dir, const char *sets)
{
    char args[2048], *out = NULL;
    snprintf(args, sizeof(args),
             "ddp run %s/s.yaml --quiet --json %s/r.json --set ddp.steps=6 %s",
             dir, dir, sets);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0, "herd %s: rc %d: %s", args, rc, out);
    free(out);
    snprintf(args, sizeof(args), "%s/r.json", dir);
    json_error_t je;
    json_t *j = json_load_file(args, 0, &je);
    ck_assert_msg(j, "%s: %s", args, je.text);
    return j;
}

static double step_at(json_t *j, int it, const char *key)
{
    return json_real_value(
        json_object_get(json_array_get(json_object_get(j, "steps"), it), key));
}

START_TEST(test_prediction)
{
    char *dir = model_dir();
    json_t *plain = run_json(dir, "--set ddp.comm_hook=none");
    json_t *psgd = run_json(dir, "");
    /* the same before start_iter (apart from nothing); from it on, far
     * less communication on a 1 Gb/s link */
    ck_assert_double_eq_tol(step_at(psgd, 1, "step_s"),
                            step_at(plain, 1, "step_s"), 1e-9);
    ck_assert_msg(step_at(psgd, 4, "comm_s") < step_at(plain, 4, "comm_s") / 20,
                  "comm %g vs %g", step_at(psgd, 4, "comm_s"),
                  step_at(plain, 4, "comm_s"));
    ck_assert(step_at(psgd, 4, "step_s") < step_at(plain, 4, "step_s"));
    json_decref(plain);
    json_decref(psgd);
    /* GradScaler: the unscale pass (read and write every gradient at the
     * copy rate) before the optimizer, and no collective */
    json_t *a = run_json(dir, "--set ddp.comm_hook=none");
    json_t *b = run_json(dir, "--set ddp.comm_hook=none --set "
                              "'ddp.amp={grad_scaler: true}'");
    double bytes = 4.0 * (4 * 1024 * 1024 + 4 * 1024 + 16 + 64 * 147);
    ck_assert_double_eq_tol(step_at(b, 4, "step_s") - step_at(a, 4, "step_s"),
                            2 * bytes / 500e9, 1e-7);
    json_decref(a);
    json_decref(b);
    char args[2048], *out = NULL, path[1024], dt[32];
    snprintf(args, sizeof(args),
             "ddp run %s/s.yaml --quiet --set ddp.comm_hook=none --set "
             "ddp.amp.grad_scaler=true --trace %s/t.json",
             dir, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    free(out);
    snprintf(path, sizeof(path), "%s/t.json", dir);
    char *t = tu_read_file(path);
    ck_assert_msg(strstr(t, "\"unscale\""), "no unscale compute");
    ck_assert_msg(!strstr(t, "found_inf"), "a found_inf collective");
    free(t);
    double n[8];
    int pq;
    bucket_counts(path, n, 8, dt, sizeof(dt), &pq);
    ck_assert_double_eq(n[4], 4 * 1024 * 1024 + 4 * 1024 + 16 + 64 * 147);
    dir_done(dir);
}
END_TEST

static void run_err(const char *dir, const char *sets, const char *want)
{
    char args[2048], *out = NULL;
    snprintf(args, sizeof(args), "ddp run %s/s.yaml --quiet %s", dir, sets);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_msg(strstr(out, want), "'%s' lacks '%s'", out, want);
    free(out);
}

START_TEST(test_errors)
{
    char *dir = model_dir(), path[1024];
    /* PowerSGDState's own check, at the hook's place in the file */
    snprintf(path, sizeof(path), "%s/s.yaml", dir);
    FILE *f = fopen(path, "w");
    fputs("cluster: {nodes: 2, gpus_per_node: 1}\n"
          "workload:\n  ddp:\n    model: m.json\n"
          "    comm_hook: {type: powersgd, start_iter: 1}\n",
          f);
    fclose(f);
    run_err(dir, "",
            "ddp.comm_hook: start_iter 1: PowerSGD expects "
            "start_iter > 1 when use_error_feedback or warm_start "
            "is on");
    run_err(dir,
            "--set 'ddp.comm_hook={type: powersgd, start_iter: 1, "
            "use_error_feedback: false, warm_start: false}' --set "
            "ddp.comm_hook.rank=0",
            "--set ddp.comm_hook.rank: bad value '0'");
    f = fopen(path, "w");
    fputs("cluster: {nodes: 2, gpus_per_node: 1}\n"
          "workload:\n  ddp:\n    model: m.json\n"
          "    comm_hook: {type: powersgd, rnak: 2}\n",
          f);
    fclose(f);
    run_err(dir, "", "s.yaml:5:17: ddp.comm_hook.rnak: unknown key");
    f = fopen(path, "w");
    fputs("cluster: {nodes: 2, gpus_per_node: 1}\n"
          "workload:\n  ddp: {model: m.json}\n",
          f);
    fclose(f);
    run_err(dir, "--set ddp.comm_hook=sparsify",
            "ddp.comm_hook: bad value 'sparsify'; expected none, "
            "fp16_compress, bf16_compress or powersgd");
    run_err(dir,
            "--set ddp.comm_hook=fp16_compress --set "
            "ddp.comm_hook.start_iter=10",
            "PowerSGD settings need type powersgd (the hook is "
            "fp16_compress)");
    run_err(dir, "--set 'ddp.amp={grad_scaler: maybe}'",
            "ddp.amp.grad_scaler: bad value 'maybe'");
    run_err(dir, "--set ddp.amp=on", "ddp.amp: bad value 'on'");
    dir_done(dir);
}
END_TEST

START_TEST(test_set_merges)
{
    /* --set ddp.comm_hook.rank on a hook given as one mapping sets the
     * entry inside it: the scenario reads as the file would (herd sweep
     * then recognises the file's own value) */
    trace_scenario_t *sc = NULL;
    char err[1024];
    ck_assert_msg(trace_scenario_load_string(
                      "workload:\n  ddp:\n    comm_hook: {type: powersgd, "
                      "rank: 4, start_iter: 2}\n",
                      "s.yaml", &sc, err, sizeof(err)) == HERD_OK,
                  "%s", err);
    ck_assert_int_eq(
        trace_scenario_set(sc, "ddp.comm_hook.rank", "8", err, sizeof(err)),
        HERD_OK);
    ck_assert_int_eq(trace_scenario_set(sc, "ddp.comm_hook.warm_start", "false",
                                        err, sizeof(err)),
                     HERD_OK);
    const trace_kv_t *kv = trace_scenario_ddp_get(sc, "comm_hook");
    ck_assert_str_eq(kv->value, "{type: powersgd, rank: 8, start_iter: 2, "
                                "warm_start: false}");
    ck_assert_int_eq(kv->line, 0);
    ck_assert_ptr_null(trace_scenario_ddp_get(sc, "comm_hook.rank"));
    /* a scalar hook: the key stays its own */
    ck_assert_int_eq(trace_scenario_set(sc, "ddp.comm_hook", "fp16_compress",
                                        err, sizeof(err)),
                     HERD_OK);
    ck_assert_int_eq(
        trace_scenario_set(sc, "ddp.comm_hook.rank", "2", err, sizeof(err)),
        HERD_OK);
    ck_assert_ptr_nonnull(trace_scenario_ddp_get(sc, "comm_hook.rank"));
    trace_scenario_destroy(sc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_powersgd");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_plan);
    tcase_add_test(tc, test_bytes_and_trace);
    tcase_add_test(tc, test_prediction);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_set_merges);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
