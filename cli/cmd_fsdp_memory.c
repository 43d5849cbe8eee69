/* cli/cmd_fsdp_memory.c - `herd fsdp strategies`: the choice a user makes
 * between sharding strategies, side by side: for each strategy the memory
 * per rank (parameters, gradients, optimizer state, unsharded peak),
 * whether it fits a device's memory, and the simulated step time and
 * exposed communication; a table, DIR/strategies.tsv and a plot of the
 * memory (DIR/strategies.dat/.gp/.png/.svg, plots/wl_memory.gp). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_plots.h"
#include "cli/cmd_ddp.h"
#include "cli/cmd_fsdp.h"
#include "cli/cmd_sim.h"

static const char usage[] =
    "usage: herd fsdp strategies [SCENARIO] [--set KEY=VALUE]...\n"
    "         [--gpu-mem GIB] [--out DIR] [--no-plot]\n"
    "Runs SCENARIO's FSDP job once per sharding strategy (FULL_SHARD,\n"
    "SHARD_GRAD_OP, HYBRID_SHARD, NO_SHARD) and prints for each the memory\n"
    "per rank (parameters, gradients, optimizer state, the unsharded units\n"
    "alive at once; activations not included), the step time and the\n"
    "exposed communication. --gpu-mem GIB (= fsdp.gpu_mem, which a\n"
    "scenario may set) marks the strategies whose memory does not fit (never\n"
    "recommended). Writes DIR/strategies.tsv and the\n"
    "plot DIR/strategies.png/.svg with its strategies.dat and .gp (cd DIR\n"
    "&& gnuplot strategies.gp draws it again; DIR: fsdp-out).\n";

#define NSTRAT 4
static const char *const strategies[NSTRAT] = {"FULL_SHARD", "SHARD_GRAD_OP",
                                               "HYBRID_SHARD", "NO_SHARD"};

typedef struct row {
    int ok; /* built and simulated */
    herd_status_t status;
    fsdp_memory_t mem; /* the rank with the most */
    double step_s, exposed_s;
    int fits;
    double gpu_gib; /* fsdp.gpu_mem; 0: no limit */
} row_t;

typedef struct args {
    const char *scenario, *out;
    char *sets[64 + 2]; /* + --gpu-mem's and the strategy's */
    int nsets, no_plot;
    char gpu_mem[64]; /* "fsdp.gpu_mem=GIB" of --gpu-mem */
} args_t;

static int parse(int argc, char **argv, args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->out = "fsdp-out";
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--no-plot"))
            a->no_plot = 1;
        else if (s[0] == '-' && i + 1 >= argc)
            return cli_usage_error("fsdp strategies",
                                   "option '%s' needs a value", s);
        else if (!strcmp(s, "--set") && a->nsets < 63)
            a->sets[a->nsets++] = argv[++i];
        else if (!strcmp(s, "--out"))
            a->out = argv[++i];
        else if (!strcmp(s, "--gpu-mem")) {
            double gib;
            if (cli_parse_double(argv[++i], &gib) || gib <= 0)
                return cli_usage_error("fsdp strategies",
                                       "--gpu-mem '%s': expected GiB > 0",
                                       argv[i]);
            snprintf(a->gpu_mem, sizeof(a->gpu_mem), "fsdp.%s=%s",
                     WL_GPU_MEM_KEY, argv[i]);
        } else if (s[0] == '-')
            return cli_usage_error("fsdp strategies", "unknown option '%s'", s);
        else if (!a->scenario)
            a->scenario = s;
        else
            return cli_usage_error("fsdp strategies", "unexpected '%s'", s);
    }
    if (a->gpu_mem[0]) /* the last --set: over the scenario's */
        a->sets[a->nsets++] = a->gpu_mem;
    return 0;
}

static void run_one(args_t *a, int k, row_t *r)
{
    char set[64];
    trace_scenario_t *sc = NULL;
    fsdp_job_t *job = NULL;
    snprintf(set, sizeof(set), "fsdp.strategy=%s", strategies[k]);
    a->sets[a->nsets] = set;
    memset(r, 0, sizeof(*r));
    if (!cli_ddp_load_scenario("fsdp strategies", a->scenario, a->sets,
                               a->nsets + 1, &sc) &&
        !cli_fsdp_make_job("fsdp strategies", sc, &job)) {
        cli_fsdp_result_t res;
        if (!cli_fsdp_simulate(sc, job, NULL, NULL, &res)) {
            r->ok = 1;
            r->status = res.status;
            r->step_s = res.summary.step_s;
            r->exposed_s = res.summary.exposed_s;
            r->mem = res.summary.mem;
            r->fits = res.summary.fits;
            r->gpu_gib = job->cfg.gpu_mem_gib;
            cli_fsdp_result_fini(&res);
        }
    }
    fsdp_job_destroy(job);
    trace_scenario_destroy(sc);
}

static double mib(uint64_t b)
{
    return (double)b / 1048576.0;
}

static int write_tsv(const args_t *a, const row_t *rows, char *path, size_t len)
{
    snprintf(path, len, "%s/strategies.tsv", a->out);
    FILE *f = fopen(path, "w");
    if (!f)
        return cli_usage_error("fsdp strategies", "cannot write %s", path);
    fprintf(f, "strategy\tparams_mib\tgrads_mib\toptimizer_mib\tunsharded_mib"
               "\ttotal_mib\tstep_ms\texposed_ms\tfits\n");
    for (int k = 0; k < NSTRAT; k++)
        if (rows[k].ok)
            fprintf(f, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\n",
                    strategies[k], mib(rows[k].mem.params),
                    mib(rows[k].mem.grads), mib(rows[k].mem.optimizer),
                    mib(rows[k].mem.unsharded), mib(rows[k].mem.total),
                    rows[k].step_s * 1e3, rows[k].exposed_s * 1e3,
                    rows[k].fits);
    return fclose(f)
               ? cli_usage_error("fsdp strategies", "cannot write %s", path)
               : 0;
}

static int plot(const args_t *a, const row_t *rows, int best, double gib);

static int report(const args_t *a, const row_t *rows)
{
    int best = -1;
    double gib = 0;
    for (int k = 0; k < NSTRAT; k++)
        gib = rows[k].ok ? rows[k].gpu_gib : gib;
    printf("%14s %9s %9s %9s %10s %10s %10s %11s  %s\n", "strategy", "params",
           "grads", "optim", "unsharded", "total_MiB", "step_ms", "exposed_ms",
           "status");
    for (int k = 0; k < NSTRAT; k++) {
        const row_t *r = &rows[k];
        if (!r->ok) {
            printf("%14s (not run: see the message above)\n", strategies[k]);
            continue;
        }
        int good = r->status == HERD_OK && r->fits;
        if (good && (best < 0 || r->step_s < rows[best].step_s))
            best = k;
        printf("%14s %9.1f %9.1f %9.1f %10.1f %10.1f %10.3f %11.3f  %s\n",
               strategies[k], mib(r->mem.params), mib(r->mem.grads),
               mib(r->mem.optimizer), mib(r->mem.unsharded), mib(r->mem.total),
               r->step_s * 1e3, r->exposed_s * 1e3,
               r->status != HERD_OK ? herd_status_string(r->status)
               : r->fits            ? "ok"
                                    : "does not fit gpu_mem");
    }
    if (best >= 0)
        printf("fastest that %s: %s (%.3f ms, %.1f MiB per rank)\n",
               gib > 0 ? "fits" : "runs", strategies[best],
               rows[best].step_s * 1e3, mib(rows[best].mem.total));
    else
        printf("no strategy %s\n", gib > 0 ? "fits" : "runs");
    if (cli_sim_mkdir("fsdp strategies", a->out))
        return 2;
    char tsv[4096];
    int rc = write_tsv(a, rows, tsv, sizeof(tsv));
    printf("wrote %s\n", tsv);
    return rc ? rc : plot(a, rows, best, gib);
}

/* DIR/strategies.*: the memory per rank of each strategy, stacked by
 * part, the step time on the right axis, fsdp.gpu_mem (--gpu-mem) as a
 * line. */
static int plot(const args_t *a, const row_t *rows, int best, double gib)
{
    trace_mem_bar_t bars[NSTRAT];
    int n = 0;
    for (int k = 0; k < NSTRAT; k++) {
        const row_t *r = &rows[k];
        if (!r->ok)
            continue;
        trace_mem_bar_t *b = &bars[n++];
        memset(b, 0, sizeof(*b));
        b->label = strategies[k];
        if (!r->mem.host) { /* cpu_offload: the shards live on the host */
            b->bytes[TRACE_MEM_PARAMS] = (double)r->mem.params;
            b->bytes[TRACE_MEM_GRADS] = (double)r->mem.grads;
            b->bytes[TRACE_MEM_OPTIM] = (double)r->mem.optimizer;
        }
        b->bytes[TRACE_MEM_UNSHARDED] = (double)r->mem.unsharded;
        b->step_ms = r->step_s * 1e3;
        b->ok = r->status == HERD_OK;
        b->fits = r->fits;
        b->best = k == best;
    }
    char title[512];
    snprintf(title, sizeof(title),
             "%s: memory per rank and step time by strategy",
             a->scenario ? a->scenario : "defaults");
    trace_mem_plot_t p = {
        title,
        "fsdp.strategy",
        {NULL, NULL, NULL, "unsharded units (params + grads)", NULL},
        bars,
        n,
        wl_gpu_mem_bytes(gib),
        "activations not modelled; the rank with the most"};
    return n ? cli_plot_memory("fsdp strategies", &p, a->out, "strategies",
                               !a->no_plot)
             : 0;
}

int cli_fsdp_strategies_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    args_t a;
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc;
    row_t rows[NSTRAT];
    int ran = 0;
    for (int k = 0; k < NSTRAT; k++) {
        run_one(&a, k, &rows[k]);
        ran += rows[k].ok;
    }
    return ran ? report(&a, rows) : 2;
}
