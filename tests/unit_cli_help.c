/* tests/unit_cli_help.c - every subcommand and sub-subcommand of herd
 * answers --help and -h with its usage on stdout, exit 0, nothing on
 * stderr, and without acting: run in an empty folder, the folder stays
 * empty, and `testbed down --help` does not tear anything down. The
 * subcommands are read from `herd --help`, so a new one is covered. Also
 * the engine names: gloo is tcp, an unknown engine lists the engines. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <herd/herd.h>

#include "core/engine.h"
#include "support/testutil.h"

/* Subcommands that have tools of their own. */
static const char *const nested[][5] = {
    {"ddp", "buckets", "sampler", "run", "report"},
    {"fsdp", "run", "units", "strategies", NULL},
    {"parallel", "run", "layout", NULL, NULL},
    {"testbed", "up", "down", "run", "status"},
    {"trace", "rescale", NULL, NULL, NULL},
};

static int dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n == 0;
}

/* `herd ARGS` run in `dir`; stdout or stderr (the other discarded). */
static int herd_in(const char *dir, const char *args, int want_stderr,
                   char **out)
{
    char cmd[4096];
    int n = snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s %s", dir,
                     tu_herd_binary(), args,
                     want_stderr ? "2>&1 >/dev/null" : "2>/dev/null");
    ck_assert(n > 0 && (size_t)n < sizeof(cmd));
    int rc = tu_run(cmd, out);
    ck_assert_ptr_nonnull(*out);
    return rc;
}

/* One command line answers help: usage on stdout, nothing else. */
static void check_help(const char *dir, const char *args)
{
    char *out = NULL;
    int rc = herd_in(dir, args, 0, &out);
    ck_assert_msg(rc == 0, "herd %s: exit %d\n%s", args, rc, out);
    ck_assert_msg(!strncmp(out, "usage: herd ", 12), "herd %s:\n%s", args, out);
    ck_assert_msg(!strstr(out, "\ntestbed down\n"), "herd %s acted:\n%s", args,
                  out);
    free(out);
    rc = herd_in(dir, args, 1, &out);
    ck_assert_msg(!strcmp(out, ""), "herd %s wrote to stderr:\n%s", args, out);
    free(out);
    ck_assert_msg(dir_is_empty(dir), "herd %s wrote files", args);
}

/* The subcommand names listed by `herd --help`. */
static int list_commands(char names[][32], int max)
{
    char *out = NULL;
    ck_assert_int_eq(tu_herd("--help", &out), 0);
    int n = 0;
    char *p = strstr(out, "commands:\n");
    ck_assert_ptr_nonnull(p);
    for (p = strchr(p, '\n') + 1; n < max && !strncmp(p, "  ", 2);
         p = strchr(p, '\n') + 1) {
        sscanf(p, "%31s", names[n]);
        n++;
    }
    free(out);
    return n;
}

START_TEST(test_every_command_help)
{
    char *dir = tu_tmpdir();
    char names[64][32], args[256];
    int n = list_commands(names, 64);
    ck_assert_int_ge(n, 15);
    for (int i = 0; i < n; i++)
        for (int f = 0; f < 2; f++) {
            snprintf(args, sizeof(args), "%.31s %s", names[i],
                     f ? "-h" : "--help");
            check_help(dir, args);
        }
    rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_every_tool_help)
{
    char *dir = tu_tmpdir();
    char args[256];
    for (size_t i = 0; i < sizeof(nested) / sizeof(nested[0]); i++) {
        /* each tool is named in its command's help */
        char *out = NULL;
        snprintf(args, sizeof(args), "%s --help", nested[i][0]);
        ck_assert_int_eq(herd_in(dir, args, 0, &out), 0);
        for (int k = 1; k < 5 && nested[i][k]; k++) {
            ck_assert_msg(strstr(out, nested[i][k]), "%s: no %s in\n%s",
                          nested[i][0], nested[i][k], out);
            for (int f = 0; f < 2; f++) {
                snprintf(args, sizeof(args), "%s %s %s", nested[i][0],
                         nested[i][k], f ? "-h" : "--help");
                check_help(dir, args);
            }
        }
        free(out);
    }
    /* help anywhere before "--", after other options too */
    check_help(dir, "testbed up --hosts 4 --help");
    check_help(dir, "testbed run --timeout 5 -h -- true");
    check_help(dir, "sweep x.yaml --set a=1,2 --help");
    check_help(dir, "launch --nproc-per-node 2 --help -- true");
    rmdir(dir);
    free(dir);
}
END_TEST

/* After "--" a -h belongs to the wrapped command: herd launch runs it. */
START_TEST(test_help_after_dashdash)
{
    char *out = NULL;
    int rc = tu_herd("launch --standalone --nproc-per-node 1 -- "
                     "sh -c 'echo worker:$1' x --help",
                     &out);
    ck_assert_msg(rc == 0 && strstr(out, "worker:--help"), "rc %d\n%s", rc,
                  out);
    free(out);
}
END_TEST

static int noop(herd_comm_t *world, void *arg)
{
    (void)world;
    (void)arg;
    return 0;
}

START_TEST(test_engine_alias)
{
    ck_assert_ptr_eq(core_engine_find("gloo"), core_engine_find("tcp"));
    ck_assert_str_eq(core_engine_resolve("gloo"), "tcp");
    ck_assert_str_eq(core_engine_resolve("sim"), "sim");
    ck_assert_ptr_null(core_engine_resolve("smoke-signals"));
    ck_assert_ptr_null(core_engine_find(NULL));
    /* the API says which engines exist */
    herd_init_t init = {.backend = "smoke-signals"};
    herd_run_info_t info;
    ck_assert_int_eq(herd_run(&init, NULL, NULL, &info), HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(herd_run(&init, noop, NULL, &info), HERD_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(info.report);
    ck_assert_msg(strstr(info.report, "unknown engine 'smoke-signals'") &&
                      strstr(info.report, "sim, tcp (alias gloo)"),
                  "%s", info.report);
    herd_run_info_clear(&info);
}
END_TEST

/* The CLI: gloo reaches the tcp engine (which wants a launcher's
 * environment); an engine that does not exist (mpi where it is not
 * built) is refused with the list. */
START_TEST(test_engine_cli)
{
    char *out = NULL;
    const char *bad = core_engine_find("mpi") ? "smoke-signals" : "mpi";
    char args[128], want[160];
    snprintf(args, sizeof(args), "perf --engine %s", bad);
    snprintf(want, sizeof(want),
             "herd perf: unknown engine '%s'; engines: sim, tcp (alias gloo)",
             bad);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_msg(strstr(out, want), "%s", out);
    free(out);
    snprintf(args, sizeof(args), "replay x.json --engine %s", bad);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_msg(strstr(out, "unknown engine '"), "%s", out);
    free(out);
    ck_assert_int_eq(tu_herd("perf --engine gloo -b 1K -e 1K </dev/null", &out),
                     1);
    ck_assert_msg(strstr(out, "herd tcp: rendezvous failed"), "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_help");
    TCase *tc = tcase_create("help");
    tcase_add_test(tc, test_every_command_help);
    tcase_add_test(tc, test_every_tool_help);
    tcase_add_test(tc, test_help_after_dashdash);
    tcase_add_test(tc, test_engine_alias);
    tcase_add_test(tc, test_engine_cli);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
