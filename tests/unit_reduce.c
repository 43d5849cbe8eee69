/* tests/unit_reduce.c - reduction kernels and float16 / bfloat16
 * conversions against an independent float64 / int64 reference.
 *
 * The reference decodes and rounds 16-bit floats with double arithmetic
 * (ldexp, nearbyint), not with the bit tricks of core/half.c. Every
 * two-operand combine is correctly rounded (float32 has 2p+2 bits for
 * float16 and bfloat16), so float results must match bit for bit; NaNs
 * only need to be NaNs. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/reduce.h"
#include "support/testutil.h"

/* ck_assert reports its location through a pipe on every call; in loops of
 * 10^5 checks (slow under ASan) test first and only then fail. */
#define EXPECT(cond, ...)                                                      \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

/* ---- reference arithmetic ------------------------------------------- */

typedef struct fmt16 {
    int mant; /* stored mantissa bits */
    int bias; /* exponent bias; also the largest exponent */
} fmt16_t;

static const fmt16_t F16 = {10, 15};
static const fmt16_t BF16 = {7, 127};

/* Value of a 16-bit pattern, treating the all-ones exponent as finite
 * (used to find midpoints next to the largest value). */
static double raw_decode16(uint16_t h, fmt16_t f)
{
    int e = (h & 0x7fff) >> f.mant;
    double m = h & ((1 << f.mant) - 1);
    double v = e ? ldexp(m + ldexp(1, f.mant), e - f.bias - f.mant)
                 : ldexp(m, 1 - f.bias - f.mant);
    return (h & 0x8000) ? -v : v;
}

static double decode16(uint16_t h, fmt16_t f)
{
    int emax = (1 << (15 - f.mant)) - 1;
    if (((h & 0x7fff) >> f.mant) == emax) {
        double v = (h & ((1 << f.mant) - 1)) ? NAN : INFINITY;
        return (h & 0x8000) ? -v : v;
    }
    return raw_decode16(h, f);
}

/* Round a double to nearest even in the 16-bit format. */
static uint16_t encode16(double x, fmt16_t f)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    int emax = (1 << (15 - f.mant)) - 1;
    if (isnan(x))
        return (uint16_t)(sign | (emax << f.mant) | (1 << (f.mant - 1)));
    double ax = fabs(x);
    int emin = 1 - f.bias;
    int e = ax == 0 || isinf(ax) ? emin : ilogb(ax);
    if (e < emin)
        e = emin;
    double quantum = ldexp(1, e - f.mant);
    double r = nearbyint(ax / quantum) * quantum;
    if (isinf(ax) || r >= ldexp(1, f.bias + 1))
        return (uint16_t)(sign | (emax << f.mant));
    if (r < ldexp(1, emin))
        return (uint16_t)(sign | (uint16_t)(r / ldexp(1, emin - f.mant)));
    int re = ilogb(r);
    uint16_t m = (uint16_t)(r / ldexp(1, re - f.mant) - ldexp(1, f.mant));
    return (uint16_t)(sign | ((re + f.bias) << f.mant) | m);
}

static int is_float(herd_dtype_t dt)
{
    return !herd_dtype_is_integer(dt);
}

static double get_f(const void *buf, herd_dtype_t dt, size_t i)
{
    switch (dt) {
    case HERD_FLOAT16:
        return decode16(((const uint16_t *)buf)[i], F16);
    case HERD_BFLOAT16:
        return decode16(((const uint16_t *)buf)[i], BF16);
    case HERD_FLOAT32:
        return ((const float *)buf)[i];
    default:
        return ((const double *)buf)[i];
    }
}

static void set_f(void *buf, herd_dtype_t dt, size_t i, double v)
{
    switch (dt) {
    case HERD_FLOAT16:
        ((uint16_t *)buf)[i] = encode16(v, F16);
        break;
    case HERD_BFLOAT16:
        ((uint16_t *)buf)[i] = encode16(v, BF16);
        break;
    case HERD_FLOAT32:
        ((float *)buf)[i] = (float)v;
        break;
    default:
        ((double *)buf)[i] = v;
        break;
    }
}

static int64_t get_i(const void *buf, herd_dtype_t dt, size_t i)
{
    switch (dt) {
    case HERD_INT8:
        return ((const int8_t *)buf)[i];
    case HERD_UINT8:
        return ((const uint8_t *)buf)[i];
    case HERD_INT32:
        return ((const int32_t *)buf)[i];
    default:
        return ((const int64_t *)buf)[i];
    }
}

/* Store the low bits: two's complement wrap-around. */
static void set_i(void *buf, herd_dtype_t dt, size_t i, uint64_t v)
{
    switch (dt) {
    case HERD_INT8:
    case HERD_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case HERD_INT32:
        ((uint32_t *)buf)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)buf)[i] = v;
        break;
    }
}

/* torch.minimum / maximum: NaN wins; -0 orders below +0. */
static double ref_min(double x, double y)
{
    if (isnan(x) || isnan(y))
        return isnan(x) ? x : y;
    if (x == y)
        return signbit(x) ? x : y;
    return x < y ? x : y;
}

static double ref_max(double x, double y)
{
    if (isnan(x) || isnan(y))
        return isnan(x) ? x : y;
    if (x == y)
        return signbit(x) ? y : x;
    return x > y ? x : y;
}

static double ref_float_op(double x, double y, herd_op_t op)
{
    switch (op) {
    case HERD_PRODUCT:
        return x * y;
    case HERD_MIN:
        return ref_min(x, y);
    case HERD_MAX:
        return ref_max(x, y);
    default:
        return x + y; /* SUM, AVG */
    }
}

static uint64_t ref_int_op(int64_t sx, int64_t sy, herd_op_t op)
{
    uint64_t x = (uint64_t)sx, y = (uint64_t)sy;
    switch (op) {
    case HERD_PRODUCT:
        return x * y;
    case HERD_MIN:
        return (uint64_t)(sx < sy ? sx : sy);
    case HERD_MAX:
        return (uint64_t)(sx > sy ? sx : sy);
    case HERD_BAND:
        return x & y;
    case HERD_BOR:
        return x | y;
    case HERD_BXOR:
        return x ^ y;
    default:
        return x + y; /* SUM, AVG */
    }
}

static void ref_reduce(void *exp, const void *a, const void *b, size_t n,
                       herd_dtype_t dt, herd_op_t op)
{
    for (size_t i = 0; i < n; i++) {
        if (is_float(dt))
            set_f(exp, dt, i,
                  ref_float_op(get_f(a, dt, i), get_f(b, dt, i), op));
        else
            set_i(exp, dt, i, ref_int_op(get_i(a, dt, i), get_i(b, dt, i), op));
    }
}

/* Element-wise identity (bits), except that any NaN equals any NaN. */
static void assert_same(const void *exp, const void *got, size_t n,
                        herd_dtype_t dt, const char *what)
{
    size_t es = herd_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        const char *e = (const char *)exp + i * es;
        const char *g = (const char *)got + i * es;
        if (is_float(dt) && isnan(get_f(exp, dt, i)) &&
            isnan(get_f(got, dt, i)))
            continue;
        if (memcmp(e, g, es) != 0) {
            if (is_float(dt))
                ck_abort_msg("%s %s: element %zu: expected %a got %a", what,
                             herd_dtype_name(dt), i, get_f(exp, dt, i),
                             get_f(got, dt, i));
            ck_abort_msg("%s %s: element %zu: expected %lld got %lld", what,
                         herd_dtype_name(dt), i, (long long)get_i(exp, dt, i),
                         (long long)get_i(got, dt, i));
        }
    }
}

/* ---- random data ------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: enough for test data, and reproducible. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

/* mode 0: random bit patterns (every exponent, NaN, inf, subnormals);
 * mode 1: values of similar magnitude, so sums really round. */
static void fill_random(void *buf, herd_dtype_t dt, size_t n, uint64_t *rng,
                        int mode)
{
    size_t es = herd_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng_next(rng);
        if (mode == 1 && is_float(dt)) {
            double v =
                ldexp((double)(r >> 11) / 0x1p53 * 2 - 1, (int)(r & 7) - 3);
            set_f(buf, dt, i, v);
        } else {
            memcpy((char *)buf + i * es, &r, es); /* little-endian low bytes */
        }
    }
}

/* ---- conversions ------------------------------------------------------ */

static void check_all_patterns(fmt16_t f, float (*widen)(uint16_t),
                               uint16_t (*narrow)(float))
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        double ref = decode16((uint16_t)h, f);
        float w = widen((uint16_t)h);
        uint16_t back = narrow(w);
        int nanexp = (1 << (15 - f.mant)) - 1;
        if (isnan(ref)) {
            EXPECT(isnan(w) && !signbit(w) == !(h & 0x8000),
                   "pattern 0x%04x: widened to %a", h, (double)w);
            EXPECT(((back & 0x7fff) >> f.mant) == nanexp &&
                       (back & (1 << (f.mant - 1))) &&
                       (back & 0x8000) == (h & 0x8000),
                   "NaN 0x%04x came back as 0x%04x", h, back);
        } else {
            EXPECT((double)w == ref && !signbit(w) == !signbit(ref),
                   "pattern 0x%04x: expected %a got %a", h, ref, (double)w);
            EXPECT(back == h, "pattern 0x%04x came back as 0x%04x", h, back);
        }
    }
}

START_TEST(test_half_all_patterns)
{
    check_all_patterns(F16, core_half_to_float, core_float_to_half);
}
END_TEST

START_TEST(test_bf16_all_patterns)
{
    check_all_patterns(BF16, core_bf16_to_float, core_float_to_bf16);
}
END_TEST

/* The block converters (vectorised, possibly an AVX2 clone) agree with the
 * scalar ones on every pattern and on random floats. */
START_TEST(test_block_conversions)
{
    enum { NP = 0x10000 };
    uint16_t *h = malloc(NP * sizeof *h), *back = malloc(NP * sizeof *h);
    float *f = malloc(NP * sizeof *f);
    ck_assert(h && back && f);
    for (int bf = 0; bf < 2; bf++) {
        for (uint32_t i = 0; i < NP; i++)
            h[i] = (uint16_t)i;
        (bf ? core_bf16_to_float_n : core_half_to_float_n)(f, h, NP);
        for (uint32_t i = 0; i < NP; i++) {
            float s = bf ? core_bf16_to_float(h[i]) : core_half_to_float(h[i]);
            EXPECT(memcmp(&s, &f[i], sizeof s) == 0, "0x%04x", i);
        }
        uint64_t rng = 3;
        for (uint32_t i = 0; i < NP; i++) {
            uint32_t bits = (uint32_t)rng_next(&rng);
            memcpy(&f[i], &bits, sizeof bits);
        }
        (bf ? core_float_to_bf16_n : core_float_to_half_n)(back, f, NP);
        for (uint32_t i = 0; i < NP; i++)
            EXPECT(back[i] == (bf ? core_float_to_bf16(f[i])
                                  : core_float_to_half(f[i])),
                   "narrowing %a: block 0x%04x", (double)f[i], back[i]);
    }
    free(h), free(back), free(f);
}
END_TEST

/* Exact midpoints between neighbours round to the even one; a float ulp
 * either side rounds to the nearer one. */
static void check_midpoints(fmt16_t f, uint16_t last, uint16_t (*narrow)(float))
{
    for (uint32_t h = 0; h <= last; h++) {
        for (int neg = 0; neg < 2; neg++) {
            uint16_t s = neg ? 0x8000 : 0;
            float lo = (float)raw_decode16((uint16_t)(h | s), f);
            float hi = (float)raw_decode16((uint16_t)((h + 1) | s), f);
            float mid = (float)(((double)lo + (double)hi) / 2);
            EXPECT((double)mid * 2 == (double)lo + (double)hi,
                   "midpoint after 0x%04x not exact", h);
            uint16_t even = (uint16_t)((h & 1 ? h + 1 : h) | s);
            EXPECT(narrow(mid) == even, "midpoint after 0x%04x: 0x%04x", h | s,
                   narrow(mid));
            float below = nextafterf(mid, 0);
            float above = nextafterf(mid, neg ? -INFINITY : INFINITY);
            EXPECT(narrow(below) == (h | s), "below mid after 0x%04x", h | s);
            EXPECT(narrow(above) == ((h + 1) | s), "above mid after 0x%04x",
                   h | s);
        }
    }
}

START_TEST(test_half_midpoints)
{
    /* 0x7bff's upper neighbour is 65536: ties at 65520 go to infinity. */
    check_midpoints(F16, 0x7bff, core_float_to_half);
}
END_TEST

START_TEST(test_bf16_midpoints)
{
    /* The midpoint above bfloat16's largest value exceeds FLT_MAX. */
    check_midpoints(BF16, 0x7f7e, core_float_to_bf16);
}
END_TEST

START_TEST(test_narrow_random_floats)
{
    uint64_t rng = 0x5eed;
    for (int i = 0; i < 200000; i++) {
        uint32_t bits = (uint32_t)rng_next(&rng);
        float x;
        memcpy(&x, &bits, sizeof x);
        uint16_t h = core_float_to_half(x), b = core_float_to_bf16(x);
        if (isnan(x)) {
            EXPECT(isnan(core_half_to_float(h)) && isnan(core_bf16_to_float(b)),
                   "NaN 0x%08x narrowed to 0x%04x / 0x%04x", bits, h, b);
            continue;
        }
        EXPECT(h == encode16(x, F16), "%a -> half 0x%04x", (double)x, h);
        EXPECT(b == encode16(x, BF16), "%a -> bf16 0x%04x", (double)x, b);
    }
}
END_TEST

START_TEST(test_conversion_special_values)
{
    ck_assert_uint_eq(core_float_to_half(65504.0f), 0x7bff);
    ck_assert_uint_eq(core_float_to_half(65519.0f), 0x7bff);
    ck_assert_uint_eq(core_float_to_half(65520.0f), 0x7c00);
    ck_assert_uint_eq(core_float_to_half(1e6f), 0x7c00);
    ck_assert_uint_eq(core_float_to_half(-INFINITY), 0xfc00);
    ck_assert_uint_eq(core_float_to_half(-0.0f), 0x8000);
    ck_assert_uint_eq(core_float_to_half(0x1p-14f), 0x0400);
    ck_assert_uint_eq(core_float_to_half(0x1p-24f), 0x0001);
    ck_assert_uint_eq(core_float_to_half(0x1p-25f), 0x0000); /* tie: even */
    ck_assert_uint_eq(core_float_to_half(0x1.8p-25f), 0x0001);
    ck_assert_uint_eq(core_float_to_half(0x1.8p-24f), 0x0002); /* tie: even */
    ck_assert_uint_eq(core_float_to_half(-0x1p-30f), 0x8000);
    ck_assert(isnan(core_half_to_float(core_float_to_half(NAN))));
    ck_assert_uint_eq(core_float_to_bf16(FLT_MAX), 0x7f80);
    ck_assert_uint_eq(core_float_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(core_float_to_bf16(0x1.01p0f), 0x3f80); /* tie: even */
    ck_assert_uint_eq(core_float_to_bf16(0x1.03p0f), 0x3f82); /* tie: even */
    ck_assert_uint_eq(core_float_to_bf16(0x1p-149f), 0x0000);
    ck_assert_uint_eq(core_float_to_bf16(-0.0f), 0x8000);
    /* A signalling float NaN whose payload lies in the dropped bits. */
    uint32_t snan_bits = 0x7f800001u;
    float snan;
    memcpy(&snan, &snan_bits, sizeof snan);
    ck_assert(isnan(core_bf16_to_float(core_float_to_bf16(snan))));
    ck_assert(isnan(core_half_to_float(core_float_to_half(snan))));
    ck_assert_float_eq(core_half_to_float(0x3c00), 1.0f);
    ck_assert_float_eq(core_half_to_float(0x0001), 0x1p-24f);
    ck_assert_float_eq(core_bf16_to_float(0xc040), -3.0f);
}
END_TEST

/* ---- kernels ---------------------------------------------------------- */

/* Crosses several float16 blocks and leaves a ragged tail. */
#define N 1037

static void check_random(herd_dtype_t dt, herd_op_t op, int mode, uint64_t *rng)
{
    size_t bytes = N * herd_dtype_size(dt);
    char *a = malloc(bytes), *b = malloc(bytes), *exp = malloc(bytes);
    char *got = malloc(bytes), *inplace = malloc(bytes);
    ck_assert(a && b && exp && got && inplace);
    fill_random(a, dt, N, rng, mode);
    fill_random(b, dt, N, rng, mode);
    ref_reduce(exp, a, b, N, dt, op);
    ck_assert_int_eq(core_reduce(got, a, b, N, dt, op), HERD_OK);
    assert_same(exp, got, N, dt, herd_op_name(op));
    memcpy(inplace, a, bytes); /* dst == a */
    ck_assert_int_eq(core_reduce(inplace, inplace, b, N, dt, op), HERD_OK);
    assert_same(exp, inplace, N, dt, "in place (dst == a)");
    memcpy(inplace, b, bytes); /* dst == b */
    ck_assert_int_eq(core_reduce(inplace, a, inplace, N, dt, op), HERD_OK);
    assert_same(exp, inplace, N, dt, "in place (dst == b)");
    free(a), free(b), free(exp), free(got), free(inplace);
}

/* One loop iteration per dtype: every op against the reference. */
START_TEST(test_reduce_random)
{
    herd_dtype_t dt = (herd_dtype_t)_i;
    uint64_t rng = 0x1234567u + (uint64_t)_i;
    for (int op = 0; op < HERD_OP_COUNT; op++) {
        if (!core_reduce_valid(dt, (herd_op_t)op)) {
            ck_assert(is_float(dt));
            ck_assert(op >= HERD_BAND);
            continue;
        }
        for (int mode = 0; mode < 2; mode++)
            check_random(dt, (herd_op_t)op, mode, &rng);
    }
}
END_TEST

/* All pairs of special values, for every float dtype and op. */
START_TEST(test_reduce_special_values)
{
    herd_dtype_t dt = (herd_dtype_t)(HERD_FLOAT16 + _i);
    double tiny = dt == HERD_FLOAT16    ? 0x1p-24
                  : dt == HERD_BFLOAT16 ? 0x1p-133
                  : dt == HERD_FLOAT32  ? 0x1p-149
                                        : 0x1p-1074;
    double big = dt == HERD_FLOAT16    ? 65504
                 : dt == HERD_BFLOAT16 ? 0x1.fep127
                 : dt == HERD_FLOAT32  ? FLT_MAX
                                       : DBL_MAX;
    const double v[] = {NAN,  -NAN, INFINITY, -INFINITY, 0.0,      -0.0,
                        1.0,  -1.0, tiny,     -tiny,     3 * tiny, big,
                        -big, 0.5,  1.5,      -2.5};
    enum { K = sizeof v / sizeof v[0] };
    size_t es = herd_dtype_size(dt);
    _Alignas(8) char a[K * K * 8], b[K * K * 8], exp[K * K * 8];
    _Alignas(8) char got[K * K * 8];
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            set_f(a, dt, (size_t)(i * K + j), v[i]);
            set_f(b, dt, (size_t)(i * K + j), v[j]);
        }
    for (int op = HERD_SUM; op <= HERD_MAX; op++) {
        ref_reduce(exp, a, b, K * K, dt, (herd_op_t)op);
        memset(got, 0x55, K * K * es);
        ck_assert_int_eq(core_reduce(got, a, b, K * K, dt, (herd_op_t)op),
                         HERD_OK);
        assert_same(exp, got, K * K, dt, herd_op_name((herd_op_t)op));
    }
}
END_TEST

static double reduce2(herd_dtype_t dt, herd_op_t op, double x, double y)
{
    _Alignas(8) char a[8], b[8], d[8];
    set_f(a, dt, 0, x);
    set_f(b, dt, 0, y);
    ck_assert_int_eq(core_reduce(d, a, b, 1, dt, op), HERD_OK);
    return get_f(d, dt, 0);
}

/* The IEEE / torch behaviour, spelt out for readers of this file. */
START_TEST(test_reduce_ieee_facts)
{
    for (herd_dtype_t dt = HERD_FLOAT16; dt <= HERD_FLOAT64; dt++) {
        ck_assert(isnan(reduce2(dt, HERD_SUM, INFINITY, -INFINITY)));
        ck_assert(isnan(reduce2(dt, HERD_PRODUCT, INFINITY, 0)));
        ck_assert(isnan(reduce2(dt, HERD_SUM, NAN, 1)));
        ck_assert(isnan(reduce2(dt, HERD_MIN, NAN, 1)));
        ck_assert(isnan(reduce2(dt, HERD_MIN, 1, NAN)));
        ck_assert(isnan(reduce2(dt, HERD_MAX, 1, NAN)));
        ck_assert(isnan(reduce2(dt, HERD_MAX, NAN, -INFINITY)));
        ck_assert(reduce2(dt, HERD_MIN, -INFINITY, 1) == -INFINITY);
        ck_assert(signbit(reduce2(dt, HERD_MIN, 0.0, -0.0)));
        ck_assert(signbit(reduce2(dt, HERD_MIN, -0.0, 0.0)));
        ck_assert(!signbit(reduce2(dt, HERD_MAX, 0.0, -0.0)));
        ck_assert(!signbit(reduce2(dt, HERD_MAX, -0.0, 0.0)));
        ck_assert(signbit(reduce2(dt, HERD_SUM, -0.0, -0.0)));
        ck_assert(!signbit(reduce2(dt, HERD_SUM, -0.0, 0.0)));
    }
    /* float16 overflow and rounding at the top and bottom of the range. */
    ck_assert(reduce2(HERD_FLOAT16, HERD_SUM, 65504, 65504) == INFINITY);
    ck_assert(reduce2(HERD_FLOAT16, HERD_SUM, 65504, 16) == INFINITY);
    ck_assert(reduce2(HERD_FLOAT16, HERD_SUM, 65504, 8) == 65504);
    ck_assert(reduce2(HERD_FLOAT16, HERD_SUM, 0x1p-24, 0x1p-24) == 0x1p-23);
    ck_assert(reduce2(HERD_FLOAT16, HERD_PRODUCT, 0x1p-24, 0.5) == 0);
    ck_assert(reduce2(HERD_FLOAT16, HERD_PRODUCT, 0x1p-24, 1.5) == 0x1p-23);
    ck_assert(reduce2(HERD_FLOAT16, HERD_SUM, 2048, 1) == 2048); /* tie */
    ck_assert(reduce2(HERD_FLOAT16, HERD_SUM, 2050, 1) == 2052); /* tie */
    ck_assert(reduce2(HERD_BFLOAT16, HERD_SUM, 256, 1) == 256);
    ck_assert(reduce2(HERD_BFLOAT16, HERD_PRODUCT, 0x1p100, 0x1p100) ==
              INFINITY);
}
END_TEST

START_TEST(test_reduce_integer_wrap)
{
    int8_t a8[] = {127, -128, 100, -1, -128}, b8[] = {1, -1, 3, 1, -1};
    int8_t d8[5];
    ck_assert_int_eq(core_reduce(d8, a8, b8, 5, HERD_INT8, HERD_SUM), 0);
    ck_assert_int_eq(d8[0], -128);
    ck_assert_int_eq(d8[1], 127);
    ck_assert_int_eq(core_reduce(d8, a8, b8, 5, HERD_INT8, HERD_PRODUCT), 0);
    ck_assert_int_eq(d8[2], 44); /* 300 mod 256 */
    ck_assert_int_eq(d8[4], -128);
    ck_assert_int_eq(core_reduce(d8, a8, b8, 5, HERD_INT8, HERD_MIN), 0);
    ck_assert_int_eq(d8[3], -1); /* signed comparison */
    uint8_t u[] = {255, 200}, v[] = {1, 100}, du[2];
    ck_assert_int_eq(core_reduce(du, u, v, 2, HERD_UINT8, HERD_SUM), 0);
    ck_assert_uint_eq(du[0], 0);
    ck_assert_uint_eq(du[1], 44);
    ck_assert_int_eq(core_reduce(du, u, v, 2, HERD_UINT8, HERD_MAX), 0);
    ck_assert_uint_eq(du[0], 255); /* unsigned comparison */
    int32_t a32[] = {INT32_MAX, INT32_MIN, 65536}, b32[] = {1, -1, 65536};
    int32_t d32[3];
    ck_assert_int_eq(core_reduce(d32, a32, b32, 3, HERD_INT32, HERD_SUM), 0);
    ck_assert_int_eq(d32[0], INT32_MIN);
    ck_assert_int_eq(d32[1], INT32_MAX);
    ck_assert_int_eq(core_reduce(d32, a32, b32, 3, HERD_INT32, HERD_PRODUCT),
                     0);
    ck_assert_int_eq(d32[2], 0);
    int64_t a64[] = {INT64_MAX, INT64_MIN}, b64[] = {1, -1}, d64[2];
    ck_assert_int_eq(core_reduce(d64, a64, b64, 2, HERD_INT64, HERD_SUM), 0);
    ck_assert(d64[0] == INT64_MIN && d64[1] == INT64_MAX);
    ck_assert_int_eq(core_reduce(d64, a64, b64, 2, HERD_INT64, HERD_PRODUCT),
                     0);
    ck_assert(d64[0] == INT64_MAX && d64[1] == INT64_MIN);
    ck_assert_int_eq(core_reduce(d64, a64, b64, 2, HERD_INT64, HERD_BXOR), 0);
    ck_assert(d64[0] == (INT64_MAX ^ 1) && d64[1] == INT64_MAX);
}
END_TEST

/* AVG: p buffers combined with op AVG (a SUM), then divided by p. */
START_TEST(test_avg)
{
    herd_dtype_t dt = (herd_dtype_t)_i;
    enum { P = 7, M = 300 };
    size_t bytes = M * herd_dtype_size(dt);
    char *acc = malloc(bytes), *in = malloc(bytes), *exp = malloc(bytes);
    ck_assert(acc && in && exp);
    uint64_t rng = 99 + (uint64_t)_i;
    fill_random(acc, dt, M, &rng, 1);
    memcpy(exp, acc, bytes);
    for (int r = 1; r < P; r++) {
        fill_random(in, dt, M, &rng, 1);
        ref_reduce(exp, exp, in, M, dt, HERD_SUM);
        ck_assert_int_eq(core_reduce(acc, acc, in, M, dt, HERD_AVG), HERD_OK);
    }
    for (size_t i = 0; i < M; i++) {
        if (is_float(dt))
            set_f(exp, dt, i, get_f(exp, dt, i) / P);
        else /* C division truncates toward zero */
            set_i(exp, dt, i, (uint64_t)(get_i(exp, dt, i) / P));
    }
    ck_assert_int_eq(core_reduce_avg_finish(acc, M, dt, P), HERD_OK);
    assert_same(exp, acc, M, dt, "avg");
    free(acc), free(in), free(exp);
}
END_TEST

START_TEST(test_avg_truncates_toward_zero)
{
    int32_t v[] = {-7, 7, -1, INT32_MIN};
    ck_assert_int_eq(core_reduce_avg_finish(v, 4, HERD_INT32, 2), HERD_OK);
    ck_assert_int_eq(v[0], -3);
    ck_assert_int_eq(v[1], 3);
    ck_assert_int_eq(v[2], 0);
    ck_assert_int_eq(v[3], INT32_MIN / 2);
    uint8_t u[] = {255};
    ck_assert_int_eq(core_reduce_avg_finish(u, 1, HERD_UINT8, 1000), HERD_OK);
    ck_assert_uint_eq(u[0], 0);
    int8_t s[] = {-128};
    ck_assert_int_eq(core_reduce_avg_finish(s, 1, HERD_INT8, 300), HERD_OK);
    ck_assert_int_eq(s[0], 0);
    uint16_t h[] = {0x3c00}; /* 1.0 / 3, rounded to nearest even */
    ck_assert_int_eq(core_reduce_avg_finish(h, 1, HERD_FLOAT16, 3), HERD_OK);
    ck_assert_uint_eq(h[0], encode16(1.0 / 3, F16));
}
END_TEST

/* A chain of float16 / bfloat16 / float32 sums stays within the rounding
 * error bound of the float64 sum. */
START_TEST(test_sum_chain_within_rounding)
{
    enum { P = 16, M = 512 };
    const herd_dtype_t dts[] = {HERD_FLOAT16, HERD_BFLOAT16, HERD_FLOAT32};
    const double eps[] = {0x1p-11, 0x1p-8, 0x1p-24};
    for (int k = 0; k < 3; k++) {
        herd_dtype_t dt = dts[k];
        _Alignas(8) char acc[M * 4], in[M * 4];
        double exact[M], bound[M];
        uint64_t rng = 7;
        fill_random(acc, dt, M, &rng, 1);
        for (int i = 0; i < M; i++)
            exact[i] = get_f(acc, dt, (size_t)i), bound[i] = 0;
        for (int r = 1; r < P; r++) {
            fill_random(in, dt, M, &rng, 1);
            ck_assert_int_eq(core_reduce(acc, acc, in, M, dt, HERD_SUM), 0);
            for (int i = 0; i < M; i++) {
                exact[i] += get_f(in, dt, (size_t)i);
                bound[i] += fabs(get_f(acc, dt, (size_t)i)) * eps[k];
            }
        }
        for (int i = 0; i < M; i++)
            EXPECT(fabs(get_f(acc, dt, (size_t)i) - exact[i]) <= bound[i],
                   "%s element %d: %a vs %a", herd_dtype_name(dt), i,
                   get_f(acc, dt, (size_t)i), exact[i]);
    }
}
END_TEST

START_TEST(test_count_zero)
{
    for (int dt = 0; dt < HERD_DTYPE_COUNT; dt++) {
        for (int op = 0; op < HERD_OP_COUNT; op++) {
            herd_status_t want =
                core_reduce_valid((herd_dtype_t)dt, (herd_op_t)op)
                    ? HERD_OK
                    : HERD_ERR_INVALID_ARG;
            ck_assert_int_eq(core_reduce(NULL, NULL, NULL, 0, (herd_dtype_t)dt,
                                         (herd_op_t)op),
                             want);
        }
        ck_assert_int_eq(core_reduce_avg_finish(NULL, 0, (herd_dtype_t)dt, 4),
                         HERD_OK);
    }
    int32_t x = 5, y = 6, d = 42;
    ck_assert_int_eq(core_reduce(&d, &x, &y, 0, HERD_INT32, HERD_SUM), 0);
    ck_assert_int_eq(d, 42);
}
END_TEST

START_TEST(test_invalid_arguments)
{
    float a[2] = {1, 2}, b[2] = {3, 4}, d[2] = {7, 7};
    for (herd_dtype_t dt = HERD_FLOAT16; dt <= HERD_FLOAT64; dt++)
        for (herd_op_t op = HERD_BAND; op <= HERD_BXOR; op++) {
            ck_assert(!core_reduce_valid(dt, op));
            ck_assert_int_eq(core_reduce(d, a, b, 1, dt, op),
                             HERD_ERR_INVALID_ARG);
        }
    ck_assert(d[0] == 7 && d[1] == 7);
    for (herd_dtype_t dt = HERD_INT8; dt <= HERD_INT64; dt++)
        for (int op = 0; op < HERD_OP_COUNT; op++)
            ck_assert(core_reduce_valid(dt, (herd_op_t)op));
    ck_assert_int_eq(core_reduce(d, a, b, 1, HERD_DTYPE_COUNT, HERD_SUM),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(core_reduce(d, a, b, 1, (herd_dtype_t)-1, HERD_SUM),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(core_reduce(d, a, b, 1, HERD_FLOAT32, HERD_OP_COUNT),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(core_reduce(NULL, a, b, 1, HERD_FLOAT32, HERD_SUM),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(core_reduce(d, NULL, b, 1, HERD_FLOAT32, HERD_SUM),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(core_reduce(d, a, NULL, 1, HERD_FLOAT32, HERD_SUM),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(core_reduce_avg_finish(d, 2, HERD_FLOAT32, 0),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(core_reduce_avg_finish(d, 2, HERD_FLOAT32, -2),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(core_reduce_avg_finish(d, 2, HERD_DTYPE_COUNT, 2),
                     HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(core_reduce_avg_finish(NULL, 2, HERD_FLOAT32, 2),
                     HERD_ERR_INVALID_ARG);
    ck_assert(d[0] == 7 && d[1] == 7);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reduce");
    TCase *conv = tcase_create("conversions");
    tcase_add_test(conv, test_half_all_patterns);
    tcase_add_test(conv, test_bf16_all_patterns);
    tcase_add_test(conv, test_block_conversions);
    tcase_add_test(conv, test_half_midpoints);
    tcase_add_test(conv, test_bf16_midpoints);
    tcase_add_test(conv, test_narrow_random_floats);
    tcase_add_test(conv, test_conversion_special_values);
    suite_add_tcase(s, conv);
    TCase *k = tcase_create("kernels");
    tcase_add_loop_test(k, test_reduce_random, 0, HERD_DTYPE_COUNT);
    tcase_add_loop_test(k, test_reduce_special_values, 0, 4);
    tcase_add_test(k, test_reduce_ieee_facts);
    tcase_add_test(k, test_reduce_integer_wrap);
    tcase_add_loop_test(k, test_avg, 0, HERD_DTYPE_COUNT);
    tcase_add_test(k, test_avg_truncates_toward_zero);
    tcase_add_test(k, test_sum_chain_within_rounding);
    tcase_add_test(k, test_count_zero);
    tcase_add_test(k, test_invalid_arguments);
    suite_add_tcase(s, k);
    return tu_run_suite(s);
}
