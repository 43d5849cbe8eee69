/* tests/unit_cli.c - the herd command's top level: --version, --help and
 * the exit status and message for a missing or unknown command. */
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>

#include "support/testutil.h"

/* Run `herd <args> <redirections>`; return the exit status, output in
 * *out (caller frees). */
static int run_herd(const char *args, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s", tu_herd_binary(), args);
    int rc = tu_run(cmd, out);
    ck_assert_ptr_nonnull(*out);
    return rc;
}

START_TEST(test_version)
{
    const char *forms[] = {"--version 2>/dev/null", "version 2>/dev/null"};
    for (int i = 0; i < 2; i++) {
        char *out = NULL;
        ck_assert_int_eq(run_herd(forms[i], &out), 0);
        char want[64];
        snprintf(want, sizeof want, "herd %s\n", HERD_VERSION_STRING);
        ck_assert_str_eq(out, want);
        free(out);
    }
}
END_TEST

/* Help goes to stdout, lists the subcommands and the engines built in. */
START_TEST(test_help)
{
    const char *forms[] = {"--help 2>/dev/null", "-h 2>/dev/null",
                           "help 2>/dev/null"};
    for (int i = 0; i < 3; i++) {
        char *out = NULL;
        ck_assert_int_eq(run_herd(forms[i], &out), 0);
        ck_assert_msg(strstr(out, "usage: herd <command>"), "%s", out);
        ck_assert_msg(strstr(out, "  schedule "), "%s", out);
        ck_assert_msg(strstr(out, "  launch "), "%s", out);
        ck_assert_msg(strstr(out, "engines built in:"), "%s", out);
        ck_assert_msg(strstr(out, " sim"), "%s", out);
        free(out);
    }
}
END_TEST

START_TEST(test_unknown_command)
{
    char *out = NULL;
    /* stderr only: the message must not go to stdout. */
    ck_assert_int_eq(run_herd("frobnicate 2>&1 >/dev/null", &out), 2);
    ck_assert_msg(strstr(out, "unknown command 'frobnicate'"), "%s", out);
    ck_assert_msg(strstr(out, "usage: herd"), "%s", out);
    free(out);
    ck_assert_int_eq(run_herd("frobnicate 2>/dev/null", &out), 2);
    ck_assert_str_eq(out, "");
    free(out);
    /* An option where a command is expected is not one either. */
    ck_assert_int_eq(run_herd("--frobnicate 2>&1", &out), 2);
    ck_assert_msg(strstr(out, "unknown command '--frobnicate'"), "%s", out);
    free(out);
}
END_TEST

START_TEST(test_no_command)
{
    char *out = NULL;
    ck_assert_int_eq(run_herd("2>&1 >/dev/null", &out), 2);
    ck_assert_msg(strstr(out, "usage: herd"), "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_help);
    tcase_add_test(tc, test_unknown_command);
    tcase_add_test(tc, test_no_command);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
