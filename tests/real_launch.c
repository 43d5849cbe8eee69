/* tests/real_launch.c - `herd launch`: the torchrun environment, exit
 * codes and the failing rank, restarts, signal forwarding, several nodes
 * on loopback, workers that rendezvous through the launcher's store,
 * torchrun's spellings (rdzv endpoint/id/backend, gpu/cpu counts, the
 * flags herd refuses by name) and worker logs (--log-dir, --redirects,
 * --tee). Elastic --nnodes MIN:MAX is tests/real_elastic.c.
 * Workers are small shell commands, or this binary run as `--worker`. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "real/store/store.h"
#include "support/testutil.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static char *slurpf(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return slurp(path);
}

static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; p && (p = strstr(p, line)); p += n)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
            return 1;
    return 0;
}

static void rmdir_all(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}

/* Run `herd launch ARGS` (a shell fragment) in dir; stdout+stderr in *out. */
static int launch(const char *dir, const char *args, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' launch %s 2>&1", dir,
             tu_herd_binary(), args);
    return tu_run(cmd, out);
}

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

START_TEST(test_env)
{
    char *dir = tu_tmpdir(), *out = NULL, args[512], name[32];
    int port = free_port();
    snprintf(args, sizeof(args),
             "--nproc-per-node 3 --master-port %d --run-id job7 -- "
             "sh -c 'env > env.$RANK'",
             port);
    ck_assert_int_eq(launch(dir, args, &out), 0);
    free(out);
    for (int r = 0; r < 3; r++) {
        snprintf(name, sizeof(name), "env.%d", r);
        char *env = slurpf(dir, name), want[64];
        ck_assert_ptr_nonnull(env);
        snprintf(want, sizeof(want), "RANK=%d", r);
        ck_assert(has_line(env, want));
        snprintf(want, sizeof(want), "LOCAL_RANK=%d", r);
        ck_assert(has_line(env, want));
        snprintf(want, sizeof(want), "ROLE_RANK=%d", r);
        ck_assert(has_line(env, want));
        snprintf(want, sizeof(want), "MASTER_PORT=%d", port);
        ck_assert(has_line(env, want));
        const char *same[] = {"WORLD_SIZE=3",
                              "LOCAL_WORLD_SIZE=3",
                              "GROUP_RANK=0",
                              "GROUP_WORLD_SIZE=1",
                              "ROLE_NAME=default",
                              "ROLE_WORLD_SIZE=3",
                              "MASTER_ADDR=127.0.0.1",
                              "TORCHELASTIC_RESTART_COUNT=0",
                              "TORCHELASTIC_MAX_RESTARTS=0",
                              "TORCHELASTIC_RUN_ID=job7",
                              "OMP_NUM_THREADS=1",
                              "HERD_STORE_EXTERNAL=1",
                              "HERD_STORE_PREFIX=job7/0/"};
        for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
            ck_assert_msg(has_line(env, same[i]), "missing %s", same[i]);
        free(env);
    }
    /* one worker: no OMP_NUM_THREADS; the command without `--` */
    ck_assert_int_eq(launch(dir, "--standalone env > env.single", &out), 0);
    free(out);
    char *env = slurpf(dir, "env.single");
    ck_assert_ptr_nonnull(env);
    ck_assert(has_line(env, "WORLD_SIZE=1"));
    ck_assert_ptr_null(strstr(env, "OMP_NUM_THREADS=1"));
    free(env);
    rmdir_all(dir);
}
END_TEST

START_TEST(test_failure_names_rank)
{
    char *dir = tu_tmpdir(), *out = NULL;
    int rc =
        launch(dir,
               "--standalone --nproc-per-node 4 --stop-grace 2 -- sh -c "
               "'echo $$ > p.$RANK && mv p.$RANK pid.$RANK; if [ $RANK = 3 ]; "
               "then while ! [ -e pid.0 -a -e pid.1 -a -e pid.2 ]; do "
               "sleep 0.01; done; exit 7; fi; exec sleep 60'",
               &out);
    ck_assert_int_eq(rc, 7);
    ck_assert_msg(strstr(out, "herd launch: rank 3 (local 3, pid ") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "exited with code 7; no restarts left"), "%s",
                  out);
    free(out);
    /* the other workers were stopped and reaped: none is left */
    for (int r = 0; r < 3; r++) {
        char name[16];
        snprintf(name, sizeof(name), "pid.%d", r);
        char *p = slurpf(dir, name);
        ck_assert_ptr_nonnull(p);
        pid_t pid = (pid_t)atoi(p);
        ck_assert_int_gt(pid, 0);
        ck_assert_int_ne(kill(pid, 0), 0);
        free(p);
    }
    /* a worker killed by a signal: 128 + signal */
    rc = launch(dir, "--standalone -- sh -c 'kill -KILL $$'", &out);
    ck_assert_int_eq(rc, 137);
    ck_assert_msg(strstr(out, "rank 0 (local 0, pid ") &&
                      strstr(out, "was killed by signal 9"),
                  "%s", out);
    free(out);
    rmdir_all(dir);
}
END_TEST

START_TEST(test_restarts)
{
    char *dir = tu_tmpdir(), *out = NULL;
    /* fails on the first attempt, succeeds on the retry */
    int rc =
        launch(dir,
               "--standalone --nproc-per-node 2 --max-restarts 2 -- sh -c "
               "'echo $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS"
               " >> log.$RANK; [ $TORCHELASTIC_RESTART_COUNT -ge 1 ] || "
               "[ $RANK = 0 ] || exit 5'",
               &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "rank 1 (local 1, pid ") &&
                      strstr(out, "exited with code 5; restarting"),
                  "%s", out);
    free(out);
    char *log = slurpf(dir, "log.1");
    ck_assert_str_eq(log, "0 2\n1 2\n");
    free(log);
    /* always failing: the restarts run out */
    rc = launch(dir,
                "--standalone --max-restarts 1 -- sh -c "
                "'echo x >> runs; exit 3'",
                &out);
    ck_assert_int_eq(rc, 3);
    ck_assert_msg(strstr(out, "no restarts left"), "%s", out);
    free(out);
    char *runs = slurpf(dir, "runs");
    ck_assert_str_eq(runs, "x\nx\n");
    free(runs);
    rmdir_all(dir);
}
END_TEST

static pid_t spawn_launch(const char *dir, char *const args[])
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (chdir(dir) != 0)
            _exit(99);
        execv(tu_herd_binary(), args);
        _exit(98);
    }
    return pid;
}

static int wait_files(const char *dir, const char *prefix, int n)
{
    for (int tries = 0; tries < 1000; tries++) {
        int have = 0;
        for (int r = 0; r < n; r++) {
            char path[600];
            struct stat sb;
            snprintf(path, sizeof(path), "%s/%s.%d", dir, prefix, r);
            have += stat(path, &sb) == 0;
        }
        if (have == n)
            return 1;
        usleep(10000);
    }
    return 0;
}

START_TEST(test_signal_forwarding)
{
    char *dir = tu_tmpdir();
    char *const args[] = {
        "herd",
        "launch",
        "--standalone",
        "--nproc-per-node",
        "2",
        "--quiet",
        "--",
        "sh",
        "-c",
        "trap 'echo $RANK > sig.$RANK; exit 0' TERM; echo > ready.$RANK; "
        "while :; do sleep 0.05; done",
        NULL};
    pid_t pid = spawn_launch(dir, args);
    ck_assert(wait_files(dir, "ready", 2));
    kill(pid, SIGTERM);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 128 + SIGTERM);
    ck_assert(wait_files(dir, "sig", 2)); /* each worker got SIGTERM */
    rmdir_all(dir);
}
END_TEST

START_TEST(test_usage_errors)
{
    char *dir = tu_tmpdir(), *out = NULL;
    ck_assert_int_eq(launch(dir, "--nproc-per-node 2", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "no worker command"));
    free(out);
    ck_assert_int_eq(launch(dir, "--nnodes 4:1 -- true", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "MIN must not exceed MAX"));
    free(out);
    ck_assert_int_eq(launch(dir, "--bogus 1 -- true", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "unknown flag '--bogus'"));
    free(out);
    ck_assert_int_eq(launch(dir, "--nproc-per-node zero -- true", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--nproc-per-node"));
    free(out);
    ck_assert_int_eq(launch(dir, "--nnodes 2 --node-rank 2 -- true", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "--node-rank"));
    free(out);
    ck_assert_int_eq(launch(dir, "--standalone -- /no/such/cmd", &out), 127);
    ck_assert_ptr_nonnull(strstr(out, "cannot run '/no/such/cmd'"));
    free(out);
    ck_assert_int_eq(launch(dir, "--help", &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "--nproc-per-node"));
    free(out);
    /* torchrun's underscore spelling and --flag=value */
    ck_assert_int_eq(launch(dir, "--standalone --nproc_per_node=2 true", &out),
                     0);
    free(out);
    /* the master port taken: a clear error, not a hang */
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, NULL, &srv), HERD_OK);
    char args[128];
    snprintf(args, sizeof(args), "--master-port %d -- true",
             store_server_port(srv));
    ck_assert_int_eq(launch(dir, args, &out), 1);
    ck_assert_msg(strstr(out, "cannot host the store"), "%s", out);
    free(out);
    store_server_stop(srv);
    rmdir_all(dir);
}
END_TEST

/* Two launchers on loopback act as two nodes; rank 3 (node 1) fails in
 * round 0, so both nodes restart together and then succeed. */
START_TEST(test_two_nodes)
{
    char *dir = tu_tmpdir(), *out = NULL, args[1024];
    int port = free_port();
    const char *worker =
        "sh -c 'echo $TORCHELASTIC_RESTART_COUNT $RANK $WORLD_SIZE "
        "$GROUP_RANK $LOCAL_RANK >> log.$RANK; if [ $RANK = 3 ] && "
        "[ $TORCHELASTIC_RESTART_COUNT = 0 ]; then for r in 0 1 2; do "
        "until grep -qs . log.$r; do sleep 0.01; done; done; exit 4; fi'";
    const char *opts = "--nproc-per-node 2 --max-restarts 1 "
                       "--monitor-interval 0.02 --stop-grace 1";
    snprintf(args, sizeof(args),
             "cd '%s' && { '%s' launch --nnodes 2 --node-rank 1 "
             "--master-port %d %s -- %s > node1.out 2>&1 & "
             "'%s' launch --nnodes 2 --node-rank 0 --master-port %d %s -- %s "
             "2>&1; r0=$?; wait $!; r1=$?; cat node1.out; echo rc $r0 $r1; }",
             dir, tu_herd_binary(), port, opts, worker, tu_herd_binary(), port,
             opts, worker);
    ck_assert_int_eq(tu_run(args, &out), 0);
    ck_assert_msg(strstr(out, "rc 0 0"), "%s", out);
    ck_assert_msg(strstr(out, "rank 3 (local 1 on node 1, pid "), "%s", out);
    free(out);
    const char *want[] = {"0 0 4 0 0\n1 0 4 0 0\n", "0 1 4 0 1\n1 1 4 0 1\n",
                          "0 2 4 1 0\n1 2 4 1 0\n", "0 3 4 1 1\n1 3 4 1 1\n"};
    for (int r = 0; r < 4; r++) {
        char name[16];
        snprintf(name, sizeof(name), "log.%d", r);
        char *log = slurpf(dir, name);
        ck_assert_ptr_nonnull(log);
        ck_assert_str_eq(log, want[r]);
        free(log);
    }
    rmdir_all(dir);
}
END_TEST

/* This binary as a worker: rendezvous through env:// on the launcher's
 * store, count arrivals, and (optionally) fail once after counting. */
static int worker_main(void)
{
    herd_init_t init = {.backend = "tcp", .local_rank = -1, .timeout_s = 20};
    store_rdzv_t r;
    char err[256], key[32];
    if (store_rdzv_open(&init, &r, err, sizeof(err)) != HERD_OK) {
        fprintf(stderr, "worker: %s\n", err);
        return 10;
    }
    int restart = atoi(getenv("TORCHELASTIC_RESTART_COUNT"));
    int64_t v = 0;
    if (r.server || store_add(r.client, "count", 1, &v) != HERD_OK)
        return 11; /* the launcher hosts the store, not rank 0 */
    const char *fail = getenv("FAIL_RANK");
    if (fail && atoi(fail) == r.rank && restart == 0)
        _exit(3);
    snprintf(key, sizeof(key), "r%d", r.rank);
    store_set(r.client, key, "1", 1);
    for (int i = 0; i < r.world_size; i++) {
        snprintf(key, sizeof(key), "r%d", i);
        const char *k = key;
        if (store_wait(r.client, &k, 1, 20.0) != HERD_OK)
            return 12;
    }
    if (r.rank == 0) {
        void *val = NULL;
        size_t n = 0;
        if (store_get(r.client, "count", 5.0, &val, &n) != HERD_OK)
            return 13;
        snprintf(key, sizeof(key), "count.%d", restart);
        FILE *f = fopen(key, "w");
        fprintf(f, "%s %d %d\n", (char *)val, r.world_size, r.local_rank);
        fclose(f);
        free(val);
    }
    store_rdzv_close(&r);
    return 0;
}

START_TEST(test_workers_share_the_store)
{
    char *dir = tu_tmpdir(), *out = NULL, self[512], args[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    ck_assert_int_gt(n, 0);
    self[n] = '\0';
    snprintf(args, sizeof(args),
             "cd '%s' && FAIL_RANK=2 HERD_STORE_TOKEN=tok '%s' launch "
             "--standalone --nproc-per-node 3 --max-restarts 1 --stop-grace 2 "
             "-- '%s' --worker 2>&1",
             dir, tu_herd_binary(), self);
    int rc = tu_run(args, &out);
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
    /* round 1 counted 3 arrivals: round 0's keys lived under another
     * prefix */
    char *count = slurpf(dir, "count.1");
    ck_assert_ptr_nonnull(count);
    ck_assert_str_eq(count, "3 3 0\n");
    free(count);
    rmdir_all(dir);
}
END_TEST

/* torchrun's spellings: --rdzv-endpoint/--rdzv-id/--rdzv-backend stand
 * for the master address, port and run id; gpu/cpu/auto worker counts;
 * its flags herd does not take are named. */
START_TEST(test_torchrun_flags)
{
    char *dir = tu_tmpdir(), *out = NULL, args[512];
    int port = free_port();
    snprintf(args, sizeof(args),
             "--rdzv-backend c10d --rdzv-endpoint 127.0.0.1:%d --rdzv-id j9 "
             "--nnodes 1:1 --max-restarts 0 --monitor-interval 0.05 "
             "--rdzv-timeout 30 --nproc-per-node 2 -- sh -c "
             "'echo $MASTER_ADDR $MASTER_PORT $TORCHELASTIC_RUN_ID "
             "$WORLD_SIZE > ep.$RANK'",
             port);
    ck_assert_msg(launch(dir, args, &out) == 0, "%s", out);
    free(out);
    char *ep = slurpf(dir, "ep.1"), want[128];
    ck_assert_ptr_nonnull(ep);
    snprintf(want, sizeof(want), "127.0.0.1 %d j9 2\n", port);
    ck_assert_str_eq(ep, want);
    free(ep);
    ck_assert_int_eq(launch(dir,
                            "--standalone --nproc-per-node cpu -- sh -c "
                            "'echo $LOCAL_WORLD_SIZE > cpus'",
                            &out),
                     0);
    free(out);
    char *cpus = slurpf(dir, "cpus");
    ck_assert_int_eq(atoi(cpus), (int)sysconf(_SC_NPROCESSORS_ONLN));
    free(cpus);
    /* gpu: the device count, or an error that says none was found */
    int rc = launch(dir, "--standalone --nproc-per-node gpu -- true", &out);
    ck_assert_msg(rc == 0 || (rc == 2 && strstr(out, "no CUDA devices")),
                  "%d %s", rc, out);
    free(out);
    ck_assert_int_eq(launch(dir, "--rdzv-backend etcd -- true", &out), 2);
    ck_assert_msg(strstr(out, "--rdzv-backend etcd is not supported"), "%s",
                  out);
    free(out);
    ck_assert_int_eq(launch(dir, "--rdzv-conf a=1 -- true", &out), 2);
    ck_assert_msg(strstr(out, "--rdzv-conf: 'a' is not supported"), "%s", out);
    free(out);
    ck_assert_int_eq(launch(dir, "--max-nnodes 4 -- true", &out), 2);
    ck_assert_msg(strstr(out, "torchrun's --max-nnodes is not supported"), "%s",
                  out);
    free(out);
    ck_assert_int_eq(launch(dir, "--redirects 4 -- true", &out), 2);
    ck_assert_msg(strstr(out, "--redirects"), "%s", out);
    free(out);
    ck_assert_int_eq(launch(dir, "--tee 0:3,x -- true", &out), 2);
    ck_assert_msg(strstr(out, "--tee"), "%s", out);
    free(out);
    ck_assert_int_eq(launch(dir, "--rdzv-endpoint :5 -- true", &out), 2);
    ck_assert_msg(strstr(out, "--rdzv-endpoint"), "%s", out);
    free(out);
    rmdir_all(dir);
}
END_TEST

/* --log-dir/--redirects/--tee: every stream redirected to
 * DIR/RUN_ID/attempt_N/LOCAL/{stdout,stderr}.log, one round per attempt;
 * local rank 0's stdout also reaches the console, prefixed. */
START_TEST(test_log_dir)
{
    char *dir = tu_tmpdir(), *out = NULL;
    ck_assert_int_eq(
        launch(dir,
               "--standalone --rdzv-id lj --nproc-per-node 2 --max-restarts 1 "
               "--log-dir logs --redirects 3 --tee 0:1 -- sh -c "
               "'echo out$LOCAL_RANK.$TORCHELASTIC_RESTART_COUNT; "
               "echo err$LOCAL_RANK >&2; test $TORCHELASTIC_RESTART_COUNT = 1'",
               &out),
        0);
    ck_assert_msg(has_line(out, "[default0]:out0.1"), "%s", out);
    ck_assert_msg(!strstr(out, "out1") && !strstr(out, "err0") &&
                      !strstr(out, "err1"),
                  "%s", out);
    free(out);
    /* round 0's workers both fail, and the first failure stops the
     * other at any point: only its directories are certain */
    struct stat sb;
    char p0[600];
    snprintf(p0, sizeof(p0), "%s/logs/lj/attempt_0/1", dir);
    ck_assert_int_eq(stat(p0, &sb), 0);
    const char *files[][2] = {{"logs/lj/attempt_1/0/stdout.log", "out0.1\n"},
                              {"logs/lj/attempt_1/1/stdout.log", "out1.1\n"},
                              {"logs/lj/attempt_1/1/stderr.log", "err1\n"}};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char *text = slurpf(dir, files[i][0]);
        ck_assert_msg(text, "no %s", files[i][0]);
        ck_assert_str_eq(text, files[i][1]);
        free(text);
    }
    rmdir_all(dir);
}
END_TEST

static Suite *launch_suite(void)
{
    Suite *s = suite_create("real_launch");
    TCase *tc = tcase_create("launch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_env);
    tcase_add_test(tc, test_failure_names_rank);
    tcase_add_test(tc, test_restarts);
    tcase_add_test(tc, test_signal_forwarding);
    tcase_add_test(tc, test_usage_errors);
    tcase_add_test(tc, test_two_nodes);
    tcase_add_test(tc, test_workers_share_the_store);
    tcase_add_test(tc, test_torchrun_flags);
    tcase_add_test(tc, test_log_dir);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--worker"))
        return worker_main();
    return tu_run_suite(launch_suite());
}
