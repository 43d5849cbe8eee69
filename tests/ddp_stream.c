/* tests/ddp_stream.c - the DDP program on the simulator: with one
 * communication stream (ProcessGroupNCCL) every bucket's all_reduce starts
 * after the previous one ended (at that very instant when it was queued),
 * buckets launch in index order after they
 * are ready, and the predictions are consistent (exposed <= comm, overlap
 * in [0, 1], the slowed rank is the critical one). */
#include <stdlib.h>
#include <string.h>

#include <herd/sim.h>

#include "support/testutil.h"
#include "workload/ddp/prog.h"
#include "workload/ddp/report.h"

typedef struct run {
    ddp_job_t *job;
    ddp_prog_t *prog;
    ddp_collect_t *col;
    herd_status_t st;
} run_t;

static void run_ddp(int streams, int slow_rank, run_t *r)
{
    char dir[1024], err[512];
    ddp_cfg_t cfg;
    ddp_cfg_init(&cfg);
    snprintf(cfg.model, sizeof(cfg.model), "gpt2_small");
    cfg.steps = 2;
    cfg.bucket_cap_mb = 5;
    cfg.comm_streams = streams;
    tu_src_path(dir, sizeof(dir), "models");
    ck_assert_msg(ddp_job_create(&cfg, dir, 16, &r->job, err, sizeof(err)) ==
                      HERD_OK,
                  "%s", err);
    ck_assert_int_eq(ddp_prog_create(r->job, &r->prog), HERD_OK);
    ck_assert_int_eq(ddp_collect_create(r->job, &r->col), HERD_OK);
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = 2;
    o.cluster.gpus_per_node = 8;
    o.cluster.inter.bandwidth = 12.5e9;
    herd_rank_override_t slow = {.rank = slow_rank, .compute_factor = 1.2};
    o.ranks = &slow;
    o.nranks_overrides = 1;
    herd_init_t init = {.backend = "sim",
                        .world_size = 16,
                        .engine_opts = &o,
                        .timeline_cb = ddp_collect_cb,
                        .timeline_arg = r->col};
    herd_run_info_t info;
    r->st = herd_run(&init, ddp_prog_main, r->prog, &info);
    herd_run_info_clear(&info);
}

static void run_done(run_t *r)
{
    ddp_collect_destroy(r->col);
    ddp_prog_destroy(r->prog);
    ddp_job_destroy(r->job);
}

static const ddp_btime_t *bt(const run_t *r, int rank, long it, size_t k)
{
    return &r->col->bt[((size_t)rank * DDP_REC_MAX_ITERS + (size_t)it) *
                           r->col->nb +
                       k];
}

START_TEST(test_one_stream_serialises)
{
    run_t r;
    run_ddp(1, 9, &r);
    ck_assert_int_eq(r.st, HERD_OK);
    size_t nb = r.job->rebuilt.n;
    ck_assert_uint_gt(nb, 10);
    int queued = 0;
    for (int rank = 0; rank < 16; rank += 5)
        for (size_t k = 0; k < nb; k++) {
            const ddp_btime_t *b = bt(&r, rank, 1, k);
            ck_assert(b->ready > 0 && b->launch >= b->ready);
            ck_assert(b->start >= b->launch && b->end > b->start);
            if (k > 0) {
                ck_assert(b->launch >= bt(&r, rank, 1, k - 1)->launch);
                ck_assert(b->start >= bt(&r, rank, 1, k - 1)->end);
            }
            /* a queued bucket starts the instant the previous one ends
             * (compute in between is cut short, not polled) */
            if (k > 0 && b->start > b->launch)
                ck_assert_uint_eq(b->start, bt(&r, rank, 1, k - 1)->end);
            queued += b->start > b->launch;
        }
    ck_assert_int_gt(queued, 0); /* comm-bound: buckets waited */
    ddp_step_pred_t p;
    ddp_collect_step(r.col, 1, &p);
    ck_assert(p.complete && p.sync);
    ck_assert_int_eq(p.critical_rank, 9);
    ck_assert(p.exposed_s > 0 && p.exposed_s <= p.comm_s + 1e-9);
    ck_assert(p.overlap >= 0 && p.overlap <= 1);
    run_done(&r);
}
END_TEST

START_TEST(test_unlimited_streams_overlap)
{
    run_t r;
    run_ddp(0, 3, &r);
    ck_assert_int_eq(r.st, HERD_OK);
    int overlapping = 0;
    for (size_t k = 1; k < r.job->rebuilt.n; k++)
        overlapping += bt(&r, 0, 1, k)->start < bt(&r, 0, 1, k - 1)->end;
    ck_assert_int_gt(overlapping, 0);
    run_done(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_stream");
    TCase *tc = tcase_create("stream");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_one_stream_serialises);
    tcase_add_test(tc, test_unlimited_streams_overlap);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
