/* trace/kineto.h - PyTorch profiler (Kineto / Chrome trace) files: read
 * one rank's trace, keep the events herd needs, and cut them into steps.
 *
 * A file is what torch.profiler writes (export_chrome_trace or
 * tensorboard_trace_handler), gzipped or not: PyTorch 1.13 writes a bare
 * JSON list of events; 2.x an object with traceEvents, distributedInfo,
 * deviceProperties. herd keeps:
 * - steps (ProfilerStep#N), DDP's forward, Optimizer.step#, backward
 *   (autograd::engine::evaluate_function: ...), gradient-ready instants
 *   (evaluate_function: torch::autograd::AccumulateGrad, with the
 *   parameter's shape from its AccumulateGrad child when recorded), DDP's
 *   copies back into the gradients;
 * - collective launches on the main thread (c10d::allreduce_ ...,
 *   record_param_comms with Collective name, In/Out msg nelems, dtype,
 *   Process Group Name/Ranks) and the communication itself (gloo:<coll>
 *   annotations on gloo's worker threads, ncclKernel_* / ncclDevKernel_*
 *   GPU kernels), and GPU compute kernels.
 * The format is documented in docs/import.md. Formats only: no engine. */
#ifndef HERD_TRACE_KINETO_H
#define HERD_TRACE_KINETO_H

#include <stddef.h>
#include <stdint.h>

#include <herd/types.h>

#define KINETO_MAX_DIMS 8

typedef enum kineto_ev_kind {
    KINETO_EV_STEP,     /* ProfilerStep#N */
    KINETO_EV_FORWARD,  /* DistributedDataParallel.forward */
    KINETO_EV_OPT,      /* Optimizer.step#... */
    KINETO_EV_BWD,      /* an autograd evaluate_function (not a grad) */
    KINETO_EV_GRAD,     /* AccumulateGrad: a gradient is ready at its end */
    KINETO_EV_COPY_OUT, /* DDP's copy_bucket_to_grad */
    KINETO_EV_LAUNCH,   /* a collective posted by the main thread */
    KINETO_EV_WORK,     /* the communication (gloo thread, NCCL kernel) */
    KINETO_EV_KERNEL,   /* a GPU compute kernel */
    KINETO_EV_RUNTIME   /* a kernel launch (cudaLaunchKernel); read only */
} kineto_ev_kind_t;

typedef struct kineto_ev {
    uint8_t kind;      /* kineto_ev_kind_t */
    uint8_t coll;      /* herd_coll_t (LAUNCH, WORK) */
    uint8_t dtype;     /* herd_dtype_t, when has_dtype */
    uint8_t has_count; /* count (and dtype) known */
    uint8_t has_dtype;
    uint8_t ndim;  /* GRAD: shape[ndim], when has_count */
    int16_t group; /* index into the rank's groups; -1: world/unknown */
    int64_t tid;   /* thread or GPU stream */
    long number;   /* STEP: N of ProfilerStep#N; LAUNCH: 1 when from
                      record_param_comms; while reading, -1 marks the
                      AccumulateGrad child merged into its GRAD parent */
    uint64_t ts_ns, dur_ns;
    uint64_t count; /* elements (collective as in herd's API; grad numel) */
    int64_t shape[KINETO_MAX_DIMS];
    int64_t corr;    /* GPU kernel / launch: "correlation" (0: none) */
    uint64_t cpu_ns; /* KERNEL: when the CPU launched it (0: unknown) */
} kineto_ev_t;

typedef struct kineto_group {
    char name[64];
    int *ranks;
    int n;
} kineto_group_t;

/* One rank's trace file, its events sorted by start time. */
typedef struct kineto_rank {
    char *path;
    int rank;       /* -1: not in the file */
    int world_size; /* 0: not in the file */
    char backend[16];
    char host[128];
    char nccl_version[32];
    int has_dist_info; /* distributedInfo present */
    int gpu;           /* GPU kernels present */
    int64_t main_tid;  /* the thread that runs the steps */
    kineto_ev_t *ev;
    size_t nev;
    kineto_group_t *groups;
    int ngroups;
    int64_t workers[64]; /* threads / GPU streams that do communication */
    size_t nworkers;
    /* GPU jobs with launch correlations: compute kernels by CPU launch
     * time, with the latest end of any launched so far */
    uint64_t *gpu_launch, *gpu_done;
    size_t ngpu;
} kineto_rank_t;

/* Read one trace (plain or gzip JSON). On error returns HERD_ERR_IO or
 * HERD_ERR_PARSE and says in err what was expected and what was found.
 * `rank_hint` (>= 0) is used when the file carries no rank. */
herd_status_t kineto_read(const char *path, int rank_hint, kineto_rank_t *out,
                          char *err, size_t errlen);
void kineto_rank_fini(kineto_rank_t *r);
/* 1 if `tid` is a communication thread or stream (not the training
 * loop's threads: the main one and autograd's). */
int kineto_is_worker(const kineto_rank_t *r, int64_t tid);

/* Where the GPU's compute was when the CPU reached cpu_ns: the end of
 * the work launched before then, or cpu_ns when the GPU had caught up
 * (or the trace has no launch correlations). */
uint64_t kineto_gpu_pos(const kineto_rank_t *r, uint64_t cpu_ns);

/* herd's dtype for a PyTorch dtype name as traces write it ("float",
 * "long int", "c10::Half", "Float", "BFloat16", ...). */
int kineto_dtype(const char *name, herd_dtype_t *out);
/* herd's collective for a c10d op or gloo annotation ("c10d::allreduce_",
 * "gloo:all_reduce") or a record_param_comms Collective name. */
int kineto_coll(const char *name, herd_coll_t *out);

/* The collective of an NCCL kernel name (ncclDevKernel_AllReduce_Sum_
 * f32_RING_LL, ncclKernel_Broadcast_RING_LL_Sum_int8_t, ...). */
int kineto_nccl_kernel_coll(const char *name, herd_coll_t *out);
int kineto_is_nccl_kernel(const char *name);

/* One collective of a step: its launch on the main thread and its work. */
typedef struct kineto_coll {
    uint8_t coll, dtype, has_count, async;
    int16_t group;
    uint64_t count;
    uint64_t launch_ns, launch_end_ns; /* main thread */
    uint64_t start_ns, end_ns;         /* the communication itself */
} kineto_coll_t;

/* 1 for one of DDP's gradient buckets: an all_reduce launched during
 * backward of a floating-point dtype (an integer one during backward is
 * the reducer's used-parameter map, find_unused_parameters=True). */
int kineto_coll_is_bucket(const kineto_coll_t *c);
/* 1 for the used-parameter map all_reduce. */
int kineto_coll_is_used_map(const kineto_coll_t *c);

/* One gradient-ready instant. */
typedef struct kineto_grad {
    uint64_t ready_ns;
    uint8_t has_shape, dtype, ndim;
    int64_t shape[KINETO_MAX_DIMS];
    uint64_t numel;
} kineto_grad_t;

/* One training step of one rank. Times in ns on the rank's clock; 0 =
 * not seen. */
typedef struct kineto_step {
    long number;
    uint64_t start_ns, end_ns;
    uint64_t fwd_start, fwd_end; /* DDP forward */
    uint64_t bwd_start, bwd_end; /* first / last autograd function */
    uint64_t fin_end;            /* the reducer's finalize done */
    uint64_t opt_start, opt_end;
    uint64_t gpu_busy_ns; /* GPU compute kernels in the step */
    kineto_coll_t *colls;
    size_t ncolls;
    kineto_grad_t *grads;
    size_t ngrads;
} kineto_step_t;

typedef struct kineto_steps {
    kineto_step_t *s;
    size_t n;
} kineto_steps_t;

/* Cut a rank's events into steps (ProfilerStep ranges; without them the
 * whole trace is one step) and match each collective's launch with its
 * work (by kind and order; count when both have one). */
herd_status_t kineto_steps(const kineto_rank_t *r, kineto_steps_t *out,
                           char *err, size_t errlen);
void kineto_steps_fini(kineto_steps_t *s);

#endif
