/* tests/real_tcp_launch.c - the tcp engine under `herd launch` (env://
 * rendezvous): `herd perf --engine tcp -c 1` on 3 workers prints the
 * nccl-tests table from rank 0 with no wrong element out of place or in
 * place, for all_reduce (two operations posted per iteration, the ranks'
 * greatest time) and a rooted collective. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real_tcp_harness.h"
#include "support/testutil.h"

/* Rows of the table (lines starting with spaces then a digit) and their
 * last column (#wrong); returns the row count, -1 if any row is wrong. */
static int table_rows(const char *out)
{
    int rows = 0;
    for (const char *l = out; l && *l;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *p = l;
        while (*p == ' ')
            p++;
        if (p == l || *p < '0' || *p > '9')
            continue;
        const char *end = strchr(l, '\n');
        const char *q = end ? end : l + strlen(l);
        while (q > l && (q[-1] == ' ' || q[-1] == '\r'))
            q--;
        const char *s = q;
        while (s > l && s[-1] != ' ')
            s--;
        if (atoi(s) != 0)
            return -1;
        /* the out-of-place group's #wrong, the 9th column */
        char wrong[32] = "";
        if (sscanf(l, "%*s %*s %*s %*s %*s %*s %*s %*s %31s", wrong) != 1 ||
            strcmp(wrong, "0") != 0)
            return -1;
        rows++;
    }
    return rows;
}

static void run_perf(const char *extra, int want_rows)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "%s launch --standalone --quiet --nproc-per-node 3 -- %s perf "
             "--engine tcp -f 16 -n 2 -w 1 -c 1 %s 2>&1",
             tu_herd_binary(), tu_herd_binary(), extra);
    int rc = tu_run(cmd, &out);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    ck_assert_msg(table_rows(out) == want_rows, "rows:\n%s", out);
    ck_assert_msg(strstr(out, "out-of-place                       in-place"),
                  "%s", out);
    free(out);
}

START_TEST(test_perf_all_reduce)
{
    run_perf("-b 8 -e 128K -m 2 -a 3", 4); /* 2 posted per iteration */
}
END_TEST

START_TEST(test_perf_broadcast)
{
    run_perf("--coll broadcast -r 2 -b 1K -e 16K", 2);
}
END_TEST

int main(void)
{
    if (!rt_loopback_ok())
        return 77;
    Suite *s = suite_create("real_tcp_launch");
    TCase *tc = tcase_create("launch");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_perf_all_reduce);
    tcase_add_test(tc, test_perf_broadcast);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
