/* tests/ddp_buckets.c - DDP bucket assignment against real PyTorch.
 *
 * For every file in tests/data/ddp/buckets/ and every cap in it, the
 * initial (single and find_unused) and rebuilt assignments must equal the
 * reducer_order torch produced: same buckets, same members in the same
 * order, same limits and bytes. Checked in-process and through
 * `herd ddp buckets`. Also: the model loader rejects bad files clearly. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "workload/ddp/bucket.h"
#include "workload/ddp/model.h"

/* Compare an assignment with a reference {bucket_indices,
 * per_bucket_size_limits, bucket_bytes} object. */
static void check_same(const ddp_buckets_t *bs, json_t *ref, const char *what)
{
    json_t *idx = json_object_get(ref, "bucket_indices");
    json_t *lim = json_object_get(ref, "per_bucket_size_limits");
    json_t *bytes = json_object_get(ref, "bucket_bytes");
    ck_assert_msg(idx && lim && bytes, "%s: reference keys missing", what);
    ck_assert_msg(json_array_size(idx) == bs->n, "%s: %zu buckets, torch %zu",
                  what, bs->n, json_array_size(idx));
    for (size_t k = 0; k < bs->n; k++) {
        json_t *b = json_array_get(idx, k);
        ck_assert_msg(json_array_size(b) == bs->b[k].nparams,
                      "%s: bucket %zu size %zu, torch %zu", what, k,
                      bs->b[k].nparams, json_array_size(b));
        for (size_t j = 0; j < bs->b[k].nparams; j++)
            ck_assert_msg((size_t)json_integer_value(json_array_get(b, j)) ==
                              bs->b[k].params[j],
                          "%s: bucket %zu entry %zu differs", what, k, j);
        ck_assert_msg((uint64_t)json_integer_value(json_array_get(lim, k)) ==
                          bs->b[k].limit,
                      "%s: bucket %zu limit differs", what, k);
        ck_assert_msg((uint64_t)json_integer_value(json_array_get(bytes, k)) ==
                          bs->b[k].bytes,
                      "%s: bucket %zu bytes differ", what, k);
    }
}

typedef struct ref_file {
    char name[256];
    json_t *root;
    ddp_model_t model;
    size_t *ready;
} ref_file_t;

static void ref_open(const char *fname, ref_file_t *r)
{
    char p[1024], rel[512], err[512];
    snprintf(r->name, sizeof(r->name), "%.*s", (int)(strlen(fname) - 5), fname);
    snprintf(rel, sizeof(rel), "ddp/buckets/%s", fname);
    json_error_t je;
    r->root = json_load_file(tu_data_path(p, sizeof(p), rel), 0, &je);
    ck_assert_msg(r->root, "%s: %s", p, je.text);
    snprintf(rel, sizeof(rel), "ddp/models/%s.json", r->name);
    ck_assert_msg(ddp_model_load(tu_data_path(p, sizeof(p), rel), &r->model,
                                 err, sizeof(err)) == HERD_OK,
                  "%s", err);
    json_t *order = json_object_get(r->root, "grad_ready_order");
    ck_assert_uint_eq(json_array_size(order), r->model.nparams);
    r->ready = calloc(r->model.nparams, sizeof(size_t));
    for (size_t i = 0; i < r->model.nparams; i++)
        r->ready[i] = (size_t)json_integer_value(json_array_get(order, i));
}

static void ref_close(ref_file_t *r)
{
    free(r->ready);
    ddp_model_fini(&r->model);
    json_decref(r->root);
}

static void check_cap(ref_file_t *r, json_t *cap)
{
    uint64_t cap_bytes =
        (uint64_t)json_integer_value(json_object_get(cap, "bucket_bytes_cap"));
    double mb = json_number_value(json_object_get(cap, "bucket_cap_mb"));
    ck_assert_uint_eq(ddp_cap_bytes(mb), cap_bytes);
    static const struct {
        const char *key;
        ddp_phase_t phase;
        int find_unused;
    } cases[] = {{"initial_single", DDP_PHASE_INITIAL, 0},
                 {"initial_find_unused", DDP_PHASE_INITIAL, 1},
                 {"rebuilt", DDP_PHASE_REBUILT, 0}};
    for (size_t c = 0; c < 3; c++) {
        char what[400];
        snprintf(what, sizeof(what), "%s cap %g %s", r->name, mb, cases[c].key);
        ddp_buckets_t bs;
        ck_assert_int_eq(ddp_bucket_for_phase(&r->model, cases[c].phase,
                                              cap_bytes, cases[c].find_unused,
                                              0, r->ready, NULL, &bs),
                         HERD_OK);
        json_t *ref = json_object_get(json_object_get(cap, cases[c].key),
                                      "reducer_order");
        check_same(&bs, ref, what);
        ddp_buckets_fini(&bs);
    }
}

/* Iterate over every reference file; `fn` checks one. */
static int for_each_ref(void (*fn)(ref_file_t *))
{
    char dir[1024];
    DIR *d = opendir(tu_data_path(dir, sizeof(dir), "ddp/buckets"));
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        ref_file_t r;
        memset(&r, 0, sizeof(r));
        ref_open(e->d_name, &r);
        fn(&r);
        ref_close(&r);
        n++;
    }
    closedir(d);
    return n;
}

static void check_file_inproc(ref_file_t *r)
{
    json_t *caps = json_object_get(r->root, "caps");
    ck_assert(json_array_size(caps) > 0);
    for (size_t i = 0; i < json_array_size(caps); i++)
        check_cap(r, json_array_get(caps, i));
}

START_TEST(test_reference_inprocess)
{
    ck_assert_int_ge(for_each_ref(check_file_inproc), 5);
}
END_TEST

/* Run `herd ddp buckets` and compare its JSON with the reference. */
static void cli_case(ref_file_t *r, json_t *cap, const char *key,
                     const char *flags, const char *ready_file)
{
    char cmd[4096], model[1024], rel[512];
    snprintf(rel, sizeof(rel), "ddp/models/%s.json", r->name);
    double mb = json_number_value(json_object_get(cap, "bucket_cap_mb"));
    snprintf(cmd, sizeof(cmd), "%s ddp buckets %s --bucket-cap-mb %g %s%s%s",
             tu_herd_binary(), tu_data_path(model, sizeof(model), rel), mb,
             flags, ready_file ? " --ready-order " : "",
             ready_file ? ready_file : "");
    char *out = NULL;
    ck_assert_msg(tu_run(cmd, &out) == 0, "%s failed: %s", cmd, out);
    json_error_t je;
    json_t *got = json_loads(out, 0, &je);
    ck_assert_msg(got, "%s: not JSON: %s", cmd, out);
    json_t *ref = json_object_get(json_object_get(cap, key), "reducer_order");
    static const char *keys[] = {"bucket_indices", "per_bucket_size_limits",
                                 "bucket_bytes"};
    for (int k = 0; k < 3; k++)
        ck_assert_msg(json_equal(json_object_get(got, keys[k]),
                                 json_object_get(ref, keys[k])),
                      "%s: %s differs from torch", cmd, keys[k]);
    json_decref(got);
    free(out);
}

static void check_file_cli(ref_file_t *r)
{
    char *dir = tu_tmpdir(), ready[1024];
    snprintf(ready, sizeof(ready), "%s/ready.json", dir);
    ck_assert_int_eq(
        json_dump_file(json_object_get(r->root, "grad_ready_order"), ready, 0),
        0);
    json_t *caps = json_object_get(r->root, "caps");
    for (size_t i = 0; i < json_array_size(caps); i++) {
        json_t *cap = json_array_get(caps, i);
        cli_case(r, cap, "initial_single", "--phase initial", NULL);
        cli_case(r, cap, "initial_single", "--phase initial --static-graph",
                 NULL);
        cli_case(r, cap, "initial_find_unused",
                 "--phase initial --find-unused-parameters", NULL);
        cli_case(r, cap, "rebuilt", "--phase rebuilt", ready);
        cli_case(r, cap, "rebuilt", "--phase rebuilt --static-graph", ready);
    }
    remove(ready);
    remove(dir);
    free(dir);
}

START_TEST(test_reference_cli)
{
    ck_assert_int_ge(for_each_ref(check_file_cli), 5);
}
END_TEST

/* Without --ready-order, a model's own grad_ready_order is used; without
 * one either, reverse index order. Mixed dtypes get a bucket each. */
START_TEST(test_dtype_split_and_default_order)
{
    char *dir = tu_tmpdir(), path[1024], err[256];
    snprintf(path, sizeof(path), "%s/m.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\":\"mix\",\"params\":["
          "{\"shape\":[262144],\"dtype\":\"float32\"},"
          "{\"shape\":[1000],\"dtype\":\"float16\"},"
          "{\"shape\":[262144],\"dtype\":\"float32\"},"
          "{\"shape\":[10],\"dtype\":\"float32\"}]}",
          f);
    fclose(f);
    ddp_model_t m;
    ck_assert_int_eq(ddp_model_load(path, &m, err, sizeof(err)), HERD_OK);
    ddp_buckets_t bs;
    ck_assert_int_eq(ddp_bucket_for_phase(&m, DDP_PHASE_REBUILT, 1 << 20, 0, 0,
                                          NULL, NULL, &bs),
                     HERD_OK);
    /* ready order 3,2,1,0: {3,2} crosses 1 MiB and closes (the crossing
     * tensor stays), {0} closes too, the open fp16 {1} is flushed last. */
    ck_assert_uint_eq(bs.n, 3);
    ck_assert_uint_eq(bs.b[0].nparams, 2);
    ck_assert_uint_eq(bs.b[0].params[0], 3);
    ck_assert_uint_eq(bs.b[0].params[1], 2);
    ck_assert_uint_eq(bs.b[1].params[0], 0);
    ck_assert_int_eq(bs.b[2].dtype, HERD_FLOAT16);
    ck_assert_uint_eq(bs.bucket_of[1], 2);
    ddp_buckets_fini(&bs);
    /* fp16 gradients halve the bytes: 2 x 512 KiB = one 1 MiB bucket */
    herd_dtype_t half = HERD_FLOAT16;
    ck_assert_int_eq(ddp_bucket_for_phase(&m, DDP_PHASE_REBUILT, 1 << 20, 0, 0,
                                          NULL, &half, &bs),
                     HERD_OK);
    ck_assert_uint_eq(bs.n, 1);
    ck_assert_uint_eq(bs.b[0].bytes, (262144 * 2 + 1010) * 2);
    ddp_buckets_fini(&bs);
    ddp_model_fini(&m);
    remove(path);
    remove(dir);
    free(dir);
}
END_TEST

static char *write_tmp(const char *dir, const char *name, const char *text)
{
    char *p = malloc(1024);
    snprintf(p, 1024, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    return p;
}

START_TEST(test_bad_inputs)
{
    char *dir = tu_tmpdir(), cmd[4096], *out = NULL;
    char *bad =
        write_tmp(dir, "bad.json", "{\"params\": [\n {\"shape\": [2,\n");
    snprintf(cmd, sizeof(cmd), "%s ddp buckets %s 2>&1", tu_herd_binary(), bad);
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "bad.json:3:"), "no file:line: %s", out);
    free(out);
    char *wrong =
        write_tmp(dir, "wrong.json",
                  "{\"params\":[{\"shape\":[4],\"numel\":4,\"bytes\":15}]}");
    snprintf(cmd, sizeof(cmd), "%s ddp buckets %s 2>&1", tu_herd_binary(),
             wrong);
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "params[0].bytes"), "field not named: %s", out);
    free(out);
    char *good = write_tmp(dir, "good.json",
                           "{\"params\":[{\"shape\":[4]},{\"shape\":[4]}]}");
    char *order = write_tmp(dir, "order.json", "[1, 1]");
    snprintf(cmd, sizeof(cmd),
             "%s ddp buckets %s --phase rebuilt "
             "--ready-order %s 2>&1",
             tu_herd_binary(), good, order);
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    ck_assert_msg(strstr(out, "repeated"), "bad order accepted: %s", out);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s ddp buckets %s --bucket-cap-mb x 2>&1",
             tu_herd_binary(), good);
    ck_assert_int_eq(tu_run(cmd, &out), 2);
    free(out);
    remove(bad), remove(wrong), remove(good), remove(order), remove(dir);
    free(bad), free(wrong), free(good), free(order), free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ddp_buckets");
    TCase *tc = tcase_create("reference");
    tcase_add_test(tc, test_reference_inprocess);
    tcase_add_test(tc, test_reference_cli);
    tcase_add_test(tc, test_dtype_split_and_default_order);
    tcase_add_test(tc, test_bad_inputs);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
