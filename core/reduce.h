/* core/reduce.h - reduction kernels for every (dtype, op), and the
 * float16 / bfloat16 conversions they use.
 *
 * float16 and bfloat16 accumulate in float32 and round to nearest even
 * on store; NaN and infinities propagate as IEEE arithmetic does. Integer
 * arithmetic wraps (two's complement) as in PyTorch. The loops are written
 * so the compiler vectorises them (no aliasing between dst and the inputs
 * except dst == a exactly). */
#ifndef HERD_CORE_REDUCE_H
#define HERD_CORE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

/* dst[i] = a[i] (op) b[i] for i < count. AVG reduces as SUM (the caller
 * divides once at the end with core_reduce_avg_finish). dst may equal a or
 * b. HERD_ERR_INVALID_ARG for a bitwise op on a float dtype or an unknown
 * dtype/op. */
herd_status_t core_reduce(void *dst, const void *a, const void *b,
                          size_t count, herd_dtype_t dtype, herd_op_t op);

/* Divide every element by p (integers: truncating division, as torch). */
herd_status_t core_reduce_avg_finish(void *buf, size_t count,
                                     herd_dtype_t dtype, int p);

/* 1 if op is defined for dtype (bitwise ops need integers). */
int core_reduce_valid(herd_dtype_t dtype, herd_op_t op);

/* Element i of a typed buffer, as a double (float16/bfloat16 widened),
 * and the reverse (integers converted by C's rules, floats rounded to
 * nearest even; integers exact below 2^53). For result checks and test
 * data, not hot loops. */
double core_dtype_load(herd_dtype_t dtype, const void *buf, size_t i);
void core_dtype_store(herd_dtype_t dtype, void *buf, size_t i, double v);

float core_half_to_float(uint16_t h);
uint16_t core_float_to_half(float f);   /* round to nearest even */
float core_bf16_to_float(uint16_t h);
uint16_t core_float_to_bf16(float f);   /* round to nearest even */

#endif
