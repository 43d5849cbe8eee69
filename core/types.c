/* core/types.c - names, sizes and parsing of dtypes, ops, collectives and
 * algorithms (one table each, generated from the lists in types.h). */
#include <strings.h>

#include <herd/types.h>

static const char *const dtype_names[] = {
#define X_(e, s, n) s,
    HERD_DTYPE_LIST(X_)
#undef X_
};
static const size_t dtype_sizes[] = {
#define X_(e, s, n) n,
    HERD_DTYPE_LIST(X_)
#undef X_
};
static const char *const op_names[] = {
#define X_(e, s) s,
    HERD_OP_LIST(X_)
#undef X_
};
static const char *const coll_names[] = {
#define X_(e, s) s,
    HERD_COLL_LIST(X_)
#undef X_
};
static const char *const algo_names[] = {
#define X_(e, s) s,
    HERD_ALGO_LIST(X_)
#undef X_
};

/* Other spellings people type (PyTorch, NumPy, nccl-tests). */
typedef struct alias {
    const char *name;
    int value;
} alias_t;

static const alias_t dtype_aliases[] = {{"char", HERD_INT8},
                                        {"fp16", HERD_FLOAT16},
                                        {"half", HERD_FLOAT16},
                                        {"bf16", HERD_BFLOAT16},
                                        {"fp32", HERD_FLOAT32},
                                        {"float", HERD_FLOAT32},
                                        {"fp64", HERD_FLOAT64},
                                        {"double", HERD_FLOAT64},
                                        {"int", HERD_INT32},
                                        {"long", HERD_INT64},
                                        {NULL, 0}};
static const alias_t op_aliases[] = {
    {"product", HERD_PRODUCT}, {"mean", HERD_AVG}, {NULL, 0}};
static const alias_t coll_aliases[] = {
    {"allreduce", HERD_COLL_ALL_REDUCE},
    {"allgather", HERD_COLL_ALL_GATHER},
    {"reducescatter", HERD_COLL_REDUCE_SCATTER},
    {"alltoall", HERD_COLL_ALL_TO_ALL},
    {"allgatherv", HERD_COLL_ALL_GATHER_V},
    {"alltoallv", HERD_COLL_ALL_TO_ALL_V},
    {"all_to_all_single", HERD_COLL_ALL_TO_ALL_V},
    {NULL, 0}};
static const alias_t algo_aliases[] = {
    {"halving_doubling", HERD_ALGO_RHD},  {"hd", HERD_ALGO_RHD},
    {"pairwise", HERD_ALGO_DIRECT},       {"hierarchical", HERD_ALGO_HIER},
    {"recursive_doubling", HERD_ALGO_RD}, {NULL, 0}};

#define NAME_OF(table, n, v) ((unsigned)(v) < (n) ? (table)[(v)] : "unknown")

size_t herd_dtype_size(herd_dtype_t d)
{
    return (unsigned)d < HERD_DTYPE_COUNT ? dtype_sizes[d] : 0;
}
const char *herd_dtype_name(herd_dtype_t d)
{
    return NAME_OF(dtype_names, HERD_DTYPE_COUNT, d);
}
const char *herd_op_name(herd_op_t o)
{
    return NAME_OF(op_names, HERD_OP_COUNT, o);
}
const char *herd_coll_name(herd_coll_t c)
{
    return NAME_OF(coll_names, HERD_COLL_COUNT, c);
}
const char *herd_algo_name(herd_algo_t a)
{
    return NAME_OF(algo_names, HERD_ALGO_COUNT, a);
}

static herd_status_t parse_name(const char *name, const char *const *names,
                                int n, const alias_t *aliases, int *out)
{
    if (!name)
        return HERD_ERR_INVALID_ARG;
    for (int i = 0; i < n; i++)
        if (strcasecmp(name, names[i]) == 0) {
            *out = i;
            return HERD_OK;
        }
    for (const alias_t *a = aliases; a->name; a++)
        if (strcasecmp(name, a->name) == 0) {
            *out = a->value;
            return HERD_OK;
        }
    return HERD_ERR_NOT_FOUND;
}

#define DEFINE_PARSE(fn, type, names, n, aliases)                              \
    herd_status_t fn(const char *name, type *out)                              \
    {                                                                          \
        int v;                                                                 \
        herd_status_t st = parse_name(name, names, n, aliases, &v);            \
        if (st == HERD_OK)                                                     \
            *out = (type)v;                                                    \
        return st;                                                             \
    }

DEFINE_PARSE(herd_dtype_parse, herd_dtype_t, dtype_names, HERD_DTYPE_COUNT,
             dtype_aliases)
DEFINE_PARSE(herd_op_parse, herd_op_t, op_names, HERD_OP_COUNT, op_aliases)
DEFINE_PARSE(herd_coll_parse, herd_coll_t, coll_names, HERD_COLL_COUNT,
             coll_aliases)
DEFINE_PARSE(herd_algo_parse, herd_algo_t, algo_names, HERD_ALGO_COUNT,
             algo_aliases)

int herd_dtype_is_integer(herd_dtype_t d)
{
    return d == HERD_INT8 || d == HERD_UINT8 || d == HERD_INT32 ||
           d == HERD_INT64;
}
