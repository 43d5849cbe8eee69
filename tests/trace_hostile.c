/* tests/trace_hostile.c - hostile and clumsy input to the file formats
 * (issue 14): YAML alias bombs, NUL bytes and invalid UTF-8, names that
 * climb out of the output directory, control characters echoed to the
 * terminal, errors that do not say where, impossible timelines. Each
 * case must fail at once with a message that says what and where. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/escape.h"
#include "support/testutil.h"
#include "trace/scenario.h"
#include "trace/timeline.h"
#include "trace/trace.h"
#include "trace/units.h"

static const char *base_yaml = "name: base\n"
                               "cluster: {nodes: 1, gpus_per_node: 2}\n";

/* Write `len` bytes into dir/name; returns the path (static buffer). */
static const char *put_file(const char *dir, const char *name,
                            const char *bytes, size_t len)
{
    static char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
    return path;
}

static void rm_dir(char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}

/* Nested anchors: each level lists the previous one nine times, so
 * resolving `levels` levels makes 9^levels nodes. */
static char *alias_bomb(int levels)
{
    size_t cap = 4096;
    char *s = malloc(cap);
    int k =
        snprintf(s, cap, "name: bomb\nl0: &l0 [x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < levels; i++) {
        k += snprintf(s + k, cap - (size_t)k, "l%d: &l%d [", i, i);
        for (int j = 0; j < 9; j++)
            k += snprintf(s + k, cap - (size_t)k, "%s*l%d", j ? ", " : "",
                          i - 1);
        k += snprintf(s + k, cap - (size_t)k, "]\n");
    }
    return s;
}

START_TEST(test_alias_bomb)
{
    /* Five levels (59049 nodes) resolve in well under a second, so a
     * reader that expands aliases fails the message check, not the
     * machine. */
    char *text = alias_bomb(5);
    char err[512] = "";
    trace_scenario_t *sc = NULL;
    ck_assert_int_eq(
        trace_scenario_load_string(text, "bomb.yaml", &sc, err, sizeof(err)),
        HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "bomb.yaml:2:") && strstr(err, "anchor"), "%s",
                  err);
    free(text);
    /* an alias alone (its anchor undefined) is refused the same way */
    ck_assert_int_eq(trace_scenario_load_string("name: *x\n", "a.yaml", &sc,
                                                err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "a.yaml:1:7:") && strstr(err, "alias '*x'"), "%s",
                  err);
    /* and through --set */
    ck_assert_int_eq(
        trace_scenario_load_string(base_yaml, "base.yaml", &sc, err, 512), 0);
    ck_assert_int_eq(trace_scenario_set(sc, "cluster.intra",
                                        "{bandwidth: &q 1GB/s, latency: *q}",
                                        err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "--set cluster.intra:1:") &&
                      strstr(err, "anchor '&q'"),
                  "%s", err);
    ck_assert_int_eq(trace_scenario_set(sc, "name", "*n", err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "alias '*n'"), "%s", err);
    trace_scenario_destroy(sc);
}
END_TEST

START_TEST(test_bytes)
{
    char *dir = tu_tmpdir();
    char err[512] = "";
    trace_scenario_t *sc = NULL;
    /* a NUL byte hid a duplicate key and an unknown one */
    static const char nul[] = "name: x\ncluster:\n  nodes: 2\0\ncluster: 3\n"
                              "bogus: 1\n";
    const char *p = put_file(dir, "nul.yaml", nul, sizeof(nul) - 1);
    ck_assert_int_eq(trace_scenario_load(p, &sc, err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "nul.yaml:3:11: a NUL byte"), "%s", err);
    /* an early NUL used to be "empty or unreadable YAML" */
    p = put_file(dir, "nul0.yaml", "\0name: x\n", 9);
    ck_assert_int_eq(trace_scenario_load(p, &sc, err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "nul0.yaml:1:1: a NUL byte"), "%s", err);
    /* invalid UTF-8: a stray byte, an overlong '/', a surrogate; the
     * column counts characters ("é" is one) */
    static const char *bad[] = {"name: \xc3\xa9\xff\n",
                                "name: \xc3\xa9\xc0\xaf\n",
                                "name: \xc3\xa9\xed\xa0\x80\n"};
    for (int i = 0; i < 3; i++) {
        p = put_file(dir, "utf.yaml", bad[i], strlen(bad[i]));
        ck_assert_int_eq(trace_scenario_load(p, &sc, err, sizeof(err)),
                         HERD_ERR_PARSE);
        ck_assert_msg(strstr(err, "utf.yaml:1:8: invalid UTF-8"), "%s", err);
    }
    /* valid UTF-8 in a name is fine */
    const char *ok = "name: caf\xc3\xa9\n";
    p = put_file(dir, "ok.yaml", ok, strlen(ok));
    ck_assert_msg(trace_scenario_load(p, &sc, err, sizeof(err)) == 0, "%s",
                  err);
    trace_scenario_destroy(sc);
    /* and in --set values */
    ck_assert_int_eq(
        trace_scenario_load_string(base_yaml, "b.yaml", &sc, err, sizeof(err)),
        0);
    ck_assert_int_eq(trace_scenario_set(sc, "name", "a\xfe", err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "--set name:1:2: invalid UTF-8"), "%s", err);
    trace_scenario_destroy(sc);
    rm_dir(dir);
}
END_TEST

START_TEST(test_dirname)
{
    char err[512] = "", buf[128];
    trace_scenario_t *sc = NULL;
    ck_assert_int_eq(
        trace_scenario_load_string(base_yaml, "b.yaml", &sc, err, sizeof(err)),
        0);
    trace_scenario_dirname(sc, buf, sizeof(buf));
    ck_assert_str_eq(buf, "base");
    static const struct {
        const char *name, *dir;
    } cases[] = {{"../../elsewhere/x", "_._.._elsewhere_x"},
                 {"..", "_."},
                 {".hidden", "_hidden"},
                 {"/etc/passwd", "_etc_passwd"},
                 {"a\\b c", "a_b_c"},
                 {"ddp-gpt2_64n.v2+x", "ddp-gpt2_64n.v2+x"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_int_eq(
            trace_scenario_set(sc, "name", cases[i].name, err, sizeof(err)), 0);
        trace_scenario_dirname(sc, buf, sizeof(buf));
        ck_assert_str_eq(buf, cases[i].dir);
    }
    trace_scenario_destroy(sc);

    /* herd sim, by default into out/<name>, stays inside out/ */
    char *dir = tu_tmpdir(), cmd[2048], *out = NULL;
    ck_assert_int_ne(mkdir(strcat(strcpy(cmd, dir), "/a"), 0700), -1);
    static const char scn[] =
        "name: ../../escaped\n"
        "cluster: {nodes: 1, gpus_per_node: 2}\n"
        "workload:\n"
        "  sweep: {min: 1KiB, max: 1KiB, iters: 1, warmup: 0}\n";
    put_file(dir, "a/s.yaml", scn, sizeof(scn) - 1);
    snprintf(cmd, sizeof(cmd),
             "cd '%s/a' && '%s' sim s.yaml --no-plots >/dev/null && "
             "'%s' sim s.yaml --no-plots --set name=../../../setname "
             ">/dev/null && ls '%s' '%s/a' '%s/a/out'",
             dir, tu_herd_binary(), tu_herd_binary(), dir, dir, dir);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_msg(!strstr(out, "\nescaped\n") && !strstr(out, "\nsetname\n") &&
                      strstr(out, "_._.._escaped") &&
                      strstr(out, "_._.._.._setname"),
                  "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

START_TEST(test_escape)
{
    char buf[128];
    /* ESC ]0;title BEL, ESC [2J, a C1 CSI, a stray byte; UTF-8 kept */
    core_escape("k\x1b]0;pwned\x07\x1b[2J\xc2\x9b"
                "1m\xff caf\xc3\xa9\n",
                buf, sizeof(buf));
    ck_assert_str_eq(buf, "k\\x1b]0;pwned\\x07\\x1b[2J\\u009b1m\\xff "
                          "caf\xc3\xa9\\n");
    /* cut at a whole escape, always terminated */
    core_escape("\x1b\x1b", buf, 7);
    ck_assert_str_eq(buf, "\\x1b");
    ck_assert_int_eq(core_escape_needed("plain caf\xc3\xa9"), 0);
    ck_assert_int_eq(core_escape_needed("a\x7f"), 1);

    /* a trace key that would retitle and clear the terminal */
    char err[512] = "";
    trace_t *t = NULL;
    ck_assert_int_eq(
        trace_read_json_string("{\"format\": \"herd-trace\", \"version\": 1, "
                               "\"world_size\": 2, \"ops\": [], "
                               "\"\\u001b]0;x\\u0007\\u001b[2J\": 1}",
                               "t.json", &t, err, sizeof(err)),
        HERD_ERR_PARSE);
    ck_assert_msg(!strchr(err, 0x1b) && !strchr(err, 0x07) &&
                      strstr(err, "\\x1b]0;x\\x07\\x1b[2J"),
                  "%s", err);
    /* a scenario key and value */
    trace_scenario_t *sc = NULL;
    ck_assert_int_eq(trace_scenario_load_string("\"a\\e[2J\": 1\n", "s.yaml",
                                                &sc, err, sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_msg(!strchr(err, 0x1b) && strstr(err, "'a\\x1b[2J'"), "%s", err);
    ck_assert_int_eq(
        trace_scenario_load_string("cluster: {nodes: \"\\e]0;x\\a\"}\n",
                                   "s.yaml", &sc, err, sizeof(err)),
        HERD_ERR_PARSE);
    ck_assert_msg(!strchr(err, 0x1b) && !strchr(err, 0x07) &&
                      strstr(err, "\\x1b]0;x\\x07"),
                  "%s", err);
}
END_TEST

/* Names and labels that herd prints back must be printable text. */
START_TEST(test_names_printable)
{
    char err[512];
    trace_scenario_t *sc = NULL;
    ck_assert_int_eq(trace_scenario_load_string("name: \"a\\e]0;t\\a\"\n",
                                                "s.yaml", &sc, err,
                                                sizeof(err)),
                     HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "s.yaml:1:8: name: 'a\\x1b]0;t\\x07' holds a "
                              "control character"),
                  "%s", err);
    static const char *bad[] = {
        "\"name\": \"x\\u001b[2J\", \"ops\": []",
        "\"ops\": [{\"op\": \"compute\", \"dur_ns\": 1, \"label\": "
        "\"\\u009b31m\"}]",
        "\"ops\": [{\"op\": \"all_reduce\", \"count\": 1, \"async\": "
        "\"a\\u0007b\"}, {\"op\": \"wait\", \"async\": \"a\"}]"};
    for (int i = 0; i < 3; i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "{\"format\": \"herd-trace\", \"version\": 1, "
                 "\"world_size\": 2, %s}",
                 bad[i]);
        trace_t *t = NULL;
        ck_assert_int_eq(
            trace_read_json_string(text, "t.json", &t, err, sizeof(err)),
            HERD_ERR_PARSE);
        ck_assert_msg(strstr(err, "printable") || strstr(err, "id string"),
                      "case %d: %s", i, err);
    }
}
END_TEST

/* Usage errors quote arguments: escaped like file contents. */
START_TEST(test_usage_escape)
{
    char *out = NULL;
    int rc = tu_herd("perf --coll \"$(printf 'x\\033]0;t\\007')\"", &out);
    ck_assert_msg(rc == 2 && !strchr(out, 0x1b) && !strchr(out, 0x07) &&
                      strstr(out, "--coll: 'x\\x1b]0;t\\x07' is not"),
                  "rc %d: %s", rc, out);
    free(out);
}
END_TEST

START_TEST(test_trace_top)
{
    char err[512] = "";
    trace_t *t = NULL;
    ck_assert_int_eq(
        trace_read_json_string("[1, 2]", "t.json", &t, err, sizeof(err)),
        HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "t.json: (top level): expected a JSON object"),
                  "%s", err);
}
END_TEST

/* A timeline with one compute slice: ts/dur (microseconds) and args. */
static herd_status_t read_timeline(const char *event, char *err, size_t len)
{
    char *dir = tu_tmpdir(), text[1024];
    snprintf(text, sizeof(text),
             "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"compute\", "
             "\"name\": \"c\", \"pid\": 0, \"tid\": 0, \"ts\": 1, \"dur\": 2},"
             " {\"ph\": \"X\", \"cat\": \"compute\", \"name\": \"c\", %s}]}",
             event);
    const char *p = put_file(dir, "tl.json", text, strlen(text));
    trace_timeline_t *tl = NULL;
    herd_status_t st = trace_timeline_read_chrome(p, &tl, err, len);
    trace_timeline_destroy(tl);
    rm_dir(dir);
    return st;
}

START_TEST(test_timeline)
{
    static const struct {
        const char *event, *expect;
    } cases[] = {
        {"\"pid\": 0, \"tid\": 1, \"ts\": 10, \"dur\": -5", "dur: expected a "
                                                            "non-negative"},
        {"\"pid\": 0, \"tid\": 1, \"ts\": -10, \"dur\": 5", "ts: expected a "
                                                            "non-negative"},
        /* 2^63 ns */
        {"\"pid\": 0, \"tid\": 1, \"ts\": 0, \"dur\": 9223372036854775.808",
         "dur: expected"},
        {"\"pid\": 0, \"tid\": 1, \"ts\": 0, \"dur\": 1, \"args\": "
         "{\"start_ns\": 10, \"end_ns\": 9}",
         "ends at 9 ns, before it starts (10 ns)"},
        {"\"pid\": 0, \"tid\": 1, \"args\": {\"start_ns\": "
         "9223372036854775807, \"end_ns\": 9223372036854775807}",
         "args.start_ns: expected"},
        {"\"pid\": 0, \"tid\": -1, \"ts\": 0, \"dur\": 1", "tid: expected"},
        {"\"pid\": 0, \"tid\": \"r1\", \"ts\": 0, \"dur\": 1", "tid: expected"},
        {"\"pid\": 0, \"ts\": 0, \"dur\": 1", "tid: missing"},
        {"\"pid\": 0, \"tid\": 1, \"ts\": 0, \"dur\": 1, \"args\": "
         "{\"label\": \"\\u001b[2J\"}",
         "args.label: expected printable text"},
    };
    char err[512];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        err[0] = '\0';
        ck_assert_int_eq(read_timeline(cases[i].event, err, sizeof(err)),
                         HERD_ERR_PARSE);
        ck_assert_msg(strstr(err, "tl.json: traceEvents[1]: ") &&
                          strstr(err, cases[i].expect),
                      "case %zu: %s", i, err);
    }
    /* herd check and herd compare refuse it (compare printed 7e12 %
     * errors and exited 0) */
    char *dir = tu_tmpdir(), args[2400], *out = NULL;
#define HOSTILE_TL(dur)                                                        \
    "{\"otherData\": {\"format\": \"herd-timeline\", \"version\": 1}, "        \
    "\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"compute\", \"name\": "       \
    "\"c\", \"pid\": 0, \"tid\": 0, \"ts\": 1, \"dur\": " dur "}]}"
    static const char good[] = HOSTILE_TL("2");
    static const char absurd[] = HOSTILE_TL("9.3e15");
    char a[1024], b[1024];
    snprintf(a, sizeof(a), "%s", put_file(dir, "a.json", good, strlen(good)));
    snprintf(b, sizeof(b), "%s",
             put_file(dir, "b.json", absurd, strlen(absurd)));
    snprintf(args, sizeof(args), "compare '%s' '%s'", a, b);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 2 && strstr(out, "b.json: traceEvents[0]: dur:"),
                  "rc %d: %s", rc, out);
    free(out);
    snprintf(args, sizeof(args), "check '%s'", b);
    rc = tu_herd(args, &out);
    ck_assert_msg(rc == 2 && strstr(out, "b.json: traceEvents[0]: dur:"),
                  "rc %d: %s", rc, out);
    free(out);
    rm_dir(dir);
    ck_assert_msg(read_timeline("\"pid\": 0, \"tid\": 1, \"ts\": 3, \"dur\": 4",
                                err, sizeof(err)) == 0,
                  "%s", err);
}
END_TEST

START_TEST(test_units)
{
    uint64_t b = 7;
    char why[160] = "";
    /* hex was taken by strtod: docs/formats.md rejects it */
    ck_assert_int_eq(trace_parse_bytes("0x10", &b), HERD_ERR_PARSE);
    ck_assert_int_eq(trace_parse_bytes("0x10MiB", &b), HERD_ERR_PARSE);
    double d;
    ck_assert_int_eq(trace_parse_time("0x1p3s", &d), HERD_ERR_PARSE);
    ck_assert_int_eq(trace_parse_bandwidth("0x10Gbps", &d), HERD_ERR_PARSE);
    ck_assert_uint_eq(b, 7);
    ck_assert_int_eq(trace_parse_bytes("1.5e3KB", &b), 0);
    ck_assert_uint_eq(b, 1500000);
    /* flags: nccl-tests' binary K/M/G, no guessing at "mb" */
    ck_assert_int_eq(trace_parse_bytes_flag("1M", &b, why, sizeof(why)), 0);
    ck_assert_uint_eq(b, 1u << 20);
    ck_assert_int_eq(trace_parse_bytes_flag("128k", &b, why, sizeof(why)), 0);
    ck_assert_uint_eq(b, 128u << 10);
    ck_assert_int_eq(trace_parse_bytes_flag("1MB", &b, why, sizeof(why)), 0);
    ck_assert_uint_eq(b, 1000000);
    ck_assert_int_eq(trace_parse_bytes_flag("1mb", &b, why, sizeof(why)),
                     HERD_ERR_PARSE);
    ck_assert_msg(strstr(why, "'1mb' is ambiguous: write 1MB") &&
                      strstr(why, "1MiB"),
                  "%s", why);
    ck_assert_int_eq(trace_parse_bytes_flag("0x10", &b, why, sizeof(why)),
                     HERD_ERR_PARSE);
    ck_assert_int_eq(
        trace_parse_bytes_flag("99999999999999999999G", &b, why, sizeof(why)),
        HERD_ERR_OVERFLOW);
    ck_assert_int_eq(
        trace_parse_bytes_flag("17179869184G", &b, why, sizeof(why)),
        HERD_ERR_OVERFLOW);

    /* herd perf: exit 2 naming the flag */
    static const struct {
        const char *args, *expect;
    } cases[] = {
        {"perf -b 0x10 -n 1 -w 0", "--minbytes: '0x10' is not"},
        {"perf -e 1mb -n 1 -w 0", "--maxbytes: '1mb' is ambiguous"},
        {"perf --inter-lat 1e308s -n 1 -w 0",
         "--inter-lat: '1e308s' is out of range; expected a time between 0s "
         "and 3600s"},
        {"perf --chunk 0x1000 -n 1 -w 0", "--chunk: '0x1000' is not"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = NULL;
        int rc = tu_herd(cases[i].args, &out);
        ck_assert_msg(rc == 2 && strstr(out, cases[i].expect), "%s: rc %d: %s",
                      cases[i].args, rc, out);
        free(out);
    }
    /* the scenario's range is in the message */
    char err[512];
    trace_scenario_t *sc = NULL;
    ck_assert_int_eq(
        trace_scenario_load_string(
            "cluster: {inter: {bandwidth: 1Gbps, latency: 1e308s}}\n", "s.yaml",
            &sc, err, sizeof(err)),
        HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "s.yaml:1:46: cluster.inter.latency: 1e308s is "
                              "out of range; expected a time between 0s and "
                              "3600s"),
                  "%s", err);
}
END_TEST

/* DDP settings are checked by the model (workload/ddp), after the
 * scenario is read: their errors must still point into the file. */
START_TEST(test_ddp_places)
{
    static const struct {
        const char *ddp, *expect;
    } cases[] = {
        /* an empty mapping has no scalar: it was blamed on --set */
        {"    bucket_cap_mb: {}\n",
         "s.yaml:5:5: ddp.bucket_cap_mb: bad value '{}'; expected a number in "
         "[1e-06, 1000000000]"},
        {"    epochs: 0\n", "s.yaml:5:13: ddp.epochs: bad value '0'; expected "
                            "a whole number in [1, 1000000]"},
        /* a missing model was "...nosuch.json:-1:-1: unable to open" */
        {"    model: nosuch.json\n", "s.yaml:5:12: ddp.model: "},
        {"    shards: true\n    shard_sizes: [1, 2, 3]\n",
         "s.yaml:6:19: ddp.shard_sizes: 3 entries for 2 ranks"},
        /* one number used to mean 2.7e8 simulated steps */
        {"    shards: true\n    batch_size: 16\n"
         "    shard_sizes: [128, 4294967296]\n",
         "s.yaml:7:19: ddp.shard_sizes: rank 1 would run 268435456 "
         "iterations (batch_size 16, epochs 1); the limit is 10000000 per "
         "rank"},
        {"    dataset_size: 1000000000000\n    epochs: 1000\n",
         "s.yaml:5:19: ddp.dataset_size: rank 0 would run 500000000000 "
         "iterations"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *dir = tu_tmpdir(), text[512], args[1200], *out = NULL;
        snprintf(text, sizeof(text),
                 "cluster: {nodes: 1, gpus_per_node: 2}\n"
                 "workload:\n"
                 "  ddp:\n"
                 "    grad_accum: 1\n"
                 "%s",
                 cases[i].ddp);
        const char *p = put_file(dir, "s.yaml", text, strlen(text));
        snprintf(args, sizeof(args), "check '%s'", p);
        int rc = tu_herd(args, &out);
        ck_assert_msg(rc == 2 && strstr(out, cases[i].expect) &&
                          !strstr(out, "-1:-1") && !strstr(out, "--set"),
                      "case %zu: rc %d: %s", i, rc, out);
        if (i == 2)
            ck_assert_msg(strstr(out, "nosuch.json: cannot read the model") &&
                              !strstr(out, ".json.json"),
                          "%s", out);
        free(out);
        rm_dir(dir);
    }
}
END_TEST

/* A long DDP run says how far it is (HERD_PROGRESS=1 off a terminal;
 * the first step is shown at once, later ones twice a second). */
START_TEST(test_progress)
{
    char *dir = tu_tmpdir(), args[1200], *out = NULL;
    static const char text[] = "cluster: {nodes: 1, gpus_per_node: 2}\n"
                               "workload: {ddp: {model: gpt2_small, steps: "
                               "3}}\n";
    const char *p = put_file(dir, "s.yaml", text, sizeof(text) - 1);
    snprintf(args, sizeof(args), "ddp run '%s' --quiet", p);
    ck_assert_int_eq(setenv("HERD_PROGRESS", "1", 1), 0);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0 && strstr(out, "herd: simulating step 1 of 3 (33%"),
                  "rc %d: %s", rc, out);
    free(out);
    ck_assert_int_eq(setenv("HERD_PROGRESS", "0", 1), 0);
    rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0 && !strstr(out, "simulating"), "rc %d: %s", rc, out);
    free(out);
    unsetenv("HERD_PROGRESS");
    rm_dir(dir);
}
END_TEST

START_TEST(test_sweep_bound)
{
    char err[512];
    trace_scenario_t *sc = NULL;
    ck_assert_int_eq(
        trace_scenario_load_string(
            "cluster: {nodes: 1, gpus_per_node: 2}\n"
            "workload: {sweep: {min: 1B, max: 8TB, factor: 1.0001}}\n",
            "s.yaml", &sc, err, sizeof(err)),
        HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "workload.sweep: min 1 B to max 8000000000000 B "
                              "by factor 1.0001 is 297120 sizes; the limit "
                              "is 4096"),
                  "%s", err);
    ck_assert_int_eq(
        trace_scenario_load_string(
            "cluster: {nodes: 1, gpus_per_node: 2}\n"
            "workload: {sweep: {min: 1B, max: 1GiB, iters: 100000, "
            "warmup: 100000, algorithms: [ring, tree]}}\n",
            "s.yaml", &sc, err, sizeof(err)),
        HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "is 12400000 collectives; the limit is 10000000"),
                  "%s", err);
    /* the default sweep and the shipped ones stay well inside */
    ck_assert_int_eq(
        trace_scenario_load_string("cluster: {nodes: 1, gpus_per_node: 2}\n"
                                   "workload: {sweep: {min: 1B, max: 8TB}}\n",
                                   "s.yaml", &sc, err, sizeof(err)),
        0);
    trace_scenario_destroy(sc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_hostile");
    TCase *tc = tcase_create("inputs");
    tcase_add_test(tc, test_alias_bomb);
    tcase_add_test(tc, test_bytes);
    tcase_add_test(tc, test_dirname);
    tcase_add_test(tc, test_escape);
    tcase_add_test(tc, test_trace_top);
    tcase_add_test(tc, test_usage_escape);
    tcase_add_test(tc, test_names_printable);
    tcase_add_test(tc, test_timeline);
    tcase_add_test(tc, test_units);
    tcase_add_test(tc, test_ddp_places);
    tcase_add_test(tc, test_progress);
    tcase_add_test(tc, test_sweep_bound);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
