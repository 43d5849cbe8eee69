/* workload/fsdp/unit.h - FSDP units: the groups of parameters FSDP
 * flattens, all_gathers and reduce_scatters together.
 *
 * Unit 0 is the root (the outermost FullyShardedDataParallel /
 * fully_shard module): every parameter no other unit claims (embeddings,
 * final norm, head). Units 1.. follow in the order of their first
 * parameter, which is the forward order of models whose parameters are
 * registered as they run. They come from a list of parameter-name
 * prefixes, or from a wrap policy: transformer_block (one unit per layer:
 * names like `transformer.h.N.`, `encoder.layer.N.`, `layers.N.`,
 * `blocks.N.` or `layerN.`) or min_params=N (consecutive parameters
 * until N elements, size_based_auto_wrap_policy without a module tree). */
#ifndef HERD_WORKLOAD_FSDP_UNIT_H
#define HERD_WORKLOAD_FSDP_UNIT_H

#include <stddef.h>
#include <stdint.h>

#include "workload/ddp/model.h"
#include "workload/fsdp/cfg.h"

typedef struct fsdp_unit {
    char *name;     /* "root" or the prefix ("transformer.h.3") */
    size_t *params; /* model parameter indices */
    size_t nparams;
    uint64_t numel;
    uint64_t bytes; /* in the model's dtypes */
    double fwd_s, bwd_s;
} fsdp_unit_t;

typedef struct fsdp_units {
    fsdp_unit_t *u; /* u[0] is the root */
    size_t n;
} fsdp_units_t;

/* Wrap `m` by `wrap` (prefixes: cfg's list). Forward compute is shared by
 * backward time (numel without any). A prefix that matches no parameter
 * is an error naming it. */
herd_status_t fsdp_units_build(const ddp_model_t *m, const fsdp_wrap_t *wrap,
                               char *const *prefixes, size_t nprefixes,
                               fsdp_units_t *out, char *err, size_t errlen);
void fsdp_units_fini(fsdp_units_t *us);

/* The transformer-block key of a parameter name into buf ("transformer.h.3"
 * for "transformer.h.3.attn.c_attn.weight"); 0 when it has none. */
int fsdp_block_key(const char *name, char *buf, size_t len);

#endif
