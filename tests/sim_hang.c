/* tests/sim_hang.c - hangs and timeouts are results, not freezes: each
 * broken program ends with the right status, class and rank lists (and,
 * for timeouts, PyTorch's watchdog text), and every rank unwinds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "sim/diag.h"
#include "support/testutil.h"

#define P 4

typedef struct hang_arg {
    int variant;
    herd_status_t last[P]; /* status of each rank's last blocking call */
} hang_arg_t;

static herd_status_t run4(hang_arg_t *a, herd_main_fn fn, double timeout_s,
                          const herd_fault_t *faults, size_t nfaults,
                          sim_diag_t *d)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = 1;
    o.cluster.gpus_per_node = P;
    o.faults = faults;
    o.nfaults = nfaults;
    herd_init_t init = {
        .backend = "sim", .engine_opts = &o, .timeout_s = timeout_s};
    herd_run_info_t info;
    herd_status_t st = sim_run(&init, fn, a, &info, d);
    if (getenv("SIM_HANG_PRINT"))
        fputs(d->text ? d->text : "(no text)\n", stderr);
    ck_assert_ptr_nonnull(info.report);
    ck_assert_ptr_nonnull(d->text);
    ck_assert_str_eq(info.report, d->text);
    ck_assert_uint_gt(info.events, 0);
    herd_run_info_clear(&info);
    return st;
}

static void assert_list(const int *v, int n, const int *want, int nwant)
{
    ck_assert_int_eq(n, nwant);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(v[i], want[i]);
}

static herd_status_t ar(herd_comm_t *c, size_t n)
{
    char buf[16] = {0}; /* phantom on sim; zeroed for -Og warnings */
    return herd_all_reduce(c, buf, buf, n, HERD_FLOAT32, HERD_SUM, NULL);
}

static int prog_uneven(herd_comm_t *c, void *arg)
{
    hang_arg_t *a = arg;
    int r = herd_comm_rank(c);
    int steps = r == 1 ? 2 : 3;
    for (int s = 0; s < steps; s++) {
        herd_mark(c, "step");
        herd_compute(c, 1e-3, "fwd");
        a->last[r] = ar(c, 1000);
        if (a->last[r] != HERD_OK)
            return 1;
    }
    return 0;
}

START_TEST(uneven_step_counts)
{
    hang_arg_t a = {0};
    sim_diag_t d;
    ck_assert_int_eq(run4(&a, prog_uneven, 0, NULL, 0, &d), HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, SIM_DIAG_MISSING_RANK);
    ck_assert_int_eq(d.coll, HERD_COLL_ALL_REDUCE);
    ck_assert_uint_eq(d.seq, 3);
    assert_list(d.missing, d.nmissing, (int[]){1}, 1);
    assert_list(d.waiting, d.nwaiting, (int[]){0, 2, 3}, 3);
    ck_assert_int_eq(d.ranks[1].state, SIM_DIAG_EXITED);
    ck_assert_int_eq(d.ranks[0].state, SIM_DIAG_WAITING);
    ck_assert_uint_eq(d.ranks[0].seq, 3);
    ck_assert_ptr_nonnull(strstr(d.text, "class: missing rank"));
    ck_assert_ptr_nonnull(strstr(d.text, "Watchdog caught collective"));
    /* the waiting ranks were unwound with an error */
    ck_assert_int_eq(a.last[0], HERD_ERR_ABORTED);
    ck_assert_int_eq(a.last[1], HERD_OK);
    sim_diag_clear(&d);
}
END_TEST

static int prog_elsewhere(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c);
    if (r == 3) {
        int v;
        return herd_recv(c, &v, 1, HERD_INT32, 0, 0, NULL) ? 1 : 0;
    }
    return ar(c, 8) ? 1 : 0;
}

START_TEST(collective_missing_on_one_rank)
{
    hang_arg_t a = {0};
    sim_diag_t d;
    ck_assert_int_eq(run4(&a, prog_elsewhere, 0, NULL, 0, &d), HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, SIM_DIAG_MISSING_RANK);
    assert_list(d.missing, d.nmissing, (int[]){3}, 1);
    assert_list(d.waiting, d.nwaiting, (int[]){0, 1, 2}, 3);
    ck_assert_int_eq(d.ranks[3].state, SIM_DIAG_WAITING);
    ck_assert_int_eq(d.ranks[3].coll, HERD_COLL_RECV);
    ck_assert_int_eq(d.ranks[3].peer, 0);
    sim_diag_clear(&d);
}
END_TEST

static int prog_mismatch(herd_comm_t *c, void *arg)
{
    hang_arg_t *a = arg;
    int r = herd_comm_rank(c);
    char buf[4096];
    if (ar(c, 10))
        return 1;
    herd_status_t st;
    if (r != 2)
        st = herd_all_reduce(c, buf, buf, 100, HERD_FLOAT32, HERD_SUM, NULL);
    else if (a->variant == 0)
        st = herd_all_gather(c, buf, buf, 100, HERD_FLOAT32, NULL);
    else if (a->variant == 1)
        st = herd_all_reduce(c, buf, buf, 200, HERD_FLOAT32, HERD_SUM, NULL);
    else if (a->variant == 2)
        st = herd_all_reduce(c, buf, buf, 100, HERD_INT32, HERD_SUM, NULL);
    else
        st = herd_all_reduce(c, buf, buf, 100, HERD_FLOAT32, HERD_MAX, NULL);
    return st ? 1 : 0;
}

static void mismatch_case(int variant, sim_diag_class_t want)
{
    hang_arg_t a = {.variant = variant};
    sim_diag_t d;
    ck_assert_int_eq(run4(&a, prog_mismatch, 0, NULL, 0, &d), HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, want);
    ck_assert_uint_eq(d.seq, 2);
    ck_assert_int_eq(d.coll, HERD_COLL_ALL_REDUCE);
    assert_list(d.mismatched, d.nmismatched, (int[]){2}, 1);
    ck_assert_int_eq(d.nmissing, 0);
    ck_assert_ptr_nonnull(strstr(d.text, sim_diag_class_name(want)));
    sim_diag_clear(&d);
}

START_TEST(op_mismatch)
{
    mismatch_case(0, SIM_DIAG_COLL_MISMATCH);
}
END_TEST
START_TEST(size_mismatch)
{
    mismatch_case(1, SIM_DIAG_SIZE_MISMATCH);
}
END_TEST
START_TEST(dtype_mismatch)
{
    mismatch_case(2, SIM_DIAG_DTYPE_MISMATCH);
}
END_TEST
START_TEST(reduce_op_mismatch)
{
    mismatch_case(3, SIM_DIAG_COLL_MISMATCH);
}
END_TEST

static int prog_train(herd_comm_t *c, void *arg)
{
    for (int s = 0; s < 5; s++) {
        herd_mark(c, "step");
        herd_compute(c, 1e-3, "fwd");
        if (ar(c, 1000))
            return 1;
    }
    return 0;
}

START_TEST(dead_rank_at_time)
{
    hang_arg_t a = {0};
    sim_diag_t d;
    herd_fault_t f = {.rank = 2, .at_time = 2.5e-3, .at_step = -1};
    ck_assert_int_eq(run4(&a, prog_train, 0, &f, 1, &d), HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, SIM_DIAG_MISSING_RANK);
    assert_list(d.missing, d.nmissing, (int[]){2}, 1);
    ck_assert_int_eq(d.ranks[2].state, SIM_DIAG_DEAD);
    ck_assert_uint_eq(d.seq, 3); /* died computing before the 3rd */
    ck_assert_ptr_nonnull(strstr(d.text, "dead"));
    sim_diag_clear(&d);
}
END_TEST

START_TEST(dead_rank_at_step)
{
    hang_arg_t a = {0};
    sim_diag_t d;
    herd_fault_t f = {.rank = 1, .at_time = -1, .at_step = 1};
    ck_assert_int_eq(run4(&a, prog_train, 0, &f, 1, &d), HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, SIM_DIAG_MISSING_RANK);
    assert_list(d.missing, d.nmissing, (int[]){1}, 1);
    ck_assert_int_eq(d.ranks[1].state, SIM_DIAG_DEAD);
    ck_assert_uint_eq(d.seq, 2); /* steps count from 0: died starting #1 */
    sim_diag_clear(&d);
}
END_TEST

static int prog_big(herd_comm_t *c, void *arg)
{
    void *buf;
    herd_alloc(c, 64 << 20, &buf);
    return herd_all_reduce(c, buf, buf, 16 << 20, HERD_FLOAT32, HERD_SUM, NULL)
               ? 1
               : 0;
}

START_TEST(dead_rank_inside_collective)
{
    hang_arg_t a = {0};
    sim_diag_t d;
    herd_fault_t f = {.rank = 2, .at_time = 1e-4, .at_step = -1};
    ck_assert_int_eq(run4(&a, prog_big, 0, &f, 1, &d), HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, SIM_DIAG_MISSING_RANK);
    assert_list(d.missing, d.nmissing, (int[]){2}, 1);
    assert_list(d.waiting, d.nwaiting, (int[]){0, 1, 3}, 3);
    ck_assert_int_eq(d.ranks[2].state, SIM_DIAG_DEAD);
    sim_diag_clear(&d);
}
END_TEST

static int prog_cycle(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c), v = r;
    if (r == 3)
        return 0;
    /* NCCL-like rendezvous: a blocking send waits for its receive */
    if (herd_send(c, &v, 1, HERD_INT32, (r + 1) % 3, 0, NULL))
        return 1;
    return herd_recv(c, &v, 1, HERD_INT32, (r + 2) % 3, 0, NULL) ? 1 : 0;
}

START_TEST(p2p_cycle)
{
    hang_arg_t a = {0};
    sim_diag_t d;
    ck_assert_int_eq(run4(&a, prog_cycle, 0, NULL, 0, &d), HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, SIM_DIAG_P2P_CYCLE);
    assert_list(d.cycle, d.ncycle, (int[]){0, 1, 2}, 3);
    ck_assert_int_eq(d.ranks[0].coll, HERD_COLL_SEND);
    ck_assert_ptr_nonnull(strstr(d.text, "0 -> 1 -> 2 -> 0"));
    sim_diag_clear(&d);
}
END_TEST

static int prog_slow(herd_comm_t *c, void *arg)
{
    hang_arg_t *a = arg;
    int r = herd_comm_rank(c);
    if (r == 3)
        herd_compute(c, 1000.0, "stuck in data loading");
    char buf[400];
    a->last[r] =
        herd_all_reduce(c, buf, buf, 100, HERD_FLOAT32, HERD_SUM, NULL);
    return 0;
}

START_TEST(timeout_default)
{
    hang_arg_t a = {0};
    sim_diag_t d;
    ck_assert_int_eq(run4(&a, prog_slow, 0, NULL, 0, &d), HERD_ERR_TIMEOUT);
    ck_assert_int_eq(d.status, HERD_ERR_TIMEOUT);
    ck_assert_uint_eq(d.time_ns, 600000000000ULL);
    assert_list(d.missing, d.nmissing, (int[]){3}, 1);
    assert_list(d.waiting, d.nwaiting, (int[]){0, 1, 2}, 3);
    ck_assert_int_eq(d.ranks[3].state, SIM_DIAG_RUNNING);
    ck_assert_ptr_nonnull(
        strstr(d.text, "Watchdog caught collective operation timeout: "
                       "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=100, "
                       "NumelOut=100, Timeout(ms)=600000) ran for 600000 "
                       "milliseconds before timing out"));
    ck_assert_int_eq(a.last[0], HERD_ERR_TIMEOUT);
    sim_diag_clear(&d);
}
END_TEST

START_TEST(timeout_per_communicator)
{
    hang_arg_t a = {0};
    sim_diag_t d;
    ck_assert_int_eq(run4(&a, prog_slow, 5.0, NULL, 0, &d), HERD_ERR_TIMEOUT);
    ck_assert_uint_eq(d.time_ns, 5000000000ULL);
    ck_assert_ptr_nonnull(strstr(d.text, "Timeout(ms)=5000) ran for 5000"));
    sim_diag_clear(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_hang");
    TCase *t = tcase_create("hang");
    tcase_add_test(t, uneven_step_counts);
    tcase_add_test(t, collective_missing_on_one_rank);
    tcase_add_test(t, op_mismatch);
    tcase_add_test(t, size_mismatch);
    tcase_add_test(t, dtype_mismatch);
    tcase_add_test(t, reduce_op_mismatch);
    tcase_add_test(t, dead_rank_at_time);
    tcase_add_test(t, dead_rank_at_step);
    tcase_add_test(t, dead_rank_inside_collective);
    tcase_add_test(t, p2p_cycle);
    tcase_add_test(t, timeout_default);
    tcase_add_test(t, timeout_per_communicator);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
