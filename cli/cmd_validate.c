/* cli/cmd_validate.c - `herd validate SCENARIO -o DIR`: the prediction
 * against measurement loop. The scenario's workload becomes traces; each
 * is replayed on the simulator (predicted) and on the tcp engine (on the
 * testbed, or on local processes), compared with `herd compare`, and
 * summarised in DIR/report.md with per collective, algorithm and size
 * errors. Calibration first measures the links and feeds the fitted
 * latency and bandwidth to the simulator. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cmd_validate.h"
#include "real/testbed/testbed.h"
#include "trace/scenario.h"
#include "trace/trace.h"

static const char usage[] =
    "usage: herd validate SCENARIO -o DIR [--hosts N] [--bandwidth RATE]\n"
    "         [--rates R1,R2,...] [--nproc N] [--colls C1,C2,...]\n"
    "         [--set KEY=VALUE]... [--no-calibrate] [--calibrate-bytes B]\n"
    "         [--calibration FILE] [--torch [--python PATH]]\n"
    "         [--keep-testbed] [--timeout S] [--cc NAME] [--comm-cpu]\n"
    "         [--slow-start-after-idle on|off] [--from DIR]\n"
    "Runs SCENARIO's workload on the simulator and on the tcp engine, and\n"
    "compares them. Real runs use the testbed (as root: N hosts, default\n"
    "the scenario's world size, links shaped to RATE, default the\n"
    "scenario's inter bandwidth; a testbed that is already up is reused),\n"
    "or N local processes with --nproc. A sweep workload is run for each\n"
    "collective of --colls (default: the scenario's). Calibration (herd\n"
    "calibrate) runs first unless --no-calibrate. Writes DIR/report.md,\n"
    "per-workload timelines and compare plots, and both sides' step\n"
    "records compared per step (DIR/<workload>/steps.md, steps.tsv; not\n"
    "with --torch); the last line printed is the overall median and p95\n"
    "|error| in percent.\n"
    "--torch: the measured side is real PyTorch DDP (gloo) running the\n"
    "scenario's DDP job, one rank per host, with PATH's torch (default\n"
    "/usr/bin/python3); rows per bucket and per step.\n"
    "--rates: one validation per link rate (DIR/<rate>/), then\n"
    "DIR/summary.md and summary.tsv (per rate and algorithm: median, p95\n"
    "and max |error|, rows within 10%%) and the plot DIR/summary.png.\n"
    "--calibration FILE: the links as an earlier calibration measured them.\n"
    "--cc NAME: the testbed hosts' TCP congestion control (herd testbed up\n"
    "--cc; default cubic).\n"
    "--slow-start-after-idle on|off: whether the testbed hosts' idle\n"
    "connections restart from the initial window (default on, Linux's;\n"
    "herd's network model has no windows; docs/testbed.md).\n"
    "--comm-cpu: calibrate with --comm-cpu and predict with what compute\n"
    "costs the links (cluster.compute_comm_slowdown; docs/network-model.md).\n"
    "--from DIR: nothing real runs; predict again (with this herd and\n"
    "these --set) against DIR's measurements, traces and calibration (DIR:\n"
    "an earlier herd validate -o, of the same scenario, hosts and --colls;\n"
    "with --rates, DIR/<rate> per rate; with --torch, its PyTorch runs).\n"
    "Exit: 0 ok, 1 a run failed, 2 bad usage or input, 77 no testbed (or,\n"
    "with --torch, no importable torch) here.\n";

/* Fork, exec argv (execv of `path`, or execvp of argv[0] when path is
 * NULL) with stdout and stderr appended to log_path; the exit code. */
static int run_logged(const char *path, char *const argv[],
                      const char *log_path)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (path)
            execv(path, argv);
        else
            execvp(argv[0], argv);
        fprintf(stderr, "herd validate: cannot run %s: %s\n",
                path ? path : argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int validate_run_prog(char *const argv[], const char *log_path)
{
    return run_logged(NULL, argv, log_path);
}

int validate_run_self(char *const argv[], const char *log_path)
{
    return run_logged("/proc/self/exe", argv, log_path);
}

/* --rates R1,R2,...: rates in bits/s, names kept for folders and tables. */
static int parse_rates(const char *list, vopts_t *o)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", list);
    o->nrates = 0;
    for (char *save = NULL, *r = strtok_r(buf, ",", &save); r;
         r = strtok_r(NULL, ",", &save)) {
        if (o->nrates == V_MAX_RATES)
            return cli_usage_error("validate", "--rates: at most %d rates",
                                   V_MAX_RATES);
        double bps;
        if (cli_parse_rate(r, &bps) || bps <= 0 || strlen(r) >= 32 ||
            strchr(r, '/'))
            return cli_usage_error("validate",
                                   "--rates: bad rate '%s' (e.g. "
                                   "50Mbit,200Mbit,1Gbit)",
                                   r);
        o->rates[o->nrates] = bps;
        snprintf(o->rate_names[o->nrates], sizeof(o->rate_names[0]), "%s", r);
        o->nrates++;
    }
    if (o->nrates == 0)
        return cli_usage_error("validate", "--rates: no rate given");
    return 0;
}

static int parse_opts(int argc, char **argv, vopts_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        int more = i + 1 < argc;
        if (!strcmp(a, "-o") && more)
            o->out = argv[++i];
        else if (!strcmp(a, "--hosts") && more) {
            if (cli_parse_int(argv[++i], 2, TESTBED_MAX_HOSTS, &v))
                return cli_usage_error("validate", "--hosts must be 2..%d",
                                       TESTBED_MAX_HOSTS);
            o->hosts = (int)v;
        } else if (!strcmp(a, "--nproc") && more) {
            if (cli_parse_int(argv[++i], 2, 64, &v))
                return cli_usage_error("validate", "--nproc must be 2..64");
            o->nproc = (int)v;
        } else if (!strcmp(a, "--bandwidth") && more) {
            if (cli_parse_rate(argv[++i], &o->rate_bps) || o->rate_bps <= 0)
                return cli_usage_error("validate",
                                       "bad --bandwidth '%s' "
                                       "(e.g. 400Mbit)",
                                       argv[i]);
        } else if (!strcmp(a, "--cc") && more) {
            if (cli_testbed_cc(argv[++i], o->cc, sizeof(o->cc)))
                return cli_usage_error("validate", "bad --cc '%s'", argv[i]);
        } else if (!strcmp(a, "--slow-start-after-idle") && more) {
            if (cli_idle_restart(argv[++i], &o->idle_restart))
                return cli_usage_error(
                    "validate",
                    "--slow-start-after-idle takes on or off, not '%s'",
                    argv[i]);
        } else if (!strcmp(a, "--calibrate-bytes") && more) {
            uint64_t b;
            if (cli_parse_bytes(argv[++i], &b) || b < 64)
                return cli_usage_error("validate", "bad --calibrate-bytes");
            snprintf(o->cal_bytes, sizeof(o->cal_bytes), "%s", argv[i]);
        } else if (!strcmp(a, "--colls") && more)
            snprintf(o->colls, sizeof(o->colls), "%s", argv[++i]);
        else if (!strcmp(a, "--set") && more) {
            if (o->nsets == V_MAX_SETS)
                return cli_usage_error("validate", "at most %d --set options",
                                       V_MAX_SETS);
            o->sets[o->nsets++] = argv[++i];
        } else if (!strcmp(a, "--timeout") && more) {
            if (cli_parse_double(argv[++i], &o->timeout_s) || o->timeout_s <= 0)
                return cli_usage_error("validate", "bad --timeout");
        } else if (!strcmp(a, "--rates") && more) {
            int rc = parse_rates(argv[++i], o);
            if (rc)
                return rc;
        } else if (!strcmp(a, "--torch"))
            o->torch = 1;
        else if (!strcmp(a, "--python") && more)
            snprintf(o->python, sizeof(o->python), "%s", argv[++i]);
        else if (!strcmp(a, "--calibration") && more)
            o->calibration = argv[++i];
        else if (!strcmp(a, "--from") && more)
            o->from = argv[++i];
        else if (!strcmp(a, "--no-calibrate"))
            o->calibrate = 0;
        else if (!strcmp(a, "--comm-cpu"))
            o->comm_cpu = 1;
        else if (!strcmp(a, "--keep-testbed"))
            o->keep = 1;
        else if (a[0] == '-')
            return cli_usage_error("validate", "unknown option '%s'", a);
        else if (!o->scenario)
            o->scenario = a;
        else
            return cli_usage_error("validate", "unexpected argument '%s'", a);
    }
    if (!o->scenario || !o->out)
        return cli_usage_error("validate", "needs SCENARIO and -o DIR");
    if (o->nrates && (o->nproc || o->rate_bps > 0))
        return cli_usage_error("validate", "--rates shapes the testbed: not "
                                           "with --nproc or --bandwidth");
    if (o->nrates && o->calibration)
        return cli_usage_error("validate", "--rates calibrates each rate: "
                                           "not with --calibration");
    if (o->python[0] && !o->torch)
        return cli_usage_error("validate", "--python goes with --torch");
    if (!o->python[0])
        snprintf(o->python, sizeof(o->python), "/usr/bin/python3");
    return 0;
}

static herd_status_t load(vopts_t *o, trace_scenario_t **sc_out)
{
    char err[1024] = "";
    trace_scenario_t *sc = NULL;
    herd_status_t st = trace_scenario_load(o->scenario, &sc, err, sizeof(err));
    for (int i = 0; st == HERD_OK && i < o->nsets; i++) {
        char key[256];
        const char *eq = strchr(o->sets[i], '=');
        if (!eq) {
            snprintf(err, sizeof(err), "--set %s: expected KEY=VALUE",
                     o->sets[i]);
            st = HERD_ERR_INVALID_ARG;
            break;
        }
        snprintf(key, sizeof(key), "%.*s", (int)(eq - o->sets[i]), o->sets[i]);
        st = trace_scenario_set(sc, key, eq + 1, err, sizeof(err));
    }
    if (st == HERD_OK)
        st = trace_scenario_validate(sc, err, sizeof(err));
    if (st != HERD_OK) {
        fprintf(stderr, "herd validate: %s\n", err);
        trace_scenario_destroy(sc);
        return st;
    }
    *sc_out = sc;
    return HERD_OK;
}

/* Bring up the testbed (or reuse one of the right size). */
int validate_setup_testbed(vopts_t *o, const trace_scenario_t *sc)
{
    char why[256];
    testbed_cfg_t cur;
    if (testbed_probe(why, sizeof(why)) != HERD_OK) {
        fprintf(stderr,
                "herd validate: %s; use --nproc N for local "
                "processes\n",
                why);
        return 77;
    }
    testbed_cfg_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.hosts = o->world;
    snprintf(cfg.cc, sizeof(cfg.cc), "%s", o->cc);
    cfg.idle_restart = o->idle_restart;
    for (int i = 0; i < cfg.hosts; i++)
        cfg.rate_bps[i] =
            o->rate_bps > 0 ? o->rate_bps : sc->sim.cluster.inter.bandwidth * 8;
    for (size_t k = 0; k < sc->nrank_ovr && o->rate_bps <= 0; k++)
        if (sc->rank_ovr[k].nic_factor > 0)
            cfg.rate_bps[sc->rank_ovr[k].rank] *= sc->rank_ovr[k].nic_factor;
    if (testbed_state(&cur) == HERD_OK) {
        int same = cur.hosts == o->world;
        for (int i = 0; same && i < cfg.hosts; i++)
            same = fabs(cur.rate_bps[i] - cfg.rate_bps[i]) <=
                   0.005 * cfg.rate_bps[i];
        /* and the congestion control asked for (default: the default) */
        same = same && !strcmp(cur.cc, o->cc[0] ? o->cc : TESTBED_CC_DEFAULT);
        /* and slow start after idle as asked (default: Linux's, on) */
        same = same &&
               cur.idle_restart == (o->idle_restart ? o->idle_restart
                                                    : TESTBED_IDLE_RESTART_ON);
        if (same) {
            snprintf(o->cc_used, sizeof(o->cc_used), "%s", cur.cc);
            o->idle_used = cur.idle_restart;
            return 0;
        }
        /* Up with other links: what is measured must be what was asked. */
        if (testbed_down(why, sizeof(why)) != HERD_OK) {
            fprintf(stderr,
                    "herd validate: a testbed with other links is "
                    "up and cannot be taken down: %s\n",
                    why);
            return 1;
        }
    }
    if (testbed_up(&cfg, why, sizeof(why)) != HERD_OK) {
        fprintf(stderr, "herd validate: testbed: %s\n", why);
        return 1;
    }
    o->testbed_made = 1;
    if (*testbed_cc_note())
        fprintf(stderr, "herd validate: note: %s\n", testbed_cc_note());
    if (testbed_state(&cur) == HERD_OK) {
        snprintf(o->cc_used, sizeof(o->cc_used), "%s", cur.cc);
        o->idle_used = cur.idle_restart;
    }
    return 0;
}

/* argv for running `cmd...` on the real side (testbed or launcher). */
int validate_real_argv(const vopts_t *o, const trace_scenario_t *sc,
                       char **argv, char *slow, size_t slowlen)
{
    int n = 0;
    argv[n++] = "herd";
    if (o->nproc) {
        static const char np_flag[] = "--nproc-per-node";
        argv[n++] = "launch";
        argv[n++] = "--standalone";
        argv[n++] = (char *)np_flag;
        snprintf(slow, slowlen, "%d", o->nproc);
        argv[n++] = slow;
    } else {
        argv[n++] = "testbed";
        argv[n++] = "run";
        argv[n++] = "--timeout";
        argv[n++] = (char *)o->timeout_str;
        size_t len = 0;
        for (int r = 0; r < o->world; r++) {
            double f = 1;
            for (size_t k = 0; k < sc->nrank_ovr; k++)
                if (sc->rank_ovr[k].rank == r &&
                    sc->rank_ovr[k].compute_factor > 0)
                    f = sc->rank_ovr[k].compute_factor;
            len += (size_t)snprintf(slow + len, slowlen - len, "%s%g",
                                    r ? "," : "", f);
        }
        argv[n++] = "--slowdown";
        argv[n++] = slow;
    }
    argv[n++] = "--";
    argv[n++] = (char *)o->self;
    return n;
}

int cli_validate_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    vopts_t o = {.calibrate = 1, .timeout_s = 600};
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc;
    ssize_t len = readlink("/proc/self/exe", o.self, sizeof(o.self) - 1);
    if (len <= 0)
        return cli_usage_error("validate", "cannot find the herd binary");
    o.self[len] = '\0';
    snprintf(o.timeout_str, sizeof(o.timeout_str), "%g", o.timeout_s);
    trace_scenario_t *sc = NULL;
    if (load(&o, &sc) != HERD_OK)
        return 2;
    o.world = o.nproc   ? o.nproc
              : o.hosts ? o.hosts
                        : trace_scenario_world_size(sc);
    rc = o.nrates ? validate_rates(&o, sc) : validate_steps(&o, sc, NULL);
    if (o.testbed_made && !o.keep)
        testbed_down(NULL, 0);
    trace_scenario_destroy(sc);
    return rc;
}
