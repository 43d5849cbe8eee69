/* real/testbed/testbed.h - an emulated cluster on one machine.
 *
 * N network namespaces ("hosts") joined by veth pairs through a bridge
 * that lives in its own namespace, each host's link shaped with tc (tbf,
 * both directions). Addresses come from 10.250.0.0/24, which the testbed
 * owns; nothing is routed off the machine. State lives in
 * /run/herd-testbed/ so `run` and `down` find what `up` made; `down`
 * removes every namespace with the testbed prefix, also after a crash. */
#ifndef HERD_REAL_TESTBED_H
#define HERD_REAL_TESTBED_H

#include <stddef.h>

#include <herd/herd.h>

#define TESTBED_MAX_HOSTS 64
#define TESTBED_NS_PREFIX "herd-tb-"
#define TESTBED_BRIDGE_NS "herd-tb-switch"
#define TESTBED_SUBNET "10.250.0"

typedef struct testbed_cfg {
    int hosts;
    double rate_bps[TESTBED_MAX_HOSTS]; /* per-host link rate, bits/s; 0:
                                           unshaped */
} testbed_cfg_t;

/* Why the testbed cannot run here (not root, no netns, no ip/tc), or
 * HERD_OK. `why` gets a sentence. */
herd_status_t testbed_probe(char *why, size_t whylen);

herd_status_t testbed_up(const testbed_cfg_t *cfg, char *err, size_t errlen);
/* Idempotent: removes whatever exists. */
herd_status_t testbed_down(char *err, size_t errlen);
/* The configuration of the testbed that is up. */
herd_status_t testbed_state(testbed_cfg_t *cfg_out);
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

#endif
