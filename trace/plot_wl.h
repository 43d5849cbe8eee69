/* trace/plot_wl.h - the workload plots (DDP, FSDP, ZeRO/TP/PP): the data
 * (.dat) and gnuplot script (.gp) of a sweep plot, a memory plot and the
 * Gantt chart of one step, written side by side into a folder so a user
 * can re-plot with `cd DIR && gnuplot NAME.gp`.
 *
 * Each NAME.gp is a preamble of variables (data file, title, what to
 * mark) followed by the text of a script of plots/ (wl_sweep.gp,
 * wl_memory.gp, wl_step.gp), so it stands alone; trace_plot_gp runs it.
 * The writers need no gnuplot: only running the script does. */
#ifndef HERD_TRACE_PLOT_WL_H
#define HERD_TRACE_PLOT_WL_H

#include <stddef.h>

#include <herd/status.h>
#include <herd/timeline.h>

/* Write DIR/NAME.gp: a comment saying how to re-plot, `preamble`, then
 * the text of plots_dir/script. */
herd_status_t trace_plot_write_gp(const char *dir, const char *name,
                                  const char *preamble, const char *plots_dir,
                                  const char *script, char *err, size_t errlen);

/* ---- sweep plot: step time and exposed communication against a knob -- */

/* One run of the sweep: its values (one per axis) and results. */
typedef struct trace_sweep_pt {
    int combo;         /* index into the caller's combinations */
    int ok;            /* the run completed (else failed: hang, error) */
    int fits;          /* within its memory limit (else marked, never best) */
    int within;        /* within the tolerance of the best (a tie) */
    int best, current; /* the best; the scenario's own value */
    double step_ms, exposed_ms, comm_ms;
} trace_sweep_pt_t;

typedef struct trace_sweep_plot {
    const char *title;       /* the scenario's name */
    int naxes;               /* swept keys; axis 0 is x, the others series */
    const char *const *keys; /* [naxes] */
    const int *nvals;        /* [naxes] */
    const char *const *const *vals; /* [naxes][nvals[ax]] value text */
    /* point c's value index on axis ax: vidx[c * naxes + ax] */
    const int *vidx;
    const trace_sweep_pt_t *pts; /* one per combination */
    int npts;
    double tolerance;    /* percent */
    const char *mem_key; /* what "fits" is against ("gpu_mem"), or NULL */
    int time_only;       /* a trace workload: its makespan, no exposed time */
} trace_sweep_plot_t;

/* How axis 0 is drawn: TRACE_AXIS_CAT (a value is not a number: one tick
 * per value in the order given), TRACE_AXIS_LOG (numbers > 0 spanning a
 * factor of 16 or more), TRACE_AXIS_LIN. */
typedef enum trace_axis_kind {
    TRACE_AXIS_LIN,
    TRACE_AXIS_LOG,
    TRACE_AXIS_CAT
} trace_axis_kind_t;
trace_axis_kind_t trace_plot_axis_kind(const char *const *vals, int n);

/* Write DIR/NAME.dat (a block per series: the values of the axes after
 * the first; in a block one line per value of axis 0, sorted when
 * numeric) and DIR/NAME.gp (plots/wl_sweep.gp). */
herd_status_t trace_plot_sweep(const trace_sweep_plot_t *p, const char *dir,
                               const char *name, const char *plots_dir,
                               char *err, size_t errlen);

/* ---- memory plot: peak memory per rank, stacked by component -------- */

enum {
    TRACE_MEM_PARAMS,
    TRACE_MEM_GRADS,
    TRACE_MEM_OPTIM,
    TRACE_MEM_UNSHARDED, /* FSDP's unsharded units, ZeRO-3's gathered */
    TRACE_MEM_ACT,       /* activations */
    TRACE_MEM_NPARTS
};

typedef struct trace_mem_bar {
    const char *label;              /* "FULL_SHARD", "tp=4 pp=2" */
    double bytes[TRACE_MEM_NPARTS]; /* per rank, on the device */
    double step_ms;                 /* < 0: none */
    int fits, best, ok;
} trace_mem_bar_t;

typedef struct trace_mem_plot {
    const char *title;
    const char *xlabel;                       /* what the bars are */
    const char *part_names[TRACE_MEM_NPARTS]; /* NULL: the default name */
    const trace_mem_bar_t *bars;
    int nbars;
    double limit_bytes; /* the device's memory; <= 0: no line */
    const char *note;   /* a line under the title (what is left out), or NULL */
} trace_mem_plot_t;

/* DIR/NAME.dat (one line per bar, the parts, their total, fits) and
 * DIR/NAME.gp (plots/wl_memory.gp). Parts that are zero in every bar are
 * left out of the legend. */
herd_status_t trace_plot_memory(const trace_mem_plot_t *p, const char *dir,
                                const char *name, const char *plots_dir,
                                char *err, size_t errlen);

/* ---- the Gantt chart of one step, a row per stream and rank --------- */

/* Where a record runs: its row's name (a stream: "compute",
 * "all_gather", "tp all_reduce", ...) and an order key (rows of a rank
 * sorted by it, then by name); NULL: not drawn (waits, marks). */
typedef const char *(*trace_stream_cb)(const herd_tl_rec_t *rec, int *order,
                                       void *arg);

typedef struct trace_step_plot {
    const char *title;         /* the run's name: "NAME, step K" on top */
    const char *subtitle;      /* a second line (which ranks), or NULL */
    const herd_tl_rec_t *recs; /* sorted by rank, then start */
    size_t nrecs;
    const int *ranks; /* the ranks drawn, top to bottom */
    int nranks;
    long step; /* which step (0-based, by the "step" marks); < 0:
                  the last one every drawn rank started */
    trace_stream_cb stream;
    void *stream_arg;
} trace_step_plot_t;

/* DIR/NAME.dat (one line per interval: row, start and end in ms from the
 * step's start, its stream, rank, label; a row per stream of each rank,
 * numbered "NAME #k" where ops of one stream name overlap on a rank, so
 * no row holds two at once; the compute stream's idle time
 * while communication is in flight as "exposed" intervals on the compute
 * row) and DIR/NAME.gp (plots/wl_step.gp). *step_out: the step drawn.
 * HERD_ERR_NOT_FOUND (err says why) when no drawn rank has that step. */
herd_status_t trace_plot_step(const trace_step_plot_t *p, const char *dir,
                              const char *name, const char *plots_dir,
                              long *step_out, char *err, size_t errlen);

#endif
