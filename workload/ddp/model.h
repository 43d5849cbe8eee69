/* workload/ddp/model.h - a model as DistributedDataParallel sees it.
 *
 * The parameter list in DDP's order (index, name, shape, dtype, numel,
 * bytes: the schema of tests/data/ddp/models/ files) plus what the
 * DDP step program needs to time a step: forward, per-parameter backward
 * and optimizer compute, buffer bytes, and optionally the order in which
 * gradients become ready. The file format is documented in docs/ddp.md;
 * reference files without a "compute" section load too (zero compute). */
#ifndef HERD_WORKLOAD_DDP_MODEL_H
#define HERD_WORKLOAD_DDP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

#define DDP_MAX_DIMS 8

typedef struct ddp_param {
    char *name;
    int ndim;
    int64_t shape[DDP_MAX_DIMS];
    herd_dtype_t dtype;
    uint64_t numel;
    uint64_t bytes;
    int sparse;   /* expects a sparse gradient: a bucket of its own */
    double bwd_s; /* backward compute that produces this gradient */
} ddp_param_t;

typedef struct ddp_model {
    char *name;
    ddp_param_t *params; /* params[i] has DDP index i */
    size_t nparams;
    uint64_t total_bytes;
    size_t *ready_order;   /* gradient-ready order (param indices) */
    size_t nready;         /* 0: none given (reverse index order) */
    double fwd_s;          /* forward compute per step */
    double opt_s;          /* optimizer step */
    uint64_t buffer_bytes; /* module buffers (BatchNorm stats, ...) */
    double copy_bw;        /* bytes/s of gradient <-> bucket copies; 0: free */
    double bwd_tail_s;     /* backward compute after the last gradient */
    double flop_rate;      /* FLOP/s of compute.device_tflops * efficiency
                              (over compute_scale); 0: not given */
} ddp_model_t;

/* Load a model file (JSON). On error returns HERD_ERR_IO / HERD_ERR_PARSE
 * and writes "file:line:column: what" (or "file: params[i].key: what")
 * into `err`. */
herd_status_t ddp_model_load(const char *path, ddp_model_t *out, char *err,
                             size_t errlen);
void ddp_model_fini(ddp_model_t *m);

/* 1 if the model has any compute (forward, backward or optimizer time);
 * a file without would simulate communication alone. */
int ddp_model_has_compute(const ddp_model_t *m);

/* Total backward compute (sum of bwd_s). */
double ddp_model_bwd_total(const ddp_model_t *m);

/* The gradient-ready order to use: the model's own, or reverse index
 * order when it has none. Writes m->nparams indices into `order`. */
void ddp_model_ready_order(const ddp_model_t *m, size_t *order);

/* Check that `order` (n entries) is a permutation of the parameter
 * indices; on failure writes a reason into err. */
herd_status_t ddp_model_check_order(const ddp_model_t *m, const size_t *order,
                                    size_t n, char *err, size_t errlen);

/* Scale all compute (forward, backward, optimizer) by `factor` (> 0). */
void ddp_model_scale_compute(ddp_model_t *m, double factor);

/* Resolve a model argument: an existing path is used as is; a bare name
 * ("gpt2_small") is looked up as <dir>/<name>.json. Writes into buf. */
const char *ddp_model_resolve(const char *arg, const char *dir, char *buf,
                              size_t len);

#endif
