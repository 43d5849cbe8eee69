/* tests/sim_calls.c - issue 15's "calls users miss" on the simulator:
 * uneven collectives, batch_isend_irecv, coalesced collectives,
 * monitored_barrier and the object collectives with real buffers and
 * checked results (tests/support/calls_prog.c); their argument checks;
 * timing sanity (an all_gather_v of even blocks costs what a direct
 * all_gather does, a batch posts its sends and receives at once); and
 * the diagnosis of a monitored_barrier that a rank never reaches
 * (hang) or reaches too late (timeout), naming that rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "sim/diag.h"
#include "support/calls_prog.h"
#include "support/testutil.h"

#define P 4

typedef struct res {
    int rc[P];
    char why[P][512];
    uint64_t t[P][4];
    herd_status_t st[P];
    char err[P][512];
    int variant;
} res_t;

static herd_init_t sim_init(herd_sim_opts_t *o, int real)
{
    herd_sim_opts_init(o);
    o->cluster.nodes = 1;
    o->cluster.gpus_per_node = P;
    o->real_buffers = real;
    herd_init_t init = {.backend = "sim", .engine_opts = o};
    return init;
}

static int check_prog(herd_comm_t *c, void *arg)
{
    res_t *r = arg;
    int me = herd_comm_rank(c);
    r->rc[me] = calls_prog_check(c, r->why[me], sizeof(r->why[me]));
    if (!r->rc[me])
        r->rc[me] =
            100 * calls_prog_bad_args(c, r->why[me], sizeof(r->why[me]));
    return r->rc[me];
}

START_TEST(results)
{
    herd_sim_opts_t o;
    herd_init_t init = sim_init(&o, 1);
    res_t *r = calloc(1, sizeof(*r));
    herd_run_info_t info;
    herd_status_t st = herd_run(&init, check_prog, r, &info);
    for (int i = 0; i < P; i++)
        ck_assert_msg(r->rc[i] == 0, "rank %d: check %d: %s", i, r->rc[i],
                      r->why[i]);
    ck_assert_int_eq(st, HERD_OK);
    herd_run_info_clear(&info);
    free(r);
}
END_TEST

/* On phantom buffers the object calls cannot carry data: a clear error. */
static int phantom_prog(herd_comm_t *c, void *arg)
{
    res_t *r = arg;
    int me = herd_comm_rank(c);
    herd_bytes_t out[P];
    r->st[me] = herd_all_gather_bytes(c, "x", 1, out);
    snprintf(r->err[me], sizeof(r->err[me]), "%s", herd_last_error(c));
    return 0;
}

START_TEST(objects_need_real_buffers)
{
    herd_sim_opts_t o;
    herd_init_t init = sim_init(&o, 0);
    res_t *r = calloc(1, sizeof(*r));
    ck_assert_int_eq(herd_run(&init, phantom_prog, r, NULL), HERD_OK);
    ck_assert_int_eq(r->st[0], HERD_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(r->err[0], "real buffers"));
    free(r);
}
END_TEST

/* Virtual durations of: all_gather_v with even blocks, all_gather
 * (direct), a batch of a send and a receive per neighbour, and the same
 * ops posted and waited one after the other. */
static int timing_prog(herd_comm_t *c, void *arg)
{
    res_t *r = arg;
    int me = herd_comm_rank(c), p = herd_comm_size(c);
    size_t n = 1 << 20, counts[P];
    void *s = NULL, *d = NULL;
    if (herd_alloc(c, n * 4, &s) || herd_alloc(c, n * 4 * P, &d))
        return 1;
    for (int i = 0; i < P; i++)
        counts[i] = n;
    herd_comm_set_algo(c, HERD_COLL_ALL_GATHER, HERD_ALGO_DIRECT);
    uint64_t t0 = herd_now(c);
    if (herd_all_gather_v(c, s, d, counts, HERD_FLOAT32, NULL))
        return 2;
    uint64_t t1 = herd_now(c);
    if (herd_all_gather(c, s, d, n, HERD_FLOAT32, NULL))
        return 3;
    uint64_t t2 = herd_now(c);
    herd_p2p_op_t ops[2] = {
        {HERD_P2P_SEND, s, n, HERD_FLOAT32, (me + 1) % p, 0},
        {HERD_P2P_RECV, d, n, HERD_FLOAT32, (me + p - 1) % p, 0}};
    if (herd_batch_isend_irecv(c, ops, 2, NULL))
        return 4;
    uint64_t t3 = herd_now(c);
    r->t[me][0] = t1 - t0;
    r->t[me][1] = t2 - t1;
    r->t[me][2] = t3 - t2;
    return 0;
}

START_TEST(timing)
{
    herd_sim_opts_t o;
    herd_init_t init = sim_init(&o, 0);
    res_t *r = calloc(1, sizeof(*r));
    ck_assert_int_eq(herd_run(&init, timing_prog, r, NULL), HERD_OK);
    for (int i = 0; i < P; i++) {
        ck_assert_uint_gt(r->t[i][0], 0);
        /* the same direct schedule, the same cost */
        ck_assert_uint_eq(r->t[i][0], r->t[i][1]);
        /* a ring exchange of one block: cheaper than an all_gather of
         * P - 1 blocks but not free */
        ck_assert_uint_gt(r->t[i][2], 0);
        ck_assert_uint_lt(r->t[i][2], r->t[i][1]);
    }
    free(r);
}
END_TEST

/* variant 0: rank 2 blocks forever in a receive nobody sends (hang);
 * variant 1: rank 2 computes past the barrier's timeout (timeout);
 * variant 2: ranks 1 and 2 late, wait_all_ranks (timeout). */
static int mb_prog(herd_comm_t *c, void *arg)
{
    res_t *r = arg;
    int me = herd_comm_rank(c);
    int late = me == 2 || (r->variant == 2 && me == 1);
    if (late && r->variant == 0) {
        char b[4];
        return herd_recv(c, b, 4, HERD_UINT8, 3, 99, NULL) ? 1 : 0;
    }
    if (late && herd_compute(c, 100.0, NULL))
        return 1;
    r->st[me] = herd_monitored_barrier(c, 2.0, r->variant == 2);
    snprintf(r->err[me], sizeof(r->err[me]), "%s", herd_last_error(c));
    return r->st[me] ? 1 : 0;
}

static herd_status_t mb_run(res_t *r, int variant, sim_diag_t *d)
{
    herd_sim_opts_t o;
    herd_init_t init = sim_init(&o, 0);
    r->variant = variant;
    herd_run_info_t info;
    herd_status_t st = sim_run(&init, mb_prog, r, &info, d);
    herd_run_info_clear(&info);
    return st;
}

START_TEST(monitored_barrier_hang)
{
    res_t *r = calloc(1, sizeof(*r));
    sim_diag_t d;
    ck_assert_int_eq(mb_run(r, 0, &d), HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, SIM_DIAG_MISSING_RANK);
    ck_assert_int_eq(d.coll, HERD_COLL_MONITORED_BARRIER);
    ck_assert_int_eq(d.nmissing, 1);
    ck_assert_int_eq(d.missing[0], 2);
    ck_assert_msg(strstr(d.text, "Rank 2 failed to pass monitoredBarrier in "
                                 "2000 ms"),
                  "%s", d.text);
    ck_assert_ptr_nonnull(strstr(d.text, "stuck: monitored_barrier"));
    sim_diag_clear(&d);
    free(r);
}
END_TEST

START_TEST(monitored_barrier_timeout)
{
    res_t *r = calloc(1, sizeof(*r));
    sim_diag_t d;
    ck_assert_int_eq(mb_run(r, 1, &d), HERD_ERR_TIMEOUT);
    ck_assert_uint_eq(d.time_ns, 2000000000ull);
    ck_assert_int_eq(d.nmissing, 1);
    ck_assert_int_eq(d.missing[0], 2);
    ck_assert_int_eq(r->st[0], HERD_ERR_TIMEOUT);
    ck_assert_msg(strstr(r->err[0], "rank 2 failed to pass monitoredBarrier "
                                    "in 2000 ms"),
                  "%s", r->err[0]);
    ck_assert_ptr_nonnull(strstr(r->err[1], "rank 0 did not release"));
    sim_diag_clear(&d);
    /* wait_all_ranks names every late rank */
    memset(r, 0, sizeof(*r));
    ck_assert_int_eq(mb_run(r, 2, &d), HERD_ERR_TIMEOUT);
    ck_assert_msg(strstr(r->err[0], "ranks 1, 2 failed"), "%s", r->err[0]);
    ck_assert_msg(strstr(d.text, "Ranks 1, 2 failed to pass"), "%s", d.text);
    sim_diag_clear(&d);
    free(r);
}
END_TEST

/* all_gather_v with counts that differ between ranks is a size mismatch
 * the diagnosis names. */
static int mismatch_prog(herd_comm_t *c, void *arg)
{
    size_t counts[P] = {1, 2, 3, 4};
    void *s = NULL, *d = NULL;
    if (herd_alloc(c, 64, &s) || herd_alloc(c, 64, &d))
        return 1;
    if (herd_comm_rank(c) == 3)
        counts[0] = 5;
    return herd_all_gather_v(c, s, d, counts, HERD_UINT8, NULL) ? 1 : 0;
}

START_TEST(v_size_mismatch)
{
    herd_sim_opts_t o;
    herd_init_t init = sim_init(&o, 0);
    sim_diag_t d;
    herd_run_info_t info;
    ck_assert_int_eq(sim_run(&init, mismatch_prog, NULL, &info, &d),
                     HERD_ERR_HANG);
    ck_assert_int_eq(d.cls, SIM_DIAG_SIZE_MISMATCH);
    ck_assert_int_eq(d.nmismatched, 1);
    ck_assert_int_eq(d.mismatched[0], 3);
    ck_assert_ptr_nonnull(strstr(d.text, "all_gather_v"));
    sim_diag_clear(&d);
    herd_run_info_clear(&info);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_calls");
    TCase *tc = tcase_create("calls");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, results);
    tcase_add_test(tc, objects_need_real_buffers);
    tcase_add_test(tc, timing);
    tcase_add_test(tc, monitored_barrier_hang);
    tcase_add_test(tc, monitored_barrier_timeout);
    tcase_add_test(tc, v_size_mismatch);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
