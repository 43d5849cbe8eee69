/* trace/trace_sweep.c - a message-size sweep (scenario workload.sweep)
 * written as a trace: for each algorithm and each size, `warmup` untimed
 * and `iters` timed calls of the collective. Timed calls carry the label
 * "sweep", warm-up calls "warmup", so the timeline tells them apart. */
#include <math.h>

#include "trace/scenario.h"
#include "trace/trace.h"

static herd_status_t sw_size(trace_t *t, const trace_sweep_t *sw,
                             herd_algo_t algo, uint64_t count,
                             uint32_t lab_warm, uint32_t lab_sweep)
{
    trace_op_t op = trace_op_default(TRACE_OP_COLL);
    op.coll = (uint8_t)sw->coll;
    op.dtype = (uint8_t)sw->dtype;
    op.redop = (uint8_t)sw->op;
    op.algo = (uint8_t)algo;
    op.count = sw->coll == HERD_COLL_BARRIER ? 0 : count;
    if (sw->coll == HERD_COLL_BROADCAST || sw->coll == HERD_COLL_REDUCE ||
        sw->coll == HERD_COLL_GATHER || sw->coll == HERD_COLL_SCATTER)
        op.peer = 0;
    for (int i = 0; i < sw->warmup + sw->iters; i++) {
        op.label = i < sw->warmup ? lab_warm : lab_sweep;
        herd_status_t st = trace_add_op(t, &op);
        if (st)
            return st;
    }
    return HERD_OK;
}

herd_status_t trace_from_sweep(const trace_sweep_t *sw, int world_size,
                               trace_t **out)
{
    if (sw->coll == HERD_COLL_SEND || sw->coll == HERD_COLL_RECV ||
        sw->coll == HERD_COLL_ALL_GATHER_V ||
        sw->coll == HERD_COLL_REDUCE_SCATTER_V ||
        sw->coll == HERD_COLL_ALL_TO_ALL_V ||
        sw->coll == HERD_COLL_MONITORED_BARRIER || sw->nalgos < 1 ||
        !(sw->factor > 1) || sw->min_bytes == 0)
        return HERD_ERR_INVALID_ARG;
    trace_t *t;
    herd_status_t st = trace_create(world_size, &t);
    uint32_t lw = 0, ls = 0;
    if (!st)
        st = trace_intern(t, "warmup", &lw);
    if (!st)
        st = trace_intern(t, "sweep", &ls);
    size_t es = herd_dtype_size(sw->dtype);
    for (int a = 0; a < sw->nalgos && !st; a++) {
        uint64_t last = 0;
        for (double b = (double)sw->min_bytes;
             b <= (double)sw->max_bytes * (1 + 1e-9) && !st; b *= sw->factor) {
            uint64_t count = (uint64_t)floor(b / (double)es);
            if (count == 0 || count == last)
                continue; /* below one element, or rounds to the last */
            last = count;
            st = sw_size(t, sw, sw->algos[a], count, lw, ls);
        }
    }
    if (st) {
        trace_destroy(t);
        return st;
    }
    *out = t;
    return HERD_OK;
}
