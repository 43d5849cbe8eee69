/* tests/sim_stacks.c - where the ranks' stacks come from. Beyond the
 * kernel's mapping budget (vm.max_map_count) the simulator carves stacks
 * from shared mappings without guard pages (HERD_SIM_GUARD_LIMIT forces
 * that mode here with few ranks): results are the same as with guarded
 * stacks, and a rank that overflows its stack ends the run naming it
 * instead of corrupting its neighbour silently. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>
#include <herd/sim.h>

#include "support/testutil.h"

typedef struct st_arg {
    double sum[64];
    uint64_t end_ns;
} st_arg_t;

static int prog_reduce(herd_comm_t *c, void *arg)
{
    st_arg_t *a = arg;
    int r = herd_comm_rank(c);
    float v[256];
    for (int i = 0; i < 256; i++)
        v[i] = (float)(r + i);
    herd_compute(c, 1e-4 * (r % 3), NULL);
    if (herd_all_reduce(c, v, v, 256, HERD_FLOAT32, HERD_SUM, NULL) != HERD_OK)
        return 1;
    a->sum[r] = v[5];
    if (r == 0)
        a->end_ns = herd_now(c);
    return 0;
}

static void run_reduce(const char *guard_limit, st_arg_t *a)
{
    if (guard_limit)
        setenv("HERD_SIM_GUARD_LIMIT", guard_limit, 1);
    else
        unsetenv("HERD_SIM_GUARD_LIMIT");
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = 8;
    o.cluster.gpus_per_node = 8;
    o.real_buffers = 1;
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    memset(a, 0, sizeof(*a));
    ck_assert_int_eq(herd_run(&init, prog_reduce, a, NULL), HERD_OK);
    unsetenv("HERD_SIM_GUARD_LIMIT");
}

START_TEST(pooled_stacks_same_results)
{
    st_arg_t guarded, pooled;
    run_reduce(NULL, &guarded);
    run_reduce("0", &pooled); /* no guarded stack allowed */
    /* sum over 64 ranks of (r + 5) */
    for (int r = 0; r < 64; r++) {
        ck_assert_double_eq(pooled.sum[r], 64 * 5 + 63 * 64 / 2);
        ck_assert_double_eq(pooled.sum[r], guarded.sum[r]);
    }
    ck_assert_uint_gt(pooled.end_ns, 0);
    ck_assert_uint_eq(pooled.end_ns, guarded.end_ns);
}
END_TEST

/* Uses about `depth` x 4 KiB of stack. */
static int deep(int depth)
{
    volatile char buf[4096];
    memset((char *)buf, depth & 0xff, sizeof(buf));
    return depth > 0 ? deep(depth - 1) + buf[17] : buf[9];
}

static int prog_overflow(herd_comm_t *c, void *arg)
{
    size_t stack = *(size_t *)arg;
    if (herd_comm_rank(c) == 3)
        deep((int)(stack / 4096) + 4); /* past the stack's low end */
    return herd_barrier(c, NULL) == HERD_OK ? 0 : 1;
}

START_TEST(overflow_is_caught)
{
    setenv("HERD_SIM_GUARD_LIMIT", "0", 1);
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.gpus_per_node = 8;
    o.stack_bytes = 128 << 10;
    herd_init_t init = {.backend = "sim", .engine_opts = &o};
    herd_run(&init, prog_overflow, &o.stack_bytes, NULL);
    /* not reached: the run aborts when rank 3 switches out */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_stacks");
    TCase *tc = tcase_create("stacks");
    tcase_add_test(tc, pooled_stacks_same_results);
    /* ASan watches stacks itself (and needs larger ones); the canary is
     * what the plain build has in the pooled mode. */
    if (!getenv("HERD_SANITIZED"))
        tcase_add_test_raise_signal(tc, overflow_is_caught, SIGABRT);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
