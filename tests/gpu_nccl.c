/* tests/gpu_nccl.c - the GPU engine. Without a CUDA device every test
 * but the "no device" one is skipped (exit 77); on a GPU machine it runs
 * world-size-1 collectives (NCCL's own and a custom core/ schedule), the
 * spin kernel's duration, timeline records and error paths, and issue
 * 15's new calls (uneven collectives, coalesced all_reduce, an empty
 * batch, monitored_barrier, object collectives through device staging),
 * and the flight record: its dump on a GPU, nothing and no crash without
 * one. */
#include <cuda_runtime_api.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine.h"
#include "support/testutil.h"

static int have_gpu(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

static herd_init_t world1(void)
{
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "1", 1);
    setenv("LOCAL_RANK", "0", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "0", 1);
    herd_init_t init = {.backend = "nccl", .timeout_s = 30};
    return init;
}

static int float_prog(herd_comm_t *w, void *arg)
{
    herd_algo_t algo = *(herd_algo_t *)arg;
    const size_t n = 1 << 20;
    float *host = malloc(n * sizeof(float)), *dev = NULL;
    for (size_t i = 0; i < n; i++)
        host[i] = (float)(i % 1000);
    herd_comm_set_algo(w, HERD_COLL_ALL_REDUCE, algo);
    int bad = herd_alloc(w, n * sizeof(float), (void **)&dev) != HERD_OK;
    bad |= cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice) !=
           cudaSuccess;
    bad |= herd_all_reduce(w, dev, dev, n, HERD_FLOAT32, HERD_SUM, NULL) !=
           HERD_OK;
    bad |= herd_broadcast(w, dev, n, HERD_FLOAT32, 0, NULL) != HERD_OK;
    bad |= herd_barrier(w, NULL) != HERD_OK;
    bad |= cudaMemcpy(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost) !=
           cudaSuccess;
    for (size_t i = 0; !bad && i < n; i++)
        bad |= host[i] != (float)(i % 1000);
    herd_free(w, dev);
    free(host);
    return bad;
}

START_TEST(collectives_world1)
{
    herd_algo_t algos[] = {HERD_ALGO_AUTO, HERD_ALGO_RING};
    for (int i = 0; i < 2; i++) {
        herd_init_t init = world1();
        ck_assert_int_eq(herd_run(&init, float_prog, &algos[i], NULL), HERD_OK);
    }
}
END_TEST

/* The new calls on one rank: every path runs (grouped send/recv with the
 * rank's own block copied, reduce_scatter_v's copy, a group post, the
 * host/device copies of the object calls). */
static int calls_prog(herd_comm_t *w, void *arg)
{
    const size_t n = 1000;
    int32_t *host = malloc(n * sizeof(int32_t)), *in = NULL, *out = NULL;
    for (size_t i = 0; i < n; i++)
        host[i] = (int32_t)i;
    size_t cnt[1] = {n};
    int bad = herd_alloc(w, n * 4, (void **)&in) != HERD_OK ||
              herd_alloc(w, n * 4, (void **)&out) != HERD_OK;
    bad |= cudaMemcpy(in, host, n * 4, cudaMemcpyHostToDevice) != cudaSuccess;
    bad |= herd_all_gather_v(w, in, out, cnt, HERD_INT32, NULL) != HERD_OK;
    bad |= herd_reduce_scatter_v(w, out, in, cnt, HERD_INT32, HERD_SUM, NULL) !=
           HERD_OK;
    bad |= herd_all_to_all_v(w, in, n, NULL, out, n, cnt, HERD_INT32, NULL) !=
           HERD_OK;
    const void *s[1] = {out};
    void *r[1] = {in};
    bad |= herd_all_reduce_coalesced(w, s, r, cnt, 1, HERD_INT32, HERD_SUM,
                                     NULL) != HERD_OK;
    bad |= herd_batch_isend_irecv(w, NULL, 0, NULL) != HERD_OK;
    bad |= herd_monitored_barrier(w, 10.0, 1) != HERD_OK;
    memset(host, 0, n * 4);
    bad |= cudaMemcpy(host, in, n * 4, cudaMemcpyDeviceToHost) != cudaSuccess;
    for (size_t i = 0; !bad && i < n; i++)
        bad |= host[i] != (int32_t)i;
    herd_bytes_t obj = {"payload", 7}, got[1] = {{0}};
    bad |= herd_broadcast_bytes(w, &obj, 1, 0, got) != HERD_OK;
    bad |= got[0].len != 7 || memcmp(got[0].data, "payload", 7) != 0;
    herd_bytes_free(got, 1);
    bad |= herd_all_gather_bytes(w, "xyz", 3, got) != HERD_OK;
    bad |= got[0].len != 3 || memcmp(got[0].data, "xyz", 3) != 0;
    herd_bytes_free(got, 1);
    herd_free(w, in);
    herd_free(w, out);
    free(host);
    return bad;
}

START_TEST(new_calls_world1)
{
    herd_init_t init = world1();
    ck_assert_int_eq(herd_run(&init, calls_prog, NULL, NULL), HERD_OK);
}
END_TEST

static int spin_prog(herd_comm_t *w, void *arg)
{
    uint64_t t0 = herd_now(w);
    herd_compute(w, 0.050, "spin");
    *(uint64_t *)arg = herd_now(w) - t0;
    return 0;
}

START_TEST(spin_kernel_takes_its_time)
{
    uint64_t took = 0;
    herd_init_t init = world1();
    ck_assert_int_eq(herd_run(&init, spin_prog, &took, NULL), HERD_OK);
    ck_assert_uint_ge(took, 50000000u); /* never shorter than asked */
}
END_TEST

static int bitwise_prog(herd_comm_t *w, void *arg)
{
    int32_t *dev = NULL;
    herd_alloc(w, 64, (void **)&dev);
    herd_status_t st =
        herd_all_reduce(w, dev, dev, 16, HERD_INT32, HERD_BXOR, NULL);
    int ok = st == HERD_ERR_UNSUPPORTED &&
             strstr(herd_last_error(w), "bitwise") != NULL;
    herd_free(w, dev);
    return ok ? 0 : 1;
}

START_TEST(bitwise_refused)
{
    herd_init_t init = world1();
    ck_assert_int_eq(herd_run(&init, bitwise_prog, NULL, NULL), HERD_OK);
}
END_TEST

/* An all_reduce, a broadcast and a barrier, then the record: three
 * entries, each started and completed, on the host's clock. */
static int flight_prog(herd_comm_t *w, void *arg)
{
    float *dev = NULL;
    int bad = herd_alloc(w, 1024 * sizeof(float), (void **)&dev) != HERD_OK;
    bad |= cudaMemset(dev, 0, 1024 * sizeof(float)) != cudaSuccess;
    bad |= herd_all_reduce(w, dev, dev, 1024, HERD_FLOAT32, HERD_SUM, NULL) !=
           HERD_OK;
    bad |= herd_broadcast(w, dev, 16, HERD_FLOAT32, 0, NULL) != HERD_OK;
    bad |= herd_barrier(w, NULL) != HERD_OK;
    bad |= herd_flight_dump(w, arg) != HERD_OK;
    herd_free(w, dev);
    return bad;
}

START_TEST(flight_dump_world1)
{
    char *dir = tu_tmpdir(), path[600];
    herd_init_t init = world1();
    ck_assert_int_eq(herd_run(&init, flight_prog, dir, NULL), HERD_OK);
    snprintf(path, sizeof(path), "%s/rank0.json", dir);
    json_error_t je;
    json_t *d = json_load_file(path, 0, &je);
    ck_assert_msg(d != NULL, "%s: %s", path, je.text);
    json_t *es = json_object_get(d, "entries");
    ck_assert_str_eq(json_string_value(json_object_get(d, "engine")), "nccl");
    ck_assert_uint_eq(json_array_size(es), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *e = json_array_get(es, i);
        ck_assert_str_eq(json_string_value(json_object_get(e, "state")),
                         "completed");
        ck_assert_int_gt(json_integer_value(json_object_get(e, "t_started_ns")),
                         0);
    }
    json_decref(d);
    char cmd[700], *out = NULL;
    snprintf(cmd, sizeof(cmd), "diagnose %s", dir);
    ck_assert_int_eq(tu_herd(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}
END_TEST

START_TEST(no_device_is_clear)
{
    /* Runs where there is no GPU: the engine must say so and not hang,
     * and a flight directory set for the job gets nothing (no record
     * was ever made), through herd_comm_create and herd_run alike. */
    char *dir = tu_tmpdir(), path[600];
    snprintf(path, sizeof(path), "%s/fr", dir);
    setenv("HERD_FLIGHT_DIR", path, 1);
    herd_init_t init = world1();
    herd_comm_t *c = NULL;
    ck_assert_int_eq(herd_comm_create(&init, &c), HERD_ERR_NO_DEVICE);
    ck_assert_int_eq(herd_run(&init, flight_prog, NULL, NULL),
                     HERD_ERR_NO_DEVICE);
    unsetenv("HERD_FLIGHT_DIR");
    ck_assert_int_ne(access(path, F_OK), 0);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpu_nccl");
    TCase *tc = tcase_create("nccl");
    tcase_set_timeout(tc, 120);
    if (!have_gpu()) {
        /* The one check that makes sense here; then report a skip. */
        tcase_add_test(tc, no_device_is_clear);
        suite_add_tcase(s, tc);
        return tu_run_suite(s) == 0 ? 77 : 1;
    }
    tcase_add_test(tc, collectives_world1);
    tcase_add_test(tc, spin_kernel_takes_its_time);
    tcase_add_test(tc, bitwise_refused);
    tcase_add_test(tc, new_calls_world1);
    tcase_add_test(tc, flight_dump_world1);
    suite_add_tcase(s, tc);
    /* CUDA does not survive fork() once initialised (have_gpu did), so the
     * tests run in this process. */
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
