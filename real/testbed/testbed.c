/* real/testbed/testbed.c - build, use and remove the emulated cluster:
 * namespaces, veth pairs, a bridge and tbf shaping, driven through
 * iproute2's `ip` and `tc` (fork/exec, no shell). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "real/testbed/testbed.h"

#define STATE_DIR "/run/herd-testbed"
#define STATE_FILE STATE_DIR "/state"
#define NETNS_DIR "/run/netns"

static herd_status_t fail(char *err, size_t len, herd_status_t st,
                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static herd_status_t fail(char *err, size_t len, herd_status_t st,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && len)
        vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return st;
}

/* Run argv (NULL-terminated), silencing output; the exit status or -1. */
static int run_argv(char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Format a command line into words and run it. Words are split on
 * spaces; no quoting is needed for the names this module uses. */
static int run_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_fmt(const char *fmt, ...)
{
    char line[512];
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    for (char *save = NULL, *w = strtok_r(line, " ", &save); w && argc < 31;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    argv[argc] = NULL;
    return run_argv(argv);
}

void testbed_host_addr(int host, char *buf, size_t len)
{
    snprintf(buf, len, TESTBED_SUBNET ".%d", host + 1);
}

herd_status_t testbed_probe(char *why, size_t whylen)
{
    if (geteuid() != 0)
        return fail(why, whylen, HERD_ERR_UNSUPPORTED,
                    "the testbed needs root (network namespaces and tc)");
    if (run_fmt("ip -V") != 0)
        return fail(why, whylen, HERD_ERR_UNSUPPORTED,
                    "iproute2's `ip` was not found (apt-get install iproute2)");
    if (run_fmt("tc -V") != 0)
        return fail(why, whylen, HERD_ERR_UNSUPPORTED,
                    "iproute2's `tc` was not found (apt-get install iproute2)");
    if (run_fmt("ip netns add " TESTBED_NS_PREFIX "probe") != 0)
        return fail(why, whylen, HERD_ERR_UNSUPPORTED,
                    "network namespaces are not available here "
                    "(`ip netns add` failed)");
    run_fmt("ip netns del " TESTBED_NS_PREFIX "probe");
    return HERD_OK;
}

herd_status_t testbed_down(char *err, size_t errlen)
{
    DIR *d = opendir(NETNS_DIR);
    int failures = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (!strncmp(e->d_name, TESTBED_NS_PREFIX,
                         strlen(TESTBED_NS_PREFIX)) &&
                run_fmt("ip netns del %s", e->d_name) != 0)
                failures++;
        closedir(d);
    }
    unlink(STATE_FILE);
    if (failures)
        return fail(err, errlen, HERD_ERR_IO,
                    "could not delete %d testbed namespace(s)", failures);
    return HERD_OK;
}

/* tbf in both directions: the host's eth0 egress and the switch port's
 * egress towards the host. burst must hold a GSO packet (64 KiB) or tbf
 * drops it; 1 ms of traffic beyond that keeps short bursts at line rate
 * without letting long transfers exceed the rate. */
static int shape(const char *ns, const char *dev, double rate_bps)
{
    double bytes_ms = rate_bps / 8.0 / 1000.0;
    long burst = (long)(bytes_ms > 131072 ? bytes_ms : 131072);
    return run_fmt("tc -n %s qdisc replace dev %s root tbf rate %.0fbit "
                   "burst %ld latency 100ms",
                   ns, dev, rate_bps, burst);
}

static herd_status_t add_host(const testbed_cfg_t *cfg, int i, char *err,
                              size_t errlen)
{
    char ns[64], addr[32];
    snprintf(ns, sizeof(ns), TESTBED_NS_PREFIX "h%d", i);
    testbed_host_addr(i, addr, sizeof(addr));
    if (run_fmt("ip netns add %s", ns) ||
        run_fmt("ip link add tbh%d netns %s type veth peer name tbs%d "
                "netns " TESTBED_BRIDGE_NS,
                i, ns, i) ||
        run_fmt("ip -n %s link set tbh%d name eth0", ns, i) ||
        run_fmt("ip -n %s addr add %s/24 dev eth0", ns, addr) ||
        run_fmt("ip -n %s link set eth0 up", ns) ||
        run_fmt("ip -n %s link set lo up", ns) ||
        run_fmt("ip -n " TESTBED_BRIDGE_NS " link set tbs%d master br0", i) ||
        run_fmt("ip -n " TESTBED_BRIDGE_NS " link set tbs%d up", i))
        return fail(err, errlen, HERD_ERR_IO, "could not create host %d (%s)",
                    i, ns);
    if (cfg->rate_bps[i] > 0) {
        char port[32];
        snprintf(port, sizeof(port), "tbs%d", i);
        if (shape(ns, "eth0", cfg->rate_bps[i]) ||
            shape(TESTBED_BRIDGE_NS, port, cfg->rate_bps[i]))
            return fail(err, errlen, HERD_ERR_IO,
                        "tc could not shape host %d to %.0f bit/s (is "
                        "sch_tbf available?)",
                        i, cfg->rate_bps[i]);
    }
    return HERD_OK;
}

static herd_status_t write_state(const testbed_cfg_t *cfg)
{
    mkdir(STATE_DIR, 0755);
    FILE *f = fopen(STATE_FILE, "w");
    if (!f)
        return HERD_ERR_IO;
    fprintf(f, "hosts %d\n", cfg->hosts);
    for (int i = 0; i < cfg->hosts; i++)
        fprintf(f, "rate %d %.0f\n", i, cfg->rate_bps[i]);
    return fclose(f) == 0 ? HERD_OK : HERD_ERR_IO;
}

herd_status_t testbed_up(const testbed_cfg_t *cfg, char *err, size_t errlen)
{
    if (!cfg || cfg->hosts < 1 || cfg->hosts > TESTBED_MAX_HOSTS)
        return fail(err, errlen, HERD_ERR_INVALID_ARG,
                    "hosts must be 1..%d", TESTBED_MAX_HOSTS);
    herd_status_t st = testbed_probe(err, errlen);
    if (st != HERD_OK)
        return st;
    testbed_down(NULL, 0);
    if (run_fmt("ip netns add " TESTBED_BRIDGE_NS) ||
        run_fmt("ip -n " TESTBED_BRIDGE_NS " link add br0 type bridge") ||
        run_fmt("ip -n " TESTBED_BRIDGE_NS " link set br0 up")) {
        st = fail(err, errlen, HERD_ERR_IO, "could not create the switch");
        goto undo;
    }
    for (int i = 0; i < cfg->hosts; i++)
        if ((st = add_host(cfg, i, err, errlen)) != HERD_OK)
            goto undo;
    if ((st = write_state(cfg)) != HERD_OK) {
        fail(err, errlen, st, "could not write " STATE_FILE);
        goto undo;
    }
    return HERD_OK;
undo:
    testbed_down(NULL, 0);
    return st;
}

herd_status_t testbed_state(testbed_cfg_t *out)
{
    FILE *f = fopen(STATE_FILE, "r");
    if (!f)
        return HERD_ERR_NOT_FOUND;
    testbed_cfg_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    herd_status_t st = HERD_OK;
    if (fscanf(f, "hosts %d\n", &cfg.hosts) != 1 || cfg.hosts < 1 ||
        cfg.hosts > TESTBED_MAX_HOSTS)
        st = HERD_ERR_PARSE;
    for (int i = 0; st == HERD_OK && i < cfg.hosts; i++) {
        int idx;
        double r;
        if (fscanf(f, "rate %d %lf\n", &idx, &r) != 2 || idx != i)
            st = HERD_ERR_PARSE;
        else
            cfg.rate_bps[i] = r;
    }
    fclose(f);
    if (st == HERD_OK)
        *out = cfg;
    return st;
}
