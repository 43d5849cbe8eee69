/* tests/sim_compute_until.c - herd_compute_until on the simulator: the
 * compute ends at the instant the request completes (or runs in full when
 * it does not), reports the compute time it stood for (scaled back by the
 * rank's slowdown), returns at once for a finished request, rejects bad
 * arguments, and a timer left behind by an early wake does not hold off
 * the diagnosis of a later hang. */
#include <herd/herd.h>
#include <herd/sim.h>

#include "support/testutil.h"

typedef struct cu {
    int mode;
    double done[4];
    uint64_t t[4];
    herd_status_t st[4];
} cu_t;

enum { EARLY, TIMER, READY, BAD, HANG };

/* Rank 1 joins the all_reduce after 1 ms of compute; rank 0 computes
 * until it completes. */
static int early(herd_comm_t *c, cu_t *k)
{
    herd_req_t *req;
    void *buf;
    if (herd_alloc(c, 4096, &buf) != HERD_OK)
        return 1;
    if (herd_comm_rank(c) == 1) {
        herd_compute(c, 1e-3, NULL);
        return herd_all_reduce(c, buf, buf, 1024, HERD_FLOAT32, HERD_SUM,
                               NULL) != HERD_OK;
    }
    if (herd_all_reduce(c, buf, buf, 1024, HERD_FLOAT32, HERD_SUM, &req))
        return 1;
    uint64_t t0 = herd_now(c);
    k->st[0] = herd_compute_until(c, k->mode == TIMER ? 0.5e-3 : 10e-3, req,
                                  "until", &k->done[0]);
    k->t[0] = herd_now(c) - t0;
    herd_req_wait(req);
    k->t[1] = herd_now(c) - t0;
    /* finished: no time passes */
    k->st[2] = herd_compute_until(c, 1.0, req, NULL, &k->done[2]);
    k->t[2] = herd_now(c) - t0;
    herd_req_free(req);
    return 0;
}

static int bad(herd_comm_t *c, cu_t *k)
{
    herd_req_t *req;
    if (herd_barrier(c, &req))
        return 1;
    double d = 7;
    k->st[0] = herd_compute_until(c, 1e-3, NULL, NULL, &d);
    k->st[1] = herd_compute_until(c, -1.0, req, NULL, &d);
    k->st[2] = herd_compute_until(c, 1e-3, req, NULL, NULL);
    k->done[0] = d;
    herd_req_wait(req);
    herd_req_free(req);
    return 0;
}

/* Rank 0 is woken early by a barrier (its 100 s timer left queued), then
 * waits for a second barrier rank 1 never joins. */
static int hang(herd_comm_t *c, cu_t *k)
{
    herd_req_t *req;
    if (herd_barrier(c, &req))
        return 1;
    if (herd_comm_rank(c) == 1) {
        herd_req_wait(req);
        herd_req_free(req);
        return 0;
    }
    k->st[0] = herd_compute_until(c, 100.0, req, NULL, &k->done[0]);
    herd_req_free(req);
    k->st[1] = herd_barrier(c, NULL);
    return 0;
}

static int prog(herd_comm_t *c, void *arg)
{
    cu_t *k = arg;
    if (k->mode == BAD)
        return herd_comm_rank(c) == 0 ? bad(c, k)
                                      : herd_barrier(c, NULL) != HERD_OK;
    if (k->mode == HANG)
        return hang(c, k);
    return early(c, k);
}

static herd_status_t run(cu_t *k, double slow0, herd_run_info_t *info)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = 1;
    o.cluster.gpus_per_node = 2;
    herd_rank_override_t slow = {.rank = 0, .compute_factor = slow0};
    if (slow0 > 0) {
        o.ranks = &slow;
        o.nranks_overrides = 1;
    }
    herd_init_t init = {.backend = "sim", .world_size = 2, .engine_opts = &o};
    return herd_run(&init, prog, k, info);
}

static void run_ok(cu_t *k, double slow0)
{
    herd_run_info_t info;
    ck_assert_int_eq(run(k, slow0, &info), HERD_OK);
    herd_run_info_clear(&info);
    ck_assert_int_eq(k->st[0], HERD_OK);
}

START_TEST(ends_when_request_completes)
{
    cu_t k = {.mode = EARLY};
    run_ok(&k, 0);
    /* the all_reduce ends once rank 1 joins at 1 ms: rank 0 wakes then,
     * and its wait that follows takes no time */
    ck_assert_uint_gt(k.t[0], 1000000);
    ck_assert_uint_lt(k.t[0], 2000000);
    ck_assert_uint_eq(k.t[1], k.t[0]);
    ck_assert_double_eq_tol(k.done[0], (double)k.t[0] * 1e-9, 1e-15);
    ck_assert_int_eq(k.st[2], HERD_OK);
    ck_assert(k.done[2] == 0);
    ck_assert_uint_eq(k.t[2], k.t[1]);
}
END_TEST

START_TEST(slowdown_scales_the_compute_done)
{
    cu_t k = {.mode = EARLY};
    run_ok(&k, 2.0);
    ck_assert_uint_gt(k.t[0], 1000000);
    /* half the virtual time elapsed counts as compute done */
    ck_assert_double_eq_tol(k.done[0], (double)k.t[0] * 1e-9 / 2, 1e-15);
}
END_TEST

START_TEST(runs_in_full_when_request_is_later)
{
    cu_t k = {.mode = TIMER};
    run_ok(&k, 0);
    ck_assert_uint_eq(k.t[0], 500000);
    ck_assert(k.done[0] == 0.5e-3);
    ck_assert_uint_gt(k.t[1], 1000000); /* then it waited for rank 1 */
}
END_TEST

START_TEST(bad_arguments)
{
    cu_t k = {.mode = BAD};
    herd_run_info_t info;
    ck_assert_int_eq(run(&k, 0, &info), HERD_OK);
    herd_run_info_clear(&info);
    ck_assert_int_eq(k.st[0], HERD_ERR_INVALID_ARG); /* no request */
    ck_assert_int_eq(k.st[1], HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(k.st[2], HERD_ERR_INVALID_ARG);
    ck_assert(k.done[0] == 7); /* untouched on error */
}
END_TEST

START_TEST(stale_timer_does_not_delay_hang)
{
    cu_t k = {.mode = HANG};
    herd_run_info_t info;
    ck_assert_int_eq(run(&k, 0, &info), HERD_ERR_HANG);
    ck_assert_int_eq(k.st[0], HERD_OK);
    ck_assert(k.done[0] < 1e-3);
    /* diagnosed when rank 0 blocks, not after its abandoned 100 s timer */
    ck_assert_uint_lt(info.end_time_ns, 1000000000ull);
    herd_run_info_clear(&info);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_compute_until");
    TCase *tc = tcase_create("compute_until");
    tcase_add_test(tc, ends_when_request_completes);
    tcase_add_test(tc, slowdown_scales_the_compute_done);
    tcase_add_test(tc, runs_in_full_when_request_is_later);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, stale_timer_does_not_delay_hang);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
