/* core/half.c - float16 and bfloat16 <-> float32 conversions.
 *
 * Bit manipulation only (no _Float16 / F16C), so the result is the same on
 * every compiler and target, and branch-free so the block converters
 * vectorise (built with -O3 -fno-trapping-math, see core/CMakeLists.txt:
 * otherwise GCC moves the float additions under a branch, as they might
 * raise an exception flag, and gives up). Narrowing rounds to nearest even,
 * overflows to infinity, keeps subnormals and turns every NaN into a quiet NaN
 * of the same sign. Widening is exact. */
#include <string.h>

#include "core/half.h"
#include "core/reduce.h"

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
    /* Rebias the exponent by a multiplication: exact for normals and turns
     * half subnormals (float32 denormals here) into float32 normals. */
    uint32_t finite = f32_bits(bits_f32(em) * 0x1p112f);
    uint32_t special = em | 0x7f800000u; /* inf or NaN, payload kept */
    /* Signed comparisons (em < 2^31): SSE2 has no unsigned ones. */
    return bits_f32(sign | ((int32_t)em >= 0x7c00 << 13 ? special : finite));
}

static inline uint16_t f32_to_half(float f)
{
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t ax = (int32_t)(x & 0x7fffffffu); /* signed compares: see above */
    /* Below 2^-14 the result is a half subnormal: adding 0.5f puts the
     * value's 2^-24 quanta in the low mantissa bits, and the float32
     * addition itself rounds to nearest even. */
    uint32_t sub = f32_bits(bits_f32((uint32_t)ax) + 0.5f) - f32_bits(0.5f);
    /* Normal: rebias by -112, add the rounding bias (0xfff plus the lowest
     * kept bit, for ties to even) and drop 13 mantissa bits. */
    uint32_t uax = (uint32_t)ax;
    uint32_t norm = (uax + 0xc8000fffu + ((uax >> 13) & 1u)) >> 13;
    uint32_t nan = 0x7e00u | ((uax >> 13) & 0x3ffu);
    uint32_t r = ax < 0x38800000 ? sub : norm;
    /* 0x477ff000 is 65520, halfway between 65504 and 65536: ties go to the
     * even neighbour, which is infinity. */
    r = ax >= 0x477ff000 ? 0x7c00u : r;
    r = ax > 0x7f800000 ? nan : r;
    return (uint16_t)(sign | r);
}

static inline float bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

static inline uint16_t f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    /* Carry into the exponent is the right result: the largest finite
     * values round up to infinity, subnormals to the next binade. */
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x0040u;
    int32_t ax = (int32_t)(x & 0x7fffffffu); /* signed compare: see above */
    return (uint16_t)(ax > 0x7f800000 ? nan : rounded);
}

/* The exported functions wrap static ones: with -fPIC, GCC will not inline
 * an exported function into the loops below (it could be interposed), and
 * a call per element would not vectorise. */
float core_half_to_float(uint16_t h)
{
    return half_to_f32(h);
}
uint16_t core_float_to_half(float f)
{
    return f32_to_half(f);
}
float core_bf16_to_float(uint16_t h)
{
    return bf16_to_f32(h);
}
uint16_t core_float_to_bf16(float f)
{
    return f32_to_bf16(f);
}

/* On x86-64 the block converters also come in an AVX2 version, picked at
 * load time (twice the throughput of the SSE2 baseline); elsewhere, and
 * for compilers without target_clones, only the portable version. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__clang__)
#if __has_attribute(target_clones)
#define HALF_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef HALF_CLONES
#define HALF_CLONES
#endif

/* dst and src are different buffers. */
HALF_CLONES void core_half_to_float_n(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = half_to_f32(src[i]);
}

HALF_CLONES void core_float_to_half_n(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = f32_to_half(src[i]);
}

HALF_CLONES void core_bf16_to_float_n(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_to_f32(src[i]);
}

HALF_CLONES void core_float_to_bf16_n(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = f32_to_bf16(src[i]);
}
