/* cli/cmd_validate_torch.c - `herd validate --torch`: real PyTorch as the
 * measured side. The scenario's DDP job becomes a job spec (parameters in
 * DDP's order with their shapes, the ready order, and the compute herd's
 * model gives each step: forward, per-parameter backward, optimizer; DDP's
 * options; the one-gradient stragglers); python/herd_torch's `ddp-run`
 * runs it as a DistributedDataParallel job on gloo, one rank per testbed
 * host, and writes per-rank timelines of its buckets' all_reduces and its
 * steps. Those records are then given the (group, sequence) of the
 * predicted record they stand for (same rank, label and bytes, counted
 * from the last step back), so that `herd compare` and the report match
 * them as they match herd's own engines. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cmd_ddp.h"
#include "cli/cmd_validate.h"
#include "core/stats.h"
#include "trace/timeline.h"

/* Where python/herd_torch is: HERD_PYTHON_DIR, else beside plots/. */
static void python_dir(char *buf, size_t len)
{
    const char *env = getenv("HERD_PYTHON_DIR");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else
        snprintf(buf, len, "%s/../python", cli_plots_dir());
}

/* The last non-empty line of a file (a child's error), or "". */
static void last_line(const char *path, char *buf, size_t len)
{
    char line[512];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0])
            snprintf(buf, len, "%s", line);
    }
    if (f)
        fclose(f);
}

int validate_torch_probe(const vopts_t *o, const trace_scenario_t *sc)
{
    char log[1024], why[512];
    if (sc->wl_kind != TRACE_WL_DDP)
        return cli_usage_error("validate",
                               "--torch runs a DDP job: %s has "
                               "no workload: ddp: section",
                               o->scenario);
    if (o->from) /* the PyTorch runs are DIR's: nothing to import here */
        return 0;
    snprintf(log, sizeof(log), "%s/torch-probe.log", o->out);
    remove(log);
    char *argv[] = {(char *)o->python, "-c",
                    "import torch, torch.distributed as d; "
                    "assert d.is_available(), 'no torch.distributed'; "
                    "print('torch', torch.__version__)",
                    NULL};
    if (validate_run_prog(argv, log) != 0) {
        last_line(log, why, sizeof(why));
        fprintf(stderr,
                "herd validate: --torch: skipped: %s cannot import "
                "torch (%s); install python3-torch or give --python PATH\n",
                o->python, why[0] ? why : "see the log");
        return 77;
    }
    last_line(log, why, sizeof(why));
    printf("validate: --torch: %s (%s)\n", why, o->python);
    herd_algo_t a = sc->algo[HERD_COLL_ALL_REDUCE];
    if (a != HERD_ALGO_GLOO)
        printf("validate: --torch: note: the prediction runs all_reduce as "
               "algorithm %s; PyTorch's gloo backend runs gloo's own ring "
               "(collectives: {algorithm: gloo})\n",
               a == HERD_ALGO_AUTO ? "auto" : herd_algo_name(a));
    return 0;
}

/* DDP options the PyTorch job cannot reproduce here: say which. */
static int unsupported(const ddp_cfg_t *c, char *why, size_t len)
{
    const char *what = c->grad_accum > 1          ? "ddp.grad_accum > 1"
                       : c->hook != DDP_HOOK_NONE ? "ddp.comm_hook"
                       : c->have_grad_dtype       ? "ddp.grad_dtype"
                       : c->unused_params.n       ? "ddp.unused_params"
                       : c->join                  ? "ddp.join"
                       : c->eval_every            ? "ddp.eval_every"
                       : c->ckpt_every            ? "ddp.checkpoint_every"
                       : c->dataset_size || c->shards || c->shard_sizes.n
                           ? "a dataset (ddp.dataset_size, shards)"
                           : NULL;
    for (size_t i = 0; !what && i < c->grad_delays.n; i++)
        if (c->grad_delays.d[i].only_grad)
            what = "stragglers.grads with affects: grad (a hook blocks the "
                   "autograd thread: use affects: backward)";
    if (what)
        snprintf(why, len, "--torch does not reproduce %s", what);
    return what != NULL;
}

static json_t *spec_params(const ddp_model_t *m)
{
    json_t *ps = json_array();
    for (size_t i = 0; ps && i < m->nparams; i++) {
        const ddp_param_t *p = &m->params[i];
        json_t *shape = json_array();
        for (int d = 0; d < p->ndim; d++)
            json_array_append_new(shape, json_integer(p->shape[d]));
        json_array_append_new(
            ps, json_pack("{s:s, s:o, s:s, s:f}", "name",
                          p->name ? p->name : "", "shape", shape, "dtype",
                          herd_dtype_name(p->dtype), "backward_s", p->bwd_s));
    }
    return ps;
}

/* The job spec ddp-run reads (python/herd_torch/ddp_run.py). */
static json_t *job_spec(const ddp_job_t *job, char *err, size_t errlen)
{
    const ddp_model_t *m = &job->model;
    json_t *order = json_array(), *strag = json_array();
    for (size_t i = 0; i < m->nparams; i++)
        json_array_append_new(order, json_integer((json_int_t)job->ready[i]));
    for (size_t i = 0; i < job->cfg.grad_delays.n; i++) {
        const ddp_grad_delay_t *d = &job->cfg.grad_delays.d[i];
        size_t idx;
        if (ddp_grad_delay_index(m, d->param, i, &idx, err, errlen) !=
            HERD_OK) {
            json_decref(order);
            json_decref(strag);
            return NULL;
        }
        json_array_append_new(strag,
                              json_pack("{s:i, s:I, s:s, s:f}", "rank", d->rank,
                                        "param", (json_int_t)idx, "name",
                                        d->param, "delay_s", d->delay_s));
    }
    const ddp_cfg_t *c = &job->cfg;
    json_t *ddp = json_pack("{s:f, s:b, s:b, s:b, s:b}", "bucket_cap_mb",
                            c->bucket_cap_mb, "broadcast_buffers",
                            c->broadcast_buffers, "gradient_as_bucket_view",
                            c->grad_as_bucket_view, "find_unused_parameters",
                            c->find_unused, "static_graph", c->static_graph);
    return json_pack("{s:s, s:i, s:I, s:o, s:o, s:f, s:f, s:f, s:I, s:o, "
                     "s:o}",
                     "model", m->name ? m->name : "", "world", job->world,
                     "steps", (json_int_t)job->rank_iters[0], "params",
                     spec_params(m), "ready_order", order, "forward_s",
                     m->fwd_s, "optimizer_s", m->opt_s, "backward_tail_s",
                     m->bwd_tail_s, "buffer_bytes", (json_int_t)m->buffer_bytes,
                     "ddp", ddp, "stragglers", strag);
}

static int write_spec(const vopts_t *o, const trace_scenario_t *sc,
                      const char *path)
{
    ddp_job_t *job = NULL;
    char err[1024];
    if (cli_ddp_make_job("validate", sc, &job) != 0)
        return 2;
    int rc = 0;
    if (job->world != o->world) {
        fprintf(stderr,
                "herd validate: --torch: the scenario's job has %d "
                "ranks, the real side %d (leave --hosts out)\n",
                job->world, o->world);
        rc = 2;
    } else if (unsupported(&job->cfg, err, sizeof(err))) {
        fprintf(stderr, "herd validate: %s\n", err);
        rc = 2;
    }
    for (int r = 1; rc == 0 && r < job->world; r++)
        if (job->rank_iters[r] != job->rank_iters[0]) {
            fprintf(stderr, "herd validate: --torch: ranks run different "
                            "numbers of iterations\n");
            rc = 2;
        }
    json_t *spec = rc ? NULL : job_spec(job, err, sizeof(err));
    if (rc == 0 && !spec) {
        fprintf(stderr, "herd validate: %s\n", err);
        rc = 2;
    }
    if (spec && json_dump_file(spec, path, JSON_INDENT(1)) != 0) {
        fprintf(stderr, "herd validate: cannot write %s\n", path);
        rc = 1;
    }
    json_decref(spec);
    ddp_job_destroy(job);
    return rc;
}

/* ---- aligning the measured records with the predicted ones ---- */

typedef struct arec {
    const herd_tl_rec_t *r;
    size_t from_end; /* later records of the same rank, label and bytes */
} arec_t;

static int same_kind(const herd_tl_rec_t *a, const herd_tl_rec_t *b)
{
    return a->rank == b->rank && a->bytes == b->bytes &&
           !strcmp(a->label ? a->label : "", b->label ? b->label : "");
}

/* The collectives of `rank` in tl, in time order, each with its count
 * from the end. */
static arec_t *coll_recs(const trace_timeline_t *tl, int rank, size_t *n_out)
{
    size_t n = trace_timeline_count(tl), k = 0;
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    arec_t *a = calloc(n ? n : 1, sizeof(*a));
    for (size_t i = 0; a && i < n; i++)
        if (r[i].kind == HERD_TL_COLL && r[i].rank == rank)
            a[k++].r = &r[i];
    for (size_t i = 0; a && i < k; i++)
        for (size_t j = i + 1; j < k; j++)
            a[i].from_end += same_kind(a[i].r, a[j].r);
    *n_out = k;
    return a;
}

static herd_status_t align_rank(trace_timeline_t *pred, const char *in,
                                const char *out, int rank, size_t *matched,
                                char *err, size_t errlen)
{
    trace_timeline_t *meas = NULL, *res = NULL;
    herd_status_t st = trace_timeline_read_chrome(in, &meas, err, errlen);
    if (st != HERD_OK)
        return st;
    trace_timeline_sort(meas);
    size_t np = 0, nm = 0;
    arec_t *pa = coll_recs(pred, rank, &np), *ma = coll_recs(meas, rank, &nm);
    st = pa && ma ? trace_timeline_create(&res) : HERD_ERR_NO_MEMORY;
    size_t n = st == HERD_OK ? trace_timeline_count(meas) : 0;
    const herd_tl_rec_t *all = st == HERD_OK ? trace_timeline_recs(meas) : NULL;
    size_t m = 0; /* ma lists this rank's collectives in all[]'s order */
    for (size_t i = 0; st == HERD_OK && i < n; i++) {
        herd_tl_rec_t r = all[i];
        /* forward/backward/optimizer spans stay in torch-rank<R>.json:
         * herd's compute records are per parameter and would be paired
         * by ordinal with the wrong ones */
        if (r.kind == HERD_TL_COMPUTE)
            continue;
        if (r.kind == HERD_TL_COLL && r.rank == rank && m < nm) {
            size_t from_end = ma[m++].from_end;
            r.seq = 0; /* unmatched: no predicted record has seq 0 */
            for (size_t p = 0; p < np; p++)
                if (same_kind(pa[p].r, &r) && pa[p].from_end == from_end &&
                    pa[p].r->coll == r.coll) {
                    r.group = pa[p].r->group;
                    r.seq = pa[p].r->seq;
                    r.algo = pa[p].r->algo;
                    (*matched)++;
                    break;
                }
        }
        st = trace_timeline_add(res, &r);
    }
    for (size_t i = 0; st == HERD_OK && i < 4; i++) {
        static const char *keys[] = {"engine", "torch", "bucket_sizes",
                                     "world_size"};
        const char *v = trace_timeline_get_meta(meas, keys[i]);
        if (v)
            st = trace_timeline_set_meta(res, keys[i], v);
    }
    if (st == HERD_OK)
        st = trace_timeline_write_chrome(res, out, err, errlen);
    free(pa);
    free(ma);
    trace_timeline_destroy(res);
    trace_timeline_destroy(meas);
    return st;
}

static int align(const vopts_t *o, const char *dir, const char *log)
{
    char pred_path[1024], in[1100], out[1100], err[1024];
    trace_timeline_t *pred = NULL;
    snprintf(pred_path, sizeof(pred_path), "%s/predicted/timeline.json", dir);
    herd_status_t st =
        trace_timeline_read_chrome(pred_path, &pred, err, sizeof(err));
    size_t matched = 0;
    for (int r = 0; st == HERD_OK && r < o->world; r++) {
        snprintf(in, sizeof(in), "%s/measured/torch-rank%d.json", dir, r);
        snprintf(out, sizeof(out), "%s/measured/timeline-rank%d.json", dir, r);
        st = align_rank(pred, in, out, r, &matched, err, sizeof(err));
    }
    trace_timeline_destroy(pred);
    if (st != HERD_OK) {
        fprintf(stderr, "herd validate: --torch: %s\n", err);
        return 1;
    }
    if (matched == 0) {
        fprintf(stderr,
                "herd validate: --torch: no all_reduce of the "
                "PyTorch job matches a predicted bucket (the bucket layouts "
                "differ?); see %s and the measured timelines in %s/measured\n",
                log, dir);
        return 1;
    }
    return 0;
}

int validate_torch_measure(const vopts_t *o, const trace_scenario_t *sc,
                           const char *dir, const char *log)
{
    char spec[1024], mdir[1024], slow[512], pydir[1024], path[4096];
    char *argv[40];
    snprintf(spec, sizeof(spec), "%s/job.json", dir);
    snprintf(mdir, sizeof(mdir), "%s/measured", dir);
    mkdir(mdir, 0755);
    int rc = write_spec(o, sc, spec);
    if (rc)
        return rc;
    /* ddp-run finds herd_torch through PYTHONPATH (every rank inherits it) */
    python_dir(pydir, sizeof(pydir));
    const char *old = getenv("PYTHONPATH");
    snprintf(path, sizeof(path), "%s%s%s", pydir, old && *old ? ":" : "",
             old && *old ? old : "");
    setenv("PYTHONPATH", path, 1);
    int n = validate_real_argv(o, sc, argv, slow, sizeof(slow));
    argv[n - 1] = (char *)o->python; /* in place of this herd binary */
    argv[n++] = "-m";
    argv[n++] = "herd_torch";
    argv[n++] = "ddp-run";
    argv[n++] = "--spec";
    argv[n++] = spec;
    argv[n++] = "-o";
    argv[n++] = mdir;
    argv[n] = NULL;
    printf("validate: ddp: running the job in PyTorch (%s)\n", o->python);
    fflush(stdout);
    if (validate_run_self(argv, log) != 0) {
        fprintf(stderr,
                "herd validate: --torch: the PyTorch job failed, see "
                "%s\n",
                log);
        return 1;
    }
    return align(o, dir, log);
}

int validate_torch_realign(const vopts_t *o, const char *dir, const char *log)
{
    return align(o, dir, log);
}

/* ---- per-step rows ---- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Step start marks of `rank`, sorted; malloc'd. */
static uint64_t *step_marks(const trace_timeline_t *tl, int rank, size_t *n)
{
    size_t cnt = trace_timeline_count(tl), k = 0;
    const herd_tl_rec_t *r = trace_timeline_recs(tl);
    uint64_t *t = malloc((cnt ? cnt : 1) * sizeof(*t));
    for (size_t i = 0; t && i < cnt; i++)
        if (r[i].rank == rank && r[i].kind == HERD_TL_MARK && r[i].label &&
            !strcmp(r[i].label, "step"))
            t[k++] = r[i].start_ns;
    if (t)
        qsort(t, k, sizeof(*t), cmp_u64);
    *n = k;
    return t;
}

static herd_status_t read_ranks(const char *dir, int world,
                                trace_timeline_t **out, char *err,
                                size_t errlen)
{
    trace_timeline_t *all = NULL;
    herd_status_t st = trace_timeline_create(&all);
    for (int r = 0; st == HERD_OK && r < world; r++) {
        char path[1100];
        trace_timeline_t *one = NULL;
        snprintf(path, sizeof(path), "%s/timeline-rank%d.json", dir, r);
        st = trace_timeline_read_chrome(path, &one, err, errlen);
        size_t n = st == HERD_OK ? trace_timeline_count(one) : 0;
        for (size_t i = 0; st == HERD_OK && i < n; i++)
            st = trace_timeline_add(all, &trace_timeline_recs(one)[i]);
        trace_timeline_destroy(one);
    }
    if (st != HERD_OK) {
        trace_timeline_destroy(all);
        return st;
    }
    *out = all;
    return HERD_OK;
}

herd_status_t validate_torch_step_rows(const char *pred_json,
                                       const char *meas_dir, int world,
                                       validate_rows_t *rows, char *err,
                                       size_t errlen)
{
    trace_timeline_t *pred = NULL, *meas = NULL;
    herd_status_t st =
        trace_timeline_read_chrome(pred_json, &pred, err, errlen);
    if (st == HERD_OK)
        st = read_ranks(meas_dir, world, &meas, err, errlen);
    size_t steps = SIZE_MAX;
    uint64_t **pm = calloc((size_t)world, sizeof(*pm));
    uint64_t **mm = calloc((size_t)world, sizeof(*mm));
    size_t *np = calloc((size_t)world, sizeof(*np));
    size_t *nm = calloc((size_t)world, sizeof(*nm));
    double *pd = calloc((size_t)world, sizeof(*pd));
    double *md = calloc((size_t)world, sizeof(*md));
    if (st == HERD_OK && !(pm && mm && np && nm && pd && md))
        st = HERD_ERR_NO_MEMORY;
    for (int r = 0; st == HERD_OK && r < world; r++) {
        pm[r] = step_marks(pred, r, &np[r]);
        mm[r] = step_marks(meas, r, &nm[r]);
        if (!pm[r] || !mm[r])
            st = HERD_ERR_NO_MEMORY;
        size_t s = np[r] < nm[r] ? np[r] : nm[r];
        steps = s < steps ? s : steps;
    }
    /* steps marks give steps - 1 whole iterations, aligned from the last */
    for (size_t k = 1; st == HERD_OK && steps != SIZE_MAX && k < steps; k++) {
        for (int r = 0; r < world; r++) {
            size_t pi = np[r] - steps + k, mi = nm[r] - steps + k;
            pd[r] = (pm[r][pi] - pm[r][pi - 1]) / 1e3;
            md[r] = (mm[r][mi] - mm[r][mi - 1]) / 1e3;
        }
        qsort(pd, (size_t)world, sizeof(*pd), core_cmp_double);
        qsort(md, (size_t)world, sizeof(*md), core_cmp_double);
        validate_row_t w;
        memset(&w, 0, sizeof(w));
        snprintf(w.name, sizeof(w.name), "step");
        snprintf(w.algo, sizeof(w.algo), "-");
        snprintf(w.label, sizeof(w.label), "step %zu",
                 nm[0] - steps + k); /* the measured iteration, from 1 */
        w.n = (size_t)world;
        w.pred_us = pd[world / 2];
        w.meas_us = md[world / 2];
        w.meas_p10_us = core_quantile_sorted(md, (size_t)world, 0.1);
        w.meas_p90_us = core_quantile_sorted(md, (size_t)world, 0.9);
        w.err = w.meas_us > 0 ? (w.pred_us - w.meas_us) / w.meas_us : 0;
        st = validate_rows_add(rows, &w);
    }
    for (int r = 0; pm && mm && r < world; r++) {
        free(pm[r]);
        free(mm[r]);
    }
    free(pm);
    free(mm);
    free(np);
    free(nm);
    free(pd);
    free(md);
    trace_timeline_destroy(pred);
    trace_timeline_destroy(meas);
    return st;
}

void validate_torch_version(const char *meas_dir, char *buf, size_t len)
{
    char path[1100], err[256];
    trace_timeline_t *tl = NULL;
    snprintf(path, sizeof(path), "%s/torch-rank0.json", meas_dir);
    buf[0] = '\0';
    if (trace_timeline_read_chrome(path, &tl, err, sizeof(err)) != HERD_OK)
        return;
    const char *v = trace_timeline_get_meta(tl, "torch");
    snprintf(buf, len, "PyTorch %s", v ? v : "(version unknown)");
    trace_timeline_destroy(tl);
}
