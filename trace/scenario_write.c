/* trace/scenario_write.c - write a scenario back as YAML: every setting
 * that differs from the defaults, with units chosen so each value parses
 * back to the same double, strings quoted where YAML needs it. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "trace/scenario.h"
#include "trace/units.h"

/* "370GB/s" when that reads back exactly, else plain bytes per second. */
static void sw_bw(double v, char *buf, size_t len)
{
    double back;
    snprintf(buf, len, "%.17gGB/s", v / 1e9);
    if (trace_parse_bandwidth(buf, &back) || back != v)
        snprintf(buf, len, "%.17gB/s", v);
}

static void sw_time(double v, char *buf, size_t len)
{
    static const struct {
        const char *unit;
        double mult;
    } units[] = {{"us", 1e6}, {"ms", 1e3}, {"ns", 1e9}};
    double back;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        snprintf(buf, len, "%.17g%s", v * units[i].mult, units[i].unit);
        if (!trace_parse_time(buf, &back) && back == v)
            return;
    }
    snprintf(buf, len, "%.17gs", v);
}

/* A scalar, double-quoted unless it is plainly safe. */
static void sw_scalar(const char *s, FILE *f)
{
    int plain = *s && !strchr(" -?", s[0]) && s[strlen(s) - 1] != ' ';
    for (const char *p = s; *p && plain; p++)
        plain = !strchr(":#{}[],&*!|>'\"%@`\\\n\t", *p);
    if (plain) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', f);
        if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void sw_link(const char *name, const herd_link_t *l, FILE *f)
{
    char bw[64], lat[64];
    sw_bw(l->bandwidth, bw, sizeof(bw));
    sw_time(l->latency, lat, sizeof(lat));
    fprintf(f, "  %s: {bandwidth: %s, latency: %s", name, bw, lat);
    if (l->burst)
        fprintf(f, ", burst: %lluB", (unsigned long long)l->burst);
    fputs("}\n", f);
}

static void sw_cluster(const trace_scenario_t *sc, FILE *f)
{
    static const char *topo[] = {"nonblocking", "fattree", "rail"};
    const herd_cluster_t *c = &sc->sim.cluster;
    fprintf(f, "cluster:\n  nodes: %d\n  gpus_per_node: %d\n", c->nodes,
            c->gpus_per_node);
    if (sc->sim.world_size)
        fprintf(f, "  world_size: %d\n", sc->sim.world_size);
    sw_link("intra", &c->intra, f);
    sw_link("inter", &c->inter, f);
    fprintf(f, "  nics_per_node: %d\n  topology: %s\n", c->nics_per_node,
            topo[c->topo]);
    char lat[64];
    sw_time(c->spine_latency, lat, sizeof(lat));
    fprintf(f, "  spine_latency: %s\n", lat);
    if (c->comm_cpu_slowdown > 0) /* only when given: older outputs stay */
        fprintf(f, "  comm_cpu_slowdown: %.17g\n", c->comm_cpu_slowdown);
    if (c->compute_comm_slowdown > 0)
        fprintf(f, "  compute_comm_slowdown: %.17g\n",
                c->compute_comm_slowdown);
    if (c->oversub >= 1)
        fprintf(f, "  oversubscription: %.17g\n", c->oversub);
    if (c->nodes_per_leaf)
        fprintf(f, "  nodes_per_leaf: %d\n", c->nodes_per_leaf);
}

static void sw_collectives(const trace_scenario_t *sc, FILE *f)
{
    char buf[64];
    fprintf(f, "collectives:\n  algorithms: {");
    for (int i = 0, k = 0; i < HERD_COLL_COUNT; i++)
        if (sc->algo[i] != HERD_ALGO_AUTO)
            fprintf(f, "%s%s: %s", k++ ? ", " : "",
                    herd_coll_name((herd_coll_t)i),
                    herd_algo_name(sc->algo[i]));
    fprintf(f, "}\n");
    if (sc->channels)
        fprintf(f, "  channels: %d\n", sc->channels);
    if (sc->chunk_bytes)
        fprintf(f, "  chunk: %lluB\n", (unsigned long long)sc->chunk_bytes);
    if (sc->sim.nccl_model)
        fprintf(f, "  nccl_model: true\n");
    if (sc->sim.cluster.reduce_bw > 0) {
        sw_bw(sc->sim.cluster.reduce_bw, buf, sizeof(buf));
        fprintf(f, "  reduce_bandwidth: %s\n", buf);
    }
}

static void sw_sweep(const trace_sweep_t *sw, FILE *f)
{
    fprintf(f, "  sweep:\n    collective: %s\n    algorithms: [",
            herd_coll_name(sw->coll));
    for (int i = 0; i < sw->nalgos; i++)
        fprintf(f, "%s%s", i ? ", " : "", herd_algo_name(sw->algos[i]));
    fprintf(f, "]\n    min: %lluB\n    max: %lluB\n    factor: %.17g\n",
            (unsigned long long)sw->min_bytes,
            (unsigned long long)sw->max_bytes, sw->factor);
    fprintf(f, "    dtype: %s\n    op: %s\n    iters: %d\n    warmup: %d\n",
            herd_dtype_name(sw->dtype), herd_op_name(sw->op), sw->iters,
            sw->warmup);
}

/* A section kept as strings (ddp, fsdp): flow values as written. */
static void sw_kv_section(const char *name, const trace_kv_t *kv, size_t n,
                          FILE *f)
{
    fprintf(f, "  %s:\n", name);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "    ");
        sw_scalar(kv[i].key, f);
        fprintf(f, ": ");
        if (kv[i].flow)
            fputs(kv[i].value, f);
        else
            sw_scalar(kv[i].value, f);
        fputc('\n', f);
    }
}

static void sw_workload(const trace_scenario_t *sc, FILE *f)
{
    if (sc->wl_kind == TRACE_WL_NONE && !sc->steps)
        return;
    fprintf(f, "workload:\n");
    if (sc->wl_kind == TRACE_WL_TRACE) {
        char *abs = realpath(sc->trace_path, NULL);
        fprintf(f, "  trace: ");
        sw_scalar(abs ? abs : sc->trace_path, f);
        fputc('\n', f);
        free(abs);
    }
    if (sc->wl_kind == TRACE_WL_SWEEP)
        sw_sweep(&sc->sweep, f);
    if (sc->wl_kind == TRACE_WL_DDP)
        sw_kv_section("ddp", sc->ddp, sc->nddp, f);
    if (sc->wl_kind == TRACE_WL_FSDP)
        sw_kv_section("fsdp", sc->fsdp, sc->nfsdp, f);
    if (sc->wl_kind == TRACE_WL_PARALLEL)
        sw_kv_section("parallel", sc->parallel, sc->nparallel, f);
    if (sc->steps)
        fprintf(f, "  steps: %d\n", sc->steps);
}

static void sw_stragglers(const trace_scenario_t *sc, FILE *f)
{
    static const char *jit[] = {"none", "normal", "lognormal"};
    char buf[64];
    fprintf(f, "stragglers:\n  ranks: [");
    for (size_t i = 0; i < sc->nrank_ovr; i++) {
        const herd_rank_override_t *r = &sc->rank_ovr[i];
        fprintf(f,
                "%s\n    {rank: %d, compute: %.17g, nic: %.17g, intra: "
                "%.17g}",
                i ? "," : "", r->rank, r->compute_factor, r->nic_factor,
                r->intra_factor);
    }
    fprintf(f, "]\n  links: [");
    for (size_t i = 0; i < sc->nlink_ovr; i++) {
        const herd_link_override_t *l = &sc->link_ovr[i];
        sw_time(l->extra_latency, buf, sizeof(buf));
        fprintf(f, "%s\n    {a: %d, b: %d, bandwidth: %.17g, latency: %s}",
                i ? "," : "", l->a, l->b, l->bw_factor, buf);
    }
    fprintf(f, "]\n  jitter: {kind: %s, sigma: %.17g}\n", jit[sc->sim.jitter],
            sc->sim.jitter_sigma);
    if (!sc->ngrads) /* written only when given: older outputs stay */
        return;
    fprintf(f, "  grads: [");
    for (size_t i = 0; i < sc->ngrads; i++) {
        const trace_grad_straggler_t *g = &sc->grads[i];
        sw_time(g->delay_s, buf, sizeof(buf));
        fprintf(f, "%s\n    {rank: %d, param: ", i ? "," : "", g->rank);
        sw_scalar(g->param, f);
        fprintf(f, ", delay: %s, affects: %s}", buf,
                g->only_grad ? "grad" : "backward");
    }
    fprintf(f, "]\n");
}

/* stragglers.data (continuing the stragglers mapping) and the data
 * section, written only when given: older outputs stay. */
static void sw_data(const trace_scenario_t *sc, FILE *f)
{
    const trace_data_t *d = &sc->data;
    if (sc->ndata_slow) {
        fprintf(f, "  data: [");
        for (size_t i = 0; i < sc->ndata_slow; i++)
            fprintf(f, "%s\n    {rank: %d, factor: %.17g}", i ? "," : "",
                    sc->data_slow[i].rank, sc->data_slow[i].factor);
        fprintf(f, "]\n");
    }
    if (d->load_s > 0 || d->num_workers || d->prefetch_factor != 2 ||
        d->jitter > 0)
        fprintf(f,
                "data: {load_s: %.17g, num_workers: %d, prefetch_factor: %d, "
                "jitter: %.17g}\n",
                d->load_s, d->num_workers, d->prefetch_factor, d->jitter);
}

static void sw_faults(const trace_scenario_t *sc, FILE *f)
{
    char buf[64];
    fprintf(f, "faults: [");
    for (size_t i = 0; i < sc->nfaults; i++) {
        const herd_fault_t *ft = &sc->faults[i];
        fprintf(f, "%s\n  {rank: %d", i ? "," : "", ft->rank);
        if (ft->at_time >= 0) {
            sw_time(ft->at_time, buf, sizeof(buf));
            fprintf(f, ", at: %s", buf);
        }
        if (ft->at_step >= 0)
            fprintf(f, ", at_step: %ld", ft->at_step);
        fputc('}', f);
    }
    fprintf(f, "]\n");
}

herd_status_t trace_scenario_write(const trace_scenario_t *sc, FILE *f)
{
    char buf[64];
    if (sc->name) {
        fprintf(f, "name: ");
        sw_scalar(sc->name, f);
        fputc('\n', f);
    }
    sw_cluster(sc, f);
    sw_collectives(sc, f);
    sw_workload(sc, f);
    sw_stragglers(sc, f);
    sw_data(sc, f);
    sw_faults(sc, f);
    if (sc->timeout_s > 0) {
        sw_time(sc->timeout_s, buf, sizeof(buf));
        fprintf(f, "timeout: %s\n", buf);
    }
    fprintf(f, "seed: %llu\n", (unsigned long long)sc->sim.seed);
    return ferror(f) ? HERD_ERR_IO : HERD_OK;
}
