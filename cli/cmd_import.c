/* cli/cmd_import.c - `herd import`: PyTorch profiler (Kineto) traces of a
 * real job into herd's files: a trace that replays it, for DDP jobs a
 * model file and a scenario (what-ifs with herd sweep), and the measured
 * timeline (herd compare, herd ddp report --from). Parsing is in
 * trace/kineto*.c, the DDP inference in workload/ddp/infer.c; this file
 * gathers the inputs, fills what the traces lack from the options and
 * writes the directory. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cmd_sim.h"
#include "trace/kineto_import.h"
#include "workload/ddp/infer.h"

#define IMP_MAX_FILES 4096

static const char usage[] =
    "usage: herd import TRACE... | DIR [-o OUT] [--world-size N]\n"
    "         [--ranks-per-node N] [--model FILE] [--bucket-cap-mb X]\n"
    "         [--name NAME]\n"
    "Reads PyTorch profiler traces (torch.profiler export_chrome_trace or\n"
    "tensorboard_trace_handler: one file per traced rank, *.json or\n"
    "*.json.gz, PyTorch 1.13 to 2.x; DIR: every *.json[.gz] in it) and\n"
    "writes OUT (default out/import):\n"
    "  trace.json     every rank's collectives and measured compute (herd\n"
    "                 replay trace.json, or herd sim replay.yaml)\n"
    "  timeline.json  the measured timeline (+ .tsv), for herd compare and\n"
    "                 herd ddp report --from\n"
    "  model.json     DDP jobs: parameters, ready order, measured times\n"
    "  scenario.yaml  DDP jobs: the job for herd ddp run / sim / sweep\n"
    "                 (network: placeholders; fill in or herd calibrate)\n"
    "Traced ranks stand for all (SPMD) when fewer than --world-size.\n"
    "Several traces of one rank are runs of the same job: the model's\n"
    "compute is measured over all their steps (trace and timeline: the\n"
    "first by file name).\n"
    "--model FILE gives the parameters when the trace has no shapes\n"
    "(PyTorch 1.13); --bucket-cap-mb the job's value when known.\n"
    "Exit: 0 ok, 1 imported but the model's buckets differ from the\n"
    "trace's all_reduces, 2 bad usage or unreadable input.\n";

typedef struct imp_args {
    const char *in[IMP_MAX_FILES];
    int nin;
    const char *out, *model, *name;
    long world, rpn;
    double cap_mb;
} imp_args_t;

typedef struct imp_job {
    char *files[IMP_MAX_FILES];
    int nfiles;
    kineto_rank_t *ranks; /* the first run of each rank, then repeats */
    kineto_steps_t *steps;
    size_t n;               /* ranks: the first runs */
    size_t nall;            /* every trace read */
    kineto_steps_t *pooled; /* per rank: the steps of all its runs (shallow
                               copies), or NULL with one run each */
    int world, rpn, ddp;
    ddp_model_t given;
    int have_given;
    ddp_infer_t inf;
    int have_inf;
} imp_job_t;

static int imp_parse(int argc, char **argv, imp_args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->out = "out/import";
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int more = i + 1 < argc;
        if ((!strcmp(s, "-o") || !strcmp(s, "--out")) && more)
            a->out = argv[++i];
        else if (!strcmp(s, "--model") && more)
            a->model = argv[++i];
        else if (!strcmp(s, "--name") && more)
            a->name = argv[++i];
        else if (!strcmp(s, "--world-size") && more) {
            if (cli_parse_int(argv[++i], 1, 1 << 20, &a->world))
                return cli_usage_error("import", "--world-size: expected an "
                                                 "integer >= 1");
        } else if (!strcmp(s, "--ranks-per-node") && more) {
            if (cli_parse_int(argv[++i], 1, 1 << 20, &a->rpn))
                return cli_usage_error("import", "--ranks-per-node: expected "
                                                 "an integer >= 1");
        } else if (!strcmp(s, "--bucket-cap-mb") && more) {
            if (cli_parse_double(argv[++i], &a->cap_mb) || a->cap_mb <= 0)
                return cli_usage_error("import", "--bucket-cap-mb: expected "
                                                 "a number > 0");
        } else if (s[0] == '-')
            return cli_usage_error("import",
                                   "unexpected argument '%s' (see "
                                   "--help)",
                                   s);
        else if (a->nin < IMP_MAX_FILES)
            a->in[a->nin++] = s;
        else
            return cli_usage_error("import", "more than %d traces",
                                   IMP_MAX_FILES);
    }
    if (!a->nin)
        return cli_usage_error("import", "missing TRACE or DIR (see --help)");
    return 0;
}

static int is_trace_name(const char *n)
{
    size_t l = strlen(n);
    return (l > 5 && !strcmp(n + l - 5, ".json")) ||
           (l > 8 && !strcmp(n + l - 8, ".json.gz"));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of the arguments: a folder gives its *.json[.gz], sorted. */
static int imp_files(const imp_args_t *a, imp_job_t *j)
{
    for (int i = 0; i < a->nin; i++) {
        struct stat sb;
        if (stat(a->in[i], &sb)) {
            fprintf(stderr, "herd import: %s: no such file or folder\n",
                    a->in[i]);
            return 2;
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (j->nfiles == IMP_MAX_FILES)
                return cli_usage_error("import", "more than %d traces",
                                       IMP_MAX_FILES);
            j->files[j->nfiles++] = strdup(a->in[i]);
            continue;
        }
        DIR *d = opendir(a->in[i]);
        struct dirent *de;
        int before = j->nfiles;
        while (d && (de = readdir(d))) {
            if (!is_trace_name(de->d_name))
                continue;
            if (j->nfiles == IMP_MAX_FILES) {
                closedir(d);
                return cli_usage_error("import", "%s: more than %d traces",
                                       a->in[i], IMP_MAX_FILES);
            }
            size_t len = strlen(a->in[i]) + strlen(de->d_name) + 2;
            char *p = malloc(len);
            if (p)
                snprintf(p, len, "%s/%s", a->in[i], de->d_name);
            j->files[j->nfiles++] = p;
        }
        if (d)
            closedir(d);
        qsort(j->files + before, (size_t)(j->nfiles - before), sizeof(char *),
              cmp_str);
        if (j->nfiles == before) {
            fprintf(stderr,
                    "herd import: %s: no *.json or *.json.gz traces in "
                    "this folder (expected the files torch.profiler "
                    "writes, e.g. *.pt.trace.json.gz)\n",
                    a->in[i]);
            return 2;
        }
    }
    for (int i = 0; i < j->nfiles; i++)
        if (!j->files[i])
            return 2;
    return 0;
}

static int cmp_rank(const void *a, const void *b)
{
    const kineto_rank_t *x = a, *y = b;
    if (x->rank != y->rank)
        return (x->rank > y->rank) - (x->rank < y->rank);
    return strcmp(x->path, y->path); /* runs in the order of their names */
}

/* Several traces of one rank are runs of the same job (rounds of a
 * capture): the first of each rank (by file name) gives the trace and
 * the timeline, and the compute the model is inferred from is measured
 * over the steps of all of them, so that one noisy run weighs less. The
 * repeats move behind the first runs; j->n counts the first runs. */
/* Two runs are of one job when their last steps issue the same
 * collectives (kind and size, in order). */
static int same_job(const kineto_steps_t *a, const kineto_steps_t *b)
{
    if (!a->n || !b->n)
        return a->n == b->n;
    const kineto_step_t *x = &a->s[a->n - 1], *y = &b->s[b->n - 1];
    if (x->ncolls != y->ncolls)
        return 0;
    for (size_t k = 0; k < x->ncolls; k++)
        if (x->colls[k].coll != y->colls[k].coll ||
            x->colls[k].count != y->colls[k].count)
            return 0;
    return 1;
}

static int imp_pool_runs(imp_job_t *j)
{
    size_t n = j->n, np = 0;
    for (size_t i = 0, f = 0; i < n; i++) {
        if (!i || j->ranks[i].rank != j->ranks[i - 1].rank) {
            np++, f = i;
            continue;
        }
        if (!same_job(&j->steps[f], &j->steps[i])) {
            const kineto_steps_t *a = &j->steps[f], *b = &j->steps[i];
            fprintf(stderr,
                    "herd import: %s and %s are both rank %d but not runs "
                    "of one job: their last steps issue different "
                    "collectives (%zu and %zu; expected one trace per rank, "
                    "or several runs of the same job)\n",
                    j->ranks[f].path, j->ranks[i].path, j->ranks[i].rank,
                    a->n ? a->s[a->n - 1].ncolls : 0,
                    b->n ? b->s[b->n - 1].ncolls : 0);
            return 2;
        }
    }
    j->nall = n;
    if (np == n)
        return 0;
    kineto_rank_t *r = malloc(n * sizeof(*r));
    kineto_steps_t *s = malloc(n * sizeof(*s));
    size_t *runs = calloc(np, sizeof(*runs));
    j->pooled = calloc(np, sizeof(*j->pooled));
    int rc = r && s && runs && j->pooled ? 0 : 2;
    for (int pass = 0; !rc && pass < 2; pass++) {
        size_t q = 0, d = np, cur = 0;
        for (size_t i = 0; i < n; i++) {
            int again = i && j->ranks[i].rank == j->ranks[i - 1].rank;
            size_t at = again ? d++ : (cur = q++);
            kineto_steps_t *p = &j->pooled[cur];
            if (pass == 0) { /* count */
                r[at] = j->ranks[i], s[at] = j->steps[i];
                p->n += j->steps[i].n;
                runs[cur]++;
                continue;
            }
            memcpy(p->s + p->n, j->steps[i].s,
                   j->steps[i].n * sizeof(kineto_step_t));
            p->n += j->steps[i].n;
        }
        for (size_t c = 0; pass == 0 && !rc && c < np; c++) {
            j->pooled[c].s =
                malloc((j->pooled[c].n + 1) * sizeof(kineto_step_t));
            rc = j->pooled[c].s ? 0 : 2;
            j->pooled[c].n = 0;
        }
    }
    for (size_t c = 0; !rc && c < np; c++)
        if (runs[c] > 1)
            printf("rank %d: %zu runs, %zu steps pooled for the model's "
                   "compute (trace and timeline from %s)\n",
                   r[c].rank, runs[c], j->pooled[c].n, r[c].path);
    if (!rc) {
        free(j->ranks), free(j->steps);
        j->ranks = r, j->steps = s, j->n = np;
    } else {
        free(r), free(s);
        for (size_t c = 0; j->pooled && c < np; c++)
            free(j->pooled[c].s);
        free(j->pooled);
        j->pooled = NULL;
    }
    free(runs);
    return rc;
}

static int imp_read(imp_job_t *j)
{
    char err[1024];
    j->ranks = calloc((size_t)j->nfiles, sizeof(kineto_rank_t));
    j->steps = calloc((size_t)j->nfiles, sizeof(kineto_steps_t));
    if (!j->ranks || !j->steps)
        return 2;
    for (int i = 0; i < j->nfiles; i++) {
        if (kineto_read(j->files[i], i, &j->ranks[i], err, sizeof(err))) {
            fprintf(stderr, "herd import: %s\n", err);
            return 2;
        }
        j->n++;
    }
    qsort(j->ranks, j->n, sizeof(kineto_rank_t), cmp_rank);
    for (size_t i = 0; i < j->n; i++) {
        if (kineto_steps(&j->ranks[i], &j->steps[i], err, sizeof(err))) {
            fprintf(stderr, "herd import: %s\n", err);
            return 2;
        }
        size_t ncoll = 0;
        for (size_t k = 0; k < j->steps[i].n; k++)
            ncoll += j->steps[i].s[k].ncolls;
        if (!ncoll) {
            fprintf(stderr,
                    "herd import: %s: %zu step(s) but no collectives in "
                    "them (expected c10d::allreduce_ ..., gloo:all_reduce "
                    "..., record_param_comms or ncclKernel_* events): not "
                    "a distributed job, or the profiler missed them\n",
                    j->ranks[i].path, j->steps[i].n);
            return 2;
        }
    }
    return imp_pool_runs(j);
}

/* World size and ranks per node: options, else the traces. */
static int imp_world(const imp_args_t *a, imp_job_t *j)
{
    int traced_world = 0, top = j->ranks[j->n - 1].rank;
    for (size_t i = 0; i < j->n; i++)
        if (j->ranks[i].world_size > traced_world)
            traced_world = j->ranks[i].world_size;
    j->world = a->world ? (int)a->world : traced_world;
    if (!j->world) {
        j->world = top + 1;
        printf("note: the traces carry no world size (no distributedInfo): "
               "%d from the traced ranks; give --world-size N otherwise\n",
               j->world);
    }
    if (top >= j->world) {
        fprintf(stderr,
                "herd import: rank %d traced but the world size is %d "
                "(--world-size or the trace's distributedInfo)\n",
                top, j->world);
        return 2;
    }
    if (a->world && traced_world && a->world != traced_world)
        printf("note: --world-size %ld differs from the traces' %d: the "
               "job is scaled (SPMD)\n",
               a->world, traced_world);
    if ((int)j->n < j->world)
        printf("SPMD import: %zu of %d ranks traced; the others are taken "
               "to do what rank %d did\n",
               j->n, j->world, j->ranks[0].rank);
    /* ranks per node: traced ranks sharing the first one's host */
    int same = 0, hosts = 1;
    for (size_t i = 0; i < j->n; i++) {
        same += !strcmp(j->ranks[i].host, j->ranks[0].host);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(j->ranks[k].host, j->ranks[i].host))
                break;
            else if (k == i - 1)
                hosts++;
    }
    if (a->rpn)
        j->rpn = (int)a->rpn;
    else if (hosts > 1 && (int)j->n == j->world)
        j->rpn = same;
    else {
        j->rpn = j->world;
        if (!*j->ranks[0].host || (int)j->n < j->world)
            printf("note: ranks per node not known from the traces: all %d "
                   "on one node; give --ranks-per-node N otherwise\n",
                   j->world);
        else if (j->world > 1)
            printf("note: every rank ran on host '%s': one node of %d "
                   "(network namespaces or containers share a host name: "
                   "give --ranks-per-node N if they were separate "
                   "nodes)\n",
                   j->ranks[0].host, j->world);
    }
    return 0;
}

static int imp_ddp(const imp_args_t *a, imp_job_t *j)
{
    char err[2048];
    for (size_t i = 0; i < j->n && !j->ddp; i++)
        for (size_t k = 0; k < j->steps[i].n && !j->ddp; k++)
            for (size_t c = 0; c < j->steps[i].s[k].ncolls; c++)
                j->ddp |= j->steps[i].s[k].colls[c].async &&
                          j->steps[i].s[k].ngrads > 0;
    if (!j->ddp)
        return 0;
    if (a->model) {
        if (ddp_model_load(a->model, &j->given, err, sizeof(err))) {
            fprintf(stderr, "herd import: --model: %s\n", err);
            return 2;
        }
        j->have_given = 1;
    }
    if (ddp_infer(j->pooled ? j->pooled : j->steps, j->n,
                  j->have_given ? &j->given : NULL, a->cap_mb,
                  j->ranks[0].has_dist_info, &j->inf, err, sizeof(err))) {
        fprintf(stderr, "herd import: %s\n", err);
        return 2;
    }
    j->have_inf = 1;
    return 0;
}

static void imp_cluster(FILE *f, const imp_job_t *j)
{
    int nodes = (j->world + j->rpn - 1) / j->rpn;
    fprintf(f, "cluster:\n  nodes: %d\n  gpus_per_node: %d\n", nodes, j->rpn);
    if (nodes * j->rpn != j->world)
        fprintf(f, "  world_size: %d\n", j->world);
    fprintf(f, "  # The network is not in the traces: these are placeholders.\n"
               "  # Fill in your links, or measure them with herd calibrate.\n"
               "  intra: {bandwidth: 10GB/s, latency: 5us}\n"
               "  inter: {bandwidth: 10Gbps, latency: 20us}\n");
}

/* A gloo job's collectives as ProcessGroupGloo runs them: gloo's own
 * ring in 1 MiB segments, two collectives of a group at once. */
static int imp_gloo(const imp_job_t *j)
{
    const char *be = j->ranks[0].backend;
    return !strcmp(be, "gloo") || (!*be && !j->ranks[0].gpu);
}

static void imp_collectives(FILE *f, const imp_job_t *j)
{
    if (imp_gloo(j))
        fprintf(f, "collectives:\n  algorithm: gloo   # the trace's backend "
                   "(docs/network-model.md)\n");
}

static void imp_header(FILE *f, const imp_job_t *j)
{
    const kineto_rank_t *r = &j->ranks[0];
    fprintf(f, "# Imported by herd import from %zu PyTorch profiler trace(s)",
            j->n);
    fprintf(f, " (backend %s%s%s).\n", *r->backend ? r->backend : "unknown",
            *r->nccl_version ? ", NCCL " : "", r->nccl_version);
    if ((int)j->n < j->world)
        fprintf(f,
                "# SPMD: %zu of %d ranks traced; the others do what rank "
                "%d did.\n",
                j->n, j->world, r->rank);
}

static int imp_write_scenarios(const char *dir, const char *name,
                               const imp_job_t *j)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/replay.yaml", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "herd import: %s: cannot write\n", path);
        return 2;
    }
    imp_header(f, j);
    fprintf(f,
            "# Replays the measured job as it ran (herd sim replay.yaml).\n"
            "name: %s-replay\n",
            name);
    imp_cluster(f, j);
    imp_collectives(f, j);
    fprintf(f, "workload:\n  trace: trace.json\nseed: 1\n");
    fclose(f);
    if (!j->have_inf)
        return 0;
    const ddp_infer_t *inf = &j->inf;
    snprintf(path, sizeof(path), "%s/scenario.yaml", dir);
    if (!(f = fopen(path, "w"))) {
        fprintf(stderr, "herd import: %s: cannot write\n", path);
        return 2;
    }
    imp_header(f, j);
    fprintf(f,
            "# The DDP job with the measured model (model.json): what-ifs\n"
            "# with herd sweep scenario.yaml --set ddp.bucket_cap_mb=1,5,25\n"
            "# or --set cluster.nodes=N.\n"
            "name: %s\n",
            name);
    imp_cluster(f, j);
    imp_collectives(f, j);
    int bcast = j->inf.model.buffer_bytes > 0;
    fprintf(f, "workload:\n  ddp:\n    model: model.json\n");
    if (inf->cap_hi_mb < 0)
        fprintf(f,
                "    bucket_cap_mb: %g   # any value >= %g gives the "
                "buckets seen\n",
                inf->cap_mb, inf->cap_lo_mb);
    else
        fprintf(f,
                "    bucket_cap_mb: %g   # values %g to %g give the "
                "buckets seen\n",
                inf->cap_mb, inf->cap_lo_mb, inf->cap_hi_mb);
    if (inf->first_bucket_mb == 0)
        fprintf(f, "    first_bucket_mb: 0   # first bucket capped by "
                   "bucket_cap_mb too (PyTorch 2.x)\n");
    if (imp_gloo(j) && j->ranks[0].nworkers > 1)
        fprintf(f, "    comm_streams: %zu   # gloo's worker threads seen\n",
                j->ranks[0].nworkers);
    if (inf->find_unused)
        fprintf(f, "    find_unused_parameters: true   # the used-parameter "
                   "map was all_reduced\n");
    fprintf(f, "    broadcast_buffers: %s\n    steps: %zu\n",
            bcast ? "true" : "false", j->steps[0].n + 1);
    fprintf(f, "seed: 1\n");
    fclose(f);
    return 0;
}

static void imp_summary(const imp_job_t *j, const char *dir)
{
    size_t ncoll = 0;
    for (size_t k = 0; k < j->steps[0].n; k++)
        ncoll += j->steps[0].s[k].ncolls;
    printf("imported %zu trace(s): world %d, %d per node, %zu steps, %zu "
           "collectives per traced rank\n",
           j->n, j->world, j->rpn, j->steps[0].n, ncoll);
    if (j->have_inf) {
        const ddp_infer_t *inf = &j->inf;
        char seen[2048], imp[2048];
        printf("DDP: %zu parameters (%s), %llu bytes; forward %.3f ms, "
               "backward %.3f ms, optimizer %.3f ms (medians of %zu steps)\n",
               inf->model.nparams,
               inf->from_trace ? "from the trace"
                               : "from "
                                 "--model",
               (unsigned long long)inf->model.total_bytes,
               inf->model.fwd_s * 1e3, ddp_model_bwd_total(&inf->model) * 1e3,
               inf->model.opt_s * 1e3, inf->nsteps);
        if (inf->seen_sizes)
            printf("buckets seen (bytes): %s\n",
                   ddp_infer_list(inf->seen, inf->nseen, seen, sizeof(seen)));
        else
            printf("buckets seen: %zu all_reduce(s) per backward (no sizes "
                   "in the trace)\n",
                   inf->nseen);
        printf("buckets the model implies at bucket_cap_mb %g: %s\n",
               inf->cap_mb,
               ddp_infer_list(inf->implied, inf->nimplied, imp, sizeof(imp)));
        printf("bucket check: %s\n", inf->match ? "ok" : "MISMATCH");
        if (*inf->notes)
            printf("%s", inf->notes);
    } else {
        printf("not a DDP job (no gradient all_reduces in backward): trace "
               "and timeline only\n");
    }
    printf("wrote %s/trace.json, timeline.json/.tsv, replay.yaml%s\n", dir,
           j->have_inf ? ", model.json, scenario.yaml" : "");
}

static int imp_write(const imp_args_t *a, imp_job_t *j)
{
    char err[2048], path[4096];
    const char *dir = a->out;
    kineto_import_opts_t o = {.ranks_per_node = j->rpn};
    if (j->have_inf) {
        if (!j->inf.seen_sizes) {
            o.bucket_bytes = j->inf.implied;
            o.nbuckets = j->inf.nimplied;
        }
        o.buffer_bytes = j->inf.model.buffer_bytes;
    }
    trace_t *t = NULL;
    trace_timeline_t *tl = NULL;
    int rc = cli_sim_mkdir("import", dir) ? 2 : 0;
    if (!rc && kineto_build_trace(j->ranks, j->steps, j->n, j->world,
                                  a->name ? a->name : "imported", &o, &t, err,
                                  sizeof(err)))
        rc = 2;
    if (!rc && kineto_build_timeline(j->ranks, j->steps, j->n, &o, &tl, err,
                                     sizeof(err)))
        rc = 2;
    if (rc == 2 && *err)
        fprintf(stderr, "herd import: %s\n", err);
    snprintf(path, sizeof(path), "%s/trace.json", dir);
    if (!rc && trace_write_json(t, path, err, sizeof(err)))
        rc = 2;
    snprintf(path, sizeof(path), "%s/timeline.json", dir);
    if (!rc && trace_timeline_write_chrome(tl, path, err, sizeof(err)))
        rc = 2;
    snprintf(path, sizeof(path), "%s/timeline.tsv", dir);
    if (!rc && trace_timeline_write_tsv(tl, path, err, sizeof(err)))
        rc = 2;
    snprintf(path, sizeof(path), "%s/model.json", dir);
    if (!rc && j->have_inf &&
        ddp_infer_write_model(&j->inf, path, err, sizeof(err)))
        rc = 2;
    if (rc == 2 && *err)
        fprintf(stderr, "herd import: %s\n", err);
    if (!rc)
        rc = imp_write_scenarios(dir, a->name ? a->name : "imported", j);
    trace_destroy(t);
    trace_timeline_destroy(tl);
    if (rc)
        return rc;
    imp_summary(j, dir);
    if (j->have_inf && !j->inf.match) {
        char seen[2048], imp[2048];
        fprintf(
            stderr,
            "herd import: bucket check failed: the trace's all_reduces "
            "%s %s but the model implies %s at bucket_cap_mb %g\n",
            j->inf.seen_sizes ? "are" : "number",
            ddp_infer_list(j->inf.seen, j->inf.nseen, seen, sizeof(seen)),
            ddp_infer_list(j->inf.implied, j->inf.nimplied, imp, sizeof(imp)),
            j->inf.cap_mb);
        return 1;
    }
    return 0;
}

int cli_import_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, usage))
        return 0;
    imp_args_t a;
    imp_job_t j;
    memset(&j, 0, sizeof(j));
    int rc = imp_parse(argc, argv, &a);
    if (!rc)
        rc = imp_files(&a, &j);
    if (!rc)
        rc = imp_read(&j);
    if (!rc)
        rc = imp_world(&a, &j);
    if (!rc)
        rc = imp_ddp(&a, &j);
    if (!rc)
        rc = imp_write(&a, &j);
    for (size_t i = 0; i < (j.nall ? j.nall : j.n); i++) {
        kineto_steps_fini(&j.steps[i]);
        kineto_rank_fini(&j.ranks[i]);
    }
    for (size_t i = 0; j.pooled && i < j.n; i++)
        free(j.pooled[i].s); /* shallow: the steps belong to j.steps */
    free(j.pooled);
    free(j.steps);
    free(j.ranks);
    for (int i = 0; i < j.nfiles; i++)
        free(j.files[i]);
    if (j.have_given)
        ddp_model_fini(&j.given);
    if (j.have_inf)
        ddp_infer_fini(&j.inf);
    return rc;
}
