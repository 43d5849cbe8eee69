/* workload/fsdp/cfg.c - FSDP job options: defaults, setting them from
 * text (scenario files, --set) and cross-checks. Scalars, booleans and
 * lists are parsed by DDP's parsers so both workloads accept the same
 * words; the names of strategies and prefetch modes are PyTorch's. */
#include "workload/fsdp/cfg.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "workload/common/mem.h"

void fsdp_cfg_init(fsdp_cfg_t *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->model, sizeof(c->model), "gpt2_small");
    c->strategy = FSDP_FULL_SHARD;
    c->wrap.kind = FSDP_WRAP_BLOCK;
    c->reshard_after_forward = -1;
    c->backward_prefetch = FSDP_BWD_PRE; /* FSDP1's default */
    c->limit_all_gathers = 1;
    c->comm_streams = 1; /* one process group: one NCCL communicator */
    c->param_dtype = c->reduce_dtype = HERD_FLOAT32;
    c->steps = 4;
    c->compute_scale = 1;
    c->optim_states = 2;
    c->offload_gbps = 25; /* PCIe 4.0 x16, roughly */
    c->cpu_optimizer_scale = 1;
    c->bad_wrap.kind = FSDP_WRAP_NONE;
}

void fsdp_cfg_fini(fsdp_cfg_t *c)
{
    for (size_t i = 0; i < c->nprefixes; i++)
        free(c->prefixes[i]);
    c->nprefixes = 0;
}

static herd_status_t bad(char *err, size_t len, const char *key,
                         const char *value, const char *expected)
{
    snprintf(err, len, "fsdp.%s: bad value '%s'; expected %s", key, value,
             expected);
    return HERD_ERR_PARSE;
}

static int parse_wrap(const char *v, fsdp_wrap_t *w)
{
    double n;
    if (!strcmp(v, "transformer_block") || !strcmp(v, "block"))
        *w = (fsdp_wrap_t){FSDP_WRAP_BLOCK, 0};
    else if (!strcmp(v, "none"))
        *w = (fsdp_wrap_t){FSDP_WRAP_NONE, 0};
    else if (!strncmp(v, "min_params=", 11) &&
             !ddp_cfg_parse_num(v + 11, 1, 1e15, &n))
        *w = (fsdp_wrap_t){FSDP_WRAP_MIN_PARAMS, (uint64_t)n};
    else
        return -1;
    return 0;
}

static int parse_strategy(const char *v, fsdp_strategy_t *s)
{
    static const char *const names[] = {"FULL_SHARD", "SHARD_GRAD_OP",
                                        "NO_SHARD", "HYBRID_SHARD"};
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(v, names[i])) {
            *s = (fsdp_strategy_t)i;
            return 0;
        }
    return -1;
}

static int parse_prefetch(const char *v, fsdp_bwd_prefetch_t *p)
{
    if (!strcasecmp(v, "BACKWARD_PRE"))
        *p = FSDP_BWD_PRE;
    else if (!strcasecmp(v, "BACKWARD_POST"))
        *p = FSDP_BWD_POST;
    else if (!strcasecmp(v, "none") || !strcasecmp(v, "null") ||
             !strcasecmp(v, "false"))
        *p = FSDP_BWD_NONE;
    else
        return -1;
    return 0;
}

/* "[a, b]" or "a,b": name prefixes, quotes allowed. */
static int parse_prefixes(fsdp_cfg_t *c, const char *v)
{
    fsdp_cfg_fini(c);
    const char *p = v;
    while (isspace((unsigned char)*p))
        p++;
    int bracket = *p == '[';
    p += bracket;
    for (;;) {
        while (isspace((unsigned char)*p) || *p == ',')
            p++;
        if (!*p || *p == ']')
            break;
        size_t n = strcspn(p, ",]");
        const char *b = p, *e = p + n;
        while (e > b && isspace((unsigned char)e[-1]))
            e--;
        if ((*b == '"' || *b == '\'') && e - b >= 2 && e[-1] == *b)
            b++, e--;
        if (e == b || c->nprefixes == FSDP_MAX_PREFIXES)
            return -1;
        if (!(c->prefixes[c->nprefixes] = strndup(b, (size_t)(e - b))))
            return -1;
        c->nprefixes++;
        p += n;
    }
    if ((*p == ']') != bracket || (*p == ']' && p[1]) || !c->nprefixes)
        return -1;
    c->wrap.kind = FSDP_WRAP_PREFIXES;
    return 0;
}

static herd_status_t set_dtype(herd_dtype_t *dt, int *have, const char *key,
                               const char *v, char *err, size_t len)
{
    if (herd_dtype_parse(v, dt) != HERD_OK || herd_dtype_is_integer(*dt))
        return bad(err, len, key, v, "float32, float16 or bfloat16");
    *have = 1;
    return HERD_OK;
}

static herd_status_t set_list(ddp_int_list_t *l, const char *key, const char *v,
                              char *err, size_t len)
{
    if (ddp_cfg_parse_list(v, 0, 1e9, l))
        return bad(err, len, key, v,
                   "a list of whole numbers, e.g. [0, 3] (at most 64)");
    return HERD_OK;
}

static herd_status_t set_num(double *out, const char *key, const char *v,
                             double lo, double hi, int whole, char *err,
                             size_t len)
{
    double d;
    if (ddp_cfg_parse_num(v, lo, hi, &d) || (whole && d != floor(d))) {
        char form[96];
        snprintf(form, sizeof(form), "%s in [%g, %g]",
                 whole ? "a whole number" : "a number", lo, hi);
        return bad(err, len, key, v, form);
    }
    *out = d;
    return HERD_OK;
}

static herd_status_t set_bool(int *out, const char *key, const char *v,
                              char *err, size_t len)
{
    return ddp_cfg_parse_bool(v, out) ? bad(err, len, key, v, "true or false")
                                      : HERD_OK;
}

herd_status_t fsdp_cfg_set(fsdp_cfg_t *c, const char *key, const char *v,
                           char *err, size_t len)
{
    double d = 0;
    herd_status_t st;
    if (!strncmp(key, "fsdp.", 5))
        key += 5;
    if (!strcmp(key, "model")) {
        snprintf(c->model, sizeof(c->model), "%s", v);
        return HERD_OK;
    }
    if (!strcmp(key, "strategy") || !strcmp(key, "sharding_strategy"))
        return parse_strategy(v, &c->strategy)
                   ? bad(err, len, key, v,
                         "FULL_SHARD, SHARD_GRAD_OP, NO_SHARD or "
                         "HYBRID_SHARD")
                   : HERD_OK;
    if (!strcmp(key, "wrap") || !strcmp(key, "bad_wrap")) {
        fsdp_wrap_t w;
        if (parse_wrap(v, &w))
            return bad(err, len, key, v,
                       "transformer_block, min_params=N or none");
        if (!strcmp(key, "bad_wrap"))
            c->bad_wrap = w;
        else
            fsdp_cfg_fini(c), c->wrap = w;
        return HERD_OK;
    }
    if (!strcmp(key, "units"))
        return parse_prefixes(c, v)
                   ? bad(err, len, key, v,
                         "a list of parameter-name prefixes, e.g. "
                         "[transformer.h.0., transformer.h.1.]")
                   : HERD_OK;
    if (!strcmp(key, "backward_prefetch"))
        return parse_prefetch(v, &c->backward_prefetch)
                   ? bad(err, len, key, v,
                         "BACKWARD_PRE, BACKWARD_POST or none")
                   : HERD_OK;
    if (!strcmp(key, "reshard_after_forward")) {
        int b; /* FSDP2: a bool, or an int N to reshard to N ranks */
        if (!ddp_cfg_parse_bool(v, &b)) {
            c->reshard_after_forward = b;
            return HERD_OK;
        }
        if (!ddp_cfg_parse_num(v, 2, 1 << 20, &d) && d == floor(d)) {
            c->reshard_after_forward = (int)d;
            return HERD_OK;
        }
        return bad(err, len, key, v,
                   "true, false or a number of ranks N >= 2 (FSDP2: reshard "
                   "to N ranks after forward)");
    }
    if (!strcmp(key, "forward_prefetch"))
        return set_bool(&c->forward_prefetch, key, v, err, len);
    if (!strcmp(key, "cpu_bound"))
        return set_bool(&c->cpu_bound, key, v, err, len);
    if (!strcmp(key, "limit_all_gathers"))
        return set_bool(&c->limit_all_gathers, key, v, err, len);
    if (!strcmp(key, "param_dtype"))
        return set_dtype(&c->param_dtype, &c->have_param_dtype, key, v, err,
                         len);
    if (!strcmp(key, "reduce_dtype"))
        return set_dtype(&c->reduce_dtype, &c->have_reduce_dtype, key, v, err,
                         len);
    if (!strcmp(key, "bad_wrap_ranks"))
        return set_list(&c->bad_wrap_ranks, key, v, err, len);
    if (!strcmp(key, "skip_units"))
        return set_list(&c->skip_units, key, v, err, len);
    if (!strcmp(key, "skip_ranks"))
        return set_list(&c->skip_ranks, key, v, err, len);
    if (!strcmp(key, "skip_steps"))
        return set_list(&c->skip_steps, key, v, err, len);
    if (!strcmp(key, "short_ranks"))
        return set_list(&c->short_ranks, key, v, err, len);
    if (!strcmp(key, "short_steps")) {
        if ((st = set_num(&d, key, v, 0, 64, 1, err, len)) == HERD_OK)
            c->short_steps = (long)d;
        return st;
    }
    if (!strcmp(key, "compute_scale"))
        return set_num(&c->compute_scale, key, v, 1e-9, 1e9, 0, err, len);
    if (!strcmp(key, "hook_s"))
        return set_num(&c->hook_s, key, v, 0, 10, 0, err, len);
    if (!strcmp(key, "cpu_offload"))
        return set_bool(&c->cpu_offload, key, v, err, len);
    if (!strcmp(key, "offload_gbps"))
        return set_num(&c->offload_gbps, key, v, 1e-3, 1e6, 0, err, len);
    if (!strcmp(key, "cpu_optimizer_scale"))
        return set_num(&c->cpu_optimizer_scale, key, v, 0, 1e6, 0, err, len);
    if (!strcmp(key, "optim_states"))
        return set_num(&c->optim_states, key, v, 0, 16, 0, err, len);
    if (!strcmp(key, "shard_group_size")) {
        if ((st = set_num(&d, key, v, 0, 1 << 20, 1, err, len)) == HERD_OK)
            c->shard_group_size = (int)d;
        return st;
    }
    if (!strcmp(key, WL_GPU_MEM_KEY))
        return wl_gpu_mem_parse("fsdp", v, &c->gpu_mem_gib, err, len);
    if (!strcmp(key, "backend")) {
        if (strcmp(v, "nccl") && strcmp(v, "gloo"))
            return bad(err, len, key, v, "nccl or gloo");
        c->gloo = !strcmp(v, "gloo");
        return HERD_OK;
    }
    if (!strcmp(key, "comm_streams")) {
        if ((st = set_num(&d, key, v, 1, 2, 1, err, len)) == HERD_OK)
            c->comm_streams = (int)d;
        return st;
    }
    if (!strcmp(key, "steps")) {
        if ((st = set_num(&d, key, v, 1, 64, 1, err, len)) == HERD_OK)
            c->steps = (long)d;
        return st;
    }
    snprintf(
        err, len,
        "fsdp.%s: unknown FSDP option (known: model, strategy, wrap, "
        "units, shard_group_size, reshard_after_forward, "
        "forward_prefetch, backward_prefetch, limit_all_gathers, cpu_bound, "
        "backend, "
        "comm_streams, param_dtype, reduce_dtype, steps, compute_scale, "
        "hook_s, "
        "optim_states, gpu_mem, cpu_offload, offload_gbps, "
        "cpu_optimizer_scale, bad_wrap, bad_wrap_ranks, skip_units, "
        "skip_ranks, skip_steps, short_ranks, short_steps; see "
        "docs/fsdp.md)",
        key);
    return HERD_ERR_PARSE;
}

static herd_status_t check_ranks(const ddp_int_list_t *l, int world,
                                 const char *key, char *err, size_t len)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] >= world) {
            snprintf(err, len, "fsdp.%s: rank %ld is out of range (%d ranks)",
                     key, l->v[i], world);
            return HERD_ERR_INVALID_ARG;
        }
    return HERD_OK;
}

herd_status_t fsdp_cfg_check(const fsdp_cfg_t *c, int world, int node_size,
                             char *err, size_t len)
{
    herd_status_t st =
        check_ranks(&c->bad_wrap_ranks, world, "bad_wrap_ranks", err, len);
    if (st == HERD_OK)
        st = check_ranks(&c->skip_ranks, world, "skip_ranks", err, len);
    if (st == HERD_OK)
        st = check_ranks(&c->short_ranks, world, "short_ranks", err, len);
    if (st == HERD_OK && c->hook_s > 0 && !c->gloo) {
        snprintf(err, len,
                 "fsdp.hook_s: only with backend gloo (on a GPU the CPU runs "
                 "ahead of the device and its hooks are hidden)");
        return HERD_ERR_INVALID_ARG;
    }
    if (st != HERD_OK || c->strategy != FSDP_HYBRID_SHARD)
        return st;
    int g = c->shard_group_size > 0 ? c->shard_group_size : node_size;
    if (g <= 0 || world % g) {
        snprintf(err, len,
                 "fsdp.shard_group_size: %d does not divide the %d ranks "
                 "(HYBRID_SHARD shards within groups of this size and "
                 "replicates across them)",
                 g, world);
        return HERD_ERR_INVALID_ARG;
    }
    return HERD_OK;
}

int fsdp_cfg_reshard_fwd(const fsdp_cfg_t *c)
{
    if (c->strategy == FSDP_NO_SHARD)
        return 0;
    if (c->reshard_after_forward >= 0)
        return c->reshard_after_forward;
    return c->strategy != FSDP_SHARD_GRAD_OP;
}

const char *fsdp_strategy_name(fsdp_strategy_t s)
{
    static const char *const names[] = {"FULL_SHARD", "SHARD_GRAD_OP",
                                        "NO_SHARD", "HYBRID_SHARD"};
    return (unsigned)s < 4 ? names[s] : "?";
}

const char *fsdp_bwd_prefetch_name(fsdp_bwd_prefetch_t p)
{
    return p == FSDP_BWD_PRE    ? "BACKWARD_PRE"
           : p == FSDP_BWD_POST ? "BACKWARD_POST"
                                : "none";
}

const char *fsdp_wrap_name(const fsdp_wrap_t *w, char *buf, size_t len)
{
    if (w->kind == FSDP_WRAP_MIN_PARAMS)
        snprintf(buf, len, "min_params=%llu",
                 (unsigned long long)w->min_params);
    else
        snprintf(buf, len, "%s",
                 w->kind == FSDP_WRAP_BLOCK      ? "transformer_block"
                 : w->kind == FSDP_WRAP_PREFIXES ? "units"
                                                 : "none");
    return buf;
}
