/* workload/parallel/cfg.c - 3D-parallel job options: defaults, setting
 * them from text (scenario files, --set) with DDP's parsers, and the
 * layout check against the world size. DeepSpeed's knob names are kept
 * (reduce_bucket_size, allgather_bucket_size, overlap_comm,
 * stage3_prefetch_bucket_size) so a ds_config reads across. */
#include "workload/parallel/cfg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "workload/common/mem.h"
#include "workload/ddp/cfg.h"

void par_cfg_init(par_cfg_t *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->model, sizeof(c->model), "gpt2_small");
    c->tp = c->pp = 1;
    c->micro_batches = 8;
    c->micro_batch_size = 1;
    c->schedule = PAR_1F1B;
    c->virtual_stages = 2;       /* the interleaved schedule's alone */
    c->reduce_bucket_size = 5e8; /* DeepSpeed's defaults */
    c->allgather_bucket_size = 5e8;
    c->stage3_prefetch_bucket_size = 5e7;
    c->dtype = HERD_BFLOAT16;
    c->optimizer_bytes = 12;
    c->steps = 2;
    c->compute_scale = 1;
}

const char *par_schedule_name(par_schedule_t s)
{
    return s == PAR_GPIPE ? "gpipe" : s == PAR_1F1B ? "1f1b" : "interleaved";
}

static const char known[] =
    "model, tp, pp, dp, micro_batches, micro_batch_size, global_batch_size, "
    "compute_batch, seq, hidden, heads, "
    "layers, schedule, virtual_stages, sequence_parallel, zero_stage, "
    "reduce_bucket_size, "
    "allgather_bucket_size, stage3_prefetch_bucket_size, overlap_comm, "
    "dtype, optimizer_bytes, steps, compute_scale, gpu_mem";

static herd_status_t bad(char *err, size_t len, const char *key,
                         const char *value, const char *expected)
{
    snprintf(err, len, "parallel.%s: bad value '%s'; expected %s", key, value,
             expected);
    return HERD_ERR_PARSE;
}

static herd_status_t set_whole(const char *key, const char *v, double lo,
                               double hi, double *out, char *err, size_t len)
{
    double d;
    if (ddp_cfg_parse_num(v, lo, hi, &d) || d != floor(d)) {
        char form[96];
        snprintf(form, sizeof(form), "a whole number in [%.0f, %.0f]", lo, hi);
        return bad(err, len, key, v, form);
    }
    *out = d;
    return HERD_OK;
}

static herd_status_t set_int_key(par_cfg_t *c, const char *key, const char *v,
                                 char *err, size_t len, int *matched)
{
    struct {
        const char *key;
        int *i;
        long *l;
        double lo, hi;
    } t[] = {
        {"tp", &c->tp, NULL, 1, 1 << 20},
        {"pp", &c->pp, NULL, 1, 1 << 20},
        {"dp", &c->dp, NULL, 0, 1 << 20},
        {"micro_batches", &c->micro_batches, NULL, 1, 1 << 16},
        {"micro_batch_size", &c->micro_batch_size, NULL, 1, 1 << 20},
        {"zero_stage", &c->zero_stage, NULL, 0, 3},
        {"virtual_stages", &c->virtual_stages, NULL, 1, 64},
        {"seq", NULL, &c->seq, 0, 1 << 24},
        {"hidden", NULL, &c->hidden, 0, 1 << 24},
        {"heads", NULL, &c->heads, 0, 1 << 20},
        {"layers", NULL, &c->layers, 0, 1 << 20},
        {"global_batch_size", NULL, &c->global_batch_size, 0, 1 << 30},
        {"compute_batch", NULL, &c->compute_batch, 0, 1 << 20},
        {"steps", NULL, &c->steps, 1, 64},
    };
    *matched = 0;
    for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
        if (strcmp(key, t[k].key))
            continue;
        double d;
        *matched = 1;
        herd_status_t st = set_whole(key, v, t[k].lo, t[k].hi, &d, err, len);
        if (st == HERD_OK && t[k].i)
            *t[k].i = (int)d;
        else if (st == HERD_OK)
            *t[k].l = (long)d;
        return st;
    }
    return HERD_OK;
}

static herd_status_t set_num_key(par_cfg_t *c, const char *key, const char *v,
                                 char *err, size_t len, int *matched)
{
    struct {
        const char *key;
        double *d;
        double lo, hi;
        int whole;
    } t[] = {
        {"reduce_bucket_size", &c->reduce_bucket_size, 1, 1e15, 1},
        {"allgather_bucket_size", &c->allgather_bucket_size, 1, 1e15, 1},
        {"stage3_prefetch_bucket_size", &c->stage3_prefetch_bucket_size, 0,
         1e15, 1},
        {"optimizer_bytes", &c->optimizer_bytes, 0, 1024, 0},
        {"compute_scale", &c->compute_scale, 1e-9, 1e9, 0},
    };
    *matched = 0;
    for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
        if (strcmp(key, t[k].key))
            continue;
        double d;
        *matched = 1;
        if (ddp_cfg_parse_num(v, t[k].lo, t[k].hi, &d) ||
            (t[k].whole && d != floor(d))) {
            char form[96];
            snprintf(form, sizeof(form), "%s in [%g, %g]",
                     t[k].whole ? "a whole number" : "a number", t[k].lo,
                     t[k].hi);
            return bad(err, len, key, v, form);
        }
        *t[k].d = d;
        return HERD_OK;
    }
    return HERD_OK;
}

herd_status_t par_cfg_set(par_cfg_t *c, const char *key, const char *v,
                          char *err, size_t len)
{
    int matched = 0;
    if (!strncmp(key, "parallel.", 9))
        key += 9;
    if (!strcmp(key, "model")) {
        snprintf(c->model, sizeof(c->model), "%s", v);
        return HERD_OK;
    }
    if (!strcmp(key, "schedule")) {
        if (!strcasecmp(v, "gpipe"))
            c->schedule = PAR_GPIPE;
        else if (!strcasecmp(v, "1f1b"))
            c->schedule = PAR_1F1B;
        else if (!strcasecmp(v, "interleaved"))
            c->schedule = PAR_INTERLEAVED;
        else
            return bad(err, len, key, v, "gpipe, 1f1b or interleaved");
        return HERD_OK;
    }
    if (!strcmp(key, "sequence_parallel") || !strcmp(key, "overlap_comm"))
        return ddp_cfg_parse_bool(v, key[0] == 's' ? &c->sequence_parallel
                                                   : &c->overlap_comm)
                   ? bad(err, len, key, v, "true or false")
                   : HERD_OK;
    if (!strcmp(key, WL_GPU_MEM_KEY)) /* workload/common/mem.h */
        return wl_gpu_mem_parse("parallel", v, &c->gpu_mem_gib, err, len);
    if (!strcmp(key, "dtype")) {
        if (herd_dtype_parse(v, &c->dtype) != HERD_OK ||
            herd_dtype_is_integer(c->dtype))
            return bad(err, len, key, v, "float32, float16 or bfloat16");
        return HERD_OK;
    }
    herd_status_t st = set_int_key(c, key, v, err, len, &matched);
    if (!matched)
        st = set_num_key(c, key, v, err, len, &matched);
    if (!matched) {
        snprintf(err, len, "parallel.%s: unknown option; known: %s", key,
                 known);
        return HERD_ERR_PARSE;
    }
    return st;
}

herd_status_t par_cfg_layout(const par_cfg_t *c, int world, int *tp, int *pp,
                             int *dp, char *err, size_t len)
{
    long tpp = (long)c->tp * c->pp;
    int d = c->dp;
    if (!d && world % tpp == 0)
        d = (int)(world / tpp);
    if (!d || tpp * d != world) {
        if (c->dp)
            snprintf(err, len,
                     "parallel.tp x parallel.pp x parallel.dp = %d x %d x %d "
                     "= %ld, but the world has %d ranks (cluster.nodes x "
                     "cluster.gpus_per_node)",
                     c->tp, c->pp, c->dp, tpp * c->dp, world);
        else
            snprintf(err, len,
                     "parallel.tp x parallel.pp = %d x %d = %ld does not "
                     "divide the world's %d ranks (cluster.nodes x "
                     "cluster.gpus_per_node), so there is no parallel.dp",
                     c->tp, c->pp, tpp, world);
        return HERD_ERR_INVALID_ARG;
    }
    *tp = c->tp;
    *pp = c->pp;
    *dp = d;
    return HERD_OK;
}
