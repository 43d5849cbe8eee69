/* workload/ddp/bucket.h - DDP's gradient bucket assignment, as PyTorch's
 * reducer computes it (compute_bucket_assignment_by_size, torch 1.13).
 *
 * The result is always in the reducer's order: bucket 0 is reduced first.
 * For the initial assignment that is the reversed, min-index-sorted list;
 * for the rebuilt one, the order in which buckets filled up along the
 * gradient-ready order (neither sorted nor reversed). */
#ifndef HERD_WORKLOAD_DDP_BUCKET_H
#define HERD_WORKLOAD_DDP_BUCKET_H

#include <stddef.h>
#include <stdint.h>

#include "workload/ddp/model.h"

/* dist._DEFAULT_FIRST_BUCKET_BYTES */
#define DDP_FIRST_BUCKET_BYTES ((uint64_t)1 << 20)
/* sys.maxsize: the single-bucket limit of DDP's construction */
#define DDP_NO_LIMIT ((uint64_t)INT64_MAX)

typedef struct ddp_bucket {
    size_t *params; /* parameter indices, in the order they were added */
    size_t nparams;
    uint64_t bytes;     /* sum of the parameters' bytes */
    uint64_t limit;     /* the size limit in force when last appended to */
    herd_dtype_t dtype; /* the dtype of its parameters */
} ddp_bucket_t;

typedef struct ddp_buckets {
    ddp_bucket_t *b;
    size_t n;
    size_t *bucket_of; /* parameter index -> bucket index */
    size_t nparams;
} ddp_buckets_t;

typedef enum ddp_phase {
    DDP_PHASE_INITIAL, /* at construction */
    DDP_PHASE_REBUILT  /* rebuilt from the gradient-ready order */
} ddp_phase_t;

/* compute_bucket_assignment_by_size itself: tensors `order` (n parameter
 * indices, in the order given), limits list (nlimits >= 1). With sort = 1
 * (no tensor_indices in torch) buckets are sorted by their smallest index.
 * `dtypes` (may be NULL: the model's) overrides every parameter's dtype,
 * as a gradient dtype does. Still-open buckets are flushed in the order
 * their dtype first appeared (torch: unordered_map order). */
herd_status_t ddp_bucket_assign(const ddp_model_t *m, const size_t *order,
                                size_t n, const uint64_t *limits,
                                size_t nlimits, int sort,
                                const herd_dtype_t *grad_dtype,
                                ddp_buckets_t *out);

/* What DDP does for a phase: initial -> [maxsize] unless
 * find_unused_parameters (and not static_graph), then [1 MiB, cap];
 * sorted and reversed. rebuilt -> `ready` order (NULL: the model's), [1
 * MiB, cap], as is. cap_bytes = int(bucket_cap_mb * 2^20). */
herd_status_t ddp_bucket_for_phase(const ddp_model_t *m, ddp_phase_t phase,
                                   uint64_t cap_bytes, int find_unused,
                                   int static_graph, const size_t *ready,
                                   const herd_dtype_t *grad_dtype,
                                   ddp_buckets_t *out);

/* The same with the first bucket's cap given (first_bytes; PyTorch 2.x
 * uses bucket_cap_mb's when the user passes one, 1 MiB otherwise). */
herd_status_t ddp_bucket_for_phase_first(const ddp_model_t *m,
                                         ddp_phase_t phase,
                                         uint64_t first_bytes,
                                         uint64_t cap_bytes, int find_unused,
                                         int static_graph, const size_t *ready,
                                         const herd_dtype_t *grad_dtype,
                                         ddp_buckets_t *out);

/* Reverse the list of buckets (not their contents). */
void ddp_buckets_reverse(ddp_buckets_t *bs);
void ddp_buckets_fini(ddp_buckets_t *bs);

/* DDP's int(bucket_cap_mb * 1024 * 1024). */
uint64_t ddp_cap_bytes(double bucket_cap_mb);

/* 1 when DDP rebuilds its buckets for these options. */
int ddp_rebuilds(int find_unused, int static_graph);

#endif
