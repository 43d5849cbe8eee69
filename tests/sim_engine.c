/* tests/sim_engine.c - the simulator engine end to end: ranks as contexts,
 * virtual time, compute, p2p, groups, async requests, timelines, world
 * sizes 1 / 2 / non-power-of-two / 4096, determinism and seeds. */
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "sim/diag.h"
#include "support/testutil.h"

static herd_status_t run(herd_sim_opts_t *o, herd_main_fn fn, void *arg,
                         herd_run_info_t *info)
{
    herd_init_t init = {.backend = "sim", .engine_opts = o};
    return herd_run(&init, fn, arg, info);
}

static void opts(herd_sim_opts_t *o, int nodes, int gpn)
{
    herd_sim_opts_init(o);
    o->cluster.nodes = nodes;
    o->cluster.gpus_per_node = gpn;
}

static int prog_compute(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c);
    if (herd_now(c) != 0)
        return 1;
    if (herd_compute(c, 1e-3 * (r + 1), "work") != HERD_OK)
        return 2;
    if (herd_now(c) != (uint64_t)(r + 1) * 1000000u)
        return 3;
    return herd_mark(c, "done") == HERD_OK ? 0 : 4;
}

START_TEST(compute_advances_virtual_time)
{
    herd_sim_opts_t o;
    opts(&o, 1, 4);
    herd_run_info_t info;
    ck_assert_int_eq(run(&o, prog_compute, NULL, &info), HERD_OK);
    ck_assert_uint_eq(info.end_time_ns, 4000000u);
    ck_assert_int_eq(info.failed_rank, -1);
    herd_run_info_clear(&info);
}
END_TEST

static int prog_fail(herd_comm_t *c, void *arg)
{
    herd_compute(c, 1e-6, NULL);
    return herd_comm_rank(c) == 2 ? 7 : 0;
}

START_TEST(failing_rank_is_reported)
{
    herd_sim_opts_t o;
    opts(&o, 1, 4);
    herd_run_info_t info;
    ck_assert_int_eq(run(&o, prog_fail, NULL, &info), HERD_ERR_RANK_EXITED);
    ck_assert_int_eq(info.failed_rank, 2);
    ck_assert_int_eq(info.exit_code, 7);
    herd_run_info_clear(&info);
}
END_TEST

static int prog_allreduce(herd_comm_t *c, void *arg)
{
    size_t n = *(size_t *)arg;
    float *buf = NULL;
    if (herd_alloc(c, n * sizeof(float), (void **)&buf) != HERD_OK)
        return 1;
    for (int i = 0; i < 3; i++)
        if (herd_all_reduce(c, buf, buf, n, HERD_FLOAT32, HERD_SUM, NULL) !=
            HERD_OK)
            return 2;
    herd_free(c, buf);
    return 0;
}

START_TEST(world_sizes)
{
    static const int sizes[] = {1, 2, 3, 5, 8, 12};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        herd_sim_opts_t o;
        opts(&o, 1, sizes[i]);
        size_t n = 1000;
        herd_run_info_t info;
        ck_assert_int_eq(run(&o, prog_allreduce, &n, &info), HERD_OK);
        if (sizes[i] > 1)
            ck_assert_uint_gt(info.end_time_ns, 0);
        herd_run_info_clear(&info);
    }
}
END_TEST

/* Logarithmic algorithms: ring's 2(p-1) steps per rank would make a
 * 4096-rank test quadratic. */
static int prog_small(herd_comm_t *c, void *arg)
{
    char buf[64];
    if (herd_barrier(c, NULL) != HERD_OK)
        return 1;
    if (herd_broadcast(c, buf, sizeof(buf), HERD_UINT8, 0, NULL) != HERD_OK)
        return 2;
    return herd_comm_size(c) == 4096 ? 0 : 3;
}

START_TEST(world_4096)
{
    herd_sim_opts_t o;
    opts(&o, 512, 8);
    herd_run_info_t info;
    ck_assert_int_eq(run(&o, prog_small, NULL, &info), HERD_OK);
    ck_assert_uint_gt(info.end_time_ns, 0);
    ck_assert_uint_gt(info.events, 4096);
    herd_run_info_clear(&info);
}
END_TEST

static int prog_pingpong(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c);
    int v = 41;
    for (int i = 0; i < 4; i++) {
        if (r == 0) {
            v++;
            if (herd_send(c, &v, 1, HERD_INT32, 1, 5, NULL) ||
                herd_recv(c, &v, 1, HERD_INT32, 1, 5, NULL))
                return 1;
        } else if (r == 1) {
            if (herd_recv(c, &v, 1, HERD_INT32, 0, 5, NULL))
                return 1;
            v++;
            if (herd_send(c, &v, 1, HERD_INT32, 0, 5, NULL))
                return 1;
        }
    }
    return (r == 0 && v != 49) ? 2 : 0;
}

START_TEST(p2p_pingpong_real)
{
    herd_sim_opts_t o;
    opts(&o, 1, 2);
    o.real_buffers = 1;
    herd_run_info_t info;
    ck_assert_int_eq(run(&o, prog_pingpong, NULL, &info), HERD_OK);
    /* 8 one-way messages of 4 bytes: each at least the path latency */
    ck_assert_uint_ge(info.end_time_ns,
                      8 * (uint64_t)(o.cluster.intra.latency * 1e9));
    herd_run_info_clear(&info);
}
END_TEST

static int prog_poll(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c), v = 0, done = 0;
    herd_req_t *req;
    if (r == 1) {
        herd_compute(c, 1e-3, NULL);
        return herd_send(c, &v, 1, HERD_INT32, 0, 0, NULL) ? 1 : 0;
    }
    if (r != 0)
        return 0;
    if (herd_recv(c, &v, 1, HERD_INT32, 1, 0, &req))
        return 1;
    /* a busy-wait loop: time must move on for the send to come */
    while (!done)
        if (herd_req_test(req, &done))
            return 2;
    herd_req_free(req);
    return herd_now(c) >= 1000000 ? 0 : 3;
}

START_TEST(polling_loop_progresses)
{
    herd_sim_opts_t o;
    opts(&o, 1, 2);
    herd_run_info_t info;
    ck_assert_int_eq(run(&o, prog_poll, NULL, &info), HERD_OK);
    herd_run_info_clear(&info);
}
END_TEST

static int prog_poll_forever(herd_comm_t *c, void *arg)
{
    int v, done = 0;
    herd_req_t *req;
    if (herd_comm_rank(c) != 0)
        return 0;
    if (herd_recv(c, &v, 1, HERD_INT32, 1, 0, &req))
        return 1;
    while (!done)
        if (herd_req_test(req, &done))
            break;
    herd_req_free(req);
    return 0;
}

START_TEST(polling_hang_is_diagnosed)
{
    herd_sim_opts_t o;
    opts(&o, 1, 2);
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    sim_diag_t d;
    ck_assert_int_eq(sim_run(&init, prog_poll_forever, NULL, NULL, &d),
                     HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, SIM_DIAG_MISSING_RANK);
    ck_assert_int_eq(d.ranks[0].state, SIM_DIAG_WAITING);
    ck_assert_int_eq(d.ranks[0].coll, HERD_COLL_RECV);
    ck_assert_int_eq(d.nmissing, 1);
    ck_assert_int_eq(d.missing[0], 1);
    sim_diag_clear(&d);
}
END_TEST

static void count_rec(const herd_tl_rec_t *r, void *arg)
{
    if (r->kind == HERD_TL_COLL && r->group != 0)
        (*(int *)arg)++;
}

/* A request outlives the group it was posted on. */
static int prog_group_gone(herd_comm_t *c, void *arg)
{
    int all[4] = {0, 1, 2, 3};
    herd_comm_t *g;
    herd_req_t *req;
    char buf[64];
    if (herd_new_group(c, all, 4, &g) ||
        herd_all_reduce(g, buf, buf, 16, HERD_FLOAT32, HERD_SUM, &req))
        return 1;
    if (herd_comm_destroy(g))
        return 2;
    if (herd_req_wait(req))
        return 3;
    herd_req_free(req);
    return 0;
}

START_TEST(request_outlives_group)
{
    herd_sim_opts_t o;
    opts(&o, 1, 4);
    int n = 0;
    herd_init_t init = {.backend = "sim",
                        .engine_opts = &o,
                        .timeline_cb = count_rec,
                        .timeline_arg = &n};
    ck_assert_int_eq(herd_run(&init, prog_group_gone, NULL, NULL), HERD_OK);
    ck_assert_int_eq(n, 4);
}
END_TEST

/* Zero counts, nested groups, many async ops left to the end. */
static int prog_edges(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c);
    float x = 1;
    if (herd_all_reduce(c, NULL, NULL, 0, HERD_FLOAT32, HERD_SUM, NULL) ||
        herd_broadcast(c, NULL, 0, HERD_FLOAT32, 1, NULL))
        return 1;
    int half[3] = {0, 2, 4};
    herd_comm_t *g = NULL, *gg = NULL;
    if (herd_new_group(c, half, 3, &g))
        return 2;
    if (g && herd_new_group(g, (int[]){0, 1}, 2, &gg))
        return 3;
    if (gg && herd_all_reduce(gg, &x, &x, 1, HERD_FLOAT32, HERD_SUM, NULL))
        return 4;
    if (gg && x != 2)
        return 5;
    if (g && herd_barrier(g, NULL))
        return 6;
    herd_req_t *reqs[8];
    char buf[8][32];
    for (int i = 0; i < 8; i++)
        if (herd_all_reduce(c, buf[i], buf[i], 8, HERD_FLOAT32, HERD_MAX,
                            &reqs[i]))
            return 7;
    for (int i = 7; i >= 0; i--)
        herd_req_free(reqs[i]); /* waits */
    if (gg)
        herd_comm_destroy(gg);
    if (g)
        herd_comm_destroy(g);
    return r >= 0 ? 0 : 8;
}

START_TEST(edge_cases)
{
    herd_sim_opts_t o;
    opts(&o, 1, 6);
    o.real_buffers = 1;
    herd_run_info_t info;
    herd_status_t st = run(&o, prog_edges, NULL, &info);
    ck_assert_msg(st == HERD_OK, "%s rank %d rc %d", herd_status_name(st),
                  info.failed_rank, info.exit_code);
    herd_run_info_clear(&info);
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("sim_engine");
    TCase *t = tcase_create("engine");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, compute_advances_virtual_time);
    tcase_add_test(t, failing_rank_is_reported);
    tcase_add_test(t, world_sizes);
    tcase_add_test(t, world_4096);
    tcase_add_test(t, p2p_pingpong_real);
    tcase_add_test(t, polling_loop_progresses);
    tcase_add_test(t, polling_hang_is_diagnosed);
    tcase_add_test(t, request_outlives_group);
    tcase_add_test(t, edge_cases);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_run_suite(suite());
}
