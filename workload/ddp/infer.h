/* workload/ddp/infer.h - a DDP model inferred from a measured run (the
 * steps of PyTorch profiler traces, trace/kineto.h): parameters from the
 * gradient-ready events (or a given model file when the trace has no
 * shapes), the gradient-ready order, per-parameter backward time from the
 * gaps between ready instants, forward, optimizer and buffer bytes; then
 * the bucket_cap_mb range whose bucket layout (workload/ddp/bucket.c)
 * equals the all_reduce sizes seen, checked against them. */
#ifndef HERD_WORKLOAD_DDP_INFER_H
#define HERD_WORKLOAD_DDP_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "trace/kineto.h"
#include "workload/ddp/model.h"

#define DDP_INFER_NOTES 4096

typedef struct ddp_infer {
    ddp_model_t model; /* params, ready order, measured compute */
    int from_trace;    /* params from the trace's shapes (else --model) */
    size_t nsteps;     /* steps (over all ranks) the times average */
    /* all_reduce buckets of one backward, in launch order */
    uint64_t *seen; /* bytes (0 where the trace has no size) */
    size_t nseen;
    int seen_sizes; /* the trace gave every size */
    /* the layout the model implies at cap_mb */
    uint64_t *implied;
    size_t nimplied;
    int match; /* implied == seen (sizes, or the count without sizes) */
    double cap_mb, cap_lo_mb, cap_hi_mb; /* hi < 0: no upper bound */
    double first_bucket_mb;              /* 0: same as cap (PyTorch 2.x) */
    int cap_known;                       /* a cap reproduces what was seen */
    int find_unused; /* the used-parameter map was all_reduced: DDP ran
                        with find_unused_parameters=True (no rebuild) */
    char notes[DDP_INFER_NOTES]; /* what was missing or assumed */
} ddp_infer_t;

/* Infer from the steps of the traced ranks (steps[i] for rank i of the
 * traced ones). `given` (may be NULL) supplies parameters when the trace
 * has no shapes; `cap_mb` > 0 is the user's bucket_cap_mb (else chosen
 * from the range); `torch2`: the traces are PyTorch 2.x's (distributedInfo),
 * whose first bucket follows bucket_cap_mb when both rules fit. Errors (no
 * gradients, no shapes and no model, a model whose parameter count differs) are
 * HERD_ERR_PARSE with err saying what is missing and which option supplies it.
 */
herd_status_t ddp_infer(const kineto_steps_t *steps, size_t nranks,
                        const ddp_model_t *given, double cap_mb, int torch2,
                        ddp_infer_t *out, char *err, size_t errlen);
void ddp_infer_fini(ddp_infer_t *inf);

/* Write the inferred model as a model file (docs/ddp.md schema). */
herd_status_t ddp_infer_write_model(const ddp_infer_t *inf, const char *path,
                                    char *err, size_t errlen);

/* "[a, b, c]" of a size list (bytes) into buf. */
const char *ddp_infer_list(const uint64_t *v, size_t n, char *buf, size_t len);

#endif
