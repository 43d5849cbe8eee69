/* real/launch/launch_int.h - the launcher's worker group (worker.c),
 * shared with its monitor loop (launch.c). */
#ifndef HERD_REAL_LAUNCH_INT_H
#define HERD_REAL_LAUNCH_INT_H

#include <signal.h>
#include <sys/types.h>

#include "real/launch/launch.h"

typedef struct launch_worker {
    pid_t pid;     /* 0 once reaped */
    pid_t spawned; /* the pid it had, kept for messages */
    int local_rank, rank;
    int status; /* waitpid status once reaped */
} launch_worker_t;

typedef struct launch_group {
    const launch_opts_t *o;
    const char *run_id;
    int port;            /* the master port the workers get */
    int store_hosted;    /* the launcher hosts the store */
    const char *token;   /* HERD_STORE_TOKEN for the workers; NULL: theirs */
    sigset_t child_mask; /* signal mask the workers start with */
    pid_t launcher_pid;
    launch_worker_t *w;
    int n, live;
    int failed; /* index of the first worker that failed, -1 if none */
} launch_group_t;

/* Start every local worker for restart round `round`. On error no worker
 * of this round is left running. */
herd_status_t launch_group_spawn(launch_group_t *g, int round, char *err,
                                 size_t errlen);
/* Reap finished workers without blocking; records the first failure. */
void launch_group_reap(launch_group_t *g);
void launch_group_signal(launch_group_t *g, int sig);
/* SIGTERM the live workers, SIGKILL what is left after the grace period,
 * and reap them all. */
void launch_group_stop(launch_group_t *g, int first_sig);
/* The exit code a wait status stands for (128 + signal when killed), and
 * a phrase for it ("exited with code 7", "was killed by signal 9"). */
int launch_exit_code(int status);
void launch_describe(int status, char *buf, size_t len);

#endif
