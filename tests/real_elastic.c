/* tests/real_elastic.c - `herd launch --nnodes MIN:MAX`, elastic
 * membership as torchrun's c10d rendezvous: several launchers as
 * processes on loopback act as nodes. MIN reached and a late node
 * admitted within the last-call window (or the round closed with MIN
 * after it); a node that joins while the group runs below MAX makes it
 * rendezvous again with a larger world (without using a restart); a
 * killed node makes the others restart with a smaller world and finish;
 * a node beyond MAX waits and leaves when the job is done; fewer than
 * MIN nodes within --rdzv-timeout is a clear error; bad MIN:MAX and
 * --rdzv-conf values are refused. Every wait is bounded. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/testutil.h"

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof(a);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *slurpf(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return tu_read_file(path);
}

static void rmdir_all(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}

/* One launcher (a node) in dir, its output in dir/<name>.out. `extra`
 * is a space-separated list of flags; the worker runs under sh -c. */
static pid_t agent(const char *dir, const char *name, int port,
                   const char *extra, const char *worker)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && exec '%s' launch --master-port %d --run-id el "
             "--nproc-per-node 2 --monitor-interval 0.05 --stop-grace 2 %s "
             "-- sh -c '%s' > %s.out 2>&1",
             dir, tu_herd_binary(), port, extra, worker, name);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(98);
    }
    return pid;
}

/* The agent's exit code; killed (and failing the test) after 60 s. */
static int agent_wait(pid_t pid)
{
    int status = 0;
    for (int i = 0; i < 6000; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ck_abort_msg("launcher %d did not finish within 60 s", (int)pid);
    return -1;
}

/* Wait (at most 30 s) until dir/<name> contains `text`. */
static int wait_text(const char *dir, const char *name, const char *text)
{
    for (int i = 0; i < 3000; i++) {
        char *s = slurpf(dir, name);
        int hit = s && strstr(s, text);
        free(s);
        if (hit)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

/* Wait (at most 30 s) until log.0 .. log.n-1 exist. */
static int wait_logs(const char *dir, int n)
{
    for (int i = 0; i < 3000; i++) {
        int have = 0;
        for (int r = 0; r < n; r++) {
            char path[600];
            struct stat sb;
            snprintf(path, sizeof(path), "%s/log.%d", dir, r);
            have += stat(path, &sb) == 0;
        }
        if (have == n)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

/* The store is up once its port takes connections: the first agent
 * then hosts it, so the test knows which one not to kill. */
static void wait_store(int port)
{
    for (int i = 0; i < 3000; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        close(fd);
        if (ok)
            return;
        sleep_ms(10);
    }
    ck_abort_msg("no store on port %d within 30 s", port);
}

static void assert_log(const char *dir, int rank, const char *want)
{
    char name[32];
    snprintf(name, sizeof(name), "log.%d", rank);
    char *log = slurpf(dir, name);
    ck_assert_msg(log, "no %s", name);
    ck_assert_msg(!strcmp(log, want), "%s: '%s', want '%s'", name, log, want);
    free(log);
}

static char *out_of(const char *dir, const char *name)
{
    char file[64];
    snprintf(file, sizeof(file), "%s.out", name);
    char *s = slurpf(dir, file);
    ck_assert_ptr_nonnull(s);
    return s;
}

#define LOG_WORKER "echo $TORCHELASTIC_RESTART_COUNT $WORLD_SIZE >> log.$RANK"

/* MIN nodes, then a third within the last-call window: it is admitted
 * and the round closes at MAX without waiting out the window. Then two
 * nodes alone: the round closes with MIN once the window passes. */
START_TEST(test_late_joiner_in_window)
{
    char *dir = tu_tmpdir();
    int port = free_port();
    const char *flags = "--nnodes 2:3 --rdzv-conf last_call_timeout=20";
    pid_t a = agent(dir, "a", port, flags, LOG_WORKER);
    wait_store(port);
    pid_t b = agent(dir, "b", port, flags, LOG_WORKER);
    ck_assert(wait_text(dir, "a.out", "2 nodes joined (at least 2)"));
    pid_t c = agent(dir, "c", port, flags, LOG_WORKER);
    ck_assert_int_eq(agent_wait(a), 0);
    ck_assert_int_eq(agent_wait(b), 0);
    ck_assert_int_eq(agent_wait(c), 0);
    for (int r = 0; r < 6; r++)
        assert_log(dir, r, "0 6\n");
    char *out = out_of(dir, "c");
    ck_assert_msg(strstr(out, "round 0: node 2 of 3"), "%s", out);
    free(out);
    rmdir_all(dir);

    dir = tu_tmpdir();
    port = free_port();
    flags = "--nnodes 2:3 --rdzv-conf last_call_timeout=1";
    a = agent(dir, "a", port, flags, LOG_WORKER);
    wait_store(port);
    b = agent(dir, "b", port, flags, LOG_WORKER);
    ck_assert_int_eq(agent_wait(a), 0);
    ck_assert_int_eq(agent_wait(b), 0);
    for (int r = 0; r < 4; r++)
        assert_log(dir, r, "0 4\n");
    out = out_of(dir, "b");
    ck_assert_msg(strstr(out, "round 0: node 1 of 2"), "%s", out);
    free(out);
    rmdir_all(dir);
}
END_TEST

/* A node that arrives while a group below MAX runs: the group stops and
 * rendezvouses again with it, without using a restart (torchrun's
 * waiting nodes), so --max-restarts 0 still finishes. */
START_TEST(test_joiner_while_running)
{
    char *dir = tu_tmpdir();
    int port = free_port();
    const char *flags =
        "--nnodes 2:3 --max-restarts 0 --rdzv-conf last_call_timeout=1";
    const char *worker = LOG_WORKER "; [ $WORLD_SIZE = 6 ] || exec sleep 60";
    pid_t a = agent(dir, "a", port, flags, worker);
    wait_store(port);
    pid_t b = agent(dir, "b", port, flags, worker);
    ck_assert(wait_logs(dir, 4));
    pid_t c = agent(dir, "c", port, flags, worker);
    ck_assert_int_eq(agent_wait(a), 0);
    ck_assert_int_eq(agent_wait(b), 0);
    ck_assert_int_eq(agent_wait(c), 0);
    for (int r = 0; r < 4; r++)
        assert_log(dir, r, "0 4\n0 6\n");
    for (int r = 4; r < 6; r++)
        assert_log(dir, r, "0 6\n");
    char *out = out_of(dir, "a");
    ck_assert_msg(strstr(out, "a node is waiting to join") &&
                      strstr(out, "no restart used"),
                  "%s", out);
    free(out);
    rmdir_all(dir);
}
END_TEST

/* A node killed while the group runs: the others miss its keep-alives,
 * restart (using one) with a smaller world and finish. */
START_TEST(test_node_killed)
{
    char *dir = tu_tmpdir();
    int port = free_port();
    const char *flags =
        "--nnodes 2:3 --max-restarts 1 --rdzv-conf "
        "last_call_timeout=5,keep_alive_interval=1,keep_alive_max_attempt=4";
    const char *worker =
        LOG_WORKER "; if [ $WORLD_SIZE = 6 ]; then exec sleep 60; fi";
    pid_t a = agent(dir, "a", port, flags, worker);
    wait_store(port);
    pid_t b = agent(dir, "b", port, flags, worker);
    pid_t c = agent(dir, "c", port, flags, worker);
    ck_assert(wait_logs(dir, 6));
    ck_assert(wait_text(dir, "c.out", " of 3 (--nnodes"));
    kill(c, SIGKILL); /* c's workers die with it (PDEATHSIG) */
    int status = 0;
    waitpid(c, &status, 0);
    ck_assert_int_eq(agent_wait(a), 0);
    ck_assert_int_eq(agent_wait(b), 0);
    for (int r = 0; r < 4; r++) {
        char name[16];
        snprintf(name, sizeof(name), "log.%d", r);
        char *log = slurpf(dir, name);
        ck_assert_msg(log && strstr(log, "1 4\n"), "%s: %s", name, log);
        free(log);
    }
    char *out = out_of(dir, "a");
    ck_assert_msg(strstr(out, "stopped sending keep-alives") &&
                      strstr(out, "restarting the group (restart 1 of 1)"),
                  "%s", out);
    free(out);
    rmdir_all(dir);
}
END_TEST

/* MAX nodes run; a third waits (no restart, no deadline) and leaves
 * without error once the job is done. */
START_TEST(test_beyond_max_waits)
{
    char *dir = tu_tmpdir();
    int port = free_port();
    const char *flags = "--nnodes 1:2 --rdzv-conf last_call_timeout=30";
    const char *worker = LOG_WORKER "; while ! [ -e go ]; do sleep 0.05; done";
    pid_t a = agent(dir, "a", port, flags, worker);
    wait_store(port);
    pid_t b = agent(dir, "b", port, flags, worker);
    ck_assert(wait_logs(dir, 4));
    pid_t c = agent(dir, "c", port, flags, worker);
    ck_assert(wait_text(dir, "c.out", "(the most --nnodes allows); waiting"));
    char go[600];
    snprintf(go, sizeof(go), "%s/go", dir);
    FILE *f = fopen(go, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(agent_wait(a), 0);
    ck_assert_int_eq(agent_wait(b), 0);
    ck_assert_int_eq(agent_wait(c), 0);
    for (int r = 0; r < 4; r++)
        assert_log(dir, r, "0 4\n");
    struct stat sb;
    snprintf(go, sizeof(go), "%s/log.4", dir);
    ck_assert_int_ne(stat(go, &sb), 0);
    char *out = out_of(dir, "c");
    ck_assert_msg(strstr(out, "the job finished without this node"), "%s", out);
    free(out);
    out = out_of(dir, "a");
    ck_assert_msg(!strstr(out, "rendezvouses again"), "%s", out);
    free(out);
    rmdir_all(dir);
}
END_TEST

/* Fewer than MIN within --rdzv-timeout: a clear error, no workers. */
START_TEST(test_timeout_below_min)
{
    char *dir = tu_tmpdir(), *out = NULL, cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && '%s' launch --nnodes 2:3 --master-port %d "
             "--rdzv-timeout 1 --rdzv-id lone -- touch ran 2>&1",
             dir, tu_herd_binary(), free_port());
    ck_assert_int_eq(tu_run(cmd, &out), 1);
    ck_assert_msg(strstr(out, "rendezvous of run 'lone' timed out after 1 s") &&
                      strstr(out, "1 of at least 2 nodes joined"),
                  "%s", out);
    free(out);
    char path[600];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/ran", dir);
    ck_assert_int_ne(stat(path, &sb), 0);
    rmdir_all(dir);
}
END_TEST

START_TEST(test_usage)
{
    char *out = NULL;
    ck_assert_int_eq(tu_herd("launch --nnodes 3:2 -- true", &out), 2);
    ck_assert_msg(strstr(out, "MIN must not exceed MAX"), "%s", out);
    free(out);
    ck_assert_int_eq(tu_herd("launch --standalone --nnodes 1:2 -- true", &out),
                     2);
    ck_assert_msg(strstr(out, "--standalone runs one node"), "%s", out);
    free(out);
    ck_assert_int_eq(tu_herd("launch --rdzv-conf timeout=3 -- true", &out), 2);
    ck_assert_msg(strstr(out, "'timeout' is not supported"), "%s", out);
    free(out);
    ck_assert_int_eq(
        tu_herd("launch --rdzv-conf keep_alive_interval=0 -- true", &out), 2);
    ck_assert_msg(strstr(out, "keep_alive_interval"), "%s", out);
    free(out);
    ck_assert_int_eq(tu_herd("launch --nnodes 0:2 -- true", &out), 2);
    ck_assert_msg(strstr(out, "--nnodes"), "%s", out);
    free(out);
}
END_TEST

static Suite *elastic_suite(void)
{
    Suite *s = suite_create("real_elastic");
    TCase *tc = tcase_create("elastic");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_late_joiner_in_window);
    tcase_add_test(tc, test_joiner_while_running);
    tcase_add_test(tc, test_node_killed);
    tcase_add_test(tc, test_beyond_max_waits);
    tcase_add_test(tc, test_timeout_below_min);
    tcase_add_test(tc, test_usage);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(elastic_suite());
}
