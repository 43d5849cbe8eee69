/* cli/cli_simflags.c - parsing of the simulated-cluster flags (see
 * cli_simflags.h); units are parsed by trace/units.h, so flags and scenario
 * files accept the same spellings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_simflags.h"
#include "trace/units.h"

void cli_simflags_init(cli_simflags_t *f)
{
    memset(f, 0, sizeof(*f));
    herd_sim_opts_init(&f->opts);
}

const char *cli_simflags_usage(void)
{
    return "  --nodes N             nodes (default 1)\n"
           "  --gpus-per-node G     ranks per node (default 8)\n"
           "  --world-size P        ranks (default nodes x gpus-per-node)\n"
           "  --intra-bw BW         per-GPU intra-node bandwidth (370GB/s)\n"
           "  --intra-lat T         intra-node latency (1us)\n"
           "  --inter-bw BW         per-NIC bandwidth (50GB/s = 400Gbps)\n"
           "  --inter-lat T         inter-node latency (4us)\n"
           "  --nics-per-node K     NICs per node (default: one per GPU)\n"
           "  --topo T              nonblocking | fattree | rail\n"
           "  --oversub X           fat-tree oversubscription (>= 1)\n"
           "  --nodes-per-leaf N    fat-tree nodes under one leaf switch\n"
           "  --reduce-bw BW        local reduction speed (default: free)\n"
           "  --channels C          parallel channels (rings/trees), 1..64\n"
           "  --chunk BYTES         pipeline chunk size (default 4MiB)\n"
           "  --seed S              random seed (jitter)\n"
           "  Units: B KiB MiB GiB KB MB GB; bps Kbps Mbps Gbps, MB/s GB/s;\n"
           "  ns us ms s.\n";
}

/* "--flag value" or "--flag=value": the value, or NULL (message printed). */
static const char *flag_value(const char *cmd, int argc, char **argv, int *i,
                              const char *name)
{
    size_t n = strlen(name);
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "%s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

static int is_flag(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int bad(const char *cmd, const char *name, const char *v,
               const char *form)
{
    cli_usage_error(cmd, "%s: '%s' is not %s", name, v, form);
    return -1;
}

static int parse_int(const char *cmd, const char *name, const char *v, long lo,
                     long hi, int *out)
{
    long x;
    if (cli_parse_int(v, lo, hi, &x) != 0) {
        cli_usage_error(cmd, "%s: '%s' is not an integer in [%ld, %ld]", name,
                        v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 1;
}

static int parse_bw(const char *cmd, const char *name, const char *v,
                    double *out)
{
    double x;
    if (trace_parse_bandwidth(v, &x) != HERD_OK || !(x > 0))
        return bad(cmd, name, v, TRACE_FORM_BW);
    *out = x;
    return 1;
}

static int parse_time(const char *cmd, const char *name, const char *v,
                      double *out)
{
    double x;
    if (trace_parse_time(v, &x) != HERD_OK || !(x >= 0))
        return bad(cmd, name, v, TRACE_FORM_TIME);
    if (x > 3600) { /* the latencies' range in scenarios, too */
        cli_usage_error(cmd,
                        "%s: '%s' is out of range; expected a time "
                        "between 0s and 3600s",
                        name, v);
        return -1;
    }
    *out = x;
    return 1;
}

static int parse_topo(const char *cmd, const char *v, herd_topo_t *out)
{
    if (!strcmp(v, "nonblocking"))
        *out = HERD_TOPO_NONBLOCKING;
    else if (!strcmp(v, "fattree") || !strcmp(v, "fat-tree"))
        *out = HERD_TOPO_FATTREE;
    else if (!strcmp(v, "rail"))
        *out = HERD_TOPO_RAIL;
    else
        return bad(cmd, "--topo", v, "nonblocking, fattree or rail");
    return 1;
}

static int parse_misc(const char *cmd, const char *name, const char *v,
                      cli_simflags_t *f)
{
    herd_cluster_t *c = &f->opts.cluster;
    if (!strcmp(name, "--topo"))
        return parse_topo(cmd, v, &c->topo);
    if (!strcmp(name, "--oversub")) {
        double x;
        if (cli_parse_double(v, &x) != 0 || x < 1)
            return bad(cmd, name, v, "a ratio >= 1");
        c->oversub = x;
        return 1;
    }
    if (!strcmp(name, "--chunk")) {
        uint64_t b;
        char why[160];
        if (trace_parse_bytes_flag(v, &b, why, sizeof(why)) != HERD_OK) {
            cli_usage_error(cmd, "%s: %s", name, why);
            return -1;
        }
        if (b == 0)
            return bad(cmd, name, v, TRACE_FORM_BYTES);
        f->chunk = b;
        return 1;
    }
    if (!strcmp(name, "--seed")) {
        char *end;
        unsigned long long s = strtoull(v, &end, 10);
        if (!*v || *end)
            return bad(cmd, name, v, "an unsigned integer");
        f->opts.seed = s;
        return 1;
    }
    return 0;
}

int cli_simflags_parse(const char *cmd, int argc, char **argv, int *i,
                       cli_simflags_t *f)
{
    static const char *const names[] = {
        "--nodes",     "--gpus-per-node",  "--world-size",
        "--intra-bw",  "--intra-lat",      "--inter-bw",
        "--inter-lat", "--nics-per-node",  "--topo",
        "--oversub",   "--nodes-per-leaf", "--reduce-bw",
        "--channels",  "--chunk",          "--seed"};
    const char *name = NULL;
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        if (is_flag(argv[*i], names[k]))
            name = names[k];
    if (!name)
        return 0;
    const char *v = flag_value(cmd, argc, argv, i, name);
    if (!v)
        return -1;
    (*i)++;
    herd_cluster_t *c = &f->opts.cluster;
    if (!strcmp(name, "--nodes"))
        return parse_int(cmd, name, v, 1, 1 << 20, &c->nodes);
    if (!strcmp(name, "--gpus-per-node"))
        return parse_int(cmd, name, v, 1, 1 << 16, &c->gpus_per_node);
    if (!strcmp(name, "--world-size"))
        return parse_int(cmd, name, v, 1, 1 << 20, &f->opts.world_size);
    if (!strcmp(name, "--nics-per-node"))
        return parse_int(cmd, name, v, 1, 1 << 16, &c->nics_per_node);
    if (!strcmp(name, "--nodes-per-leaf"))
        return parse_int(cmd, name, v, 1, 1 << 20, &c->nodes_per_leaf);
    if (!strcmp(name, "--channels"))
        return parse_int(cmd, name, v, 1, 64, &f->channels);
    if (!strcmp(name, "--intra-bw"))
        return parse_bw(cmd, name, v, &c->intra.bandwidth);
    if (!strcmp(name, "--inter-bw"))
        return parse_bw(cmd, name, v, &c->inter.bandwidth);
    if (!strcmp(name, "--reduce-bw"))
        return parse_bw(cmd, name, v, &c->reduce_bw);
    if (!strcmp(name, "--intra-lat"))
        return parse_time(cmd, name, v, &c->intra.latency);
    if (!strcmp(name, "--inter-lat"))
        return parse_time(cmd, name, v, &c->inter.latency);
    return parse_misc(cmd, name, v, f);
}

int cli_simflags_check(const char *cmd, const cli_simflags_t *f)
{
    const herd_cluster_t *c = &f->opts.cluster;
    long all = (long)c->nodes * c->gpus_per_node;
    if (f->opts.world_size > all) {
        cli_usage_error(cmd,
                        "--world-size %d is larger than --nodes x "
                        "--gpus-per-node = %ld",
                        f->opts.world_size, all);
        return -1;
    }
    if (all > (1 << 20)) {
        cli_usage_error(cmd,
                        "%ld ranks is more than the simulator's limit "
                        "of 1048576",
                        all);
        return -1;
    }
    return 0;
}

void cli_simflags_describe(const cli_simflags_t *f, char *buf, unsigned len)
{
    const herd_cluster_t *c = &f->opts.cluster;
    char il[32], el[32];
    trace_format_time(c->intra.latency, il, sizeof(il));
    trace_format_time(c->inter.latency, el, sizeof(el));
    snprintf(buf, len,
             "%d node(s) x %d GPU(s); intra %.1f GB/s %s; inter %.1f GB/s %s"
             "; %d NIC(s)/node",
             c->nodes, c->gpus_per_node, c->intra.bandwidth / 1e9, il,
             c->inter.bandwidth / 1e9, el,
             c->nics_per_node ? c->nics_per_node : c->gpus_per_node);
}
