/* tests/testbed_guard.c - the testbed protects what is up: `up` refuses
 * a testbed of its instance that exists (and concurrent ups are
 * serialised by the lock, not interleaved), two instances live side by
 * side, `down` names the namespaces whose processes it would strand, an
 * interrupted `up` undoes itself, a killed one leaves namespaces that
 * `status` reports, and `ip`'s own error output reaches the user.
 *
 * Every case uses its own instance id (tg<pid><letter>), so a testbed
 * someone else brought up on this machine is never touched. Before
 * instances and the lock, a second `up` silently destroyed the first,
 * `status` called a half-built testbed "no testbed is up", and a failing
 * `ip` said only "could not create the switch". Root only (77). */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "real/testbed/testbed.h"
#include "support/testutil.h"

static char id[32];

/* A fresh instance id for this case; HERD_TESTBED_ID for every herd run. */
static void use_id(char letter)
{
    snprintf(id, sizeof(id), "tg%ld%c", (long)getpid(), letter);
    setenv("HERD_TESTBED_ID", id, 1);
}

/* `herd ARGS` for the current id, output captured. */
static int herd(const char *args, char **out)
{
    return tu_herd(args, out);
}

static int count_ns(const char *which)
{
    char cmd[256], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "ip netns list 2>/dev/null | grep -c '^" TESTBED_NS_PREFIX "%s-'",
             which);
    tu_run(cmd, &out);
    int n = out ? atoi(out) : -1;
    free(out);
    return n;
}

static int ns_exists(const char *name)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof(path), "/run/netns/%s", name);
    return stat(path, &st) == 0;
}

static void expect(const char *out, const char *needle)
{
    ck_assert_msg(out && strstr(out, needle), "'%s' not in:\n%s", needle,
                  out ? out : "(null)");
}

START_TEST(up_refuses_a_testbed_that_is_up)
{
    use_id('a');
    char *out = NULL;
    ck_assert_int_eq(herd("testbed up --hosts 2", &out), 0);
    free(out);
    ck_assert_int_eq(count_ns(id), 3);
    ck_assert_int_ne(herd("testbed up --hosts 3", &out), 0);
    expect(out, "is up (2 hosts)");
    expect(out, "--force");
    free(out);
    ck_assert_int_eq(count_ns(id), 3); /* untouched */
    ck_assert_int_eq(herd("testbed status", &out), 0);
    char name[64];
    snprintf(name, sizeof(name), TESTBED_NS_PREFIX "%s-h1", id);
    expect(out, name);
    free(out);
    ck_assert_int_eq(herd("testbed up --hosts 3 --force", &out), 0);
    free(out);
    ck_assert_int_eq(count_ns(id), 4);
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);
    ck_assert_int_eq(count_ns(id), 0);
    /* Two ups at once: the lock runs them one after the other, so one
     * succeeds and the other finds it up (before, each deleted the
     * other's namespaces and both failed). */
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "%s testbed up --hosts 4 > /dev/null 2>&1 & a=$!; "
             "%s testbed up --hosts 4 > /dev/null 2>&1 & b=$!; "
             "wait $a; ra=$?; wait $b; rb=$?; echo $ra$rb",
             tu_herd_binary(), tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_msg(!strcmp(out, "01\n") || !strcmp(out, "10\n"), "%s", out);
    free(out);
    ck_assert_int_eq(count_ns(id), 5);
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);
}
END_TEST

START_TEST(two_instances_side_by_side)
{
    use_id('b');
    char a[40], b[40], args[160], *out = NULL;
    snprintf(a, sizeof(a), "%s", id);
    snprintf(b, sizeof(b), "%sx", id);
    ck_assert_int_eq(herd("testbed up --hosts 2", &out), 0);
    free(out);
    snprintf(args, sizeof(args), "testbed --id %s up --hosts 2", b);
    ck_assert_int_eq(herd(args, &out), 0);
    free(out);
    ck_assert_int_eq(count_ns(a), 3);
    ck_assert_int_eq(count_ns(b), 3);
    /* Each runs in its own hosts. */
    ck_assert_int_eq(
        herd("testbed run --timeout 20 -- sh -c 'echo R$RANK'", &out), 0);
    expect(out, "R1");
    free(out);
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);
    ck_assert_int_eq(count_ns(a), 0);
    ck_assert_int_eq(count_ns(b), 3);
    snprintf(args, sizeof(args), "testbed --id %s status", b);
    ck_assert_int_eq(herd(args, &out), 0);
    free(out);
    snprintf(args, sizeof(args), "testbed down --id %s", b);
    ck_assert_int_eq(herd(args, &out), 0);
    free(out);
    ck_assert_int_eq(count_ns(b), 0);
    ck_assert_int_eq(herd("testbed --id no/slash status", &out), 2);
    expect(out, "--id");
    free(out);
}
END_TEST

START_TEST(down_names_namespaces_with_processes)
{
    use_id('c');
    char *out = NULL, cmd[1024], h0[64];
    ck_assert_int_eq(herd("testbed up --hosts 2", &out), 0);
    free(out);
    snprintf(cmd, sizeof(cmd),
             "%s testbed run --timeout 60 -- sleep 45 > /dev/null 2>&1 & "
             "echo $!",
             tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    pid_t runner = (pid_t)atol(out);
    free(out);
    snprintf(h0, sizeof(h0), TESTBED_NS_PREFIX "%s-h0", id);
    snprintf(cmd, sizeof(cmd), "ip netns pids %s", h0);
    int seen = 0;
    for (int i = 0; i < 500 && !seen; i++) {
        tu_run(cmd, &out);
        seen = out && out[0] >= '0' && out[0] <= '9';
        free(out);
        if (!seen)
            usleep(20000);
    }
    ck_assert(seen);
    ck_assert_int_eq(herd("testbed down", &out), 1);
    expect(out, h0);
    expect(out, "processes still run");
    free(out);
    ck_assert_int_eq(count_ns(id), 3); /* refused: nothing removed */
    ck_assert_int_eq(herd("testbed down --force", &out), 0);
    free(out);
    ck_assert_int_eq(count_ns(id), 0);
    /* Its ranks were killed: the runner ends (it is not our child). */
    for (int i = 0; i < 500 && kill(runner, 0) == 0; i++)
        usleep(20000);
    ck_assert_int_ne(kill(runner, 0), 0);
}
END_TEST

/* Start `herd testbed up --hosts 64`, wait until host 1's namespace
 * exists, send sig; the exit status. */
static int up_interrupted(int sig)
{
    char h1[64];
    snprintf(h1, sizeof(h1), TESTBED_NS_PREFIX "%s-h1", id);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(tu_herd_binary(), "herd", "testbed", "up", "--hosts", "64",
              (char *)NULL);
        _exit(127);
    }
    ck_assert_int_gt(pid, 0);
    int status = 0;
    for (int i = 0; i < 30000 && !ns_exists(h1); i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            ck_abort_msg("up ended before host 1 existed (status %d)", status);
        usleep(1000);
    }
    ck_assert(ns_exists(h1));
    kill(pid, sig);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

START_TEST(interrupted_up_undoes_itself)
{
    use_id('d');
    char *out = NULL;
    int status = up_interrupted(SIGTERM);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d",
                  status);
    ck_assert_int_eq(count_ns(id), 0);
    ck_assert_int_eq(herd("testbed status", &out), 1);
    expect(out, "no testbed is up\n");
    free(out);
}
END_TEST

START_TEST(killed_up_leaves_what_status_reports)
{
    use_id('e');
    char *out = NULL, sw[64];
    int status = up_interrupted(SIGKILL);
    ck_assert(WIFSIGNALED(status));
    ck_assert_int_gt(count_ns(id), 0);
    snprintf(sw, sizeof(sw), TESTBED_NS_PREFIX "%s-switch", id);
    ck_assert_int_eq(herd("testbed status", &out), 1);
    expect(out, "left namespaces behind");
    expect(out, sw);
    free(out);
    ck_assert_int_ne(herd("testbed up --hosts 2", &out), 0);
    expect(out, "left namespaces behind");
    free(out);
    ck_assert_int_eq(herd("testbed down", &out), 0);
    free(out);
    ck_assert_int_eq(count_ns(id), 0);
}
END_TEST

START_TEST(ip_error_reaches_the_user)
{
    use_id('f');
    char *dir = tu_tmpdir(), *out = NULL, *ip = NULL, path[600], cmd[2048];
    ck_assert_int_eq(tu_run("command -v ip", &ip), 0);
    ip[strcspn(ip, "\n")] = '\0';
    /* An `ip` that cannot make bridges, as on a kernel without them. */
    snprintf(path, sizeof(path), "%s/ip", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "#!/bin/sh\ncase \"$*\" in *'type bridge'*) echo 'RTNETLINK "
            "answers: Operation not supported' >&2; exit 2;; esac\n"
            "exec %s \"$@\"\n",
            ip);
    fclose(f);
    chmod(path, 0755);
    snprintf(cmd, sizeof(cmd), "PATH=%s:$PATH %s testbed up --hosts 1 2>&1",
             dir, tu_herd_binary());
    ck_assert_int_eq(tu_run(cmd, &out), 1);
    expect(out, "RTNETLINK answers: Operation not supported");
    expect(out, "link add br0 type bridge");
    free(out);
    ck_assert_int_eq(count_ns(id), 0); /* undone */
    free(ip);
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
    Suite *s = suite_create("testbed_guard");
    TCase *tc = tcase_create("guard");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, up_refuses_a_testbed_that_is_up);
    tcase_add_test(tc, two_instances_side_by_side);
    tcase_add_test(tc, down_names_namespaces_with_processes);
    tcase_add_test(tc, interrupted_up_undoes_itself);
    tcase_add_test(tc, killed_up_leaves_what_status_reports);
    tcase_add_test(tc, ip_error_reaches_the_user);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
