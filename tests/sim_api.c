/* tests/sim_api.c - API errors through the sim engine: each bad call
 * returns the right status and leaves a message in herd_last_error(), and
 * the run itself still completes. */
#include <stdint.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "support/testutil.h"

typedef struct result {
    int checked;
    char why[512];
} result_t;

#define EXPECT(call, status, text)                                             \
    do {                                                                       \
        herd_status_t st_ = (call);                                            \
        if (st_ != (status) || !strstr(herd_last_error(c), (text))) {          \
            snprintf(res->why, sizeof(res->why), "%s -> %s / '%s'", #call,     \
                     herd_status_name(st_), herd_last_error(c));               \
            return 1;                                                          \
        }                                                                      \
        res->checked++;                                                        \
    } while (0)

static int prog(herd_comm_t *c, void *arg)
{
    result_t *res = arg;
    if (herd_comm_rank(c) != 0)
        return 0;
    float f[4];
    EXPECT(herd_all_reduce(c, NULL, f, 4, HERD_FLOAT32, HERD_SUM, NULL),
           HERD_ERR_INVALID_ARG, "NULL send buffer");
    EXPECT(herd_broadcast(c, f, 4, HERD_FLOAT32, 4, NULL), HERD_ERR_INVALID_ARG,
           "root 4 out of range");
    EXPECT(herd_send(c, f, 4, HERD_FLOAT32, -1, 0, NULL), HERD_ERR_INVALID_ARG,
           "peer -1 out of range");
    EXPECT(herd_all_reduce(c, f, f, 4, HERD_FLOAT32, HERD_BXOR, NULL),
           HERD_ERR_INVALID_ARG, "bitwise");
    EXPECT(herd_all_reduce(c, f, f, SIZE_MAX / 2, HERD_FLOAT32, HERD_SUM, NULL),
           HERD_ERR_OVERFLOW, "overflows");
    EXPECT(herd_compute(c, -1.0, NULL), HERD_ERR_INVALID_ARG, "duration");
    EXPECT(herd_comm_destroy(c), HERD_ERR_INVALID_ARG, "world communicator");
    EXPECT(herd_free(c, f), HERD_ERR_INVALID_ARG, "not allocated");
    /* the engine still works after the errors */
    if (herd_compute(c, 1e-6, NULL) != HERD_OK || herd_now(c) != 1000)
        return 2;
    return 0;
}

START_TEST(bad_calls)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.gpus_per_node = 4;
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    result_t res = {0};
    herd_status_t st = herd_run(&init, prog, &res, NULL);
    ck_assert_msg(st == HERD_OK, "%s: %s", herd_status_name(st), res.why);
    ck_assert_int_eq(res.checked, 8);
}
END_TEST

static int noop(herd_comm_t *c, void *arg)
{
    return 0;
}

START_TEST(unknown_backend_and_bad_opts)
{
    herd_init_t init = {.backend = "nosuch"};
    ck_assert_int_eq(herd_run(&init, noop, NULL, NULL), HERD_ERR_NOT_FOUND);
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    herd_fault_t f = {.rank = 99, .at_time = 1, .at_step = -1};
    o.faults = &f;
    o.nfaults = 1;
    init.backend = "sim";
    init.engine_opts = &o;
    herd_run_info_t info;
    ck_assert_int_eq(herd_run(&init, noop, NULL, &info), HERD_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(info.report);
    ck_assert_ptr_nonnull(strstr(info.report, "fault rank 99"));
    herd_run_info_clear(&info);
    /* more ranks than GPUs: the network model names the field */
    o.nfaults = 0;
    o.world_size = 100;
    ck_assert_int_eq(herd_run(&init, noop, NULL, &info), HERD_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(info.report);
    ck_assert_ptr_nonnull(strstr(info.report, "world"));
    herd_run_info_clear(&info);
    herd_comm_t *c = NULL;
    ck_assert_int_eq(herd_comm_create(&init, &c), HERD_ERR_UNSUPPORTED);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_api");
    TCase *t = tcase_create("errors");
    tcase_add_test(t, bad_calls);
    tcase_add_test(t, unknown_backend_and_bad_opts);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
