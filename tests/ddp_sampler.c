/* tests/ddp_sampler.c - DistributedSampler: num_samples, total_size,
 * padding by repetition, drop_last truncation, rank striding, shuffling,
 * unpadded shards and the uneven batch counts they cause, and the
 * `herd ddp sampler` command. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "workload/ddp/sampler.h"

static void expect_indices(ddp_sampler_t *s, int rank, const uint64_t *want,
                           size_t n)
{
    uint64_t got[64];
    ck_assert_uint_eq(ddp_sampler_num_samples(s), n);
    ck_assert_int_eq(ddp_sampler_indices(s, rank, got), HERD_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "rank %d entry %zu: %llu, want %llu",
                      rank, i, (unsigned long long)got[i],
                      (unsigned long long)want[i]);
}

START_TEST(test_padding_and_striding)
{
    ddp_sampler_t s = {.dataset_size = 10, .replicas = 3};
    ck_assert_uint_eq(ddp_sampler_num_samples(&s), 4);
    ck_assert_uint_eq(ddp_sampler_total_size(&s), 12);
    expect_indices(&s, 0, (uint64_t[]){0, 3, 6, 9}, 4);
    expect_indices(&s, 1, (uint64_t[]){1, 4, 7, 0}, 4); /* padded */
    expect_indices(&s, 2, (uint64_t[]){2, 5, 8, 1}, 4);
    /* padding larger than the dataset cycles through it */
    ddp_sampler_t tiny = {.dataset_size = 2, .replicas = 5};
    ck_assert_uint_eq(ddp_sampler_total_size(&tiny), 5);
    expect_indices(&tiny, 2, (uint64_t[]){0}, 1);
    expect_indices(&tiny, 3, (uint64_t[]){1}, 1);
    expect_indices(&tiny, 4, (uint64_t[]){0}, 1);
}
END_TEST

START_TEST(test_drop_last)
{
    ddp_sampler_t s = {.dataset_size = 10, .replicas = 3, .drop_last = 1};
    ck_assert_uint_eq(ddp_sampler_num_samples(&s), 3);
    ck_assert_uint_eq(ddp_sampler_total_size(&s), 9);
    expect_indices(&s, 0, (uint64_t[]){0, 3, 6}, 3);
    expect_indices(&s, 2, (uint64_t[]){2, 5, 8}, 3);
    ddp_sampler_t even = {.dataset_size = 10, .replicas = 5, .drop_last = 1};
    ck_assert_uint_eq(ddp_sampler_num_samples(&even), 2);
    ddp_sampler_t few = {.dataset_size = 2, .replicas = 5, .drop_last = 1};
    ck_assert_uint_eq(ddp_sampler_num_samples(&few), 0);
}
END_TEST

START_TEST(test_shuffle_covers_dataset)
{
    ddp_sampler_t s = {
        .dataset_size = 40, .replicas = 4, .shuffle = 1, .seed = 7};
    int seen[40] = {0};
    uint64_t a[10], b[10];
    for (int r = 0; r < 4; r++) {
        ck_assert_int_eq(ddp_sampler_indices(&s, r, a), HERD_OK);
        for (int i = 0; i < 10; i++)
            seen[a[i]]++;
    }
    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(seen[i], 1);
    ddp_sampler_indices(&s, 0, a);
    ddp_sampler_indices(&s, 0, b);
    ck_assert_mem_eq(a, b, sizeof(a)); /* same seed + epoch: same order */
    s.epoch = 1;
    ddp_sampler_indices(&s, 0, b);
    ck_assert(memcmp(a, b, sizeof(a)) != 0);
    ck_assert_int_eq(ddp_sampler_indices(&s, 4, a), HERD_ERR_INVALID_ARG);
}
END_TEST

START_TEST(test_uneven_shards)
{
    /* Unpadded shards of 10 samples over 3 ranks: 4, 3, 3. With batch
     * size 3 rank 0 runs 2 steps and the others 1: a real job hangs. */
    ck_assert_uint_eq(ddp_shard_samples(10, 3, 0), 4);
    ck_assert_uint_eq(ddp_shard_samples(10, 3, 1), 3);
    ck_assert_uint_eq(ddp_shard_samples(10, 3, 2), 3);
    ck_assert_uint_eq(ddp_loader_batches(4, 3, 0), 2);
    ck_assert_uint_eq(ddp_loader_batches(3, 3, 0), 1);
    ck_assert_uint_eq(ddp_loader_batches(4, 3, 1), 1);
    /* DistributedSampler evens them out */
    ddp_sampler_t s = {.dataset_size = 10, .replicas = 3};
    ck_assert_uint_eq(ddp_loader_batches(ddp_sampler_num_samples(&s), 3, 0), 2);
}
END_TEST

START_TEST(test_cli)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "%s ddp sampler --dataset-size 10 --replicas 3 --batch-size 3 "
             "--shards 2>/dev/null",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    ck_assert_msg(j, "not JSON: %s", out);
    ck_assert(json_is_false(json_object_get(j, "even")));
    json_t *ranks = json_object_get(j, "ranks");
    ck_assert_int_eq(json_integer_value(
                         json_object_get(json_array_get(ranks, 0), "batches")),
                     2);
    json_decref(j);
    free(out);
    snprintf(cmd, sizeof(cmd),
             "%s ddp sampler --dataset-size 10 --replicas 3 --drop-last",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    j = json_loads(out, 0, &je);
    ck_assert_msg(j, "not JSON: %s", out);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "num_samples")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "total_size")), 9);
    ck_assert(json_is_true(json_object_get(j, "even")));
    json_decref(j);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s ddp sampler --replicas 0 2>&1",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_sampler");
    TCase *tc = tcase_create("sampler");
    tcase_add_test(tc, test_padding_and_striding);
    tcase_add_test(tc, test_drop_last);
    tcase_add_test(tc, test_shuffle_covers_dataset);
    tcase_add_test(tc, test_uneven_shards);
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
