/* tests/unit_sched_cli.c - `herd schedule`: prints every rank's schedule
 * or one rank's, verifies on request, and rejects bad flags, bad values
 * and unsupported algorithm x collective pairs with exit status 2 and a
 * message naming the problem. */
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"

static int run_herd(const char *args, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s schedule %s 2>&1", tu_herd_binary(), args);
    return tu_run(cmd, out);
}

static int count_lines(const char *s, const char *prefix)
{
    int n = 0;
    size_t pl = strlen(prefix);
    for (const char *l = s; l && *l;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        n += strncmp(l, prefix, pl) == 0;
    return n;
}

START_TEST(test_one_rank)
{
    char *out = NULL;
    int rc = run_herd("--algo ring --coll all_reduce -p 8 --count 64 --rank 3",
                      &out);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(out, "# rank 3/8 ring all_reduce count=64"));
    ck_assert_int_eq(count_lines(out, "# rank"), 1);
    /* 2(p-1) sends of n/p = 8 elements */
    ck_assert_int_eq(count_lines(out, " "), 28);
    ck_assert_ptr_nonnull(strstr(out, "send        to   4"));
    ck_assert_ptr_nonnull(strstr(out, "n=8 "));
    free(out);
}
END_TEST

START_TEST(test_all_ranks_verify)
{
    char *out = NULL;
    int rc = run_herd("--algo binomial --coll scatter -p 5 --count 3 "
                      "--root 2 --channels 2 --chunk 4 --verify",
                      &out);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(count_lines(out, "# rank"), 5);
    ck_assert_ptr_nonnull(strstr(out, "# verify: ok"));
    free(out);
    rc = run_herd("--algo hier -p 8 --ranks-per-node 4 --count 1K "
                  "--dtype float64 --inter tree --verify",
                  &out);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(out, "# verify: ok"));
    free(out);
}
END_TEST

START_TEST(test_help)
{
    char *out = NULL;
    ck_assert_int_eq(run_herd("--help", &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: herd schedule"));
    ck_assert_ptr_nonnull(strstr(out, "--ranks-per-node"));
    free(out);
}
END_TEST

static void expect_usage_error(const char *args, const char *needle)
{
    char *out = NULL;
    int rc = run_herd(args, &out);
    ck_assert_msg(rc == 2, "'%s' exited %d: %s", args, rc, out);
    ck_assert_msg(out && strstr(out, needle), "'%s' printed '%s'", args, out);
    free(out);
}

START_TEST(test_bad_usage)
{
    expect_usage_error("--algo ring --coll all_to_all",
                       "'ring' does not implement all_to_all");
    expect_usage_error("--bogus 3", "unknown option '--bogus'");
    expect_usage_error("-p", "-p needs a value");
    expect_usage_error("-p 0", "-p must be at least 1");
    expect_usage_error("--count 12x", "bad value '12x' for --count");
    expect_usage_error("--algo spiral", "bad value 'spiral' for --algo");
    expect_usage_error("--coll send", "bad value 'send' for --coll");
    expect_usage_error("--dtype float7", "bad value 'float7' for --dtype");
    expect_usage_error("-p 4 --rank 4", "--rank 4 out of range");
    expect_usage_error("-p 4 --coll broadcast --root 9",
                       "--root 9 out of range");
    expect_usage_error("--algo hier -p 6 --ranks-per-node 4",
                       "does not divide");
    expect_usage_error("stray", "unexpected argument 'stray'");
    expect_usage_error("--inter direct", "bad value 'direct' for --inter");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sched_cli");
    TCase *tc = tcase_create("cli");
    tcase_add_test(tc, test_one_rank);
    tcase_add_test(tc, test_all_ranks_verify);
    tcase_add_test(tc, test_help);
    tcase_add_test(tc, test_bad_usage);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
