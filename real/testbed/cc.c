/* real/testbed/cc.c - the TCP settings of the testbed's hosts: their
 * congestion control and whether they restart slow start after idle.
 *
 * A new network namespace inherits the host's default congestion control,
 * so what the testbed measured depended on the machine it ran on: on a VM
 * whose default is BBR, BBR's bandwidth probes (it measures tbf's burst,
 * which leaves at the veth's line rate, and paces above the link) fill
 * tbf's queue, and halving-doubling's 4 MiB all_reduce at 200 Mbit/s took
 * 295-410 ms where CUBIC and Reno take 263 ms, the model's 263.4
 * (BENCHMARKS.md, "Congestion control"). The testbed therefore sets it
 * in every namespace it makes: CUBIC, Linux's default, unless told
 * otherwise ("host" keeps the inherited one).
 *
 * Slow start after idle (net.ipv4.tcp_slow_start_after_idle) is not
 * inherited: every namespace starts with Linux's default, on. A
 * connection idle for longer than its retransmission timeout then sends
 * from the initial window again. Halving-doubling exchanges both
 * directions of one connection after it sat idle through the other
 * exchanges; both windows restart, the ACKs of each direction queue
 * behind the other's data in tbf, and the direction that falls behind
 * gets less of the link for most of the exchange (BENCHMARKS.md, "Slow
 * start after idle"). herd's network model has no windows: turning the
 * restart off takes away one way the hosts depart from it, not every one
 * (windows that stay large keep a standing queue the ACKs wait behind).
 *
 * Outside the initial namespace only the controls in
 * net.ipv4.tcp_allowed_congestion_control may be chosen; one that is
 * available but not allowed is added to that list (it only widens what
 * unprivileged sockets may choose). Each write happens in a child that
 * entered the namespace (setns): /proc/sys/net is the opener's
 * namespace's. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "real/testbed/testbed.h"

#define CC_PATH "/proc/sys/net/ipv4/tcp_congestion_control"
#define CC_AVAIL "/proc/sys/net/ipv4/tcp_available_congestion_control"
#define CC_ALLOWED "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
#define SSAI_PATH "/proc/sys/net/ipv4/tcp_slow_start_after_idle"

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static int write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    ssize_t n = write(fd, s, strlen(s));
    int e = n == (ssize_t)strlen(s) ? 0 : (n < 0 ? errno : EIO);
    close(fd);
    return e;
}

/* Whether `name` is a word of the space-separated `list`. */
static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

/* In a child inside `ns`: write `value` to `path` (write != NULL) or read
 * it into out (through a pipe). Returns 0 or an errno. */
static int in_ns(const char *ns, const char *path, const char *value, char *out,
                 size_t outlen)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        return e;
    }
    if (pid == 0) {
        close(pfd[0]);
        char nspath[160];
        snprintf(nspath, sizeof(nspath), "/run/netns/%s", ns);
        int fd = open(nspath, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0)
            _exit(errno & 0x7f);
        char buf[128] = "";
        int e = value ? write_str(path, value)
                      : (read_line(path, buf, sizeof(buf)) ? errno : 0);
        if (!e && !value && write(pfd[1], buf, strlen(buf)) < 0)
            e = errno;
        _exit(e & 0x7f);
    }
    close(pfd[1]);
    ssize_t n = 0;
    if (out && outlen) {
        n = read(pfd[0], out, outlen - 1);
        out[n > 0 ? n : 0] = '\0';
    }
    close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
}

int testbed_ns_cc(const char *ns, char *out, size_t len)
{
    return in_ns(ns, CC_PATH, NULL, out, len) == 0 && *out ? 0 : -1;
}

static herd_status_t cc_fail(char *err, size_t len, const char *what,
                             const char *cc, const char *where, int e)
{
    snprintf(err, len,
             "could not %s TCP congestion control '%s' %s: %s; --cc host "
             "keeps the machine's own",
             what, cc, where, strerror(e));
    return HERD_ERR_UNSUPPORTED;
}

/* Lets namespaces choose `cc` (it must be available). */
static herd_status_t allow(const char *cc, char *err, size_t len)
{
    char avail[256] = "", allowed[256] = "", list[300];
    if (read_line(CC_AVAIL, avail, sizeof(avail)) == 0 && !in_list(avail, cc)) {
        snprintf(err, len,
                 "TCP congestion control '%s' is not available on this "
                 "machine (%s); --cc host keeps the machine's own",
                 cc, avail);
        return HERD_ERR_UNSUPPORTED;
    }
    if (read_line(CC_ALLOWED, allowed, sizeof(allowed)) != 0)
        allowed[0] = '\0';
    if (in_list(allowed, cc))
        return HERD_OK;
    snprintf(list, sizeof(list), "%s%s%s", allowed, *allowed ? " " : "", cc);
    int e = write_str(CC_ALLOWED, list);
    return e ? cc_fail(err, len, "allow", cc, "in namespaces (" CC_ALLOWED ")",
                       e)
             : HERD_OK;
}

herd_status_t testbed_set_cc(const char *ns, const char *cc, char *err,
                             size_t len)
{
    if (!cc || !*cc || !strcmp(cc, "host"))
        return HERD_OK;
    int e = in_ns(ns, CC_PATH, cc, NULL, 0);
    if (e == EPERM || e == ENOENT) {
        herd_status_t st = allow(cc, err, len);
        if (st != HERD_OK)
            return st;
        e = in_ns(ns, CC_PATH, cc, NULL, 0);
    }
    char where[96];
    snprintf(where, sizeof(where), "in %s", ns);
    return e ? cc_fail(err, len, "set", cc, where, e) : HERD_OK;
}

herd_status_t testbed_set_idle_restart(const char *ns, int on, char *err,
                                       size_t len)
{
    int e = in_ns(ns, SSAI_PATH, on ? "1" : "0", NULL, 0);
    if (e)
        snprintf(err, len,
                 "could not set net.ipv4.tcp_slow_start_after_idle=%d in %s: "
                 "%s",
                 on ? 1 : 0, ns, strerror(e));
    return e ? HERD_ERR_UNSUPPORTED : HERD_OK;
}

int testbed_ns_idle_restart(const char *ns)
{
    char v[16] = "";
    if (in_ns(ns, SSAI_PATH, NULL, v, sizeof(v)) != 0 || !*v)
        return -1;
    return atoi(v) != 0;
}
