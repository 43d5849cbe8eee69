/* core/reduce.c - reduction kernels (being written). */
#include "core/reduce.h"

int core_reduce_valid(herd_dtype_t dtype, herd_op_t op)
{
    if ((unsigned)dtype >= HERD_DTYPE_COUNT || (unsigned)op >= HERD_OP_COUNT)
        return 0;
    if (op == HERD_BAND || op == HERD_BOR || op == HERD_BXOR)
        return herd_dtype_is_integer(dtype);
    return 1;
}
