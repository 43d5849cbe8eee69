/* trace/scenario.h - scenario files (YAML): the cluster, collective
 * settings, workload, stragglers, faults, timeout and seed of one run.
 *
 * A scenario owns everything it points to: the simulator options'
 * override and fault arrays, the workload's strings and the DDP section
 * (kept as key/value strings for the DDP model to interpret). Errors name
 * the file, line and column and the expected form. The format is
 * documented in docs/formats.md. */
#ifndef HERD_TRACE_SCENARIO_H
#define HERD_TRACE_SCENARIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <herd/sim.h>
#include <herd/types.h>

typedef enum trace_wl_kind {
    TRACE_WL_NONE,    /* no workload section */
    TRACE_WL_TRACE,   /* replay a trace file */
    TRACE_WL_SWEEP,   /* a collective over a range of message sizes */
    TRACE_WL_DDP,     /* a DDP training model (see ddp/) */
    TRACE_WL_FSDP,    /* an FSDP training model (see workload/fsdp/) */
    TRACE_WL_PARALLEL /* tensor/pipeline/data (ZeRO) parallel job
                         (see workload/parallel/) */
} trace_wl_kind_t;

/* A message-size sweep: sizes min, min*factor, ... up to max bytes. */
typedef struct trace_sweep {
    herd_coll_t coll;
    herd_algo_t algos[HERD_ALGO_COUNT]; /* one run per algorithm */
    int nalgos;
    uint64_t min_bytes, max_bytes;
    double factor;
    herd_dtype_t dtype;
    herd_op_t op;
    int iters;  /* timed repetitions per size */
    int warmup; /* untimed repetitions per size */
} trace_sweep_t;

/* One setting of a section that herd passes on uninterpreted (ddp). The
 * value is the scalar text, or the flow-YAML text of a sequence/map. */
typedef struct trace_kv {
    char *key;
    char *value;
    int line, column; /* 1-based place in the file; 0 for --set */
    int flow;         /* 1: value is a flow sequence/mapping, not a scalar */
} trace_kv_t;

/* stragglers.grads: one parameter's gradient delayed on one rank (every
 * iteration). The workload model resolves `param` against its model file
 * (workload/ddp/straggle.c); see docs/ddp.md for the semantics. */
typedef struct trace_grad_straggler {
    int rank;
    char *param;      /* a parameter name of the model file, or its index */
    double delay_s;   /* added where the gradient is produced */
    int only_grad;    /* affects: grad (1) or backward (0, default) */
    int line, column; /* the param's place in the file; 0 from --set */
} trace_grad_straggler_t;

/* data: the data-loading phase before each forward (PyTorch's DataLoader;
 * workload/common/data.h models it for every workload). */
typedef struct trace_data {
    double load_s;       /* one batch on one worker; 0: not modelled */
    int num_workers;     /* 0: loaded in the training process */
    int prefetch_factor; /* batches each worker loads ahead (default 2) */
    double jitter;       /* sigma of a per-rank, per-batch lognormal factor */
} trace_data_t;

/* stragglers.data: one rank's data loading slowed by `factor`. */
typedef struct trace_data_straggler {
    int rank;
    double factor;
} trace_data_straggler_t;

typedef struct trace_scenario {
    char *path; /* file it was read from ("" for defaults) */
    char *name;
    herd_sim_opts_t sim; /* arrays below are what sim points to */
    herd_rank_override_t *rank_ovr;
    size_t nrank_ovr;
    herd_link_override_t *link_ovr;
    size_t nlink_ovr;
    herd_fault_t *faults;
    size_t nfaults;
    trace_grad_straggler_t *grads; /* stragglers.grads (DDP, FSDP) */
    size_t ngrads;
    trace_data_t data;                 /* data: loading before forward */
    trace_data_straggler_t *data_slow; /* stragglers.data */
    size_t ndata_slow;
    /* collectives */
    herd_algo_t algo[HERD_COLL_COUNT]; /* AUTO: engine default */
    int channels;                      /* 0: engine default */
    uint64_t chunk_bytes;              /* 0: engine default */
    double timeout_s;                  /* 0: HERD_DEFAULT_TIMEOUT_S */
    /* workload */
    trace_wl_kind_t wl_kind;
    char *trace_path; /* TRACE_WL_TRACE, relative to the scenario's dir */
    trace_sweep_t sweep;
    trace_kv_t *ddp;
    size_t nddp;
    trace_kv_t *fsdp; /* the `workload: fsdp:` section, like ddp */
    size_t nfsdp;
    trace_kv_t *parallel; /* the `workload: parallel:` section, like ddp */
    size_t nparallel;
    int steps; /* workload.steps: repeat the trace (0: once) */
} trace_scenario_t;

/* A scenario with the defaults (herd_sim_opts_init, no workload). */
herd_status_t trace_scenario_create(trace_scenario_t **out);
void trace_scenario_destroy(trace_scenario_t *sc);

/* Read a scenario file. On error returns HERD_ERR_PARSE (or IO) and
 * writes "file:line:column: what; expected ..." into err. */
herd_status_t trace_scenario_load(const char *path, trace_scenario_t **out,
                                  char *err, size_t errlen);
/* The same from a string (`name` is used in messages). */
herd_status_t trace_scenario_load_string(const char *text, const char *name,
                                         trace_scenario_t **out, char *err,
                                         size_t errlen);

/* Override one setting, as `--set key=value` does: key is the dotted path
 * of the YAML key ("cluster.nodes", "cluster.inter.bandwidth",
 * "workload.sweep.max", "ddp.bucket_cap_mb" for "workload.ddp.*",
 * "fsdp.strategy" for "workload.fsdp.*", "parallel.tp" for
 * "workload.parallel.*"), value
 * is YAML ("32", "25MiB", "[ring, tree]"). The value is checked exactly
 * as in a file. */
herd_status_t trace_scenario_set(trace_scenario_t *sc, const char *key,
                                 const char *value, char *err, size_t errlen);

/* Checks that span sections (world size against ranks named in
 * overrides and faults, sweep bounds). Called by load; call it again
 * after trace_scenario_set. */
herd_status_t trace_scenario_validate(const trace_scenario_t *sc, char *err,
                                      size_t errlen);

/* Write the scenario as YAML that loads back to the same settings
 * (units chosen so values are exact; the trace path made absolute).
 * Used to record the effective scenario of a run (after --set). */
herd_status_t trace_scenario_write(const trace_scenario_t *sc, FILE *f);

/* The DDP section's value for `key`, or NULL. */
const trace_kv_t *trace_scenario_ddp_get(const trace_scenario_t *sc,
                                         const char *key);

/* The scenario's name made safe as one path component (out/<name>): only
 * ASCII letters, digits and "._+-" are kept, anything else (a '/', a
 * control character, a byte of a multi-byte character) becomes '_', a
 * leading '.' too (so never "." or ".."), at most 100 characters; "sim"
 * when the scenario has no name. A name from a file or --set can then
 * not place outputs outside the output folder. */
void trace_scenario_dirname(const trace_scenario_t *sc, char *buf, size_t len);

/* World size the scenario simulates. */
int trace_scenario_world_size(const trace_scenario_t *sc);

#endif
