/* workload/ddp/powersgd.h - what DDP's PowerSGD communication hook
 * (torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook) does with a
 * bucket: which gradients it compresses, the sizes of the three
 * all_reduces it issues (the uncompressed tensors in one, then P, then
 * Q), and the compute around them. */
#ifndef HERD_WORKLOAD_DDP_POWERSGD_H
#define HERD_WORKLOAD_DDP_POWERSGD_H

#include <stdint.h>

#include "workload/ddp/bucket.h"
#include "workload/ddp/cfg.h"
#include "workload/ddp/model.h"

/* One bucket under the hook, in elements of the bucket's dtype. */
typedef struct ddp_psgd_plan {
    uint64_t unc;       /* 1-D tensors and matrices not worth compressing */
    uint64_t p, q;      /* sum of n*r and m*r over the compressed n x m */
    uint64_t numel;     /* the bucket's elements */
    double flops;       /* P = MQ, Q = M^T P, M = PQ^T, orthogonalisation */
    uint64_t mem_bytes; /* bytes the hook moves in memory: the error
                           feedback's add, copy and difference, the
                           uncompressed tensors' copy in and out */
} ddp_psgd_plan_t;

/* The plan of bucket b of model m under settings c. Each gradient is
 * viewed as a matrix (shape[0], numel / shape[0]), r = min(n, m, rank),
 * and compressed when (n + m) * r * min_compression_rate < n * m, as
 * powerSGD_hook's _should_compress decides. */
void ddp_psgd_plan(const ddp_model_t *m, const ddp_bucket_t *b,
                   const ddp_powersgd_t *c, ddp_psgd_plan_t *out);

/* The hook's compute for bucket k of layout bs: c->compute_s (seconds per
 * iteration) shared by the buckets' FLOPs, or the FLOPs at the model's
 * rate, plus the memory traffic at its copy rate. */
double ddp_psgd_compute_s(const ddp_model_t *m, const ddp_buckets_t *bs,
                          size_t k, const ddp_powersgd_t *c);

#endif
