/* tests/trace_hostile.c - hostile and clumsy input to the file formats
 * (issue 14): YAML alias bombs, NUL bytes and invalid UTF-8, names that
 * climb out of the output directory, control characters echoed to the
 * terminal, errors that do not say where, impossible timelines. Each
 * case must fail at once with a message that says what and where. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/testutil.h"
#include "trace/scenario.h"

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
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_hostile");
    TCase *tc = tcase_create("inputs");
    tcase_add_test(tc, test_alias_bomb);
    tcase_add_test(tc, test_bytes);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
