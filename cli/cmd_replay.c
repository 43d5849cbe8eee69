/* cli/cmd_replay.c - `herd replay TRACE --engine sim|tcp|nccl`: replay a
 * trace with the engine-agnostic replayer (trace/replay.c). On sim all
 * ranks run here, on the cluster of --scenario (or one sized for the
 * trace); on tcp/nccl/mpi this process is one rank (start it under `herd
 * launch`, or mpirun/srun) and writes its own timeline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"
#include "cli/cmd_sim.h"
#include "trace/replay.h"
#include "trace/trace.h"

static const char usage[] =
    "usage: herd replay TRACE [--engine sim|tcp|gloo|nccl] [--scenario FILE]\n"
    "         [--set KEY=VALUE]... [--steps N] [-o DIR] [--no-plots]\n"
    "         [--gantt-ranks LIST] [--timeout S]\n"
    "Replays TRACE (herd-trace JSON). sim (default): every rank in virtual\n"
    "time on the scenario's cluster (default: nodes of 8 GPUs, as many as\n"
    "the trace needs); writes DIR/timeline.json/.tsv and gantt plots.\n"
    "tcp, nccl: run under `herd launch` (mpi: under mpirun or srun); each\n"
    "rank writes DIR/timeline-rank<R>.json/.tsv (measured; herd compare).\n"
    "The trace is rescaled when the world size differs. --gantt-ranks\n"
    "LIST: the ranks the Gantt chart shows (e.g. 0-7,256-263; at most 64;\n"
    "default: ranks 0-31, and the title says so).\n"
    "--timeout S: the collective timeout (else the scenario's timeout:, on\n"
    "tcp/nccl then $HERD_TIMEOUT, else 600 s).\n"
    "Exit: 0 ok, 1 the run failed or hung, 2 bad usage or input.\n";

typedef struct rp_args {
    const char *trace, *engine, *scenario, *out, *gantt_ranks;
    char *sets[64];
    int nsets, steps, no_plots;
    double timeout_s; /* --timeout; 0: not given */
} rp_args_t;

static int rp_parse(int argc, char **argv, rp_args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->engine = "sim";
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int more = i + 1 < argc;
        long v;
        if (!strcmp(s, "--engine") && more)
            a->engine = argv[++i];
        else if (!strcmp(s, "--scenario") && more)
            a->scenario = argv[++i];
        else if ((!strcmp(s, "-o") || !strcmp(s, "--out")) && more)
            a->out = argv[++i];
        else if (!strcmp(s, "--set") && more && a->nsets < 64)
            a->sets[a->nsets++] = argv[++i];
        else if (!strcmp(s, "--steps") && more) {
            if (cli_parse_int(argv[++i], 1, 1000000, &v))
                return cli_usage_error("replay", "--steps: expected an "
                                                 "integer >= 1");
            a->steps = (int)v;
        } else if (!strcmp(s, "--timeout") && more) {
            if (cli_parse_double(argv[++i], &a->timeout_s) || a->timeout_s <= 0)
                return cli_usage_error("replay",
                                       "--timeout: '%s' is not a "
                                       "number of seconds > 0",
                                       argv[i]);
        } else if (!strcmp(s, "--no-plots"))
            a->no_plots = 1;
        else if (!strcmp(s, "--gantt-ranks") && more)
            a->gantt_ranks = argv[++i];
        else if (s[0] == '-' || a->trace)
            return cli_usage_error("replay",
                                   "unexpected argument '%s' (see "
                                   "--help)",
                                   s);
        else
            a->trace = s;
    }
    if (!a->trace)
        return cli_usage_error("replay", "missing TRACE (see --help)");
    return 0;
}

/* The trace for `world` ranks (rescaled if needed). */
static int rp_load(const char *path, int world, trace_t **out)
{
    char err[1024];
    trace_t *t = NULL;
    if (trace_read_json(path, &t, err, sizeof(err))) {
        fprintf(stderr, "herd replay: %s\n", err);
        return 2;
    }
    if (world > 0 && t->world_size != world) {
        trace_t *r = NULL;
        herd_status_t st = trace_rescale(t, world, &r, err, sizeof(err));
        trace_destroy(t);
        if (st) {
            fprintf(stderr, "herd replay: %s\n", err);
            return 2;
        }
        t = r;
    }
    *out = t;
    return 0;
}

/* Without a scenario: nodes of ranks_per_node (8) GPUs, enough of them. */
static void rp_default_cluster(trace_scenario_t *sc, const trace_t *t)
{
    int gpn = t->ranks_per_node > 0 ? t->ranks_per_node : 8;
    if (gpn > t->world_size)
        gpn = t->world_size;
    sc->sim.cluster.gpus_per_node = gpn;
    sc->sim.cluster.nodes = (t->world_size + gpn - 1) / gpn;
    if (t->world_size % gpn) /* a partly filled last node */
        sc->sim.world_size = t->world_size;
}

static void rp_setup(trace_replay_t *rp, const trace_t *t,
                     const trace_scenario_t *sc, const rp_args_t *a)
{
    trace_replay_init(rp, t);
    if (sc) {
        memcpy(rp->algo, sc->algo, sizeof(rp->algo));
        rp->channels = sc->channels;
        rp->chunk_bytes = sc->chunk_bytes;
        rp->steps = sc->steps;
    }
    if (a->steps)
        rp->steps = a->steps;
}

/* --set KEY=VALUE on the default cluster (no --scenario). */
static int rp_sets(const rp_args_t *a, trace_scenario_t *sc)
{
    char err[1024];
    herd_status_t st = HERD_OK;
    for (int i = 0; i < a->nsets && !st; i++) {
        char key[256];
        const char *eq = strchr(a->sets[i], '=');
        if (!eq || (size_t)(eq - a->sets[i]) >= sizeof(key))
            return cli_usage_error("replay", "--set %s: expected KEY=VALUE",
                                   a->sets[i]);
        snprintf(key, sizeof(key), "%.*s", (int)(eq - a->sets[i]), a->sets[i]);
        st = trace_scenario_set(sc, key, eq + 1, err, sizeof(err));
    }
    if (!st)
        st = trace_scenario_validate(sc, err, sizeof(err));
    if (st)
        fprintf(stderr, "herd replay: %s\n", err);
    return st ? 2 : 0;
}

/* The scenario (given, or nodes of 8 GPUs sized for the trace, with
 * --set applied) and the trace for its world size. */
static int rp_scenario(const rp_args_t *a, trace_scenario_t **sc, trace_t **t)
{
    if (a->scenario) {
        int rc = cli_ddp_load_scenario("replay", a->scenario, (char **)a->sets,
                                       a->nsets, sc);
        return rc ? rc : rp_load(a->trace, trace_scenario_world_size(*sc), t);
    }
    int rc = trace_scenario_create(sc) ? 2 : rp_load(a->trace, 0, t);
    if (!rc) {
        rp_default_cluster(*sc, *t);
        rc = rp_sets(a, *sc);
    }
    if (!rc && trace_scenario_world_size(*sc) != (*t)->world_size) {
        trace_destroy(*t);
        *t = NULL;
        rc = rp_load(a->trace, trace_scenario_world_size(*sc), t);
    }
    return rc;
}

static int rp_sim(const rp_args_t *a)
{
    trace_scenario_t *sc = NULL;
    trace_t *t = NULL;
    trace_timeline_t *tl = NULL;
    int rc = rp_scenario(a, &sc, &t);
    const char *dir = a->out ? a->out : "out/replay";
    if (!rc && a->timeout_s > 0)
        sc->timeout_s = a->timeout_s;
    if (!rc && a->gantt_ranks &&
        cli_sim_gantt_rows("replay", a->gantt_ranks, t->world_size, NULL, 0))
        rc = 2;
    if (!rc &&
        (cli_sim_mkdir("replay", dir) || trace_timeline_create(&tl) ||
         trace_timeline_set_meta(tl, "engine", "sim") ||
         trace_timeline_set_meta(tl, "trace", a->trace) ||
         (t->name && *t->name && trace_timeline_set_meta(tl, "name", t->name))))
        rc = 2;
    if (!rc) {
        printf("replay %s on sim: %d ranks\n", a->trace, t->world_size);
        herd_status_t st = cli_sim_replay(sc, t, a->steps, tl);
        cli_sim_print_kinds(tl, stdout);
        /* titled with the trace's (or scenario's) name, not the path */
        char title[512];
        snprintf(title, sizeof(title), "%s: %d ranks (replay on sim)",
                 sc->name && *sc->name ? sc->name
                 : t->name && *t->name ? t->name
                                       : a->trace,
                 t->world_size);
        rc = cli_sim_write_timeline("replay", tl, dir, title, a->gantt_ranks,
                                    a->no_plots);
        rc = rc ? rc : st ? 1 : 0;
    }
    trace_timeline_destroy(tl);
    trace_destroy(t);
    trace_scenario_destroy(sc);
    return rc;
}

/* The collective timeout of a real run: --timeout, the scenario's
 * `timeout:`, $HERD_TIMEOUT; 0: the engine's default (600 s). */
static int rp_timeout(const rp_args_t *a, double *out)
{
    *out = a->timeout_s;
    if (*out <= 0 && a->scenario) {
        trace_scenario_t *sc = NULL;
        int rc = cli_ddp_load_scenario("replay", a->scenario, (char **)a->sets,
                                       a->nsets, &sc);
        if (rc)
            return rc;
        *out = sc->timeout_s;
        trace_scenario_destroy(sc);
    }
    const char *env = getenv("HERD_TIMEOUT");
    if (*out <= 0 && env && *env &&
        (cli_parse_double(env, out) != 0 || *out <= 0))
        return cli_usage_error("replay",
                               "HERD_TIMEOUT: '%s' is not a "
                               "number of seconds > 0",
                               env);
    return 0;
}

/* torchrun's variable (herd launch), else Open MPI's or Slurm's: a job
 * under mpirun or srun (--engine mpi; env:// reads them too). */
static const char *launcher_env(const char *torch, const char *ompi,
                                const char *slurm)
{
    const char *names[] = {torch, ompi, slurm};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}

/* One rank of a real engine: this process's part, its own timeline. */
static int rp_real(const rp_args_t *a)
{
    const char *ws =
        launcher_env("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS");
    long world = 0;
    if (!ws || cli_parse_int(ws, 1, 1 << 20, &world))
        return cli_usage_error("replay",
                               "--engine %s: WORLD_SIZE is not set;"
                               " start it under `herd launch` (or mpirun"
                               " or srun)",
                               a->engine);
    trace_t *t = NULL;
    trace_timeline_t *tl = NULL;
    double timeout_s = 0;
    int rc = rp_timeout(a, &timeout_s);
    if (rc)
        return rc;
    rc = rp_load(a->trace, (int)world, &t);
    if (!rc && (trace_timeline_create(&tl) ||
                trace_timeline_set_meta(tl, "engine", a->engine)))
        rc = 2;
    if (rc) {
        trace_destroy(t);
        return rc;
    }
    trace_replay_t rp;
    rp_setup(&rp, t, NULL, a);
    /* This rank's own failure, said by this rank (each is a process). */
    rp.errors = calloc((size_t)t->world_size, sizeof(char *));
    herd_init_t init = {.backend = a->engine,
                        .timeout_s = timeout_s,
                        .init_method = "env://",
                        .rank = -1,
                        .local_rank = -1,
                        .timeline_cb = trace_timeline_collect,
                        .timeline_arg = tl};
    herd_run_info_t info = {0};
    herd_status_t st = herd_run(&init, trace_replay_main, &rp, &info);
    const char *r =
        launcher_env("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", a->out ? a->out : "out/replay");
    const char *why = NULL;
    for (int i = 0; rp.errors && i < t->world_size && !why; i++)
        why = rp.errors[i];
    if (st)
        fprintf(stderr, "herd replay: rank %s: %s\n", r ? r : "?",
                why ? why : herd_status_string(st));
    for (int i = 0; rp.errors && i < t->world_size; i++)
        free(rp.errors[i]);
    free(rp.errors);
    rc = cli_sim_mkdir("replay", dir) ? 2 : st ? 1 : 0;
    if (rc != 2)
        rc = cli_sim_write_rank_timeline(tl, dir, r ? r : "0") ? 2 : rc;
    herd_run_info_clear(&info);
    trace_timeline_destroy(tl);
    trace_destroy(t);
    return rc;
}

int cli_replay_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    rp_args_t a;
    int rc = rp_parse(argc, argv, &a);
    if (rc)
        return rc;
    if (cli_engine_resolve("replay", a.engine, &a.engine))
        return 2;
    if (!strcmp(a.engine, "sim"))
        return rp_sim(&a);
    return rp_real(&a);
}
