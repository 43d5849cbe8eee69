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
    int status;     /* waitpid status once reaped */
    int log_fd[2];  /* stdout/stderr log files for the child, -1: none */
    int tail_fd[2]; /* the teed ones, read back by the launcher */
    int at_bol[2];  /* the tail is at the start of a line */
} launch_worker_t;

typedef struct launch_group {
    const launch_opts_t *o;
    const char *run_id;
    int port;            /* the master port the workers get */
    int store_hosted;    /* the launcher hosts the store */
    const char *token;   /* HERD_STORE_TOKEN for the workers; NULL: theirs */
    const char *log_dir; /* where redirected/teed streams go */
    const char *store_token; /* the store's token, "" for none */
    sigset_t child_mask;     /* signal mask the workers start with */
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
/* logs.c: open a worker's log files for a round (none unless redirected
 * or teed), close them, and copy teed output to the launcher's streams. */
herd_status_t launch_worker_logs_open(launch_group_t *g, launch_worker_t *w,
                                      int round, char *err, size_t errlen);
void launch_worker_logs_close(launch_worker_t *w);
void launch_group_tail(launch_group_t *g);
void launch_describe(int status, char *buf, size_t len);

#endif
