/* tests/sim_fsdp.c - the FSDP workload model on the simulator: units from
 * wrap policies and prefixes, the collectives per unit and step of every
 * strategy (counts and sizes, from the engine's records), the memory
 * formulas, prefetch hiding communication, the hang diagnoses of ranks
 * that wrap differently or skip a unit's forward, the trace export, the
 * options' errors and the scenario section with herd fsdp run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <herd/sim.h>

#include "support/testutil.h"
#include "trace/scenario.h"
#include "workload/fsdp/prog.h"
#include "workload/fsdp/report.h"

typedef struct run {
    fsdp_job_t *job;
    fsdp_prog_t *prog;
    fsdp_collect_t *col;
    herd_status_t st;
    herd_run_info_t info;
} run_t;

/* Build the job of `sets` ("key=value" pairs, NULL-terminated) for
 * nodes x 8 ranks. */
static fsdp_job_t *make_job(int nodes, const char *const *sets)
{
    char dir[1024], err[1024];
    fsdp_cfg_t cfg;
    fsdp_cfg_init(&cfg);
    cfg.steps = 2;
    for (size_t i = 0; sets && sets[i]; i++) {
        char key[128];
        const char *eq = strchr(sets[i], '=');
        snprintf(key, sizeof(key), "%.*s", (int)(eq - sets[i]), sets[i]);
        ck_assert_msg(fsdp_cfg_set(&cfg, key, eq + 1, err, sizeof(err)) ==
                          HERD_OK,
                      "%s", err);
    }
    fsdp_job_t *job = NULL;
    tu_src_path(dir, sizeof(dir), "models");
    ck_assert_msg(fsdp_job_create(&cfg, dir, nodes * 8, 8, &job, err,
                                  sizeof(err)) == HERD_OK,
                  "%s", err);
    fsdp_cfg_fini(&cfg);
    return job;
}

static void run_fsdp(int nodes, const char *const *sets, run_t *r)
{
    memset(r, 0, sizeof(*r));
    r->job = make_job(nodes, sets);
    ck_assert_int_eq(fsdp_prog_create(r->job, &r->prog), HERD_OK);
    ck_assert_int_eq(fsdp_collect_create(r->job, &r->col), HERD_OK);
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = nodes;
    o.cluster.gpus_per_node = 8;
    o.cluster.inter.bandwidth = 12.5e9;
    herd_init_t init = {.backend = "sim",
                        .world_size = nodes * 8,
                        .timeout_s = 30,
                        .engine_opts = &o,
                        .timeline_cb = fsdp_collect_cb,
                        .timeline_arg = r->col};
    r->st = herd_run(&init, fsdp_prog_main, r->prog, &r->info);
}

static void run_done(run_t *r)
{
    herd_run_info_clear(&r->info);
    fsdp_collect_destroy(r->col);
    fsdp_prog_destroy(r->prog);
    fsdp_job_destroy(r->job);
}

START_TEST(test_block_keys)
{
    char k[128];
    ck_assert(
        fsdp_block_key("transformer.h.3.attn.c_attn.weight", k, sizeof(k)));
    ck_assert_str_eq(k, "transformer.h.3");
    ck_assert(fsdp_block_key("bert.encoder.layer.11.output.dense.bias", k,
                             sizeof(k)));
    ck_assert_str_eq(k, "bert.encoder.layer.11");
    ck_assert(fsdp_block_key("layer2.0.conv1.weight", k, sizeof(k)));
    ck_assert_str_eq(k, "layer2");
    ck_assert(fsdp_block_key("model.layers.7.mlp.up.weight", k, sizeof(k)));
    ck_assert_str_eq(k, "model.layers.7");
    ck_assert(!fsdp_block_key("transformer.wte.weight", k, sizeof(k)));
    ck_assert(!fsdp_block_key("fc.weight", k, sizeof(k)));
}
END_TEST

/* Units partition the parameters; per model the block count is right. */
START_TEST(test_units_of_models)
{
    static const struct {
        const char *model;
        size_t units;
    } cases[] = {{"gpt2_small", 13}, {"bert_base", 13}, {"resnet50", 5}};
    for (size_t i = 0; i < 3; i++) {
        const char *sets[] = {NULL, NULL};
        char m[64];
        snprintf(m, sizeof(m), "model=%s", cases[i].model);
        sets[0] = m;
        fsdp_job_t *j = make_job(1, sets);
        ck_assert_uint_eq(j->units.n, cases[i].units);
        uint64_t numel = 0;
        size_t np = 0;
        for (size_t u = 0; u < j->units.n; u++)
            numel += j->units.u[u].numel, np += j->units.u[u].nparams;
        ck_assert_uint_eq(np, j->model.nparams);
        uint64_t want = 0;
        for (size_t p = 0; p < j->model.nparams; p++)
            want += j->model.params[p].numel;
        ck_assert_uint_eq(numel, want);
        fsdp_job_destroy(j);
    }
    /* min_params: every unit but the root reaches the size */
    const char *mp[] = {"wrap=min_params=10000000", NULL};
    fsdp_job_t *j = make_job(1, mp);
    ck_assert_uint_gt(j->units.n, 3);
    for (size_t u = 1; u < j->units.n; u++)
        ck_assert_uint_ge(j->units.u[u].numel, 10000000);
    fsdp_job_destroy(j);
    /* prefixes */
    const char *px[] = {"units=[transformer.h.0., transformer.h.1.]", NULL};
    j = make_job(1, px);
    ck_assert_uint_eq(j->units.n, 3);
    ck_assert_uint_eq(j->units.u[1].nparams, 12);
    ck_assert_str_eq(j->units.u[2].name, "transformer.h.1.");
    fsdp_job_destroy(j);
}
END_TEST

static void check_counts(const run_t *r, unsigned ag_root, unsigned ag,
                         unsigned rs, unsigned ar)
{
    ck_assert_int_eq(r->st, HERD_OK);
    for (size_t u = 0; u < r->job->units.n; u++) {
        fsdp_utime_t t;
        fsdp_collect_unit(r->col, u, &t);
        ck_assert_msg(t.ag == (u ? ag : ag_root) && t.rs == rs && t.ar == ar,
                      "unit %zu: %u all_gathers, %u reduce_scatters, %u "
                      "all_reduces",
                      u, t.ag, t.rs, t.ar);
        uint64_t shard = fsdp_job_shard_numel(r->job, &r->job->units.u[u]);
        size_t p = herd_dtype_size(r->job->param_dtype);
        ck_assert_uint_eq(t.ag_bytes, (u ? ag : ag_root) * shard * p);
        /* a reduce_scatter's record counts what the rank sends */
        ck_assert_uint_eq(t.rs_bytes,
                          rs * shard * (uint64_t)r->job->shard *
                              herd_dtype_size(r->job->reduce_dtype));
    }
}

/* FULL_SHARD: 2 all_gathers (forward, backward) and 1 reduce_scatter per
 * unit and step, the root gathered once (not resharded after forward). */
START_TEST(test_full_shard_counts)
{
    run_t r;
    run_fsdp(1, NULL, &r);
    check_counts(&r, 1, 2, 1, 0);
    ck_assert_uint_eq(fsdp_job_shard_numel(r.job, &r.job->units.u[1]),
                      (r.job->units.u[1].numel + 7) / 8);
    run_done(&r);
}
END_TEST

START_TEST(test_shard_grad_op_counts)
{
    const char *sets[] = {"strategy=SHARD_GRAD_OP", NULL};
    run_t r;
    run_fsdp(1, sets, &r);
    check_counts(&r, 1, 1, 1, 0);
    run_done(&r);
    /* FSDP2's reshard_after_forward=false is the same */
    const char *f2[] = {"reshard_after_forward=false", NULL};
    run_fsdp(1, f2, &r);
    check_counts(&r, 1, 1, 1, 0);
    run_done(&r);
}
END_TEST

/* FSDP2's reshard_after_forward=N: after forward each rank keeps 1/N of
 * a unit; the backward all_gather runs over N ranks (within a node) and
 * moves S/N times a shard per rank. Memory between true and false. */
START_TEST(test_reshard_to_int)
{
    const char *sets[] = {"reshard_after_forward=8", NULL};
    run_t r;
    run_fsdp(2, sets, &r);
    ck_assert_int_eq(r.st, HERD_OK);
    ck_assert_int_eq(r.job->reshard_to, 8);
    for (size_t u = 1; u < r.job->units.n; u++) {
        fsdp_utime_t t;
        fsdp_collect_unit(r.col, u, &t);
        uint64_t shard = fsdp_job_shard_numel(r.job, &r.job->units.u[u]);
        ck_assert_uint_eq(t.ag, 2);
        /* forward: a 1/16 shard; backward: 16/8 = 2 shards */
        ck_assert_uint_eq(t.ag_bytes, (shard + 2 * shard) * 4);
    }
    run_done(&r);
    /* gpt_1_3b: the blocks, not the root, make the peak */
    const char *t1[] = {"model=gpt_1_3b", "reshard_after_forward=true", NULL};
    const char *f1[] = {"model=gpt_1_3b", "reshard_after_forward=false", NULL};
    const char *n8[] = {"model=gpt_1_3b", "reshard_after_forward=8", NULL};
    fsdp_memory_t mt, mf, m8;
    fsdp_job_t *j = make_job(2, t1);
    fsdp_job_memory(j, 0, &mt);
    fsdp_job_destroy(j);
    j = make_job(2, f1);
    fsdp_job_memory(j, 0, &mf);
    fsdp_job_destroy(j);
    j = make_job(2, n8);
    fsdp_job_memory(j, 0, &m8);
    fsdp_job_destroy(j);
    ck_assert(mt.unsharded < m8.unsharded && m8.unsharded < mf.unsharded);
    /* N must divide the shard count, and not be it */
    const char *bad[] = {"reshard_after_forward=16", NULL};
    fsdp_cfg_t c;
    char err[512], dir[1024];
    fsdp_cfg_init(&c);
    ck_assert_int_eq(fsdp_cfg_set(&c, "reshard_after_forward", bad[0] + 22, err,
                                  sizeof(err)),
                     HERD_OK);
    tu_src_path(dir, sizeof(dir), "models");
    ck_assert_int_ne(fsdp_job_create(&c, dir, 16, 8, &j, err, sizeof(err)),
                     HERD_OK);
    ck_assert(strstr(err, "16 is not a divisor of the 16 ranks"));
    fsdp_cfg_fini(&c);
}
END_TEST

START_TEST(test_no_shard_counts)
{
    const char *sets[] = {"strategy=NO_SHARD", NULL};
    run_t r;
    run_fsdp(1, sets, &r);
    ck_assert_int_eq(r.st, HERD_OK);
    for (size_t u = 0; u < r.job->units.n; u++) {
        fsdp_utime_t t;
        fsdp_collect_unit(r.col, u, &t);
        ck_assert(t.ag == 0 && t.rs == 0 && t.ar == 1);
    }
    run_done(&r);
}
END_TEST

/* HYBRID_SHARD over 2 nodes: shards within the 8 GPUs of a node, an
 * all_reduce of each shard across the two replicas. */
START_TEST(test_hybrid_counts)
{
    const char *sets[] = {"strategy=HYBRID_SHARD", NULL};
    run_t r;
    run_fsdp(2, sets, &r);
    ck_assert_int_eq(r.job->shard, 8);
    ck_assert_int_eq(r.job->replicas, 2);
    check_counts(&r, 1, 2, 1, 1);
    run_done(&r);
    const char *g4[] = {"strategy=HYBRID_SHARD", "shard_group_size=4", NULL};
    run_fsdp(2, g4, &r);
    ck_assert_int_eq(r.job->shard, 4);
    check_counts(&r, 1, 2, 1, 1);
    run_done(&r);
}
END_TEST

static double exposed_step(int nodes, const char *const *sets, double *fwd);

START_TEST(test_memory)
{
    const char *fs[] = {NULL};
    fsdp_job_t *j = make_job(1, fs);
    fsdp_memory_t full, sgo, none, bf;
    ck_assert_int_eq(fsdp_job_memory(j, 0, &full), HERD_OK);
    uint64_t shard = 0;
    for (size_t u = 0; u < j->units.n; u++)
        shard += fsdp_job_shard_numel(j, &j->units.u[u]);
    ck_assert_uint_eq(full.params, shard * 4);
    ck_assert_uint_eq(full.grads, shard * 4);
    ck_assert_uint_eq(full.optimizer, 2 * shard * 4);
    ck_assert_uint_eq(full.total, full.params + full.grads + full.optimizer +
                                      full.unsharded);
    uint64_t all = 0;
    for (size_t u = 0; u < j->units.n; u++)
        all += fsdp_job_shard_numel(j, &j->units.u[u]) * 8 * 4;
    ck_assert_uint_lt(full.unsharded, all);
    fsdp_job_destroy(j);

    const char *s1[] = {"strategy=SHARD_GRAD_OP", NULL};
    j = make_job(1, s1);
    ck_assert_int_eq(fsdp_job_memory(j, 0, &sgo), HERD_OK);
    ck_assert_int_eq(sgo.units_alive, (int)j->units.n);
    ck_assert_uint_ge(sgo.unsharded, all); /* every unit at once */
    fsdp_job_destroy(j);

    const char *s2[] = {"strategy=NO_SHARD", NULL};
    j = make_job(1, s2);
    ck_assert_int_eq(fsdp_job_memory(j, 0, &none), HERD_OK);
    ck_assert_uint_eq(none.params, j->model.total_bytes);
    ck_assert_uint_eq(none.unsharded, 0);
    ck_assert_uint_gt(none.total, 4 * full.params);
    fsdp_job_destroy(j);

    const char *s3[] = {"param_dtype=bfloat16", NULL};
    j = make_job(1, s3);
    ck_assert_int_eq(fsdp_job_memory(j, 0, &bf), HERD_OK);
    ck_assert_uint_eq(bf.unsharded * 2, full.unsharded);
    ck_assert_uint_eq(bf.params, full.params); /* fp32 master shards */
    fsdp_job_destroy(j);

    /* CPU offload: the shards on the host, the unsharded units on the
     * device; copies and the CPU optimizer make the step longer */
    const char *off[] = {"cpu_offload=true", "cpu_optimizer_scale=10", NULL};
    fsdp_memory_t mo;
    j = make_job(1, off);
    ck_assert_int_eq(fsdp_job_memory(j, 0, &mo), HERD_OK);
    ck_assert_uint_eq(mo.total, mo.unsharded);
    ck_assert_uint_eq(mo.host, full.params + full.grads + full.optimizer);
    ck_assert_uint_eq(mo.unsharded, full.unsharded);
    fsdp_job_destroy(j);
    double fw;
    ck_assert(exposed_step(1, off, &fw) > exposed_step(1, NULL, &fw));

    const char *s4[] = {"optim_states=0", NULL};
    j = make_job(4, s4);
    ck_assert_int_eq(fsdp_job_memory(j, 0, &bf), HERD_OK);
    ck_assert_uint_eq(bf.optimizer, 0);
    ck_assert_uint_lt(bf.params, full.params); /* 32 shards, not 8 */
    fsdp_job_destroy(j);
}
END_TEST

static double exposed(int nodes, const char *const *sets, double *fwd)
{
    run_t r;
    run_fsdp(nodes, sets, &r);
    ck_assert_int_eq(r.st, HERD_OK);
    fsdp_summary_t s;
    fsdp_collect_summary(r.col, &s);
    ck_assert_int_gt(s.nsteady, 0);
    ck_assert(s.exposed_s >= 0 && s.exposed_s < s.step_s);
    *fwd = 0;
    for (size_t u = 1; u < r.job->units.n; u++) {
        fsdp_utime_t t;
        fsdp_collect_unit(r.col, u, &t);
        *fwd += t.fwd_gap;
    }
    run_done(&r);
    return s.exposed_s;
}

/* The steady step time of a run. */
static double exposed_step(int nodes, const char *const *sets, double *fwd)
{
    run_t r;
    run_fsdp(nodes, sets, &r);
    ck_assert_int_eq(r.st, HERD_OK);
    fsdp_summary_t s;
    fsdp_collect_summary(r.col, &s);
    *fwd = s.exposed_s;
    run_done(&r);
    return s.step_s;
}

/* Prefetching hides all_gathers behind compute (4 nodes: comm-heavy).
 * The CPU runs ahead by default, so the forward's all_gathers overlap
 * without forward_prefetch; in step with the GPU (cpu_bound) only
 * forward_prefetch overlaps them. */
START_TEST(test_prefetch_hides_communication)
{
    const char *pre[] = {"backward_prefetch=BACKWARD_PRE", NULL};
    const char *none[] = {"backward_prefetch=none", NULL};
    const char *bound[] = {"cpu_bound=true", NULL};
    const char *fwd[] = {"cpu_bound=true", "forward_prefetch=true", NULL};
    double f_pre, f_none, f_bound, f_fwd;
    double e_pre = exposed(4, pre, &f_pre);
    double e_none = exposed(4, none, &f_none);
    double e_bound = exposed(4, bound, &f_bound);
    double e_fwd = exposed(4, fwd, &f_fwd);
    ck_assert_msg(e_pre < e_none, "BACKWARD_PRE %g s, none %g s", e_pre,
                  e_none);
    ck_assert_msg(f_fwd < f_bound && e_fwd < e_bound,
                  "forward_prefetch: forward waits %g s vs %g s", f_fwd,
                  f_bound);
    ck_assert_msg(f_pre < f_bound, "run-ahead %g s, cpu_bound %g s", f_pre,
                  f_bound);
}
END_TEST

/* backend gloo (FSDP on CPU): every collective blocks the thread, so
 * nothing overlaps (the step is compute plus communication, prefetch
 * changes nothing), and each reduce_scatter is gloo's all_reduce of the
 * whole gradient: it costs more than FSDP's reduce_scatter on nccl. */
START_TEST(test_gloo_blocks)
{
    const char *pre[] = {"backend=gloo", "backward_prefetch=BACKWARD_PRE",
                         NULL};
    const char *none[] = {"backend=gloo", "backward_prefetch=none", NULL};
    const char *nccl[] = {"backward_prefetch=BACKWARD_PRE", NULL};
    run_t r;
    run_fsdp(4, pre, &r);
    ck_assert_int_eq(r.st, HERD_OK);
    fsdp_summary_t s;
    fsdp_collect_summary(r.col, &s);
    ck_assert_int_gt(s.nsteady, 0);
    ck_assert_msg(s.overlap < 1e-9, "overlap %g", s.overlap);
    ck_assert_msg(fabs(s.step_s - s.compute_s - s.comm_s) < 1e-6 * s.step_s,
                  "step %g s, compute %g s + comm %g s", s.step_s, s.compute_s,
                  s.comm_s);
    for (size_t u = 1; u < r.job->units.n; u++) {
        fsdp_utime_t t;
        fsdp_collect_unit(r.col, u, &t);
        /* named as PyTorch calls it, carried as an all_reduce */
        ck_assert_msg(t.ag == 2 && t.rs == 1 && t.ar == 0,
                      "unit %zu: %u all_gathers, %u reduce_scatters, %u "
                      "all_reduces",
                      u, t.ag, t.rs, t.ar);
    }
    run_done(&r);
    double e_pre, e_none, e_nccl;
    double pre_s = exposed_step(4, pre, &e_pre);
    double none_s = exposed_step(4, none, &e_none);
    double nccl_s = exposed_step(4, nccl, &e_nccl);
    ck_assert_msg(fabs(pre_s - none_s) < 1e-9 * pre_s, "%g vs %g", pre_s,
                  none_s);
    ck_assert_msg(pre_s > nccl_s, "gloo %g s, nccl %g s", pre_s, nccl_s);
    char err[256];
    fsdp_cfg_t cfg;
    fsdp_cfg_init(&cfg);
    ck_assert_int_ne(fsdp_cfg_set(&cfg, "backend", "mpi", err, sizeof(err)),
                     HERD_OK);
    ck_assert_ptr_nonnull(strstr(err, "nccl or gloo"));
    fsdp_cfg_fini(&cfg);
}
END_TEST

/* limit_all_gathers bounds the unsharded units; BACKWARD_POST frees the
 * current unit before gathering the next. */
START_TEST(test_limiter_and_post_memory)
{
    const char *nolimit[] = {"limit_all_gathers=false", NULL};
    /* resnet50: the peak is in the blocks, not at the root */
    const char *pre[] = {"model=resnet50", NULL};
    const char *post[] = {"model=resnet50", "backward_prefetch=BACKWARD_POST",
                          NULL};
    fsdp_memory_t m_pre;
    fsdp_memory_t m_def, m_nolimit, m_post;
    fsdp_job_t *j = make_job(1, NULL);
    ck_assert_int_eq(fsdp_job_memory(j, 0, &m_def), HERD_OK);
    fsdp_job_destroy(j);
    j = make_job(1, nolimit);
    ck_assert_int_eq(fsdp_job_memory(j, 0, &m_nolimit), HERD_OK);
    ck_assert_int_eq(m_nolimit.units_alive, (int)j->units.n);
    fsdp_job_destroy(j);
    j = make_job(1, post);
    ck_assert_int_eq(fsdp_job_memory(j, 0, &m_post), HERD_OK);
    fsdp_job_destroy(j);
    j = make_job(1, pre);
    ck_assert_int_eq(fsdp_job_memory(j, 0, &m_pre), HERD_OK);
    fsdp_job_destroy(j);
    ck_assert_int_le(m_def.units_alive, 3); /* root + current + next */
    ck_assert_uint_gt(m_nolimit.unsharded, m_def.unsharded);
    ck_assert_uint_lt(m_post.unsharded, m_pre.unsharded);
}
END_TEST

START_TEST(test_wrap_mismatch_diagnosed)
{
    const char *sets[] = {"bad_wrap_ranks=[3]", "bad_wrap=min_params=20000000",
                          NULL};
    run_t r;
    run_fsdp(1, sets, &r);
    ck_assert_int_ne(r.st, HERD_OK);
    char diag[8192];
    fsdp_outcome_t o = {r.st, &r.info, r.prog->errors};
    fsdp_report_diagnosis(r.col, &o, diag, sizeof(diag));
    ck_assert_msg(strstr(diag, "collective #1 on the world disagrees") &&
                      strstr(diag, "rank 3: all_gather 'all_gather u0'") &&
                      strstr(diag, "ranks 0-2,4-7: all_gather") &&
                      strstr(diag, "fsdp.bad_wrap") && strstr(diag, "into 13"),
                  "%s", diag);
    run_done(&r);
}
END_TEST

START_TEST(test_skipped_forward_diagnosed)
{
    const char *sets[] = {"skip_units=[5]", "skip_ranks=[2]", "skip_steps=[1]",
                          NULL};
    run_t r;
    run_fsdp(1, sets, &r);
    ck_assert_int_ne(r.st, HERD_OK);
    char diag[8192];
    fsdp_outcome_t o = {r.st, &r.info, r.prog->errors};
    fsdp_report_diagnosis(r.col, &o, diag, sizeof(diag));
    ck_assert_msg(strstr(diag, "ranks 0-1,3-7: all_gather 'all_gather u5'") &&
                      strstr(diag, "rank 2: all_gather 'all_gather u6'") &&
                      strstr(diag, "skips the forward of unit 5") &&
                      strstr(diag, "iteration 1"),
                  "%s", diag);
    /* iteration 0 was complete and predicted */
    fsdp_step_pred_t p;
    fsdp_collect_step(r.col, 0, &p);
    ck_assert(p.complete && p.step_s > 0);
    run_done(&r);
    /* the same job without the fault has nothing to say */
    fsdp_job_t *j = make_job(1, NULL);
    fsdp_report_mismatch(j, diag, sizeof(diag));
    ck_assert_str_eq(diag, "");
    fsdp_job_destroy(j);
}
END_TEST

/* Uneven inputs: a rank out of data leaves the others in an all_gather. */
START_TEST(test_uneven_inputs_diagnosed)
{
    const char *sets[] = {"short_ranks=[5]", "short_steps=1", NULL};
    run_t r;
    run_fsdp(1, sets, &r);
    ck_assert_int_ne(r.st, HERD_OK);
    char diag[8192];
    fsdp_outcome_t o = {r.st, &r.info, r.prog->errors};
    fsdp_report_diagnosis(r.col, &o, diag, sizeof(diag));
    ck_assert_msg(strstr(diag, "collective #39 on the world disagrees") &&
                      strstr(diag, "rank 5: no collective") &&
                      strstr(diag, "rank 5 runs out of data after 1 "
                                   "iterations, the others run 2"),
                  "%s", diag);
    fsdp_step_pred_t p;
    fsdp_collect_step(r.col, 0, &p);
    ck_assert(p.complete);
    fsdp_collect_step(r.col, 1, &p);
    ck_assert(!p.complete);
    run_done(&r);
}
END_TEST

START_TEST(test_trace_export)
{
    const char *sets[] = {"strategy=HYBRID_SHARD", NULL};
    fsdp_job_t *j = make_job(2, sets);
    trace_t *t = NULL;
    char err[512];
    ck_assert_int_eq(fsdp_trace_build(j, &t), HERD_OK);
    ck_assert_uint_eq(t->ngroups, (uint32_t)j->ngroups);
    ck_assert_msg(trace_validate(t, err, sizeof(err)) == HERD_OK, "%s", err);
    size_t ag = 0;
    for (size_t i = 0; i < t->nops; i++)
        ag += t->ops[i].kind == TRACE_OP_COLL &&
              t->ops[i].coll == HERD_COLL_ALL_GATHER;
    /* 2 steps x (1 root + 2 x 12 blocks) on each of the 16 ranks: every
     * rank has its own list (its shard and replica groups differ) */
    ck_assert_uint_eq(ag, 16 * 2 * 25);
    trace_destroy(t);
    fsdp_job_destroy(j);
}
END_TEST

START_TEST(test_cfg_errors)
{
    fsdp_cfg_t c;
    char err[512];
    fsdp_cfg_init(&c);
    ck_assert_int_eq(fsdp_cfg_set(&c, "strategy", "FULL", err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert(strstr(err, "fsdp.strategy: bad value 'FULL'") &&
              strstr(err, "HYBRID_SHARD"));
    ck_assert_int_eq(fsdp_cfg_set(&c, "fsdp.bogus", "1", err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert(strstr(err, "unknown FSDP option"));
    ck_assert_int_eq(fsdp_cfg_set(&c, "wrap", "min_params=x", err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_int_eq(fsdp_cfg_set(&c, "units", "[]", err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_int_eq(
        fsdp_cfg_set(&c, "strategy", "hybrid_shard", err, sizeof(err)),
        HERD_OK);
    ck_assert_int_eq(
        fsdp_cfg_set(&c, "shard_group_size", "3", err, sizeof(err)), HERD_OK);
    ck_assert_int_eq(fsdp_cfg_check(&c, 16, 8, err, sizeof(err)),
                     HERD_ERR_INVALID_ARG);
    ck_assert(strstr(err, "does not divide the 16 ranks"));
    fsdp_cfg_fini(&c);
    /* a prefix that matches nothing */
    char dir[1024];
    fsdp_job_t *j = NULL;
    fsdp_cfg_init(&c);
    ck_assert_int_eq(fsdp_cfg_set(&c, "units", "[transformer.h.0., nope.]", err,
                                  sizeof(err)),
                     HERD_OK);
    tu_src_path(dir, sizeof(dir), "models");
    ck_assert_int_ne(fsdp_job_create(&c, dir, 8, 8, &j, err, sizeof(err)),
                     HERD_OK);
    ck_assert(strstr(err, "'nope.' matches no parameter"));
    fsdp_cfg_fini(&c);
}
END_TEST

/* The scenario section, --set, and herd fsdp run / sweep end to end. */
START_TEST(test_cli)
{
    char *dir = tu_tmpdir(), path[1024], args[8192], *out = NULL;
    snprintf(path, sizeof(path), "%s/f.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("name: f\ncluster: {nodes: 2, gpus_per_node: 8}\n"
          "workload:\n  fsdp:\n    strategy: HYBRID_SHARD\n"
          "    steps: 2\n    bogus: 1\n",
          f);
    fclose(f);
    snprintf(args, sizeof(args), "fsdp run %s", path);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_msg(strstr(out, "f.yaml:7:12: fsdp.bogus: unknown FSDP option"),
                  "%s", out);
    free(out);
    snprintf(args, sizeof(args),
             "fsdp run %s --set fsdp.bogus=[] --set fsdp.unknown_key_gone=1",
             path);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    free(out);
    f = fopen(path, "w");
    fputs("name: f\ncluster: {nodes: 2, gpus_per_node: 8}\n"
          "workload:\n  fsdp: {strategy: HYBRID_SHARD, steps: 2}\n",
          f);
    fclose(f);
    snprintf(args, sizeof(args),
             "fsdp run %s --set fsdp.param_dtype=bfloat16 --json %s/r.json",
             path, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "HYBRID_SHARD (sharded over 8, 2 replicas)") &&
                      strstr(out, "param bfloat16") &&
                      strstr(out, "steady state: step"),
                  "%s", out);
    free(out);
    /* the exported trace (hybrid: groups, per-rank lists) replays */
    snprintf(args, sizeof(args),
             "fsdp run %s --quiet --trace %s/t.json && %s replay %s/t.json "
             "--scenario %s -o %s/rp --no-plots",
             path, dir, tu_herd_binary(), dir, path, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    free(out);
    snprintf(args, sizeof(args), "%s/r.json", dir);
    char *js = tu_read_file(args);
    ck_assert_msg(js && strstr(js, "\"strategy\": \"HYBRID_SHARD\"") &&
                      strstr(js, "\"per_unit\"") &&
                      strstr(js, "\"unsharded_bytes\"") &&
                      strstr(js, "\"step_s\""),
                  "%s", js ? js : "(no JSON)");
    free(js);
    snprintf(args, sizeof(args),
             "sweep %s --set fsdp.backward_prefetch=BACKWARD_PRE,none "
             "--no-plot --jobs 1 --out %s/sw",
             path, dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "BACKWARD_PRE") && strstr(out, "none"), "%s",
                  out);
    free(out);
    snprintf(args, sizeof(args),
             "fsdp run %s --set fsdp.skip_units=[3] --set fsdp.skip_ranks=[9]",
             path);
    ck_assert_int_eq(tu_herd(args, &out), 1);
    ck_assert_msg(strstr(out, "rank 9: all_gather 'all_gather u4'"), "%s", out);
    free(out);
    /* every strategy side by side; the ones over the memory are marked */
    snprintf(args, sizeof(args),
             "fsdp strategies %s --gpu-mem 0.5 --no-plot --out %s/st", path,
             dir);
    ck_assert_int_eq(tu_herd(args, &out), 0);
    ck_assert_msg(strstr(out, "NO_SHARD") &&
                      strstr(out, "does not fit gpu_mem") &&
                      strstr(out, "fastest that fits: FULL_SHARD"),
                  "%s", out);
    free(out);
    snprintf(args, sizeof(args), "%s/st/strategies.tsv", dir);
    char *tsv = tu_read_file(args);
    ck_assert_msg(tsv && strstr(tsv, "strategy\tparams_mib") &&
                      strstr(tsv, "\nHYBRID_SHARD\t"),
                  "%s", tsv ? tsv : "(none)");
    free(tsv);
    ck_assert_int_eq(tu_herd("fsdp run --help", &out), 0);
    ck_assert(strstr(out, "usage: herd fsdp run"));
    free(out);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_fsdp");
    TCase *tc = tcase_create("fsdp");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_block_keys);
    tcase_add_test(tc, test_units_of_models);
    tcase_add_test(tc, test_full_shard_counts);
    tcase_add_test(tc, test_shard_grad_op_counts);
    tcase_add_test(tc, test_no_shard_counts);
    tcase_add_test(tc, test_reshard_to_int);
    tcase_add_test(tc, test_hybrid_counts);
    tcase_add_test(tc, test_memory);
    tcase_add_test(tc, test_prefetch_hides_communication);
    tcase_add_test(tc, test_limiter_and_post_memory);
    tcase_add_test(tc, test_gloo_blocks);
    tcase_add_test(tc, test_wrap_mismatch_diagnosed);
    tcase_add_test(tc, test_skipped_forward_diagnosed);
    tcase_add_test(tc, test_uneven_inputs_diagnosed);
    tcase_add_test(tc, test_trace_export);
    tcase_add_test(tc, test_cfg_errors);
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
