/* tests/testbed_torch.c - `herd validate --torch`: real PyTorch DDP (gloo,
 * Debian's python3-torch) on the testbed, 2 ranks, a tiny model with a
 * one-gradient straggler, compared with herd's prediction. Asserts the
 * report's structure (bucket and step rows, the PyTorch version) and
 * that every row has a finite, positive prediction and measurement; no
 * timing bounds. Skips (77) when not root, without network namespaces, or
 * where /usr/bin/python3 cannot import torch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real/testbed/testbed.h"
#include "support/testutil.h"

#define herd tu_herd

static const char model[] =
    "{\"model\": \"tiny\",\n"
    " \"compute\": {\"forward_s\": 0.01, \"backward_s\": 0.02,"
    " \"optimizer_s\": 0.002, \"buffer_bytes\": 1024},\n"
    " \"params\": [\n"
    "  {\"index\": 0, \"name\": \"l0.weight\", \"shape\": [256, 512],"
    " \"dtype\": \"float32\", \"numel\": 131072, \"bytes\": 524288},\n"
    "  {\"index\": 1, \"name\": \"l0.bias\", \"shape\": [256],"
    " \"dtype\": \"float32\", \"numel\": 256, \"bytes\": 1024},\n"
    "  {\"index\": 2, \"name\": \"l1.weight\", \"shape\": [512, 512],"
    " \"dtype\": \"float32\", \"numel\": 262144, \"bytes\": 1048576},\n"
    "  {\"index\": 3, \"name\": \"l1.bias\", \"shape\": [512],"
    " \"dtype\": \"float32\", \"numel\": 512, \"bytes\": 2048}\n"
    " ]}\n";

static const char scenario[] =
    "name: tiny-torch\n"
    "cluster:\n"
    "  nodes: 2\n"
    "  gpus_per_node: 1\n"
    "  intra: {bandwidth: 10GB/s, latency: 5us}\n"
    "  inter: {bandwidth: 200Mbps, latency: 50us}\n"
    "collectives:\n"
    "  algorithm: ring\n"
    "workload:\n"
    "  ddp:\n"
    "    model: tiny.json\n"
    "    bucket_cap_mb: 1\n"
    "    steps: 4\n"
    "stragglers:\n"
    "  grads:\n"
    "    - {rank: 1, param: l1.weight, delay: 20ms}\n"
    "seed: 1\n";

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Every table row of kind `name` ("| all_reduce |", "| step |"): count
 * them and check predicted and measured (the 7th and 8th cells) are
 * finite and > 0. */
static int check_rows(const char *md, const char *name)
{
    char head[64];
    int n = 0;
    snprintf(head, sizeof(head), "\n| %s |", name);
    for (const char *p = strstr(md, head); p; p = strstr(p + 1, head)) {
        const char *c = p + 1;
        double v[2];
        for (int cell = 0; cell < 5; cell++)
            c = strchr(c + 1, '|');
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(sscanf(c, "| %lf | %lf |", &v[0], &v[1]), 2);
        ck_assert(isfinite(v[0]) && v[0] > 0);
        ck_assert(isfinite(v[1]) && v[1] > 0);
        n++;
    }
    return n;
}

START_TEST(torch_validate_reports)
{
    char *out = NULL, *dir = tu_tmpdir(), args[2048];
    write_file(dir, "tiny.json", model);
    write_file(dir, "tiny.yaml", scenario);
    snprintf(args, sizeof(args),
             "validate %s/tiny.yaml --torch -o %s/v --calibrate-bytes 1MiB "
             "--timeout 180",
             dir, dir);
    int rc = herd(args, &out);
    if (rc != 0)
        fprintf(stderr, "%s\n", out);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(out, "--torch: torch "));
    /* the scenario runs ring: the user hears that PyTorch runs gloo's */
    ck_assert_ptr_nonnull(strstr(out, "PyTorch's gloo backend runs gloo's"));
    ck_assert_ptr_nonnull(strstr(out, "step time predicted"));
    ck_assert_ptr_nonnull(strstr(out, "median |error|"));
    free(out);
    snprintf(args, sizeof(args), "%s/v/report.md", dir);
    char *md = tu_read_file(args);
    ck_assert_ptr_nonnull(md);
    ck_assert_ptr_nonnull(strstr(md, "measured by real PyTorch DDP (gloo)"));
    ck_assert_ptr_nonnull(strstr(md, "measured with PyTorch "));
    /* PyTorch's timeline starts at the first step: both spans do */
    ck_assert_ptr_nonnull(
        strstr(md, "end to end (from the first step) predicted"));
    ck_assert_ptr_nonnull(strstr(md, "| bucket 0 |"));
    ck_assert_ptr_nonnull(strstr(md, "| bucket 1 |"));
    ck_assert_int_ge(check_rows(md, "all_reduce"), 2);
    ck_assert_int_ge(check_rows(md, "step"), 2);
    ck_assert_ptr_nonnull(strstr(md, "median |error|"));
    free(md);
    /* the job spec carries the straggler, by parameter index */
    snprintf(args, sizeof(args), "%s/v/ddp/job.json", dir);
    char *spec = tu_read_file(args);
    ck_assert_ptr_nonnull(spec);
    ck_assert_ptr_nonnull(strstr(spec, "\"name\": \"l1.weight\""));
    ck_assert_ptr_nonnull(strstr(spec, "\"param\": 2"));
    free(spec);
    /* the aligned timelines are herd's own: compare read them */
    snprintf(args, sizeof(args), "%s/v/ddp/compare/compare.tsv", dir);
    ck_assert_int_eq(access(args, R_OK), 0);
    herd("testbed down", &out);
    free(out);
    free(dir);
}
END_TEST

START_TEST(torch_bad_input)
{
    char *out = NULL, *dir = tu_tmpdir(), args[2048], src[1024];
    /* not a DDP scenario */
    snprintf(args, sizeof(args), "validate %s --torch -o %s/a",
             tu_src_path(src, sizeof(src), "scenarios/testbed-validate.yaml"),
             dir);
    ck_assert_int_eq(herd(args, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "no workload: ddp: section"));
    free(out);
    /* a python without torch: skipped, with the reason */
    write_file(dir, "tiny.json", model);
    write_file(dir, "tiny.yaml", scenario);
    snprintf(args, sizeof(args),
             "validate %s/tiny.yaml --torch --python /nonexistent/python3 "
             "-o %s/b",
             dir, dir);
    ck_assert_int_eq(herd(args, &out), 77);
    ck_assert_ptr_nonnull(strstr(out, "cannot import torch"));
    free(out);
    ck_assert_int_eq(
        herd("validate x.yaml -o d --python /usr/bin/python3", &out), 2);
    free(out);
    free(dir);
}
END_TEST

int main(void)
{
    char why[256];
    if (testbed_probe(why, sizeof(why)) != HERD_OK) {
        fprintf(stderr, "skip: %s\n", why);
        return 77;
    }
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        fprintf(stderr, "skip: /usr/bin/python3 cannot import torch "
                        "(install python3-torch)\n");
        return 77;
    }
    char id[32];
    snprintf(id, sizeof(id), "tt%ld", (long)getpid());
    setenv("HERD_TESTBED_ID", id, 1);
    Suite *s = suite_create("testbed_torch");
    TCase *tc = tcase_create("torch");
    tcase_set_timeout(tc, 400);
    tcase_add_test(tc, torch_bad_input);
    tcase_add_test(tc, torch_validate_reports);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
