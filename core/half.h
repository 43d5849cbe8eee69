/* core/half.h - block conversions between float16 / bfloat16 and float32.
 *
 * The reduction kernels widen a block of 16-bit elements into a float32
 * stack buffer, reduce there and narrow back; the scalar conversions
 * (declared in core/reduce.h) are defined next to these loops in
 * core/half.c so the compiler can inline and vectorise them. */
#ifndef HERD_CORE_HALF_H
#define HERD_CORE_HALF_H

#include <stddef.h>
#include <stdint.h>

void core_half_to_float_n(float *dst, const uint16_t *src, size_t n);
void core_float_to_half_n(uint16_t *dst, const float *src, size_t n);
void core_bf16_to_float_n(float *dst, const uint16_t *src, size_t n);
void core_float_to_bf16_n(uint16_t *dst, const float *src, size_t n);

#endif
