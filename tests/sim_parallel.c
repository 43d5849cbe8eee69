/* tests/sim_parallel.c - the 3D-parallel workload model on the simulator:
 * Megatron's layout (the groups of a 2x2x2 job), the TP collectives per
 * layer (counts and sizes, from the engine's records) with and without
 * sequence parallelism and the compute divided by tp, the GPipe bubble
 * against (P-1)/(M+P-1) on a compute-only pipeline, 1F1B's smaller
 * activation memory, the collectives of each ZeRO stage, bad layouts
 * refused with the keys named, and herd sweep never recommending a layout
 * that does not fit parallel.gpu_mem. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <herd/sim.h>

#include "support/testutil.h"
#include "workload/parallel/prog.h"
#include "workload/parallel/report.h"

typedef struct run {
    par_job_t *job;
    par_prog_t *prog;
    par_collect_t *col;
    herd_status_t st;
    herd_run_info_t info;
    par_summary_t sum;
    par_counts_t n; /* rank 0's, iteration 0 */
} run_t;

static char model_dir[1024];

/* A model of 8 equal blocks (h.N.w, 1M elements) with no root, 80 ms of
 * forward and 160 ms of backward per micro-batch, no optimizer: every
 * pipeline stage computes the same. */
static const char *flat_model(void)
{
    static char path[1100];
    char *dir = tu_tmpdir();
    snprintf(path, sizeof(path), "%s/flat.json", dir);
    free(dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"model\": \"flat\", \"compute\": {\"forward_s\": 0.08, "
               "\"optimizer_s\": 0}, \"params\": [");
    for (int i = 0; i < 8; i++)
        fprintf(f,
                "%s{\"index\": %d, \"name\": \"h.%d.w\", \"shape\": "
                "[1000000], \"dtype\": \"float32\", \"numel\": 1000000, "
                "\"bytes\": 4000000, \"backward_s\": 0.02}",
                i ? ", " : "", i, i);
    fprintf(f, "]}\n");
    fclose(f);
    return path;
}

static herd_status_t try_job(int world, const char *const *sets,
                             par_job_t **job, char *err, size_t len)
{
    par_cfg_t cfg;
    par_cfg_init(&cfg);
    for (size_t i = 0; sets && sets[i]; i++) {
        char key[128];
        const char *eq = strchr(sets[i], '=');
        snprintf(key, sizeof(key), "%.*s", (int)(eq - sets[i]), sets[i]);
        herd_status_t st = par_cfg_set(&cfg, key, eq + 1, err, len);
        if (st != HERD_OK)
            return st;
    }
    tu_src_path(model_dir, sizeof(model_dir), "models");
    return par_job_create(&cfg, model_dir, world, 8, job, err, len);
}

static par_job_t *make_job(int world, const char *const *sets)
{
    char err[1024];
    par_job_t *job = NULL;
    ck_assert_msg(try_job(world, sets, &job, err, sizeof(err)) == HERD_OK, "%s",
                  err);
    return job;
}

static void run_par(int world, const char *const *sets, run_t *r)
{
    memset(r, 0, sizeof(*r));
    r->job = make_job(world, sets);
    ck_assert_int_eq(par_prog_create(r->job, &r->prog), HERD_OK);
    ck_assert_int_eq(par_collect_create(r->job, &r->col), HERD_OK);
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = world > 8 ? world / 8 : 1;
    o.cluster.gpus_per_node = world > 8 ? 8 : world;
    herd_init_t init = {.backend = "sim",
                        .world_size = world,
                        .timeout_s = 60,
                        .engine_opts = &o,
                        .timeline_cb = par_collect_cb,
                        .timeline_arg = r->col};
    r->st = herd_run(&init, par_prog_main, r->prog, &r->info);
    ck_assert_msg(r->st == HERD_OK, "%s", herd_status_string(r->st));
    par_collect_summary(r->col, &r->sum);
    par_collect_counts(r->col, 0, &r->n);
}

static void run_done(run_t *r)
{
    herd_run_info_clear(&r->info);
    par_collect_destroy(r->col);
    par_prog_destroy(r->prog);
    par_job_destroy(r->job);
}

static int same_group(const par_job_t *j, int g, const int *want, int n)
{
    if (g < 1 || g > j->ngroups || j->groups[g - 1].n != n)
        return 0;
    for (int i = 0; i < n; i++)
        if (j->groups[g - 1].ranks[i] != want[i])
            return 0;
    return 1;
}

START_TEST(test_layout_2x2x2)
{
    const char *sets[] = {"tp=2", "pp=2", "dp=2", NULL};
    par_job_t *j = make_job(8, sets);
    ck_assert_int_eq(j->ngroups, 8); /* 4 TP groups, 4 DP groups */
    /* rank = pp_idx*4 + dp_idx*2 + tp_idx */
    for (int r = 0; r < 8; r++) {
        int t, d, p;
        par_job_coords(j, r, &t, &d, &p);
        ck_assert_int_eq(r, p * 4 + d * 2 + t);
        int tp[2] = {r - t, r - t + 1};
        int dp[2] = {p * 4 + t, p * 4 + t + 2};
        ck_assert_msg(same_group(j, par_job_tp_group(j, r), tp, 2), "tp %d", r);
        ck_assert_msg(same_group(j, par_job_dp_group(j, r), dp, 2), "dp %d", r);
    }
    /* gpt2_small's 12 blocks: 6 per stage, the root on the last */
    ck_assert_int_eq(j->nlayers, 12);
    ck_assert_int_eq(j->chunk_first[1], 6);
    ck_assert_int_eq(j->hidden, 768);
    ck_assert_int_eq(j->seq, 1024);
    par_job_destroy(j);
    /* tp 1 and dp 1 make no groups of one */
    const char *pp8[] = {"pp=8", NULL};
    j = make_job(8, pp8);
    ck_assert_int_eq(j->ngroups, 0);
    ck_assert_int_eq(j->dp, 1);
    par_job_destroy(j);
}
END_TEST

START_TEST(test_tp_collectives)
{
    const char *one[] = {"micro_batches=2", "steps=1", NULL};
    const char *tp2[] = {"tp=2", "micro_batches=2", "steps=1", NULL};
    const char *sp[] = {"tp=2", "micro_batches=2", "steps=1",
                        "sequence_parallel=true", NULL};
    run_t a, b, c;
    run_par(1, one, &a);
    run_par(2, tp2, &b);
    run_par(2, sp, &c);
    uint64_t act = 1 * 1024 * 768; /* micro_batch x seq x hidden */
    /* two all_reduces per layer in forward and two in backward */
    ck_assert_uint_eq(a.n.n[PAR_CAT_TP][HERD_COLL_ALL_REDUCE], 0);
    ck_assert_uint_eq(b.n.n[PAR_CAT_TP][HERD_COLL_ALL_REDUCE], 4 * 12 * 2);
    ck_assert_uint_eq(b.n.bytes[PAR_CAT_TP][HERD_COLL_ALL_REDUCE],
                      4 * 12 * 2 * act * 2); /* bfloat16 */
    /* sequence parallel: all_gather + reduce_scatter pairs of act / tp */
    ck_assert_uint_eq(c.n.n[PAR_CAT_TP][HERD_COLL_ALL_REDUCE], 0);
    ck_assert_uint_eq(c.n.n[PAR_CAT_TP][HERD_COLL_ALL_GATHER], 4 * 12 * 2);
    ck_assert_uint_eq(c.n.n[PAR_CAT_TP][HERD_COLL_REDUCE_SCATTER], 4 * 12 * 2);
    ck_assert_uint_eq(c.n.bytes[PAR_CAT_TP][HERD_COLL_ALL_GATHER],
                      4 * 12 * 2 * act / 2 * 2);
    /* the layer's compute divided by tp */
    ck_assert(a.sum.compute_s > 0);
    ck_assert_double_eq_tol(b.sum.compute_s, a.sum.compute_s / 2,
                            a.sum.compute_s * 1e-6);
    run_done(&a);
    run_done(&b);
    run_done(&c);
}
END_TEST

START_TEST(test_gpipe_bubble)
{
    char model[1200];
    snprintf(model, sizeof(model), "model=%s", flat_model());
    const char *gp[] = {model,     "pp=4",     "micro_batches=8",
                        "seq=1",   "hidden=1", "schedule=gpipe",
                        "steps=2", NULL};
    const char *fb[] = {model,      "pp=4",          "micro_batches=8", "seq=1",
                        "hidden=1", "schedule=1f1b", "steps=2",         NULL};
    run_t g, o;
    run_par(4, gp, &g);
    run_par(4, fb, &o);
    double P = 4, M = 8, fb_s = (0.08 + 8 * 0.02) / P; /* per stage, micro */
    double want = (M + P - 1) * fb_s;
    ck_assert_int_eq(g.sum.nsteady, 1); /* the second of two */
    ck_assert_msg(g.sum.step_s > want && g.sum.step_s < want * 1.001,
                  "GPipe step %.6f s, closed form %.6f s", g.sum.step_s, want);
    ck_assert_double_eq_tol(g.sum.idle_s / g.sum.step_s, (P - 1) / (M + P - 1),
                            1e-3);
    ck_assert_double_eq_tol(g.sum.bubble, 3.0 / 11.0, 1e-12);
    /* 1F1B: the same bubble, fewer micro-batches in flight */
    ck_assert_double_eq_tol(o.sum.step_s, g.sum.step_s, want * 1e-3);
    ck_assert_int_eq(g.sum.mem.inflight, 8);
    ck_assert_int_eq(o.sum.mem.inflight, 4);
    ck_assert_uint_eq(g.sum.mem.activations, 2 * o.sum.mem.activations);
    ck_assert_uint_eq(o.sum.mem.activations, 4 * 2 * par_job_act_bytes(o.job));
    /* the first stage sends M activations, receives M gradients */
    ck_assert_uint_eq(g.n.n[PAR_CAT_PP][HERD_COLL_SEND], 8);
    ck_assert_uint_eq(g.n.n[PAR_CAT_PP][HERD_COLL_RECV], 8);
    run_done(&g);
    run_done(&o);
}
END_TEST

/* Megatron's interleaved 1F1B: v chunks per rank cut the bubble to
 * (P-1)/v micro-batch times: the step is (M + (P-1)/v) (f+b). */
START_TEST(test_interleaved)
{
    char model[1200];
    snprintf(model, sizeof(model), "model=%s", flat_model());
    const char *il[] = {model,
                        "pp=2",
                        "micro_batches=4",
                        "seq=1",
                        "hidden=1",
                        "schedule=interleaved",
                        "virtual_stages=2",
                        "steps=2",
                        NULL};
    const char *fb[] = {model,      "pp=2",          "micro_batches=4", "seq=1",
                        "hidden=1", "schedule=1f1b", "steps=2",         NULL};
    run_t a, b;
    run_par(2, il, &a);
    run_par(2, fb, &b);
    double P = 2, M = 4, v = 2, fb_s = (0.08 + 8 * 0.02) / P;
    double want = (M + (P - 1) / v) * fb_s;
    ck_assert_msg(a.sum.step_s > want && a.sum.step_s < want * 1.001,
                  "interleaved step %.6f s, closed form %.6f s", a.sum.step_s,
                  want);
    ck_assert_double_eq_tol(b.sum.step_s, (M + P - 1) * fb_s, fb_s * 0.01);
    ck_assert_double_eq_tol(a.sum.bubble, 1.0 / 9.0, 1e-12);
    /* chunk 0 of stage 0 is layers 0-1, chunk 1 layers 4-5 */
    ck_assert_int_eq(a.job->chunk_first[2], 4);
    /* stage 0: activations of both chunks on (2 x M sends), chunk 1's
     * gradients back to the last stage's chunk 0 (M); receives: chunk 1's
     * input from the last stage (M), both chunks' gradients (2 x M) */
    ck_assert_uint_eq(a.n.n[PAR_CAT_PP][HERD_COLL_SEND], 3 * 4);
    ck_assert_uint_eq(a.n.n[PAR_CAT_PP][HERD_COLL_RECV], 3 * 4);
    run_done(&a);
    run_done(&b);
}
END_TEST

START_TEST(test_zero_stages)
{
    /* gpt2_small, dp 4, one micro-batch; buckets of 1e12 elements: one */
    const char *base[] = {"micro_batches=1", "steps=1",
                          "reduce_bucket_size=1000000000000",
                          "allgather_bucket_size=1000000000000"};
    run_t r[4];
    for (int z = 0; z < 4; z++) {
        char zs[32];
        snprintf(zs, sizeof(zs), "zero_stage=%d", z);
        const char *sets[] = {base[0], base[1], base[2], base[3], zs, NULL};
        run_par(4, sets, &r[z]);
    }
    const par_counts_t *n0 = &r[0].n, *n1 = &r[1].n, *n3 = &r[3].n;
    ck_assert_uint_eq(n0->n[PAR_CAT_DP][HERD_COLL_ALL_REDUCE], 1);
    ck_assert_uint_eq(n0->n[PAR_CAT_DP][HERD_COLL_REDUCE_SCATTER], 0);
    ck_assert_uint_eq(n0->n[PAR_CAT_DP][HERD_COLL_ALL_GATHER], 0);
    for (int z = 1; z <= 2; z++) {
        ck_assert_uint_eq(r[z].n.n[PAR_CAT_DP][HERD_COLL_ALL_REDUCE], 0);
        ck_assert_uint_eq(r[z].n.n[PAR_CAT_DP][HERD_COLL_REDUCE_SCATTER], 1);
        ck_assert_uint_eq(r[z].n.n[PAR_CAT_DP][HERD_COLL_ALL_GATHER], 1);
    }
    ck_assert_uint_eq(n1->n[PAR_CAT_Z3][HERD_COLL_ALL_GATHER], 0);
    /* ZeRO-3: every layer (12 blocks + root) gathered before its forward
     * and its backward; no all_gather after the step */
    ck_assert_uint_eq(n3->n[PAR_CAT_Z3][HERD_COLL_ALL_GATHER], 2 * 13);
    ck_assert_uint_eq(n3->n[PAR_CAT_DP][HERD_COLL_REDUCE_SCATTER], 1);
    ck_assert_uint_eq(n3->n[PAR_CAT_DP][HERD_COLL_ALL_GATHER], 0);
    /* memory: optimizer state, then gradients, then parameters sharded */
    const par_memory_t *m[4];
    for (int z = 0; z < 4; z++)
        m[z] = &r[z].sum.mem;
    uint64_t n = par_job_stage_numel(r[0].job, 0);
    ck_assert_uint_eq(m[0]->optimizer, 12 * n);
    ck_assert_uint_eq(m[1]->optimizer, 12 * ((n + 3) / 4));
    ck_assert_uint_eq(m[1]->grads, m[0]->grads);
    ck_assert_uint_eq(m[2]->grads, 2 * ((n + 3) / 4));
    ck_assert_uint_eq(m[2]->params, m[0]->params);
    ck_assert_uint_eq(m[3]->params, 2 * ((n + 3) / 4));
    ck_assert(m[3]->gathered > 0 && m[2]->gathered == 0);
    ck_assert(m[0]->total > m[1]->total && m[1]->total > m[2]->total);
    /* buckets: a small reduce_bucket_size makes one reduction per layer */
    const char *small[] = {"micro_batches=1", "steps=1", "zero_stage=2",
                           "reduce_bucket_size=1", NULL};
    run_t s;
    run_par(4, small, &s);
    ck_assert_uint_eq(s.n.n[PAR_CAT_DP][HERD_COLL_REDUCE_SCATTER], 13);
    run_done(&s);
    /* overlap_comm: the buckets reduce behind the rest of the backward */
    const char *ov[] = {"micro_batches=1", "zero_stage=2",
                        "reduce_bucket_size=5000000", "overlap_comm=true",
                        NULL};
    const char *nov[] = {"micro_batches=1", "zero_stage=2",
                         "reduce_bucket_size=5000000", "overlap_comm=false",
                         NULL};
    run_t o, p;
    run_par(4, ov, &o);
    run_par(4, nov, &p);
    ck_assert_uint_eq(o.n.n[PAR_CAT_DP][HERD_COLL_REDUCE_SCATTER],
                      p.n.n[PAR_CAT_DP][HERD_COLL_REDUCE_SCATTER]);
    ck_assert_msg(o.sum.idle_s < p.sum.idle_s && o.sum.step_s < p.sum.step_s,
                  "overlap_comm: step %.6f idle %.6f; without %.6f %.6f",
                  o.sum.step_s, o.sum.idle_s, p.sum.step_s, p.sum.idle_s);
    run_done(&o);
    run_done(&p);
    /* ZeRO-1's parameter all_gathers: stage 0 of two holds 6 blocks of
     * 7.08 M elements; buckets of 25 M close after 4 and the last 2 */
    const char *ag[] = {"pp=2",
                        "micro_batches=2",
                        "steps=1",
                        "zero_stage=1",
                        "allgather_bucket_size=25000000",
                        NULL};
    run_par(8, ag, &s);
    ck_assert_uint_eq(s.n.n[PAR_CAT_DP][HERD_COLL_ALL_GATHER], 2);
    run_done(&s);
    for (int z = 0; z < 4; z++)
        run_done(&r[z]);
}
END_TEST

static void refused(int world, const char *const *sets, const char *want)
{
    char err[1024] = "";
    par_job_t *job = NULL;
    herd_status_t st = try_job(world, sets, &job, err, sizeof(err));
    ck_assert_msg(st != HERD_OK, "accepted: %s", sets[0]);
    ck_assert_ptr_null(job);
    ck_assert_msg(strstr(err, want), "'%s' not in: %s", want, err);
}

START_TEST(test_bad_layouts)
{
    const char *a[] = {"tp=3", NULL};
    refused(8, a, "parallel.tp x parallel.pp = 3 x 1");
    const char *b[] = {"tp=2", "pp=2", "dp=4", NULL};
    refused(8, b, "parallel.tp x parallel.pp x parallel.dp = 2 x 2 x 4 = 16");
    const char *c[] = {"pp=16", NULL};
    refused(16, c, "parallel.pp = 16 stages but the model has 12 layers");
    const char *d[] = {"tp=8", "sequence_parallel=true", "seq=1001", NULL};
    refused(8, d, "parallel.sequence_parallel");
    const char *e[] = {"zero_stage=4", NULL};
    refused(8, e, "parallel.zero_stage: bad value '4'");
    const char *f[] = {"tq=2", NULL};
    refused(8, f, "parallel.tq: unknown option");
    const char *g[] = {"global_batch_size=100", "micro_batch_size=1", NULL};
    refused(8, g, "parallel.global_batch_size 100 is not a multiple");
    const char *h[] = {"schedule=zigzag", NULL};
    refused(8, h, "gpipe, 1f1b or interleaved");
    const char *i[] = {"pp=2", "schedule=interleaved", "virtual_stages=1",
                       NULL};
    refused(8, i,
            "parallel.virtual_stages = 1: parallel.schedule: "
            "interleaved needs 2 or more");
    const char *m[] = {"pp=4", "schedule=interleaved", "virtual_stages=2",
                       "micro_batches=6", NULL};
    refused(8, m, "a multiple of it (4)");
    const char *n[] = {"pp=4", "schedule=interleaved", "virtual_stages=4",
                       NULL};
    refused(8, n, "parallel.pp = 4 stages x parallel.virtual_stages");
}
END_TEST

/* herd sweep over tp: the layout that does not fit parallel.gpu_mem is
 * marked and never recommended, even when it is the fastest. */
START_TEST(test_sweep_respects_memory)
{
    char *out = NULL, *dir = tu_tmpdir(), scn[1024], args[4096];
    tu_src_path(scn, sizeof(scn), "scenarios/parallel-gpt-7b-16n.yaml");
    snprintf(args, sizeof(args),
             "sweep '%s' --set cluster.nodes=1 --set parallel.pp=1 "
             "--set parallel.global_batch_size=16 --set parallel.steps=1 "
             "--set parallel.gpu_mem=40 --set parallel.tp=1,8 --jobs 1 "
             "--no-plot --out '%s'",
             scn, dir);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0, "exit %d\n%s", rc, out);
    ck_assert_msg(strstr(out, "does not fit gpu_mem"), "%s", out);
    ck_assert_msg(strstr(out, "recommendation: parallel.tp=8"), "%s", out);
    ck_assert_msg(!strstr(out, "recommendation: parallel.tp=1"), "%s", out);
    free(out);
    /* herd parallel run: exit 1 when the layout does not fit */
    snprintf(args, sizeof(args),
             "parallel run '%s' --set cluster.nodes=1 --set parallel.pp=1 "
             "--set parallel.tp=1 --set parallel.global_batch_size=16 "
             "--set parallel.steps=1 --gpu-mem 40 --json '%s/run.json'",
             scn, dir);
    rc = tu_herd(args, &out);
    ck_assert_msg(rc == 1 && strstr(out, "DOES NOT FIT"), "exit %d\n%s", rc,
                  out);
    free(out);
    /* the JSON report carries the same: not fitting, rank 0's ops */
    char path[1100];
    snprintf(path, sizeof(path), "%s/run.json", dir);
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    ck_assert_msg(j, "%s", jerr.text);
    ck_assert(
        json_is_false(json_object_get(json_object_get(j, "memory"), "fits")));
    ck_assert_int_eq(json_integer_value(json_object_get(j, "dp")), 8);
    json_t *ops = json_object_get(j, "ops");
    ck_assert(json_array_size(ops) > 0);
    ck_assert_ptr_nonnull(json_object_get(json_array_get(ops, 0), "count"));
    json_decref(j);
    free(dir);
}
END_TEST

START_TEST(test_trace_export)
{
    const char *sets[] = {"tp=2",    "pp=2", "dp=2", "micro_batches=2",
                          "steps=1", NULL};
    par_job_t *j = make_job(8, sets);
    trace_t *t = NULL;
    ck_assert_int_eq(par_trace_build(j, &t), HERD_OK);
    ck_assert_uint_eq(t->world_size, 8);
    trace_destroy(t);
    par_job_destroy(j);
    /* herd replay of the exported trace (TP and DP groups, p2p) ends
     * when the program's slowest rank does */
    char *out = NULL, *dir = tu_tmpdir(), scn[1024], args[4096];
    tu_src_path(scn, sizeof(scn), "scenarios/parallel-gpt-7b-16n.yaml");
    const char *common = "--set cluster.nodes=1 --set parallel.tp=2 "
                         "--set parallel.pp=2 --set parallel.steps=1 "
                         "--set parallel.global_batch_size=8";
    snprintf(args, sizeof(args), "parallel run '%s' %s --trace '%s/t.json'",
             scn, common, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    const char *p = strstr(out, "max over ranks ");
    ck_assert_ptr_nonnull(p);
    double prog_ms = atof(p + 15);
    free(out);
    snprintf(args, sizeof(args),
             "replay '%s/t.json' --scenario '%s' --set cluster.nodes=1 -o "
             "'%s/replay' --no-plots",
             dir, scn, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    p = strstr(out, "steps (from \"step\" marks): ");
    ck_assert_msg(p, "%s", out);
    double replay_ms = atof(p + strlen("steps (from \"step\" marks): "));
    ck_assert_msg(prog_ms > 0 && replay_ms > prog_ms * 0.999 &&
                      replay_ms < prog_ms * 1.001,
                  "program %.3f ms, replay %.3f ms", prog_ms, replay_ms);
    free(out);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sim_parallel");
    TCase *tc = tcase_create("parallel");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_layout_2x2x2);
    tcase_add_test(tc, test_tp_collectives);
    tcase_add_test(tc, test_gpipe_bubble);
    tcase_add_test(tc, test_interleaved);
    tcase_add_test(tc, test_zero_stages);
    tcase_add_test(tc, test_bad_layouts);
    tcase_add_test(tc, test_sweep_respects_memory);
    tcase_add_test(tc, test_trace_export);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(suite());
}
