/* real/launch/launch_int.h - the launcher's worker group (worker.c) and
 * agent (launch.c), shared with the elastic rendezvous (elastic.c). */
#ifndef HERD_REAL_LAUNCH_INT_H
#define HERD_REAL_LAUNCH_INT_H

#include <signal.h>
#include <sys/types.h>

#include "real/launch/launch.h"
#include "real/store/store.h"

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
    int node_rank, nnodes; /* this round's: fixed, or the rendezvous's */
    int restart;           /* TORCHELASTIC_RESTART_COUNT */
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

/* How a round ended. */
typedef enum round_end {
    ROUND_OK,
    ROUND_FAILED,        /* a local worker failed */
    ROUND_REMOTE_FAILED, /* another node ended the round (see fail) */
    ROUND_SIGNALED,      /* SIGINT/SIGTERM reached the launcher */
    ROUND_ERROR          /* the store was lost */
} round_end_t;

/* Codes of a round's failure record other than a worker's exit code:
 * membership changes. JOIN and LEFT re-rendezvous without using a
 * restart (as torchrun's waiting nodes); LOST uses one. */
enum {
    LAUNCH_FAIL_JOIN = -1, /* a node waits to join a group below MAX */
    LAUNCH_FAIL_LOST = -2, /* a node stopped sending keep-alives */
    LAUNCH_FAIL_LEFT = -3  /* a node left the rendezvous before it closed */
};

/* The elastic rendezvous's per-round view of the other nodes. */
typedef struct launch_peer {
    int64_t beats; /* its keep-alive counter, as last read */
    double seen_s; /* when that counter last changed (monotonic) */
} launch_peer_t;

typedef struct launch_agent {
    const launch_opts_t *o;
    launch_group_t g;
    int sfd;
    store_server_t *srv;
    store_client_t *cl; /* multi-node coordination only */
    char run_id[128];
    char token[40];    /* generated for a store off loopback, else "" */
    int sig;           /* the signal received, 0 if none */
    char fail[256];    /* the round's failure: "code node rank local pid ..." */
    char log_tmp[512]; /* the log directory made when none was given */
    /* elastic */
    int elastic;
    int joined;           /* nodes counted in this round when it closed */
    double next_beat_s;   /* next keep-alive (monotonic) */
    launch_peer_t *peers; /* nnodes of them, this round */
} launch_agent_t;

double launch_now_s(void);
/* A progress line on stderr ("herd launch: ..."), unless --quiet. */
void launch_log(const launch_agent_t *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void launch_key(const launch_agent_t *a, char *buf, size_t len, int round,
                const char *what, int node);
/* Sleep until a signal or the monitor interval; 1 on SIGINT/SIGTERM. */
int launch_agent_sleep(launch_agent_t *a);
/* Record the first ending of a round ("code node rank local pid phrase")
 * in a->fail and, with several nodes, in the store (first one wins). */
void launch_publish(launch_agent_t *a, int round, const char *record);
/* Another node's ending of this round, if any (copied to a->fail). */
int launch_remote_failed(launch_agent_t *a, int round);

/* elastic.c: rendezvous for --nnodes MIN:MAX over the store. Joins the
 * first open round at or after *round and waits until it closes; sets
 * a->g.node_rank/nnodes and *round when this node is in. ROUND_OK: in;
 * ROUND_REMOTE_FAILED: the job finished without this node (a->fail says
 * so); ROUND_SIGNALED; ROUND_ERROR with err (timed out, store lost). */
round_end_t launch_elastic_join(launch_agent_t *a, int *round, char *err,
                                size_t errlen);
/* While a round runs: keep-alives, lost nodes, and (joins 1) nodes
 * waiting to join; a node whose workers are done admits none, so a
 * latecomer cannot restart a job that is finishing. 1 when the round
 * must end (recorded with launch_publish). */
int launch_elastic_check(launch_agent_t *a, int round, int joins);
/* After success: mark the job finished so latecomers leave. */
void launch_elastic_finish(launch_agent_t *a, int round);

#endif
