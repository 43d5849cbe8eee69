/* tests/sim_correct.c - with real buffers the simulator computes the
 * results too: every collective, with every algorithm that implements
 * it, returns the right data on a few world sizes (1, 2, 3, 4, 5, 8). */
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "core/sched.h"
#include "support/testutil.h"

typedef struct job {
    herd_coll_t coll;
    herd_algo_t algo;
    herd_op_t op;
    size_t count;
    int root;
    int in_place;
    int channels;
    size_t chunk;
} job_t;

static int32_t val(int r, size_t i)
{
    return (int32_t)((r + 1) * (i + 3) % 1009);
}

static int32_t red(herd_op_t op, int p, size_t i)
{
    int32_t acc = val(0, i);
    for (int r = 1; r < p; r++) {
        int32_t v = val(r, i);
        switch (op) {
        case HERD_MAX:
            acc = v > acc ? v : acc;
            break;
        case HERD_BXOR:
            acc ^= v;
            break;
        default:
            acc += v;
        }
    }
    return op == HERD_AVG ? acc / p : acc;
}

static int check_out(const job_t *j, int r, int p, const int32_t *out)
{
    size_t n = j->count;
    for (size_t i = 0; i < n; i++) {
        int32_t want;
        switch (j->coll) {
        case HERD_COLL_ALL_REDUCE:
            want = red(j->op, p, i);
            break;
        case HERD_COLL_REDUCE:
            want = red(j->op, p, i);
            break;
        case HERD_COLL_BROADCAST:
            want = val(j->root, i);
            break;
        case HERD_COLL_SCATTER:
            want = val(j->root, (size_t)r * n + i);
            break;
        case HERD_COLL_REDUCE_SCATTER:
            want = red(j->op, p, (size_t)r * n + i);
            break;
        default:
            return 0;
        }
        if (out[i] != want)
            return 1;
    }
    return 0;
}

static int check_gathered(const job_t *j, int r, int p, const int32_t *out)
{
    size_t n = j->count;
    for (int s = 0; s < p; s++)
        for (size_t i = 0; i < n; i++) {
            int32_t want = j->coll == HERD_COLL_ALL_TO_ALL
                               ? val(s, (size_t)r * n + i)
                               : val(s, i);
            if (out[(size_t)s * n + i] != want)
                return 1;
        }
    return 0;
}

static herd_status_t call(herd_comm_t *c, const job_t *j, int32_t *in,
                          int32_t *out)
{
    size_t n = j->count;
    switch (j->coll) {
    case HERD_COLL_ALL_REDUCE:
        return herd_all_reduce(c, j->in_place ? out : in, out, n, HERD_INT32,
                               j->op, NULL);
    case HERD_COLL_BROADCAST:
        return herd_broadcast(c, out, n, HERD_INT32, j->root, NULL);
    case HERD_COLL_REDUCE:
        return herd_reduce(c, in, out, n, HERD_INT32, j->op, j->root, NULL);
    case HERD_COLL_ALL_GATHER:
        return herd_all_gather(c, in, out, n, HERD_INT32, NULL);
    case HERD_COLL_GATHER:
        return herd_gather(c, in, out, n, HERD_INT32, j->root, NULL);
    case HERD_COLL_SCATTER:
        return herd_scatter(c, in, out, n, HERD_INT32, j->root, NULL);
    case HERD_COLL_REDUCE_SCATTER:
        return herd_reduce_scatter(c, in, out, n, HERD_INT32, j->op, NULL);
    case HERD_COLL_ALL_TO_ALL:
        return herd_all_to_all(c, in, out, n, HERD_INT32, NULL);
    default:
        return herd_barrier(c, NULL);
    }
}

static void fill_in(const job_t *j, int r, int p, int32_t *in, int32_t *out)
{
    size_t big = j->count * (size_t)p;
    for (size_t i = 0; i < big; i++)
        in[i] = val(r, i);
    for (size_t i = 0; i < big; i++)
        out[i] = -1;
    if (j->coll == HERD_COLL_BROADCAST && r == j->root)
        for (size_t i = 0; i < j->count; i++)
            out[i] = val(r, i);
    if (j->coll == HERD_COLL_ALL_REDUCE && j->in_place)
        for (size_t i = 0; i < j->count; i++)
            out[i] = val(r, i);
}

static int prog(herd_comm_t *c, void *arg)
{
    const job_t *j = arg;
    int r = herd_comm_rank(c), p = herd_comm_size(c);
    herd_comm_set_algo(c, j->coll, j->algo);
    herd_comm_set_channels(c, j->channels, j->chunk);
    size_t big = j->count * (size_t)p;
    int32_t *in = malloc(big * sizeof(int32_t) + 4);
    int32_t *out = malloc(big * sizeof(int32_t) + 4);
    int rc = 0;
    fill_in(j, r, p, in, out);
    if (call(c, j, in, out) != HERD_OK)
        rc = 10;
    else if (j->coll == HERD_COLL_ALL_GATHER ||
             j->coll == HERD_COLL_ALL_TO_ALL ||
             (j->coll == HERD_COLL_GATHER && r == j->root))
        rc = check_gathered(j, r, p, out);
    else if ((j->coll != HERD_COLL_REDUCE || r == j->root) &&
             j->coll != HERD_COLL_GATHER)
        rc = check_out(j, r, p, out);
    free(in);
    free(out);
    return rc;
}

static void run_job(job_t *j, int p)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = 1;
    o.cluster.gpus_per_node = p;
    o.real_buffers = 1;
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    herd_run_info_t info;
    herd_status_t st = herd_run(&init, prog, j, &info);
    ck_assert_msg(st == HERD_OK,
                  "%s/%s p=%d count=%zu root=%d op=%s: %s (rank %d rc %d)",
                  herd_coll_name(j->coll), herd_algo_name(j->algo), p, j->count,
                  j->root, herd_op_name(j->op), herd_status_string(st),
                  info.failed_rank, info.exit_code);
    herd_run_info_clear(&info);
}

static const int sizes[] = {1, 2, 3, 4, 5, 8};

static void all_algos(herd_coll_t coll, herd_op_t op)
{
    for (int a = 0; a < HERD_ALGO_NCCL; a++) {
        if (!core_sched_supports((herd_algo_t)a, coll))
            continue;
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            int p = sizes[k];
            job_t j = {.coll = coll,
                       .algo = (herd_algo_t)a,
                       .op = op,
                       .count = 37,
                       .root = p - 1,
                       .channels = 2,
                       .chunk = 24};
            run_job(&j, p);
            j.count = 5;
            j.root = 0;
            j.channels = 1;
            j.chunk = 0;
            run_job(&j, p);
        }
    }
}

START_TEST(all_reduce_sum)
{
    all_algos(HERD_COLL_ALL_REDUCE, HERD_SUM);
}
END_TEST
START_TEST(all_reduce_max_bxor_avg)
{
    all_algos(HERD_COLL_ALL_REDUCE, HERD_MAX);
    all_algos(HERD_COLL_ALL_REDUCE, HERD_BXOR);
    all_algos(HERD_COLL_ALL_REDUCE, HERD_AVG);
}
END_TEST
START_TEST(all_reduce_in_place)
{
    job_t j = {.coll = HERD_COLL_ALL_REDUCE,
               .algo = HERD_ALGO_RING,
               .op = HERD_SUM,
               .count = 100,
               .in_place = 1,
               .channels = 3,
               .chunk = 40};
    run_job(&j, 5);
}
END_TEST
START_TEST(broadcast)
{
    all_algos(HERD_COLL_BROADCAST, HERD_SUM);
}
END_TEST
START_TEST(reduce)
{
    all_algos(HERD_COLL_REDUCE, HERD_SUM);
}
END_TEST
START_TEST(all_gather)
{
    all_algos(HERD_COLL_ALL_GATHER, HERD_SUM);
}
END_TEST
START_TEST(gather)
{
    all_algos(HERD_COLL_GATHER, HERD_SUM);
}
END_TEST
START_TEST(scatter)
{
    all_algos(HERD_COLL_SCATTER, HERD_SUM);
}
END_TEST
START_TEST(reduce_scatter)
{
    all_algos(HERD_COLL_REDUCE_SCATTER, HERD_SUM);
}
END_TEST
START_TEST(all_to_all)
{
    all_algos(HERD_COLL_ALL_TO_ALL, HERD_SUM);
}
END_TEST
/* Steps that wait for 7 or more others (rhd's last steps and binomial
 * gather's root at 64 ranks) are counted apart from the wait bytes. */
START_TEST(wide_fan_in)
{
    job_t j = {.coll = HERD_COLL_ALL_REDUCE,
               .algo = HERD_ALGO_RHD,
               .op = HERD_SUM,
               .count = 200,
               .channels = 2,
               .chunk = 64};
    run_job(&j, 64);
    j.coll = HERD_COLL_GATHER;
    j.algo = HERD_ALGO_BINOMIAL;
    j.count = 3;
    j.channels = 1;
    j.chunk = 0;
    run_job(&j, 64);
}
END_TEST

START_TEST(barrier)
{
    all_algos(HERD_COLL_BARRIER, HERD_SUM);
}
END_TEST

/* Two all_reduces in flight at once on the same channels, and one on a
 * subgroup: matching stays per collective. */
static int prog_concurrent(herd_comm_t *c, void *arg)
{
    int r = herd_comm_rank(c), p = herd_comm_size(c);
    int32_t a[64], b[64], g[8];
    for (int i = 0; i < 64; i++) {
        a[i] = r + i;
        b[i] = 1000 * r - i;
    }
    herd_comm_set_channels(c, 2, 16);
    herd_req_t *ra, *rb;
    if (herd_all_reduce(c, a, a, 64, HERD_INT32, HERD_SUM, &ra) ||
        herd_all_reduce(c, b, b, 64, HERD_INT32, HERD_MAX, &rb))
        return 1;
    if (herd_req_wait(rb) || herd_req_wait(ra))
        return 2;
    herd_req_free(ra);
    herd_req_free(rb);
    for (int i = 0; i < 64; i++)
        if (a[i] != p * (p - 1) / 2 + p * i || b[i] != 1000 * (p - 1) - i)
            return 3;
    int odd[3] = {1, 3, 5};
    herd_comm_t *grp = NULL;
    if (herd_new_group(c, odd, 3, &grp))
        return 4;
    if (!grp)
        return 0;
    for (int i = 0; i < 8; i++)
        g[i] = r * i;
    int rc = herd_all_reduce(grp, g, g, 8, HERD_INT32, HERD_SUM, NULL) ? 5 : 0;
    for (int i = 0; i < 8 && !rc; i++)
        if (g[i] != 9 * i)
            rc = 6;
    herd_comm_destroy(grp);
    return rc;
}

START_TEST(concurrent_and_groups)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.gpus_per_node = 6;
    o.real_buffers = 1;
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    herd_run_info_t info;
    ck_assert_int_eq(herd_run(&init, prog_concurrent, NULL, &info), HERD_OK);
    herd_run_info_clear(&info);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_correct");
    TCase *t = tcase_create("real_buffers");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, all_reduce_sum);
    tcase_add_test(t, all_reduce_max_bxor_avg);
    tcase_add_test(t, all_reduce_in_place);
    tcase_add_test(t, broadcast);
    tcase_add_test(t, reduce);
    tcase_add_test(t, all_gather);
    tcase_add_test(t, gather);
    tcase_add_test(t, scatter);
    tcase_add_test(t, reduce_scatter);
    tcase_add_test(t, all_to_all);
    tcase_add_test(t, barrier);
    tcase_add_test(t, wide_fan_in);
    tcase_add_test(t, concurrent_and_groups);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
