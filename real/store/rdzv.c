/* real/store/rdzv.c - rendezvous for the real engines: who am I (rank,
 * world size, local rank) and which store do we share, from herd_init_t
 * and the environment torchrun, srun or mpirun leave behind.
 *
 * init_method env:// reads MASTER_ADDR/MASTER_PORT; tcp://host:port names
 * the store; file:///path uses the file store (one host). For env:// and
 * tcp:// rank 0 hosts the server unless HERD_STORE_EXTERNAL=1 (the
 * launcher or `herd store` hosts it). HERD_STORE_TOKEN is the shared
 * token, HERD_STORE_PREFIX the key prefix of this round, and
 * HERD_STORE_TIMEOUT (seconds) overrides how long to wait for the store.
 * HERD_STORE_PROTOCOL=tcpstore (or real torchrun's
 * TORCHELASTIC_USE_AGENT_STORE) connects with PyTorch's TCPStore
 * protocol to a store someone else hosts (torchrun's agent), finding
 * out whether torch 1.x or >= 2 hosts it (tcpstore1/tcpstore2 say). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real/store/store.h"
#include "real/store/store_int.h"

/* How long rank 0 keeps its server up for the others to say goodbye. */
#define RDZV_CLOSE_WAIT_S 30.0
/* The least time to wait for the store unless HERD_STORE_TIMEOUT says. */
#define RDZV_MIN_TIMEOUT_S 30.0

typedef struct rdzv_ep {
    char host[256];
    int port;
    const char *path; /* file:// */
} rdzv_ep_t;

static herd_status_t rdzv_fail(char *err, size_t errlen, herd_status_t st,
                               const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static herd_status_t rdzv_fail(char *err, size_t errlen, herd_status_t st,
                               const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* 1: set and parsed; 0: unset; -1: set but not an integer. */
static int env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*end || errno || x < -2147483647L || x > 2147483647L)
        return -1;
    *out = (int)x;
    return 1;
}

/* Rank and world size from one pair of variables. 1 found, 0 absent,
 * negative: an error is written. */
static int env_pair(const char *rname, const char *wname, int *rank, int *world,
                    char *err, size_t errlen)
{
    int r = env_int(rname, rank), w = env_int(wname, world);
    if (r == 0 && w == 0)
        return 0;
    const char *bad = r < 0 ? rname : w < 0 ? wname : NULL;
    if (bad) {
        rdzv_fail(err, errlen, 0, "%s='%s' is not an integer", bad,
                  getenv(bad));
        return -1;
    }
    if (r == 0 || w == 0) {
        rdzv_fail(err, errlen, 0, "%s is set but %s is not", r ? rname : wname,
                  r ? wname : rname);
        return -1;
    }
    return 1;
}

static herd_status_t rdzv_rank(const herd_init_t *init, const char *scheme,
                               store_rdzv_t *r, char *err, size_t errlen)
{
    static const char *const pairs[][2] = {
        {"RANK", "WORLD_SIZE"},
        {"SLURM_PROCID", "SLURM_NTASKS"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    };
    int found = 0;
    if (init->world_size > 0) {
        r->rank = init->rank;
        r->world_size = init->world_size;
        found = 1;
    }
    for (size_t i = 0; !found && i < 3; i++) {
        found = env_pair(pairs[i][0], pairs[i][1], &r->rank, &r->world_size,
                         err, errlen);
        if (found < 0)
            return HERD_ERR_INVALID_ARG;
    }
    if (!found)
        return rdzv_fail(err, errlen, HERD_ERR_INVALID_ARG,
                         "%s needs RANK and WORLD_SIZE (or SLURM_PROCID/"
                         "SLURM_NTASKS, or OMPI_COMM_WORLD_RANK/SIZE, or "
                         "rank and world_size in herd_init_t)",
                         scheme);
    if (r->world_size < 1 || r->rank < 0 || r->rank >= r->world_size)
        return rdzv_fail(err, errlen, HERD_ERR_INVALID_ARG,
                         "rank %d is out of range for world size %d", r->rank,
                         r->world_size);
    return HERD_OK;
}

/* The leading integer of a Slurm count such as "4(x2)". */
static int leading_int(const char *name, int *out)
{
    const char *v = getenv(name);
    if (!v || !isdigit((unsigned char)*v))
        return 0;
    *out = atoi(v);
    return *out > 0;
}

static void rdzv_local(const herd_init_t *init, store_rdzv_t *r)
{
    static const char *const lr[] = {"LOCAL_RANK", "SLURM_LOCALID",
                                     "OMPI_COMM_WORLD_LOCAL_RANK"};
    int v = 0, have = 0;
    if (init->local_rank > 0)
        v = init->local_rank, have = 1;
    for (size_t i = 0; !have && i < 3; i++)
        have = env_int(lr[i], &v) == 1 && v >= 0;
    if (!have)
        v = (init->local_rank == 0 && init->world_size > 0) ? 0 : r->rank;
    r->local_rank = v;
    int lw = 0;
    if (!(env_int("LOCAL_WORLD_SIZE", &lw) == 1 && lw > 0) &&
        !leading_int("SLURM_NTASKS_PER_NODE", &lw) &&
        !leading_int("SLURM_TASKS_PER_NODE", &lw) &&
        !(env_int("OMPI_COMM_WORLD_LOCAL_SIZE", &lw) == 1 && lw > 0))
        lw = r->world_size; /* unknown: assume one node */
    r->local_world_size = lw;
}

/* The first host of a Slurm node list: "gpu[03-04,07],cpu1" -> "gpu03". */
static int slurm_first_node(char *out, size_t outlen)
{
    const char *v = getenv("SLURM_STEP_NODELIST");
    if (!v || !*v)
        v = getenv("SLURM_JOB_NODELIST");
    if (!v || !*v)
        v = getenv("SLURM_NODELIST");
    if (!v || !*v)
        return 0;
    size_t n = 0;
    int in_br = 0, skip = 0;
    for (const char *p = v; *p && n + 1 < outlen; p++) {
        if (*p == '[')
            in_br = 1, skip = 0;
        else if (*p == ']')
            in_br = 0;
        else if (!in_br && *p == ',')
            break;
        else if (in_br && (*p == ',' || *p == '-'))
            skip = 1;
        else if (!skip || !in_br)
            out[n++] = *p;
    }
    out[n] = '\0';
    return n > 0;
}

static herd_status_t parse_port(const char *s, const char *what, int *port,
                                char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long p = strtol(s, &end, 10);
    if (!*s || *end || errno || p < 1 || p > 65535)
        return rdzv_fail(err, errlen, HERD_ERR_INVALID_ARG,
                         "%s: port '%s' is not in 1..65535", what, s);
    *port = (int)p;
    return HERD_OK;
}

static herd_status_t ep_env(rdzv_ep_t *ep, char *err, size_t errlen)
{
    const char *addr = getenv("MASTER_ADDR");
    if (addr && *addr)
        snprintf(ep->host, sizeof(ep->host), "%s", addr);
    else if (!slurm_first_node(ep->host, sizeof(ep->host)))
        return rdzv_fail(err, errlen, HERD_ERR_INVALID_ARG,
                         "env:// needs MASTER_ADDR (under Slurm the first "
                         "node of SLURM_STEP_NODELIST is used)");
    const char *port = getenv("MASTER_PORT");
    if (!port || !*port)
        return rdzv_fail(err, errlen, HERD_ERR_INVALID_ARG,
                         "env:// needs MASTER_PORT");
    return parse_port(port, "MASTER_PORT", &ep->port, err, errlen);
}

/* "tcp://host:port" or "tcp://[v6addr]:port". */
static herd_status_t ep_tcp(const char *rest, rdzv_ep_t *ep, char *err,
                            size_t errlen)
{
    const char *colon = strrchr(rest, ':');
    const char *h = rest, *he = colon;
    if (*rest == '[') {
        const char *rb = strchr(rest, ']');
        colon = rb && rb[1] == ':' ? rb + 1 : NULL;
        h = rest + 1, he = rb;
    }
    if (!colon || he == h || (size_t)(he - h) >= sizeof(ep->host))
        return rdzv_fail(err, errlen, HERD_ERR_INVALID_ARG,
                         "init_method 'tcp://%s': expected tcp://host:port",
                         rest);
    memcpy(ep->host, h, (size_t)(he - h));
    ep->host[he - h] = '\0';
    return parse_port(colon + 1, "init_method tcp://", &ep->port, err, errlen);
}

static herd_status_t rdzv_endpoint(const char *method, rdzv_ep_t *ep, char *err,
                                   size_t errlen)
{
    memset(ep, 0, sizeof(*ep));
    if (!strcmp(method, "env://"))
        return ep_env(ep, err, errlen);
    if (!strncmp(method, "tcp://", 6))
        return ep_tcp(method + 6, ep, err, errlen);
    if (!strncmp(method, "file://", 7) && method[7] == '/') {
        ep->path = method + 7;
        return HERD_OK;
    }
    return rdzv_fail(err, errlen, HERD_ERR_INVALID_ARG,
                     "init_method '%s': expected env://, tcp://host:port or "
                     "file:///path",
                     method);
}

static int is_loopback(const char *host)
{
    return !strncmp(host, "127.", 4) || !strcmp(host, "localhost") ||
           !strcmp(host, "::1");
}

static double rdzv_timeout(const herd_init_t *init)
{
    const char *v = getenv("HERD_STORE_TIMEOUT");
    double t = v && *v ? atof(v) : 0;
    if (t > 0)
        return t;
    /* A short collective timeout must not make a slow start fatal. */
    t = init->timeout_s > 0 ? init->timeout_s : HERD_DEFAULT_TIMEOUT_S;
    return t > RDZV_MIN_TIMEOUT_S ? t : RDZV_MIN_TIMEOUT_S;
}

/* The store speaks PyTorch's TCPStore protocol and someone else hosts
 * it: HERD_STORE_PROTOCOL=tcpstore, or a worker of real torchrun, whose
 * agent hosts a TCPStore on MASTER_PORT for its workers (herd's launcher
 * sets that variable too, for torch workers, but also
 * HERD_STORE_EXTERNAL: its store speaks herd's protocol, with a token
 * when it has one). 0 herd's protocol; 1 + the TCPStore version to
 * speak (0: find out, tcpstore1: torch 1.x, tcpstore2: torch >= 2); -1
 * for an unknown HERD_STORE_PROTOCOL. */
static int rdzv_tcpstore(void)
{
    const char *p = getenv("HERD_STORE_PROTOCOL");
    const char *agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
    const char *ext = getenv("HERD_STORE_EXTERNAL");
    if (p && *p)
        return !strcmp(p, "tcpstore")    ? 1
               : !strcmp(p, "tcpstore1") ? 2
               : !strcmp(p, "tcpstore2") ? 3
               : !strcmp(p, "herd")      ? 0
                                         : -1;
    if (ext && !strcmp(ext, "1"))
        return 0;
    return agent && (!strcmp(agent, "True") || !strcmp(agent, "1"));
}

static herd_status_t rdzv_connect_tcpstore(const herd_init_t *init,
                                           const rdzv_ep_t *ep, int version,
                                           store_rdzv_t *r, char *err,
                                           size_t errlen)
{
    double tmo = rdzv_timeout(init);
    herd_status_t st = store_client_connect_tcpstore_version(
        ep->host, ep->port, version, tmo, &r->client);
    if (st != HERD_OK)
        return rdzv_fail(err, errlen, st,
                         "rank %d cannot reach the TCPStore at %s:%d within "
                         "%.3g s: %s",
                         r->rank, ep->host, ep->port, tmo,
                         herd_status_string(st));
    store_client_set_timeout(r->client, tmo);
    return HERD_OK;
}

static herd_status_t rdzv_connect(const herd_init_t *init, const rdzv_ep_t *ep,
                                  store_rdzv_t *r, char *err, size_t errlen)
{
    int tcps = rdzv_tcpstore();
    if (tcps < 0)
        return rdzv_fail(err, errlen, HERD_ERR_INVALID_ARG,
                         "HERD_STORE_PROTOCOL='%s' is none of 'herd', "
                         "'tcpstore', 'tcpstore1' and 'tcpstore2'",
                         getenv("HERD_STORE_PROTOCOL"));
    if (tcps)
        return rdzv_connect_tcpstore(init, ep, tcps - 1, r, err, errlen);
    const char *token = getenv("HERD_STORE_TOKEN");
    const char *ext = getenv("HERD_STORE_EXTERNAL");
    double tmo = rdzv_timeout(init);
    herd_status_t st;
    if (r->rank == 0 && !(ext && !strcmp(ext, "1"))) {
        /* Bind where the others will look when that is this host's
         * loopback; otherwise on every interface, as torch does. */
        st = store_server_start(is_loopback(ep->host) ? ep->host : NULL,
                                ep->port, token, &r->server);
        if (st != HERD_OK)
            return rdzv_fail(err, errlen, st,
                             "rank 0 cannot host the store on port %d: %s",
                             ep->port, herd_status_string(st));
    }
    st = store_client_connect(ep->host, ep->port, token, tmo, &r->client);
    if (st == HERD_ERR_AUTH)
        return rdzv_fail(err, errlen, st,
                         "rank %d: authentication failed at the store %s:%d: "
                         "%s; set HERD_STORE_TOKEN to the token the store "
                         "was started with",
                         r->rank, ep->host, ep->port,
                         token && *token ? "HERD_STORE_TOKEN does not match"
                                         : "HERD_STORE_TOKEN is not set");
    if (st != HERD_OK)
        return rdzv_fail(err, errlen, st,
                         "rank %d cannot reach the store at %s:%d within "
                         "%.3g s: %s",
                         r->rank, ep->host, ep->port, tmo,
                         herd_status_string(st));
    store_client_set_timeout(r->client, tmo);
    return HERD_OK;
}

herd_status_t store_rdzv_open(const herd_init_t *init, store_rdzv_t *out,
                              char *err, size_t errlen)
{
    if (!init || !out)
        return HERD_ERR_INVALID_ARG;
    const char *method =
        init->init_method && *init->init_method ? init->init_method : "env://";
    store_rdzv_t r = {0};
    rdzv_ep_t ep;
    const char *scheme = !strncmp(method, "tcp", 3)    ? "tcp://"
                         : !strncmp(method, "file", 4) ? "file://"
                                                       : "env://";
    herd_status_t st = rdzv_rank(init, scheme, &r, err, errlen);
    if (st == HERD_OK)
        st = rdzv_endpoint(method, &ep, err, errlen);
    if (st != HERD_OK)
        return st;
    rdzv_local(init, &r);
    if (ep.path) {
        st = store_client_open_file(ep.path, &r.client);
        if (st != HERD_OK)
            return rdzv_fail(err, errlen, st, "file store '%s': %s", ep.path,
                             herd_status_string(st));
        store_client_set_timeout(r.client, rdzv_timeout(init));
    } else if ((st = rdzv_connect(init, &ep, &r, err, errlen)) != HERD_OK) {
        store_rdzv_close(&r);
        return st;
    }
    const char *prefix = getenv("HERD_STORE_PREFIX");
    char round[256];
    if (!prefix && !ep.path && rdzv_tcpstore() >= 1) {
        /* torchrun's store outlives restarts: one prefix per round */
        const char *id = getenv("TORCHELASTIC_RUN_ID");
        const char *n = getenv("TORCHELASTIC_RESTART_COUNT");
        snprintf(round, sizeof(round), "herd/%.200s/%.16s/", id ? id : "none",
                 n ? n : "0");
        prefix = round;
    }
    if ((st = store_client_set_prefix(r.client, prefix)) != HERD_OK) {
        store_rdzv_close(&r);
        return rdzv_fail(err, errlen, st, "HERD_STORE_PREFIX is too long");
    }
    *out = r;
    return HERD_OK;
}

/* Rank 0's server must outlive the other ranks' last requests: each rank
 * leaves a key on its way out and the host waits for them (bounded). */
void store_rdzv_close(store_rdzv_t *r)
{
    if (!r)
        return;
    if (r->client && r->world_size > 1) {
        char key[64];
        if (!r->server) {
            snprintf(key, sizeof(key), "herd/rdzv/exit/%d", r->rank);
            store_set(r->client, key, "1", 1);
        } else {
            double t = store_client_timeout(r->client);
            t = t < RDZV_CLOSE_WAIT_S ? t : RDZV_CLOSE_WAIT_S;
            for (int i = 1; i < r->world_size; i++) {
                snprintf(key, sizeof(key), "herd/rdzv/exit/%d", i);
                const char *k = key;
                if (store_wait(r->client, &k, 1, t) != HERD_OK)
                    break;
            }
        }
    }
    store_client_close(r->client);
    store_server_stop(r->server);
    memset(r, 0, sizeof(*r));
}
