/* cli/cmd_testbed.c - `herd testbed up|down|run|status`: the emulated
 * cluster in network namespaces (real/testbed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "real/testbed/testbed.h"

static const char usage[] =
    "usage: herd testbed up --hosts N [--bandwidth RATE] [--rates R0,R1,...] "
    "[--cc NAME]\n"
    "         [--slow-start-after-idle on|off] [--force]\n"
    "       herd testbed run [--timeout S] [--port P] [--slowdown F0,F1,...] "
    "-- CMD [ARGS...]\n"
    "       herd testbed down [--force]\n"
    "       herd testbed status\n"
    "  every form takes --id ID (default $HERD_TESTBED_ID, else the sudo "
    "user)\n\n"
    "N hosts (network namespaces " TESTBED_NS_PREFIX
    "[ID-]h<i>, addresses " TESTBED_SUBNET ".<i+1>) on a bridge,\n"
    "each link shaped with tc tbf to RATE in both directions (e.g. 400Mbit,\n"
    "1Gbit, 100mbit; 0 leaves it unshaped). `run` starts one rank per host\n"
    "with RANK, WORLD_SIZE, MASTER_ADDR=" TESTBED_SUBNET ".1 and MASTER_PORT\n"
    "set; --slowdown sets HERD_COMPUTE_SCALE per rank. --cc sets the\n"
    "hosts' TCP congestion control (default cubic, Linux's default, where\n"
    "the machine allows it; host: keep the machine's own).\n"
    "--slow-start-after-idle off: connections idle longer than their\n"
    "retransmission timeout keep their window (default on, Linux's;\n"
    "herd's network model has no windows). Needs root.\n";

/* A comma-separated list of `n` values parsed with `fn`. */
static int parse_list(const char *s, double *vals, int max, int *n,
                      int (*fn)(const char *, double *))
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", s);
    *n = 0;
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w;
         w = strtok_r(NULL, ",", &save)) {
        if (*n >= max || fn(w, &vals[*n]) != 0)
            return -1;
        (*n)++;
    }
    return *n > 0 ? 0 : -1;
}

static int cmd_up(int argc, char **argv)
{
    testbed_cfg_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    double rate = 0, rates[TESTBED_MAX_HOSTS];
    int nrates = 0;
    for (int i = 1; i < argc; i++) {
        long v;
        if (!strcmp(argv[i], "--hosts") && i + 1 < argc) {
            if (cli_parse_int(argv[++i], 1, TESTBED_MAX_HOSTS, &v))
                return cli_usage_error("testbed", "--hosts must be 1..%d",
                                       TESTBED_MAX_HOSTS);
            cfg.hosts = (int)v;
        } else if (!strcmp(argv[i], "--bandwidth") && i + 1 < argc) {
            if (cli_parse_rate(argv[++i], &rate))
                return cli_usage_error(
                    "testbed", "bad --bandwidth '%s' (e.g. 400Mbit)", argv[i]);
        } else if (!strcmp(argv[i], "--rates") && i + 1 < argc) {
            if (parse_list(argv[++i], rates, TESTBED_MAX_HOSTS, &nrates,
                           cli_parse_rate))
                return cli_usage_error("testbed", "bad --rates '%s'", argv[i]);
        } else if (!strcmp(argv[i], "--force")) {
            cfg.force = 1;
        } else if (!strcmp(argv[i], "--cc") && i + 1 < argc) {
            if (cli_testbed_cc(argv[++i], cfg.cc, sizeof(cfg.cc)))
                return cli_usage_error("testbed", "bad --cc '%s'", argv[i]);
        } else if (!strcmp(argv[i], "--slow-start-after-idle") &&
                   i + 1 < argc) {
            if (cli_idle_restart(argv[++i], &cfg.idle_restart))
                return cli_usage_error(
                    "testbed",
                    "--slow-start-after-idle takes on or off, not '%s'",
                    argv[i]);
        } else
            return cli_usage_error("testbed", "unknown option '%s'", argv[i]);
    }
    if (cfg.hosts == 0)
        return cli_usage_error("testbed", "up needs --hosts N");
    if (nrates && nrates != cfg.hosts)
        return cli_usage_error("testbed", "--rates lists %d rates for %d hosts",
                               nrates, cfg.hosts);
    for (int i = 0; i < cfg.hosts; i++)
        cfg.rate_bps[i] = nrates ? rates[i] : rate;
    char err[1024] = "";
    herd_status_t st = testbed_up(&cfg, err, sizeof(err));
    if (st != HERD_OK) {
        fprintf(stderr, "herd testbed: %s\n", err);
        return st == HERD_ERR_UNSUPPORTED ? 77
               : st == HERD_ERR_ABORTED   ? 130
                                          : 1;
    }
    printf("testbed up: %d hosts on " TESTBED_SUBNET ".0/24", cfg.hosts);
    if (rate > 0 || nrates)
        printf(", links shaped (host 0: %.0f Mbit/s)", cfg.rate_bps[0] / 1e6);
    testbed_cfg_t now;
    if (testbed_state(&now) == HERD_OK)
        printf(", TCP congestion control %s, slow start after idle %s", now.cc,
               now.idle_restart == TESTBED_IDLE_RESTART_OFF ? "off" : "on");
    printf("\n");
    if (*testbed_cc_note())
        fprintf(stderr, "herd testbed: note: %s\n", testbed_cc_note());
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    testbed_run_opts_t o = {.master_port = 29500, .timeout_s = 0};
    double scale[TESTBED_MAX_HOSTS];
    int nscale = 0, i;
    for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        long v;
        if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            if (cli_parse_double(argv[++i], &o.timeout_s) || o.timeout_s < 0)
                return cli_usage_error("testbed", "bad --timeout");
        } else if (!strcmp(argv[i], "--port") && i + 1 < argc) {
            if (cli_parse_int(argv[++i], 1, 65535, &v))
                return cli_usage_error("testbed", "bad --port");
            o.master_port = (int)v;
        } else if (!strcmp(argv[i], "--slowdown") && i + 1 < argc) {
            if (parse_list(argv[++i], scale, TESTBED_MAX_HOSTS, &nscale,
                           cli_parse_double))
                return cli_usage_error("testbed", "bad --slowdown list");
            o.compute_scale = scale;
        } else
            break;
    }
    if (i < argc && !strcmp(argv[i], "--"))
        i++;
    if (i >= argc)
        return cli_usage_error("testbed", "run needs a command after --");
    o.argv = argv + i;
    testbed_cfg_t cfg;
    if (nscale && (testbed_state(&cfg) != HERD_OK || nscale != cfg.hosts))
        return cli_usage_error("testbed", "--slowdown needs one factor per "
                                          "host of a testbed that is up");
    int failed = -1, code = 0;
    char err[1024] = "";
    herd_status_t st = testbed_run(&o, &failed, &code, err, sizeof(err));
    if (st != HERD_OK) {
        fprintf(stderr, "herd testbed: %s\n", err);
        return code ? code : 1;
    }
    return 0;
}

/* A killed `up` leaves namespaces without state: said, not hidden. */
static int cmd_status(void)
{
    testbed_cfg_t cfg;
    char names[1024];
    /* Not in the middle of an up or down (whose namespaces without
     * state would pass for leftovers). */
    int lk = testbed_lock(1, names, sizeof(names));
    if (lk < 0) {
        fprintf(stderr, "herd testbed: %s\n", names);
        return 1;
    }
    herd_status_t st = testbed_state(&cfg);
    int left = st == HERD_OK ? 0 : testbed_leftovers(names, sizeof(names));
    testbed_unlock(lk);
    if (st != HERD_OK) {
        if (left > 0) {
            printf("no testbed is up, but one left namespaces behind (%s; "
                   "an interrupted up?): `herd testbed down` removes them\n",
                   names);
            return 1;
        }
        printf("no testbed is up\n");
        return 1;
    }
    for (int i = 0; i < cfg.hosts; i++) {
        char addr[32], ns[64];
        testbed_host_addr(i, addr, sizeof(addr));
        testbed_ns_name(i, ns, sizeof(ns));
        printf("host %d  %s  %s  %.0f Mbit/s\n", i, addr, ns,
               cfg.rate_bps[i] / 1e6);
    }
    printf("TCP congestion control: %s\n", cfg.cc);
    printf("TCP slow start after idle: %s\n",
           cfg.idle_restart == TESTBED_IDLE_RESTART_OFF ? "off" : "on");
    return 0;
}

/* --id ID anywhere before `--` chooses the instance; it is taken out of
 * argv. */
static int take_id(int *argc, char **argv)
{
    const char *id = NULL;
    int n = 0;
    for (int i = 0; i < *argc; i++) {
        if (!strcmp(argv[i], "--"))
            for (; i < *argc; i++)
                argv[n++] = argv[i];
        else if (!strcmp(argv[i], "--id") && i + 1 < *argc)
            id = argv[++i];
        else
            argv[n++] = argv[i];
    }
    *argc = n;
    char err[256];
    if (testbed_set_id(id, err, sizeof(err)) != HERD_OK)
        return cli_usage_error("testbed", "%s", err);
    return 0;
}

int cli_testbed_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    /* help on any tool, before it acts (down tears the testbed down) */
    if (cli_wants_help(argc, argv, usage))
        return 0;
    int rc = take_id(&argc, argv);
    if (rc)
        return rc;
    if (argc < 2)
        return cli_usage_error("testbed", "missing a subcommand");
    if (!strcmp(argv[1], "up"))
        return cmd_up(argc - 1, argv + 1);
    if (!strcmp(argv[1], "run"))
        return cmd_run(argc - 1, argv + 1);
    if (!strcmp(argv[1], "status"))
        return cmd_status();
    if (!strcmp(argv[1], "down")) {
        char err[1024] = "";
        int force = argc > 2 && !strcmp(argv[2], "--force");
        if (argc > 2 + force)
            return cli_usage_error("testbed", "unknown option '%s'",
                                   argv[2 + force]);
        if (testbed_down_opts(force, err, sizeof(err)) != HERD_OK) {
            fprintf(stderr, "herd testbed: %s\n", err);
            return 1;
        }
        printf("testbed down\n");
        return 0;
    }
    return cli_usage_error("testbed", "unknown subcommand '%s'", argv[1]);
}
