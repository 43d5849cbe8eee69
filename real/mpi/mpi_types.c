/* real/mpi/mpi_types.c - herd's dtypes and reduce ops in MPI's terms.
 *
 * MPI has every herd integer and float type but float16 and bfloat16
 * (no standard MPI type; Open MPI 4.1 has no extension for them either):
 * those travel as MPI_UINT16_T and reduce with herd's own
 * kernels (core/reduce.c) wrapped by MPI_Op_create, one op per (dtype,
 * op) since a user function sees only MPI's datatype. The others use
 * MPI's built-in ops, so the numbers measured are Open MPI's, except
 * 8-bit sums and products (see own_ops). AVG is a SUM
 * that the engine divides afterwards, as torch's MPI backend has no AVG
 * either. */
#include "core/reduce.h"
#include "real/mpi/mpi_internal.h"

MPI_Datatype mpi_dtype(herd_dtype_t d)
{
    switch (d) {
    case HERD_INT8:
        return MPI_INT8_T;
    case HERD_UINT8:
        return MPI_UINT8_T;
    case HERD_INT32:
        return MPI_INT32_T;
    case HERD_INT64:
        return MPI_INT64_T;
    case HERD_FLOAT32:
        return MPI_FLOAT;
    case HERD_FLOAT64:
        return MPI_DOUBLE;
    default: /* float16, bfloat16: bits carried, reduced by herd */
        return MPI_UINT16_T;
    }
}

/* MPI's user function: inout[i] = in[i] (op) inout[i]; every herd op is
 * commutative, so herd's kernel may take them in either order. */
#define HERD_MPI_UOP(name, dtype, op)                                          \
    static void name(void *in, void *inout, int *len, MPI_Datatype *dt)        \
    {                                                                          \
        (void)dt;                                                              \
        core_reduce(inout, inout, in, (size_t)*len, dtype, op);                \
    }
HERD_MPI_UOP(half_sum, HERD_FLOAT16, HERD_SUM)
HERD_MPI_UOP(half_prod, HERD_FLOAT16, HERD_PRODUCT)
HERD_MPI_UOP(half_min, HERD_FLOAT16, HERD_MIN)
HERD_MPI_UOP(half_max, HERD_FLOAT16, HERD_MAX)
HERD_MPI_UOP(bf16_sum, HERD_BFLOAT16, HERD_SUM)
HERD_MPI_UOP(bf16_prod, HERD_BFLOAT16, HERD_PRODUCT)
HERD_MPI_UOP(bf16_min, HERD_BFLOAT16, HERD_MIN)
HERD_MPI_UOP(bf16_max, HERD_BFLOAT16, HERD_MAX)
HERD_MPI_UOP(i8_sum, HERD_INT8, HERD_SUM)
HERD_MPI_UOP(i8_prod, HERD_INT8, HERD_PRODUCT)
HERD_MPI_UOP(u8_sum, HERD_UINT8, HERD_SUM)
HERD_MPI_UOP(u8_prod, HERD_UINT8, HERD_PRODUCT)
#undef HERD_MPI_UOP

/* Where herd's kernel replaces MPI's op. 8-bit sums and products too:
 * Open MPI 4.1's AVX reductions saturate where C (and torch) wrap
 * (open-mpi/ompi#8045, "wontfix": a uint8 sum of 252 and 253 gave 255). */
static const struct {
    herd_dtype_t dtype;
    herd_op_t op;
    MPI_User_function *fn;
} own_ops[] = {{HERD_FLOAT16, HERD_SUM, half_sum},
               {HERD_FLOAT16, HERD_PRODUCT, half_prod},
               {HERD_FLOAT16, HERD_MIN, half_min},
               {HERD_FLOAT16, HERD_MAX, half_max},
               {HERD_BFLOAT16, HERD_SUM, bf16_sum},
               {HERD_BFLOAT16, HERD_PRODUCT, bf16_prod},
               {HERD_BFLOAT16, HERD_MIN, bf16_min},
               {HERD_BFLOAT16, HERD_MAX, bf16_max},
               {HERD_INT8, HERD_SUM, i8_sum},
               {HERD_INT8, HERD_PRODUCT, i8_prod},
               {HERD_UINT8, HERD_SUM, u8_sum},
               {HERD_UINT8, HERD_PRODUCT, u8_prod}};

herd_status_t mpi_ops_create(mpi_world_t *w)
{
    for (int d = 0; d < HERD_DTYPE_COUNT; d++)
        for (int o = 0; o < HERD_OP_COUNT; o++)
            w->own_ops[d][o] = MPI_OP_NULL;
    for (size_t i = 0; i < sizeof(own_ops) / sizeof(own_ops[0]); i++)
        if (MPI_Op_create(own_ops[i].fn, 1,
                          &w->own_ops[own_ops[i].dtype][own_ops[i].op]) !=
            MPI_SUCCESS)
            return HERD_ERR_INTERNAL;
    return HERD_OK;
}

void mpi_ops_free(mpi_world_t *w)
{
    for (int d = 0; d < HERD_DTYPE_COUNT; d++)
        for (int o = 0; o < HERD_OP_COUNT; o++)
            if (w->own_ops[d][o] != MPI_OP_NULL)
                MPI_Op_free(&w->own_ops[d][o]);
}

MPI_Op mpi_op(const mpi_world_t *w, herd_dtype_t d, herd_op_t op)
{
    herd_op_t o = op == HERD_AVG ? HERD_SUM : op;
    if (w->own_ops[d][o] != MPI_OP_NULL)
        return w->own_ops[d][o];
    switch (o) {
    case HERD_SUM:
        return MPI_SUM;
    case HERD_PRODUCT:
        return MPI_PROD;
    case HERD_MIN:
        return MPI_MIN;
    case HERD_MAX:
        return MPI_MAX;
    case HERD_BAND:
        return MPI_BAND;
    case HERD_BOR:
        return MPI_BOR;
    default:
        return MPI_BXOR;
    }
}
