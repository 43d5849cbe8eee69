/* cli/cmd_perf.c - `herd perf`: nccl-tests' flags and table for one
 * collective over a range of sizes, predicted by the simulator for the
 * cluster given as flags, or measured by a real engine (each process of a
 * `herd launch` job runs it for its rank; rank 0 prints). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_simflags.h"
#include "cli/cmd_perf.h"
#include "core/engine.h"
#include "core/reduce.h"
#include "core/sched.h"
#include "trace/scenario.h"
#include "trace/units.h"

static const char usage[] =
    "usage: herd perf [--engine sim|tcp|nccl|mpi] [--coll C] [--algo A]\n"
    "                 [-b MINBYTES] [-e MAXBYTES] [-f FACTOR | -i STEPBYTES]\n"
    "                 [-o OP] [-d DTYPE] [-r ROOT] [-n ITERS] [-w WARMUP]\n"
    "                 [-c 0|1] [-m AGG] [-z 0|1] [-a 0-3] [-g 1] [-t 1]\n"
    "                 [-G 0] [-p 0|1] [cluster flags]\n\n"
    "nccl-tests' table (size, count, type, redop, root, then time, algbw,\n"
    "busbw, #wrong out of place and in place) for one collective: predicted\n"
    "by the simulator (--engine sim, the default) for the cluster below, or\n"
    "measured by a real engine when started under `herd launch` (mpi: under\n"
    "mpirun or srun).\n\n"
    "  --engine E            sim (default), tcp (alias gloo), nccl or mpi\n"
    "  --coll C              all_reduce (default), broadcast, reduce,\n"
    "                        all_gather, gather, scatter, reduce_scatter,\n"
    "                        all_to_all\n"
    "  --algo A              auto (default), ring, tree, rhd, direct,\n"
    "                        binomial, hier, rd, nccl (NCCL's own; on sim its\n"
    "                        model: docs/nccl-model.md), gloo (PyTorch's\n"
    "                        gloo backend; on sim its model:\n"
    "                        docs/network-model.md); on mpi, auto is\n"
    "                        MPI's own collective\n"
    "  -b, --minbytes B      smallest size (default 32MiB)\n"
    "  -e, --maxbytes B      largest size (default 32MiB)\n"
    "  -f, --stepfactor F    multiply the size by F (default 2)\n"
    "  -i, --stepbytes B     or add B bytes (with -f 1)\n"
    "  -o, --op OP           sum (default), prod, min, max, avg, band, bor,\n"
    "                        bxor\n"
    "  -d, --datatype T      float32 (default), float16, bfloat16, float64,\n"
    "                        int8, uint8, int32, int64 (also float, half...)\n"
    "  -r, --root R          root of rooted collectives (default 0)\n"
    "  -n, --iters N         timed iterations (default 20; sim without\n"
    "                        jitter simulates each size once)\n"
    "  -w, --warmup_iters N  warm-up iterations (default 1)\n"
    "  -c, --check 0|1       1: real buffers, check every result (#wrong)\n"
    "  -m, --agg_iters N     operations posted back to back per timed\n"
    "                        iteration (default 1, at most 1024); time is\n"
    "                        per operation\n"
    "  -z, --blocking 0|1    1: each operation through the blocking call\n"
    "                        (default 0: an iteration's operations are\n"
    "                        posted, then waited for)\n"
    "  -a, --average 0-3     ranks' times combined: 0 rank 0's, 1 the mean\n"
    "                        (default), 2 the least, 3 the greatest\n"
    "  -g, --ngpus 1         GPUs per process: herd's engines drive one\n"
    "                        (start one process per GPU)\n"
    "  -t, --nthreads 1      threads per process: one\n"
    "  -G, --cudagraph 0     CUDA graph launches: not implemented (0)\n"
    "  -p, --parallel_init 0|1  accepted (each process sets up its own rank)\n"
    "  --timeout S           collective timeout in seconds (tcp/nccl default:\n"
    "                        $HERD_TIMEOUT, else 600)\n"
    "  --scenario FILE       cluster, stragglers, faults, seed, channels\n"
    "                        and chunk from a scenario (flags after it\n"
    "                        override it)\n"
    "\ncluster (sim):\n";

typedef struct perf_args {
    cli_perf_t p;
    cli_simflags_t sim;
    const char *engine;
    trace_scenario_t *sc; /* --scenario: owns the options' arrays */
    double timeout_s;     /* --timeout, else $HERD_TIMEOUT; 0: default */
    int ngpus, nthreads, graphs, parallel_init; /* -g -t -G -p */
} perf_args_t;

/* --scenario FILE: the scenario's simulator options and channels/chunk. */
static int perf_scenario(const char *path, perf_args_t *a)
{
    char err[1024];
    trace_scenario_t *sc = NULL;
    if (trace_scenario_load(path, &sc, err, sizeof(err)) != HERD_OK) {
        fprintf(stderr, "herd perf: %s\n", err);
        return 2;
    }
    trace_scenario_destroy(a->sc);
    a->sc = sc;
    a->sim.opts = sc->sim;
    a->sim.channels = sc->channels;
    a->sim.chunk = sc->chunk_bytes;
    return 0;
}

static const char *const short_names[][2] = {
    {"-b", "--minbytes"},     {"-e", "--maxbytes"},
    {"-f", "--stepfactor"},   {"-i", "--stepbytes"},
    {"-o", "--op"},           {"-d", "--datatype"},
    {"-r", "--root"},         {"-n", "--iters"},
    {"-w", "--warmup_iters"}, {"-c", "--check"},
    {"--engine", "--engine"}, {"--coll", "--coll"},
    {"--algo", "--algo"},     {"--timeout", "--timeout"},
    {"-m", "--agg_iters"},    {"-z", "--blocking"},
    {"-a", "--average"},      {"-g", "--ngpus"},
    {"-t", "--nthreads"},     {"-G", "--cudagraph"},
    {"-p", "--parallel_init"}};

/* The long name of a perf flag, or NULL. */
static const char *perf_flag(const char *arg)
{
    for (size_t k = 0; k < sizeof(short_names) / sizeof(short_names[0]); k++)
        if (!strcmp(arg, short_names[k][0]) || !strcmp(arg, short_names[k][1]))
            return short_names[k][1];
    return NULL;
}

static int bad_value(const char *flag, const char *v, const char *what)
{
    return cli_usage_error("perf", "%s: '%s' is not %s", flag, v, what);
}

static int set_bytes(const char *flag, const char *v, uint64_t *out)
{
    /* nccl-tests' "1M"/"128K" (binary) as well as the unit spellings;
     * no hex, no guessing what "1mb" means */
    char why[160];
    if (trace_parse_bytes_flag(v, out, why, sizeof(why)) != HERD_OK)
        return cli_usage_error("perf", "%s: %s", flag, why);
    return 0;
}

static int set_int(const char *flag, const char *v, long lo, long hi, int *out)
{
    long x;
    if (cli_parse_int(v, lo, hi, &x) != 0) {
        char what[64];
        snprintf(what, sizeof(what), "an integer in [%ld, %ld]", lo, hi);
        return bad_value(flag, v, what);
    }
    *out = (int)x;
    return 0;
}

static int set_names(const char *flag, const char *v, perf_args_t *a)
{
    cli_perf_t *p = &a->p;
    if (!strcmp(flag, "--engine")) {
        a->engine = v;
        return 0;
    }
    if (!strcmp(flag, "--coll"))
        return herd_coll_parse(v, &p->coll) != HERD_OK ||
                       p->coll == HERD_COLL_SEND || p->coll == HERD_COLL_RECV
                   ? bad_value(flag, v, "a collective (all_reduce, ...)")
               /* a size sweep has one count per rank: the uneven kinds
                * and monitored_barrier are not nccl-tests' */
               : core_coll_is_v(p->coll) ||
                       p->coll == HERD_COLL_MONITORED_BARRIER
                   ? bad_value(flag, v,
                               "a collective herd perf sweeps (the *_v "
                               "kinds and monitored_barrier take counts "
                               "per rank or none)")
                   : 0;
    if (!strcmp(flag, "--algo"))
        return herd_algo_parse(v, &p->algo) != HERD_OK
                   ? bad_value(flag, v, "an algorithm (ring, tree, ...)")
                   : 0;
    if (!strcmp(flag, "--op"))
        return herd_op_parse(v, &p->op) != HERD_OK
                   ? bad_value(flag, v, "a reduce op (sum, max, ...)")
                   : 0;
    if (!strcmp(flag, "--datatype"))
        return herd_dtype_parse(v, &p->dtype) != HERD_OK
                   ? bad_value(flag, v, "a data type (float32, int8, ...)")
                   : 0;
    return -1;
}

static int set_flag(const char *flag, const char *v, perf_args_t *a)
{
    cli_perf_t *p = &a->p;
    int rc = set_names(flag, v, a);
    if (rc >= 0)
        return rc;
    if (!strcmp(flag, "--minbytes"))
        return set_bytes(flag, v, &p->minbytes);
    if (!strcmp(flag, "--maxbytes"))
        return set_bytes(flag, v, &p->maxbytes);
    if (!strcmp(flag, "--stepbytes"))
        return set_bytes(flag, v, &p->stepbytes);
    if (!strcmp(flag, "--stepfactor"))
        return cli_parse_double(v, &p->stepfactor) != 0 || p->stepfactor < 1
                   ? bad_value(flag, v, "a factor >= 1")
                   : 0;
    if (!strcmp(flag, "--root"))
        return set_int(flag, v, 0, 1 << 20, &p->root);
    if (!strcmp(flag, "--iters"))
        return set_int(flag, v, 1, 1000000, &p->iters);
    if (!strcmp(flag, "--warmup_iters"))
        return set_int(flag, v, 0, 1000000, &p->warmup);
    if (!strcmp(flag, "--timeout"))
        return cli_parse_double(v, &a->timeout_s) != 0 || a->timeout_s <= 0
                   ? bad_value(flag, v, "a number of seconds > 0")
                   : 0;
    if (!strcmp(flag, "--agg_iters"))
        /* posted at once: bounded, as what they hold in flight is */
        return set_int(flag, v, 1, 1024, &p->agg);
    if (!strcmp(flag, "--blocking"))
        return set_int(flag, v, 0, 1, &p->blocking);
    if (!strcmp(flag, "--average"))
        return set_int(flag, v, 0, 3, &p->average);
    if (!strcmp(flag, "--ngpus"))
        return set_int(flag, v, 1, 1 << 20, &a->ngpus);
    if (!strcmp(flag, "--nthreads"))
        return set_int(flag, v, 1, 1 << 20, &a->nthreads);
    if (!strcmp(flag, "--cudagraph"))
        return set_int(flag, v, 0, 1000000, &a->graphs);
    if (!strcmp(flag, "--parallel_init"))
        return set_int(flag, v, 0, 1, &a->parallel_init);
    return set_int(flag, v, 0, 1, &p->check); /* --check */
}

static void defaults(perf_args_t *a)
{
    memset(a, 0, sizeof(*a));
    cli_simflags_init(&a->sim);
    a->engine = "sim";
    a->p.coll = HERD_COLL_ALL_REDUCE;
    a->p.algo = HERD_ALGO_AUTO;
    a->p.dtype = HERD_FLOAT32;
    a->p.op = HERD_SUM;
    a->p.minbytes = a->p.maxbytes = 32u << 20;
    a->p.stepfactor = 2;
    a->p.iters = 20;
    a->p.warmup = 1;
    a->p.agg = 1;
    a->p.average = 1; /* nccl-tests' default: the mean over ranks */
    a->ngpus = a->nthreads = 1;
    a->p.out = stdout;
}

static int parse(int argc, char **argv, perf_args_t *a)
{
    for (int i = 1; i < argc;) {
        int rc = cli_simflags_parse("perf", argc, argv, &i, &a->sim);
        if (rc < 0)
            return 2;
        if (rc > 0)
            continue;
        if (!strcmp(argv[i], "--scenario") && i + 1 < argc) {
            if (perf_scenario(argv[i + 1], a))
                return 2;
            i += 2;
            continue;
        }
        const char *flag = perf_flag(argv[i]);
        if (!flag)
            return cli_usage_error("perf",
                                   "unknown argument '%s' (see herd "
                                   "perf --help)",
                                   argv[i]);
        if (i + 1 >= argc)
            return cli_usage_error("perf", "%s needs a value", argv[i]);
        if (set_flag(flag, argv[i + 1], a) != 0)
            return 2;
        i += 2;
    }
    return 0;
}

/* nccl-tests' process layout flags: herd runs one rank, one device and
 * one thread per process, so only the values that mean that pass. */
static int validate_nccltests(const perf_args_t *a)
{
    const cli_perf_t *p = &a->p;
    if (a->ngpus != 1)
        return cli_usage_error(
            "perf",
            "-g %d: the %s engine drives one GPU per process; start one "
            "process per GPU (herd launch --nproc-per-node N, mpirun -np N)%s",
            a->ngpus, a->engine,
            strcmp(a->engine, "sim") ? ""
                                     : ", or give the simulator's cluster "
                                       "as --nodes and --gpus-per-node");
    if (a->nthreads != 1)
        return cli_usage_error("perf",
                               "-t %d: herd perf runs one thread per process "
                               "(one rank each); start more processes instead",
                               a->nthreads);
    if (a->graphs > 0)
        return !strcmp(a->engine, "nccl")
                   ? cli_usage_error("perf",
                                     "-G %d: CUDA graph launches are not "
                                     "implemented by herd's nccl engine yet",
                                     a->graphs)
                   : cli_usage_error("perf",
                                     "-G %d: CUDA graph launches need the "
                                     "nccl engine, not %s",
                                     a->graphs, a->engine);
    if ((uint64_t)p->iters * (uint64_t)p->agg > 100000000u)
        return cli_usage_error("perf",
                               "-n %d x -m %d: more than 1e8 "
                               "operations per size",
                               p->iters, p->agg);
    return 0;
}

static int validate(perf_args_t *a)
{
    cli_perf_t *p = &a->p;
    if (p->minbytes > p->maxbytes)
        return cli_usage_error("perf", "-b %llu is larger than -e %llu",
                               (unsigned long long)p->minbytes,
                               (unsigned long long)p->maxbytes);
    if (p->stepfactor <= 1 && p->stepbytes == 0)
        p->stepbytes = 1u << 20;
    if (p->stepfactor <= 1 &&
        (p->maxbytes - p->minbytes) / p->stepbytes > 100000)
        return cli_usage_error("perf", "more than 100000 sizes: use a "
                                       "larger -i or -f");
    if (!core_sched_is_library(p->algo) &&
        !core_sched_supports(p->algo, p->coll))
        return cli_usage_error("perf", "algorithm %s does not implement %s",
                               herd_algo_name(p->algo),
                               herd_coll_name(p->coll));
    if (!core_reduce_valid(p->dtype, p->op))
        return cli_usage_error("perf",
                               "op %s is not defined for %s (bitwise "
                               "ops need an integer type)",
                               herd_op_name(p->op), herd_dtype_name(p->dtype));
    if (cli_engine_resolve("perf", a->engine, &a->engine))
        return 2;
    if (validate_nccltests(a))
        return 2;
    /* Real engines: a shorter collective timeout than 600 s from the
     * environment (the flag wins). */
    const char *env = getenv("HERD_TIMEOUT");
    if (strcmp(a->engine, "sim") && a->timeout_s <= 0 && env && *env &&
        (cli_parse_double(env, &a->timeout_s) != 0 || a->timeout_s <= 0))
        return cli_usage_error("perf",
                               "HERD_TIMEOUT: '%s' is not a number "
                               "of seconds > 0",
                               env);
    if (p->check && !strcmp(a->engine, "nccl"))
        return cli_usage_error("perf", "-c 1 checks host buffers: not "
                                       "available on nccl");
    if (cli_simflags_check("perf", &a->sim) != 0)
        return 2;
    const herd_cluster_t *c = &a->sim.opts.cluster;
    int p_sim = a->sim.opts.world_size ? a->sim.opts.world_size
                                       : c->nodes * c->gpus_per_node;
    if (!strcmp(a->engine, "sim") && p->root >= p_sim)
        return cli_usage_error("perf", "-r %d: root out of range [0, %d)",
                               p->root, p_sim);
    p->channels = a->sim.channels;
    p->chunk = a->sim.chunk;
    return 0;
}

static int run(perf_args_t *a)
{
    herd_init_t init = {.backend = a->engine,
                        .timeout_s = a->timeout_s,
                        .timeline_cb = cli_perf_timeline,
                        .timeline_arg = &a->p};
    if (!strcmp(a->engine, "sim")) {
        a->sim.opts.real_buffers = a->p.check;
        a->p.shared = 1;
        init.engine_opts = &a->sim.opts;
        char desc[256];
        cli_simflags_describe(&a->sim, desc, sizeof(desc));
        printf("# herd perf: %s, algorithm %s, predicted by sim for %s\n",
               herd_coll_name(a->p.coll), herd_algo_name(a->p.algo), desc);
        /* Without jitter every iteration is the same simulation: one per
         * size gives the same table, 21 times faster. */
        if (a->sim.opts.jitter == HERD_JITTER_NONE) {
            a->p.iters = 1;
            a->p.warmup = 0;
            printf("# each size simulated once (no jitter: the simulator is "
                   "deterministic, -n and -w do not apply)\n");
        } else {
            printf("# %d iterations per size after %d warm-up (jitter "
                   "sigma %g, seed %llu)\n",
                   a->p.iters, a->p.warmup, a->sim.opts.jitter_sigma,
                   (unsigned long long)a->sim.opts.seed);
        }
    } else {
        init.init_method = "env://";
        init.rank = -1;
        init.local_rank = -1;
        a->p.report_all = 1; /* one process per rank: each says why */
    }
    herd_run_info_t info;
    herd_status_t st = herd_run(&init, cli_perf_program, &a->p, &info);
    if (st != HERD_OK) {
        fprintf(stderr, "herd perf: run failed: %s\n", herd_status_string(st));
        if (info.report)
            fprintf(stderr, "%s%s", info.report,
                    info.report[0] &&
                            info.report[strlen(info.report) - 1] == '\n'
                        ? ""
                        : "\n");
    }
    herd_run_info_clear(&info);
    free(a->p.spans);
    if (st != HERD_OK)
        return 1;
    return a->p.wrong_total ? 1 : 0;
}

int cli_perf_main(int argc, char **argv)
{
    char *help = malloc(sizeof(usage) + strlen(cli_simflags_usage()) + 1);
    if (!help)
        return 1;
    strcpy(help, usage);
    strcat(help, cli_simflags_usage());
    int wants = cli_wants_help(argc, argv, help);
    free(help);
    if (wants)
        return 0;
    perf_args_t a;
    defaults(&a);
    int rc = parse(argc, argv, &a);
    if (rc == 0)
        rc = validate(&a);
    rc = rc ? rc : run(&a);
    trace_scenario_destroy(a.sc);
    return rc;
}
