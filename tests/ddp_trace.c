/* tests/ddp_trace.c - a DDP job written as a herd trace: valid, SPMD for
 * ranks that agree, own op lists for ranks that differ, and replayable:
 * the trace replayer on the simulator performs the same collectives as
 * the DDP program does. */
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "support/testutil.h"
#include "workload/ddp/job.h"
#include "workload/ddp/prog.h"
#include "workload/ddp/trace.h"
#include "trace/replay.h"

static ddp_job_t *job_for(ddp_cfg_t *cfg, int world)
{
    char dir[1024], err[512];
    ddp_job_t *job = NULL;
    tu_src_path(dir, sizeof(dir), "models");
    ck_assert_msg(ddp_job_create(cfg, dir, world, &job, err, sizeof(err)) ==
                      HERD_OK,
                  "%s", err);
    return job;
}

typedef struct counts {
    int all_reduce, broadcast, compute;
} counts_t;

static void count_cb(const herd_tl_rec_t *rec, void *arg)
{
    counts_t *c = arg;
    if (rec->kind == HERD_TL_COLL && rec->coll == HERD_COLL_ALL_REDUCE)
        c->all_reduce++;
    if (rec->kind == HERD_TL_COLL && rec->coll == HERD_COLL_BROADCAST)
        c->broadcast++;
}

static herd_status_t run_sim(herd_main_fn fn, void *arg, int world, counts_t *c)
{
    herd_sim_opts_t opts;
    herd_sim_opts_init(&opts);
    opts.cluster.nodes = 1;
    opts.cluster.gpus_per_node = world;
    herd_init_t init = {.backend = "sim",
                        .world_size = world,
                        .engine_opts = &opts,
                        .timeline_cb = count_cb,
                        .timeline_arg = c};
    herd_run_info_t info;
    herd_status_t st = herd_run(&init, fn, arg, &info);
    herd_run_info_clear(&info);
    return st;
}

START_TEST(test_trace_replays_same_collectives)
{
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    snprintf(cfg.model, sizeof(cfg.model), "resnet50");
    cfg.steps = 3;
    ddp_job_t *job = job_for(&cfg, 4);
    trace_t *t = NULL;
    char err[512];
    ck_assert_int_eq(ddp_trace_build(job, &t), HERD_OK);
    ck_assert_msg(trace_validate(t, err, sizeof(err)) == HERD_OK, "%s", err);
    ck_assert_uint_eq(t->nrank_lists, 0); /* every rank does the same */
    /* round trip through the file format */
    char *text = trace_dumps(t);
    trace_t *back = NULL;
    ck_assert_msg(
        trace_read_json_string(text, "ddp", &back, err, sizeof(err)) == HERD_OK,
        "%s", err);
    free(text);
    ddp_prog_t *prog;
    ck_assert_int_eq(ddp_prog_create(job, &prog), HERD_OK);
    counts_t a = {0}, b = {0};
    ck_assert_int_eq(run_sim(ddp_prog_main, prog, 4, &a), HERD_OK);
    trace_replay_t rp;
    trace_replay_init(&rp, back);
    ck_assert_int_eq(run_sim(trace_replay_main, &rp, 4, &b), HERD_OK);
    ck_assert_int_gt(a.all_reduce, 4 * 3);
    ck_assert_int_eq(a.all_reduce, b.all_reduce);
    ck_assert_int_eq(a.broadcast, b.broadcast);
    ddp_prog_destroy(prog);
    trace_destroy(back);
    trace_destroy(t);
    ddp_job_destroy(job);
}
END_TEST

START_TEST(test_differing_rank_gets_own_list)
{
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    snprintf(cfg.model, sizeof(cfg.model), "gpt2_small");
    cfg.steps = 3;
    cfg.unused_params.v[0] = 100, cfg.unused_params.n = 1;
    cfg.unused_ranks.v[0] = 2, cfg.unused_ranks.n = 1;
    ddp_job_t *job = job_for(&cfg, 4);
    trace_t *t = NULL;
    char err[512];
    ck_assert_int_eq(ddp_trace_build(job, &t), HERD_OK);
    ck_assert_msg(trace_validate(t, err, sizeof(err)) == HERD_OK, "%s", err);
    ck_assert_uint_eq(t->nrank_lists, 1);
    ck_assert_int_eq(t->rank_lists[0].rank, 2);
    const trace_op_t *ops;
    uint32_t n2, n0;
    trace_rank_ops(t, 2, &ops, &n2);
    trace_rank_ops(t, 0, &ops, &n0);
    ck_assert_uint_lt(n2, n0); /* rank 2 stops where it raises */
    trace_destroy(t);
    ddp_job_destroy(job);
}
END_TEST

/* The exported trace runs on the tcp engine (4 local processes under
 * herd launch) and the measured timeline has the same collectives. */
START_TEST(test_trace_replays_on_tcp)
{
    char *dir = tu_tmpdir(), cmd[4096], path[1200], *out = NULL;
    snprintf(path, sizeof(path), "%s/tiny.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\":\"tiny\",\"compute\":{\"forward_s\":0.001,"
          "\"backward_s\":0.002,\"buffer_bytes\":4096},\"params\":["
          "{\"shape\":[256,256]},{\"shape\":[256]},{\"shape\":[300,256]},"
          "{\"shape\":[300]}]}",
          f);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "%s ddp run --set cluster.gpus_per_node=4 --set ddp.model=%s "
             "--set ddp.bucket_cap_mb=0.25 --set ddp.steps=3 --trace "
             "%s/t.json --quiet 2>&1",
             tu_herd_binary(), path, dir);
    ck_assert_msg(tu_run(cmd, &out) == 0, "%s", out);
    free(out);
    trace_t *t = NULL;
    char err[512];
    snprintf(path, sizeof(path), "%s/t.json", dir);
    ck_assert_msg(trace_read_json(path, &t, err, sizeof(err)) == HERD_OK, "%s",
                  err);
    int want = 0;
    for (uint32_t i = 0; i < t->nspmd; i++)
        want += t->ops[i].kind == TRACE_OP_COLL &&
                t->ops[i].coll == HERD_COLL_ALL_REDUCE;
    trace_destroy(t);
    ck_assert_int_ge(want, 3); /* one bucket per iteration */
    snprintf(cmd, sizeof(cmd),
             "timeout 120 %s launch --standalone --nproc-per-node 4 %s replay "
             "%s --engine tcp -o %s/tcp 2>&1",
             tu_herd_binary(), tu_herd_binary(), path, dir);
    int rc = tu_run(cmd, &out);
    ck_assert_msg(rc == 0, "tcp replay failed (%d): %s", rc, out);
    free(out);
    snprintf(cmd, sizeof(cmd),
             "grep -o '\"name\": *\"all_reduce\"' "
             "%s/tcp/timeline-rank0.json | wc -l",
             dir);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_int_eq(atoi(out), want);
    free(out);
    /* herd ddp report reads the measured timelines like predicted ones */
    snprintf(cmd, sizeof(cmd),
             "%s ddp report --set cluster.gpus_per_node=4 --set ddp.model=%s/"
             "tiny.json --set ddp.bucket_cap_mb=0.25 --from "
             "%s/tcp/timeline-rank0.json --from %s/tcp/timeline-rank1.json "
             "--from %s/tcp/timeline-rank2.json --from "
             "%s/tcp/timeline-rank3.json --json %s/rep.json 2>&1",
             tu_herd_binary(), dir, dir, dir, dir, dir, dir);
    ck_assert_msg(tu_run(cmd, &out) == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "steady state"));
    free(out);
    snprintf(cmd, sizeof(cmd), "grep -c '\"complete\": true' %s/rep.json", dir);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_int_eq(atoi(out), 3);
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    tu_run(cmd, NULL);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_trace");
    TCase *tc = tcase_create("trace");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_trace_replays_same_collectives);
    tcase_add_test(tc, test_differing_rank_gets_own_list);
    tcase_add_test(tc, test_trace_replays_on_tcp);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
