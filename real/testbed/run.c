/* real/testbed/run.c - run one rank per testbed host: fork, enter the
 * host's network namespace (setns), set the launcher's environment, exec.
 * The first failure stops the others; a timeout bounds the whole run. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "real/testbed/testbed.h"

static void child_env(int rank, int n, const testbed_run_opts_t *o)
{
    char buf[64], addr[32];
    testbed_host_addr(0, addr, sizeof(addr));
    snprintf(buf, sizeof(buf), "%d", rank);
    setenv("RANK", buf, 1);
    setenv("GROUP_RANK", buf, 1);
    snprintf(buf, sizeof(buf), "%d", n);
    setenv("WORLD_SIZE", buf, 1);
    setenv("GROUP_WORLD_SIZE", buf, 1);
    setenv("LOCAL_RANK", "0", 1);
    setenv("LOCAL_WORLD_SIZE", "1", 1);
    setenv("MASTER_ADDR", addr, 1);
    snprintf(buf, sizeof(buf), "%d", o->master_port ? o->master_port : 29500);
    setenv("MASTER_PORT", buf, 1);
    testbed_host_addr(rank, addr, sizeof(addr));
    setenv("HERD_HOST_ADDR", addr, 1);
    if (o->compute_scale && o->compute_scale[rank] > 0) {
        snprintf(buf, sizeof(buf), "%.6g", o->compute_scale[rank]);
        setenv("HERD_COMPUTE_SCALE", buf, 1);
    }
}

static pid_t spawn_rank(int rank, int n, const testbed_run_opts_t *o)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char path[128], ns[64];
    testbed_ns_name(rank, ns, sizeof(ns));
    snprintf(path, sizeof(path), "/run/netns/%s", ns);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
        fprintf(stderr, "herd testbed: rank %d cannot enter %s: %s\n", rank,
                path, strerror(errno));
        _exit(126);
    }
    close(fd);
    setpgid(0, 0);
    child_env(rank, n, o);
    execvp(o->argv[0], o->argv);
    fprintf(stderr, "herd testbed: cannot run %s: %s\n", o->argv[0],
            strerror(errno));
    _exit(127);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void stop_all(const pid_t *pids, int n, int sig)
{
    for (int i = 0; i < n; i++)
        if (pids[i] > 0)
            kill(-pids[i], sig), kill(pids[i], sig);
}

static int rank_of(const pid_t *pids, int n, pid_t pid)
{
    for (int i = 0; i < n; i++)
        if (pids[i] == pid)
            return i;
    return -1;
}

/* Reap children until all exited, the first failure, or the deadline. */
static herd_status_t reap(pid_t *pids, int n, double deadline, int *failed,
                          int *code)
{
    int left = n;
    while (left > 0) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid == 0) {
            if (deadline > 0 && now_s() > deadline)
                return HERD_ERR_TIMEOUT;
            usleep(2000);
            continue;
        }
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            return HERD_ERR_INTERNAL;
        }
        int r = rank_of(pids, n, pid);
        if (r < 0)
            continue;
        pids[r] = -1;
        left--;
        int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (rc != 0 && *failed < 0) {
            *failed = r;
            *code = rc;
            return HERD_ERR_PEER_FAILED;
        }
    }
    return HERD_OK;
}

herd_status_t testbed_run(const testbed_run_opts_t *o, int *failed_rank_out,
                          int *exit_code_out, char *err, size_t errlen)
{
    testbed_cfg_t cfg;
    if (!o || !o->argv || !o->argv[0])
        return HERD_ERR_INVALID_ARG;
    /* Shared with other runs, never with an up or down in progress: the
     * ranks enter namespaces that exist. Down refuses while they run. */
    int lk = testbed_lock(1, err, errlen);
    if (lk < 0)
        return HERD_ERR_BUSY;
    if (testbed_state(&cfg) != HERD_OK) {
        testbed_unlock(lk);
        snprintf(err, errlen, "no testbed is up%s%s%s (run `herd testbed up`)",
                 *testbed_id() ? " with id '" : "", testbed_id(),
                 *testbed_id() ? "'" : "");
        return HERD_ERR_NOT_FOUND;
    }
    pid_t pids[TESTBED_MAX_HOSTS];
    for (int i = 0; i < cfg.hosts; i++)
        pids[i] = spawn_rank(i, cfg.hosts, o);
    testbed_unlock(lk);
    double deadline = o->timeout_s > 0 ? now_s() + o->timeout_s : 0;
    int failed = -1, code = 0;
    herd_status_t st = reap(pids, cfg.hosts, deadline, &failed, &code);
    if (st != HERD_OK) {
        stop_all(pids, cfg.hosts, SIGTERM);
        usleep(200000);
        stop_all(pids, cfg.hosts, SIGKILL);
        while (waitpid(-1, NULL, 0) > 0)
            ;
        if (st == HERD_ERR_TIMEOUT)
            snprintf(err, errlen, "the run exceeded %.0f s and was stopped",
                     o->timeout_s);
        else
            snprintf(err, errlen, "rank %d exited with code %d", failed, code);
    }
    *failed_rank_out = failed;
    *exit_code_out = code;
    return st;
}
