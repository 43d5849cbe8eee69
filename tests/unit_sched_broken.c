/* tests/unit_sched_broken.c - the schedule verifier catches deliberately
 * broken schedules: a wrong offset, a missing dependency (a send racing
 * the receive it forwards, a receive overwriting data a send still
 * reads), a dropped step, a count mismatch, a dependency cycle across
 * ranks, a rendezvous-only deadlock and a barrier that does not wait for
 * everyone. Each mutation is a lowering function wrapping the real one. */
#include <string.h>

#include "core/sched.h"
#include "support/testutil.h"

static core_sched_desc_t desc(herd_coll_t coll, herd_algo_t algo, int p,
                              uint64_t count)
{
    core_sched_desc_t d = {.coll = coll,
                           .algo = algo,
                           .nranks = p,
                           .count = count,
                           .elem_size = 4,
                           .channels = 1};
    return d;
}

/* Index of the k-th step of `kind` (k from 0), or -1. */
static int64_t nth(const core_sched_t *s, core_step_kind_t kind, int k)
{
    for (uint32_t i = 0; i < s->nsteps; i++)
        if (s->steps[i].kind == kind && k-- == 0)
            return i;
    return -1;
}

static herd_status_t lower_wrong_offset(const core_sched_desc_t *d,
                                        core_sched_t *s)
{
    herd_status_t st = core_sched_lower(d, s);
    if (st == HERD_OK && d->rank == 2) {
        int64_t i = nth(s, CORE_STEP_RECV_REDUCE, 1);
        s->steps[i].dst_off = (s->steps[i].dst_off + 4) % d->count;
    }
    return st;
}

static herd_status_t lower_out_of_range(const core_sched_desc_t *d,
                                        core_sched_t *s)
{
    herd_status_t st = core_sched_lower(d, s);
    if (st == HERD_OK && d->rank == 1)
        s->steps[nth(s, CORE_STEP_RECV, 0)].dst_off = d->count;
    return st;
}

static herd_status_t lower_writes_in(const core_sched_desc_t *d,
                                     core_sched_t *s)
{
    herd_status_t st = core_sched_lower(d, s);
    if (st == HERD_OK && d->rank == 1)
        s->steps[nth(s, CORE_STEP_RECV, 0)].dst_buf = CORE_BUF_IN;
    return st;
}

static herd_status_t lower_bad_channel(const core_sched_desc_t *d,
                                       core_sched_t *s)
{
    herd_status_t st = core_sched_lower(d, s);
    if (st == HERD_OK && d->rank == 0)
        s->steps[0].channel = (uint16_t)d->channels;
    return st;
}

static herd_status_t lower_missing_dep(const core_sched_desc_t *d,
                                       core_sched_t *s)
{
    herd_status_t st = core_sched_lower(d, s);
    if (st == HERD_OK && d->rank == 1)
        s->steps[nth(s, CORE_STEP_SEND, 1)].ndeps = 0;
    return st;
}

/* ring reduce_scatter reuses scratch slots: drop the dependency that
 * keeps a partial sum from being overwritten before it is sent on. */
static herd_status_t lower_missing_war(const core_sched_desc_t *d,
                                       core_sched_t *s)
{
    herd_status_t st = core_sched_lower(d, s);
    if (st == HERD_OK && d->rank == 0)
        s->steps[nth(s, CORE_STEP_RECV_REDUCE, 2)].ndeps = 0;
    return st;
}

static herd_status_t lower_dropped(const core_sched_desc_t *d, core_sched_t *s)
{
    herd_status_t st = core_sched_lower(d, s);
    if (st == HERD_OK && d->rank == 0)
        s->nsteps--;
    return st;
}

static herd_status_t lower_count(const core_sched_desc_t *d, core_sched_t *s)
{
    herd_status_t st = core_sched_lower(d, s);
    if (st == HERD_OK && d->rank == 3)
        s->steps[nth(s, CORE_STEP_SEND, 0)].count--;
    return st;
}

/* p = 2 all_reduce where each rank first waits for the other's data. */
static herd_status_t lower_cycle(const core_sched_desc_t *d, core_sched_t *s)
{
    memset(s, 0, sizeof(*s));
    s->desc = *d;
    int peer = 1 - d->rank;
    int64_t rr = core_sched_add(s, CORE_STEP_RECV_REDUCE, peer, 0, CORE_BUF_IN,
                                0, CORE_BUF_OUT, 0, d->count, NULL, 0);
    core_sched_add(s, CORE_STEP_SEND, peer, 0, CORE_BUF_IN, 0, CORE_BUF_NONE, 0,
                   d->count, &rr, 1);
    return HERD_OK;
}

/* Correct with buffered sends, deadlocks when a send completes only with
 * its receive: each rank's receive waits for its own send to finish. */
static herd_status_t lower_rdv(const core_sched_desc_t *d, core_sched_t *s)
{
    memset(s, 0, sizeof(*s));
    s->desc = *d;
    int peer = 1 - d->rank;
    int64_t sd = core_sched_add(s, CORE_STEP_SEND, peer, 0, CORE_BUF_IN, 0,
                                CORE_BUF_NONE, 0, d->count, NULL, 0);
    core_sched_add(s, CORE_STEP_RECV_REDUCE, peer, 0, CORE_BUF_IN, 0,
                   CORE_BUF_OUT, 0, d->count, &sd, 1);
    return HERD_OK;
}

/* Dissemination without chaining the receives: round k's send does not
 * carry what round k-2 heard. */
static herd_status_t lower_bad_barrier(const core_sched_desc_t *d,
                                       core_sched_t *s)
{
    memset(s, 0, sizeof(*s));
    s->desc = *d;
    int p = d->nranks, r = d->rank;
    int64_t got = -1;
    for (int k = 1; k < p; k *= 2) {
        core_sched_add(s, CORE_STEP_SEND, (r + k) % p, 0, CORE_BUF_NONE, 0,
                       CORE_BUF_NONE, 0, 0, &got, 1);
        got = core_sched_add(s, CORE_STEP_RECV, (r - k + p) % p, 0,
                             CORE_BUF_NONE, 0, CORE_BUF_NONE, 0, 0, NULL, 0);
    }
    return HERD_OK;
}

static void expect_fail(const core_sched_desc_t *d, core_sched_lower_fn fn,
                        const char *needle)
{
    char why[512];
    herd_status_t st = core_sched_verify(d, fn, why, sizeof(why));
    ck_assert_int_ne(st, HERD_OK);
    ck_assert_msg(strstr(why, needle), "reason '%s' lacks '%s'", why, needle);
}

START_TEST(test_good_passes)
{
    char why[512];
    core_sched_desc_t d = desc(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 8, 64);
    ck_assert_int_eq(core_sched_verify(&d, NULL, why, sizeof(why)), HERD_OK);
    ck_assert_int_eq(core_sched_verify(&d, core_sched_lower, why, sizeof(why)),
                     HERD_OK);
}
END_TEST

START_TEST(test_wrong_offset)
{
    core_sched_desc_t d = desc(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4, 16);
    expect_fail(&d, lower_wrong_offset, "is wrong");
}
END_TEST

START_TEST(test_static_checks)
{
    core_sched_desc_t d = desc(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4, 16);
    expect_fail(&d, lower_out_of_range, "writes outside its destination");
    expect_fail(&d, lower_writes_in, "writes the input buffer");
    d.channels = 2;
    expect_fail(&d, lower_bad_channel, "uses channel 2 of 2");
}
END_TEST

START_TEST(test_missing_dep)
{
    core_sched_desc_t d = desc(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4, 16);
    expect_fail(&d, lower_missing_dep, "is wrong");
}
END_TEST

START_TEST(test_missing_war)
{
    core_sched_desc_t d = desc(HERD_COLL_REDUCE_SCATTER, HERD_ALGO_RING, 6, 4);
    char why[512];
    ck_assert_int_eq(core_sched_verify(&d, NULL, why, sizeof(why)), HERD_OK);
    expect_fail(&d, lower_missing_war, "is wrong");
}
END_TEST

START_TEST(test_dropped_step)
{
    core_sched_desc_t d = desc(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 4, 16);
    expect_fail(&d, lower_dropped, "no matching receive");
}
END_TEST

START_TEST(test_count_mismatch)
{
    core_sched_desc_t d = desc(HERD_COLL_ALL_GATHER, HERD_ALGO_RING, 5, 7);
    expect_fail(&d, lower_count, "counts differ");
}
END_TEST

START_TEST(test_cycle)
{
    core_sched_desc_t d = desc(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 2, 8);
    expect_fail(&d, lower_cycle, "deadlock");
}
END_TEST

START_TEST(test_rendezvous_deadlock)
{
    core_sched_desc_t d = desc(HERD_COLL_ALL_REDUCE, HERD_ALGO_RING, 2, 8);
    expect_fail(&d, lower_rdv, "deadlock (order 'rendezvous')");
}
END_TEST

START_TEST(test_bad_barrier)
{
    core_sched_desc_t d = desc(HERD_COLL_BARRIER, HERD_ALGO_RHD, 6, 0);
    expect_fail(&d, lower_bad_barrier, "without hearing from");
}
END_TEST

START_TEST(test_lower_errors)
{
    char why[512];
    core_sched_desc_t d = desc(HERD_COLL_ALL_TO_ALL, HERD_ALGO_RING, 4, 8);
    ck_assert_int_eq(core_sched_verify(&d, NULL, why, sizeof(why)),
                     HERD_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(why, "lowering rank 0 failed"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sched_broken");
    TCase *tc = tcase_create("verifier");
    tcase_add_test(tc, test_good_passes);
    tcase_add_test(tc, test_wrong_offset);
    tcase_add_test(tc, test_static_checks);
    tcase_add_test(tc, test_missing_dep);
    tcase_add_test(tc, test_missing_war);
    tcase_add_test(tc, test_dropped_step);
    tcase_add_test(tc, test_count_mismatch);
    tcase_add_test(tc, test_cycle);
    tcase_add_test(tc, test_rendezvous_deadlock);
    tcase_add_test(tc, test_bad_barrier);
    tcase_add_test(tc, test_lower_errors);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
