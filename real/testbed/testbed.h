/* real/testbed/testbed.h - an emulated cluster on one machine.
 *
 * N network namespaces ("hosts") joined by veth pairs through a bridge
 * that lives in its own namespace, each host's link shaped with tc (tbf,
 * both directions). Addresses come from 10.250.0.0/24, which the testbed
 * owns; nothing is routed off the machine (each testbed's namespaces are
 * a world of their own, so two testbeds may use the same addresses).
 *
 * Instances: the testbed's id (HERD_TESTBED_ID, `--id`, or testbed_set_id;
 * default: the sudo user's name, else none) goes into every name, so two
 * users or CI jobs on one machine never touch each other's namespaces:
 * herd-tb-<id>-h<i> and herd-tb-<id>-switch (without an id herd-tb-h<i>
 * and herd-tb-switch). State lives in /run/herd-testbed/ (state[-<id>]),
 * guarded by flock on lock[-<id>] there: up and down are exclusive,
 * status and the start of run share it. */
#ifndef HERD_REAL_TESTBED_H
#define HERD_REAL_TESTBED_H

#include <stddef.h>

#include <herd/herd.h>

#define TESTBED_MAX_HOSTS 64
#define TESTBED_NS_PREFIX "herd-tb-"
#define TESTBED_SUBNET "10.250.0"
#define TESTBED_ID_MAX 24

typedef struct testbed_cfg {
    int hosts;
    double rate_bps[TESTBED_MAX_HOSTS]; /* per-host link rate, bits/s; 0:
                                           unshaped */
    int force; /* up: replace a testbed (or leftovers) of this id */
    /* TCP congestion control of every host (real/testbed/cc.c). Up: ""
     * asks for the default, CUBIC, and keeps the machine's own when this
     * machine does not let it be set (testbed_cc_note says why); a name
     * must be set or up fails; "host" keeps the machine's own. State:
     * what the hosts run. */
    char cc[16];
    /* Slow start after idle (net.ipv4.tcp_slow_start_after_idle) in
     * every host. Up: TESTBED_IDLE_RESTART_DEFAULT leaves Linux's default
     * (on). State: what the hosts run, ON or OFF. */
    int idle_restart;
} testbed_cfg_t;

#define TESTBED_IDLE_RESTART_DEFAULT 0
#define TESTBED_IDLE_RESTART_ON 1
#define TESTBED_IDLE_RESTART_OFF 2

#define TESTBED_CC_DEFAULT "cubic"

/* cc.c: set `cc` as namespace `ns`'s default congestion control ("host"
 * or "": nothing to do), allowing it for namespaces first when needed;
 * HERD_ERR_UNSUPPORTED with a sentence when it cannot be. */
herd_status_t testbed_set_cc(const char *ns, const char *cc, char *err,
                             size_t errlen);
/* cc.c: namespace `ns`'s congestion control into out; 0, or -1. */
int testbed_ns_cc(const char *ns, char *out, size_t len);
/* cc.c: net.ipv4.tcp_slow_start_after_idle in namespace `ns` (on: 1);
 * HERD_ERR_UNSUPPORTED with a sentence when it cannot be written. */
herd_status_t testbed_set_idle_restart(const char *ns, int on, char *err,
                                       size_t errlen);
/* cc.c: that setting in `ns`: 1, 0, or -1 when it cannot be read. */
int testbed_ns_idle_restart(const char *ns);
/* Why the last up kept the machine's congestion control instead of the
 * default ("" when it did not). */
const char *testbed_cc_note(void);

/* Choose the instance for the calls that follow (NULL: the default from
 * HERD_TESTBED_ID or the sudo user). HERD_ERR_INVALID_ARG with a
 * sentence when the id is not 1..24 of [A-Za-z0-9_.-]. */
herd_status_t testbed_set_id(const char *id, char *err, size_t errlen);
/* The current instance's id ("" when none). */
const char *testbed_id(void);
/* Host i's namespace name ("herd-tb-<id>-h<i>"); i = -1: the switch's. */
void testbed_ns_name(int host, char *buf, size_t len);

/* Why the testbed cannot run here (not root, no netns, no ip/tc), or
 * HERD_OK. `why` gets a sentence. */
herd_status_t testbed_probe(char *why, size_t whylen);

/* Refuses (HERD_ERR_BUSY) when this instance is up or left namespaces
 * behind, unless cfg->force. SIGINT, SIGTERM and SIGHUP during it undo
 * what was made (HERD_ERR_ABORTED). A failing `ip`/`tc` command is named
 * in err with its own error output. */
herd_status_t testbed_up(const testbed_cfg_t *cfg, char *err, size_t errlen);
/* Removes this instance's namespaces and state; idempotent. Refuses
 * (HERD_ERR_BUSY, naming them) while processes still run in its
 * namespaces, unless `force` (they are killed first). */
herd_status_t testbed_down_opts(int force, char *err, size_t errlen);
/* testbed_down_opts(0, ...). */
herd_status_t testbed_down(char *err, size_t errlen);
/* The configuration of the testbed that is up. */
herd_status_t testbed_state(testbed_cfg_t *cfg_out);
/* This instance's namespaces that exist, as "a, b" (at most len bytes);
 * returns how many. With no state they are leftovers of an up that was
 * killed. */
int testbed_leftovers(char *names, size_t len);
/* The address of host i ("10.250.0.<i+1>"). */
void testbed_host_addr(int host, char *buf, size_t len);

/* Run argv once per host, in that host's namespace, with the launcher's
 * environment (RANK, WORLD_SIZE, LOCAL_RANK=0, MASTER_ADDR = host 0, ...)
 * and HERD_COMPUTE_SCALE from `compute_scale` (per host, NULL: none).
 * When a rank fails the others are stopped. `timeout_s` > 0 bounds the
 * run. *failed_rank_out / *exit_code_out describe the first failure. */
typedef struct testbed_run_opts {
    char *const *argv;
    const double *compute_scale;
    int master_port;
    double timeout_s;
} testbed_run_opts_t;

herd_status_t testbed_run(const testbed_run_opts_t *opts, int *failed_rank_out,
                          int *exit_code_out, char *err, size_t errlen);

/* testbed.c, for run.c: hold this instance's lock shared (1) or
 * exclusively (2) while the state is read; -1 on error (err set). */
int testbed_lock(int how, char *err, size_t errlen);
void testbed_unlock(int fd);

#endif
