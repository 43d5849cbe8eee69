/* herd/types.h - data types, reduce ops, collective kinds and algorithms.
 *
 * Every enum comes with a name table (to string and from string) so files,
 * flags and logs share one spelling: "float32", "sum", "all_reduce",
 * "ring". */
#ifndef HERD_TYPES_H
#define HERD_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <herd/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types, as torch.distributed names them. */
#define HERD_DTYPE_LIST(X)                                                     \
    X(HERD_INT8, "int8", 1)                                                    \
    X(HERD_UINT8, "uint8", 1)                                                  \
    X(HERD_INT32, "int32", 4)                                                  \
    X(HERD_INT64, "int64", 8)                                                  \
    X(HERD_FLOAT16, "float16", 2)                                              \
    X(HERD_BFLOAT16, "bfloat16", 2)                                            \
    X(HERD_FLOAT32, "float32", 4)                                              \
    X(HERD_FLOAT64, "float64", 8)

typedef enum herd_dtype {
#define HERD_DTYPE_ENUM_(e, s, n) e,
    HERD_DTYPE_LIST(HERD_DTYPE_ENUM_)
#undef HERD_DTYPE_ENUM_
        HERD_DTYPE_COUNT
} herd_dtype_t;

/* Reduce ops (torch.distributed.ReduceOp). Bitwise ops only apply to
 * integer dtypes. AVG is SUM followed by a division by the group size. */
#define HERD_OP_LIST(X)                                                        \
    X(HERD_SUM, "sum")                                                         \
    X(HERD_AVG, "avg")                                                         \
    X(HERD_PRODUCT, "prod")                                                    \
    X(HERD_MIN, "min")                                                         \
    X(HERD_MAX, "max")                                                         \
    X(HERD_BAND, "band")                                                       \
    X(HERD_BOR, "bor")                                                         \
    X(HERD_BXOR, "bxor")

typedef enum herd_op {
#define HERD_OP_ENUM_(e, s) e,
    HERD_OP_LIST(HERD_OP_ENUM_)
#undef HERD_OP_ENUM_
        HERD_OP_COUNT
} herd_op_t;

/* Collective and point-to-point operation kinds. The *_v kinds take a
 * count per rank (uneven blocks: torch's all_gather / reduce_scatter with
 * tensors of different sizes, all_to_all_single with split sizes). */
#define HERD_COLL_LIST(X)                                                      \
    X(HERD_COLL_ALL_REDUCE, "all_reduce")                                      \
    X(HERD_COLL_BROADCAST, "broadcast")                                        \
    X(HERD_COLL_REDUCE, "reduce")                                              \
    X(HERD_COLL_ALL_GATHER, "all_gather")                                      \
    X(HERD_COLL_GATHER, "gather")                                              \
    X(HERD_COLL_SCATTER, "scatter")                                            \
    X(HERD_COLL_REDUCE_SCATTER, "reduce_scatter")                              \
    X(HERD_COLL_ALL_TO_ALL, "all_to_all")                                      \
    X(HERD_COLL_BARRIER, "barrier")                                            \
    X(HERD_COLL_SEND, "send")                                                  \
    X(HERD_COLL_RECV, "recv")                                                  \
    X(HERD_COLL_ALL_GATHER_V, "all_gather_v")                                  \
    X(HERD_COLL_REDUCE_SCATTER_V, "reduce_scatter_v")                          \
    X(HERD_COLL_ALL_TO_ALL_V, "all_to_all_v")                                  \
    X(HERD_COLL_MONITORED_BARRIER, "monitored_barrier")

typedef enum herd_coll {
#define HERD_COLL_ENUM_(e, s) e,
    HERD_COLL_LIST(HERD_COLL_ENUM_)
#undef HERD_COLL_ENUM_
        HERD_COLL_COUNT
} herd_coll_t;

/* Collective algorithms (core/ lowers each into per-rank schedules).
 * AUTO lets the engine choose by size; NCCL means "NCCL's own
 * implementation" on the nccl engine and its model in the simulator;
 * GLOO means PyTorch's gloo backend: its algorithms and its rendezvous
 * transport, modelled in the simulator (other engines run their own
 * choice, as for AUTO). */
#define HERD_ALGO_LIST(X)                                                      \
    X(HERD_ALGO_AUTO, "auto")                                                  \
    X(HERD_ALGO_RING, "ring")                                                  \
    X(HERD_ALGO_TREE, "tree")                                                  \
    X(HERD_ALGO_RHD, "rhd")                                                    \
    X(HERD_ALGO_DIRECT, "direct")                                              \
    X(HERD_ALGO_BINOMIAL, "binomial")                                          \
    X(HERD_ALGO_HIER, "hier")                                                  \
    X(HERD_ALGO_RD, "rd")                                                      \
    X(HERD_ALGO_NCCL, "nccl")                                                  \
    X(HERD_ALGO_GLOO, "gloo")

typedef enum herd_algo {
#define HERD_ALGO_ENUM_(e, s) e,
    HERD_ALGO_LIST(HERD_ALGO_ENUM_)
#undef HERD_ALGO_ENUM_
        HERD_ALGO_COUNT
} herd_algo_t;

/* Size in bytes of one element; 0 for an invalid dtype. */
size_t herd_dtype_size(herd_dtype_t dtype);
const char *herd_dtype_name(herd_dtype_t dtype);
const char *herd_op_name(herd_op_t op);
const char *herd_coll_name(herd_coll_t coll);
const char *herd_algo_name(herd_algo_t algo);

/* Parse a name (as printed by the *_name functions, case-insensitive;
 * "fp32", "half", "bf16", "double", "float", "int", "prod"/"product" are
 * also accepted). *out is set only on success. */
herd_status_t herd_dtype_parse(const char *name, herd_dtype_t *out);
herd_status_t herd_op_parse(const char *name, herd_op_t *out);
herd_status_t herd_coll_parse(const char *name, herd_coll_t *out);
herd_status_t herd_algo_parse(const char *name, herd_algo_t *out);

/* 1 for integer dtypes (where bitwise ops are defined), else 0. */
int herd_dtype_is_integer(herd_dtype_t dtype);

#ifdef __cplusplus
}
#endif
#endif
