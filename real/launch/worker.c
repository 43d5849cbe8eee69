/* real/launch/worker.c - the launcher's local workers: their torchrun
 * environment, fork/exec, reaping, signalling and a bounded stop.
 *
 * The environment of each worker is built before fork, so the child only
 * resets its signal mask and calls execvpe (the launcher has a store
 * thread, and a forked child of a threaded process must not allocate).
 * Every worker leads its own process group: stopping a worker stops the
 * processes it started, and a terminal's Ctrl-C reaches the launcher
 * only, which forwards it once. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "real/launch/launch_int.h"

extern char **environ;

/* Variables the launcher owns: inherited copies are dropped. */
static const char *const owned_vars[] = {"RANK",
                                         "LOCAL_RANK",
                                         "WORLD_SIZE",
                                         "LOCAL_WORLD_SIZE",
                                         "GROUP_RANK",
                                         "GROUP_WORLD_SIZE",
                                         "ROLE_RANK",
                                         "ROLE_NAME",
                                         "ROLE_WORLD_SIZE",
                                         "MASTER_ADDR",
                                         "MASTER_PORT",
                                         "TORCHELASTIC_RESTART_COUNT",
                                         "TORCHELASTIC_MAX_RESTARTS",
                                         "TORCHELASTIC_RUN_ID",
                                         "HERD_STORE_EXTERNAL",
                                         "TORCHELASTIC_USE_AGENT_STORE",
                                         "HERD_STORE_PREFIX",
                                         NULL};

static int is_owned(const char *entry)
{
    for (const char *const *v = owned_vars; *v; v++) {
        size_t n = strlen(*v);
        if (!strncmp(entry, *v, n) && entry[n] == '=')
            return 1;
    }
    return 0;
}

static void env_free(char **env)
{
    for (char **e = env; e && *e; e++)
        free(*e);
    free(env);
}

/* Append "name=value" (printf-style value); 0 on success. */
static int env_add(char **env, size_t *n, const char *name, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));
static int env_add(char **env, size_t *n, const char *name, const char *fmt,
                   ...)
{
    char val[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(val, sizeof(val), fmt, ap);
    va_end(ap);
    if (asprintf(&env[*n], "%s=%s", name, val) < 0) {
        env[*n] = NULL;
        return -1;
    }
    (*n)++;
    return 0;
}

static int env_ours(const launch_group_t *g, const launch_worker_t *w,
                    int round, char **env, size_t *n)
{
    const launch_opts_t *o = g->o;
    int world = o->nproc_per_node * g->nnodes, bad = 0;
    bad |= env_add(env, n, "RANK", "%d", w->rank);
    bad |= env_add(env, n, "LOCAL_RANK", "%d", w->local_rank);
    bad |= env_add(env, n, "WORLD_SIZE", "%d", world);
    bad |= env_add(env, n, "LOCAL_WORLD_SIZE", "%d", o->nproc_per_node);
    bad |= env_add(env, n, "GROUP_RANK", "%d", g->node_rank);
    bad |= env_add(env, n, "GROUP_WORLD_SIZE", "%d", g->nnodes);
    bad |= env_add(env, n, "ROLE_RANK", "%d", w->rank);
    bad |= env_add(env, n, "ROLE_NAME", "%s", o->role_name);
    bad |= env_add(env, n, "ROLE_WORLD_SIZE", "%d", world);
    bad |= env_add(env, n, "MASTER_ADDR", "%s", o->master_addr);
    bad |= env_add(env, n, "MASTER_PORT", "%d", g->port);
    bad |= env_add(env, n, "TORCHELASTIC_RESTART_COUNT", "%d", g->restart);
    bad |= env_add(env, n, "TORCHELASTIC_MAX_RESTARTS", "%d", o->max_restarts);
    bad |= env_add(env, n, "TORCHELASTIC_RUN_ID", "%s", g->run_id);
    bad |= env_add(env, n, "HERD_STORE_PREFIX", "%s/%d/", g->run_id, round);
    if (g->store_hosted)
        bad |= env_add(env, n, "HERD_STORE_EXTERNAL", "1");
    /* torch's env:// then joins the launcher's store (which speaks
     * TCPStore) instead of hosting one on MASTER_PORT; torch cannot
     * present a token, so not when the store has one. */
    if (g->store_hosted && !(g->store_token && *g->store_token))
        bad |= env_add(env, n, "TORCHELASTIC_USE_AGENT_STORE", "True");
    if (g->token)
        bad |= env_add(env, n, "HERD_STORE_TOKEN", "%s", g->token);
    if (o->nproc_per_node > 1 && !getenv("OMP_NUM_THREADS"))
        bad |= env_add(env, n, "OMP_NUM_THREADS", "1");
    return bad;
}

/* The inherited environment minus owned variables, plus ours. */
static char **env_build(const launch_group_t *g, const launch_worker_t *w,
                        int round)
{
    size_t cap = 32, n = 0;
    for (char **e = environ; *e; e++)
        cap++;
    char **env = calloc(cap, sizeof(*env));
    if (!env)
        return NULL;
    for (char **e = environ; *e; e++)
        if (!is_owned(*e) && !(env[n++] = strdup(*e))) {
            env_free(env);
            return NULL;
        }
    if (env_ours(g, w, round, env, &n) != 0) {
        env_free(env);
        return NULL;
    }
    return env;
}

/* In the child: only async-signal-safe calls until exec. */
static void child_exec(const launch_group_t *g, const launch_worker_t *w,
                       char **env)
{
    setpgid(0, 0);
    /* A launcher killed outright takes its workers with it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != g->launcher_pid)
        _exit(128 + SIGKILL);
    sigprocmask(SIG_SETMASK, &g->child_mask, NULL);
    for (int s = 0; s < 2; s++) /* redirected or teed: into the file */
        if (w->log_fd[s] >= 0)
            dup2(w->log_fd[s], 1 + s);
    execvpe(g->o->argv[0], g->o->argv, env);
    int e = errno;
    const char *m1 = "herd launch: cannot run '", *m2 = "': ";
    const char *why = e == ENOENT ? "command not found" : "exec failed";
    ssize_t r = write(2, m1, strlen(m1));
    r = write(2, g->o->argv[0], strlen(g->o->argv[0]));
    r = write(2, m2, strlen(m2));
    r = write(2, why, strlen(why));
    r = write(2, "\n", 1);
    (void)r;
    _exit(127);
}

herd_status_t launch_group_spawn(launch_group_t *g, int round, char *err,
                                 size_t errlen)
{
    const launch_opts_t *o = g->o;
    g->live = 0;
    g->failed = -1;
    for (int i = 0; i < g->n; i++) {
        launch_worker_t *w = &g->w[i];
        w->local_rank = i;
        w->rank = g->node_rank * o->nproc_per_node + i;
        w->pid = w->spawned = 0;
        w->status = 0;
        launch_worker_logs_close(w); /* the last round's tails */
        if (launch_worker_logs_open(g, w, round, err, errlen) != HERD_OK) {
            launch_group_stop(g, SIGKILL);
            return HERD_ERR_IO;
        }
        char **env = env_build(g, w, round);
        pid_t pid = env ? fork() : -1;
        if (pid == 0)
            child_exec(g, w, env);
        int e = errno;
        env_free(env);
        /* the child has its copies; the launcher keeps only the tails */
        for (int s = 0; s < 2; s++)
            if (w->log_fd[s] >= 0) {
                close(w->log_fd[s]);
                w->log_fd[s] = -1;
            }
        if (pid < 0) {
            snprintf(err, errlen, "cannot start local rank %d: %s", i,
                     env ? strerror(e) : "out of memory");
            launch_group_stop(g, SIGKILL);
            return HERD_ERR_IO;
        }
        setpgid(pid, pid); /* as the child does: no race either way */
        w->pid = w->spawned = pid;
        g->live++;
    }
    return HERD_OK;
}

int launch_exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

void launch_describe(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "exited with code %d", launch_exit_code(status));
}

static void reap_one(launch_group_t *g, int i, int status)
{
    g->w[i].pid = 0;
    g->w[i].status = status;
    g->live--;
    if (g->failed < 0 && launch_exit_code(status) != 0)
        g->failed = i;
}

void launch_group_reap(launch_group_t *g)
{
    for (int i = 0; i < g->n; i++) {
        if (g->w[i].pid <= 0)
            continue;
        int status = 0;
        pid_t r = waitpid(g->w[i].pid, &status, WNOHANG);
        if (r == g->w[i].pid)
            reap_one(g, i, status);
    }
}

/* Each worker leads its own process group, so what it started goes too. */
void launch_group_signal(launch_group_t *g, int sig)
{
    for (int i = 0; i < g->n; i++)
        if (g->w[i].pid > 0 && kill(-g->w[i].pid, sig) != 0)
            kill(g->w[i].pid, sig);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void launch_group_stop(launch_group_t *g, int first_sig)
{
    launch_group_signal(g, first_sig);
    double deadline = mono_s() + g->o->stop_grace_s;
    while (g->live > 0 && mono_s() < deadline) {
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
        launch_group_reap(g);
    }
    if (g->live > 0)
        launch_group_signal(g, SIGKILL);
    for (int i = 0; i < g->n; i++) {
        int status = 0;
        if (g->w[i].pid > 0 && waitpid(g->w[i].pid, &status, 0) == g->w[i].pid)
            reap_one(g, i, status);
    }
}
