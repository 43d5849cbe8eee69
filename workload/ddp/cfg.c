/* workload/ddp/cfg.c - DDP job options: defaults, setting them from text
 * (scenario files, --set, flags) and cross-checks. One table maps each key
 * to its field and kind, so every entry point accepts the same words. */
#include "workload/ddp/cfg.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void ddp_cfg_init(ddp_cfg_t *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->model, sizeof(c->model), "gpt2_small");
    c->bucket_cap_mb = 25;
    c->first_bucket_mb = 1; /* dist._DEFAULT_FIRST_BUCKET_BYTES */
    c->broadcast_buffers = 1;
    c->init_sync = 1;
    c->grad_accum = 1;
    c->grad_dtype = HERD_FLOAT32;
    c->steps = 4;
    c->compute_scale = 1;
    c->comm_streams = 1;
    c->batch_size = 1;
    c->epochs = 1;
    /* PowerSGDState's defaults */
    c->psgd.rank = 1;
    c->psgd.start_iter = 1000;
    c->psgd.min_compression_rate = 2;
    c->psgd.use_error_feedback = 1;
    c->psgd.warm_start = 1;
    c->psgd.compute_s = -1;
}

typedef enum kind { K_BOOL, K_INT, K_DOUBLE, K_LIST, K_STR, K_SPECIAL } kind_t;

typedef struct key_def {
    const char *key;
    kind_t kind;
    size_t off;
    double lo, hi; /* numeric range */
} key_def_t;

#define F(field) offsetof(ddp_cfg_t, field)
static const key_def_t keys[] = {
    {"model", K_STR, F(model), 0, 0},
    {"bucket_cap_mb", K_DOUBLE, F(bucket_cap_mb), 1e-6, 1e9},
    {"first_bucket_mb", K_DOUBLE, F(first_bucket_mb), 0, 1e9},
    {"find_unused_parameters", K_BOOL, F(find_unused), 0, 0},
    {"static_graph", K_BOOL, F(static_graph), 0, 0},
    {"gradient_as_bucket_view", K_BOOL, F(grad_as_bucket_view), 0, 0},
    {"broadcast_buffers", K_BOOL, F(broadcast_buffers), 0, 0},
    {"init_sync", K_BOOL, F(init_sync), 0, 0},
    {"grad_accum", K_INT, F(grad_accum), 1, 1e6},
    {"grad_dtype", K_SPECIAL, 0, 0, 0},
    {"comm_hook", K_SPECIAL, 0, 0, 0},
    {"amp", K_SPECIAL, 0, 0, 0},
    {"steps", K_INT, F(steps), 1, 1e7},
    {"compute_scale", K_DOUBLE, F(compute_scale), 1e-9, 1e9},
    {"comm_streams", K_INT, F(comm_streams), 0, 1024},
    {"unused_params", K_LIST, F(unused_params), 0, 1e9},
    {"unused_ranks", K_LIST, F(unused_ranks), 0, 1e9},
    {"unused_steps", K_LIST, F(unused_steps), 0, 1e9},
    {"dataset_size", K_INT, F(dataset_size), 0, 1e15},
    {"batch_size", K_INT, F(batch_size), 1, 1e9},
    {"drop_last", K_BOOL, F(drop_last), 0, 0},
    {"loader_drop_last", K_BOOL, F(loader_drop_last), 0, 0},
    {"shards", K_BOOL, F(shards), 0, 0},
    {"shard_sizes", K_LIST, F(shard_sizes), 0, 1e15},
    {"epochs", K_INT, F(epochs), 1, 1e6},
    {"join", K_BOOL, F(join), 0, 0},
    {"eval_every", K_INT, F(eval_every), 0, 1e9},
    {"eval_s", K_DOUBLE, F(eval_s), 0, 1e9},
    {"eval_collective", K_BOOL, F(eval_collective), 0, 0},
    {"checkpoint_every", K_INT, F(ckpt_every), 0, 1e9},
    {"checkpoint_s", K_DOUBLE, F(ckpt_s), 0, 1e9},
    {"checkpoint_barrier", K_SPECIAL, 0, 0, 0},
};
#undef F

/* "a whole number in [1, 1000000]": the form with its range. */
static const char *ddp_cfg_range(char *buf, size_t len, const char *what,
                                 double lo, double hi)
{
    if (hi >= 1e15)
        snprintf(buf, len, "%s in [%.15g, %g]", what, lo, hi);
    else
        snprintf(buf, len, "%s in [%.15g, %.15g]", what, lo, hi);
    return buf;
}

static herd_status_t bad(char *err, size_t len, const char *key,
                         const char *value, const char *expected)
{
    snprintf(err, len, "ddp.%s: bad value '%s'; expected %s", key, value,
             expected);
    return HERD_ERR_PARSE;
}

int ddp_cfg_parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1", "True"};
    static const char *const no[] = {"false", "no", "off", "0", "False"};
    for (size_t i = 0; i < 5; i++) {
        if (!strcasecmp(v, yes[i]))
            return *out = 1, 0;
        if (!strcasecmp(v, no[i]))
            return *out = 0, 0;
    }
    return -1;
}

int ddp_cfg_parse_num(const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    while (*end && isspace((unsigned char)*end))
        end++;
    if (end == v || *end || errno || !isfinite(d) || d < lo || d > hi)
        return -1;
    *out = d;
    return 0;
}

/* "[1, 2, 3]", "1,2,3", "[]" or a single number. */
int ddp_cfg_parse_list(const char *v, double lo, double hi, ddp_int_list_t *l)
{
    ddp_int_list_t out = {.n = 0};
    const char *p = v;
    while (isspace((unsigned char)*p))
        p++;
    int bracket = *p == '[';
    p += bracket;
    for (;;) {
        while (isspace((unsigned char)*p) || *p == ',')
            p++;
        if (*p == ']' || !*p)
            break;
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < lo || x > hi || out.n == DDP_LIST_MAX)
            return -1;
        out.v[out.n++] = x;
        p = end;
    }
    if ((*p == ']') != bracket || (*p == ']' && p[1]))
        return -1;
    *l = out;
    return 0;
}

/* The hook's name: the scalar form of comm_hook, or its `type`. */
static herd_status_t set_hook_type(ddp_cfg_t *c, const char *key, const char *v,
                                   char *err, size_t len)
{
    if (!strcmp(v, "none") || !strcmp(v, "allreduce"))
        c->hook = DDP_HOOK_NONE;
    else if (!strcmp(v, "fp16_compress") || !strcmp(v, "fp16"))
        c->hook = DDP_HOOK_FP16;
    else if (!strcmp(v, "bf16_compress") || !strcmp(v, "bf16"))
        c->hook = DDP_HOOK_BF16;
    else if (!strcmp(v, "powersgd") || !strcmp(v, "powerSGD"))
        c->hook = DDP_HOOK_POWERSGD;
    else
        return bad(err, len, key, v,
                   "none, fp16_compress, bf16_compress or powersgd");
    return HERD_OK;
}

/* comm_hook.KEY and amp.KEY: one setting of a mapping-valued option. */
static herd_status_t set_sub(ddp_cfg_t *c, const char *key, const char *v,
                             char *err, size_t len)
{
    ddp_powersgd_t *p = &c->psgd;
    double d;
    int b;
    if (!strcmp(key, "comm_hook.type"))
        return set_hook_type(c, key, v, err, len);
    if (!strcmp(key, "amp.grad_scaler")) {
        if (ddp_cfg_parse_bool(v, &c->amp.grad_scaler))
            return bad(err, len, key, v, "true or false");
        return HERD_OK;
    }
    if (!strcmp(key, "comm_hook.rank") ||
        !strcmp(key, "comm_hook.matrix_approximation_rank")) {
        if (ddp_cfg_parse_num(v, 1, 1e6, &d) || d != floor(d))
            return bad(err, len, key, v, "a whole number in [1, 1000000]");
        p->rank = (int)d;
    } else if (!strcmp(key, "comm_hook.start_iter") ||
               !strcmp(key, "comm_hook.start_powerSGD_iter")) {
        if (ddp_cfg_parse_num(v, 0, 1e9, &d) || d != floor(d))
            return bad(err, len, key, v, "a whole number in [0, 1000000000]");
        p->start_iter = (long)d;
    } else if (!strcmp(key, "comm_hook.min_compression_rate")) {
        if (ddp_cfg_parse_num(v, 0, 1e9, &d))
            return bad(err, len, key, v, "a number in [0, 1e9]");
        p->min_compression_rate = d;
    } else if (!strcmp(key, "comm_hook.use_error_feedback") ||
               !strcmp(key, "comm_hook.warm_start")) {
        if (ddp_cfg_parse_bool(v, &b))
            return bad(err, len, key, v, "true or false");
        *(key[10] == 'u' ? &p->use_error_feedback : &p->warm_start) = b;
    } else if (!strcmp(key, "comm_hook.compute_s")) {
        if (ddp_cfg_parse_num(v, 0, 1e6, &d))
            return bad(err, len, key, v, "seconds in [0, 1000000]");
        p->compute_s = d;
    } else {
        snprintf(err, len,
                 "ddp.%s: unknown key (comm_hook: type, rank, start_iter, "
                 "min_compression_rate, use_error_feedback, warm_start, "
                 "compute_s; amp: grad_scaler)",
                 key);
        return HERD_ERR_PARSE;
    }
    p->given = 1;
    return HERD_OK;
}

/* A flow mapping "{type: powersgd, rank: 2}" as `name`.KEY settings. */
static herd_status_t set_map(ddp_cfg_t *c, const char *name, const char *v,
                             char *err, size_t len)
{
    char buf[1024], key[96];
    size_t n = strlen(v);
    if (n < 2 || v[0] != '{' || v[n - 1] != '}' || n >= sizeof(buf))
        return bad(err, len, name, v,
                   !strcmp(name, "amp") ? "a mapping {grad_scaler: true}"
                                        : "a hook name or a mapping "
                                          "{type: powersgd, rank: 2, ...}");
    memcpy(buf, v + 1, n - 2);
    buf[n - 2] = '\0';
    for (char *save = NULL, *it = strtok_r(buf, ",", &save); it;
         it = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(it, ':');
        while (isspace((unsigned char)*it))
            it++;
        if (!*it)
            continue;
        if (!colon)
            return bad(err, len, name, v, "key: value pairs");
        *colon = '\0';
        char *val = colon + 1, *end = colon;
        while (end > it && isspace((unsigned char)end[-1]))
            *--end = '\0';
        while (isspace((unsigned char)*val))
            val++;
        for (end = val + strlen(val);
             end > val && isspace((unsigned char)end[-1]);)
            *--end = '\0';
        snprintf(key, sizeof(key), "%s.%s", name, it);
        herd_status_t st = set_sub(c, key, val, err, len);
        if (st != HERD_OK)
            return st;
    }
    return HERD_OK;
}

static herd_status_t set_hook(ddp_cfg_t *c, const char *v, char *err,
                              size_t len)
{
    if (v[0] != '{')
        return set_hook_type(c, "comm_hook", v, err, len);
    return set_map(c, "comm_hook", v, err, len);
}

static herd_status_t set_special(ddp_cfg_t *c, const char *key, const char *v,
                                 char *err, size_t len)
{
    if (!strcmp(key, "grad_dtype")) {
        if (herd_dtype_parse(v, &c->grad_dtype) != HERD_OK ||
            herd_dtype_is_integer(c->grad_dtype))
            return bad(err, len, key, v, "float32, float16 or bfloat16");
        c->have_grad_dtype = 1;
    } else if (!strcmp(key, "comm_hook")) {
        return set_hook(c, v, err, len);
    } else if (!strcmp(key, "amp")) {
        return set_map(c, "amp", v, err, len);
    } else {
        if (!strcmp(v, "none") || !strcmp(v, "false"))
            c->ckpt_barrier = DDP_CKPT_NO_BARRIER;
        else if (!strcmp(v, "all") || !strcmp(v, "true"))
            c->ckpt_barrier = DDP_CKPT_BARRIER;
        else if (!strcmp(v, "rank0"))
            c->ckpt_barrier = DDP_CKPT_RANK0_BARRIER;
        else
            return bad(err, len, key, v, "none, all or rank0");
    }
    return HERD_OK;
}

static herd_status_t set_field(ddp_cfg_t *c, const key_def_t *k, const char *v,
                               char *err, size_t len)
{
    char *base = (char *)c;
    char form[96];
    double d;
    switch (k->kind) {
    case K_BOOL:
        if (ddp_cfg_parse_bool(v, (int *)(base + k->off)))
            return bad(err, len, k->key, v, "true or false");
        return HERD_OK;
    case K_INT:
        if (ddp_cfg_parse_num(v, k->lo, k->hi, &d) || d != floor(d))
            return bad(err, len, k->key, v,
                       ddp_cfg_range(form, sizeof(form), "a whole number",
                                     k->lo, k->hi));
        if (!strcmp(k->key, "dataset_size") || !strcmp(k->key, "batch_size"))
            *(uint64_t *)(base + k->off) = (uint64_t)d;
        else if (!strcmp(k->key, "grad_accum") ||
                 !strcmp(k->key, "comm_streams"))
            *(int *)(base + k->off) = (int)d;
        else
            *(long *)(base + k->off) = (long)d;
        return HERD_OK;
    case K_DOUBLE:
        if (ddp_cfg_parse_num(v, k->lo, k->hi, (double *)(base + k->off)))
            return bad(
                err, len, k->key, v,
                ddp_cfg_range(form, sizeof(form), "a number", k->lo, k->hi));
        return HERD_OK;
    case K_LIST:
        if (ddp_cfg_parse_list(v, k->lo, k->hi,
                               (ddp_int_list_t *)(base + k->off)))
            return bad(err, len, k->key, v,
                       "a list of whole numbers, e.g. "
                       "[0, 3] (at most 64)");
        return HERD_OK;
    case K_STR:
        snprintf(base + k->off, sizeof(c->model), "%s", v);
        return HERD_OK;
    default:
        return set_special(c, k->key, v, err, len);
    }
}

herd_status_t ddp_cfg_set(ddp_cfg_t *c, const char *key, const char *value,
                          char *err, size_t errlen)
{
    if (!strncmp(key, "ddp.", 4))
        key += 4;
    if (!strncmp(key, "comm_hook.", 10) || !strncmp(key, "amp.", 4))
        return set_sub(c, key, value, err, errlen);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!strcmp(keys[i].key, key))
            return set_field(c, &keys[i], value, err, errlen);
    snprintf(err, errlen,
             "ddp.%s: unknown DDP option (known: model, "
             "bucket_cap_mb, find_unused_parameters, ... see "
             "docs/ddp.md)",
             key);
    return HERD_ERR_PARSE;
}

int ddp_list_has(const ddp_int_list_t *l, long v, int empty_is_all)
{
    if (l->n == 0)
        return empty_is_all;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return 1;
    return 0;
}

static herd_status_t check_list(const ddp_int_list_t *l, long limit,
                                const char *key, char *err, size_t len)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] >= limit) {
            snprintf(err, len, "ddp.%s: %ld is out of range (< %ld)", key,
                     l->v[i], limit);
            return HERD_ERR_INVALID_ARG;
        }
    return HERD_OK;
}

herd_status_t ddp_cfg_check(const ddp_cfg_t *c, int world, size_t nparams,
                            char *err, size_t len)
{
    herd_status_t st =
        check_list(&c->unused_params, (long)nparams, "unused_params", err, len);
    if (st == HERD_OK)
        st = check_list(&c->unused_ranks, world, "unused_ranks", err, len);
    if (st == HERD_OK && c->shard_sizes.n &&
        c->shard_sizes.n != (size_t)world) {
        snprintf(err, len, "ddp.shard_sizes: %zu entries for %d ranks",
                 c->shard_sizes.n, world);
        st = HERD_ERR_INVALID_ARG;
    }
    if (st == HERD_OK && c->psgd.given && c->hook != DDP_HOOK_POWERSGD) {
        snprintf(err, len,
                 "ddp.comm_hook: rank, start_iter and the other PowerSGD "
                 "settings need type powersgd (the hook is %s)",
                 ddp_hook_name(c->hook));
        st = HERD_ERR_INVALID_ARG;
    }
    /* PowerSGDState's own check */
    if (st == HERD_OK && c->hook == DDP_HOOK_POWERSGD &&
        (c->psgd.use_error_feedback || c->psgd.warm_start) &&
        c->psgd.start_iter <= 1) {
        snprintf(err, len,
                 "ddp.comm_hook: start_iter %ld: PowerSGD expects "
                 "start_iter > 1 when use_error_feedback or warm_start is "
                 "on (PowerSGDState raises ValueError)",
                 c->psgd.start_iter);
        st = HERD_ERR_INVALID_ARG;
    }
    if (st == HERD_OK &&
        (c->hook == DDP_HOOK_FP16 || c->hook == DDP_HOOK_BF16) &&
        c->have_grad_dtype && c->grad_dtype != HERD_FLOAT32) {
        snprintf(err, len,
                 "ddp.comm_hook: the compress hooks expect float32 "
                 "gradients, not %s",
                 herd_dtype_name(c->grad_dtype));
        st = HERD_ERR_INVALID_ARG;
    }
    return st;
}

const char *ddp_hook_name(ddp_hook_t h)
{
    return h == DDP_HOOK_FP16       ? "fp16_compress"
           : h == DDP_HOOK_BF16     ? "bf16_compress"
           : h == DDP_HOOK_POWERSGD ? "powersgd"
                                    : "none";
}
