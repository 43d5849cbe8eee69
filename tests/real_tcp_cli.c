/* tests/real_tcp_cli.c - CLI runs on the tcp engine: the collective
 * timeout can be shortened (`--timeout` on herd perf and herd replay,
 * HERD_TIMEOUT, a scenario's `timeout:` for herd replay), and every rank
 * that fails says why, not only rank 0.
 *
 * Timeouts: a two-rank trace in which rank 1 computes for 120 s before
 * the all_reduce that rank 0 enters at once; rank 0 must fail after the
 * short timeout, naming rank 1, well inside the launcher's own life
 * (before, the 600 s default could not be changed from the CLI and the
 * test hit its wall limit). Causes: three ranks of `herd perf` started
 * without the launcher (which would stop the others at the first
 * failure), rank 2 with a different size; before, ranks 0 and 1 printed
 * only "run failed: operation aborted". Loopback only. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "real/store/store.h"
#include "support/testutil.h"

static char *dir;
static char trace[600];

static void write_trace(void)
{
    dir = tu_tmpdir();
    snprintf(trace, sizeof(trace), "%s/late.json", dir);
    FILE *f = fopen(trace, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"format\": \"herd-trace\", \"version\": 1, \"world_size\": 2,\n"
          " \"ops\": [{\"op\": \"compute\", \"dur_us\": 120000000, "
          "\"ranks\": [1]},\n"
          "         {\"op\": \"all_reduce\", \"count\": 16}]}\n",
          f);
    fclose(f);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof(a);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* `ENV herd launch --nproc-per-node 2 -- herd replay TRACE ARGS`. */
static int replay(const char *env, const char *args, char **out)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "cd %s && %s timeout 100 %s launch --quiet --nproc-per-node 2 "
             "--master-port %d -- %s replay %s --engine tcp -o %s/out %s 2>&1",
             dir, env, tu_herd_binary(), free_port(), tu_herd_binary(), trace,
             dir, args);
    return tu_run(cmd, out);
}

static void expect(const char *out, const char *needle)
{
    ck_assert_msg(out && strstr(out, needle), "'%s' not in:\n%s", needle,
                  out ? out : "(null)");
}

START_TEST(replay_timeout_flag)
{
    write_trace();
    char *out = NULL;
    int rc = replay("", "--timeout 2", &out);
    ck_assert_int_ne(rc, 0);
    ck_assert_int_ne(rc, 124); /* not the wall limit */
    expect(out, "herd replay: rank 0: op 1 (all_reduce)");
    expect(out, "timed out after 2 s");
    expect(out, "rank(s) 1 did not join");
    free(out);
}
END_TEST

START_TEST(replay_timeout_env)
{
    write_trace();
    char *out = NULL;
    int rc = replay("HERD_TIMEOUT=1.5", "", &out);
    ck_assert_int_ne(rc, 0);
    ck_assert_int_ne(rc, 124);
    expect(out, "timed out after 1.5 s");
    free(out);
    ck_assert_int_eq(replay("HERD_TIMEOUT=soon", "", &out), 2);
    expect(out, "HERD_TIMEOUT");
    free(out);
}
END_TEST

START_TEST(replay_timeout_scenario)
{
    write_trace();
    char path[700], args[800], *out = NULL;
    snprintf(path, sizeof(path), "%s/sc.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("cluster:\n  nodes: 1\n  gpus_per_node: 2\ntimeout: 2.5s\n", f);
    fclose(f);
    snprintf(args, sizeof(args), "--scenario %s", path);
    int rc = replay("HERD_TIMEOUT=300", args, &out);
    ck_assert_int_ne(rc, 0);
    ck_assert_int_ne(rc, 124);
    expect(out, "timed out after 2.5 s");
    free(out);
}
END_TEST

START_TEST(perf_timeout_flag_checked)
{
    char *out = NULL;
    ck_assert_int_eq(tu_herd("perf --engine tcp --timeout 0", &out), 2);
    expect(out, "--timeout");
    free(out);
    ck_assert_int_eq(
        tu_run("HERD_TIMEOUT=-1 timeout 20 \"$HERD_BINARY\" perf --engine "
               "tcp 2>&1",
               &out),
        2);
    expect(out, "HERD_TIMEOUT");
    free(out);
}
END_TEST

/* Three `herd perf` ranks on a store of this test; rank 2 with another
 * size. Each rank's output in dir/rank<R>.txt. */
START_TEST(every_rank_says_why)
{
    dir = tu_tmpdir();
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, NULL, &srv), HERD_OK);
    int port = store_server_port(srv);
    pid_t pids[3];
    fflush(NULL);
    for (int r = 0; r < 3; r++) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd),
                 "RANK=%d WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=%d "
                 "HERD_STORE_EXTERNAL=1 timeout 60 %s perf --engine tcp -b %s "
                 "-e %s -n 2 --timeout 20 > %s/rank%d.txt 2>&1",
                 r, port, tu_herd_binary(), r == 2 ? "2K" : "1K",
                 r == 2 ? "2K" : "1K", dir, r);
        pids[r] = fork();
        if (pids[r] == 0) {
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
    }
    for (int r = 0; r < 3; r++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pids[r], &status, 0), pids[r]);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    }
    store_server_stop(srv);
    for (int r = 0; r < 3; r++) {
        char path[700], want[64];
        snprintf(path, sizeof(path), "%s/rank%d.txt", dir, r);
        char *out = tu_read_file(path);
        snprintf(want, sizeof(want), "herd perf: rank %d: all_reduce of", r);
        expect(out, want); /* the cause follows, not "operation aborted" */
        free(out);
    }
}
END_TEST

/* The libraries' own algorithms (nccl, gloo) are the simulator's models:
 * on the tcp engine they run the engine's own choice, with results
 * checked (no wrong elements). */
START_TEST(library_algos_run_own_choice)
{
    char *out = NULL, args[1024];
    const char *algos[] = {"gloo", "nccl"};
    for (int a = 0; a < 2; a++) {
        snprintf(args, sizeof(args),
                 "launch --nproc-per-node 2 -- %s perf --engine tcp --algo %s "
                 "-b 64K -e 64K -n 2 -c 1 --timeout 30",
                 tu_herd_binary(), algos[a]);
        ck_assert_int_eq(tu_herd(args, &out), 0);
        ck_assert_msg(strstr(out, "# Out of bounds values : 0 OK"), "%s", out);
        free(out);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("real_tcp_cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, replay_timeout_flag);
    tcase_add_test(tc, replay_timeout_env);
    tcase_add_test(tc, replay_timeout_scenario);
    tcase_add_test(tc, perf_timeout_flag_checked);
    tcase_add_test(tc, every_rank_says_why);
    tcase_add_test(tc, library_algos_run_own_choice);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
