/* cli/cmd_sweep.c - `herd sweep`: run a scenario once per value of one or
 * more keys (`--set KEY=V1,V2,...`, any scenario key), in parallel worker
 * processes, then report (cmd_sweep_report.c): a table with the best row
 * and the values within a tolerance of it marked, a recommendation that
 * keeps the scenario's own value when it is among them, a TSV and a plot.
 *
 * Under mpirun or srun the processes of the job share the runs
 * (cmd_sweep_mpi.c) and rank 0 reports.
 *
 * DDP scenarios report steady-state step time, exposed communication,
 * overlap and bucket count (cmd_ddp_run.c runs them); trace workloads
 * report the simulated makespan. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"
#include "cli/cmd_fsdp.h"
#include "cli/cmd_parallel.h"
#include "cli/cmd_sim.h"
#include "cli/cmd_sweep.h"
#include "core/steplog.h"
#include "trace/replay.h"

static const char usage[] =
    "usage: herd sweep SCENARIO --set KEY=V1,V2,... [--set KEY=V]...\n"
    "         [--tolerance PCT] [--uncertainty VALIDATION] [--out DIR]\n"
    "         [--jobs N] [--no-plot] [--quiet] [--no-mpi]\n"
    "Runs SCENARIO on the simulator for every value (the cross product when\n"
    "several keys have lists); KEY is any scenario key (cluster.nodes,\n"
    "collectives.algorithm, cluster.inter.bandwidth, ddp.bucket_cap_mb,\n"
    "...). Prints a table (best row marked *, the values within PCT percent\n"
    "of the best marked =; default 2), a recommendation (the scenario's own\n"
    "value when it is within PCT of the best: a smaller gain is noise, not a\n"
    "reason to change), and writes DIR/sweep.tsv (one numeric key) and the\n"
    "plot DIR/sweep.png/.svg of step time and exposed communication against\n"
    "the first key (a line per value of the second), for FSDP and parallel\n"
    "jobs DIR/memory.png/.svg (memory per rank by part), each with the .dat\n"
    "and .gp that draw it (DIR: sweep-out). --jobs: worker processes\n"
    "(default: one per CPU). Under mpirun or srun (herd built with the mpi\n"
    "engine) the runs are shared by the job's processes (one worker each\n"
    "unless --jobs) and rank 0 reports, as one process would; --no-mpi:\n"
    "each process runs the whole sweep. --uncertainty: the points of a\n"
    "validation (herd validate --rates' points.tsv, herd compare's\n"
    "compare.tsv, or a directory holding one): the report gives the\n"
    "model's median and p95 |error| from them and marks ~ the values within\n"
    "the median of the best, which herd cannot tell apart from it.\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Split "1,2,[a, b]" at top-level commas (in place). */
static int split_values(char *s, cli_sweep_axis_t *ax)
{
    int depth = 0;
    ax->n = 0;
    ax->vals[ax->n++] = s;
    for (char *p = s; *p; p++) {
        depth += (*p == '[' || *p == '{') - (*p == ']' || *p == '}');
        if (*p == ',' && depth == 0) {
            if (ax->n == SWEEP_MAX_VALUES)
                return -1;
            *p = '\0';
            ax->vals[ax->n++] = p + 1;
        }
    }
    for (int i = 0; i < ax->n; i++)
        if (!*ax->vals[i])
            return -1;
    return 0;
}

static int add_set(cli_sweep_args_t *a, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return cli_usage_error("sweep", "--set %s: expected KEY=VALUE", arg);
    if (a->nstorage == SWEEP_MAX_SETS)
        return cli_usage_error("sweep", "too many --set options");
    char *copy = strdup(arg);
    if (!copy)
        return 2;
    a->storage[a->nstorage++] = copy;
    cli_sweep_axis_t tmp = {{0}, {0}, 0};
    char *val = copy + (eq - arg) + 1;
    if (split_values(val, &tmp))
        return cli_usage_error("sweep", "--set %s: bad value list", arg);
    if (tmp.n == 1) {
        a->fixed[a->nfixed++] = copy;
        return 0;
    }
    if (a->naxes == SWEEP_MAX_AXES)
        return cli_usage_error("sweep", "at most %d swept keys",
                               SWEEP_MAX_AXES);
    copy[eq - arg] = '\0';
    snprintf(tmp.key, sizeof(tmp.key), "%s", copy);
    a->axes[a->naxes++] = tmp;
    return 0;
}

static int parse_args(int argc, char **argv, cli_sweep_args_t *a)
{
    long n;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int rc = 0;
        if (!strcmp(s, "--no-plot"))
            a->no_plot = 1;
        else if (!strcmp(s, "--quiet"))
            a->quiet = 1;
        else if (!strcmp(s, "--no-mpi"))
            a->no_mpi = 1;
        else if (s[0] == '-' && i + 1 >= argc)
            rc = cli_usage_error("sweep", "option '%s' needs a value", s);
        else if (!strcmp(s, "--set"))
            rc = add_set(a, argv[++i]);
        else if (!strcmp(s, "--out"))
            a->out = argv[++i];
        else if (!strcmp(s, "--jobs") && !cli_parse_int(argv[++i], 1, 256, &n))
            a->jobs = (int)n, a->jobs_set = 1;
        else if (!strcmp(s, "--tolerance")) {
            if (cli_parse_double(argv[++i], &a->tolerance) ||
                a->tolerance < 0 || a->tolerance > 1000)
                rc = cli_usage_error("sweep",
                                     "--tolerance '%s': expected a "
                                     "percentage in [0, 1000]",
                                     argv[i]);
        } else if (!strcmp(s, "--uncertainty")) {
            char err[1200];
            a->uncertainty_path = argv[++i];
            if (cli_uncertainty_load(a->uncertainty_path, &a->unc, err,
                                     sizeof(err)) != 0) {
                fprintf(stderr, "herd sweep: --uncertainty: %s\n", err);
                rc = 2;
            }
        } else if (s[0] == '-')
            rc = cli_usage_error("sweep", "bad option '%s'", s);
        else if (!a->scenario)
            a->scenario = s;
        else
            rc = cli_usage_error("sweep", "unexpected '%s'", s);
        if (rc)
            return rc;
    }
    if (!a->scenario)
        return cli_usage_error("sweep", "missing SCENARIO (see --help)");
    if (!a->naxes)
        return cli_usage_error("sweep", "nothing to sweep: give --set "
                                        "KEY=V1,V2,...");
    return 0;
}

int cli_sweep_ncombos(const cli_sweep_args_t *a)
{
    int n = 1;
    for (int i = 0; i < a->naxes; i++)
        n *= a->axes[i].n;
    return n;
}

int cli_sweep_value_of(const cli_sweep_args_t *a, int c, int ax)
{
    for (int i = a->naxes - 1; i > ax; i--)
        c /= a->axes[i].n;
    return c % a->axes[ax].n;
}

/* A trace or message-size workload: its simulated makespan. */
static int run_trace_workload(trace_scenario_t *sc, cli_sweep_row_t *row)
{
    char err[1024];
    int world = trace_scenario_world_size(sc);
    trace_t *t = NULL, *r = NULL;
    herd_status_t st = HERD_ERR_UNSUPPORTED;
    if (sc->wl_kind == TRACE_WL_SWEEP)
        st = trace_from_sweep(&sc->sweep, world, &t);
    else if (sc->wl_kind == TRACE_WL_TRACE)
        st = trace_read_json(sc->trace_path, &t, err, sizeof(err));
    if (st == HERD_OK && t->world_size != world) {
        st = trace_rescale(t, world, &r, err, sizeof(err));
        trace_destroy(t);
        t = r;
    }
    if (st != HERD_OK) {
        trace_destroy(t);
        fprintf(stderr, "herd sweep: the scenario has no DDP or trace "
                        "workload to run\n");
        return 2;
    }
    trace_replay_t rp;
    trace_replay_init(&rp, t);
    memcpy(rp.algo, sc->algo, sizeof(rp.algo));
    rp.channels = sc->channels;
    rp.chunk_bytes = sc->chunk_bytes;
    rp.steps = sc->steps;
    herd_init_t init = {.backend = "sim",
                        .world_size = world,
                        .timeout_s = sc->timeout_s,
                        .engine_opts = &sc->sim};
    herd_run_info_t info = {0};
    row->status = herd_run(&init, trace_replay_main, &rp, &info);
    row->step_s = (double)info.end_time_ns * 1e-9;
    herd_run_info_clear(&info);
    trace_destroy(t);
    return 0;
}

static int run_ddp_workload(trace_scenario_t *sc, cli_sweep_row_t *row)
{
    ddp_job_t *job = NULL;
    cli_ddp_result_t res;
    if (cli_ddp_make_job("sweep", sc, &job))
        return 2;
    int rc = cli_ddp_simulate(sc, job, NULL, NULL, &res);
    if (!rc) {
        row->ddp = 1;
        row->status = res.status;
        if (res.status == HERD_OK && res.diagnosis[0])
            row->status = HERD_ERR_ABORTED; /* a rank raised */
        row->step_s = res.summary.step_s;
        row->exposed_s = res.summary.exposed_s;
        row->comm_s = res.summary.comm_s;
        row->overlap = res.summary.overlap;
        row->buckets = (long)job->rebuilt.n;
        cli_ddp_result_fini(&res);
    }
    ddp_job_destroy(job);
    return rc;
}

/* An FSDP scenario: the same columns, units in place of buckets; a
 * configuration over fsdp.gpu_mem is marked, never the best. */
static int run_fsdp_workload(trace_scenario_t *sc, cli_sweep_row_t *row)
{
    fsdp_job_t *job = NULL;
    cli_fsdp_result_t res;
    if (cli_fsdp_make_job("sweep", sc, &job))
        return 2;
    int rc = cli_fsdp_simulate(sc, job, NULL, NULL, &res);
    if (!rc) {
        row->ddp = 2;
        row->status = res.status;
        row->step_s = res.summary.step_s;
        row->exposed_s = res.summary.exposed_s;
        row->comm_s = res.summary.comm_s;
        row->overlap = res.summary.overlap;
        row->buckets = (long)job->units.n;
        const fsdp_memory_t *m = &res.summary.mem;
        if (!m->host) { /* cpu_offload: the shards live on the host */
            row->mem_part[0] = (double)m->params;
            row->mem_part[1] = (double)m->grads;
            row->mem_part[2] = (double)m->optimizer;
        }
        row->mem_part[3] = (double)m->unsharded;
        row->nofit = !res.summary.fits; /* marked, never the best */
        row->mem_limit = wl_gpu_mem_bytes(job->cfg.gpu_mem_gib);
        cli_fsdp_result_fini(&res);
    }
    fsdp_job_destroy(job);
    return rc;
}

/* A 3D-parallel scenario: the idle time (bubble and exposed
 * communication) as the exposed column, the memory per rank in place of
 * buckets; a layout over parallel.gpu_mem is marked, never the best. */
static int run_parallel_workload(trace_scenario_t *sc, cli_sweep_row_t *row)
{
    par_job_t *job = NULL;
    cli_parallel_result_t res;
    if (cli_parallel_make_job("sweep", sc, &job))
        return 2;
    int rc = cli_parallel_simulate(sc, job, NULL, NULL, &res);
    if (!rc) {
        const par_summary_t *s = &res.summary;
        double comm = 0;
        for (int k = 0; k < PAR_NCAT; k++)
            comm += s->comm_s[k];
        row->ddp = 3;
        row->status = res.status;
        row->step_s = s->step_s;
        row->exposed_s = s->idle_s;
        row->comm_s = comm;
        row->overlap = comm > 0 && s->idle_s < comm ? 1 - s->idle_s / comm : 0;
        row->buckets = job->pp;
        row->mem_gib = (double)s->mem.total / 1073741824.0;
        row->nofit = !s->fits;
        row->mem_part[0] = (double)s->mem.params;
        row->mem_part[1] = (double)s->mem.grads;
        row->mem_part[2] = (double)s->mem.optimizer;
        row->mem_part[3] = (double)s->mem.gathered;
        row->mem_part[4] = (double)s->mem.activations;
        row->mem_limit = wl_gpu_mem_bytes(job->cfg.gpu_mem_gib);
        cli_parallel_result_fini(&res);
    }
    par_job_destroy(job);
    return rc;
}

/* The --set list of combination c: the fixed sets, then key=value for
 * each axis (written into buf). Shared by planning and running so both
 * load exactly the same scenario. Returns the number of sets. */
static int combo_sets(const cli_sweep_args_t *a, int c, char **sets,
                      char buf[][1024])
{
    int n = 0;
    for (int i = 0; i < a->nfixed; i++)
        sets[n++] = a->fixed[i];
    for (int ax = 0; ax < a->naxes; ax++) {
        snprintf(buf[ax], sizeof(buf[ax]), "%s=%s", a->axes[ax].key,
                 a->axes[ax].vals[cli_sweep_value_of(a, c, ax)]);
        sets[n++] = buf[ax];
    }
    return n;
}

static void run_one(const cli_sweep_args_t *a, int c, cli_sweep_row_t *row)
{
    char *sets[SWEEP_MAX_SETS + SWEEP_MAX_AXES];
    char buf[SWEEP_MAX_AXES][1024];
    double t0 = now_s();
    memset(row, 0, sizeof(*row));
    int n = combo_sets(a, c, sets, buf);
    trace_scenario_t *sc = NULL;
    row->rc = cli_ddp_load_scenario("sweep", a->scenario, sets, n, &sc);
    if (!row->rc)
        row->rc = sc->wl_kind == TRACE_WL_DDP    ? run_ddp_workload(sc, row)
                  : sc->wl_kind == TRACE_WL_FSDP ? run_fsdp_workload(sc, row)
                  : sc->wl_kind == TRACE_WL_PARALLEL
                      ? run_parallel_workload(sc, row)
                      : run_trace_workload(sc, row);
    trace_scenario_destroy(sc);
    row->wall_s = now_s() - t0;
    row->done = 1;
}

static void progress(const cli_sweep_args_t *a, int done, int total, double t0)
{
    const char *force = getenv("HERD_PROGRESS");
    if (a->quiet || total < 2 ||
        !(isatty(STDERR_FILENO) || (force && !strcmp(force, "1"))))
        return;
    int width = 30, fill = done * width / total;
    fprintf(stderr, "\r[%.*s%.*s] %d/%d  %.1f s", fill,
            "##############################", width - fill,
            "..............................", done, total, now_s() - t0);
    if (done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

typedef struct sweep_msg {
    int c;
    cli_sweep_row_t row;
} sweep_msg_t;

/* Which worker runs a combination, or which earlier combination's
 * result it shares (DDP runs whose bucket layouts and other settings are
 * identical, e.g. two caps that bucket the same way). */
typedef struct plan {
    int same_as; /* -1: runs itself */
    int current; /* 1: the scenario as given (its own values) */
    int worker;  /* of its process */
    int rank;    /* the process of an MPI job that runs it (0 alone) */
    long cost;   /* collectives, roughly */
    uint64_t print;
} plan_t;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t layout_print(uint64_t h, const ddp_buckets_t *bs)
{
    h = fnv(h, &bs->n, sizeof(bs->n));
    for (size_t k = 0; k < bs->n; k++) {
        h = fnv(h, bs->b[k].params, bs->b[k].nparams * sizeof(size_t));
        h = fnv(h, &bs->b[k].nparams, sizeof(size_t));
    }
    return h;
}

/* The scenario as YAML (trace_scenario_write: every setting, defaults
 * included), so two loads compare equal exactly when they set the same. */
static char *scenario_text(const trace_scenario_t *sc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    herd_status_t st = trace_scenario_write(sc, f);
    fclose(f);
    if (st != HERD_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Fingerprint and cost of one combination, and whether it is the
 * scenario as given (`base`: its text); errors are left for the run to
 * report. */
static void plan_one(const cli_sweep_args_t *a, int c, const char *base,
                     plan_t *p)
{
    char *sets[SWEEP_MAX_SETS + SWEEP_MAX_AXES], buf[SWEEP_MAX_AXES][1024];
    int n = combo_sets(a, c, sets, buf);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int ax = 0; ax < a->naxes; ax++)
        if (strcmp(a->axes[ax].key, "ddp.bucket_cap_mb"))
            h = fnv(h, buf[ax], strlen(buf[ax]) + 1);
    trace_scenario_t *sc = NULL;
    ddp_job_t *job = NULL;
    p->same_as = -1;
    p->cost = 1;
    p->print = (uint64_t)c; /* unique unless a DDP layout proves equal */
    p->current = 0;
    if (!cli_ddp_load_scenario("sweep", a->scenario, sets, n, &sc) && base) {
        char *text = scenario_text(sc);
        p->current = text && !strcmp(text, base);
        free(text);
    }
    if (sc && sc->wl_kind == TRACE_WL_DDP &&
        !cli_ddp_make_job("sweep", sc, &job)) {
        p->cost = (long)(job->initial.n + job->rebuilt.n + 1);
        p->print = layout_print(layout_print(h, &job->initial), &job->rebuilt);
    }
    ddp_job_destroy(job);
    trace_scenario_destroy(sc);
}

/* The scenario with the fixed --set values only, as text (NULL if it does
 * not load); its name goes to a->name. */
static char *base_text(cli_sweep_args_t *a)
{
    trace_scenario_t *sc = NULL;
    char *text = NULL;
    if (!cli_ddp_load_scenario("sweep", a->scenario, a->fixed, a->nfixed,
                               &sc)) {
        snprintf(a->name, sizeof(a->name), "%s",
                 sc->name && *sc->name ? sc->name : a->scenario);
        text = scenario_text(sc);
    }
    trace_scenario_destroy(sc);
    return text;
}

/* Fingerprints (silently: the runs print their own errors), duplicates,
 * the combination that is the scenario as given (*current, -1: none),
 * then longest-first assignment to the least loaded worker. */
static void make_plan(cli_sweep_args_t *a, plan_t *plan, int jobs, int *current)
{
    int total = cli_sweep_ncombos(a), saved = dup(STDERR_FILENO);
    long load[256] = {0};
    FILE *null = fopen("/dev/null", "w");
    fflush(stderr);
    if (null && saved >= 0)
        dup2(fileno(null), STDERR_FILENO);
    char *base = base_text(a);
    *current = -1;
    for (int c = 0; c < total; c++) {
        plan_one(a, c, base, &plan[c]);
        if (plan[c].current && *current < 0)
            *current = c;
        for (int d = 0; d < c && plan[c].same_as < 0; d++)
            if (plan[d].same_as < 0 && plan[d].print == plan[c].print)
                plan[c].same_as = d;
    }
    free(base);
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
    if (null)
        fclose(null);
    for (int left = total; left > 0; left--) {
        int big = -1, w = 0;
        for (int c = 0; c < total; c++)
            if (plan[c].same_as < 0 && plan[c].worker == 0 &&
                (big < 0 || plan[c].cost > plan[big].cost))
                big = c;
        if (big < 0)
            break;
        for (int k = 1; k < jobs; k++)
            w = load[k] < load[w] ? k : w;
        load[w] += plan[big].cost;
        plan[big].worker = w + 1; /* 1-based while assigning */
    }
    for (int c = 0; c < total; c++)
        plan[c].worker -= plan[c].same_as < 0;
}

/* Worker w runs its combinations and writes (index, row) for each. */
static void worker(const cli_sweep_args_t *a, const plan_t *plan, int me, int w,
                   int fd)
{
    for (int c = 0; c < cli_sweep_ncombos(a); c++) {
        if (plan[c].same_as >= 0 || plan[c].rank != me || plan[c].worker != w)
            continue;
        sweep_msg_t msg;
        msg.c = c;
        run_one(a, c, &msg.row);
        if (write(fd, &msg, sizeof(msg)) != (ssize_t)sizeof(msg))
            _exit(1);
    }
    _exit(0);
}

/* Read results from every worker as they come (poll), updating the bar. */
static void gather(const cli_sweep_args_t *a, int *fds, int jobs, int runs,
                   cli_sweep_row_t *rows, double t0)
{
    struct pollfd pfd[256];
    int open = jobs, got = 0;
    for (int w = 0; w < jobs; w++)
        pfd[w] = (struct pollfd){.fd = fds[w], .events = POLLIN};
    while (open > 0 && poll(pfd, (nfds_t)jobs, -1) >= 0) {
        for (int w = 0; w < jobs; w++) {
            if (pfd[w].fd < 0 || !pfd[w].revents)
                continue;
            sweep_msg_t msg;
            if (read(pfd[w].fd, &msg, sizeof(msg)) != (ssize_t)sizeof(msg)) {
                close(pfd[w].fd);
                pfd[w].fd = -1;
                open--;
                continue;
            }
            if (msg.c >= 0 && msg.c < cli_sweep_ncombos(a))
                rows[msg.c] = msg.row;
            progress(a, ++got, runs, t0);
        }
    }
}

static int spawn(const cli_sweep_args_t *a, const plan_t *plan, int me,
                 int jobs, int runs, cli_sweep_row_t *rows, double t0)
{
    int fds[256];
    pid_t pids[256];
    if (jobs > 1 && core_steplog_dir()) { /* one file, many writers */
        fprintf(stderr,
                "herd sweep: HERD_STEPS_DIR ignored with --jobs %d: the "
                "workers would write one file at once (with --jobs 1 it "
                "holds the last run's steps)\n",
                jobs);
        unsetenv("HERD_STEPS_DIR");
    }
    fflush(NULL);
    for (int w = 0; w < jobs; w++) {
        int p[2];
        if (pipe(p) || (pids[w] = fork()) < 0)
            return cli_usage_error("sweep", "cannot start workers: %s",
                                   strerror(errno));
        if (pids[w] == 0) {
            close(p[0]);
            for (int k = 0; k < w; k++)
                close(fds[k]);
            /* the workers simulate at once: each gets its share of the
             * machine's memory (sim/mem.c), unless the user said */
            char share[16];
            snprintf(share, sizeof(share), "%d", jobs);
            if (jobs > 1 && !getenv("HERD_SIM_MEM_LIMIT_MIB"))
                setenv("HERD_SIM_MEM_SHARE", share, 0);
            worker(a, plan, me, w, p[1]);
        }
        close(p[1]);
        fds[w] = p[0];
    }
    gather(a, fds, jobs, runs, rows, t0);
    for (int w = 0; w < jobs; w++)
        waitpid(pids[w], NULL, 0);
    return 0;
}

/* The plan's workers across the processes of an MPI job: worker w of
 * size x jobs goes to rank w % size, as its worker w / size. */
static void share(plan_t *plan, int total, int size)
{
    for (int c = 0; c < total; c++)
        if (plan[c].same_as < 0) {
            plan[c].rank = plan[c].worker % size;
            plan[c].worker /= size;
        }
}

/* Runs this process's share (all of it alone); rank 0 gathers the rows
 * of the others. *nruns: the simulations of the whole sweep. */
static int run_all(cli_sweep_args_t *a, cli_sweep_world_t *world,
                   cli_sweep_row_t *rows, int *nruns, int *current)
{
    int total = cli_sweep_ncombos(a), runs = 0, mine = 0, me = world->rank;
    /* under MPI one process per rank unless --jobs says more: the job
     * already has a process per core it was given */
    int jobs = a->jobs_set || world->size == 1 ? a->jobs : 1;
    jobs = jobs > 0 ? jobs : 1;
    long all = (long)jobs * world->size;
    all = all > total ? total : all;
    all = all > 256 ? 256 : all;
    double t0 = now_s();
    plan_t *plan = calloc((size_t)total, sizeof(plan_t));
    int *owner = calloc((size_t)total, sizeof(int));
    if (!plan || !owner) {
        free(plan);
        free(owner);
        return 2;
    }
    make_plan(a, plan, (int)all, current);
    share(plan, total, world->size);
    for (int c = 0; c < total; c++) {
        runs += plan[c].same_as < 0;
        mine += plan[c].same_as < 0 && plan[c].rank == me;
        owner[c] = plan[c].same_as < 0 ? plan[c].rank : -1;
    }
    jobs = jobs > mine ? mine : jobs;
    int rc = 0;
    if (jobs <= 1) {
        for (int c = 0, k = 0; c < total; c++)
            if (plan[c].same_as < 0 && plan[c].rank == me) {
                run_one(a, c, &rows[c]);
                progress(a, ++k, mine, t0);
            }
    } else {
        rc = spawn(a, plan, me, jobs, mine, rows, t0);
    }
    if (!rc)
        rc = cli_sweep_world_gather(world, owner, total, rows);
    for (int c = 0; c < total; c++)
        if (plan[c].same_as >= 0)
            rows[c] = rows[plan[c].same_as];
    free(plan);
    free(owner);
    *nruns = runs;
    return rc;
}

static void free_args(cli_sweep_args_t *a)
{
    for (int i = 0; i < a->nstorage; i++)
        free(a->storage[i]);
}

int cli_sweep_main(int argc, char **argv)
{
    cli_ddp_progress_off(); /* the sweep's own bar says how far it is */
    if (cli_wants_help(argc, argv, usage))
        return 0;
    cli_sweep_args_t *a = calloc(1, sizeof(*a));
    if (!a)
        return 2;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    a->jobs = cpus > 0 ? (int)cpus : 1;
    a->tolerance = SWEEP_DEFAULT_TOLERANCE;
    int rc = parse_args(argc, argv, a);
    cli_sweep_row_t *rows = NULL;
    if (!rc && !(rows = calloc((size_t)cli_sweep_ncombos(a), sizeof(*rows))))
        rc = 2;
    double t0 = now_s();
    int runs = 0, current = -1;
    cli_sweep_world_t world = {NULL, 0, 1};
    if (!rc)
        rc = cli_sweep_world_open(a, &world);
    if (!rc && world.rank != 0)
        a->quiet = 1; /* rank 0 shows how far it is */
    if (!rc)
        rc = run_all(a, &world, rows, &runs, &current);
    cli_sweep_world_close(&world);
    if (!rc && world.rank != 0) {
        /* the others' rows went to rank 0; their exit says if one failed */
        for (int c = 0; c < cli_sweep_ncombos(a); c++)
            rc = rc ? rc : rows[c].rc ? 2 : 0;
    } else if (!rc) {
        if (runs < cli_sweep_ncombos(a))
            printf("sweep of %s: %d runs (%d simulated, the others share "
                   "a bucket layout) in %.2f s\n",
                   a->scenario, cli_sweep_ncombos(a), runs, now_s() - t0);
        else
            printf("sweep of %s: %d runs in %.2f s\n", a->scenario,
                   cli_sweep_ncombos(a), now_s() - t0);
        if (world.size > 1)
            printf("shared by %d processes of an MPI job\n", world.size);
        rc = cli_sweep_report(a, rows, current);
        for (int c = 0; !rc && c < cli_sweep_ncombos(a); c++)
            rc = rows[c].rc ? 2 : rows[c].done ? 0 : 1;
    }
    free(rows);
    free_args(a);
    free(a);
    return rc;
}
