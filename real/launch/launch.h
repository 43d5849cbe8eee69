/* real/launch/launch.h - the torchrun-like launcher behind `herd launch`:
 * starts this node's workers with torchrun's environment, hosts the
 * rendezvous store on node 0, watches the workers, stops the group when
 * one fails and restarts it up to max_restarts times. */
#ifndef HERD_REAL_LAUNCH_H
#define HERD_REAL_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

#include <herd/herd.h>

typedef struct launch_opts {
    int nproc_per_node;        /* workers on this node (default 1) */
    int nnodes;                /* nodes in the job (default 1); elastic:
                                  the most nodes (MAX of MIN:MAX) */
    int min_nodes;             /* elastic when 0 < min_nodes < nnodes */
    int node_rank;             /* this node (default 0) */
    const char *master_addr;   /* default "127.0.0.1" */
    int master_port;           /* default 29500 */
    int max_restarts;          /* default 0 */
    int standalone;            /* store on a free local port (one node) */
    double monitor_interval_s; /* how often to look at the store (0.1) */
    const char *run_id;        /* TORCHELASTIC_RUN_ID (default "none") */
    const char *role_name;     /* ROLE_NAME (default "default") */
    double stop_grace_s;       /* SIGTERM, then SIGKILL after this (5) */
    double store_timeout_s;    /* joining node 0's store (300); elastic:
                                  the rendezvous's join timeout */
    double last_call_s;        /* elastic: wait this long for more nodes
                                  once min_nodes have joined (30) */
    double keep_alive_s;       /* elastic: keep-alive interval (5) */
    int keep_alive_max;        /* elastic: missed keep-alives before a node
                                  counts as lost (3) */
    int quiet;                 /* no progress lines on stderr */
    const char *log_dir;       /* torchrun's --log-dir (NULL: a temp dir) */
    const char *redirects;     /* "0".."3" or "0:3,1:1" (NULL: none) */
    const char *tee;           /* same form as redirects (NULL: none) */
    char *const *argv;         /* the worker command, NULL-terminated */
} launch_opts_t;

/* Fill the defaults above (argv NULL). */
void launch_opts_init(launch_opts_t *o);

typedef struct launch_result {
    int exit_code;   /* what the launcher should exit with */
    int failed_rank; /* the rank that failed last, -1 if none */
    int failed_local_rank;
    pid_t failed_pid;
    int restarts; /* group restarts performed */
    int signal;   /* the signal that stopped the launcher, 0 if none */
} launch_result_t;

/* Run the job to completion. Returns HERD_OK when the launcher itself
 * worked (see out->exit_code for the job's outcome, 0 when every worker
 * succeeded), or an error with a message in err (bad options, the master
 * port taken, no fork). Never leaves a child behind. */
/* 1 when spec is a --redirects/--tee value: one digit 0..3 (0 none,
 * 1 stdout, 2 stderr, 3 both) or a map "0:3,1:1" by local rank. */
int launch_std_spec_valid(const char *spec);
/* The mode spec gives local_rank (a valid spec; ranks absent: 0). */
int launch_std_mode(const char *spec, int local_rank);

herd_status_t launch_run(const launch_opts_t *o, launch_result_t *out,
                         char *err, size_t errlen);

#endif
