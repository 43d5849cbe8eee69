/* tests/sim_comm_cpu.c - cluster.comm_cpu_slowdown: on a CPU backend,
 * compute runs (1 + s) times as long while the rank has communication in
 * flight and at full speed otherwise; 0 (the default) changes nothing;
 * herd_compute_until beside the request it waits on is slowed too; the
 * scenario key reads, writes back and refuses bad values. */
#include <herd/herd.h>
#include <herd/sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/scenario.h"

typedef struct k {
    int mode;
    uint64_t t_alone, t_beside, t_ar, t_until;
    double done;
} k_t;

enum { BESIDE, UNTIL };

/* Rank 1 joins the all_reduce after 4 ms, so rank 0's request is in
 * flight from 0 to 4 ms (a zero-cost link: only the wait). Rank 0
 * computes 1 ms alone, then 10 ms beside the request. */
static int prog(herd_comm_t *c, void *arg)
{
    k_t *k = arg;
    void *buf;
    herd_req_t *req;
    if (herd_alloc(c, 64, &buf) != HERD_OK)
        return 1;
    if (herd_comm_rank(c) == 1) {
        herd_compute(c, 5e-3, NULL); /* 1 ms alone + 4 ms */
        return herd_all_reduce(c, buf, buf, 16, HERD_FLOAT32, HERD_SUM, NULL) !=
               HERD_OK;
    }
    uint64_t t0 = herd_now(c);
    herd_compute(c, 1e-3, NULL);
    k->t_alone = herd_now(c) - t0;
    if (herd_all_reduce(c, buf, buf, 16, HERD_FLOAT32, HERD_SUM, &req))
        return 1;
    t0 = herd_now(c);
    if (k->mode == UNTIL) {
        herd_compute_until(c, 10e-3, req, "until", &k->done);
        k->t_until = herd_now(c) - t0;
    } else {
        herd_compute(c, 10e-3, NULL);
        k->t_beside = herd_now(c) - t0;
    }
    herd_req_wait(req);
    herd_req_free(req);
    return 0;
}

static void run(k_t *k, double slowdown)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = 1;
    o.cluster.gpus_per_node = 2;
    o.cluster.intra.latency = 0;
    o.cluster.comm_cpu_slowdown = slowdown;
    herd_init_t init = {.backend = "sim", .world_size = 2, .engine_opts = &o};
    herd_run_info_t info;
    ck_assert_int_eq(herd_run(&init, prog, k, &info), HERD_OK);
    herd_run_info_clear(&info);
}

START_TEST(off_by_default)
{
    k_t k = {.mode = BESIDE};
    run(&k, 0);
    ck_assert_uint_eq(k.t_alone, 1000000);
    ck_assert_uint_eq(k.t_beside, 10000000);
}
END_TEST

START_TEST(slower_while_in_flight)
{
    k_t k = {.mode = BESIDE};
    run(&k, 0.25);
    /* alone: full speed */
    ck_assert_uint_eq(k.t_alone, 1000000);
    /* 4 ms at 1/1.25 of the speed do 3.2 ms of the work; the other
     * 6.8 ms run at full speed once the all_reduce is done: 10.8 ms
     * (give or take a rounding nanosecond; the all_reduce's few bytes
     * take a few ns on the intra link) */
    ck_assert_msg(k.t_beside > 10790000 && k.t_beside < 10810000,
                  "beside: %llu ns", (unsigned long long)k.t_beside);
}
END_TEST

START_TEST(compute_until_slowed)
{
    k_t k = {.mode = UNTIL};
    run(&k, 0.25);
    /* it wakes when the request completes (4 ms), having done 4/1.25 =
     * 3.2 ms of its compute */
    ck_assert_msg(k.t_until > 3990000 && k.t_until < 4010000, "until: %llu",
                  (unsigned long long)k.t_until);
    ck_assert_double_eq_tol(k.done, 3.2e-3, 1e-8);
}
END_TEST

START_TEST(scenario_key)
{
    trace_scenario_t *sc = NULL;
    char err[512];
    ck_assert_msg(trace_scenario_load_string(
                      "cluster: {nodes: 2, comm_cpu_slowdown: 0.3}\n", "s.yaml",
                      &sc, err, sizeof(err)) == HERD_OK,
                  "%s", err);
    ck_assert_double_eq(sc->sim.cluster.comm_cpu_slowdown, 0.3);
    trace_scenario_destroy(sc);
    char *text =
        tu_scenario_written("cluster: {nodes: 2, comm_cpu_slowdown: 0.3}\n");
    ck_assert_msg(strstr(text, "comm_cpu_slowdown: 0.29999999999999999"), "%s",
                  text);
    free(text);
    /* unset: not written (outputs of older scenarios stay as they were) */
    text = tu_scenario_written(NULL);
    ck_assert_ptr_null(strstr(text, "comm_cpu_slowdown"));
    free(text);
    ck_assert_int_ne(
        trace_scenario_load_string("cluster: {comm_cpu_slowdown: -1}\n",
                                   "s.yaml", &sc, err, sizeof(err)),
        HERD_OK);
    ck_assert_msg(strstr(err, "s.yaml:1:30: cluster.comm_cpu_slowdown: -1 is "
                              "out of range"),
                  "%s", err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_comm_cpu");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, off_by_default);
    tcase_add_test(tc, slower_while_in_flight);
    tcase_add_test(tc, compute_until_slowed);
    tcase_add_test(tc, scenario_key);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
