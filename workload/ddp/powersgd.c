/* workload/ddp/powersgd.c - PowerSGD's work per bucket (powersgd.h). */
#include "workload/ddp/powersgd.h"

void ddp_psgd_plan(const ddp_model_t *m, const ddp_bucket_t *b,
                   const ddp_powersgd_t *c, ddp_psgd_plan_t *out)
{
    ddp_psgd_plan_t o = {0};
    for (size_t i = 0; i < b->nparams; i++) {
        const ddp_param_t *p = &m->params[b->params[i]];
        /* tensor.view(tensor.shape[0], -1) */
        uint64_t n = p->ndim > 0 && p->shape[0] > 0 ? (uint64_t)p->shape[0] : 1;
        uint64_t cols = n ? p->numel / n : 0;
        uint64_t r = (uint64_t)c->rank;
        r = r < n ? r : n;
        r = r < cols ? r : cols;
        o.numel += p->numel;
        if (cols > 0 && (double)((n + cols) * r) * c->min_compression_rate <
                            (double)(n * cols)) {
            o.p += n * r;
            o.q += cols * r;
            /* three products of n x m x r, Gram-Schmidt on P and Q */
            o.flops += 6.0 * (double)n * (double)cols * (double)r +
                       4.0 * (double)(n + cols) * (double)r * (double)r;
        } else {
            o.unc += p->numel;
        }
    }
    uint64_t size = herd_dtype_size(b->dtype);
    o.mem_bytes = 2 * o.unc * size;
    if (c->use_error_feedback)
        o.mem_bytes += 3 * o.numel * size;
    *out = o;
}

double ddp_psgd_compute_s(const ddp_model_t *m, const ddp_buckets_t *bs,
                          size_t k, const ddp_powersgd_t *c)
{
    ddp_psgd_plan_t pl;
    ddp_psgd_plan(m, &bs->b[k], c, &pl);
    if (c->compute_s >= 0) {
        double total = 0;
        for (size_t j = 0; j < bs->n; j++) {
            ddp_psgd_plan_t o;
            ddp_psgd_plan(m, &bs->b[j], c, &o);
            total += o.flops;
        }
        return total > 0 ? c->compute_s * pl.flops / total : 0;
    }
    double s = m->flop_rate > 0 ? pl.flops / m->flop_rate : 0;
    if (m->copy_bw > 0)
        s += (double)pl.mem_bytes / m->copy_bw;
    return s;
}
