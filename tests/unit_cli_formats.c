/* tests/unit_cli_formats.c - herd recognises its file formats by content:
 * `herd check` accepts every one herd reads (scenario, trace, timeline,
 * model, ready order, flight record) and says which it found, and names
 * foreign files (a PyTorch profiler trace, gzipped or not, other JSON,
 * not JSON) as what they are, exit 2; `herd compare` and `herd ddp report
 * --from` refuse a file that is not a herd timeline with the format
 * expected and the one found; no op matched is an error (exit 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"

static char *dir;

/* `herd ARGS` in the test's folder, stdout and stderr together. */
static int herd(const char *args, char **out)
{
    char cmd[4096];
    int n = snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s 2>&1", dir,
                     tu_herd_binary(), args);
    ck_assert(n > 0 && (size_t)n < sizeof(cmd));
    int rc = tu_run(cmd, out);
    ck_assert_ptr_nonnull(*out);
    return rc;
}

static void write_file(const char *name, const char *text)
{
    char path[2048];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* `herd check FILE` exits `rc` and prints `want`. */
static void check(const char *file, int rc, const char *want)
{
    char args[2048], *out = NULL;
    snprintf(args, sizeof(args), "check '%s'", file);
    int got = herd(args, &out);
    ck_assert_msg(got == rc && strstr(out, want),
                  "check %s: exit %d (want %d), want '%s' in:\n%s", file, got,
                  rc, want, out);
    free(out);
}

static void setup(void)
{
    dir = tu_tmpdir();
    char cmd[4096], src[1024], *out = NULL;
    /* a timeline written by herd sim, a profiler trace unzipped */
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && '%s' sim '%s' -o sim --no-plots >/dev/null && "
             "gzip -dc '%s' > profiler.json",
             dir, tu_herd_binary(),
             tu_src_path(src, sizeof(src), "scenarios/straggler.yaml"),
             tu_data_path(src + 512, 512, "kineto/torch215_b25_rank0.json.gz"));
    ck_assert_msg(tu_run(cmd, &out) == 0, "%s", out);
    free(out);
}

static void teardown(void)
{
    tu_tmpdir_free(dir);
}

START_TEST(test_check_herd_formats)
{
    char p[1024];
    check(tu_src_path(p, sizeof(p), "scenarios/straggler.yaml"), 0,
          ": ok (scenario, 16 ranks; name straggler)");
    check(tu_src_path(p, sizeof(p), "scenarios/traces/dp-steps.json"), 0,
          ": ok (trace, 16 ranks");
    check("sim/timeline.json", 0, "sim/timeline.json: ok (timeline, ");
    check(tu_src_path(p, sizeof(p), "models/resnet50.json"), 0,
          ": ok (model resnet50, 161 parameters, ");
    /* every shipped model */
    const char *models[] = {"bert_base", "gpt2_small", "gpt_1_3b", "gpt_7b"};
    for (int i = 0; i < 4; i++) {
        char rel[64], want[64];
        snprintf(rel, sizeof(rel), "models/%s.json", models[i]);
        snprintf(want, sizeof(want), ": ok (model %s, ", models[i]);
        check(tu_src_path(p, sizeof(p), rel), 0, want);
    }
    write_file("ready.json", "[2, 0, 3, 1]\n");
    check("ready.json", 0, "ready.json: ok (ready order of 4 parameters");
    write_file("ready-bad.json", "[2, 0, 2, 1]\n");
    check("ready-bad.json", 2,
          "ready-bad.json: entry 2: 2 is repeated; expected each of 0..3 "
          "once");
    write_file("rank1.json",
               "{\"version\": 1, \"engine\": \"tcp\", \"rank\": 1, "
               "\"world_size\": 2, \"dump_time_ns\": 5, \"groups\": [], "
               "\"entries\": [{\"seq\": 1, \"op\": \"all_reduce\"}]}\n");
    check("rank1.json", 0,
          "rank1.json: ok (flight record of rank 1 of 2, 1 entries");
    write_file("rank9.json", "{\"rank\": 9, \"world_size\": 2, "
                             "\"entries\": []}\n");
    check("rank9.json", 2, "rank9.json: rank 9 of world_size 2");
}
END_TEST

START_TEST(test_check_foreign_files)
{
    char p[1024];
    check("profiler.json", 2,
          "profiler.json: a PyTorch profiler trace (Kineto Chrome trace "
          "JSON), not a herd file (`herd import` converts");
    check(tu_data_path(p, sizeof(p), "kineto/torch215_b25_rank0.json.gz"), 2,
          ": a gzip-compressed file, not a herd file");
    write_file("other.json", "{\"alpha\": 1, \"beta\": [2]}\n");
    check("other.json", 2,
          "other.json: JSON of no herd format (keys: alpha, beta); expected "
          "a herd scenario (.yaml), or a trace, timeline, model, ready order "
          "or flight record (JSON)");
    write_file("notes.txt", "# not json\n");
    check("notes.txt", 2, "notes.txt:1:1: not JSON (");
    write_file("chrome.json", "{\"traceEvents\": []}\n");
    check("chrome.json", 2,
          "chrome.json: a Chrome trace JSON not written by herd, not a herd "
          "file");
    check("missing.json", 2, "missing.json");
}
END_TEST

START_TEST(test_timeline_readers_refuse_other_formats)
{
    char *out = NULL, args[2048], scn[1024];
    const char *want = "expected a herd timeline (herd-timeline Chrome trace "
                       "JSON), found a PyTorch profiler trace (Kineto Chrome "
                       "trace JSON); `herd import` converts";
    ck_assert_int_eq(herd("compare sim/timeline.json profiler.json", &out), 2);
    ck_assert_msg(strstr(out, "herd compare: profiler.json: ") &&
                      strstr(out, want),
                  "%s", out);
    ck_assert_msg(!strstr(out, "matched"), "%s", out);
    free(out);
    ck_assert_int_eq(herd("compare profiler.json sim/timeline.json", &out), 2);
    ck_assert_msg(strstr(out, want), "%s", out);
    free(out);
    snprintf(args, sizeof(args), "ddp report '%s' --from profiler.json",
             tu_src_path(scn, sizeof(scn), "scenarios/ddp-gpt2-4n.yaml"));
    ck_assert_int_eq(herd(args, &out), 2);
    ck_assert_msg(strstr(out, "herd ddp report: profiler.json: ") &&
                      strstr(out, want),
                  "%s", out);
    free(out);
    write_file("other.json", "{\"alpha\": 1}\n");
    ck_assert_int_eq(herd("compare sim/timeline.json other.json", &out), 2);
    ck_assert_msg(strstr(out, "found a JSON file of no herd format"), "%s",
                  out);
    free(out);
}
END_TEST

/* Timelines with nothing in common, or nothing of DDP: exit 1, not an
 * empty success. */
START_TEST(test_no_op_matched)
{
    write_file("far.json",
               "{\"otherData\": {\"format\": \"herd-timeline\", \"version\": "
               "1},\n\"traceEvents\": [{\"name\": \"forward\", \"cat\": "
               "\"compute\", \"ph\": \"X\", \"ts\": 0, \"dur\": 1, \"pid\": 0, "
               "\"tid\": 99, \"args\": {}}]}\n");
    char *out = NULL;
    int rc = herd("compare sim/timeline.json far.json --no-plots", &out);
    ck_assert_msg(rc == 1 && strstr(out, "herd compare: no op matched"),
                  "exit %d\n%s", rc, out);
    free(out);
    /* a herd timeline with no DDP step in it: nothing to report */
    write_file("near.json",
               "{\"otherData\": {\"format\": \"herd-timeline\", \"version\": "
               "1},\n\"traceEvents\": [{\"name\": \"forward\", \"cat\": "
               "\"compute\", \"ph\": \"X\", \"ts\": 0, \"dur\": 1, \"pid\": 0, "
               "\"tid\": 3, \"args\": {}}]}\n");
    char args[2048], scn[1024];
    snprintf(args, sizeof(args), "ddp report '%s' --from near.json",
             tu_src_path(scn, sizeof(scn), "scenarios/ddp-gpt2-4n.yaml"));
    rc = herd(args, &out);
    ck_assert_msg(rc == 1 && strstr(out, "herd ddp report: no DDP step in the "
                                         "timelines"),
                  "exit %d\n%s", rc, out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_formats");
    TCase *tc = tcase_create("formats");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_check_herd_formats);
    tcase_add_test(tc, test_check_foreign_files);
    tcase_add_test(tc, test_timeline_readers_refuse_other_formats);
    tcase_add_test(tc, test_no_op_matched);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
