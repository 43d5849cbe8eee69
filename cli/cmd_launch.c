/* cli/cmd_launch.c - `herd launch`: torchrun's flags, then the worker
 * command (after `--`, or the first argument that is not a flag). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "real/launch/launch.h"

static const char launch_usage[] =
    "usage: herd launch [flags] [--] CMD ARGS...\n"
    "  Start this node's workers like torchrun, with RANK, LOCAL_RANK,\n"
    "  WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,\n"
    "  TORCHELASTIC_* and HERD_STORE_* set (see docs/launch.md).\n"
    "  --nproc-per-node N   workers on this node (default 1; 'gpu': one per "
    "CUDA\n"
    "                       device, 'cpu'/'auto': one per GPU, else CPU)\n"
    "  --nnodes N|MIN:MAX   nodes in the job (default 1); MIN:MAX is "
    "elastic:\n"
    "                       wait for MIN, admit up to MAX, rendezvous "
    "again\n"
    "                       when a node is lost or waits to join\n"
    "  --node-rank R        this node (default 0)\n"
    "  --master-addr HOST   node 0's address (default 127.0.0.1)\n"
    "  --master-port PORT   node 0's store port (default 29500)\n"
    "  --rdzv-endpoint H:P  same as --master-addr H --master-port P\n"
    "  --rdzv-backend B     c10d or static (both: the launcher's store)\n"
    "  --rdzv-id ID         same as --run-id\n"
    "  --rdzv-timeout S     seconds to wait for node 0's store, or for an\n"
    "                       elastic rendezvous to close (default 300)\n"
    "  --rdzv-conf K=V,...  elastic: join_timeout, last_call_timeout "
    "(30),\n"
    "                       keep_alive_interval (5), keep_alive_max_attempt "
    "(3)\n"
    "  --max-restarts K     restart the group up to K times (default 0)\n"
    "  --log-dir DIR        worker logs: DIR/RUN_ID/attempt_N/LOCAL/\n"
    "  --redirects M        0 none, 1 stdout, 2 stderr, 3 both to the logs\n"
    "                       (or per local rank: 0:3,1:1)\n"
    "  --tee M              as --redirects, and copied to the console\n"
    "  --standalone         one node, store on a free local port\n"
    "  --monitor-interval S seconds between store checks (default 0.1)\n"
    "  --run-id ID          TORCHELASTIC_RUN_ID (default none)\n"
    "  --role NAME          ROLE_NAME (default 'default')\n"
    "  --stop-grace S       SIGTERM, then SIGKILL after S s (default 5)\n"
    "  --quiet              no progress lines\n"
    "  Exit code: the failing worker's (128+N if killed by signal N).\n";

/* torchrun accepts both --nproc-per-node and --nproc_per_node. */
static int flag_is(const char *arg, const char *name, const char **val)
{
    char norm[64];
    size_t i = 0;
    for (; arg[i] && arg[i] != '=' && i + 1 < sizeof(norm); i++)
        norm[i] = arg[i] == '_' ? '-' : arg[i];
    norm[i] = '\0';
    if (strcmp(norm, name) != 0)
        return 0;
    *val = arg[i] == '=' ? arg + i + 1 : NULL;
    return 1;
}

/* N, or torchrun's MIN:MAX (elastic when MIN < MAX). */
static int parse_nnodes(const char *v, launch_opts_t *o)
{
    long a = 0, b = 0;
    const char *colon = strchr(v, ':');
    if (!colon) {
        if (cli_parse_int(v, 1, 1 << 20, &a) != 0)
            return -1;
        o->nnodes = (int)a;
        o->min_nodes = 0;
        return 0;
    }
    char lo[32];
    size_t n = (size_t)(colon - v);
    if (n >= sizeof(lo))
        return -1;
    memcpy(lo, v, n);
    lo[n] = '\0';
    if (cli_parse_int(lo, 1, 1 << 20, &a) ||
        cli_parse_int(colon + 1, 1, 1 << 20, &b))
        return -1;
    if (a > b)
        return -2;
    o->nnodes = (int)b;
    o->min_nodes = a < b ? (int)a : 0;
    return 0;
}

static int bad_value(const char *flag, const char *val, const char *want)
{
    return cli_usage_error("launch", "%s: '%s' is not %s", flag, val, want);
}

static int apply_int(const char *flag, const char *val, long lo, long hi,
                     int *out)
{
    long v = 0;
    if (cli_parse_int(val, lo, hi, &v) != 0) {
        char want[64];
        snprintf(want, sizeof(want), "an integer in %ld..%ld", lo, hi);
        return bad_value(flag, val, want);
    }
    *out = (int)v;
    return 0;
}

/* CUDA devices: the driver's /proc entries, else `nvidia-smi -L`. */
static int count_gpus(void)
{
    int n = 0;
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    if (n > 0)
        return n;
    FILE *p = popen("nvidia-smi -L 2>/dev/null", "r");
    char line[512];
    while (p && fgets(line, sizeof(line), p))
        n += !strncmp(line, "GPU ", 4);
    if (p)
        pclose(p);
    return n;
}

/* torchrun: gpu = one per CUDA device (an error without one), cpu = one
 * per CPU, auto = gpu when there are GPUs, else cpu. */
static int apply_nproc(const char *val, launch_opts_t *o)
{
    int gpus = !strcmp(val, "gpu") || !strcmp(val, "auto") ? count_gpus() : 0;
    if (!strcmp(val, "gpu") && gpus == 0)
        return cli_usage_error("launch",
                               "--nproc-per-node gpu: no CUDA devices found "
                               "(neither /proc/driver/nvidia/gpus nor "
                               "nvidia-smi -L lists one); use cpu or N");
    if (gpus > 0) {
        o->nproc_per_node = gpus;
        return 0;
    }
    if (!strcmp(val, "cpu") || !strcmp(val, "auto")) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->nproc_per_node = n > 0 ? (int)n : 1;
        return 0;
    }
    return apply_int("--nproc-per-node", val, 1, 4096, &o->nproc_per_node);
}

/* host:port, [v6]:port or host (torchrun's c10d default port 29400). */
static int apply_endpoint(const char *val, launch_opts_t *o)
{
    static char host[256];
    const char *port = NULL;
    size_t n;
    if (val[0] == '[') {
        const char *close = strchr(val, ']');
        if (!close || (close[1] && close[1] != ':'))
            return bad_value("--rdzv-endpoint", val, "HOST:PORT");
        n = (size_t)(close - val - 1);
        val++;
        port = close[1] ? close + 2 : NULL;
    } else {
        const char *colon = strrchr(val, ':');
        n = colon ? (size_t)(colon - val) : strlen(val);
        port = colon ? colon + 1 : NULL;
    }
    if (n == 0 || n >= sizeof(host))
        return bad_value("--rdzv-endpoint", val, "HOST:PORT");
    memcpy(host, val, n);
    host[n] = '\0';
    o->master_addr = host;
    if (!port) {
        o->master_port = 29400;
        return 0;
    }
    return apply_int("--rdzv-endpoint", port, 1, 65535, &o->master_port);
}

static int apply_std(const char *flag, const char *val, const char **out)
{
    if (!launch_std_spec_valid(val))
        return bad_value(flag, val, "0..3 or a map like 0:3,1:1");
    *out = val;
    return 0;
}

static int apply_seconds(const char *flag, const char *val, double *out)
{
    double v = 0;
    if (cli_parse_double(val, &v) != 0 || v < 0 || v > 86400)
        return bad_value(flag, val, "a number of seconds in 0..86400");
    *out = v;
    return 0;
}

/* torchrun's --rdzv-conf key=value,...: the keys of its dynamic
 * rendezvous that herd's elastic rendezvous has (seconds may have a
 * fraction here); any other key is refused by name. */
static int apply_rdzv_conf(const char *val, launch_opts_t *o)
{
    char buf[512];
    if (strlen(val) >= sizeof(buf))
        return bad_value("--rdzv-conf", val, "key=value,... (short)");
    snprintf(buf, sizeof(buf), "%s", val);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return bad_value("--rdzv-conf", kv, "key=value");
        *eq = '\0';
        const char *v = eq + 1;
        double d = 0;
        long k = 0;
        int rc = 0;
        if (!strcmp(kv, "join_timeout"))
            rc = apply_seconds("--rdzv-conf join_timeout", v,
                               &o->store_timeout_s);
        else if (!strcmp(kv, "last_call_timeout"))
            rc = apply_seconds("--rdzv-conf last_call_timeout", v,
                               &o->last_call_s);
        else if (!strcmp(kv, "keep_alive_interval")) {
            if (cli_parse_double(v, &d) != 0 || !(d > 0) || d > 86400)
                return bad_value("--rdzv-conf keep_alive_interval", v,
                                 "a number of seconds in (0, 86400]");
            o->keep_alive_s = d;
        } else if (!strcmp(kv, "keep_alive_max_attempt")) {
            if (cli_parse_int(v, 1, 1000000, &k) != 0)
                return bad_value("--rdzv-conf keep_alive_max_attempt", v,
                                 "an integer in 1..1000000");
            o->keep_alive_max = (int)k;
        } else
            return cli_usage_error(
                "launch",
                "--rdzv-conf: '%s' is not supported (herd reads "
                "join_timeout, last_call_timeout, keep_alive_interval and "
                "keep_alive_max_attempt)",
                kv);
        if (rc)
            return rc;
    }
    return 0;
}

static int apply_flag(const char *name, const char *val, launch_opts_t *o)
{
    if (!strcmp(name, "--nproc-per-node"))
        return apply_nproc(val, o);
    if (!strcmp(name, "--nnodes")) {
        int rc = parse_nnodes(val, o);
        if (rc == -2)
            return cli_usage_error("launch",
                                   "--nnodes %s: MIN must not exceed MAX", val);
        return rc ? bad_value(name, val, "a node count N or MIN:MAX") : 0;
    }
    if (!strcmp(name, "--rdzv-conf"))
        return apply_rdzv_conf(val, o);
    if (!strcmp(name, "--node-rank"))
        return apply_int(name, val, 0, 1 << 20, &o->node_rank);
    if (!strcmp(name, "--master-addr"))
        return *val ? (o->master_addr = val, 0)
                    : bad_value(name, val, "a host name");
    if (!strcmp(name, "--master-port"))
        return apply_int(name, val, 1, 65535, &o->master_port);
    if (!strcmp(name, "--max-restarts"))
        return apply_int(name, val, 0, 1000000, &o->max_restarts);
    if (!strcmp(name, "--monitor-interval"))
        return apply_seconds(name, val, &o->monitor_interval_s);
    if (!strcmp(name, "--stop-grace"))
        return apply_seconds(name, val, &o->stop_grace_s);
    if (!strcmp(name, "--run-id") || !strcmp(name, "--rdzv-id"))
        return *val ? (o->run_id = val, 0) : bad_value(name, val, "an id");
    if (!strcmp(name, "--rdzv-endpoint"))
        return apply_endpoint(val, o);
    if (!strcmp(name, "--rdzv-backend"))
        return !strcmp(val, "c10d") || !strcmp(val, "static")
                   ? 0
                   : cli_usage_error("launch",
                                     "--rdzv-backend %s is not supported "
                                     "(c10d and static are: both use the "
                                     "store node 0's launcher hosts)",
                                     val);
    if (!strcmp(name, "--rdzv-timeout"))
        return apply_seconds(name, val, &o->store_timeout_s);
    if (!strcmp(name, "--log-dir"))
        return *val ? (o->log_dir = val, 0)
                    : bad_value(name, val, "a directory");
    if (!strcmp(name, "--redirects"))
        return apply_std(name, val, &o->redirects);
    if (!strcmp(name, "--tee"))
        return apply_std(name, val, &o->tee);
    o->role_name = val; /* --role */
    return 0;
}

static const char *const value_flags[] = {"--nproc-per-node",
                                          "--nnodes",
                                          "--node-rank",
                                          "--master-addr",
                                          "--master-port",
                                          "--max-restarts",
                                          "--monitor-interval",
                                          "--stop-grace",
                                          "--run-id",
                                          "--role",
                                          "--rdzv-endpoint",
                                          "--rdzv-backend",
                                          "--rdzv-id",
                                          "--rdzv-timeout",
                                          "--rdzv-conf",
                                          "--log-dir",
                                          "--redirects",
                                          "--tee",
                                          NULL};

/* torchrun flags herd launch does not take, and why. */
static const char *const torchrun_only[][2] = {
    {"--max-nnodes", "a separate maximum (use --nnodes MIN:MAX)"},
    {"--local-addr", "node addresses other than --master-addr"},
    {"--logs-specs", "logging plug-ins"},
    {"--local-ranks-filter", "per-rank console filters"},
    {"--start-method", "a choice of start method (workers are fork+exec)"},
    {"--no-python", "python wrapping (the command always runs as given)"},
    {"--module", "python wrapping (the command always runs as given)"},
    {"--run-path", "python wrapping (the command always runs as given)"},
    {"--numa-binding", "NUMA binding"},
    {"--event-log-handler", "event log handlers"},
    {"--virtual-local-rank", "virtual local ranks"},
    {NULL, NULL}};

/* Parse flags; *cmd_at is the index of the worker command, 0 when the
 * flags ask for help (-h/--help among them, not in the worker command). */
static int parse_flags(int argc, char **argv, launch_opts_t *o, int *cmd_at)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        if (!strcmp(arg, "--")) {
            i++;
            break;
        }
        if (arg[0] != '-')
            break;
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            *cmd_at = 0;
            return 0;
        }
        if (flag_is(arg, "--standalone", &val) && !val) {
            o->standalone = 1;
            continue;
        }
        if (flag_is(arg, "--quiet", &val) && !val) {
            o->quiet = 1;
            continue;
        }
        const char *const *f = value_flags;
        while (*f && !flag_is(arg, *f, &val))
            f++;
        for (int t = 0; !*f && torchrun_only[t][0]; t++)
            if (flag_is(arg, torchrun_only[t][0], &val) ||
                (!strcmp(torchrun_only[t][0], "--module") &&
                 !strcmp(arg, "-m")))
                return cli_usage_error("launch",
                                       "torchrun's %s is not supported by "
                                       "herd launch (no %s)",
                                       torchrun_only[t][0],
                                       torchrun_only[t][1]);
        if (!*f)
            return cli_usage_error("launch", "unknown flag '%s' (see --help)",
                                   arg);
        if (!val && i + 1 >= argc)
            return cli_usage_error("launch", "%s needs a value", *f);
        int rc = apply_flag(*f, val ? val : argv[++i], o);
        if (rc)
            return rc;
    }
    if (i >= argc)
        return cli_usage_error("launch", "no worker command given "
                                         "(usage: herd launch [flags] -- CMD "
                                         "ARGS...)");
    *cmd_at = i;
    return 0;
}

int cli_launch_main(int argc, char **argv)
{
    launch_opts_t o;
    launch_opts_init(&o);
    int cmd_at = 0;
    /* --help only among the flags: the worker command may have its own */
    int rc = parse_flags(argc, argv, &o, &cmd_at);
    if (rc)
        return rc;
    if (!cmd_at) {
        fputs(launch_usage, stdout);
        return 0;
    }
    o.argv = argv + cmd_at;
    launch_result_t res;
    char err[512];
    herd_status_t st = launch_run(&o, &res, err, sizeof(err));
    if (st == HERD_ERR_INVALID_ARG)
        return cli_usage_error("launch", "%s", err);
    if (st != HERD_OK) {
        fprintf(stderr, "herd launch: %s\n", err);
        return 1;
    }
    return res.exit_code;
}
