/* real/testbed/testbed.c - build, use and remove the emulated cluster:
 * namespaces, veth pairs, a bridge and tbf shaping, driven through
 * iproute2's `ip` and `tc` (fork/exec, no shell; their error output is
 * kept for the message when they fail).
 *
 * Safety: up and down hold the instance's lock exclusively (flock), so
 * two of them never interleave; up refuses a testbed (or leftovers) of
 * its instance that exists unless forced; a signal during up undoes it;
 * down refuses while processes still run in the namespaces (they would
 * be left without a network) unless forced, and touches only names of
 * its own instance. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "real/testbed/testbed.h"

#define STATE_DIR "/run/herd-testbed"
#define NETNS_DIR "/run/netns"
/* How long up/down wait for another command of the instance. */
#define LOCK_WAIT_S 60.0

static char tb_id[TESTBED_ID_MAX + 1];
static int tb_id_chosen;

/* The last command run and what it printed (for error messages). */
typedef struct tb_cmd {
    char line[512];
    char out[512];
    int status;
} tb_cmd_t;

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

/* ---- instance ----------------------------------------------------------- */

static int id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n < 1 || n > TESTBED_ID_MAX || id[0] == '-' || id[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)id[i]) && !strchr("_.-", id[i]))
            return 0;
    return 1;
}

/* HERD_TESTBED_ID, else the user behind sudo, else none: a lone user
 * always gets the same names. */
static void id_default(void)
{
    const char *env = getenv("HERD_TESTBED_ID");
    const char *sudo = getenv("SUDO_USER");
    tb_id[0] = '\0';
    if (env && *env)
        snprintf(tb_id, sizeof(tb_id), "%s", env);
    else if (sudo && *sudo && strcmp(sudo, "root"))
        snprintf(tb_id, sizeof(tb_id), "%s", sudo);
    if (tb_id[0] && !id_valid(tb_id))
        tb_id[0] = '\0';
}

herd_status_t testbed_set_id(const char *id, char *err, size_t errlen)
{
    const char *env = getenv("HERD_TESTBED_ID");
    const char *what = id ? "--id" : "HERD_TESTBED_ID";
    if (!id)
        id = env && *env ? env : NULL;
    if (id && !id_valid(id))
        return fail(err, errlen, HERD_ERR_INVALID_ARG,
                    "%s '%s': expected 1..%d letters, digits, '_', '.' or "
                    "'-' (not first)",
                    what, id, TESTBED_ID_MAX);
    if (id)
        snprintf(tb_id, sizeof(tb_id), "%s", id);
    else
        id_default();
    tb_id_chosen = 1;
    return HERD_OK;
}

const char *testbed_id(void)
{
    if (!tb_id_chosen) {
        id_default();
        tb_id_chosen = 1;
    }
    return tb_id;
}

static void ns_prefix(char *buf, size_t len)
{
    const char *id = testbed_id();
    snprintf(buf, len, TESTBED_NS_PREFIX "%s%s", id, *id ? "-" : "");
}

void testbed_ns_name(int host, char *buf, size_t len)
{
    char p[64];
    ns_prefix(p, sizeof(p));
    if (host < 0)
        snprintf(buf, len, "%sswitch", p);
    else
        snprintf(buf, len, "%sh%d", p, host);
}

/* 1 when `name` is a namespace of this instance (exactly its switch or
 * one of its hosts, never another instance's). */
static int ns_ours(const char *name)
{
    char p[64];
    ns_prefix(p, sizeof(p));
    size_t n = strlen(p);
    if (strncmp(name, p, n))
        return 0;
    const char *rest = name + n;
    if (!strcmp(rest, "switch"))
        return 1;
    if (rest[0] != 'h' || !rest[1])
        return 0;
    return strspn(rest + 1, "0123456789") == strlen(rest + 1);
}

static void state_path(char *buf, size_t len, const char *what)
{
    const char *id = testbed_id();
    snprintf(buf, len, STATE_DIR "/%s%s%s", what, *id ? "-" : "", id);
}

void testbed_host_addr(int host, char *buf, size_t len)
{
    snprintf(buf, len, TESTBED_SUBNET ".%d", host + 1);
}

/* ---- commands ----------------------------------------------------------- */

/* Run argv (NULL-terminated) with its output captured into c->out. The
 * exit status, or -1 when it could not run. */
static int run_argv(char *const argv[], tb_cmd_t *c)
{
    int pfd[2];
    c->out[0] = '\0';
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return c->status = -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return c->status = -1;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s", argv[0], strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    size_t got = 0;
    for (;;) {
        char buf[256];
        ssize_t k = read(pfd[0], buf, sizeof(buf));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        size_t take = (size_t)k;
        if (take > sizeof(c->out) - 1 - got)
            take = sizeof(c->out) - 1 - got;
        memcpy(c->out + got, buf, take);
        got += take;
    }
    c->out[got] = '\0';
    close(pfd[0]);
    while (got > 0 && (c->out[got - 1] == '\n' || c->out[got - 1] == ' '))
        c->out[--got] = '\0';
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return c->status = -1;
    return c->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Format a command line into words and run it. Words are split on
 * spaces; no quoting is needed for the names this module uses. */
static int run_fmt(tb_cmd_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int run_fmt(tb_cmd_t *c, const char *fmt, ...)
{
    char line[512];
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->line, sizeof(c->line), fmt, ap);
    va_end(ap);
    snprintf(line, sizeof(line), "%s", c->line);
    for (char *save = NULL, *w = strtok_r(line, " ", &save); w && argc < 31;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    argv[argc] = NULL;
    return run_argv(argv, c);
}

/* "what: `cmd` failed: its output". */
static herd_status_t fail_cmd(char *err, size_t len, const tb_cmd_t *c,
                              const char *what)
{
    char code[32];
    snprintf(code, sizeof(code), "exit status %d", c->status);
    return fail(err, len, HERD_ERR_IO, "%s: `%s` failed: %s", what, c->line,
                c->out[0] ? c->out : code);
}

herd_status_t testbed_probe(char *why, size_t whylen)
{
    tb_cmd_t c;
    if (geteuid() != 0)
        return fail(why, whylen, HERD_ERR_UNSUPPORTED,
                    "the testbed needs root (network namespaces and tc)");
    if (run_fmt(&c, "ip -V") != 0)
        return fail(why, whylen, HERD_ERR_UNSUPPORTED,
                    "iproute2's `ip` was not found (apt-get install iproute2)");
    if (run_fmt(&c, "tc -V") != 0)
        return fail(why, whylen, HERD_ERR_UNSUPPORTED,
                    "iproute2's `tc` was not found (apt-get install iproute2)");
    /* A name of no instance, and of this process only. */
    if (run_fmt(&c, "ip netns add herd-tbprobe-%ld", (long)getpid()) != 0)
        return fail(why, whylen, HERD_ERR_UNSUPPORTED,
                    "network namespaces are not available here "
                    "(`ip netns add` failed: %s)",
                    c.out);
    run_fmt(&c, "ip netns del herd-tbprobe-%ld", (long)getpid());
    return HERD_OK;
}

/* ---- lock --------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One attempt: the open lock file, locked (how: 1 shared, 2 exclusive),
 * or -1 with errno. A file that `down` removed while we waited for it is
 * not the lock any more: retried (-1, EAGAIN). */
static int lock_once(const char *path, int how)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (flock(fd, (how == 2 ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    struct stat a, b;
    if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev) {
        close(fd);
        errno = EAGAIN;
        return -1;
    }
    return fd;
}

int testbed_lock(int how, char *err, size_t errlen)
{
    char path[128];
    mkdir(STATE_DIR, 0755);
    state_path(path, sizeof(path), "lock");
    double end = now_s() + LOCK_WAIT_S;
    for (;;) {
        int fd = lock_once(path, how);
        if (fd >= 0)
            return fd;
        if (errno != EWOULDBLOCK && errno != EAGAIN && errno != EINTR) {
            fail(err, errlen, HERD_ERR_IO, "cannot lock %s: %s", path,
                 strerror(errno));
            return -1;
        }
        if (now_s() > end) {
            fail(err, errlen, HERD_ERR_BUSY,
                 "testbed '%s' is busy: another `herd testbed` command holds "
                 "%s",
                 testbed_id(), path);
            return -1;
        }
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Nothing of the instance left (no state, no namespaces): its lock
 * file goes too, so ids used once (tests, CI jobs) leave nothing in /run.
 * Safe while locked: a waiter that locks the removed file sees that it
 * is not the lock any more (lock_once) and retries. */
void testbed_unlock(int fd)
{
    if (fd < 0)
        return;
    char path[128];
    testbed_cfg_t cfg;
    if (testbed_state(&cfg) != HERD_OK && testbed_leftovers(NULL, 0) == 0) {
        state_path(path, sizeof(path), "lock");
        unlink(path);
    }
    close(fd); /* releases the flock */
}

/* ---- down --------------------------------------------------------------- */

typedef void (*ns_fn)(const char *name, void *arg);

/* Call fn for each namespace of this instance; returns how many. */
static int each_ns(ns_fn fn, void *arg)
{
    DIR *d = opendir(NETNS_DIR);
    int n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (ns_ours(e->d_name)) {
            n++;
            if (fn)
                fn(e->d_name, arg);
        }
    closedir(d);
    return n;
}

typedef struct ns_list {
    char *buf;
    size_t len, used;
    int kill; /* down --force: kill the processes found */
    int busy; /* namespaces with processes */
    int failures;
} ns_list_t;

static void list_append(ns_list_t *l, const char *s)
{
    if (l->used + 1 < l->len)
        l->used += (size_t)snprintf(l->buf + l->used, l->len - l->used, "%s%s",
                                    l->used ? ", " : "", s);
    if (l->used >= l->len)
        l->used = l->len - 1;
}

static void list_name(const char *name, void *arg)
{
    list_append(arg, name);
}

/* Processes in `name`: listed as "name (pids 1 2)", or killed. */
static void ns_procs(const char *name, void *arg)
{
    ns_list_t *l = arg;
    tb_cmd_t c;
    if (run_fmt(&c, "ip netns pids %s", name) != 0 || !c.out[0])
        return;
    l->busy++;
    if (l->kill) {
        char *save = NULL;
        for (char *w = strtok_r(c.out, " \n", &save); w;
             w = strtok_r(NULL, " \n", &save))
            kill((pid_t)atol(w), SIGKILL);
        return;
    }
    for (char *p = c.out; *p; p++)
        if (*p == '\n')
            *p = ' ';
    char item[256];
    snprintf(item, sizeof(item), "%.64s (pid %.180s)", name, c.out);
    list_append(l, item);
}

static void ns_delete(const char *name, void *arg)
{
    ns_list_t *l = arg;
    tb_cmd_t c;
    if (run_fmt(&c, "ip netns del %s", name) != 0 && l->failures++ == 0)
        fail_cmd(l->buf, l->len, &c, "removing the testbed");
}

/* Under the lock. */
static herd_status_t down_locked(int force, char *err, size_t errlen)
{
    char busy[1024] = "";
    ns_list_t l = {.buf = busy, .len = sizeof(busy), .kill = force};
    each_ns(ns_procs, &l);
    if (l.busy && !force)
        return fail(err, errlen, HERD_ERR_BUSY,
                    "processes still run in %s; stop them (or use `herd "
                    "testbed down --force`, which kills them)",
                    busy);
    /* Killed: wait (bounded) until the kernel has let them go. */
    for (int i = 0; l.busy && i < 50; i++) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        l.busy = 0;
        each_ns(ns_procs, &l);
    }
    char first[512] = "";
    ns_list_t d = {.buf = first, .len = sizeof(first)};
    each_ns(ns_delete, &d);
    char path[128];
    state_path(path, sizeof(path), "state");
    unlink(path);
    if (d.failures)
        return fail(err, errlen, HERD_ERR_IO,
                    "could not delete %d testbed namespace(s); %s", d.failures,
                    first);
    return HERD_OK;
}

herd_status_t testbed_down_opts(int force, char *err, size_t errlen)
{
    int lk = testbed_lock(2, err, errlen);
    if (lk < 0)
        return HERD_ERR_BUSY;
    herd_status_t st = down_locked(force, err, errlen);
    testbed_unlock(lk);
    return st;
}

herd_status_t testbed_down(char *err, size_t errlen)
{
    return testbed_down_opts(0, err, errlen);
}

int testbed_leftovers(char *names, size_t len)
{
    ns_list_t l = {.buf = names, .len = len};
    if (names && len)
        names[0] = '\0';
    return each_ns(names && len ? list_name : NULL, &l);
}

/* ---- up ----------------------------------------------------------------- */

static volatile sig_atomic_t tb_signal;

static void on_signal(int sig)
{
    tb_signal = sig;
}

static const int up_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_UP_SIGNALS ((int)(sizeof(up_signals) / sizeof(up_signals[0])))

/* tbf in both directions: the host's eth0 egress and the switch port's
 * egress towards the host. burst must hold a GSO packet (64 KiB) or tbf
 * drops it; 1 ms of traffic beyond that keeps short bursts at line rate
 * without letting long transfers exceed the rate. */
static int shape(tb_cmd_t *c, const char *ns, const char *dev, double rate_bps)
{
    double bytes_ms = rate_bps / 8.0 / 1000.0;
    long burst = (long)(bytes_ms > 131072 ? bytes_ms : 131072);
    return run_fmt(c,
                   "tc -n %s qdisc replace dev %s root tbf rate %.0fbit "
                   "burst %ld latency 100ms",
                   ns, dev, rate_bps, burst);
}

static herd_status_t add_host(const testbed_cfg_t *cfg, int i, char *err,
                              size_t errlen)
{
    char ns[64], sw[64], addr[32], what[96];
    tb_cmd_t c;
    testbed_ns_name(i, ns, sizeof(ns));
    testbed_ns_name(-1, sw, sizeof(sw));
    testbed_host_addr(i, addr, sizeof(addr));
    snprintf(what, sizeof(what), "could not create host %d (%.60s)", i, ns);
    if (run_fmt(&c, "ip netns add %s", ns) ||
        run_fmt(&c,
                "ip link add tbh%d netns %s type veth peer name tbs%d "
                "netns %s",
                i, ns, i, sw) ||
        run_fmt(&c, "ip -n %s link set tbh%d name eth0", ns, i) ||
        run_fmt(&c, "ip -n %s addr add %s/24 dev eth0", ns, addr) ||
        run_fmt(&c, "ip -n %s link set eth0 up", ns) ||
        run_fmt(&c, "ip -n %s link set lo up", ns) ||
        run_fmt(&c, "ip -n %s link set tbs%d master br0", sw, i) ||
        run_fmt(&c, "ip -n %s link set tbs%d up", sw, i))
        return fail_cmd(err, errlen, &c, what);
    if (cfg->rate_bps[i] > 0) {
        char port[32];
        snprintf(port, sizeof(port), "tbs%d", i);
        snprintf(what, sizeof(what),
                 "tc could not shape host %d to %.0f bit/s (is sch_tbf "
                 "available?)",
                 i, cfg->rate_bps[i]);
        if (shape(&c, ns, "eth0", cfg->rate_bps[i]) ||
            shape(&c, sw, port, cfg->rate_bps[i]))
            return fail_cmd(err, errlen, &c, what);
    }
    return HERD_OK;
}

static char tb_cc_note[300];

const char *testbed_cc_note(void)
{
    return tb_cc_note;
}

/* Every host's congestion control: the asked one, or the default (kept
 * as the machine's own, with a note, where it cannot be set). */
static herd_status_t set_ccs(const testbed_cfg_t *cfg, char *cc_out,
                             size_t cclen, char *err, size_t errlen)
{
    const char *want = cfg->cc[0] ? cfg->cc : TESTBED_CC_DEFAULT;
    tb_cc_note[0] = '\0';
    for (int i = 0; i < cfg->hosts && !tb_signal; i++) {
        char ns[64], why[256];
        testbed_ns_name(i, ns, sizeof(ns));
        if (testbed_set_cc(ns, want, why, sizeof(why)) == HERD_OK)
            continue;
        if (cfg->cc[0])
            return fail(err, errlen, HERD_ERR_UNSUPPORTED, "%s", why);
        /* the default cannot be had here: the hosts keep the machine's
         * own (the first host's attempt is the only one that can have
         * changed anything, and it did not), and the note says why */
        snprintf(tb_cc_note, sizeof(tb_cc_note), "%s", why);
        break;
    }
    char ns[64];
    testbed_ns_name(0, ns, sizeof(ns));
    if (testbed_ns_cc(ns, cc_out, cclen) != 0)
        snprintf(cc_out, cclen, "?");
    return HERD_OK;
}

/* Every host's slow start after idle, when asked; then what host 0 runs
 * (Linux's default, on, when it cannot be read). */
static herd_status_t set_idle_restart(const testbed_cfg_t *cfg, int *now,
                                      char *err, size_t errlen)
{
    char ns[64];
    for (int i = 0; cfg->idle_restart != TESTBED_IDLE_RESTART_DEFAULT &&
                    i < cfg->hosts && !tb_signal;
         i++) {
        testbed_ns_name(i, ns, sizeof(ns));
        herd_status_t st = testbed_set_idle_restart(
            ns, cfg->idle_restart == TESTBED_IDLE_RESTART_ON, err, errlen);
        if (st != HERD_OK)
            return st;
    }
    testbed_ns_name(0, ns, sizeof(ns));
    *now = testbed_ns_idle_restart(ns) == 0 ? TESTBED_IDLE_RESTART_OFF
                                            : TESTBED_IDLE_RESTART_ON;
    return HERD_OK;
}

static herd_status_t write_state(const testbed_cfg_t *cfg, const char *cc,
                                 int idle_restart)
{
    char path[128], tmp[160];
    state_path(path, sizeof(path), "state");
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return HERD_ERR_IO;
    fprintf(f, "hosts %d\n", cfg->hosts);
    for (int i = 0; i < cfg->hosts; i++)
        fprintf(f, "rate %d %.0f\n", i, cfg->rate_bps[i]);
    fprintf(f, "cc %s\n", cc);
    fprintf(f, "idle_restart %s\n",
            idle_restart == TESTBED_IDLE_RESTART_OFF ? "off" : "on");
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return HERD_ERR_IO;
    return HERD_OK;
}

/* Refuse to replace what exists, unless forced. */
static herd_status_t up_check(const testbed_cfg_t *cfg, char *err,
                              size_t errlen)
{
    testbed_cfg_t cur;
    char names[512];
    const char *id = testbed_id();
    char label[64];
    snprintf(label, sizeof(label), "testbed%s%s%s", *id ? " '" : "", id,
             *id ? "'" : "");
    if (cfg->force)
        return down_locked(1, err, errlen);
    if (testbed_state(&cur) == HERD_OK)
        return fail(err, errlen, HERD_ERR_BUSY,
                    "%s is up (%d hosts): `herd testbed down` first, `up "
                    "--force` to replace it, or another --id",
                    label, cur.hosts);
    if (testbed_leftovers(names, sizeof(names)) > 0)
        return fail(err, errlen, HERD_ERR_BUSY,
                    "%s left namespaces behind (%s; an interrupted up?): "
                    "`herd testbed down` removes them, `up --force` "
                    "replaces them",
                    label, names);
    return HERD_OK;
}

static herd_status_t up_build(const testbed_cfg_t *cfg, char *err,
                              size_t errlen)
{
    char sw[64];
    tb_cmd_t c;
    testbed_ns_name(-1, sw, sizeof(sw));
    if (run_fmt(&c, "ip netns add %s", sw) ||
        run_fmt(&c, "ip -n %s link add br0 type bridge", sw) ||
        run_fmt(&c, "ip -n %s link set br0 up", sw))
        return fail_cmd(err, errlen, &c, "could not create the switch");
    for (int i = 0; i < cfg->hosts && !tb_signal; i++) {
        herd_status_t st = add_host(cfg, i, err, errlen);
        if (st != HERD_OK)
            return st;
    }
    char cc[16] = "";
    int idle = TESTBED_IDLE_RESTART_ON;
    herd_status_t st = set_ccs(cfg, cc, sizeof(cc), err, errlen);
    if (st == HERD_OK)
        st = set_idle_restart(cfg, &idle, err, errlen);
    if (st != HERD_OK)
        return st;
    if (!tb_signal && write_state(cfg, cc, idle) != HERD_OK) {
        char path[128];
        state_path(path, sizeof(path), "state");
        return fail(err, errlen, HERD_ERR_IO, "could not write %s", path);
    }
    return HERD_OK;
}

herd_status_t testbed_up(const testbed_cfg_t *cfg, char *err, size_t errlen)
{
    if (!cfg || cfg->hosts < 1 || cfg->hosts > TESTBED_MAX_HOSTS)
        return fail(err, errlen, HERD_ERR_INVALID_ARG, "hosts must be 1..%d",
                    TESTBED_MAX_HOSTS);
    herd_status_t st = testbed_probe(err, errlen);
    if (st != HERD_OK)
        return st;
    int lk = testbed_lock(2, err, errlen);
    if (lk < 0)
        return HERD_ERR_BUSY;
    if ((st = up_check(cfg, err, errlen)) != HERD_OK) {
        testbed_unlock(lk);
        return st;
    }
    /* A signal from here on undoes what was made (a killed up leaves
     * namespaces that status reports and down removes). */
    struct sigaction sa, old[N_UP_SIGNALS];
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    tb_signal = 0;
    for (int i = 0; i < N_UP_SIGNALS; i++)
        sigaction(up_signals[i], &sa, &old[i]);
    st = up_build(cfg, err, errlen);
    int sig = tb_signal;
    if (sig)
        st = fail(err, errlen, HERD_ERR_ABORTED,
                  "interrupted by signal %d (%s); the partial testbed was "
                  "removed",
                  sig, strsignal(sig));
    if (st != HERD_OK)
        down_locked(1, NULL, 0);
    for (int i = 0; i < N_UP_SIGNALS; i++)
        sigaction(up_signals[i], &old[i], NULL);
    testbed_unlock(lk);
    return st;
}

herd_status_t testbed_state(testbed_cfg_t *out)
{
    char path[128];
    state_path(path, sizeof(path), "state");
    FILE *f = fopen(path, "r");
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
    /* states written before the congestion control was set lack it */
    if (st == HERD_OK && fscanf(f, "cc %15s\n", cfg.cc) != 1)
        snprintf(cfg.cc, sizeof(cfg.cc), "host");
    /* and before slow start after idle was: Linux's default then */
    char idle[8] = "";
    cfg.idle_restart =
        fscanf(f, "idle_restart %7s\n", idle) == 1 && !strcmp(idle, "off")
            ? TESTBED_IDLE_RESTART_OFF
            : TESTBED_IDLE_RESTART_ON;
    fclose(f);
    if (st == HERD_OK)
        *out = cfg;
    return st;
}
