/* tests/testbed_netns.c - the emulated cluster: up/run/down work
 * repeatedly, ranks see their environment and reach each other through
 * the bridge, and `down` cleans up after a killed run. Skips (77) when not
 * root or without network namespaces. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real/testbed/testbed.h"
#include "support/testutil.h"

/* `herd ARGS`, output captured. */
#define herd tu_herd

/* This suite's own instance: a testbed someone else brought up on this
 * machine is never touched. */
static char tb_id[32];

static int count_namespaces(void)
{
    char *out = NULL, cmd[256];
    snprintf(cmd, sizeof(cmd),
             "ip netns list 2>/dev/null | grep -c '^" TESTBED_NS_PREFIX "%s-'",
             tb_id);
    tu_run(cmd, &out);
    int n = out ? atoi(out) : -1;
    free(out);
    return n;
}

START_TEST(up_run_down_twice)
{
    for (int round = 0; round < 2; round++) {
        char *out = NULL;
        ck_assert_int_eq(herd("testbed up --hosts 3 --bandwidth 200Mbit", &out),
                         0);
        free(out);
        ck_assert_int_eq(count_namespaces(), 4); /* 3 hosts + the switch */
        ck_assert_int_eq(
            herd("testbed run --timeout 20 -- sh -c 'echo R=$RANK/$WORLD_SIZE "
                 "M=$MASTER_ADDR'",
                 &out),
            0);
        ck_assert_ptr_nonnull(strstr(out, "R=0/3 M=10.250.0.1"));
        ck_assert_ptr_nonnull(strstr(out, "R=2/3 M=10.250.0.1"));
        free(out);
        /* Stragglers: one compute scale per host, in rank order. */
        ck_assert_int_eq(herd("testbed run --timeout 20 --slowdown 1,2.5,1 "
                              "-- sh -c 'echo S$RANK=$HERD_COMPUTE_SCALE'",
                              &out),
                         0);
        ck_assert_ptr_nonnull(strstr(out, "S1=2.5"));
        ck_assert_ptr_nonnull(strstr(out, "S0=1"));
        free(out);
        ck_assert_int_eq(herd("testbed down", &out), 0);
        free(out);
        ck_assert_int_eq(count_namespaces(), 0);
    }
}
END_TEST

START_TEST(failing_rank_is_named)
{
    char *out = NULL;
    ck_assert_int_eq(herd("testbed up --hosts 2", &out), 0);
    free(out);
    int rc = herd("testbed run --timeout 20 -- sh -c "
                  "'[ $RANK = 1 ] && exit 7; sleep 30'",
                  &out);
    ck_assert_int_eq(rc, 7);
    ck_assert_ptr_nonnull(strstr(out, "rank 1 exited with code 7"));
    free(out);
    ck_assert_int_eq(herd("testbed run --timeout 1 -- sleep 30", &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "exceeded"));
    free(out);
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);
}
END_TEST

START_TEST(down_after_killed_run)
{
    char *out = NULL;
    ck_assert_int_eq(herd("testbed up --hosts 2", &out), 0);
    free(out);
    /* Kill the runner itself mid-run, as a crash would. */
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "%s testbed run -- sleep 37 & p=$!; sleep 0.5; kill -9 $p; "
             "pkill -f '^sleep 37$'; true",
             tu_herd_binary());
    tu_run(cmd, NULL);
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);
    ck_assert_int_eq(herd("testbed down", &out), 0); /* idempotent */
    free(out);
    ck_assert_int_eq(count_namespaces(), 0);
    ck_assert_int_eq(herd("testbed run -- true", &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "no testbed is up"));
    free(out);
}
END_TEST

START_TEST(bad_usage)
{
    char *out = NULL;
    ck_assert_int_eq(herd("testbed up", &out), 2);
    free(out);
    ck_assert_int_eq(herd("testbed up --hosts 0", &out), 2);
    free(out);
    ck_assert_int_eq(herd("testbed up --hosts 2 --bandwidth fast", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--bandwidth"));
    free(out);
}
END_TEST

/* A TCP setting (/proc/sys/net/ipv4/NAME), read inside host 0. */
static void host_read(const char *name, char *buf, size_t len)
{
    char *out = NULL, cmd[256];
    snprintf(cmd, sizeof(cmd),
             "testbed run --timeout 20 -- sh -c '[ $RANK = 0 ] && echo "
             "V=$(cat /proc/sys/net/ipv4/%s) || true'",
             name);
    ck_assert_int_eq(herd(cmd, &out), 0);
    const char *p = out ? strstr(out, "V=") : NULL;
    ck_assert_ptr_nonnull(p);
    snprintf(buf, len, "%.*s", (int)strcspn(p + 2, "\n"), p + 2);
    free(out);
}

/* What a host's TCP sockets default to. */
static void host_cc(char *buf, size_t len)
{
    host_read("tcp_congestion_control", buf, len);
}

/* The hosts run the congestion control asked for (default cubic, where
 * the machine allows it), whatever the machine's own default, and say so;
 * one that does not exist is refused without leaving namespaces. */
START_TEST(congestion_control)
{
    char *out = NULL, cc[32], mine[32] = "";
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(mine, sizeof(mine), f));
    fclose(f);
    mine[strcspn(mine, "\n")] = '\0';

    ck_assert_int_eq(herd("testbed up --hosts 2", &out), 0);
    int fell_back = strstr(out, "note:") != NULL;
    host_cc(cc, sizeof(cc));
    char want[64];
    snprintf(want, sizeof(want), "TCP congestion control %s", cc);
    ck_assert_msg(strstr(out, want), "%s", out);
    ck_assert_str_eq(cc, fell_back ? mine : "cubic");
    free(out);
    ck_assert_int_eq(herd("testbed status", &out), 0);
    ck_assert_msg(strstr(out, "TCP congestion control: "), "%s", out);
    free(out);
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);

    /* reno is always there and always allowed */
    ck_assert_int_eq(herd("testbed up --hosts 2 --cc reno", &out), 0);
    free(out);
    host_cc(cc, sizeof(cc));
    ck_assert_str_eq(cc, "reno");
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);

    ck_assert_int_eq(herd("testbed up --hosts 2 --cc host", &out), 0);
    free(out);
    host_cc(cc, sizeof(cc));
    ck_assert_str_eq(cc, mine);
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);

    ck_assert_int_ne(herd("testbed up --hosts 2 --cc nosuchcc", &out), 0);
    ck_assert_msg(strstr(out, "'nosuchcc' is not available"), "%s", out);
    free(out);
    ck_assert_int_eq(count_namespaces(), 0);
    ck_assert_int_eq(herd("testbed up --hosts 2 --cc 'a b'", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--cc"));
    free(out);
}
END_TEST

/* `testbed up --hosts 2` with `opts`: it says, and host 0 runs, slow start
 * after idle `want` ("1" on, "0" off). */
static void up_idle(const char *opts, const char *want)
{
    char *out = NULL, cmd[256], said[64], v[16];
    snprintf(cmd, sizeof(cmd), "testbed up --hosts 2%s", opts);
    ck_assert_int_eq(herd(cmd, &out), 0);
    snprintf(said, sizeof(said), "slow start after idle %s",
             strcmp(want, "0") ? "on" : "off");
    ck_assert_msg(strstr(out, said), "%s", out);
    free(out);
    host_read("tcp_slow_start_after_idle", v, sizeof(v));
    ck_assert_str_eq(v, want);
}

/* Slow start after idle: Linux's default (on) unless asked, off when
 * asked, in every host; up and status say which; a value that is not on
 * or off is a usage error that leaves nothing behind. */
START_TEST(slow_start_after_idle)
{
    char *out = NULL;
    up_idle("", "1");
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);
    up_idle(" --slow-start-after-idle off", "0");
    ck_assert_int_eq(herd("testbed status", &out), 0);
    ck_assert_msg(strstr(out, "TCP slow start after idle: off"), "%s", out);
    free(out);
    /* and back on, asked for by name, replacing it */
    up_idle(" --slow-start-after-idle on --force", "1");
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);

    ck_assert_int_eq(
        herd("testbed up --hosts 2 --slow-start-after-idle 0", &out), 2);
    ck_assert_msg(strstr(out, "takes on or off, not '0'"), "%s", out);
    free(out);
    ck_assert_int_eq(count_namespaces(), 0);
}
END_TEST

int main(void)
{
    char why[256];
    if (testbed_probe(why, sizeof(why)) != HERD_OK) {
        fprintf(stderr, "skip: %s\n", why);
        return 77;
    }
    snprintf(tb_id, sizeof(tb_id), "tn%ld", (long)getpid());
    setenv("HERD_TESTBED_ID", tb_id, 1);
    Suite *s = suite_create("testbed_netns");
    TCase *tc = tcase_create("netns");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, up_run_down_twice);
    tcase_add_test(tc, failing_rank_is_named);
    tcase_add_test(tc, down_after_killed_run);
    tcase_add_test(tc, bad_usage);
    tcase_add_test(tc, congestion_control);
    tcase_add_test(tc, slow_start_after_idle);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
