/* cli/cmd_perf_check.c - `herd perf -c 1`: deterministic inputs per rank and
 * the expected output of every collective, computed independently of
 * core/'s kernels (integers wrap as two's complement, floats compare
 * with a tolerance that fits their precision). */
#include <math.h>
#include <string.h>

#include "cli/cmd_perf.h"
#include "core/engine.h"
#include "core/reduce.h"

static int is_int(herd_dtype_t d)
{
    return herd_dtype_is_integer(d);
}

/* Input element i of rank r: small values so float sums stay exact. */
static int64_t v_of(const cli_perf_t *p, int r, uint64_t i)
{
    if (p->op == HERD_PRODUCT)
        return 1;
    return (int64_t)((r * 7 + i * 3) % 8) + 1;
}

/* Integers wrap to the dtype's width, as the kernels do. */
static double wrap(herd_dtype_t d, int64_t x)
{
    switch (d) {
    case HERD_INT8:
        return (int8_t)(uint8_t)((uint64_t)x & 0xff);
    case HERD_UINT8:
        return (uint8_t)((uint64_t)x & 0xff);
    case HERD_INT32:
        return (int32_t)(uint32_t)((uint64_t)x & 0xffffffffu);
    default:
        return (double)x;
    }
}

static double reduced(const cli_perf_t *p, int n, uint64_t i)
{
    int64_t acc = v_of(p, 0, i);
    for (int r = 1; r < n; r++) {
        int64_t v = v_of(p, r, i);
        switch (p->op) {
        case HERD_PRODUCT:
            acc *= v;
            break;
        case HERD_MIN:
            acc = v < acc ? v : acc;
            break;
        case HERD_MAX:
            acc = v > acc ? v : acc;
            break;
        case HERD_BAND:
            acc &= v;
            break;
        case HERD_BOR:
            acc |= v;
            break;
        case HERD_BXOR:
            acc ^= v;
            break;
        default:
            acc += v;
        }
    }
    if (p->op != HERD_AVG)
        return wrap(p->dtype, acc);
    if (is_int(p->dtype)) /* truncating division, as torch */
        return trunc(wrap(p->dtype, acc) / n);
    return (double)acc / n;
}

void cli_perf_fill(const cli_perf_t *p, int r, int n, uint64_t count, void *in,
                   void *out)
{
    uint64_t nin = core_coll_send_count(p->coll, count, n);
    uint64_t nout = core_coll_recv_count(p->coll, count, n);
    for (uint64_t i = 0; i < nout; i++)
        core_dtype_store(p->dtype, out, i, 0);
    for (uint64_t i = 0; i < nin; i++)
        core_dtype_store(p->dtype, in, i, (double)v_of(p, r, i));
    if (p->coll == HERD_COLL_BROADCAST && r == p->root)
        for (uint64_t i = 0; i < count; i++)
            core_dtype_store(p->dtype, out, i, (double)v_of(p, r, i));
}

static double expected(const cli_perf_t *p, int r, int n, uint64_t count,
                       uint64_t j)
{
    uint64_t s = j / count, i = j % count;
    switch (p->coll) {
    case HERD_COLL_ALL_REDUCE:
    case HERD_COLL_REDUCE:
        return reduced(p, n, j);
    case HERD_COLL_BROADCAST:
        return wrap(p->dtype, v_of(p, p->root, j));
    case HERD_COLL_ALL_GATHER:
    case HERD_COLL_GATHER:
        return wrap(p->dtype, v_of(p, (int)s, i));
    case HERD_COLL_SCATTER:
        return wrap(p->dtype, v_of(p, p->root, (uint64_t)r * count + j));
    case HERD_COLL_REDUCE_SCATTER:
        return reduced(p, n, (uint64_t)r * count + j);
    case HERD_COLL_ALL_TO_ALL:
        return wrap(p->dtype, v_of(p, (int)s, (uint64_t)r * count + i));
    default:
        return 0;
    }
}

uint64_t cli_perf_verify(const cli_perf_t *p, int r, int n, uint64_t count,
                         const void *out)
{
    if ((p->coll == HERD_COLL_REDUCE || p->coll == HERD_COLL_GATHER) &&
        r != p->root)
        return 0;
    double tol = p->dtype == HERD_FLOAT16    ? 1e-3
                 : p->dtype == HERD_BFLOAT16 ? 1e-2
                 : is_int(p->dtype)          ? 0
                                             : 1e-6;
    uint64_t nout = core_coll_recv_count(p->coll, count, n), wrong = 0;
    for (uint64_t j = 0; j < nout; j++) {
        double want = expected(p, r, n, count, j),
               got = core_dtype_load(p->dtype, out, j);
        if (!(fabs(got - want) <= tol * fabs(want)))
            wrong++;
    }
    return wrong;
}
